# py36-compatible
"""The engine, its device and precision, configuration, variables, placeholders, functions and gradients.

Keras 3 has no graph of its own: a Keras 2 placeholder becomes a symbolic `keras.Input` (its None dims stay None, so
Keras 3's static shape inference is what the symbolic mode checks) and `K.function` becomes `keras.Function`, which
runs the symbolic graph on the engine. Variables are `keras.Variable`s; eager results are engine tensors.
"""

import os

import keras

ENGINE = keras.backend.backend()
DEVICE = os.environ.get("KBTOOL_DEVICE", "cpu")
PRECISION = os.environ.get("KBTOOL_PRECISION", "default")
# this worker's share of the device's memory (0..1; kbtool sets it on a GPU, where several workers share the device)
MEMORY_SHARE = os.environ.get("KBTOOL_DEVICE_MEMORY_SHARE")


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
        if MEMORY_SHARE:  # JAX reads its own variable (XLA_PYTHON_CLIENT_MEM_FRACTION); torch is told here
            torch.cuda.set_per_process_memory_fraction(float(MEMORY_SHARE), 0)
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


def _switches():
    """The engine's precision switches as they are now: None where Keras 3's engine has none."""
    if ENGINE == "jax":
        import jax

        return {"matmul": jax.config.jax_default_matmul_precision}
    if ENGINE == "torch":
        import torch

        return {
            "matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_tf32": torch.backends.cudnn.allow_tf32,
            "float32_matmul": torch.get_float32_matmul_precision(),
        }
    if ENGINE == "tensorflow":
        import tensorflow as tf

        return {"tf32": tf.config.experimental.tensor_float_32_execution_enabled()}
    return None


# `--precision highest`: each engine's own switch for full float32 matmuls and convolutions (no TF32, no bfloat16
# passes), as Keras 3's own test suite sets it on GPUs
HIGHEST = {
    "jax": {"matmul": "highest"},
    "torch": {"matmul_tf32": False, "cudnn_tf32": False, "float32_matmul": "highest"},
    "tensorflow": {"tf32": False},
}


def _apply(switches):
    if ENGINE == "jax":
        import jax

        jax.config.update("jax_default_matmul_precision", switches["matmul"])
    elif ENGINE == "torch":
        import torch

        torch.backends.cuda.matmul.allow_tf32 = switches["matmul_tf32"]
        torch.backends.cudnn.allow_tf32 = switches["cudnn_tf32"]
        torch.set_float32_matmul_precision(switches["float32_matmul"])
    elif ENGINE == "tensorflow":
        import tensorflow as tf

        tf.config.experimental.enable_tensor_float_32_execution(switches["tf32"])


def kbtool_precisions():
    """The precisions the engine can be switched between (the device peak times its matmul at each): none where
    Keras 3's engine has no switch."""
    return ["default", "highest"] if ENGINE in HIGHEST else []


def kbtool_set_precision(name):
    """The engine's switches set to `name`: "highest" (HIGHEST) or "default" (the engine's own, as at import)."""
    if name not in ("default", "highest"):
        raise ValueError("KBTOOL_PRECISION must be default or highest, not {!r}".format(name))
    if ENGINE in HIGHEST:
        _apply(_DEFAULTS if name == "default" else HIGHEST[ENGINE])


DEVICE_NAME = _open_device()
_DEFAULTS = _switches()  # what "default" sets back (the device peak times both precisions)
if PRECISION != "default":  # "default" leaves the engine's default
    kbtool_set_precision(PRECISION)


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


def kbtool_copy(x):
    """A new tensor of x's values, written on the device (the device peak's copy). TensorFlow's identity hands its
    input's buffer on, copying nothing: there a negation, which reads and writes as many bytes."""
    if ENGINE == "tensorflow":
        import tensorflow as tf

        return tf.negative(x)
    return keras.ops.copy(x)


def kbtool_device():
    """The device the engine computes on, in words, as the device peak names it (jax: its device and kind, e.g.
    "cuda:0 NVIDIA H100 80GB HBM3")."""
    if ENGINE == "jax":
        import jax

        device = jax.devices()[0]  # jax's default device: the GPU where it has one
        kind = getattr(device, "device_kind", "")
        return str(device) if kind.lower() in ("", "cpu") else "{} {}".format(device, kind)
    if ENGINE == "tensorflow" and DEVICE == "gpu":
        import tensorflow as tf

        try:
            details = tf.config.experimental.get_device_details(tf.config.list_physical_devices("GPU")[0])
            return "{} {}".format(DEVICE_NAME, details.get("device_name", "")).strip()
        except Exception:  # the details are words for a reader: their absence changes no figure
            return DEVICE_NAME
    return DEVICE_NAME


# ---- configuration: keras.config (Keras 3 reads keras.json from KERAS_HOME itself)


def backend():
    return keras.config.backend()


def floatx():
    return keras.config.floatx()


def set_floatx(floatx):
    return keras.config.set_floatx(floatx)


def epsilon():
    return keras.config.epsilon()


def set_epsilon(e):
    return keras.config.set_epsilon(e)


def image_data_format():
    return keras.config.image_data_format()


def set_image_data_format(data_format):
    return keras.config.set_image_data_format(data_format)


def clear_session():
    return keras.utils.clear_session()


# ---- variables, constants, placeholders


def variable(value, dtype=None, name=None, constraint=None):
    return keras.Variable(value, dtype=dtype, name=name)


def constant(value, dtype=None, shape=None, name=None):
    if shape is None:
        return keras.ops.convert_to_tensor(value, dtype=dtype)
    return keras.ops.full(shape, value, dtype=dtype)


def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None):
    if shape is None:
        shape = (None,) * ndim
    return keras.Input(batch_shape=shape, dtype=dtype, sparse=sparse, name=name)


def function(inputs, outputs, updates=None, **kwargs):
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    symbolic = [i for i, out in enumerate(outputs) if isinstance(out, keras.KerasTensor)]
    run = keras.Function(list(inputs), [outputs[i] for i in symbolic], **kwargs) if symbolic or kwargs else None

    def call(values):
        computed = list(outputs)
        if run is not None:
            for i, value in zip(symbolic, run(list(values))):
                computed[i] = value
        return [keras.ops.convert_to_numpy(value) for value in computed]

    return call


def eval(x):
    return keras.ops.convert_to_numpy(x)


def get_value(x):
    return keras.ops.convert_to_numpy(x)


def batch_get_value(ops):
    return [keras.ops.convert_to_numpy(v) for v in ops]


def set_value(x, value):
    return x.assign(value)


def batch_set_value(tuples):
    for variable, value in tuples:
        variable.assign(value)


# ---- gradients: the map has no Keras 3 row for K.gradients (Keras 3 has no autodiff of its own; each engine's
# does it), so the adapter defines none and every gradients case is `unsupported`


def image_dim_ordering():
    return keras.config.image_data_format()


def set_image_dim_ordering(dim_ordering):
    return keras.config.set_image_data_format("channels_first" if dim_ordering == "th" else "channels_last")
