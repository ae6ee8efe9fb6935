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
import numpy

# ---- elementwise math


def abs(x):
    return keras.ops.abs(x)


def cos(x):
    return keras.ops.cos(x)


def sin(x):
    return keras.ops.sin(x)


def exp(x):
    return keras.ops.exp(x)


def log(x):
    return keras.ops.log(x)


def sqrt(x):
    return keras.ops.sqrt(x)


def square(x):
    return keras.ops.square(x)


def sign(x):
    return keras.ops.sign(x)


def round(x):
    return keras.ops.round(x)


def pow(x, a):
    return keras.ops.power(x, a)


def clip(x, min_value, max_value):
    return keras.ops.clip(x, min_value, max_value)


def maximum(x, y):
    return keras.ops.maximum(x, y)


def minimum(x, y):
    return keras.ops.minimum(x, y)


# ---- comparisons


def equal(x, y):
    return keras.ops.equal(x, y)


def not_equal(x, y):
    return keras.ops.not_equal(x, y)


def greater(x, y):
    return keras.ops.greater(x, y)


def greater_equal(x, y):
    return keras.ops.greater_equal(x, y)


def less(x, y):
    return keras.ops.less(x, y)


def less_equal(x, y):
    return keras.ops.less_equal(x, y)


# ---- reductions (K's axis=None, keepdims=False are keras.ops' defaults too)


def all(x, axis=None, keepdims=False):
    return keras.ops.all(x, axis=axis, keepdims=keepdims)


def any(x, axis=None, keepdims=False):
    return keras.ops.any(x, axis=axis, keepdims=keepdims)


def max(x, axis=None, keepdims=False):
    return keras.ops.max(x, axis=axis, keepdims=keepdims)


def min(x, axis=None, keepdims=False):
    return keras.ops.min(x, axis=axis, keepdims=keepdims)


def sum(x, axis=None, keepdims=False):
    return keras.ops.sum(x, axis=axis, keepdims=keepdims)


def prod(x, axis=None, keepdims=False):
    return keras.ops.prod(x, axis=axis, keepdims=keepdims)


def mean(x, axis=None, keepdims=False):
    return keras.ops.mean(x, axis=axis, keepdims=keepdims)


def std(x, axis=None, keepdims=False):
    return keras.ops.std(x, axis=axis, keepdims=keepdims)


def var(x, axis=None, keepdims=False):
    return keras.ops.var(x, axis=axis, keepdims=keepdims)


def logsumexp(x, axis=None, keepdims=False):
    return keras.ops.logsumexp(x, axis=axis, keepdims=keepdims)


def argmax(x, axis=-1):
    return keras.ops.argmax(x, axis=axis)


def argmin(x, axis=-1):
    return keras.ops.argmin(x, axis=axis)


def cumsum(x, axis=0):
    return keras.ops.cumsum(x, axis=axis)


def cumprod(x, axis=0):
    return keras.ops.cumprod(x, axis=axis)


# ---- creating tensors (Keras 2 made variables of eye/ones/zeros; keras.ops makes tensors, names have no home)


def zeros(shape, dtype=None, name=None):
    return keras.ops.zeros(shape, dtype=dtype)


def ones(shape, dtype=None, name=None):
    return keras.ops.ones(shape, dtype=dtype)


def eye(size, dtype=None, name=None):
    if isinstance(size, (list, tuple)):
        return keras.ops.eye(size[0], size[1], dtype=dtype)
    return keras.ops.eye(size, dtype=dtype)


def zeros_like(x, dtype=None, name=None):
    return keras.ops.zeros_like(x, dtype=dtype)


def ones_like(x, dtype=None, name=None):
    return keras.ops.ones_like(x, dtype=dtype)


def arange(start, stop=None, step=1, dtype="int32"):
    return keras.ops.arange(start, stop, step, dtype=dtype)


def one_hot(indices, num_classes):
    return keras.ops.one_hot(indices, num_classes)


def identity(x, name=None):
    return keras.ops.copy(x)


def cast(x, dtype):
    return keras.ops.cast(x, dtype)


def cast_to_floatx(x):
    return keras.ops.convert_to_numpy(x).astype(keras.config.floatx())


def to_dense(tensor):
    return keras.ops.convert_to_tensor(tensor, sparse=False)


def stop_gradient(variables):
    if isinstance(variables, (list, tuple)):
        return [keras.ops.stop_gradient(v) for v in variables]
    return keras.ops.stop_gradient(variables)


# ---- shapes and types


def shape(x):
    return keras.ops.shape(x)


def int_shape(x):
    return tuple(x.shape)


def ndim(x):
    return keras.ops.ndim(x)


def dtype(x):
    return keras.ops.dtype(x)


def count_params(x):
    return int(numpy.prod(x.shape))


def is_tensor(x):
    return keras.ops.is_tensor(x)


def is_keras_tensor(x):
    return keras.backend.is_keras_tensor(x)


# ---- reshaping and rearranging


def reshape(x, shape):
    return keras.ops.reshape(x, shape)


def flatten(x):
    return keras.ops.ravel(x)


def batch_flatten(x):
    return keras.ops.reshape(x, (keras.ops.shape(x)[0], -1))


def expand_dims(x, axis=-1):
    return keras.ops.expand_dims(x, axis)


def squeeze(x, axis):
    return keras.ops.squeeze(x, axis=axis)


def permute_dimensions(x, pattern):
    return keras.ops.transpose(x, axes=pattern)


def transpose(x):
    return keras.ops.transpose(x)


def reverse(x, axes):
    return keras.ops.flip(x, axis=axes)


def tile(x, n):
    return keras.ops.tile(x, n)


def repeat(x, n):
    return keras.ops.repeat(keras.ops.expand_dims(x, 1), n, axis=1)


def repeat_elements(x, rep, axis):
    return keras.ops.repeat(x, rep, axis=axis)


def concatenate(tensors, axis=-1):
    return keras.ops.concatenate(tensors, axis=axis)


def stack(x, axis=0):
    return keras.ops.stack(x, axis=axis)


def slice(x, start, size):
    return keras.ops.slice(x, start, size)


def gather(reference, indices):
    return keras.ops.take(reference, indices, axis=0)


# ---- linear algebra


def dot(x, y):
    return keras.ops.dot(x, y)


def batch_dot(x, y, axes=None):
    if axes is None:
        axes = (len(x.shape) - 1, len(y.shape) - 1 if len(y.shape) == 2 else len(y.shape) - 2)
    return keras.layers.Dot(axes=axes)([x, y])


# ---- uids


def get_uid(prefix=""):
    return keras.backend.get_uid(prefix)


def reset_uids():
    return keras.utils.clear_session()


# ---- variable updates: a keras.Variable assigns at once and is returned


def update(x, new_x):
    return x.assign(new_x)


def update_add(x, increment):
    return x.assign_add(increment)


def update_sub(x, decrement):
    return x.assign_sub(decrement)


def moving_average_update(x, value, momentum):
    return x.assign(x * momentum + value * (1 - momentum))


def lesser(x, y):
    return keras.ops.less(x, y)


def lesser_equal(x, y):
    return keras.ops.less_equal(x, y)
