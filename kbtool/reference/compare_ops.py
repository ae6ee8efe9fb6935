"""Elementwise comparisons (boolean results) and elementwise maximum/minimum."""

from typing import Any

import numpy as np

from kbtool.reference.core import op

__all__ = [
    "equal",
    "not_equal",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "lesser",
    "lesser_equal",
    "maximum",
    "minimum",
]


@op
def equal(x: Any, y: Any) -> Any:
    return np.equal(x, y)


@op
def not_equal(x: Any, y: Any) -> Any:
    return np.not_equal(x, y)


@op
def greater(x: Any, y: Any) -> Any:
    return np.greater(x, y)


@op
def greater_equal(x: Any, y: Any) -> Any:
    return np.greater_equal(x, y)


@op
def less(x: Any, y: Any) -> Any:
    return np.less(x, y)


@op
def less_equal(x: Any, y: Any) -> Any:
    return np.less_equal(x, y)


lesser = less  # Keras 1.x names
lesser_equal = less_equal


@op
def maximum(x: Any, y: Any) -> Any:
    return np.maximum(x, y)


@op
def minimum(x: Any, y: Any) -> Any:
    return np.minimum(x, y)
