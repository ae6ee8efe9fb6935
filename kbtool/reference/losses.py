"""Losses. Keras 2 order is (target, output); Keras 1.x documented (output, target)."""

from typing import Any

import numpy as np

from kbtool.reference.core import epsilon, op

__all__ = ["binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy"]


def _clip(output: Any) -> Any:
    """Clip to [epsilon, 1 - epsilon] with the bounds in output's own float dtype, as the backends do."""
    output = np.asarray(output)
    dtype = output.dtype if output.dtype.kind == "f" else np.dtype("float64")
    low, high = np.asarray(epsilon(), dtype), np.asarray(1 - epsilon(), dtype)
    return np.clip(output.astype(dtype), low, high)


def _f64(*arrays: Any) -> Any:
    return [np.asarray(a, dtype="float64") for a in arrays]


@op
def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> Any:
    dtype = np.asarray(output).dtype
    if not from_logits:
        # probabilities are clipped to [eps, 1 - eps] in output's dtype (1 - 1e-7 rounds in float32)
        output = _clip(output)
    target, output = _f64(target, output)
    if not from_logits:
        # ... and turned back into logits
        output = np.log(output / (1 - output))
    # numerically stable sigmoid cross-entropy on logits
    loss = np.maximum(output, 0) - output * target + np.log1p(np.exp(-np.abs(output)))
    return loss.astype(dtype)


def _check_axis(output: Any, axis: Any) -> None:
    ndim = np.asarray(output).ndim
    if axis != -1 and axis not in range(ndim):
        raise ValueError(
            f"Unexpected channels axis {axis}. Expected to be -1 or one of the axes of `output`, "
            f"which has {ndim} dimensions."
        )


@op
def categorical_crossentropy(target: Any, output: Any, from_logits: bool = False, axis: Any = -1) -> Any:
    _check_axis(output, axis)
    dtype = np.asarray(output).dtype
    target, output = _f64(target, output)
    if from_logits:
        shifted = output - np.max(output, axis=axis, keepdims=True)
        log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    else:
        output = (output / np.sum(output, axis=axis, keepdims=True)).astype(dtype)
        log_probs = np.log(_clip(output).astype("float64"))
    return (-np.sum(target * log_probs, axis=axis)).astype(dtype)


@op
def sparse_categorical_crossentropy(target: Any, output: Any, from_logits: bool = False, axis: Any = -1) -> Any:
    _check_axis(output, axis)
    output = np.asarray(output)
    axis = axis % output.ndim
    depth = output.shape[axis]
    labels = np.asarray(target).astype("int64").reshape(np.delete(output.shape, axis))
    one_hot = np.moveaxis(labels[..., None] == np.arange(depth), -1, axis).astype(output.dtype)
    return categorical_crossentropy(one_hot, output, from_logits=from_logits, axis=axis)
