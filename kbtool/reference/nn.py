"""Activations."""
import numpy as np

from .core import op

__all__ = ["softmax"]


@op
def softmax(x, axis=-1):
    x = np.asarray(x)
    shifted = x - np.max(x, axis=axis, keepdims=True)  # the stable form: exp never overflows
    e = np.exp(shifted)
    return (e / np.sum(e, axis=axis, keepdims=True)).astype(x.dtype)
