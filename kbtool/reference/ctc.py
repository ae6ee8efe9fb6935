"""CTC: dense-to-sparse labels, the loss (forward algorithm in log space), greedy decoding.

The blank label is the last class, as in Keras.
"""

from typing import Any, Dict

import numpy as np
from numpy.typing import NDArray

from kbtool.reference.core import epsilon, multi_op, op

__all__ = ["ctc_label_dense_to_sparse", "ctc_batch_cost", "ctc_decode"]


@op
def ctc_label_dense_to_sparse(labels: Any, label_lengths: Any) -> NDArray[Any]:
    """The reference is dense: labels past each length become 0, as a sparse tensor densified."""
    labels = np.asarray(labels)
    lengths = np.asarray(label_lengths).reshape(-1)
    keep = np.arange(labels.shape[1])[None, :] < lengths[:, None]
    return np.where(keep, labels, 0).astype(labels.dtype)


def _ctc_loss(log_probs: Any, labels: Any) -> Any:
    """-log p(labels | log_probs) for one sequence; log_probs is (time, classes)."""
    blank = log_probs.shape[1] - 1
    extended = [blank]
    for label in labels:
        extended += [int(label), blank]
    alpha = np.full(len(extended), -np.inf)
    alpha[0] = log_probs[0, blank]
    if len(extended) > 1:
        alpha[1] = log_probs[0, extended[1]]
    for t in range(1, log_probs.shape[0]):
        previous = alpha.copy()
        for s, label in enumerate(extended):
            candidates = [previous[s]]
            if s > 0:
                candidates.append(previous[s - 1])
            if s > 1 and label != blank and label != extended[s - 2]:
                candidates.append(previous[s - 2])
            alpha[s] = np.logaddexp.reduce(candidates) + log_probs[t, label]
    return -np.logaddexp(alpha[-1], alpha[-2] if len(extended) > 1 else -np.inf)


@op
def ctc_batch_cost(y_true: Any, y_pred: Any, input_length: Any, label_length: Any) -> NDArray[Any]:
    y_pred = np.asarray(y_pred)
    # Keras takes log(y_pred + eps) as logits, and CTC normalises logits with a softmax per step
    logits = np.log(y_pred.astype("float64") + epsilon())
    log_probs = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
    lengths = np.asarray(input_length).reshape(-1).astype(int)
    label_lengths = np.asarray(label_length).reshape(-1).astype(int)
    labels = np.asarray(y_true).astype(int)
    losses = [_ctc_loss(log_probs[i, : lengths[i]], labels[i, : label_lengths[i]]) for i in range(len(lengths))]
    return np.asarray(losses).reshape(-1, 1).astype(y_pred.dtype)


@multi_op(
    lambda *args, **kwargs: (
        kwargs.get("top_paths", args[4] if len(args) > 4 else 1) + 1
        if not kwargs.get("greedy", args[2] if len(args) > 2 else True)
        else 2
    )
)
def ctc_decode(y_pred: Any, input_length: Any, greedy: bool = True, beam_width: int = 100, top_paths: int = 1) -> Any:
    """Greedy: best class per step, repeats merged, blanks removed; the score is minus the sum of the
    best log(y + eps) per step. Beam search (greedy=False): the `top_paths` most probable labelings,
    found exactly by summing over every path (small inputs only), scored by log p(labeling) under a
    softmax of log(y + eps), as a wide enough beam does. Keras 2.3.1 pads each decoded batch with -1
    to its longest sequence."""
    y_pred = np.asarray(y_pred)
    logits = np.log(y_pred.astype("float64") + epsilon())
    blank = y_pred.shape[2] - 1
    lengths = np.asarray(input_length).reshape(-1).astype(int)
    if greedy:
        paths, scores = [], []
        for i, length in enumerate(lengths):
            best = np.argmax(logits[i, :length], axis=1)
            scores.append([-np.sum(np.max(logits[i, :length], axis=1))])
            paths.append([_collapse(best, blank)])
        top_paths = 1
    else:
        if top_paths > beam_width:
            raise ValueError("top_paths must be no greater than beam_width")
        log_probs = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
        paths, scores = [], []
        for i, length in enumerate(lengths):
            ranked = _ranked_labelings(log_probs[i, :length], blank)[:top_paths]
            paths.append([labeling for labeling, _ in ranked])
            scores.append([score for _, score in ranked])
    decoded = []
    for k in range(top_paths):
        sequences = [p[k] for p in paths]
        width = max([len(s) for s in sequences] + [0])
        dense = np.full((len(sequences), width), -1, dtype="int64")
        for i, sequence in enumerate(sequences):
            dense[i, : len(sequence)] = sequence
        decoded.append(dense)
    return decoded, np.asarray(scores, dtype=y_pred.dtype).reshape(len(lengths), top_paths)


def _collapse(path: Any, blank: Any) -> Any:
    return tuple(int(c) for j, c in enumerate(path) if c != blank and (j == 0 or c != path[j - 1]))


def _ranked_labelings(log_probs: Any, blank: Any, limit: int = 200000) -> Any:
    """Every labeling with its log probability (summed over its paths), most probable first."""
    steps, classes = log_probs.shape
    if classes**steps > limit:
        raise NotImplementedError("the reference enumerates paths: input too large for beam decoding")
    totals: Dict[Any, float] = {}
    for path in np.ndindex(*([classes] * steps)):
        score = float(np.sum(log_probs[np.arange(steps), list(path)])) if steps else 0.0
        key = _collapse(path, blank)
        totals[key] = np.logaddexp(totals.get(key, -np.inf), score)
    return sorted(totals.items(), key=lambda item: (-item[1], item[0]))
