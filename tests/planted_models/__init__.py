"""Backends derived from tf_keras with one K.* function made subtly wrong, for `kbtool models`'s planted-function
test (tests/test_models_planted.py): `kbtool models --backend planted_models.relu@tensorflow` must report the models
that use relu as inconsistent and name relu as the cause.

Each module is `from tf_keras.backend import *` plus one function of its own, named as the module (relu.py plants
relu), which calls tf_keras's own function, bound at import (a module whose functions are substituted into
tf_keras.src.backend must never look its own name up there: it would call itself), and bends its result a little:
no shape, NaN or crash gives it away, but the models that use it end at least 10 times `kbtool models`'s threshold
away from the oracle (measured on tf_keras 2.21 with the zoo's seeded weights: tests/test_models_planted.py says
which models; a fault that changes an early layer only by a few 1e-4 is damped to nothing by the time it reaches
a deep application's output, which is all the model-level verdict compares). `unplanted` re-exports tf_keras and
nothing else: the same models pass on it.

The package is imported by name from this folder (tests/ on PYTHONPATH), as a team's backend package would be.
"""

# the K.* function each module plants, and what is wrong with it (one line each; the test's parameters)
PLANTED = {
    "depthwise_conv2d": "the kernel's first tap (row 0, column 0) is counted twice, in every channel",
    "conv2d_transpose": "the kernel's first tap (row 0, column 0) weighs 1 % more, in every channel",
    "mean": "the divisor is 1 % too large",
    "batch_normalization": "epsilon is 3e-2, whatever the caller passes",
    "rnn": "the last step's output comes back 1 % short (earlier steps and the states are right)",
    "relu": "negative inputs leak 1e-3 of themselves when no alpha is asked",
    "softmax": "the logits are scaled by 1.01 first (a temperature off by 1 %)",
}
