"""Shape manipulation."""

from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

from kbtool.reference.core import floatx, normalize_data_format, op

__all__ = [
    "concatenate",
    "reshape",
    "one_hot",
    "permute_dimensions",
    "repeat_elements",
    "repeat",
    "tile",
    "flatten",
    "batch_flatten",
    "expand_dims",
    "squeeze",
    "temporal_padding",
    "spatial_2d_padding",
    "spatial_3d_padding",
    "resize_images",
    "resize_volumes",
    "stack",
    "reverse",
    "slice",
    "gather",
]


@op
def concatenate(tensors: Any, axis: Any = -1) -> NDArray[Any]:
    return np.concatenate([np.asarray(t) for t in tensors], axis=axis)


@op
def reshape(x: Any, shape: Any) -> NDArray[Any]:
    return np.reshape(x, shape)


@op
def one_hot(indices: Any, num_classes: Any) -> Any:
    indices = np.asarray(indices).astype("int64")
    return (indices[..., None] == np.arange(num_classes)).astype(floatx())


@op
def permute_dimensions(x: Any, pattern: Any) -> NDArray[Any]:
    return np.transpose(x, tuple(pattern))


@op
def repeat_elements(x: Any, rep: Any, axis: Any) -> NDArray[Any]:
    return np.repeat(x, rep, axis=axis)


@op
def repeat(x: Any, n: Any) -> NDArray[Any]:
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"repeat expects a 2D tensor (samples, dim), got rank {x.ndim}")
    return np.repeat(x[:, None, :], n, axis=1)


@op
def tile(x: Any, n: Any) -> NDArray[Any]:
    return np.tile(x, n)


@op
def flatten(x: Any) -> NDArray[Any]:
    return np.reshape(x, (-1,))


@op
def batch_flatten(x: Any) -> NDArray[Any]:
    x = np.asarray(x)
    # (batch, prod of the other dims); a rank-1 input becomes (batch, 1), an empty batch stays empty
    return np.reshape(x, (x.shape[0], int(np.prod(x.shape[1:], dtype="int64"))))


@op
def expand_dims(x: Any, axis: Any = -1) -> NDArray[Any]:
    return np.expand_dims(x, axis)


@op
def squeeze(x: Any, axis: Any) -> Any:
    return np.squeeze(x, axis=axis)


def _pad(x: Any, pads: Any) -> NDArray[Any]:
    return np.pad(np.asarray(x), pads)


@op
def temporal_padding(x: Any, padding: Any = (1, 1)) -> NDArray[Any]:
    return _pad(x, [(0, 0), tuple(padding), (0, 0)])


def _spatial_padding(x: Any, padding: Any, data_format: Optional[str], rank: Any) -> NDArray[Any]:
    data_format = normalize_data_format(data_format)
    padding = [tuple(p) for p in padding]
    if len(padding) != rank or any(len(p) != 2 for p in padding):
        raise ValueError(f"padding must be {rank} pairs of ints")
    if data_format == "channels_first":
        return _pad(x, [(0, 0), (0, 0)] + padding)
    return _pad(x, [(0, 0)] + padding + [(0, 0)])


@op
def spatial_2d_padding(x: Any, padding: Any = ((1, 1), (1, 1)), data_format: Optional[str] = None) -> NDArray[Any]:
    return _spatial_padding(x, padding, data_format, 2)


@op
def spatial_3d_padding(
    x: Any, padding: Any = ((1, 1), (1, 1), (1, 1)), data_format: Optional[str] = None
) -> NDArray[Any]:
    return _spatial_padding(x, padding, data_format, 3)


def _resize(x: Any, factors: Any, data_format: Optional[str]) -> Any:
    data_format = normalize_data_format(data_format)
    x = np.asarray(x)
    first = 2 if data_format == "channels_first" else 1
    for offset, factor in enumerate(factors):
        x = np.repeat(x, factor, axis=first + offset)  # nearest neighbour
    return x


def _bilinear_axis(x: Any, factor: Any, axis: Any) -> Any:
    """Linear interpolation along one axis, upscaled by an integer factor: output pixel i samples input coordinate
    i / factor, the next input pixel clamped at the far edge (no half-pixel offset). Keras 2's contract: keras 2.3.1
    tensorflow_backend.py resize_images (TF 1's resize_bilinear, align_corners=False, half_pixel_centers=False) and
    theano_backend.py resize_images (bilinear_upsampling(ratio=2)) compute exactly this, and keras 2.3.1's
    tests/keras/backend/backend_test.py test_resize_images_bilinear asserts the two agree (tf_keras on TF 2 samples
    at half-pixel centres instead: see the spec's reference_decisions)."""
    size = x.shape[axis]
    coords = np.arange(size * factor) / factor
    low = np.floor(coords).astype("int64")
    high = np.minimum(low + 1, size - 1)
    weight = (coords - low).reshape([-1 if d == axis else 1 for d in range(x.ndim)])
    return np.take(x, low, axis=axis) * (1 - weight) + np.take(x, high, axis=axis) * weight


@op
def resize_images(
    x: Any, height_factor: Any, width_factor: Any, data_format: Optional[str] = None, interpolation: str = "nearest"
) -> Any:
    if interpolation not in ("nearest", "bilinear"):
        raise ValueError("interpolation should be one of 'nearest' or 'bilinear'")
    if interpolation == "nearest":
        return _resize(x, (height_factor, width_factor), data_format)
    data_format = normalize_data_format(data_format)
    x = np.asarray(x)
    first = 2 if data_format == "channels_first" else 1
    out = x.astype("float64")
    for offset, factor in enumerate((height_factor, width_factor)):
        out = _bilinear_axis(out, factor, first + offset)
    return out.astype(x.dtype)


@op
def resize_volumes(
    x: Any, depth_factor: Any, height_factor: Any, width_factor: Any, data_format: Optional[str] = None
) -> Any:
    return _resize(x, (depth_factor, height_factor, width_factor), data_format)


@op
def stack(x: Any, axis: int = 0) -> NDArray[Any]:
    return np.stack([np.asarray(t) for t in x], axis=axis)


@op
def reverse(x: Any, axes: Any) -> NDArray[Any]:
    axes = tuple(axes) if isinstance(axes, (list, tuple)) else (axes,)
    return np.flip(x, axes)


@op
def slice(x: Any, start: Any, size: Any) -> Any:
    x = np.asarray(x)
    index = tuple(np.s_[s : x.shape[i] if z == -1 else s + z] for i, (s, z) in enumerate(zip(start, size)))
    return x[index]


@op
def gather(reference: Any, indices: Any) -> Any:
    return np.asarray(reference)[np.asarray(indices).astype("int64")]
