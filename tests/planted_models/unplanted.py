"""tf_keras's backend, re-exported whole: nothing planted (the control of the planted-function test)."""

from tf_keras.backend import *  # noqa: F403
