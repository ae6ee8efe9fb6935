"""Elementwise math.

Hard values follow NumPy's ufuncs (IEEE 754): NaN propagates, log(0) and log(-0.0) are -inf, log(x < 0) is NaN,
exp overflows to inf, x ** 0 is 1 for every x (NaN included), a negative base with an integral exponent is real,
integer results wrap on overflow (abs of int32's minimum is itself), round is half to even and keeps -0.0.
Where the docs' NumPy implementation differs (sqrt of NaN) the spec records a reference decision.
"""

from typing import Any

import numpy as np

from kbtool.reference.core import op

__all__ = ["abs", "clip", "cos", "exp", "log", "pow", "round", "sign", "sin", "sqrt", "square"]


def _keep(x: Any, fn: Any) -> Any:
    x = np.asarray(x)
    with np.errstate(all="ignore"):  # inf, NaN and overflow are values here, not warnings
        return fn(x).astype(x.dtype)


@op
def clip(x: Any, min_value: Any, max_value: Any) -> Any:
    # Not in the docs, from every backend's source: a max below min is raised to min; None means unbounded.
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    lo = -np.inf if min_value is None else min_value
    hi = np.inf if max_value is None else max_value
    x = np.asarray(x)
    return np.clip(x, lo, hi).astype(x.dtype)  # NaN stays NaN (np.clip)


@op
def abs(x: Any) -> Any:
    return _keep(x, np.abs)


@op
def square(x: Any) -> Any:
    return _keep(x, np.square)


@op
def sqrt(x: Any) -> Any:
    # Keras clips negatives to 0 before the root (TensorFlow and Theano backends alike); NaN stays NaN (np.maximum
    # propagates it), where the docs' NumPy implementation maps it to 0: see the spec's reference_decisions
    return _keep(x, lambda v: np.sqrt(np.maximum(v, 0)))


@op
def exp(x: Any) -> Any:
    return _keep(x, np.exp)


@op
def log(x: Any) -> Any:
    return _keep(x, np.log)


@op
def pow(x: Any, a: Any) -> Any:
    return _keep(x, lambda v: np.power(v, a))


@op
def round(x: Any) -> Any:
    return _keep(x, np.round)  # half to even, as tf.round and Theano's half_to_even


@op
def sign(x: Any) -> Any:
    return _keep(x, np.sign)


@op
def sin(x: Any) -> Any:
    return _keep(x, np.sin)


@op
def cos(x: Any) -> Any:
    return _keep(x, np.cos)
