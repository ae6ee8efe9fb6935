"""Reductions along `axis` (an int, a list of ints or None) with `keepdims`."""
import numpy as np

from .core import op

__all__ = ["sum", "mean"]


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


@op
def sum(x, axis=None, keepdims=False):  # noqa: A001 - the Keras name
    x = np.asarray(x)
    # the result keeps the input dtype (NumPy alone would widen int32 to int64)
    return np.sum(x, axis=_axis(axis), keepdims=keepdims).astype(x.dtype)


@op
def mean(x, axis=None, keepdims=False):
    x = np.asarray(x)
    # Keras casts integer inputs to floatx before averaging.
    x = x.astype("float32") if x.dtype.kind in "iub" else x
    return np.mean(x, axis=_axis(axis), keepdims=keepdims).astype(x.dtype)
