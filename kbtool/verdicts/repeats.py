"""`--repeat N`: the runs of one case on one worker, compared with each other, bit for bit.

Every run must give the first run's outcome: the same reply status (a value, or an exception of the same type), the
same number and kinds of outputs, and arrays of the same shape, dtype and bits (NaN equal to NaN at the same place).
Any disagreement makes the result `nondeterministic`, whatever the first run's verdict would have been: a pass or a
fail that depends on which run was judged is luck. Random ops are never repeated (their draws differ by design; the
stats verdicts judge them).
"""

import math
from typing import Any, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from kbtool.results import Details, Status, Verdict
from kbtool.verdicts.replies import output_values
from kbtool.worker import protocol

# reply statuses that carry an outcome worth repeating (a crash, timeout or missing function is the verdict as is)
REPEATABLE = (protocol.OK, protocol.RAISED)


def is_random(case: Any, request: Mapping[str, Any], entry: Optional[Mapping[str, Any]] = None) -> bool:
    """Whether the case draws random values by design: a stats case (its request may ask the worker to draw
    `repeat` times or `reseed`), or a case of an op the spec files under `random`."""
    if getattr(case, "stats", None) or "repeat" in request or "reseed" in request:
        return True
    if not entry:
        return False
    return entry.get("category") == "random"


def judge_runs(replies: Sequence[Tuple[Mapping[str, Any], List[Any]]]) -> Optional[Verdict]:
    """None when every reply agrees with the first; else a `nondeterministic` verdict saying how many of the runs
    disagreed with the first, how (the first disagreement found), and the largest absolute difference between a
    run's values and the first's where values of one shape and dtype differ."""
    if len(replies) < 2:
        return None
    first = replies[0]
    disagreed, how, largest = 0, "", None
    for index, other in enumerate(replies[1:], start=2):
        found = _disagreement(first, other)
        if found is None:
            continue
        disagreed += 1
        what, diff = found
        how = how or f"run {index} {what}"
        if diff is not None and (largest is None or diff > largest):
            largest = diff
    if not disagreed:
        return None
    runs = len(replies)
    message = f"{disagreed} of {runs - 1} repeated runs disagree with the first ({runs} runs): {how}"
    if largest is not None:
        message += f"; largest absolute difference {largest:.3g}"
    details = Details(runs=runs, disagreed=disagreed, max_abs_diff=largest)
    return Verdict(Status.NONDETERMINISTIC, message, details)


def _outcome(reply: Tuple[Mapping[str, Any], List[Any]]) -> str:
    header = reply[0]
    status = str(header.get("status"))
    if status == protocol.RAISED:
        error = header.get("error") or {}
        return "raised {}".format(error.get("type", "an exception") if isinstance(error, dict) else "an exception")
    return {protocol.OK: "returned"}.get(status, status)


def _disagreement(
    first: Tuple[Mapping[str, Any], List[Any]], other: Tuple[Mapping[str, Any], List[Any]]
) -> Optional[Tuple[str, Optional[float]]]:
    """How `other` differs from `first` (words, and the largest absolute difference of values when that is what
    differs), or None when it does not."""
    said, says = _outcome(first), _outcome(other)
    if said != says:
        return f"{says} where the first {said}", None
    if first[0].get("status") != protocol.OK:
        return None  # the same exception type: its message may name addresses or counters
    expected, actual = output_values(*first), output_values(*other)
    if len(expected) != len(actual):
        return f"returned {len(actual)} outputs where the first returned {len(expected)}", None
    if _static_shapes(first[0]) != _static_shapes(other[0]):
        return "gave another static shape (K.int_shape)", None
    how, largest = None, None
    for i, (a, b) in enumerate(zip(expected, actual)):
        where = f"output {i}: " if len(expected) > 1 else ""
        found = _value_disagreement(a, b)
        if found is None:
            continue
        what, diff = found
        how = how or where + what
        if diff is not None and (largest is None or diff > largest):
            largest = diff
    return None if how is None else (how, largest)


def _static_shapes(header: Mapping[str, Any]) -> List[Any]:
    return [o.get("static_shape") for o in header.get("outputs", []) if isinstance(o, dict)]


def _value_disagreement(a: Any, b: Any) -> Optional[Tuple[str, Optional[float]]]:
    a_array, b_array = isinstance(a, np.ndarray), isinstance(b, np.ndarray)
    if a_array != b_array:
        return f"returned {type(b).__name__} where the first returned {type(a).__name__}", None
    if not a_array:
        if _same_plain(a, b):
            return None
        return f"returned {_short(b)} where the first returned {_short(a)}", _number_diff(a, b)
    if a.shape != b.shape:
        return f"shape {tuple(b.shape)} where the first had {tuple(a.shape)}", None
    if a.dtype != b.dtype:
        return f"dtype {b.dtype} where the first had {a.dtype}", None
    if _same_bits(a, b):
        return None
    return f"{_count_differing(a, b)} of {a.size} values differ from the first run's", _array_diff(a, b)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    try:
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    except (TypeError, ValueError):  # an object or string array: compare what it holds
        return bool(a.tolist() == b.tolist())


def _count_differing(a: np.ndarray, b: np.ndarray) -> int:
    try:
        same = a == b
        if a.dtype.kind in "fc":
            same = same | (np.isnan(a) & np.isnan(b))
        return int(np.sum(~np.asarray(same, dtype=bool)))
    except (TypeError, ValueError):
        return int(a.size)


def _array_diff(a: np.ndarray, b: np.ndarray) -> Optional[float]:
    """The largest finite absolute difference between two numeric arrays of one shape (None: none finite)."""
    if a.dtype.kind not in "biufc" or not a.size:
        return None
    wide = "complex128" if a.dtype.kind == "c" else "float64"
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a.astype(wide) - b.astype(wide))
    finite = diff[np.isfinite(diff)]
    return float(np.max(finite)) if finite.size else None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _same_plain(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_plain(x, y) for x, y in zip(a, b))
    return bool(type(a) is type(b) and a == b)


def _number_diff(a: Any, b: Any) -> Optional[float]:
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        diff = abs(float(a) - float(b))
        return diff if math.isfinite(diff) else None
    return None
