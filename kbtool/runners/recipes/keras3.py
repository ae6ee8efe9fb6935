"""The five Keras 3 engine backends, as data: one adapter module on keras.ops, KERAS_BACKEND per engine.

Each `keras3-<engine>` backend runs kbtool's adapter `keras3_port` (kbtool/worker/keras3_port/): the Keras 2
backend API written on Keras 3's public API (keras.ops, keras.random, keras.Variable, keras.Input/keras.Function),
as specs/keras3_map.yaml maps each function. The engine is Keras 3's own choice from KERAS_BACKEND.
"""

import os
from typing import Callable, Dict, List, Optional

from kbtool.runners.base import kbtool_home
from kbtool.runners.recipes.keras2 import TENSORFLOW as KERAS2_TENSORFLOW
from kbtool.runners.recipes.recipe import Recipe

KERAS = "keras==3.15.1"
ADAPTER = "keras3_port"  # the worker-side adapter package (kbtool/worker/keras3_port/)

# The worker's environment per device (on_device adds KBTOOL_DEVICE and KBTOOL_PRECISION, which the adapter reads).
# A CPU run hides every GPU from the engine, so "cpu" means the CPU even on a machine with a GPU.
HIDE_GPUS = {"CUDA_VISIBLE_DEVICES": "-1"}
Devices = Dict[str, Callable[[str], Dict[str, str]]]  # device -> (env_dir -> the worker's variables there)


def _hide_gpus(env_dir: str) -> Dict[str, str]:
    return dict(HIDE_GPUS)


def _as_is(env_dir: str) -> Dict[str, str]:
    return {}


CPU_ONLY: Devices = {"cpu": _hide_gpus}
CPU_AND_GPU: Devices = {"cpu": _hide_gpus, "gpu": _as_is}


def engine_recipe(
    engine: str,
    packages: List[str],
    version_of: List[str],
    env_vars: Callable[[str], Dict[str, str]] = _as_is,
    devices: Optional[Devices] = None,
    env_name: Optional[str] = None,
    python_version: str = "3.11",
    extra_index: Optional[str] = None,
    case_seconds: float = 0.01,
    notes: str = "",
) -> Recipe:
    """The recipe of `keras3-<engine>`: keras 3.15.1 with KERAS_BACKEND=<engine>, both modes (symbolic mode runs
    through keras.Input with None dims and keras.Function)."""
    return Recipe(
        name=f"keras3-{engine}",
        python_version=python_version,
        packages=packages,
        module=ADAPTER,
        keras_backend=engine,
        version_of=["keras"] + version_of + ["numpy"],
        env_vars=env_vars,
        devices=devices or CPU_ONLY,
        env_name=env_name,
        extra_index=extra_index,
        notes=notes or f"kbtool's K.* adapter on keras.ops, KERAS_BACKEND={engine}.",
        case_seconds=case_seconds,
    )


def jax_cache(env_dir: str) -> Dict[str, str]:
    """JAX's persistent compilation cache, under kbtool's cache folder (beside Theano's compile dirs), for every
    compiled computation however fast it compiled: on a GPU a case's time is mostly XLA compiling it (about 0.1 s a
    result on an H100, one worker), and a run compiles the same small computations as the last one. Workers share the
    one folder (JAX keys an entry by its computation, jax/jaxlib version and device, so one release's entries never
    serve another's); a worker that reads an entry another is still writing recompiles it (JAX warns, never fails).

    On the GPU only: on the CPU it slows a run. The whole spec on keras3-jax (3,143 results, --jobs 2, 2 cores, one
    session, interleaved): 44.7 s and 44.4 s without it, 83.3 s with it cold (1.87x: writing 2,552 entries, 12 MB),
    43.2 s and 43.7 s warm (0.98x); the results are the same. (12 ops at --jobs 1 gave cold 0.87x, warm 0.51x: small
    runs gain, the whole spec does not, and a first run pays.)"""
    return {
        "JAX_COMPILATION_CACHE_DIR": os.path.join(kbtool_home(), "cache", "jax"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",  # JAX's default caches only what took 1 s or more
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",  # no minimum size (JAX's default on a local disk too)
    }


def _jax_cpu(env_dir: str) -> Dict[str, str]:
    return dict(HIDE_GPUS, JAX_PLATFORMS="cpu")


def _jax_gpu(env_dir: str) -> Dict[str, str]:
    # no preallocation: JAX would take 75 % of the GPU's memory and no other worker could start; each worker's share
    # of the memory (XLA_PYTHON_CLIENT_MEM_FRACTION) is set by runners.base.share_memory, which counts the workers
    return dict({"JAX_PLATFORMS": "cuda", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, **jax_cache(env_dir))


def _tensorflow_env(env_dir: str) -> Dict[str, str]:
    # not the tensorflow recipe's variables, which hide the GPU for the Keras 2 backend
    return {"TF_CPP_MIN_LOG_LEVEL": "3"}


# jax[cpu] 0.10.2, Python 3.11. JAX x64 stays off, as Keras 3 leaves it: float64 inputs are computed in float32,
# which the results show.
JAX = engine_recipe(
    "jax",
    packages=[KERAS, "jax[cpu]==0.10.2"],
    version_of=["jax", "jaxlib"],
    devices={"cpu": _jax_cpu, "gpu": _jax_gpu},
)

# torch 2.13.0, the CPU wheel (no CUDA libraries, a tenth of the size), which is on PyTorch's own index only.
TORCH = engine_recipe(
    "torch",
    packages=[KERAS, "torch==2.13.0+cpu"],
    version_of=["torch"],
    devices=CPU_AND_GPU,
    extra_index="https://download.pytorch.org/whl/cpu",
)

# in the tensorflow env (TensorFlow 2.21 depends on keras 3.15.1 there), so it has no env of its own.
TENSORFLOW = engine_recipe(
    "tensorflow",
    packages=KERAS2_TENSORFLOW.packages,
    version_of=["tensorflow"],
    env_vars=_tensorflow_env,
    devices=CPU_AND_GPU,
    env_name=KERAS2_TENSORFLOW.name,
    notes="kbtool's K.* adapter on keras.ops, KERAS_BACKEND=tensorflow; shares the tensorflow environment.",
)

# Keras 3's inference-only NumPy engine: no gradients, no variables that train. keras's numpy engine imports scipy
# (keras/src/backend/numpy/math.py, nn.py, linalg.py) and jax (nn.py: its convolutions and pooling are jax.lax's),
# neither of which keras declares.
NUMPY = engine_recipe(
    "numpy",
    packages=[KERAS, "scipy==1.17.1", "jax[cpu]==0.10.2"],
    version_of=["scipy", "jax"],
    case_seconds=0.005,
    notes="kbtool's K.* adapter on keras.ops, KERAS_BACKEND=numpy (whose convolutions and pooling call jax.lax).",
)

# openvino 2026.4.1 (CPU plugin; Keras 3's OpenVINO engine is inference-only). keras's openvino engine imports scipy
# (keras/src/backend/openvino/math.py), which keras does not declare.
OPENVINO = engine_recipe("openvino", packages=[KERAS, "openvino==2026.4.1", "scipy==1.17.1"], version_of=["openvino"])
