"""tf_keras's backend with batch_normalization planted: epsilon is 3e-2 whatever the caller passes (Keras's default
is 1e-3): a variance near 1 is normalised about 1.5 % short. Models call it through K (a Lambda layer); tf_keras's own
BatchNormalization layer calls tf.nn directly."""

from tf_keras.backend import *  # noqa: F403
from tf_keras.backend import batch_normalization as _batch_normalization

EPSILON = 3e-2


def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):
    return _batch_normalization(x, mean, var, beta, gamma, axis=axis, epsilon=EPSILON)
