"""tf_keras's backend with softmax planted: the logits are scaled by 1.01 first (a temperature off by 1 %). Every
classifier's last Dense(activation="softmax") calls it."""

from tf_keras.backend import *  # noqa: F403
from tf_keras.backend import softmax as _softmax

TEMPERATURE = 1.01


def softmax(x, axis=-1):
    return _softmax(x * TEMPERATURE, axis=axis)
