"""Keras 3 backend: `keras.src.legacy.backend` of keras 3.15.1, the Keras 2 functions as Keras 3 keeps them, on TF 2.21.

It lives in the tensorflow backend's environment (TensorFlow 2.21 depends on keras 3), so it has no env of its own.
It has `variable` and `eval` but no `placeholder` or `function`: only the eager mode can run.
"""

from kbtool.runners import tensorflow
from kbtool.runners.base import Recipe

RECIPE = Recipe(
    name="keras3",
    python_version=tensorflow.RECIPE.python_version,
    packages=tensorflow.RECIPE.packages,
    env_name=tensorflow.RECIPE.name,
    module="keras.src.legacy.backend",
    keras_backend="tensorflow",  # keras 3 picks its engine from KERAS_BACKEND too
    version_of=["keras", "tensorflow", "numpy"],
    env_vars=tensorflow.RECIPE.env_vars,
    cpu_only=tensorflow.RECIPE.cpu_only,
    modes=("eager",),
    unsupported_modes={
        "symbolic": "keras.src.legacy.backend has no placeholder or function (Keras 3 dropped "
        "symbolic tensors outside its Functional API), so no case can run symbolically"
    },
    notes="eager mode only; shares the tensorflow environment.",
    case_seconds=0.03,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)
