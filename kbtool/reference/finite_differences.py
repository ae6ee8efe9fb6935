"""Gradients by central differences: the reference's only way to differentiate (it has no autodiff).

Differences in float64 are independent of every backend's gradient code, which is the point of comparing them.
(Not named `gradients`: a submodule would shadow the op of that name on the package.)
"""

from typing import Any, Callable

import numpy as np
from numpy.typing import NDArray

STEP = 1e-6


def central_differences(total: Callable[[NDArray[Any]], float], base: NDArray[Any], step: float = STEP) -> NDArray[Any]:
    """d total(x) / dx at x = `base` (float64), element by element; `total` maps an array to a float."""
    grad = np.zeros_like(base)
    for pos in np.ndindex(base.shape):
        h = step * max(1.0, float(abs(base[pos])))
        for sign in (1, -1):
            bumped = base.copy()
            bumped[pos] += sign * h
            grad[pos] += sign * total(bumped) / (2 * h)
    return grad
