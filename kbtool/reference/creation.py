"""Tensor creation, casting, and the sparse/dense helpers (the reference is dense only)."""

import numpy as np

from kbtool.reference.core import floatx, op

__all__ = [
    "arange",
    "eye",
    "zeros",
    "ones",
    "zeros_like",
    "ones_like",
    "identity",
    "cast",
    "cast_to_floatx",
    "to_dense",
    "is_sparse",
]


def arange(start, stop=None, step=1, dtype="int32"):
    if stop is None:
        start, stop = 0, start
    return np.arange(start, stop, step).astype(dtype)


def eye(size, dtype=None, name=None):
    return np.eye(size, dtype=dtype or floatx())


def zeros(shape, dtype=None, name=None):
    return np.zeros(shape, dtype=dtype or floatx())


def ones(shape, dtype=None, name=None):
    return np.ones(shape, dtype=dtype or floatx())


@op
def zeros_like(x, dtype=None, name=None):
    return np.zeros_like(x, dtype=dtype or np.asarray(x).dtype)


@op
def ones_like(x, dtype=None, name=None):
    return np.ones_like(x, dtype=dtype or np.asarray(x).dtype)


@op
def identity(x, name=None):
    return np.array(x, copy=True)


@op
def cast(x, dtype):
    return np.asarray(x).astype(dtype)


def cast_to_floatx(x):
    return np.asarray(x, dtype=floatx())


@op
def to_dense(tensor):
    return np.asarray(tensor)


def is_sparse(tensor):
    """True for a placeholder made with sparse=True (the reference holds every value densely)."""
    return bool(getattr(tensor, "sparse", False))
