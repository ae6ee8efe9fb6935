# py36-compatible
"""The engine, its device and precision, configuration, variables, placeholders, functions and gradients.

Keras 3 has no graph of its own: a Keras 2 placeholder becomes a symbolic `keras.Input` (its None dims stay None, so
Keras 3's static shape inference is what the symbolic mode checks) and `K.function` becomes `keras.Function`, which
runs the symbolic graph on the engine. Variables are `keras.Variable`s; eager results are engine tensors.
"""

import os

import keras
import numpy as np
from keras import ops

ENGINE = keras.backend.backend()
DEVICE = os.environ.get("KBTOOL_DEVICE", "cpu")
PRECISION = os.environ.get("KBTOOL_PRECISION", "default")


def _open_device():
    """The device the engine computes on, in words; raises (the worker cannot start) when it is not there."""
    if DEVICE == "cpu":
        return "cpu"
    if DEVICE != "gpu":
        raise ValueError("KBTOOL_DEVICE must be cpu or gpu, not {!r}".format(DEVICE))
    if ENGINE == "jax":
        import jax

        try:
            return str(jax.devices("gpu")[0])
        except Exception as exc:  # jax 0.10 asserts when no platform initialises
            raise RuntimeError(
                "KBTOOL_DEVICE=gpu: jax {} sees no GPU ({}: {}); the env's jax[cpu] has no CUDA plugin: register an "
                "interpreter with jax[cuda] (`kbtool env use keras3-jax --python PATH`)".format(
                    jax.__version__, type(exc).__name__, str(exc)[:200] or "no platform"
                )
            )
    if ENGINE == "torch":
        import torch

        if not torch.cuda.is_available():
            built = "CUDA " + torch.version.cuda if torch.version.cuda else "no CUDA (a CPU-only build)"
            raise RuntimeError(
                "KBTOOL_DEVICE=gpu: torch {} ({}) sees no CUDA device; register an interpreter with a CUDA torch "
                "(`kbtool env use keras3-torch --python PATH`)".format(torch.__version__, built)
            )
        return "cuda:0 " + torch.cuda.get_device_name(0)
    if ENGINE == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        if not gpus:
            raise RuntimeError("KBTOOL_DEVICE=gpu: tensorflow {} sees no GPU".format(tf.__version__))
        for gpu in gpus:  # workers that share the GPU must not each take all of its memory
            tf.config.experimental.set_memory_growth(gpu, True)
        return gpus[0].name
    raise RuntimeError("KBTOOL_DEVICE=gpu: Keras 3's {} engine computes on the CPU only".format(ENGINE))


def _set_precision():
    """`--precision highest`: each engine's own switch for full float32 matmuls and convolutions (no TF32, no
    bfloat16 passes), as Keras 3's own test suite sets it on GPUs; "default" leaves the engine's default."""
    if PRECISION == "default":
        return
    if PRECISION != "highest":
        raise ValueError("KBTOOL_PRECISION must be default or highest, not {!r}".format(PRECISION))
    if ENGINE == "jax":
        import jax

        jax.config.update("jax_default_matmul_precision", "highest")
    elif ENGINE == "torch":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    elif ENGINE == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(False)


DEVICE_NAME = _open_device()
_set_precision()


def kbtool_sync(value):
    """Block until `value` is computed (bench times the work, not its launch): engines on a GPU run asynchronously."""
    if ENGINE == "jax" and hasattr(value, "block_until_ready"):
        value.block_until_ready()
    elif ENGINE == "torch" and DEVICE == "gpu":
        import torch

        torch.cuda.synchronize()
    elif ENGINE == "tensorflow" and DEVICE == "gpu":
        import tensorflow as tf

        tf.test.experimental.sync_devices()


# ---- configuration: keras.config (Keras 3 reads keras.json from KERAS_HOME itself)


def backend():
    return keras.backend.backend()


def floatx():
    return keras.config.floatx()


def set_floatx(value):
    keras.config.set_floatx(value)


def epsilon():
    return keras.config.epsilon()


def set_epsilon(value):
    keras.config.set_epsilon(value)


def image_data_format():
    return keras.config.image_data_format()


def set_image_data_format(data_format):
    keras.config.set_image_data_format(data_format)


def clear_session():
    keras.backend.clear_session()


def kbtool_reset():
    """The worker's fresh start before each case (not an op): Keras 3's global state, this case's gradient tape,
    and the global random seed, so that an unseeded keras.random draw is the same in every run (two unseeded draws
    in one case still differ)."""
    global _TAPE
    if _TAPE is not None:
        _TAPE.__exit__(None, None, None)
        _TAPE = None
    # without Keras 3's default garbage collection: it took 0.3 s per case with torch loaded
    keras.backend.clear_session(free_memory=False)
    keras.utils.set_random_seed(0)


# ---- variables, constants, placeholders


def _dense(value):
    # Keras 3 variables are dense: a sparse matrix given to K.variable is stored as its dense array
    return value.toarray() if hasattr(value, "toarray") else value


def variable(value, dtype=None, name=None, constraint=None):
    var = keras.Variable(np.asarray(_dense(value)), dtype=dtype or floatx(), name=name, constraint=constraint)
    _watch(var)
    return var


def constant(value, dtype=None, shape=None, name=None):
    if shape is not None:  # Keras 2: a scalar value fills the shape
        return ops.full(shape, value, dtype=dtype or floatx())
    return ops.convert_to_tensor(np.asarray(value), dtype=dtype or floatx())


def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None):
    if shape is None:
        shape = (None,) * (ndim or 0)
    return keras.Input(batch_shape=tuple(shape), dtype=dtype or floatx(), sparse=sparse, name=name)


def is_symbolic(x):
    return isinstance(x, keras.KerasTensor)


def function(inputs, outputs, updates=None, name=None, **kwargs):
    """A callable on a list of values, as K.function's. Updates need no running: a Keras 3 variable's assign
    happens when it is called. Other keywords go to keras.Function, as a port would pass them."""
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    symbolic = [i for i, out in enumerate(outputs) if is_symbolic(out)]
    if symbolic or kwargs:
        run = keras.Function(list(inputs), [outputs[i] for i in symbolic], name=name, **kwargs)
    else:
        run = None

    def call(values):
        computed = list(outputs)
        if run is not None:
            for i, value in zip(symbolic, run(list(values))):
                computed[i] = value
        return [_numpy(value) for value in computed]

    return call


def _numpy(value):
    if isinstance(value, keras.Variable):
        return np.asarray(value.numpy())
    if isinstance(value, (np.ndarray, np.generic)) or value is None:
        return value
    return ops.convert_to_numpy(value)


def eval(x):
    if is_symbolic(x):
        raise ValueError("a symbolic KerasTensor has no value: run it through keras.Function")
    return _numpy(x)


def get_value(x):
    return _numpy(x)


def batch_get_value(tensors):
    return [get_value(x) for x in tensors]


def set_value(x, value):
    x.assign(np.asarray(value))


def batch_set_value(tuples):
    for x, value in tuples:
        set_value(x, value)


# ---- gradients: each engine's own autodiff where a Keras 2 style call can reach it

_TAPE = None  # tensorflow: one persistent tape per case, from its first variable (kbtool_reset closes it)


def _watch(var):
    global _TAPE
    if ENGINE != "tensorflow":
        return
    import tensorflow as tf

    if _TAPE is None:
        _TAPE = tf.GradientTape(persistent=True)
        _TAPE.__enter__()
    _TAPE.watch(var.value)


def _torch_gradients(loss, variables):
    import torch

    grads = torch.autograd.grad(loss, [v.value for v in variables], allow_unused=True)
    return [None if g is None else g.detach() for g in grads]


def _tensorflow_gradients(loss, variables):
    if _TAPE is None:
        raise ValueError("no variable was made in this case, so no tape recorded how the loss was computed")
    with _TAPE.stop_recording():  # the gradient's own ops are not recorded (no second derivatives are asked)
        return _TAPE.gradient(loss, [v.value for v in variables])


# jax, numpy and openvino: a loss already computed carries nothing to differentiate (jax.grad takes a function;
# numpy and openvino have no autodiff), so the adapter has no gradients() there: every gradient case is unsupported
if ENGINE == "torch":
    gradients = _torch_gradients
elif ENGINE == "tensorflow":
    gradients = _tensorflow_gradients
