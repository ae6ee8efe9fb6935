"""tf_keras's backend with mean planted: the divisor is 1 % too large (the mean comes back 1 % short).
GlobalAveragePooling layers call it (the applications' last pooling)."""

from tf_keras.backend import *  # noqa: F403
from tf_keras.backend import mean as _mean

SHORT = 1.0 / 1.01


def mean(x, axis=None, keepdims=False):
    return _mean(x, axis=axis, keepdims=keepdims) * SHORT
