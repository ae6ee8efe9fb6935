"""Random ops: checked by shape, dtype and statistics, never by value."""

from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

from kbtool.reference.core import floatx, op, variable

__all__ = [
    "random_normal",
    "random_uniform",
    "truncated_normal",
    "random_binomial",
    "random_normal_variable",
    "random_uniform_variable",
]


def _rng(seed: Any) -> Any:
    return np.random.default_rng(seed)


@op  # a symbolic shape (K.shape(x) in a layer) waits for the fed values
def random_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None, seed: Any = None) -> Any:
    return _rng(seed).normal(mean, stddev, tuple(shape)).astype(dtype or floatx())


@op
def random_uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None, seed: Any = None) -> Any:
    return _rng(seed).uniform(minval, maxval, tuple(shape)).astype(dtype or floatx())


@op
def truncated_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None, seed: Any = None) -> Any:
    rng, shape = _rng(seed), tuple(shape)
    values = rng.normal(0.0, 1.0, shape)
    bad = np.abs(values) > 2  # redraw beyond two standard deviations
    while bad.any():
        values[bad] = rng.normal(0.0, 1.0, int(bad.sum()))
        bad = np.abs(values) > 2
    return (mean + stddev * values).astype(dtype or floatx())


@op
def random_binomial(shape: Any, p: float = 0.0, dtype: Any = None, seed: Any = None) -> Any:
    return (_rng(seed).random(tuple(shape)) < p).astype(dtype or floatx())


def random_normal_variable(
    shape: Any, mean: Any, scale: Any, dtype: Any = None, name: Optional[str] = None, seed: Any = None
) -> NDArray[Any]:
    return variable(random_normal(shape, mean, scale, dtype, seed), dtype=dtype)


def random_uniform_variable(
    shape: Any, low: Any, high: Any, dtype: Any = None, name: Optional[str] = None, seed: Any = None
) -> NDArray[Any]:
    return variable(random_uniform(shape, low, high, dtype, seed), dtype=dtype)
