"""Batch normalisation: both documented formulas reduce to (x - mean) / sqrt(var + eps) * gamma + beta."""

from typing import Any

import numpy as np

from kbtool.reference.core import multi_op, op

__all__ = ["batch_normalization", "normalize_batch_in_training"]


def _defaults(beta: Any, gamma: Any) -> Any:
    """No beta: 0, no gamma: 1 (a BatchNormalization(center=False, scale=False) passes None): keras 2.3.1
    theano_backend.py batch_normalization and normalize_batch_in_training (ones_like / zeros_like for None),
    tensorflow_backend.py (tf.nn.batch_normalization's offset and scale None)."""
    return (0.0 if beta is None else beta), (1.0 if gamma is None else gamma)


def _along(value: Any, keep: Any) -> Any:
    value = np.asarray(value)
    return value if value.ndim == 0 else value.reshape(keep)  # a default 0 or 1 broadcasts as it is


@op
def batch_normalization(
    x: Any, mean: Any, var: Any, beta: Any, gamma: Any, axis: Any = -1, epsilon: float = 1e-3
) -> Any:
    """ko-2.2's formula (x - mean) / sqrt(var + epsilon) * gamma + beta under NumPy broadcasting, so 1-D statistics
    lie along the LAST axis whatever `axis` says: keras 2.3.1 numpy_backend.py batch_normalization (Keras 2's own
    oracle) computes exactly this, as do its theano_backend.py (1-D statistics: reduction axes all but the last) and
    tensorflow_backend.py on a CPU (tf.nn.batch_normalization); `axis` only picks the fused NCHW kernel on a GPU.
    tf_keras follows `axis` (see the spec's reference_decisions). Statistics that do not broadcast against x raise
    ValueError, as NumPy's broadcasting does."""
    x = np.asarray(x)
    mean, var, beta, gamma = (np.asarray(v) for v in (mean, var, *_defaults(beta, gamma)))
    out = (x - mean) / np.sqrt(var + epsilon) * gamma + beta
    return out.astype(x.dtype)


@multi_op(lambda *args, **kwargs: 3)
def normalize_batch_in_training(x: Any, gamma: Any, beta: Any, reduction_axes: Any, epsilon: float = 1e-3) -> Any:
    """Returns (normalized, mean, variance) with statistics over `reduction_axes`."""
    x = np.asarray(x)
    beta, gamma = _defaults(beta, gamma)
    axes = tuple(reduction_axes)
    mean = np.mean(x, axis=axes)
    var = np.var(x, axis=axes)
    keep = [1 if i in axes else x.shape[i] for i in range(x.ndim)]
    normed = (x - mean.reshape(keep)) / np.sqrt(var.reshape(keep) + epsilon)
    normed = normed * _along(gamma, keep) + _along(beta, keep)
    return normed.astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype)
