"""CTC: dense-to-sparse labels, the loss (forward algorithm in log space), greedy decoding.

The blank label is the last class, as in Keras.
"""
import numpy as np

from .core import epsilon, multi_op, op

__all__ = ["ctc_label_dense_to_sparse", "ctc_batch_cost", "ctc_decode"]


@op
def ctc_label_dense_to_sparse(labels, label_lengths):
    """The reference is dense: labels past each length become 0, as a sparse tensor densified."""
    labels = np.asarray(labels)
    lengths = np.asarray(label_lengths).reshape(-1)
    keep = np.arange(labels.shape[1])[None, :] < lengths[:, None]
    return np.where(keep, labels, 0).astype(labels.dtype)


def _ctc_loss(log_probs, labels):
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
def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    y_pred = np.asarray(y_pred)
    # Keras takes log(y_pred + eps) as logits, and CTC normalises logits with a softmax per step
    logits = np.log(y_pred.astype("float64") + epsilon())
    log_probs = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
    lengths = np.asarray(input_length).reshape(-1).astype(int)
    label_lengths = np.asarray(label_length).reshape(-1).astype(int)
    labels = np.asarray(y_true).astype(int)
    losses = [_ctc_loss(log_probs[i, :lengths[i]], labels[i, :label_lengths[i]]) for i in range(len(lengths))]
    return np.asarray(losses).reshape(-1, 1).astype(y_pred.dtype)


@multi_op(lambda *args, **kwargs: kwargs.get("top_paths", args[4] if len(args) > 4 else 1) + 1)
def ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1):
    """Greedy decoding: best class per step, repeats merged, blanks removed; -1 pads the batch."""
    if not greedy:
        raise NotImplementedError("the reference implements greedy decoding only")
    y_pred = np.asarray(y_pred)
    log_probs = np.log(y_pred.astype("float64") + epsilon())
    blank = y_pred.shape[2] - 1
    lengths = np.asarray(input_length).reshape(-1).astype(int)
    decoded, scores = [], []
    for i, length in enumerate(lengths):
        best = np.argmax(log_probs[i, :length], axis=1)
        scores.append(-np.sum(np.max(log_probs[i, :length], axis=1)))
        sequence = [int(c) for j, c in enumerate(best) if c != blank and (j == 0 or c != best[j - 1])]
        decoded.append(sequence)
    width = max([len(d) for d in decoded] + [0])
    dense = np.full((len(decoded), width), -1, dtype="int64")
    for i, sequence in enumerate(decoded):
        dense[i, :len(sequence)] = sequence
    return [dense], np.asarray(scores, dtype=y_pred.dtype).reshape(-1, 1)
