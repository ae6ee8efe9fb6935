"""Values, shapes and dtypes: one backend's outputs against the reference's, within tolerance.

Rules: outputs are compared one by one (count first); a NumPy scalar and a Python number compare by value;
shapes must be equal before values are compared; NaN equals NaN at the same place; a dtype difference still
compares the values (loosest tolerance of the two dtypes), so that it never hides a value difference.
"""

from typing import Any, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

from kbtool.results import Details, Status, Verdict
from kbtool.verdicts.replies import kind_of
from kbtool.verdicts.tolerances import Overrides, Tolerance, loosest, tolerance_for


def compare_outputs(expected: Sequence[Any], actual: Sequence[Any], tolerance: Optional[Overrides] = None) -> Verdict:
    """Lists of output values (ndarray or Python values) → Verdict."""
    if len(expected) != len(actual):
        return Verdict(Status.FAIL, f"returned {len(actual)} outputs, reference returned {len(expected)}")
    for i, (exp, act) in enumerate(zip(expected, actual)):
        verdict = compare_value(exp, act, tolerance or {})
        if not verdict.passed:
            if len(expected) > 1:
                verdict.message = f"output {i}: {verdict.message}"
            return verdict
    return Verdict(Status.PASS)


def compare_value(exp: Any, act: Any, tolerance: Overrides) -> Verdict:
    """One output (an ndarray or a Python value) against the reference's."""
    exp, act = _scalar_as_number(exp), _scalar_as_number(act)
    exp_is_array, act_is_array = isinstance(exp, np.ndarray), isinstance(act, np.ndarray)
    if not exp_is_array or not act_is_array:
        if _is_number(exp) and _is_number(act):
            # a NumPy scalar from one backend, a Python number from another: the value is what counts
            if np.isclose(act, exp, equal_nan=True):
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
    if exp.shape != act.shape:
        return Verdict(
            Status.FAIL,
            f"shape {tuple(act.shape)} != reference {tuple(exp.shape)}",
            Details(
                expected_shape=list(exp.shape),
                actual_shape=list(act.shape),
                expected_dtype=str(exp.dtype),
                actual_dtype=str(act.dtype),
            ),
        )
    if exp.dtype != act.dtype:
        tol = loosest([str(exp.dtype), str(act.dtype)], tolerance)
        both_numeric = exp.dtype.kind != "b" and act.dtype.kind != "b"
        common = np.promote_types(exp.dtype, act.dtype) if both_numeric else np.dtype("float64")
        values = compare_arrays(exp.astype(common), act.astype(common), tol)
        details = values.details or Details()
        details.expected_dtype, details.actual_dtype = str(exp.dtype), str(act.dtype)
        return Verdict(
            Status.FAIL,
            "dtype {} != reference {} ({})".format(
                act.dtype, exp.dtype, "values agree" if values.passed else "values also differ: " + values.message
            ),
            details,
        )
    return compare_arrays(exp, act, tolerance_for(str(exp.dtype), tolerance))


def compare_arrays(exp: NDArray[Any], act: NDArray[Any], tol: Tolerance) -> Verdict:
    """Two arrays of one shape and dtype; floats within `tol` (NaN equal to NaN), everything else exactly."""
    if exp.dtype.kind in "fc":
        ok = np.isclose(act, exp, rtol=tol["rtol"], atol=tol["atol"], equal_nan=True)
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
    details = Details(
        expected_shape=list(exp.shape),
        actual_shape=list(act.shape),
        expected_dtype=str(exp.dtype),
        actual_dtype=str(act.dtype),
        # JSON has no inf or NaN: a non-finite largest difference is left out of the details (the message says it)
        max_abs_diff=worst if worst is not None and np.isfinite(worst) else None,
        max_rel_diff=worst_rel if worst_rel is not None and np.isfinite(worst_rel) else None,
        mismatched=len(bad),
        non_finite=int(np.sum(not_finite)) or None,
        size=int(ok.size),
        first_index=list(first),
        expected_value=_plain(exp[first]),
        actual_value=_plain(act[first]),
        rtol=tol["rtol"],
        atol=tol["atol"],
        mask=_mask_digest(ok),
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
