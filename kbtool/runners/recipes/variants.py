"""A backend's variants of a case: the same call with a transformed input, judged against the case's reference.

Theano's is the one today: keras 2.3.1's Theano backend convolves where the others cross-correlate, so its
convolution cases also run with the kernel flipped (Recipe.variants, Recipe.variant_suffixes)."""

import dataclasses
from typing import Any, List

import numpy as np

KERNEL_FLIPPED = ".kernel_flipped"
# keras 2.3.1's Theano backend calls T.nnet.conv2d / conv3d (and their gradInputs for the transposed ones) with
# Theano's default filter_flip=True: a true convolution. depthwise_conv2d and separable_conv1d/2d flip their
# depthwise kernel first (_preprocess_conv2d_depthwise_kernel: kernel[::-1, ::-1]) and their pointwise kernel is
# 1x1, so they cross-correlate like TensorFlow; local_conv1d/2d are batched dots. Checked in
# keras/backend/theano_backend.py (conv1d goes through conv2d).
FLIPPED_KERNEL_OPS = ("conv1d", "conv2d", "conv3d", "conv2d_transpose", "conv3d_transpose")


def kernel_flipped_variants(case: Any) -> List[Any]:
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


def _uses(case: Any, index: int) -> int:
    """How many arguments name array `index` (a kernel shared with another argument cannot be flipped alone)."""
    found: List[Any] = []

    def walk(spec: Any) -> None:
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
