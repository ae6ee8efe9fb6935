"""The one helper the planted convolutions share: a kernel whose first tap weighs more."""

import numpy as np
import tensorflow as tf


def first_tap_scaled(kernel, factor):
    """`kernel` (rank 4, static shape: rows, columns, then channels) with its tap [0, 0] times `factor` in every
    channel: each output that tap reaches is off by about factor - 1 over the number of taps."""
    kernel = tf.convert_to_tensor(kernel)
    shape = tuple(int(d) for d in kernel.shape)
    scale = np.ones(shape, dtype=kernel.dtype.as_numpy_dtype)
    scale[0, 0] = factor
    return kernel * tf.constant(scale)
