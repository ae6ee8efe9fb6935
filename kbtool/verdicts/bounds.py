"""Error bounds that scale with the work: dot products, convolutions, reductions and rnn (TOSA's rule for dot
products, https://www.mlplatform.org/tosa/tosa_spec.html "dot product accuracy requirements").

Each float output element must satisfy

    |actual - expected| <= k(n) * eps(dtype) * M + tiny(dtype)

where M is the magnitude of the element's computation (the reference's: sum |a||b| over the reduced axes for a dot
or a convolution, sum |x| for a sum, mean |x| for a mean; kbtool/reference/magnitude.py says each op's), n the number
of terms it accumulates, eps the machine epsilon of the result's dtype (the coarser of the two where they differ) and
tiny the dtype's smallest normal number (a result whose M is 0 is exactly 0, up to a flushed subnormal).

k(n) = K_FLOOR + sqrt(n). Rounding each of n terms and partial sums errs by at most eps / 2 each; the worst case
(recursive summation, every rounding one way) is (n - 1) eps M, the errors of a real summation (pairwise, blocked,
FMA, tree reductions on any backend) are independent-ish and grow like sqrt(n) eps M. Both the reference (NumPy's
float32 BLAS for dot) and the backend round, and a product and a final scale (mean's division) round once more:
K_FLOOR covers those few extra roundings for short accumulations. Measured on the 14 backends (see the lead's
report): the largest margin of any result that passed under the old fixed rtol is far below 1. What k(n) catches:
a float32 dot of length 4096 (k 68) has bound 68 * 1.2e-7 * sum|a||b|, so a 1e-3 relative error of an output
whose value is above a third of sum|a||b| / sqrt(n) (typical for N(0, 1) inputs) fails.

The margin of a result is the largest error / bound over its elements: 1 is the edge, a margin creeping up from
run to run is drift before it fails. A case's own spec tolerance (`tolerance:` for a dtype) still applies to it
(the larger of its bound and the spec's rtol/atol), and a shape difference is judged by values.py.
"""

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from kbtool.results import Details, Status, Verdict
from kbtool.verdicts.tolerances import DEFAULT_TOLERANCE, Overrides
from kbtool.verdicts.values import AGREE, DIFFER, compare_outputs, compare_value, mismatch_details

K_FLOOR = 4.0

Bound = Dict[str, Any]  # {"M": ndarray, "n": int, "of": str}: one output's magnitude, as the reference gives it


def k_of(n: int) -> float:
    """The multiple of eps * M an accumulation of `n` terms may err by."""
    return K_FLOOR + math.sqrt(max(1, n))


def read_bounds(header: Mapping[str, Any], arrays: Sequence[Any]) -> Optional[List[Optional[Bound]]]:
    """The magnitudes a reference reply carries (header `bounds`), per output, or None."""
    entries = header.get("bounds")
    if not entries:
        return None
    return [None if e is None else {"M": arrays[e["index"]], "n": int(e["n"]), "of": str(e["of"])} for e in entries]


def compare_bounded(
    expected: Sequence[Any], actual: Sequence[Any], bounds: Sequence[Optional[Bound]], tolerance: Overrides
) -> Verdict:
    """Every output compared as values.compare_outputs compares them (the same words, the same per-output
    details), each float array within its bound (else values.py's comparison); the margin is the outputs' largest."""
    margins: List[float] = []

    def one(i: int, exp: Any, act: Any) -> Verdict:
        bound = bounds[i] if i < len(bounds) else None
        if bound is not None and _comparable(exp, act, bound):
            verdict = judge_bound(exp, act, bound, tolerance)
        else:
            verdict = compare_value(exp, act, tolerance)
        if verdict.margin is not None:
            margins.append(verdict.margin)
        return verdict

    result = compare_outputs(expected, actual, tolerance, one)
    result.margin = max(margins) if margins else None
    return result


def _comparable(exp: Any, act: Any, bound: Bound) -> bool:
    return (
        isinstance(exp, np.ndarray)
        and isinstance(act, np.ndarray)
        and exp.dtype.kind == "f"
        and act.dtype.kind == "f"
        and exp.shape == act.shape == np.shape(bound["M"])
    )


def judge_bound(exp: NDArray[Any], act: NDArray[Any], bound: Bound, tolerance: Overrides) -> Verdict:
    """One float output within k(n) eps M + tiny (a dtype difference: the coarser dtype's eps, and the dtype
    difference is the verdict, with what the values say)."""
    coarse = exp.dtype if np.finfo(exp.dtype).eps >= np.finfo(act.dtype).eps else act.dtype
    limit, k = limit_of(exp, bound, coarse, tolerance)
    verdict = _within(exp, act, limit, bound, k, float(np.finfo(coarse).eps))
    if exp.dtype == act.dtype:
        if verdict.details is not None:
            verdict.details.values = DIFFER
        return verdict
    details = verdict.details or Details()
    details.expected_dtype, details.actual_dtype = str(exp.dtype), str(act.dtype)
    details.values = AGREE if verdict.passed else DIFFER  # the fingerprint keeps the value verdict apart
    words = "values agree" if verdict.passed else "values also differ: " + verdict.message
    return Verdict(Status.FAIL, f"dtype {act.dtype} != reference {exp.dtype}; {words}", details, verdict.margin)


def limit_of(exp: NDArray[Any], bound: Bound, dtype: Any, tolerance: Overrides) -> Tuple[NDArray[np.float64], float]:
    """Each element's largest allowed error (k eps M + tiny, or the spec's own tolerance for this dtype where it
    is larger), and k."""
    info = np.finfo(dtype)
    k = k_of(bound["n"])
    magnitude = np.asarray(bound["M"], dtype="float64")
    limit = k * float(info.eps) * magnitude + float(info.tiny)
    own = (tolerance or {}).get(str(dtype))
    if own:  # the spec's per-case tolerance: a documented reason to allow more
        base = DEFAULT_TOLERANCE.get(str(dtype), DEFAULT_TOLERANCE["float32"])
        rtol, atol = own.get("rtol", base["rtol"]), own.get("atol", base["atol"])
        limit = np.maximum(limit, atol + rtol * np.abs(exp.astype("float64")))
    # an M that overflowed or is not a number (an input inf or NaN): the element is compared exactly below
    return np.where(np.isfinite(limit), limit, 0.0), k


def _within(
    exp: NDArray[Any], act: NDArray[Any], limit: NDArray[np.float64], bound: Bound, k: float, eps: float
) -> Verdict:
    e64, a64 = exp.astype("float64"), act.astype("float64")
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(a64 - e64)
        both_finite = np.isfinite(e64) & np.isfinite(a64)
        same = (e64 == a64) | (np.isnan(e64) & np.isnan(a64))
        ok = same | (both_finite & (error <= limit))
        ratio = np.where(both_finite & ~same, error / np.where(limit > 0, limit, np.inf), 0.0)
    ratio = np.where(both_finite | same, ratio, np.inf)
    margin = float(np.max(ratio)) if ratio.size else 0.0
    if np.all(ok):
        return Verdict(Status.PASS, margin=_rounded(margin))
    bad = np.argwhere(~ok)
    first = tuple(int(i) for i in bad[0])
    not_finite = ~ok & ~both_finite
    worst = float(np.max(np.where(both_finite, error, 0.0)[~ok]))
    details = mismatch_details(exp, act, ok, not_finite, max_abs_diff=None if np.any(not_finite) else worst)
    at = tuple(int(i) for i in np.unravel_index(int(np.argmax(ratio)), ratio.shape)) if ratio.size else first
    message = (
        "{} of {} values differ: error {} × bound (k·eps·{}, k {:.3g}, eps {:.3g}, n {}){}; first at {}: {!r} vs "
        "reference {!r}".format(
            len(bad),
            ok.size,
            "inf" if not math.isfinite(margin) else f"{margin:.3g}",
            bound["of"],
            k,
            eps,
            bound["n"],
            "" if at == first or not math.isfinite(margin) else f" at {at}",
            first,
            act[first].item(),
            exp[first].item(),
        )
    )
    return Verdict(Status.FAIL, message, details, _rounded(margin))


def _rounded(margin: float) -> Optional[float]:
    """Three significant digits (a margin is read, not recomputed); None for an infinite one (JSON has no inf)."""
    if not math.isfinite(margin):
        return None
    return float(f"{margin:.3g}")
