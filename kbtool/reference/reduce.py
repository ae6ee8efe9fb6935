"""Reductions along `axis` (an int, a list of ints or None) with `keepdims`."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

from kbtool.reference.core import floatx, op

__all__ = [
    "sum",
    "mean",
    "max",
    "min",
    "prod",
    "std",
    "var",
    "any",
    "all",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "logsumexp",
]


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _reduce(fn: Any, x: Any, axis: Any, keepdims: bool) -> NDArray[Any]:
    x = np.asarray(x)
    # the result keeps the input dtype (NumPy alone would widen int32 to int64)
    return np.asarray(fn(x, axis=_axis(axis), keepdims=keepdims)).astype(x.dtype)


@op
def sum(x: Any, axis: Any = None, keepdims: bool = False) -> NDArray[Any]:
    return _reduce(np.sum, x, axis, keepdims)


@op
def prod(x: Any, axis: Any = None, keepdims: bool = False) -> NDArray[Any]:
    return _reduce(np.prod, x, axis, keepdims)


@op
def max(x: Any, axis: Any = None, keepdims: bool = False) -> NDArray[Any]:
    return _reduce(np.max, x, axis, keepdims)


@op
def min(x: Any, axis: Any = None, keepdims: bool = False) -> NDArray[Any]:
    return _reduce(np.min, x, axis, keepdims)


def _as_float(x: Any) -> Any:
    x = np.asarray(x)
    # Keras casts integer and bool input to floatx before averaging
    return x.astype(floatx()) if x.dtype.kind in "iub" else x


@op
def mean(x: Any, axis: Any = None, keepdims: bool = False) -> NDArray[Any]:
    return _reduce(np.mean, _as_float(x), axis, keepdims)


@op
def var(x: Any, axis: Any = None, keepdims: bool = False) -> NDArray[Any]:
    return _reduce(np.var, _as_float(x), axis, keepdims)  # population variance (ddof=0)


@op
def std(x: Any, axis: Any = None, keepdims: bool = False) -> NDArray[Any]:
    return _reduce(np.std, _as_float(x), axis, keepdims)


@op
def any(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return np.any(np.asarray(x), axis=_axis(axis), keepdims=keepdims)


@op
def all(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return np.all(np.asarray(x), axis=_axis(axis), keepdims=keepdims)


@op
def argmax(x: Any, axis: Any = -1) -> Any:
    return np.argmax(x, axis=axis).astype("int64")  # first of ties, int64 like tf.argmax


@op
def argmin(x: Any, axis: Any = -1) -> Any:
    return np.argmin(x, axis=axis).astype("int64")


@op
def cumsum(x: Any, axis: int = 0) -> NDArray[Any]:
    x = np.asarray(x)
    return np.cumsum(x, axis=axis).astype(x.dtype)


@op
def cumprod(x: Any, axis: int = 0) -> NDArray[Any]:
    x = np.asarray(x)
    return np.cumprod(x, axis=axis).astype(x.dtype)


@op
def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    x = np.asarray(x)
    axis = _axis(axis)
    top = np.max(x, axis=axis, keepdims=True)  # shift by the max so exp cannot overflow
    top = np.where(np.isfinite(top), top, 0)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return (out if keepdims else np.squeeze(out, axis=axis)).astype(x.dtype)
