# py36-compatible
"""The harness's own hooks on a Keras 3 engine: how kbtool makes a case's inputs and reads its results there.

Only the function under test goes through the port (the K.* functions the map gives). A case's inputs are made
the way that works on the engine, as a Keras 3 user would make them, so that a case reaches its op: a variable is a
`keras.Variable` that is trainable only where its dtype can be (torch cannot make an integer or bool tensor that
requires gradients), a placeholder a `keras.Input` of the case's dtype, a constant an engine tensor of the case's
dtype (dense where the engine has no sparse tensors: `keras.Input(sparse=True)` raises on torch, numpy and openvino,
where the port's K.variable stores a sparse matrix as its dense array too). The worker's Builder (kbtool/worker/invoke.py) uses a `kbtool_*` hook where the backend module has one and
the module's own K.variable / K.placeholder / K.constant / K.eval / K.function elsewhere (on Keras 2 backends those
are the native way). The hooks are no ops: the spec has no case of them, and they are not in specs/keras3_map.yaml.
"""

import keras
import numpy as np
from keras import ops

from . import core

# keras/src/layers/core/input_layer.py refuses sparse=True where the engine's core.py says SUPPORTS_SPARSE_TENSORS
# is False (torch, numpy, openvino); jax and tensorflow have sparse tensors
SPARSE = core.ENGINE in ("jax", "tensorflow")


def _dense(value):
    # Keras 3 tensors are dense: a sparse matrix input is made from its dense array
    return value.toarray() if hasattr(value, "toarray") else value


def _trainable(dtype):
    # gradient cases differentiate float variables; an integer or bool variable is data, as a Keras 3 user makes it
    return np.dtype(dtype).kind in "fc"


def kbtool_variable(value, dtype):
    """A case's variable: keras.Variable of `dtype`, trainable when the dtype is floating (or complex)."""
    array = np.asarray(_dense(value))
    var = keras.Variable(array, dtype=dtype, trainable=_trainable(dtype))
    if _trainable(dtype):
        _watch(var)  # tensorflow: the case's gradient tape watches it
    return var


def kbtool_placeholder(shape, dtype, sparse=False):
    """A case's placeholder: a symbolic keras.Input with the case's batch shape (None dims kept) and dtype; sparse
    where the case asks for it and the engine has sparse tensors, else dense (kbtool_function feeds it densely)."""
    return keras.Input(batch_shape=tuple(shape), dtype=dtype, sparse=bool(sparse) and SPARSE)


def kbtool_constant(value, dtype):
    """A case's constant: an engine tensor of the case's array and dtype."""
    return ops.convert_to_tensor(np.asarray(value), dtype=dtype)


def kbtool_eval(x):
    """An eager result's value as a NumPy array (a variable's through its .numpy())."""
    if isinstance(x, keras.Variable):
        return np.asarray(x.numpy())
    if isinstance(x, (np.ndarray, np.generic)):
        return x
    return ops.convert_to_numpy(x)


def kbtool_function(inputs, outputs):
    """The symbolic results run on their fed inputs: a callable on a list of values giving NumPy arrays."""
    symbolic = [i for i, out in enumerate(outputs) if isinstance(out, keras.KerasTensor)]
    run = keras.Function(list(inputs), [outputs[i] for i in symbolic]) if symbolic else None

    def call(values):
        computed = list(outputs)
        if run is not None:
            feeds = [_dense(v) if not SPARSE else v for v in values]  # a sparse feed of a dense placeholder
            for i, value in zip(symbolic, run(feeds)):
                computed[i] = value
        return [kbtool_eval(value) for value in computed]

    return call


def kbtool_reset():
    """The worker's fresh start before each case: Keras 3's global state, this case's gradient tape, and the global
    random seed, so that an unseeded keras.random draw is the same in every run (two unseeded draws in one case
    still differ)."""
    global _TAPE
    if _TAPE is not None:
        _TAPE.__exit__(None, None, None)
        _TAPE = None
    # without Keras 3's default garbage collection: it took 0.3 s per case with torch loaded
    keras.backend.clear_session(free_memory=False)
    keras.utils.set_random_seed(0)


# ---- gradient cases: the gradient of the op under test, by the engine's own autodiff. K.gradients has no Keras 3
# row (specs/keras3_map.yaml: `none:`), so the op `gradients` is unsupported; a case of another op that asks for its
# gradient ("grad": true) is the harness's business, as a Keras 3 user differentiates: torch.autograd on torch, a
# tf.GradientTape on tensorflow. jax differentiates functions, not computed values, and numpy and openvino have no
# autodiff: there the harness has no gradients and such cases are unsupported.

_TAPE = None  # tensorflow: one persistent tape per case, opened by its first trainable variable


def _watch(var):
    global _TAPE
    if core.ENGINE != "tensorflow":
        return
    import tensorflow as tf

    if _TAPE is None:
        _TAPE = tf.GradientTape(persistent=True)
        _TAPE.__enter__()
    _TAPE.watch(var.value)


def _torch_gradients(result, variables):
    import torch

    loss = ops.sum(result)
    grads = torch.autograd.grad(loss, [v.value for v in variables], allow_unused=True)
    return [None if g is None else g.detach() for g in grads]


def _tensorflow_gradients(result, variables):
    if _TAPE is None:
        raise ValueError("no variable was made in this case, so no tape recorded how the result was computed")
    loss = ops.sum(result)  # recorded: the tape is still open
    with _TAPE.stop_recording():  # the gradient's own ops are not recorded (no second derivatives are asked)
        return _TAPE.gradient(loss, [v.value for v in variables])


if core.ENGINE == "torch":
    kbtool_gradients = _torch_gradients
elif core.ENGINE == "tensorflow":
    kbtool_gradients = _tensorflow_gradients
