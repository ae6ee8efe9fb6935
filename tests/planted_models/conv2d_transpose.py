"""tf_keras's backend with conv2d_transpose planted: the kernel's first tap (row 0, column 0) weighs 1 % more, in
every channel. Conv2DTranspose layers call it."""

from planted_models._taps import first_tap_scaled as _first_tap_scaled
from tf_keras.backend import *  # noqa: F403
from tf_keras.backend import conv2d_transpose as _conv2d_transpose

FACTOR = 1.01


def conv2d_transpose(x, kernel, output_shape, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    return _conv2d_transpose(
        x, _first_tap_scaled(kernel, FACTOR), output_shape, strides, padding, data_format, dilation_rate
    )
