"""MXNet backend: AWS's keras-mxnet 2.2.4.3 (a fork of Keras 2.2.4 that installs as `keras`) on mxnet 1.9.1, Python 3.7."""

from kbtool.runners.base import Recipe

RECIPE = Recipe(
    name="mxnet",
    python_version="3.7",
    # keras-mxnet asks for mxnet>=1.3 without a cap; 1.9.1 is the last release (MKLDNN CPU build)
    packages=["keras-mxnet==2.2.4.3", "mxnet==1.9.1"],
    module="keras.backend",
    keras_backend="mxnet",
    version_of=["mxnet", "keras", "numpy"],
    env_vars=lambda env_dir: {"MXNET_STORAGE_FALLBACK_LOG_VERBOSE": "0", "OMP_NUM_THREADS": "1"},
    notes="keras-mxnet warns at import that its repository is archived; MXNet runs on the CPU.",
    case_seconds=0.025,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)
