"""Theano backend: keras 2.3.1 + theano 1.0.5 on Python 3.11 with numpy 1.23 and OpenBLAS."""

import ctypes.util
import dataclasses
import os

import numpy as np

from kbtool.runners.base import Recipe, kbtool_home

KERNEL_FLIPPED = ".kernel_flipped"
# keras 2.3.1's Theano backend calls T.nnet.conv2d / conv3d (and their gradInputs for the transposed ones) with
# Theano's default filter_flip=True: a true convolution. depthwise_conv2d and separable_conv1d/2d flip their
# depthwise kernel first (_preprocess_conv2d_depthwise_kernel: kernel[::-1, ::-1]) and their pointwise kernel is
# 1x1, so they cross-correlate like TensorFlow; local_conv1d/2d are batched dots. Checked in
# keras/backend/theano_backend.py (conv1d goes through conv2d).
FLIPPED_KERNEL_OPS = ("conv1d", "conv2d", "conv3d", "conv2d_transpose", "conv3d_transpose")


def _theano_flags(env_dir, worker=0):
    # Each worker has a compile cache of its own: Theano locks a shared one even to load a cached module, and a
    # worker that finds it locked sleeps for seconds (theano/gof/compilelock.py), so two workers on one cache run
    # no faster than one. The cases are shared out the same way every run, so each cache stays warm. Theano's
    # releases (`theano[theano=1.0.2]`) share it, as Theano's own default compiledir does: a module is keyed by its
    # generated C source, so a release reuses only what it would have compiled identically.
    compiledir = os.path.join(kbtool_home(), "cache", "theano" if worker == 0 else f"theano-worker{worker}")
    # Without a real BLAS, Theano's batched dot fails to link `dgemm_`.
    return {"THEANO_FLAGS": f"blas.ldflags=-lopenblas,base_compiledir={compiledir}"}


def _system_check():
    if not ctypes.util.find_library("openblas"):
        return ["OpenBLAS not found (Debian: apt-get install libopenblas-dev)"]
    return []


def kernel_flipped_variants(case):
    """For a convolution that Theano computes as a true convolution, the same case with its kernel reversed along
    the spatial axes (as Keras 2's own tests compared Theano after convert_kernel): judged against the original
    case's reference, it passes where flipping is the only difference.

    No variant for gradient cases (the kernel's gradient comes out flipped too), error, statistical or documented
    example cases, nor where the kernel is not one plain input array of its own."""
    if case.op not in FLIPPED_KERNEL_OPS or case.grad or case.raises or case.stats or case.shown:
        return []
    spec = case.args[1] if len(case.args) > 1 else case.kwargs.get("kernel")
    index = spec.get("tensor") if isinstance(spec, dict) else None
    if not isinstance(index, int) or not 0 <= index < len(case.arrays) or _uses(case, index) != 1:
        return []
    kernel = case.arrays[index]
    if kernel.ndim < 3:  # (spatial..., in, out): at least one spatial axis
        return []
    arrays = list(case.arrays)
    arrays[index] = np.ascontiguousarray(np.flip(kernel, axis=tuple(range(kernel.ndim - 2))))
    return [dataclasses.replace(case, id=case.id + KERNEL_FLIPPED, arrays=arrays)]


def _uses(case, index):
    """How many arguments name array `index` (a kernel shared with another argument cannot be flipped alone)."""
    found = []

    def walk(spec):
        if isinstance(spec, dict):
            found.extend(v for k, v in spec.items() if k in ("tensor", "array", "constant") and v == index)
            for value in spec.values():
                if isinstance(value, (list, dict)):
                    walk(value)
        elif isinstance(spec, list):
            for item in spec:
                walk(item)

    walk(list(case.args) + list(case.kwargs.values()))
    return len(found)


RECIPE = Recipe(
    name="theano",
    python_version="3.11",
    packages=["numpy==1.23.5", "scipy==1.10.1", "theano==1.0.5", "keras==2.3.1"],
    module="keras.backend",
    keras_backend="theano",
    shims=["collections_abc", "theano_no_c_scan", "fractions_gcd"],
    version_of=["theano", "keras", "numpy"],
    apt_packages=["libopenblas-dev"],
    env_vars=_theano_flags,
    system_check=_system_check,
    variants=kernel_flipped_variants,
    variant_suffixes={KERNEL_FLIPPED: FLIPPED_KERNEL_OPS},
    # Theano builds and optimises a graph for every call (K.eval too), so its cases take most of a check's time (about
    # 0.08 s each, measured alone): the pool starts it first, and a second worker joins it from the back of its queue
    # once the other backends are done (kbtool/runners/pool.py)
    case_seconds=0.08,
    per_worker_env=_theano_flags,
    # compiling a scan graph (ctc_batch_cost, rnn) cold takes minutes on 2 cores while the other worker compiles
    # too; a warm cache answers in seconds. A hang still ends, and --timeout still wins.
    case_timeout=600.0,
)
