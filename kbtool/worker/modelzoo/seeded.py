# py36-compatible
"""Seeded weights and inputs, the same on every engine: each array comes from its own generator, keyed by the
seed, the model and the array's position, so an engine that builds one layer more or less changes nothing else.
numpy's legacy RandomState is used: its streams are the same on every numpy an env holds (1.18 to 2.x)."""

import zlib

import numpy as np


def generator(seed, model, what, index):
    return np.random.RandomState(zlib.crc32("{}:{}:{}:{}".format(seed, model, what, index).encode()) & 0xFFFFFFFF)


def weight_value(seed, model, index, name, shape, dtype="float32"):
    """The index-th weight of `model` (model.get_weights() order, i.e. layer order), by its role, read from its name:
    variances and scales positive near 1, means, offsets and biases small, kernels scaled by their fan-in so that a
    deep network's activations neither vanish nor explode."""
    rng = generator(seed, model, "weight", index)
    shape = tuple(int(d) for d in shape)
    short = name.split("/")[-1].split(":")[0]
    if "moving_variance" in short or "gamma" in short:
        values = rng.uniform(0.5, 1.5, shape)
    elif "moving_mean" in short or "beta" in short or "bias" in short:
        values = rng.normal(0.0, 0.1, shape)
    elif len(shape) >= 2:
        fan_in = int(np.prod(shape[:-1]))
        values = rng.normal(0.0, 1.0, shape) * np.sqrt(1.0 / max(fan_in, 1))
    else:
        values = rng.normal(0.0, 0.5, shape)
    return values.astype(dtype)


def input_value(seed, model, index, spec):
    """One input of a model from its spec {shape, dtype, dist: normal|uniform|randint, low, high, zero_tail}."""
    return _draw(generator(seed, model, "input", index), spec)


def target_value(seed, model, index, spec):
    """The index-th target of the training step's loss, drawn as an input is, from a stream of its own."""
    return _draw(generator(seed, model, "target", index), spec)


def _draw(rng, spec):
    shape = tuple(spec["shape"])
    dtype = spec.get("dtype", "float32")
    dist = spec.get("dist", "normal")
    if dist == "randint":
        values = rng.randint(int(spec.get("low", 0)), int(spec.get("high", 5)), shape)
    elif dist == "uniform":
        values = rng.uniform(spec.get("low", -1.0), spec.get("high", 1.0), shape)
    else:
        values = rng.normal(0.0, 1.0, shape)
    if spec.get("rows_sum_to_one"):
        values = values / values.sum(axis=-1, keepdims=True)
    values = np.asarray(values).astype(dtype)
    # zero_tail [n0, n1, ...]: sample i's last n_i steps (axis 1) are zeros, after the draw (so the rest of the
    # stream is unchanged): padding that Masking or Embedding(mask_zero=True) masks
    for row, count in enumerate(spec.get("zero_tail", [])):
        if count > 0:
            values[row, -int(count) :] = 0
    return values
