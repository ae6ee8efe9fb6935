"""Random ops: checked by shape, dtype and statistics, never by value."""

import numpy as np

from kbtool.reference.core import floatx, variable

__all__ = [
    "random_normal",
    "random_uniform",
    "truncated_normal",
    "random_binomial",
    "random_normal_variable",
    "random_uniform_variable",
]


def _rng(seed):
    return np.random.default_rng(seed)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return _rng(seed).normal(mean, stddev, tuple(shape)).astype(dtype or floatx())


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    return _rng(seed).uniform(minval, maxval, tuple(shape)).astype(dtype or floatx())


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    rng, shape = _rng(seed), tuple(shape)
    values = rng.normal(0.0, 1.0, shape)
    bad = np.abs(values) > 2  # redraw beyond two standard deviations
    while bad.any():
        values[bad] = rng.normal(0.0, 1.0, int(bad.sum()))
        bad = np.abs(values) > 2
    return (mean + stddev * values).astype(dtype or floatx())


def random_binomial(shape, p=0.0, dtype=None, seed=None):
    return (_rng(seed).random(tuple(shape)) < p).astype(dtype or floatx())


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None):
    return variable(random_normal(shape, mean, scale, dtype, seed), dtype=dtype)


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None):
    return variable(random_uniform(shape, low, high, dtype, seed), dtype=dtype)
