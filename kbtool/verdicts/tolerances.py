"""How close is close enough: per-dtype tolerances, and the looser bound for gradients against central differences."""

from typing import Any, Dict, Iterable, Mapping, Optional

Tolerance = Dict[str, float]  # {rtol, atol}
# a case's `tolerance:` mapping: a dtype key (float16, float32, float64, int) → a part of a Tolerance; and
# `signed_zeros: true` (SIGNED_ZEROS), which makes a float zero differ from the zero of the other sign
Overrides = Mapping[str, Any]
SIGNED_ZEROS = "signed_zeros"

DEFAULT_TOLERANCE: Dict[str, Tolerance] = {
    "float16": {"rtol": 1e-3, "atol": 1e-3},
    "float32": {"rtol": 1e-5, "atol": 1e-6},
    "float64": {"rtol": 1e-10, "atol": 1e-12},
    "int": {"rtol": 0, "atol": 0},  # integers, booleans and anything else: exact
}
# analytic float32 gradients against float64 central differences need a looser bound
GRAD_TOLERANCE: Dict[str, Tolerance] = {
    "float32": {"rtol": 2e-3, "atol": 2e-3},
    "float64": {"rtol": 1e-6, "atol": 1e-6},
}


def case_overrides(case: Any) -> Overrides:
    """The per-dtype overrides a case's values are judged with: its spec's own (`case.tolerance`), over
    GRAD_TOLERANCE for a gradient case (a whole dtype entry of the case's replaces GRAD_TOLERANCE's).
    `case` is a kbtool.specs.cases.Case, or anything with its `tolerance` (and `grad`)."""
    own: Overrides = case.tolerance
    return {**GRAD_TOLERANCE, **own} if getattr(case, "grad", False) else own


def tolerance_for(dtype: Any, overrides: Optional[Overrides] = None) -> Tolerance:
    """{rtol, atol} for values of `dtype` (a name), with the spec's per-dtype `overrides` applied."""
    key = str(dtype) if str(dtype) in DEFAULT_TOLERANCE else "int"
    tol = dict(DEFAULT_TOLERANCE[key])
    tol.update((overrides or {}).get(key, {}))
    return tol


def signed_zeros(overrides: Optional[Overrides] = None) -> bool:
    """Whether -0.0 and 0.0 differ for this case (by default they are equal, as IEEE 754's == says)."""
    return bool((overrides or {}).get(SIGNED_ZEROS, False))


def loosest(dtypes: Iterable[Any], overrides: Optional[Overrides] = None) -> Tolerance:
    """The loosest bound over several dtypes (a value compared across a dtype difference)."""
    bounds = [tolerance_for(d, overrides) for d in dtypes]
    return {k: max(b[k] for b in bounds) for k in ("rtol", "atol")}
