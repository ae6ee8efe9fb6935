"""Shape manipulation."""
import numpy as np

from .core import floatx, op

__all__ = ["concatenate", "reshape", "one_hot"]


@op
def concatenate(tensors, axis=-1):
    return np.concatenate([np.asarray(t) for t in tensors], axis=axis)


@op
def reshape(x, shape):
    return np.reshape(x, shape)


@op
def one_hot(indices, num_classes):
    indices = np.asarray(indices).astype("int64")
    return (indices[..., None] == np.arange(num_classes)).astype(floatx())
