"""tf_keras's backend with depthwise_conv2d planted: the kernel's first tap (row 0, column 0) is counted twice, in
every channel, as an off-by-one loop would. DepthwiseConv2D layers call it (separable_conv's, MobileNet's)."""

from planted_models._taps import first_tap_scaled as _first_tap_scaled
from tf_keras.backend import *  # noqa: F403
from tf_keras.backend import depthwise_conv2d as _depthwise_conv2d

FACTOR = 2.0


def depthwise_conv2d(x, depthwise_kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    kernel = _first_tap_scaled(depthwise_kernel, FACTOR)
    return _depthwise_conv2d(x, kernel, strides, padding, data_format, dilation_rate)
