"""Tensor creation, casting, and the sparse/dense helpers (the reference is dense only)."""

from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

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


def arange(start: Any, stop: Any = None, step: int = 1, dtype: str = "int32") -> NDArray[Any]:
    if stop is None:
        start, stop = 0, start
    return np.arange(start, stop, step).astype(dtype)


def eye(size: Any, dtype: Any = None, name: Optional[str] = None) -> NDArray[Any]:
    return np.eye(size, dtype=dtype or floatx())


def zeros(shape: Any, dtype: Any = None, name: Optional[str] = None) -> NDArray[Any]:
    return np.zeros(shape, dtype=dtype or floatx())


def ones(shape: Any, dtype: Any = None, name: Optional[str] = None) -> NDArray[Any]:
    return np.ones(shape, dtype=dtype or floatx())


@op
def zeros_like(x: Any, dtype: Any = None, name: Optional[str] = None) -> NDArray[Any]:
    return np.zeros_like(x, dtype=dtype or np.asarray(x).dtype)


@op
def ones_like(x: Any, dtype: Any = None, name: Optional[str] = None) -> NDArray[Any]:
    return np.ones_like(x, dtype=dtype or np.asarray(x).dtype)


@op
def identity(x: Any, name: Optional[str] = None) -> NDArray[Any]:
    return np.array(x, copy=True)


@op
def cast(x: Any, dtype: Any) -> NDArray[Any]:
    return np.asarray(x).astype(dtype)


def cast_to_floatx(x: Any) -> NDArray[Any]:
    return np.asarray(x, dtype=floatx())


@op
def to_dense(tensor: Any) -> NDArray[Any]:
    return np.asarray(tensor)


def is_sparse(tensor: Any) -> Any:
    """True for a placeholder made with sparse=True (the reference holds every value densely)."""
    return bool(getattr(tensor, "sparse", False))
