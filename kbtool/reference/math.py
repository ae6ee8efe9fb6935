"""Elementwise math."""
import numpy as np

from .core import op

__all__ = ["clip"]


@op
def clip(x, min_value, max_value):
    # Documented Keras 2 rule: a max below min is raised to min; None means unbounded.
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    lo = -np.inf if min_value is None else min_value
    hi = np.inf if max_value is None else max_value
    x = np.asarray(x)
    return np.clip(x, lo, hi).astype(x.dtype)
