"""Activations and other neural-network helpers.

Each activation is computed in float64 and rounded once to x's dtype, in its stable form where one exists
(softplus as logaddexp(0, x), softmax shifted by the max, l2_normalize's norm without float32 overflow), so hard
values give the mathematical answer (l2_normalize's squared sum excepted: in x's dtype, as documented): NaN propagates, sigmoid/softplus/tanh of +-inf and +-100 saturate without
NaN, and softsign(+-inf) is NaN (inf / inf: the docs' formula x / (1 + |x|), see the spec's reference_decisions).
"""

from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

from kbtool.reference.core import normalize_data_format, op

__all__ = [
    "softmax",
    "relu",
    "elu",
    "sigmoid",
    "hard_sigmoid",
    "softplus",
    "softsign",
    "tanh",
    "l2_normalize",
    "in_top_k",
    "bias_add",
    "dropout",
]


def _keep(x: Any, fn: Any) -> NDArray[Any]:
    x = np.asarray(x)
    with np.errstate(all="ignore"):  # inf, NaN and overflow are values here, not warnings
        return np.asarray(fn(x.astype("float64"))).astype(x.dtype)


@op
def softmax(x: Any, axis: Any = -1) -> Any:
    def f(v: Any) -> Any:
        e = np.exp(v - np.max(v, axis=axis, keepdims=True))  # the stable form: exp never overflows
        return e / np.sum(e, axis=axis, keepdims=True)

    return _keep(x, f)


@op
def relu(x: Any, alpha: float = 0.0, max_value: Any = None, threshold: float = 0.0) -> NDArray[Any]:
    # Every backend's behaviour, not ko-2.2's formula (a doc error, see the spec's doc_errors): x is kept only
    # where x > threshold (so x == threshold gives 0), or max(x, 0) when threshold is 0; max_value clips the kept
    # part to [0, max_value]; alpha * (x - threshold) is added below the threshold.
    def f(v: Any) -> Any:
        kept = np.where(v > threshold, v, 0.0) if threshold != 0 else np.maximum(v, 0.0)
        if max_value is not None:
            kept = np.clip(kept, 0.0, max_value)
        # alpha 0 adds nothing, also at -inf (where 0 * inf would make NaN of relu(-inf) = 0)
        return kept + alpha * np.minimum(v - threshold, 0.0) if alpha else kept

    return _keep(x, f)


@op
def elu(x: Any, alpha: float = 1.0) -> NDArray[Any]:
    return _keep(x, lambda v: np.where(v > 0, v, alpha * np.expm1(np.minimum(v, 0))))


@op
def sigmoid(x: Any) -> NDArray[Any]:
    return _keep(x, lambda v: 1.0 / (1.0 + np.exp(-v)))


@op
def hard_sigmoid(x: Any) -> NDArray[Any]:
    return _keep(x, lambda v: np.clip(0.2 * v + 0.5, 0.0, 1.0))


@op
def softplus(x: Any) -> NDArray[Any]:
    return _keep(x, lambda v: np.logaddexp(0.0, v))


@op
def softsign(x: Any) -> NDArray[Any]:
    return _keep(x, lambda v: v / (1.0 + np.abs(v)))


@op
def tanh(x: Any) -> NDArray[Any]:
    return _keep(x, np.tanh)


@op
def l2_normalize(x: Any, axis: Any = None) -> NDArray[Any]:
    # x / sqrt(max(sum(x**2), 1e-12)), as tf.nn.l2_normalize; the squared sum in x's own dtype, as the documented
    # formula is evaluated (float32 squares past 3.4e38 overflow to inf and the row normalizes to 0 on every
    # backend: see the spec's reference_decisions)
    x = np.asarray(x)
    axes = tuple(axis) if isinstance(axis, list) else axis
    with np.errstate(all="ignore"):
        squared = np.sum(x * x, axis=axes, keepdims=True, dtype=x.dtype if x.dtype.kind == "f" else None)
    return _keep(x, lambda v: v / np.sqrt(np.maximum(squared.astype("float64"), 1e-12)))


@op
def in_top_k(predictions: Any, targets: Any, k: Any) -> Any:
    predictions = np.asarray(predictions)
    targets = np.asarray(targets).astype("int64").reshape(-1)
    target_scores = predictions[np.arange(len(targets)), targets]
    # a target is in the top k when fewer than k classes score strictly higher (ties count in)
    higher = np.sum(predictions > target_scores[:, None], axis=1)
    return higher < k


@op
def bias_add(x: Any, bias: Any, data_format: Optional[str] = None) -> Any:
    data_format = normalize_data_format(data_format)
    x, bias = np.asarray(x), np.asarray(bias)
    if bias.ndim != 1 and bias.ndim != x.ndim - 1:
        raise ValueError(f"Unexpected bias dimensions {bias.ndim}, expect to be 1 or {x.ndim - 1} dimensions")
    if data_format == "channels_first" and x.ndim > 2:
        if bias.ndim == 1:
            shape = (1, bias.shape[0]) + (1,) * (x.ndim - 2)
        else:
            shape = (1, bias.shape[-1]) + bias.shape[:-1]
        return (x + bias.reshape(shape)).astype(x.dtype)
    return (x + bias).astype(x.dtype)


@op
def dropout(x: Any, level: Any, noise_shape: Any = None, seed: Any = None) -> Any:
    if not 0 <= level < 1:
        raise ValueError("Dropout level must be in interval [0, 1[.")
    x = np.asarray(x)
    rng = np.random.default_rng(seed)
    keep = rng.random(x.shape if noise_shape is None else tuple(noise_shape)) >= level
    return (x * keep / (1.0 - level)).astype(x.dtype)
