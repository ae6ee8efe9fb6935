"""Reductions along `axis` (an int, a list of ints or None) with `keepdims`.

Hard values follow NumPy (the docs' NumPy implementations, ko-2.2): NaN propagates through sum, mean, prod, var,
std, max, min, logsumexp and the cumulative ops; inf - inf and 0 * inf are NaN; an empty axis gives the identity
(sum 0, prod 1, any False, all True, logsumexp -inf) or NaN (mean: 0 / 0); argmax/argmin answer the first of ties
and the first NaN. Float16/float32 sums, means, products, variances and cumulative ops are computed in float64 and
rounded once to the input's dtype: the reference is the exact result, so a float32 cancellation (var of 1e4 + small
values) shows as the backend's error, never the reference's. Integer results keep the input's dtype and wrap on
overflow as NumPy's fixed-width arithmetic does (int32 2**31 - 1 + 1 is -2**31).
"""

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


def _exact(x: NDArray[Any]) -> NDArray[Any]:
    """x in the dtype the reference computes in: float64 for narrower floats, else x's own."""
    return x.astype("float64") if x.dtype.kind == "f" and x.dtype.itemsize < 8 else x


def _reduce(fn: Any, x: Any, axis: Any, keepdims: bool) -> NDArray[Any]:
    x = np.asarray(x)
    # NaN, inf and overflow are values here, not warnings; the result keeps the input dtype (NumPy alone would
    # widen int32 to int64), rounded once from the float64 result for narrower floats
    with np.errstate(all="ignore"):
        return np.asarray(fn(_exact(x), axis=_axis(axis), keepdims=keepdims)).astype(x.dtype)


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


def _mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """np.mean, but an empty axis gives NaN (0 / 0) without NumPy's 'Mean of empty slice' warning."""
    count = np.sum(np.ones_like(x, dtype="float64"), axis=axis, keepdims=keepdims)
    return np.sum(x, axis=axis, keepdims=keepdims) / count


@op
def mean(x: Any, axis: Any = None, keepdims: bool = False) -> NDArray[Any]:
    return _reduce(_mean, _as_float(x), axis, keepdims)


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
    with np.errstate(all="ignore"):
        return np.cumsum(_exact(x), axis=axis).astype(x.dtype)


@op
def cumprod(x: Any, axis: int = 0) -> NDArray[Any]:
    x = np.asarray(x)
    with np.errstate(all="ignore"):
        return np.cumprod(_exact(x), axis=axis).astype(x.dtype)


@op
def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    x = np.asarray(x)
    axis = _axis(axis)
    wide = _exact(x)
    # shift by the max so exp cannot overflow (-inf over an empty axis: the sum is then 0 and the log -inf)
    top = np.max(wide, axis=axis, keepdims=True, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0)
    with np.errstate(all="ignore"):  # log(0) = -inf and NaN are values here
        out = np.log(np.sum(np.exp(wide - top), axis=axis, keepdims=True)) + top
        return (out if keepdims else np.squeeze(out, axis=axis)).astype(x.dtype)
