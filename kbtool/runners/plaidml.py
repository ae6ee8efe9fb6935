"""PlaidML backend: plaidml-keras 0.7.0 (keras 2.2.4 with PlaidML's backend) on PlaidML's LLVM CPU device, Python 3.7.

kbtool configures the device itself: the worker reads a settings file inside the env (PLAIDML_SETTINGS), never the
user's ~/.plaidml from `plaidml-setup`, and `plaidml.keras.install_backend()` runs before keras is imported.
"""

import json
import os

from kbtool.runners.base import Recipe

DEVICE = "llvm_cpu.0"


def _settings_path(env_dir):
    return os.path.join(env_dir, "kbtool-plaidml.json")


def _prepare(env_dir):
    from kbtool.files import write_atomic

    write_atomic(
        _settings_path(env_dir),
        json.dumps({"PLAIDML_EXPERIMENTAL": True, "PLAIDML_DEVICE_IDS": [DEVICE]}, indent=2) + "\n",
    )


def _env_vars(env_dir):
    return {
        "PLAIDML_SETTINGS": _settings_path(env_dir),
        "PLAIDML_EXPERIMENTAL": "1",
        "PLAIDML_DEVICE_IDS": DEVICE,
        "PLAIDML_VERBOSE": "0",
    }


RECIPE = Recipe(
    name="plaidml",
    python_version="3.7",
    packages=["plaidml-keras==0.7.0"],
    module="keras.backend",
    keras_backend="plaidml.keras.backend",
    shims=["plaidml_install_backend"],
    version_of=["plaidml", "keras", "numpy"],
    env_vars=_env_vars,
    prepare=_prepare,
    notes=f"runs on PlaidML's LLVM CPU device ({DEVICE}), configured by kbtool.",
    case_seconds=0.09,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)
