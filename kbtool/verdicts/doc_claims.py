"""Documented examples: does what a doc version shows match what a backend returned?"""

from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from kbtool.verdicts.values import py_equal


def doc_check(shown: Sequence[Mapping[str, Any]], values: Sequence[Any]) -> List[Dict[str, Any]]:
    """One verdict per claim: {docs, shown, matches}; matches is None for a textual claim (shown, not judged)."""
    verdicts: List[Dict[str, Any]] = []
    for claim in shown:
        if not values:
            verdicts.append({"docs": claim["docs"], "matches": False})
            continue
        out = values[0] if len(values) == 1 else values
        matches: Optional[bool]
        if "shape" in claim:
            got = list(np.shape(out)) if isinstance(out, np.ndarray) else _plain(out)  # several outputs: never a shape
            matches = py_equal(got, claim["shape"])
        elif "value" in claim:
            matches = claim_matches(claim["value"], out)
        else:
            matches = None  # a textual claim (e.g. a repr) is shown to the user, not judged
        what = claim.get("shape", claim.get("value", claim.get("text")))
        verdicts.append(
            {"docs": claim["docs"], "shown": ("shape " if "shape" in claim else "") + str(what), "matches": matches}
        )
    return verdicts


def claim_matches(want: Any, got: Any) -> bool:
    """A doc's shown value against an output: numbers within 1e-4, anything else by equality."""
    if _contains_none(want):  # None would become nan as float64: compare item by item
        got = _plain(got)
        if want is None or got is None:
            return want is got
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            return False
        return all(claim_matches(w, g) for w, g in zip(want, got))
    try:
        want_array = np.asarray(want, dtype="float64")
        got_array = np.asarray(got, dtype="float64")
    except (TypeError, ValueError):
        return py_equal(_plain(got), want)
    return want_array.shape == got_array.shape and bool(np.allclose(got_array, want_array, atol=1e-4))


def _contains_none(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_contains_none(v) for v in value)
    return value is None


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
