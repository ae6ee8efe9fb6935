"""Theano backend: keras 2.3.1 + theano 1.0.5 on Python 3.11 with numpy 1.23 and OpenBLAS."""
import ctypes.util
import os

from .base import Recipe, kbtool_home


def _theano_flags(env_dir):
    compiledir = os.path.join(kbtool_home(), "cache", "theano")
    # Without a real BLAS, Theano's batched dot fails to link `dgemm_`.
    return {"THEANO_FLAGS": "blas.ldflags=-lopenblas,base_compiledir={}".format(compiledir)}


def _system_check():
    if not ctypes.util.find_library("openblas"):
        return ["OpenBLAS not found (Debian: apt-get install libopenblas-dev)"]
    return []


RECIPE = Recipe(
    name="theano",
    python_version="3.11",
    packages=["numpy==1.23.5", "scipy==1.10.1", "theano==1.0.5", "keras==2.3.1"],
    module="keras.backend",
    keras_backend="theano",
    shims=["collections_abc", "theano_no_c_scan"],
    version_of=["theano", "keras", "numpy"],
    apt_packages=["libopenblas-dev"],
    env_vars=_theano_flags,
    system_check=_system_check,
)
