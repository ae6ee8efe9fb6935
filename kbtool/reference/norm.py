"""Batch normalisation: both documented formulas reduce to (x - mean) / sqrt(var + eps) * gamma + beta."""

import numpy as np

from .core import multi_op, op

__all__ = ["batch_normalization", "normalize_batch_in_training"]


@op
def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):
    """ko-2.2's formula (x - mean) / sqrt(var + epsilon) * gamma + beta; 1-D statistics lie along `axis`."""
    x = np.asarray(x)
    stats = [np.asarray(v) for v in (mean, var, beta, gamma)]
    if x.ndim > 1:
        shape = [1] * x.ndim
        shape[axis] = -1
        stats = [v.reshape(shape) if v.ndim == 1 else v for v in stats]
    mean, var, beta, gamma = stats
    out = (x - mean) / np.sqrt(var + epsilon) * gamma + beta
    return out.astype(x.dtype)


@multi_op(lambda *args, **kwargs: 3)
def normalize_batch_in_training(x, gamma, beta, reduction_axes, epsilon=1e-3):
    """Returns (normalized, mean, variance) with statistics over `reduction_axes`."""
    x = np.asarray(x)
    axes = tuple(reduction_axes)
    mean = np.mean(x, axis=axes)
    var = np.var(x, axis=axes)
    keep = [1 if i in axes else x.shape[i] for i in range(x.ndim)]
    normed = (x - mean.reshape(keep)) / np.sqrt(var.reshape(keep) + epsilon)
    normed = normed * np.reshape(gamma, keep) + np.reshape(beta, keep)
    return normed.astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype)
