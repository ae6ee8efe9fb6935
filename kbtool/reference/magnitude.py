"""The magnitude of an accumulating op's computation: what its rounding error scales with (TOSA's bound for dot
products, kbtool/verdicts/bounds.py judges with it).

For each float output element the reference gives M and the accumulation length n:

    dot, batch_dot, conv*, separable/depthwise/local conv, sum, cumsum, prod, cumprod, mean
            the op itself on |inputs| in float64: sum(|a| |b|) over the reduced axes (mean: mean |x|; a product:
            |prod|); the same for the recurrence of rnn, whose M is the largest value of the rnn on |inputs| over
            the whole output (a named step may subtract two running sums: rnn_two_states)
    var     two-pass: the mean's error (eps mean|x|) enters every deviation d = x - mean, so
            M = mean(d^2) + 2 mean|d| mean|x| + eps n mean(x^2) (the last term: the mean's own error squared, which
            keeps the variance of equal values near 0 rather than exactly 0)
    std     sqrt of var: M = std + M_var / (2 std + sqrt(eps M_var)) (an error e in var moves its root by at most
            e / (2 std), and by at most sqrt(e) near 0)
    logsumexp  the softmax-weighted |x| (the inputs' rounding through a derivative that sums to 1) plus |result|
            and 1 (the sum of exponentials' relative error is an absolute one after the log)

n is the number of terms each output accumulates, at most (the op's sum-like twin run on ones: mean and var count
as sum; padding counts nothing), for k in verdicts/bounds.py. Inputs that are not floats (an int mask, lengths)
are passed through unchanged.
"""

from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import numpy as np
from numpy.typing import NDArray

from kbtool.reference.core import op
from kbtool.worker import invoke, protocol

Magnitude = Tuple[NDArray[np.float64], int]  # (M per element of one output, n)

_LINEAR = (
    "dot batch_dot conv1d conv2d conv3d conv2d_transpose conv3d_transpose deconv2d depthwise_conv2d "
    "separable_conv1d separable_conv2d local_conv1d local_conv2d sum cumsum prod cumprod mean rnn"
).split()
_OWN = ("var", "std", "logsumexp")
BOUNDED = frozenset(_LINEAR) | frozenset(_OWN)
# the op whose run on ones counts each output's terms (an op that averages counts as its sum)
_COUNTED_AS = {"mean": "sum", "var": "sum", "std": "sum", "logsumexp": "sum", "prod": "sum", "cumprod": "cumsum"}
# what the magnitude is, in a fail message
WHAT = {
    **dict.fromkeys(_LINEAR, "Σ|a||b|"),
    "sum": "Σ|x|",
    "cumsum": "Σ|x|",
    "mean": "mean|x|",
    "prod": "|prod x|",
    "cumprod": "|prod x|",
    "rnn": "max rnn(|x|)",
    "var": "var + 2 mean|d| mean|x|",
    "std": "std + M_var / 2 std",
    "logsumexp": "softmax-weighted |x| + |lse| + 1",
}


def magnitudes(
    module: Any, request: Mapping[str, Any], arrays: List[NDArray[Any]], header: Mapping[str, Any], out: List[Any]
) -> Optional[List[Optional[Magnitude]]]:
    """Per output of the reference's reply (`header`, `out`): (M, n) for each float array output of a bounded op,
    else None; None altogether for an op that is not bounded or whose magnitude the reference cannot compute."""
    name = request.get("op")
    if name not in BOUNDED or request.get("grad") or request.get("then") or request.get("observe"):
        return None
    outputs = [o for o in header.get("outputs", []) if o.get("kind") == "array"]
    if not outputs or not any(np.asarray(out[o["index"]]).dtype.kind == "f" for o in outputs):
        return None
    eps = max(float(np.finfo(np.asarray(out[o["index"]]).dtype).eps) for o in outputs if _is_float(out[o["index"]]))
    wide = [a.astype("float64") if _is_float(a) else a for a in arrays]
    if name in _OWN:
        own = {"var": _var(eps), "std": _std(eps), "logsumexp": _logsumexp}[str(name)]
        sizes = _run(module, request, wide, SimpleNamespace(**{str(name): own}))
    else:
        sizes = _run(module, request, [np.abs(a) if _is_float(a) else a for a in wide], module)
    counted = dict(request, op=_COUNTED_AS.get(str(name), name))
    counts = _run(module, counted, [np.ones_like(a) if _is_float(a) else a for a in wide], module)
    if sizes is None or counts is None or len(sizes) != len(header.get("outputs", [])):
        return None
    found: List[Optional[Magnitude]] = []
    for i, spec in enumerate(header.get("outputs", [])):
        value = out[spec["index"]] if spec.get("kind") == "array" else None
        size = np.asarray(sizes[i], dtype="float64") if i < len(sizes) else None
        if value is None or not _is_float(value) or size is None or size.shape != np.shape(value):
            found.append(None)
            continue
        if name == "rnn":  # the recurrence's largest magnitude, for every element
            size = np.full(size.shape, np.max(np.abs(size)) if size.size else 0.0)
        terms = np.abs(np.asarray(counts[i], dtype="float64")) if i < len(counts) else np.zeros(0)
        found.append((np.abs(size), int(max(1.0, float(np.max(terms)) if terms.size else 1.0))))
    return found


def _is_float(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind == "f"


def _run(module: Any, request: Mapping[str, Any], arrays: List[NDArray[Any]], ops: Any) -> Optional[List[NDArray[Any]]]:
    """The request on the reference with `arrays` (the op looked up in `ops`): its outputs, or None."""
    try:
        with np.errstate(all="ignore"):
            header, out = invoke.evaluate(module, dict(request), arrays, modules=[ops])  # type: ignore[no-untyped-call]
    except Exception:
        return None
    if header.get("status") != protocol.OK:
        return None
    return [np.asarray(out[o["index"]]) if o["kind"] == "array" else np.asarray(0.0) for o in header["outputs"]]


def _axis(axis: Any) -> Any:
    return tuple(axis) if isinstance(axis, list) else axis


def _var_magnitude(x: NDArray[Any], axis: Any, keepdims: bool, eps: float) -> NDArray[np.float64]:
    x = np.asarray(x, dtype="float64")
    axis = _axis(axis)
    mean = np.mean(x, axis=axis, keepdims=True)
    d = np.abs(x - mean)
    n = x.size / max(1, np.mean(x, axis=axis).size)
    ax = np.abs(x)
    parts = np.mean(d * d, axis=axis, keepdims=keepdims) + 2 * np.mean(d, axis=axis, keepdims=keepdims) * np.mean(
        ax, axis=axis, keepdims=keepdims
    )
    return np.asarray(parts + eps * n * np.mean(ax * ax, axis=axis, keepdims=keepdims))


def _var(eps: float) -> Callable[..., Any]:
    @op
    def var(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        return _var_magnitude(x, axis, keepdims, eps)

    return var


def _std(eps: float) -> Callable[..., Any]:
    @op
    def std(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
        m_var = _var_magnitude(x, axis, keepdims, eps)
        root = np.std(np.asarray(x, dtype="float64"), axis=_axis(axis), keepdims=keepdims)
        return root + m_var / (2 * root + np.sqrt(eps * m_var) + 1e-300)

    return std


@op
def _logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    x = np.asarray(x, dtype="float64")
    axis = _axis(axis)
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    weights = np.exp(x - top)
    weights = weights / np.sum(weights, axis=axis, keepdims=True)
    lse = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    out = np.sum(weights * np.abs(x), axis=axis, keepdims=True) + np.abs(lse) + 1.0
    return out if keepdims else np.squeeze(out, axis=axis)


def as_header(found: List[Optional[Magnitude]], first_index: int, op_name: str) -> Tuple[List[Any], List[Any]]:
    """The magnitudes as a reply carries them: header entries (one per output: None, or the index of M among the
    arrays appended after `first_index`, n and what M is) and the arrays to append."""
    entries: List[Any] = []
    extra: List[Any] = []
    for item in found:
        if item is None:
            entries.append(None)
            continue
        entries.append({"index": first_index + len(extra), "n": item[1], "of": WHAT.get(op_name, "Σ|a||b|")})
        extra.append(item[0])
    return entries, extra


def with_magnitudes(
    module: Any, request: Mapping[str, Any], arrays: List[NDArray[Any]], reply: Tuple[Dict[str, Any], List[Any]]
) -> Tuple[Dict[str, Any], List[Any]]:
    """The reference's reply with its outputs' magnitudes (header `bounds`, the arrays appended), when it has any."""
    header, out = reply
    found = magnitudes(module, request, arrays, header, out)
    if not found or not any(found):
        return header, out
    entries, extra = as_header(found, len(out), str(request.get("op")))
    return dict(header, bounds=entries), list(out) + extra
