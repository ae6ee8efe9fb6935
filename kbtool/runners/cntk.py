"""CNTK backend: keras 2.3.1 + cntk 2.7.post2, whose wheels stop at CPython 3.6."""

import os

from kbtool.runners.base import Recipe

MPI_DIR = "/usr/lib/x86_64-linux-gnu"
# CNTK links against OpenMPI 1.10's sonames; Debian ships OpenMPI 4 (soname 40), which serves.
MPI_COMPAT = {"libmpi.so.12": "libmpi.so.40", "libmpi_cxx.so.1": "libmpi_cxx.so.40"}


def _lib_dir(env_dir):
    return os.path.join(env_dir, "kbtool-lib")


def _system_check():
    missing = [target for target in MPI_COMPAT.values() if not os.path.exists(os.path.join(MPI_DIR, target))]
    if missing:
        return ["OpenMPI libraries missing: {} (Debian: apt-get install libopenmpi3)".format(", ".join(missing))]
    return []


def _prepare(env_dir):
    lib_dir = _lib_dir(env_dir)
    os.makedirs(lib_dir, exist_ok=True)
    for link, target in MPI_COMPAT.items():
        path = os.path.join(lib_dir, link)
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink(os.path.join(MPI_DIR, target), path)


def _env_vars(env_dir):
    paths = [_lib_dir(env_dir), os.environ.get("LD_LIBRARY_PATH", "")]
    return {"LD_LIBRARY_PATH": os.pathsep.join(p for p in paths if p)}


RECIPE = Recipe(
    name="cntk",
    python_version="3.6",
    bootstrap_packages=["pip<22"],  # the venv's pip 18 cannot read today's wheel metadata
    # Newest releases with cp36 wheels; later ones would try to build from source.
    packages=["cntk==2.7.post2", "keras==2.3.1", "numpy==1.19.5", "scipy==1.5.4", "pyyaml==5.4.1", "h5py==3.1.0"],
    module="keras.backend",
    keras_backend="cntk",
    version_of=["cntk", "keras", "numpy"],
    apt_packages=["libopenmpi3"],
    env_vars=_env_vars,
    system_check=_system_check,
    prepare=_prepare,
    # the cntk 2.7.post2 wheel's metadata calls itself 2.7 (a different wheel on PyPI): the lock pins the release
    freeze_aliases={"cntk==2.7": "cntk==2.7.post2"},
    case_seconds=0.006,  # seconds per case, measured alone: where the pool starts it (kbtool/runners/pool.py)
)
