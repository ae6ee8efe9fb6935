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
        core._watch(var)  # tensorflow: the case's gradient tape watches it, as the port's variables are watched
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
