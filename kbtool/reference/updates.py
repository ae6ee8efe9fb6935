"""Variable updates: the reference applies them at once, in place, and returns the variable."""
import numpy as np

__all__ = ["update", "update_add", "update_sub", "moving_average_update"]


def update(x, new_x):
    x[...] = np.asarray(new_x, dtype=x.dtype)
    return x


def update_add(x, increment):
    return update(x, x + increment)


def update_sub(x, decrement):
    return update(x, x - decrement)


def moving_average_update(x, value, momentum):
    # Keras 2.3.1: x = x * momentum + value * (1 - momentum)
    return update(x, x * momentum + np.asarray(value) * (1 - momentum))
