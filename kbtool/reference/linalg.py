"""Linear algebra: dot (Theano-style n-D rule), batch_dot, transpose."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

from kbtool.reference.core import op

__all__ = ["dot", "batch_dot", "transpose"]


@op
def dot(x: Any, y: Any) -> Any:
    # n-D rule of the docs: contract x's last axis with y's second-to-last (np.dot does exactly that).
    return np.dot(x, y)


@op
def batch_dot(x: Any, y: Any, axes: Any = None) -> Any:
    """Dot product over one axis of each input, batched over axis 0.

    The result's dims are x's remaining non-batch dims followed by y's; a result with only the
    batch dim is returned as (batch, 1), as the docs say.
    """
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim < 2 or y.ndim < 2:
        raise ValueError(f"batch_dot requires inputs of rank >= 2, got ranks {x.ndim} and {y.ndim}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"batch_dot: batch sizes differ: {x.shape[0]} and {y.shape[0]}")
    if axes is None:
        axes = [x.ndim - 1, y.ndim - 1 if y.ndim == 2 else y.ndim - 2]
    elif isinstance(axes, int):
        axes = [axes, axes]
    if any(isinstance(a, (list, tuple)) for a in axes):
        raise ValueError("batch_dot: multiple target dimensions are not supported")
    ax, ay = [a + n if a < 0 else a for a, n in zip(axes, (x.ndim, y.ndim))]
    if ax == 0 or ay == 0:
        raise ValueError("batch_dot: cannot contract over the batch axis 0")
    if x.shape[ax] != y.shape[ay]:
        raise ValueError(f"batch_dot: contracted dims differ: {x.shape[ax]} and {y.shape[ay]}")
    letters = "abcdefghijklmnopqrstuvwxyz"
    xs = "z" + letters[: x.ndim - 1]
    ys = "z" + letters[x.ndim - 1 : x.ndim + y.ndim - 2]
    ys = ys[:ay] + xs[ax] + ys[ay + 1 :]
    out = (
        "z"
        + "".join(c for i, c in enumerate(xs) if i not in (0, ax))
        + "".join(c for i, c in enumerate(ys) if i not in (0, ay))
    )
    result = np.einsum(f"{xs},{ys}->{out}", x, y)
    return result.reshape(result.shape + (1,)) if result.ndim == 1 else result


@op
def transpose(x: Any) -> NDArray[Any]:
    return np.transpose(x)
