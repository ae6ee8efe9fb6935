"""Values, shapes and dtypes: one backend's outputs against the reference's, within tolerance.

Rules: every output is compared, each with its own verdict (the reference's outputs, aligned by position, when the
counts differ); a NumPy scalar and a Python number compare by value; NaN equals NaN at the same place, and a NaN or
an infinity against anything else is a difference; -0.0 equals 0.0 unless the case says `signed_zeros: true`.
A shape or dtype difference never stops the values being compared, so that it never hides a value difference: a
dtype difference compares in the common dtype (loosest tolerance of the two); a shape difference of the same size
compares the values flattened (C order), a broadcastable one after broadcasting, and any other says why not. The
details keep that value verdict (`values`: agree, differ or not compared) apart from the shapes and dtypes.
"""

from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from kbtool.results import Details, Status, Verdict
from kbtool.verdicts.replies import kind_of
from kbtool.verdicts.tolerances import Overrides, Tolerance, loosest, signed_zeros, tolerance_for

AGREE, DIFFER, NOT_COMPARED = "agree", "differ", "not compared"  # Details.values: the value verdict of one output
FLATTENED, BROADCAST = "flattened", "broadcast"  # Details.compared_as: how values of another shape were aligned


Comparer = Callable[[int, Any, Any], Verdict]  # (output index, reference's value, backend's value) -> its verdict


def compare_outputs(
    expected: Sequence[Any],
    actual: Sequence[Any],
    tolerance: Optional[Overrides] = None,
    compare: Optional[Comparer] = None,
) -> Verdict:
    """Lists of output values (ndarray or Python values) → Verdict. Every output is compared (by `compare`, by
    default compare_value), the reference's outputs against the backend's by position (as many as both have, when
    the counts differ); a verdict on several outputs names each failing one ('output 0: ...; output 1: ...') and its
    details carry every output's verdict (`outputs`), over the first failing output's own details."""
    overrides = tolerance or {}
    one = compare or (lambda i, exp, act: compare_value(exp, act, overrides))
    verdicts = [one(i, exp, act) for i, (exp, act) in enumerate(zip(expected, actual))]
    failing = [(i, v) for i, v in enumerate(verdicts) if not v.passed]
    counts_differ = len(expected) != len(actual)
    if not failing and not counts_differ:
        return Verdict(Status.PASS)
    if len(expected) == 1 and not counts_differ:
        return verdicts[0]
    parts = [f"output {i}: {v.message}" for i, v in failing]
    if counts_differ:
        compared = f"; the {len(verdicts)} compared agree" if verdicts and not failing else ""
        parts.insert(0, f"returned {len(actual)} outputs, reference returned {len(expected)}{compared}")
    first = failing[0][1].details if failing else None
    details = Details(**first.as_dict()) if first is not None else Details()
    details.outputs = [_output_record(i, v) for i, v in enumerate(verdicts)]
    if counts_differ:
        details.expected_outputs, details.actual_outputs = len(expected), len(actual)
    return Verdict(Status.FAIL, "; ".join(parts), details)


def _output_record(index: int, verdict: Verdict) -> Dict[str, Any]:
    """One output's verdict as the details carry it: {index, status[, message][, details]}."""
    record: Dict[str, Any] = {"index": index, "status": verdict.status.value}
    if verdict.message:
        record["message"] = verdict.message
    if verdict.details is not None and verdict.details.as_dict():
        record["details"] = verdict.details.as_dict()
    return record


def compare_value(exp: Any, act: Any, tolerance: Overrides) -> Verdict:
    """One output (an ndarray or a Python value) against the reference's."""
    exp, act = _scalar_as_number(exp), _scalar_as_number(act)
    exp_is_array, act_is_array = isinstance(exp, np.ndarray), isinstance(act, np.ndarray)
    if exp_is_array and act_is_array:
        return _compare_array_outputs(exp, act, tolerance)
    if _is_number(exp) and _is_number(act):
        # a NumPy scalar from one backend, a Python number from another: the value is what counts
        if np.isclose(act, exp, equal_nan=True) and not _zero_signs_differ(exp, act, tolerance):
            return Verdict(Status.PASS)
        return Verdict(
            Status.FAIL,
            f"returned {act!r}, reference {exp!r}",
            Details(expected_value=_plain(exp), actual_value=_plain(act)),
        )
    if exp_is_array != act_is_array:
        return Verdict(Status.FAIL, f"returned {kind_of(act)}, reference returned {kind_of(exp)}")
    if py_equal(exp, act):
        return Verdict(Status.PASS)
    return Verdict(
        Status.FAIL,
        f"returned {act!r}, reference {exp!r}",
        Details(expected_value=_plain(exp), actual_value=_plain(act)),
    )


def _zero_signs_differ(exp: Any, act: Any, tolerance: Overrides) -> bool:
    """Two numbers that are both zero with other sign bits, where the case asks for signed zeros."""
    return signed_zeros(tolerance) and exp == 0 and act == 0 and bool(np.signbit(exp) != np.signbit(act))


def _compare_array_outputs(exp: NDArray[Any], act: NDArray[Any], tolerance: Overrides) -> Verdict:
    """Two arrays: shape and dtype said apart from the value verdict, which is reached whatever they are."""
    differences = []  # what differs besides the values, in the message's words
    if exp.shape != act.shape:
        differences.append(f"shape {tuple(act.shape)} != reference {tuple(exp.shape)}")
    if exp.dtype != act.dtype:
        differences.append(f"dtype {act.dtype} != reference {exp.dtype}")
    signed = signed_zeros(tolerance)
    if not differences:
        verdict = compare_arrays(exp, act, tolerance_for(str(exp.dtype), tolerance), signed)
        if verdict.details is not None:
            verdict.details.values = DIFFER
        return verdict
    outline = Details(
        expected_shape=list(exp.shape),
        actual_shape=list(act.shape),
        expected_dtype=str(exp.dtype),
        actual_dtype=str(act.dtype),
    )
    aligned, why_not = _aligned(exp, act)
    if aligned is None:
        outline.values = NOT_COMPARED
        return Verdict(Status.FAIL, "; ".join(differences + [f"values not compared: {why_not}"]), outline)
    (exp_values, act_values), how = aligned
    both_numeric = exp.dtype.kind != "b" and act.dtype.kind != "b"
    common = np.promote_types(exp.dtype, act.dtype) if both_numeric else np.dtype("float64")
    tol = loosest([str(exp.dtype), str(act.dtype)], tolerance)
    values = compare_arrays(exp_values.astype(common), act_values.astype(common), tol, signed)
    details = values.details or Details()
    details.expected_shape, details.actual_shape = outline.expected_shape, outline.actual_shape
    details.expected_dtype, details.actual_dtype = outline.expected_dtype, outline.actual_dtype
    details.values, details.compared_as = (AGREE if values.passed else DIFFER), how
    label = f"values ({how})" if how else "values"
    said = f"{label} agree" if values.passed else f"{label} also differ: {values.message}"
    return Verdict(Status.FAIL, "; ".join(differences + [said]), details)


Aligned = Tuple[Tuple[NDArray[Any], NDArray[Any]], Optional[str]]  # (reference's, backend's values), how aligned


def _aligned(exp: NDArray[Any], act: NDArray[Any]) -> Tuple[Optional[Aligned], str]:
    """The two arrays' values brought to one shape, and how (None when the shapes are equal); or None and why not."""
    if exp.shape == act.shape:
        return ((exp, act), None), ""
    if exp.size == act.size:
        return ((exp.reshape(-1), act.reshape(-1)), FLATTENED), ""
    why = f"{act.size} values vs {exp.size}, "
    try:
        shape = tuple(np.broadcast_shapes(exp.shape, act.shape))
    except ValueError:
        return None, why + "shapes do not broadcast"
    if shape not in (tuple(exp.shape), tuple(act.shape)):
        # broadcasting both to a third, larger shape would compare values neither side holds there
        return None, why + f"shapes broadcast only to a third shape {shape}"
    return ((np.broadcast_to(exp, shape), np.broadcast_to(act, shape)), BROADCAST), ""


def compare_arrays(exp: NDArray[Any], act: NDArray[Any], tol: Tolerance, signed: bool = False) -> Verdict:
    """Two arrays of one shape and dtype; floats within `tol` (NaN equal to NaN; NaN against a number, an infinity
    against a finite value or the other infinity differ), everything else exactly. `signed`: a zero differs from a
    zero of the other sign (-0.0 against 0.0)."""
    if exp.dtype.kind in "fc":
        ok = np.isclose(act, exp, rtol=tol["rtol"], atol=tol["atol"], equal_nan=True)
        if signed and exp.dtype.kind == "f":
            ok &= ~((act == 0) & (exp == 0) & (np.signbit(act) != np.signbit(exp)))
    else:
        ok = act == exp
    if np.all(ok):
        return Verdict(Status.PASS)
    bad = np.argwhere(~ok)
    first = tuple(int(i) for i in bad[0])
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # values that are not numbers raise here
        expected = exp.astype(_wide(exp.dtype))[~ok]
        diff = np.abs(act.astype(_wide(act.dtype))[~ok] - expected)
        rel = diff[expected != 0] / np.abs(expected[expected != 0])  # against a zero reference: left out
    # A non-finite value where the reference has another value (inf for 1.5, NaN for 2, -inf for inf) is a
    # difference of inf or NaN: the largest differences say so, never the largest finite one (which may be 0).
    not_finite = ~ok & ~(np.isfinite(act) & np.isfinite(exp))
    worst, worst_rel = _max_diff(diff), _max_diff(rel)
    if np.any(not_finite):
        worst_rel = worst
    details = mismatch_details(
        exp,
        act,
        ok,
        not_finite,
        # JSON has no inf or NaN: a non-finite largest difference is left out of the details (the message says it)
        max_abs_diff=worst if worst is not None and np.isfinite(worst) else None,
        max_rel_diff=worst_rel if worst_rel is not None and np.isfinite(worst_rel) else None,
        rtol=tol["rtol"],
        atol=tol["atol"],
    )
    message = "{} of {} values differ (max abs diff {:.3g}, rtol {:g}, atol {:g}); first at {}: {!r} vs reference {!r}".format(
        len(bad),
        ok.size,
        float("nan") if worst is None else worst,
        tol["rtol"],
        tol["atol"],
        first,
        act[first].item(),
        exp[first].item(),
    )
    if np.any(not_finite):
        where = tuple(int(i) for i in np.argwhere(not_finite)[0])
        message += "; {} of them non-finite{}".format(
            int(np.sum(not_finite)),
            ""
            if where == first
            else f", the first {act[where].item()!r} where the reference is {exp[where].item()!r} at {where}",
        )
    return Verdict(Status.FAIL, message, details)


def mismatch_details(
    exp: NDArray[Any], act: NDArray[Any], ok: NDArray[np.bool_], not_finite: NDArray[np.bool_], **measures: Any
) -> Details:
    """The details of values that differ (`ok` False where they do; `not_finite` where one side is NaN or inf): the
    shapes, dtypes, how many and which differ, the first of them, and the comparison's own `measures`."""
    first = tuple(int(i) for i in np.argwhere(~ok)[0])
    return Details(
        expected_shape=list(exp.shape),
        actual_shape=list(act.shape),
        expected_dtype=str(exp.dtype),
        actual_dtype=str(act.dtype),
        mismatched=int(np.sum(~ok)),
        non_finite=int(np.sum(not_finite)) or None,
        size=int(ok.size),
        first_index=list(first),
        expected_value=_plain(exp[first]),
        actual_value=_plain(act[first]),
        mask=_mask_digest(ok),
        **measures,
    )


def _mask_digest(ok: NDArray[np.bool_]) -> str:
    """Eight hex digits that name which elements differ (the same mask, the same digest)."""
    import hashlib

    return hashlib.sha1(np.packbits(~ok).tobytes() + repr(ok.shape).encode()).hexdigest()[:8]


def _wide(dtype: np.dtype[Any]) -> str:
    """The dtype differences are computed in: complex128 for complex values, float64 for everything else."""
    return "complex128" if dtype.kind == "c" else "float64"


def _max_diff(values: NDArray[Any]) -> Optional[float]:
    """The largest difference, NaN when any is NaN (a NaN against a number), inf when any is inf; None when there
    is none."""
    if not values.size:
        return None
    if np.any(np.isnan(values)):
        return float("nan")
    return float(np.max(values))


def _scalar_as_number(value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
        return value.item()
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _plain(value: Any) -> Any:
    """A JSON-safe form of a value for the report's details (NaN and inf as strings)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    elif isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return repr(value)


def py_equal(a: Any, b: Any) -> bool:
    """Python values, lists and tuples alike."""

    def norm(v: Any) -> Any:
        return [norm(x) for x in v] if isinstance(v, (list, tuple)) else v

    same: bool = norm(a) == norm(b)
    return same
