# py36-compatible
"""Tensors, elementwise math, reductions, shapes, comparisons, linear algebra, uids and variable updates.

Each function is the keras.ops (or keras.backend / keras.Variable) call a port of Keras 2 code would use. Keras 2's
arguments are translated only where keras.ops spells them differently (K's default axes, None bounds, an int where
keras.ops takes a tuple), and each translation says so in a comment. Nothing converts a result to what Keras 2 gave:
a different dtype, shape or value is what a port gets, and the parity table shows it.

Not defined here (no Keras 3 equivalent, so their cases are `unsupported`):
- print_tensor: keras.ops has no op that prints a value when it is computed. Python's print on a symbolic
  KerasTensor prints at graph construction, not when keras.Function runs it; jax.debug.print and tf.print belong to
  one engine each (torch, numpy and openvino have none in a graph).
- is_placeholder: Keras 3 has no placeholders; keras.Input's KerasTensor is like any layer's output, and no public
  API tells them apart.
- is_sparse: no public Keras 3 function: keras.KerasTensor has `.sparse`, an engine's own sparse tensor
  (tf.SparseTensor, jax BCOO) has no public test.
"""

import keras
import numpy as np
from keras import ops

# ---- elementwise math


def abs(x):
    return ops.abs(x)


def cos(x):
    return ops.cos(x)


def sin(x):
    return ops.sin(x)


def exp(x):
    return ops.exp(x)


def log(x):
    return ops.log(x)


def sqrt(x):
    # K.sqrt clipped x to [0, inf) first; ops.sqrt does not (a port gets nan for a negative input)
    return ops.sqrt(x)


def square(x):
    return ops.square(x)


def sign(x):
    return ops.sign(x)


def round(x):
    return ops.round(x)


def pow(x, a):
    return ops.power(x, a)


def clip(x, min_value, max_value):
    # K's None bound means unbounded; ops.clip takes numbers
    if min_value is None:
        min_value = -np.inf
    if max_value is None:
        max_value = np.inf
    return ops.clip(x, min_value, max_value)


def maximum(x, y):
    return ops.maximum(x, y)


def minimum(x, y):
    return ops.minimum(x, y)


# ---- comparisons


def equal(x, y):
    return ops.equal(x, y)


def not_equal(x, y):
    return ops.not_equal(x, y)


def greater(x, y):
    return ops.greater(x, y)


def greater_equal(x, y):
    return ops.greater_equal(x, y)


def less(x, y):
    return ops.less(x, y)


def less_equal(x, y):
    return ops.less_equal(x, y)


# ---- reductions (K's axis=None, keepdims=False are keras.ops' defaults too)


def all(x, axis=None, keepdims=False):
    return ops.all(x, axis=axis, keepdims=keepdims)


def any(x, axis=None, keepdims=False):
    return ops.any(x, axis=axis, keepdims=keepdims)


def max(x, axis=None, keepdims=False):
    return ops.max(x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):
    return ops.min(x, axis=axis, keepdims=keepdims)


def sum(x, axis=None, keepdims=False):
    return ops.sum(x, axis=axis, keepdims=keepdims)


def prod(x, axis=None, keepdims=False):
    return ops.prod(x, axis=axis, keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    return ops.mean(x, axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    return ops.std(x, axis=axis, keepdims=keepdims)


def var(x, axis=None, keepdims=False):
    return ops.var(x, axis=axis, keepdims=keepdims)


def logsumexp(x, axis=None, keepdims=False):
    return ops.logsumexp(x, axis=axis, keepdims=keepdims)


def argmax(x, axis=-1):
    # K's default axis is -1; ops.argmax's is None (the flattened tensor)
    return ops.argmax(x, axis=axis)


def argmin(x, axis=-1):
    return ops.argmin(x, axis=axis)


def cumsum(x, axis=0):
    # K's default axis is 0; ops.cumsum's is None (the flattened tensor)
    return ops.cumsum(x, axis=axis)


def cumprod(x, axis=0):
    return ops.cumprod(x, axis=axis)


# ---- creating tensors (Keras 2 made variables of eye/ones/zeros; keras.ops makes tensors, names have no home)


def _floatx(dtype):
    return dtype or keras.config.floatx()


def zeros(shape, dtype=None, name=None):
    return ops.zeros(shape, dtype=_floatx(dtype))


def ones(shape, dtype=None, name=None):
    return ops.ones(shape, dtype=_floatx(dtype))


def eye(size, dtype=None, name=None):
    if isinstance(size, (list, tuple)):  # K's (rows, columns)
        return ops.eye(size[0], size[1], dtype=_floatx(dtype))
    return ops.eye(size, dtype=_floatx(dtype))


def zeros_like(x, dtype=None, name=None):
    return ops.zeros_like(x, dtype=dtype)


def ones_like(x, dtype=None, name=None):
    return ops.ones_like(x, dtype=dtype)


def arange(start, stop=None, step=1, dtype="int32"):
    return ops.arange(start, stop, step, dtype=dtype)


def one_hot(indices, num_classes):
    return ops.one_hot(indices, num_classes)


def identity(x, name=None):
    return ops.copy(x)


def cast(x, dtype):
    return ops.cast(x, dtype)


def cast_to_floatx(x):
    # K.cast_to_floatx takes a NumPy array and returns one; a tensor is cast with ops.cast, as K did
    if ops.is_tensor(x) or isinstance(x, (keras.Variable, keras.KerasTensor)):
        return ops.cast(x, keras.config.floatx())
    return np.asarray(x, dtype=keras.config.floatx())


def to_dense(tensor):
    return ops.convert_to_tensor(tensor, sparse=False)


def stop_gradient(variables):
    if isinstance(variables, (list, tuple)):  # K takes a list of tensors too
        return [ops.stop_gradient(v) for v in variables]
    return ops.stop_gradient(variables)


# ---- shapes and types


def shape(x):
    # Keras 3's ops.shape returns a tuple (None for an unknown dim of a symbolic tensor), not a tensor
    return ops.shape(x)


def int_shape(x):
    return tuple(x.shape)


def ndim(x):
    return len(x.shape)


def dtype(x):
    return ops.dtype(x)


def count_params(x):
    return int(np.prod(x.shape))


def is_tensor(x):
    return ops.is_tensor(x)


def is_keras_tensor(x):
    return keras.backend.is_keras_tensor(x)


# ---- reshaping and rearranging


def reshape(x, shape):
    return ops.reshape(x, shape)


def flatten(x):
    return ops.ravel(x)


def batch_flatten(x):
    # K kept axis 0 and flattened the rest. ops.reshape's new shape is fixed when a symbolic graph is built, so an
    # unknown batch dim is written -1 (as K did) when the other dims are known; with unknown other dims the batch
    # dim is given (keras.layers.Flatten's form); a zero-size rest needs the batch dim too (-1 is ambiguous there)
    rest = tuple(x.shape[1:])
    if None not in rest and int(np.prod(rest)) > 0:
        return ops.reshape(x, (-1, int(np.prod(rest))))
    return ops.reshape(x, (x.shape[0], int(np.prod(rest)) if None not in rest else -1))


def expand_dims(x, axis=-1):
    # K's default axis is -1
    return ops.expand_dims(x, axis)


def squeeze(x, axis):
    return ops.squeeze(x, axis=axis)


def permute_dimensions(x, pattern):
    return ops.transpose(x, axes=tuple(pattern))


def transpose(x):
    return ops.transpose(x)


def reverse(x, axes):
    # K takes an int or a list; ops.flip an int or a tuple
    return ops.flip(x, axis=tuple(axes) if isinstance(axes, (list, tuple)) else axes)


def tile(x, n):
    return ops.tile(x, n)


def repeat(x, n):
    # K.repeat: (samples, dim) -> (samples, n, dim)
    return ops.repeat(ops.expand_dims(x, 1), n, axis=1)


def repeat_elements(x, rep, axis):
    return ops.repeat(x, rep, axis=axis)


def concatenate(tensors, axis=-1):
    return ops.concatenate(tensors, axis=axis)


def stack(x, axis=0):
    return ops.stack(x, axis=axis)


def slice(x, start, size):
    return ops.slice(x, start, size)


def gather(reference, indices):
    # K gathered rows (axis 0)
    return ops.take(reference, indices, axis=0)


# ---- linear algebra


def dot(x, y):
    # K.dot of N-D tensors follows Theano: x's last axis with y's second-to-last (tensordot); 1-D and 2-D: matmul
    if len(x.shape) > 2 or len(y.shape) > 2:
        return ops.tensordot(x, y, axes=[[len(x.shape) - 1], [len(y.shape) - 2]])
    return ops.matmul(x, y)


_LETTERS = "bcdefghijklmnopqrstuvwxyz"


def batch_dot(x, y, axes=None):
    """keras.ops has no batch_dot: its one public home is the Dot merging layer, called on the two tensors. Dot
    needs `axes`: K's default (None) is written out, x's last axis with y's second-to-last (its last when y is
    2-D)."""
    if axes is None:
        axes = (len(x.shape) - 1, len(y.shape) - 1 if len(y.shape) == 2 else len(y.shape) - 2)
    return keras.layers.Dot(axes=axes)([x, y])


# ---- uids


def get_uid(prefix=""):
    return keras.backend.get_uid(prefix)


def reset_uids():
    # Keras 3's public API resets its name counters only with the rest of its global state
    keras.backend.clear_session()


# ---- variable updates: a keras.Variable assigns at once and is returned


def update(x, new_x):
    x.assign(new_x)
    return x


def update_add(x, increment):
    x.assign_add(increment)
    return x


def update_sub(x, decrement):
    x.assign_sub(decrement)
    return x


def moving_average_update(x, value, momentum):
    x.assign(x * momentum + value * (1 - momentum))
    return x
