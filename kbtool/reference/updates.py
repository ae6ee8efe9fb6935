"""Variable updates: the reference applies them at once, in place, and returns the variable.

Keras returns an update op (TensorFlow graph mode: an assign op; Theano: an (x, new_x) pair) that
takes effect when run through K.function(..., updates=[...]); TensorFlow 2 eager assigns at once.
The values observable afterwards are the same, which is what cases with `observe: true` compare.
As with a variable assignment, the new value must have x's shape (the docs: "of same shape as x").
"""

from typing import Any

import numpy as np
from numpy.typing import NDArray

from kbtool.reference.core import _assign

__all__ = ["update", "update_add", "update_sub", "moving_average_update"]


def update(x: Any, new_x: Any) -> NDArray[Any]:
    return _assign(x, new_x)


def update_add(x: Any, increment: Any) -> NDArray[Any]:
    return _assign(x, np.asarray(x) + np.asarray(increment))


def update_sub(x: Any, decrement: Any) -> NDArray[Any]:
    return _assign(x, np.asarray(x) - np.asarray(decrement))


def moving_average_update(x: Any, value: Any, momentum: Any) -> NDArray[Any]:
    # x <- x * momentum + value * (1 - momentum), in x's dtype (Keras 2: assign_moving_average
    # without zero-debiasing, i.e. x - (x - value) * (1 - momentum))
    x_array = np.asarray(x)
    momentum = np.asarray(momentum, dtype=x_array.dtype)
    value = np.asarray(value).astype(x_array.dtype)
    return _assign(x, x_array - (x_array - value) * (np.asarray(1, dtype=x_array.dtype) - momentum))
