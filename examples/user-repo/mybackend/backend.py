"""mybackend's Keras backend: tf_keras's, with its own softsign (half precision, see policy.py) and relu.

Keras loads it by name (keras.json: "backend": "mybackend.backend"); kbtool checks it in its TensorFlow env with
`--backend mybackend.backend@tensorflow`. A function re-exported from tf_keras inherits tf_keras's known
differences in kbtool; a function defined here is judged on its own.
"""

import tf_keras.backend as _K
from tf_keras.backend import *  # noqa: F403  (every function of tf_keras's backend)

from mybackend import policy


def softsign(x):
    wanted = _K.dtype(x)
    inner = policy.compute_dtype("softsign", wanted)
    if inner == wanted:
        return _K.softsign(x)
    return _K.cast(_K.softsign(_K.cast(x, inner)), wanted)


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    # one entry point for the fused kernels we plan; today tf_keras's own
    return _K.relu(x, alpha=alpha, max_value=max_value, threshold=threshold)
