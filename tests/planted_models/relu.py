"""tf_keras's backend with relu planted: negative inputs leak 1e-3 of themselves when no alpha is asked (a ReLU
that should output 0 outputs -0.001 for -1). Dense and Conv layers with activation="relu", ReLU layers (MobileNet's
ReLU6 too) and the applications call it."""

from tf_keras.backend import *  # noqa: F403
from tf_keras.backend import relu as _relu

LEAK = 1e-3


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    if alpha == 0.0 and threshold == 0.0:
        alpha = LEAK
    return _relu(x, alpha=alpha, max_value=max_value, threshold=threshold)
