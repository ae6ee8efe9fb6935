"""Convolutions and pooling in 1, 2 and 3 spatial dims (cross-correlation, TensorFlow's padding arithmetic).

Inputs are moved to channels_last, computed there, and moved back. Kernels are
(*spatial, in_channels, out_channels) whatever the data format, as in Keras.
"""

import itertools
from typing import Any, List, Optional

import numpy as np
from numpy.typing import NDArray

from kbtool.reference.core import normalize_data_format, op

__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "pool2d",
    "pool3d",
    "conv2d_transpose",
    "deconv2d",
    "conv3d_transpose",
    "separable_conv1d",
    "separable_conv2d",
    "depthwise_conv2d",
    "local_conv1d",
    "local_conv2d",
]

PADDINGS = ("valid", "same")
POOL_MODES = ("max", "avg")


def _to_last(x: Any, data_format: Optional[str]) -> NDArray[Any]:
    return np.moveaxis(x, 1, -1) if data_format == "channels_first" else x


def _from_last(x: Any, data_format: Optional[str]) -> NDArray[Any]:
    return np.moveaxis(x, -1, 1) if data_format == "channels_first" else x


def _tuple(value: Any, rank: Any) -> Any:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * rank


def _pads(size: Any, window: Any, stride: Any, dilation: Any, padding: Any) -> Any:
    """(output size, pad before, pad after) along one spatial dim."""
    effective = (window - 1) * dilation + 1
    if padding == "valid":
        return max(0, -(-(size - effective + 1) // stride)), 0, 0
    if padding == "causal":
        return -(-size // stride), effective - 1, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return out, total // 2, total - total // 2


def _windows(x: Any, window: Any, strides: Any, dilation: Any, padding: Any, pad_value: Any) -> Any:
    """[(kernel offset, strided view)] over a channels_last input, and the output spatial shape."""
    rank = len(window)
    dims = [_pads(x.shape[1 + i], window[i], strides[i], dilation[i], padding) for i in range(rank)]
    pad = [(0, 0)] + [(d[1], d[2]) for d in dims] + [(0, 0)]
    padded = np.pad(x, pad, constant_values=pad_value)
    out = [d[0] for d in dims]
    views = []
    for offset in itertools.product(*[range(w) for w in window]):
        index: List[Any] = [np.s_[:]]
        for i in range(rank):
            start = offset[i] * dilation[i]
            index.append(np.s_[start : start + (out[i] - 1) * strides[i] + 1 : strides[i]])
        index.append(np.s_[:])
        views.append((offset, padded[tuple(index)]))
    return views, out


def _check_padding(padding: Any, allowed: Any = PADDINGS) -> None:
    if padding not in allowed:
        raise ValueError(f"Invalid padding: {padding}")


def _conv(
    x: Any,
    kernel: Any,
    strides: Any,
    padding: Any,
    data_format: Optional[str],
    dilation_rate: Any,
    rank: Any,
    allowed: Any = PADDINGS,
) -> NDArray[Any]:
    _check_padding(padding, allowed)
    data_format = normalize_data_format(data_format)
    x, kernel = np.asarray(x), np.asarray(kernel)
    xl = _to_last(x, data_format)
    views, out = _windows(xl, kernel.shape[:rank], _tuple(strides, rank), _tuple(dilation_rate, rank), padding, 0)
    result = np.zeros([xl.shape[0]] + out + [kernel.shape[-1]], dtype=np.result_type(x, kernel))
    for offset, view in views:
        result += np.tensordot(view, kernel[offset], axes=([rank + 1], [0]))
    return _from_last(result, data_format)


@op
def conv1d(
    x: Any,
    kernel: Any,
    strides: int = 1,
    padding: str = "valid",
    data_format: Optional[str] = None,
    dilation_rate: int = 1,
) -> NDArray[Any]:
    # keras 2.3.1 tensorflow_backend.py conv1d refuses causal padding with channels_first (so does the Conv1D layer,
    # keras/layers/convolutional.py): Keras 2 defines no result for it
    if padding == "causal" and normalize_data_format(data_format) == "channels_first":
        raise ValueError(
            'When using causal padding in `conv1d`, `data_format` must be "channels_last" (temporal data).'
        )
    return _conv(x, kernel, strides, padding, data_format, dilation_rate, 1, PADDINGS + ("causal",))


@op
def conv2d(
    x: Any,
    kernel: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: Optional[str] = None,
    dilation_rate: Any = (1, 1),
) -> NDArray[Any]:
    return _conv(x, kernel, strides, padding, data_format, dilation_rate, 2)


@op
def conv3d(
    x: Any,
    kernel: Any,
    strides: Any = (1, 1, 1),
    padding: str = "valid",
    data_format: Optional[str] = None,
    dilation_rate: Any = (1, 1, 1),
) -> NDArray[Any]:
    return _conv(x, kernel, strides, padding, data_format, dilation_rate, 3)


def _pool(
    x: Any, pool_size: Any, strides: Any, padding: Any, data_format: Optional[str], pool_mode: Any, rank: Any
) -> NDArray[Any]:
    _check_padding(padding)
    data_format = normalize_data_format(data_format)
    if pool_mode not in POOL_MODES:
        raise ValueError(f"Invalid pooling mode: {pool_mode}")
    x = np.asarray(x)
    xl = _to_last(x, data_format).astype("float64")
    ones = (1,) * rank
    if pool_mode == "max":
        views, _ = _windows(xl, _tuple(pool_size, rank), _tuple(strides, rank), ones, padding, -np.inf)
        out = np.max(np.stack([v for _, v in views]), axis=0)
    else:
        # Average over the real cells only: padding does not count (TensorFlow's rule).
        views, _ = _windows(xl, _tuple(pool_size, rank), _tuple(strides, rank), ones, padding, np.nan)
        out = np.nanmean(np.stack([v for _, v in views]), axis=0)
    return _from_last(out.astype(x.dtype), data_format)


@op
def pool2d(
    x: Any,
    pool_size: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: Optional[str] = None,
    pool_mode: str = "max",
) -> NDArray[Any]:
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 2)


@op
def pool3d(
    x: Any,
    pool_size: Any,
    strides: Any = (1, 1, 1),
    padding: str = "valid",
    data_format: Optional[str] = None,
    pool_mode: str = "max",
) -> NDArray[Any]:
    return _pool(x, pool_size, strides, padding, data_format, pool_mode, 3)


def _conv_transpose(
    x: Any, kernel: Any, output_shape: Any, strides: Any, padding: Any, data_format: Optional[str], rank: Any
) -> NDArray[Any]:
    """The gradient of a convolution: scatter each input cell times the kernel into the output.

    Kernels are (*spatial, out_channels, in_channels); output_shape includes the batch dim.
    """
    _check_padding(padding)
    data_format = normalize_data_format(data_format)
    x, kernel = np.asarray(x), np.asarray(kernel)
    xl = _to_last(x, data_format)
    out_shape = list(output_shape)
    if data_format == "channels_first":
        out_shape = [out_shape[0]] + out_shape[2:] + [out_shape[1]]
    strides = _tuple(strides, rank)
    window = kernel.shape[:rank]
    pads = [_pads(out_shape[1 + i], window[i], strides[i], 1, padding)[1] for i in range(rank)]
    full = [(xl.shape[1 + i] - 1) * strides[i] + window[i] for i in range(rank)]
    size = [max(full[i], pads[i] + out_shape[1 + i]) for i in range(rank)]
    result = np.zeros([xl.shape[0]] + size + [kernel.shape[rank]], dtype=np.result_type(x, kernel))
    for offset in itertools.product(*[range(w) for w in window]):
        index: List[Any] = [np.s_[:]]
        for i in range(rank):
            index.append(np.s_[offset[i] : offset[i] + (xl.shape[1 + i] - 1) * strides[i] + 1 : strides[i]])
        index.append(np.s_[:])
        result[tuple(index)] += np.tensordot(xl, kernel[offset], axes=([rank + 1], [1]))
    crop = tuple([np.s_[:]] + [np.s_[pads[i] : pads[i] + out_shape[1 + i]] for i in range(rank)] + [np.s_[:]])
    return _from_last(result[crop], data_format)


@op
def conv2d_transpose(
    x: Any,
    kernel: Any,
    output_shape: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: Optional[str] = None,
    dilation_rate: Any = (1, 1),
) -> NDArray[Any]:
    dilation = _tuple(dilation_rate, 2)
    if tuple(dilation) != (1, 1):
        # a dilated kernel is the kernel with dilation - 1 zeros between its taps
        kernel = np.asarray(kernel)
        dilated = np.zeros(
            [(kernel.shape[i] - 1) * dilation[i] + 1 for i in range(2)] + list(kernel.shape[2:]), dtype=kernel.dtype
        )
        dilated[:: dilation[0], :: dilation[1]] = kernel
        kernel = dilated
    return _conv_transpose(x, kernel, output_shape, strides, padding, data_format, 2)


deconv2d = conv2d_transpose  # Keras 1.x name


@op
def conv3d_transpose(
    x: Any,
    kernel: Any,
    output_shape: Any,
    strides: Any = (1, 1, 1),
    padding: str = "valid",
    data_format: Optional[str] = None,
) -> NDArray[Any]:
    return _conv_transpose(x, kernel, output_shape, strides, padding, data_format, 3)


def _depthwise(
    x: Any, kernel: Any, strides: Any, padding: Any, data_format: Optional[str], dilation_rate: Any, rank: Any
) -> Any:
    """Each input channel convolved with its own `multiplier` filters; kernel (*spatial, in, multiplier)."""
    _check_padding(padding)
    data_format = normalize_data_format(data_format)
    x, kernel = np.asarray(x), np.asarray(kernel)
    xl = _to_last(x, data_format)
    views, out = _windows(xl, kernel.shape[:rank], _tuple(strides, rank), _tuple(dilation_rate, rank), padding, 0)
    channels, multiplier = kernel.shape[rank], kernel.shape[rank + 1]
    result = np.zeros([xl.shape[0]] + out + [channels, multiplier], dtype=np.result_type(x, kernel))
    for offset, view in views:
        result += view[..., None] * kernel[offset]
    return result.reshape([xl.shape[0]] + out + [channels * multiplier]), data_format


@op
def depthwise_conv2d(
    x: Any,
    depthwise_kernel: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: Optional[str] = None,
    dilation_rate: Any = (1, 1),
) -> NDArray[Any]:
    result, data_format = _depthwise(x, depthwise_kernel, strides, padding, data_format, dilation_rate, 2)
    return _from_last(result, data_format)


def _separable(
    x: Any,
    depthwise_kernel: Any,
    pointwise_kernel: Any,
    strides: Any,
    padding: Any,
    data_format: Optional[str],
    dilation_rate: Any,
    rank: Any,
) -> NDArray[Any]:
    result, data_format = _depthwise(x, depthwise_kernel, strides, padding, data_format, dilation_rate, rank)
    pointwise = np.asarray(pointwise_kernel)
    pointwise = pointwise.reshape(pointwise.shape[-2:])
    return _from_last(np.tensordot(result, pointwise, axes=([rank + 1], [0])), data_format)


@op
def separable_conv1d(
    x: Any,
    depthwise_kernel: Any,
    pointwise_kernel: Any,
    strides: int = 1,
    padding: str = "valid",
    data_format: Optional[str] = None,
    dilation_rate: int = 1,
) -> NDArray[Any]:
    return _separable(x, depthwise_kernel, pointwise_kernel, strides, padding, data_format, dilation_rate, 1)


@op
def separable_conv2d(
    x: Any,
    depthwise_kernel: Any,
    pointwise_kernel: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: Optional[str] = None,
    dilation_rate: Any = (1, 1),
) -> NDArray[Any]:
    return _separable(x, depthwise_kernel, pointwise_kernel, strides, padding, data_format, dilation_rate, 2)


def _local(
    inputs: Any, kernel: Any, kernel_size: Any, strides: Any, data_format: Optional[str], rank: Any
) -> NDArray[Any]:
    """Unshared weights: kernel (prod(output), prod(kernel_size) * in_channels, filters)."""
    data_format = normalize_data_format(data_format)
    original = np.asarray(inputs)
    x = _to_last(original, data_format)
    kernel = np.asarray(kernel)
    kernel_size, strides = _tuple(kernel_size, rank), _tuple(strides, rank)
    out = [(x.shape[1 + i] - kernel_size[i]) // strides[i] + 1 for i in range(rank)]
    result = np.zeros([x.shape[0]] + out + [kernel.shape[-1]], dtype=np.result_type(x, kernel))
    for position, cell in enumerate(itertools.product(*[range(o) for o in out])):
        index = (
            [np.s_[:]]
            + [np.s_[cell[i] * strides[i] : cell[i] * strides[i] + kernel_size[i]] for i in range(rank)]
            + [np.s_[:]]
        )
        patch = x[tuple(index)]
        if data_format == "channels_first":
            # Keras flattens a channels_first patch as (channels, *window)
            patch = np.moveaxis(patch, -1, 1)
        patch = patch.reshape(x.shape[0], -1)
        result[(np.s_[:],) + cell] = patch @ kernel[position]
    return _from_last(result, data_format)


@op
def local_conv1d(
    inputs: Any, kernel: Any, kernel_size: Any, strides: Any, data_format: Optional[str] = None
) -> NDArray[Any]:
    return _local(inputs, kernel, kernel_size, strides, data_format, 1)


@op
def local_conv2d(
    inputs: Any, kernel: Any, kernel_size: Any, strides: Any, output_shape: Any, data_format: Optional[str] = None
) -> NDArray[Any]:
    return _local(inputs, kernel, kernel_size, strides, data_format, 2)
