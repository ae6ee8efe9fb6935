"""Device differences named: a result on a device (--device gpu) that fails where the CPU passes is classified
`tf32` when three things hold, each checked from the runs' own numbers:

1. the op is a matmul or a convolution (what TF32 computes: NVIDIA's TensorFloat-32 rounds the float32 inputs of
   matmuls and convolutions to a 10-bit mantissa on Ampere and later GPUs), and only values differ (no shape, dtype
   or error difference);
2. its error fits the TF32 bound: each product a·b of inputs rounded to a 10-bit mantissa errs by at most
   2·2⁻¹¹ + 2⁻²² of |a||b|, so an output errs by at most (2⁻¹⁰ + k(n)·eps32)·M, where M = Σ|a||b| over its
   reduction and k(n) the float32 accumulation's own factor (kbtool/verdicts/bounds.py). The bound is checked at
   the output's largest M: a report names only the largest error, not the element it is at;
3. the same call passes at `--precision highest` (the engines' switch that turns TF32 off): a `--highest` report
   holds it. Where none holds it (a highest run that stopped before it) a result that passes 1 and 2 is
   `tf32-unconfirmed`; where it fails there too, it is no TF32 difference.

M and n are the reference's, computed in this process for the case of the same id in this kbtool's spec
(kbtool/reference/magnitude.py, as the reference worker computes them). A result that fails one of the three is
left as it is: a device difference of another kind stays unexplained until a known difference records it.
"""

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from kbtool.results import Result, Status
from kbtool.vocabulary import DEFAULT_DEVICE

Record = Dict[str, Any]
Key = Tuple[str, str, str, str, str]  # (op, case, backend, mode, device)

TF32 = "tf32"
# fits the TF32 bound, but no --highest report holds the same call (a highest run that stopped before it): the
# second test is not made, and the kind says so
TF32_UNCONFIRMED = "tf32-unconfirmed"
TF32_PRODUCT_ERROR = 2.0**-10  # 2 u + u² for u = 2⁻¹¹, rounded up: the relative error of one rounded product
EPS32 = 2.0**-23
# the ops that compute through matmuls or convolutions (TF32's reach); kbtool/reference/magnitude.py gives their M
MATMUL_OPS = frozenset(
    "dot batch_dot conv1d conv2d conv3d conv2d_transpose conv3d_transpose deconv2d depthwise_conv2d "
    "separable_conv1d separable_conv2d local_conv1d local_conv2d".split()
)


@dataclass(frozen=True)
class Magnitude:
    """The reference's magnitude of an output at its largest: max M and the accumulation length n there."""

    largest: float
    n: int


def key_of(result: Any) -> Key:
    get = result.get if isinstance(result, Mapping) else lambda name, default=None: getattr(result, name, default)
    return (
        str(get("op")),
        str(get("case")),
        str(get("backend")),
        str(get("mode")),
        str(get("device") or DEFAULT_DEVICE),
    )


def highest_results(reports: Iterable[Tuple[str, Record]]) -> Dict[Key, Record]:
    """The results of `--precision highest` reports by key; a report of another precision is a one-line error."""
    from kbtool.errors import KbtoolError

    out: Dict[Key, Record] = {}
    for name, report in reports:
        precision = (report.get("plan") or {}).get("precision", "default")
        if precision != "highest":
            raise KbtoolError(
                f"{name}: --highest takes a report of a --precision highest run; this one ran at {precision}"
            )
        for record in report.get("results") or []:
            out[key_of(record)] = record
    return out


def classify(
    results: Sequence[Result],
    highest: Mapping[Key, Record],
    magnitude: "MagnitudeLookup",
    precision: str = "default",
) -> int:
    """Set `device_difference` on each result of `results` (a default-precision run) that is a TF32 difference
    (confirmed or not); return how many are."""
    if precision != "default":
        return 0
    count = 0
    for result in results:
        found = tf32_difference(result, highest.get(key_of(result)), magnitude)
        if found is not None:
            result.device_difference = found
            count += 1
    return count


def tf32_difference(
    result: Result, highest: Optional[Record], magnitude: "MagnitudeLookup"
) -> Optional[Dict[str, Any]]:
    """The `device_difference` record of `result` when it is a TF32 difference (the module's three tests), else None."""
    if (result.device or DEFAULT_DEVICE) == DEFAULT_DEVICE or result.op not in MATMUL_OPS:
        return None
    if Status(result.status) != Status.FAIL:
        return None
    if highest is not None and highest.get("status") != Status.PASS.value:
        return None  # it does not vanish at highest precision: not TF32's
    error = _values_only_error(result.details or {})
    if error is None:
        return None
    found = magnitude(result.op, result.case)
    if found is None:
        return None
    k = 4.0 + max(1, found.n) ** 0.5  # verdicts/bounds.py k_of: the float32 accumulation's own factor
    bound = (TF32_PRODUCT_ERROR + k * EPS32) * found.largest
    if error > bound:
        return None
    return {
        "kind": TF32 if highest is not None else TF32_UNCONFIRMED,
        "default": {"status": Status.FAIL.value, "max_abs_diff": error, "margin": result.margin},
        "highest": None if highest is None else {"status": Status.PASS.value, "margin": highest.get("margin")},
        "bound": float(f"{bound:.3g}"),
        "magnitude": float(f"{found.largest:.3g}"),
        "n": found.n,
    }


def _values_only_error(details: Mapping[str, Any]) -> Optional[float]:
    """The largest error of a result whose only difference is its values (shape and dtype agree, every value
    finite), else None; a function of several outputs counts its failing outputs' largest."""
    outputs = details.get("outputs")
    if outputs:
        failing = [o.get("details") or {} for o in outputs if o.get("status") != Status.PASS.value]
        errors = [_values_only_error(d) for d in failing]
        return None if not errors or any(e is None for e in errors) else max(e for e in errors if e is not None)
    if details.get("expected_shape") != details.get("actual_shape"):
        return None
    if details.get("expected_dtype") != details.get("actual_dtype"):
        return None
    error = details.get("max_abs_diff")
    return float(error) if isinstance(error, (int, float)) else None


class MagnitudeLookup:
    """The reference's magnitude of a case's output, by (op, case id), from this kbtool's spec: computed once per
    case, in this process, by the reference oracle (what the reference worker sends with every bounded reply)."""

    def __init__(self, seed: int = 0) -> None:
        from kbtool.specs import loader

        self.spec = loader.load()
        self.seed = seed
        self._cache: Dict[Tuple[str, str], Optional[Magnitude]] = {}
        self._cases: Dict[str, Dict[str, Any]] = {}

    def __call__(self, op: str, case_id: str) -> Optional[Magnitude]:
        if (op, case_id) not in self._cache:
            self._cache[(op, case_id)] = self._compute(op, case_id)
        return self._cache[(op, case_id)]

    def _compute(self, op: str, case_id: str) -> Optional[Magnitude]:
        from kbtool.reference.oracle import Oracle
        from kbtool.specs.cases import cases_for
        from kbtool.verdicts.bounds import read_bounds

        if op not in self.spec.ops:
            return None
        if op not in self._cases:
            self._cases[op] = {c.id: c for c in cases_for(self.spec, op, seed=self.seed)}
        case = self._cases[op].get(case_id)
        if case is None:
            return None
        header, arrays = Oracle().expected(case)
        bounds = read_bounds(header, arrays) or []
        found = [
            (float(b["M"].max()), int(b["n"])) for b in bounds if b is not None and int(getattr(b["M"], "size", 0))
        ]
        if not found:
            return None
        largest, n = max(found)
        return Magnitude(largest=largest, n=n)


def counts(results: Sequence[Mapping[str, Any]]) -> Dict[str, int]:
    """{kind: results} over a report's classified results."""
    out: Dict[str, int] = {}
    for record in results:
        kind = (record.get("device_difference") or {}).get("kind")
        if kind:
            out[kind] = out.get(kind, 0) + 1
    return out


def classified(results: Sequence[Mapping[str, Any]], kind: str = TF32) -> List[Mapping[str, Any]]:
    return [r for r in results if (r.get("device_difference") or {}).get("kind") == kind]
