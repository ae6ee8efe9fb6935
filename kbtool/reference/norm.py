"""Batch normalisation: both documented formulas reduce to (x - mean) / sqrt(var + eps) * gamma + beta."""
import numpy as np

from .core import multi_op, op

__all__ = ["batch_normalization", "normalize_batch_in_training"]


@op
def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):
    x = np.asarray(x)
    out = (x - mean) / np.sqrt(np.asarray(var) + epsilon) * gamma + beta
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
