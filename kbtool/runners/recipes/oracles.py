"""The oracles, as data: backends checked like any other but never timed by `kbtool bench`.

- numpy: kbtool's own reference (kbtool/reference/), run through the same worker path as the real backends, on
  kbtool's own interpreter (a Launch, no env);
- keras-numpy: Keras 2.3.1's own NumPy oracle, `keras/backend/numpy_backend.py` of the keras 2.3.1 package, the
  module Keras's backend tests compared every backend with, in the tensorflow1 environment (Python 3.7). It is
  loaded without keras/__init__.py (which imports TensorFlow): see the `keras_numpy_backend` shim. It has about 94
  of the API's functions (the others are `unsupported`), plain NumPy arrays for tensors and no placeholder or
  function: only the eager mode can run.
- numpy as the models oracle (`kbtool models`): Keras 2.3.1 itself, from the theano environment (Python 3.11), with
  the reference as its backend module (KERAS_BACKEND=kbtool.reference.keras_backend), so whole Keras models run
  on the reference: reference_keras_launch().
"""

import os
import sys

from kbtool.paths import CHECKOUT_ROOT
from kbtool.runners.base import ENV_RECORD, Launch, Unavailable, registered_python
from kbtool.runners.recipes.keras2 import TENSORFLOW1, THEANO
from kbtool.runners.recipes.recipe import Recipe

REFERENCE = "numpy"  # the reference backend's name


def reference_launch() -> Launch:
    """The reference's worker: kbtool.reference on kbtool's own Python, keras.json applied through its setters."""
    return Launch(
        backend=REFERENCE,
        python=sys.executable,
        module="kbtool.reference",
        version_of=["numpy"],
        extra_pythonpath=[CHECKOUT_ROOT],
        apply_keras_json=True,
    )


REFERENCE_KERAS_MODULE = "kbtool.reference.keras_backend"  # the reference as a Keras 2.3.1 backend module


def reference_keras_launch() -> Launch:
    """The models oracle's worker: Keras 2.3.1 of the theano env (Python 3.11; Theano itself is never imported: Keras
    loads the backend KERAS_BACKEND names) running on kbtool's reference, imported from this checkout. Unavailable
    when the theano env is not installed."""
    env_dir = THEANO.env_dir()
    if not os.path.exists(os.path.join(env_dir, ENV_RECORD)):
        raise Unavailable(f"the models oracle runs Keras 2.3.1 of the theano env, which is {THEANO.not_installed()}")
    external = registered_python(env_dir)
    env = {"KERAS_BACKEND": REFERENCE_KERAS_MODULE}
    if not external:
        env["PYTHONNOUSERSITE"] = "1"  # as a venv kbtool built runs its workers
    return Launch(
        backend=REFERENCE,
        python=external or THEANO.env_python(),
        module="keras.backend",
        shims=["collections_abc"],  # keras 2.3.1 imports ABCs from `collections` (Python 3.10 removed them)
        version_of=["keras", "numpy"],
        env=env,
        extra_pythonpath=[CHECKOUT_ROOT],
    )


KERAS_NUMPY = Recipe(
    name="keras-numpy",
    python_version=TENSORFLOW1.python_version,
    packages=TENSORFLOW1.packages,
    env_name=TENSORFLOW1.name,
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
