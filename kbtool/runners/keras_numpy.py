"""Keras 2.3.1's own NumPy oracle: `keras/backend/numpy_backend.py` of the keras 2.3.1 package, the module Keras's
backend tests compared every backend with, in the tensorflow1 environment (Python 3.7).

It is loaded without keras/__init__.py (which imports TensorFlow): see the `keras_numpy_backend` shim. It has about
94 of the API's functions (the others are `unsupported`), plain NumPy arrays for tensors and no placeholder or
function: only the eager mode can run.
"""

from kbtool.runners import tensorflow1
from kbtool.runners.base import Recipe

RECIPE = Recipe(
    name="keras-numpy",
    python_version=tensorflow1.RECIPE.python_version,
    packages=tensorflow1.RECIPE.packages,
    env_name=tensorflow1.RECIPE.name,
    module="keras.backend.numpy_backend",
    shims=["keras_numpy_backend"],
    version_of=["keras", "numpy", "scipy"],
    modes=("eager",),
    unsupported_modes={
        "symbolic": "keras/backend/numpy_backend.py computes on NumPy arrays at once: it has no placeholder or "
        "function, so no case can run symbolically"
    },
    notes="eager mode only; Keras 2.3.1's numpy_backend.py, in the tensorflow1 environment (TensorFlow not imported).",
    oracle=True,  # Keras's own test oracle: its timings say nothing about an engine
    case_seconds=0.005,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)
