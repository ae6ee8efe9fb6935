"""Convolutions and pooling (cross-correlation, TensorFlow's padding arithmetic).

Inputs are moved to channels_last, computed there, and moved back. Kernels are
(rows, cols, in_channels, out_channels) whatever the data format, as in Keras.
"""
import numpy as np

from .core import normalize_data_format, op

__all__ = ["conv2d", "pool2d"]

PADDINGS = ("valid", "same")
POOL_MODES = ("max", "avg")


def _to_last(x, data_format):
    return np.moveaxis(x, 1, -1) if data_format == "channels_first" else x


def _from_last(x, data_format):
    return np.moveaxis(x, -1, 1) if data_format == "channels_first" else x


def _pads(size, window, stride, dilation, padding):
    """(output size, pad before, pad after) along one spatial dim."""
    effective = (window - 1) * dilation + 1
    if padding == "valid":
        return max(0, -(-(size - effective + 1) // stride)), 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + effective - size, 0)
    return out, total // 2, total - total // 2


def _windows(x, window, strides, dilation, padding, pad_value):
    """Yield (kernel offset, strided view) pairs over an NHWC input; returns output spatial shape."""
    dims = [_pads(x.shape[1 + i], window[i], strides[i], dilation[i], padding) for i in range(2)]
    pad = [(0, 0)] + [(d[1], d[2]) for d in dims] + [(0, 0)]
    padded = np.pad(x, pad, constant_values=pad_value)
    out_h, out_w = dims[0][0], dims[1][0]
    views = []
    for i in range(window[0]):
        for j in range(window[1]):
            r0, c0 = i * dilation[0], j * dilation[1]
            view = padded[:, r0: r0 + (out_h - 1) * strides[0] + 1: strides[0],
                          c0: c0 + (out_w - 1) * strides[1] + 1: strides[1], :]
            views.append(((i, j), view))
    return views, (out_h, out_w)


def _check(padding, data_format):
    if padding not in PADDINGS:
        raise ValueError("Invalid padding: {}".format(padding))
    return normalize_data_format(data_format)


@op
def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    data_format = _check(padding, data_format)
    x, kernel = np.asarray(x), np.asarray(kernel)
    xl = _to_last(x, data_format)
    views, (out_h, out_w) = _windows(xl, kernel.shape[:2], strides, dilation_rate, padding, 0)
    out = np.zeros((xl.shape[0], out_h, out_w, kernel.shape[3]), dtype=np.result_type(x, kernel))
    for (i, j), view in views:
        out += np.tensordot(view, kernel[i, j], axes=([3], [0]))
    return _from_last(out, data_format)


@op
def pool2d(x, pool_size, strides=(1, 1), padding="valid", data_format=None, pool_mode="max"):
    data_format = _check(padding, data_format)
    if pool_mode not in POOL_MODES:
        raise ValueError("Invalid pooling mode: {}".format(pool_mode))
    x = np.asarray(x)
    xl = _to_last(x, data_format)
    if pool_mode == "max":
        views, _ = _windows(xl, pool_size, strides, (1, 1), padding, -np.inf)
        out = np.max(np.stack([v for _, v in views]), axis=0)
    else:
        # Average over the real cells only: padding does not count (TensorFlow's rule).
        views, _ = _windows(xl, pool_size, strides, (1, 1), padding, np.nan)
        out = np.nanmean(np.stack([v for _, v in views]), axis=0)
    return _from_last(out.astype(x.dtype), data_format)
