"""The code some Keras 2 recipes run on the machine's side: system libraries they check for, what they prepare in
their env after pip (symlinks, settings files), and the environment variables computed from the env's folder.
The recipes themselves (keras2.py) are data that name these functions."""

import ctypes.util
import json
import os
from typing import Dict, List

from kbtool.runners.base import kbtool_home

# --- theano: keras 2.3.1 + theano 1.0.5 with OpenBLAS --------------------------------------------------------------


def theano_flags(env_dir: str, worker: int = 0) -> Dict[str, str]:
    """THEANO_FLAGS of the worker that takes share `worker`: OpenBLAS, and a compile cache of its own."""
    # Each worker has a compile cache of its own: Theano locks a shared one even to load a cached module, and a
    # worker that finds it locked sleeps for seconds (theano/gof/compilelock.py), so two workers on one cache run
    # no faster than one. The cases are shared out the same way every run, so each cache stays warm. Theano's
    # releases (`theano[theano=1.0.2]`) share it, as Theano's own default compiledir does: a module is keyed by its
    # generated C source, so a release reuses only what it would have compiled identically.
    compiledir = os.path.join(kbtool_home(), "cache", "theano" if worker == 0 else f"theano-worker{worker}")
    # Without a real BLAS, Theano's batched dot fails to link `dgemm_`.
    return {"THEANO_FLAGS": f"blas.ldflags=-lopenblas,base_compiledir={compiledir}"}


def openblas_check() -> List[str]:
    if not ctypes.util.find_library("openblas"):
        return ["OpenBLAS not found (Debian: apt-get install libopenblas-dev)"]
    return []


# --- cntk: cntk 2.7.post2 links against OpenMPI 1.10's sonames -----------------------------------------------------

MPI_DIR = "/usr/lib/x86_64-linux-gnu"
# CNTK links against OpenMPI 1.10's sonames; Debian ships OpenMPI 4 (soname 40), which serves.
MPI_COMPAT = {"libmpi.so.12": "libmpi.so.40", "libmpi_cxx.so.1": "libmpi_cxx.so.40"}


def _mpi_lib_dir(env_dir: str) -> str:
    return os.path.join(env_dir, "kbtool-lib")


def mpi_check() -> List[str]:
    missing = [target for target in MPI_COMPAT.values() if not os.path.exists(os.path.join(MPI_DIR, target))]
    if missing:
        return ["OpenMPI libraries missing: {} (Debian: apt-get install libopenmpi3)".format(", ".join(missing))]
    return []


def mpi_links(env_dir: str) -> None:
    """The old sonames CNTK asks for, linked to Debian's OpenMPI in a folder of the env."""
    lib_dir = _mpi_lib_dir(env_dir)
    os.makedirs(lib_dir, exist_ok=True)
    for link, target in MPI_COMPAT.items():
        path = os.path.join(lib_dir, link)
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink(os.path.join(MPI_DIR, target), path)


def mpi_env(env_dir: str) -> Dict[str, str]:
    paths = [_mpi_lib_dir(env_dir), os.environ.get("LD_LIBRARY_PATH", "")]
    return {"LD_LIBRARY_PATH": os.pathsep.join(p for p in paths if p)}


# --- plaidml: kbtool configures the device itself ------------------------------------------------------------------

PLAIDML_DEVICE = "llvm_cpu.0"


def _plaidml_settings_path(env_dir: str) -> str:
    return os.path.join(env_dir, "kbtool-plaidml.json")


def plaidml_settings(env_dir: str) -> None:
    """The settings file the worker reads (PLAIDML_SETTINGS), never the user's ~/.plaidml from `plaidml-setup`."""
    from kbtool.files import write_atomic

    write_atomic(
        _plaidml_settings_path(env_dir),
        json.dumps({"PLAIDML_EXPERIMENTAL": True, "PLAIDML_DEVICE_IDS": [PLAIDML_DEVICE]}, indent=2) + "\n",
    )


def plaidml_env(env_dir: str) -> Dict[str, str]:
    return {
        "PLAIDML_SETTINGS": _plaidml_settings_path(env_dir),
        "PLAIDML_EXPERIMENTAL": "1",
        "PLAIDML_DEVICE_IDS": PLAIDML_DEVICE,
        "PLAIDML_VERBOSE": "0",
    }
