"""Which documented values and pairs of values no case exercises (`kbtool spec coverage`).

The documented space of an op is its parameters' domains and the keras.json settings it reads
(kbtool/specs/domains.py). A case exercises the value each dimension has in it: its kwarg, else the parameter's
default; its keras_config, else the documented default. Every value must appear in some case, and every pair of
values of two dimensions, unless every row holding that pair is excluded by the op's grid rules (then it is listed
as excluded). Hand-written cases that expect an exception exercise an error path, not the documented behaviour,
and do not count; a grid row that must raise (a `grid.raises` rule) is that row's documented behaviour and counts.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from kbtool.specs import domains
from kbtool.specs.cases import modes_of, raw_cases
from kbtool.vocabulary import CASE_KEYS, MODES

ResultKey = Tuple[str, str, str]  # op, case id, mode
# the statuses of results that ran the op and saw it refuse the value: it raised, or its worker died (`crash`: no
# value came back either); a `not_reached` result never ran it
REFUSED = ("error", "unsupported", "crash")
NOT_REACHED = "not_reached"
# the kinds of blind spot (op_blind_spots), in the order reports list their counts
KINDS = ("real", "refused", "unsupported", "decided", "broken")
Value = Tuple[str, Any]  # a dimension and one of its values (in domains.normal's form)
Item = domains.Pair  # a documented value, or pair of values, as a tuple of one or two Values
CaseRow = Tuple[str, List[str], domains.Row]  # a case's id, its modes and its value of each dimension
TENSOR = "<tensor>"  # a row's value of a parameter the case passes as an input tensor


@dataclass(frozen=True)
class Claim:
    """A recorded statement that a backend differs from the reference on every call of an op, in some modes, that
    holds some documented values (`values`: {dimension: [values, as the spec spells them]}; None: every call). Its
    kind says who records it: `decided`, a reference decision of the spec (the reference picked a behaviour the
    backend does not have); `broken`, a known entry's `every_call` (the backend's own difference, for the entry's
    cause). A blind spot such a claim names has no passing sibling to find, and is of the claim's kind; a passing
    result of a call the claim names contradicts it (`contradictions`)."""

    kind: str
    op: str
    modes: Tuple[str, ...]
    values: Optional[Mapping[str, Sequence[Any]]]
    by: str  # where it is recorded, in words

    def _normal(self, tuple_params: Set[str]) -> Dict[str, List[Any]]:
        return {n: [domains.normal(v, n in tuple_params) for v in vs] for n, vs in (self.values or {}).items()}

    def names_item(self, item: Item, tuple_params: Set[str]) -> bool:
        """Whether every call holding the documented value or pair `item` is one the claim names."""
        held = dict(item)
        return all(n in held and held[n] in vs for n, vs in self._normal(tuple_params).items())

    def names_row(self, row: domains.Row, tuple_params: Set[str]) -> bool:
        """Whether the claim names a case's call (its row of values)."""
        return all(row.get(n) in vs for n, vs in self._normal(tuple_params).items())


def _case_rows(spec: domains.SpecLike, op: str, dims: Mapping[str, Any]) -> Tuple[List[CaseRow], Set[str]]:
    """[(case id, modes, row)] for every case that exercises documented behaviour: the id a result carries (a spec
    case's, a grid row's 'grid.<k>=<v>...', 'example:<id>'), the modes it runs in and its value of each dimension."""
    entry = spec.ops[op]
    tuple_params = {p["name"] for p in entry.get("signature", []) if p.get("tuple")}
    defaults = {p["name"]: p.get("default") for p in entry.get("signature", [])}
    raws = [(raw["id"], raw) for raw in raw_cases(spec, op)] + [
        ("example:" + e["id"], dict(e["case"], id=e["id"])) for e in entry.get("examples", []) if "case" in e
    ]
    rows: List[CaseRow] = []
    for case_id, raw in raws:
        if raw.get("raises") and not raw["id"].startswith(domains.GRID_PREFIX):
            continue  # a hand-written error case exercises its bad value, not the others' (a grid row is meant)
        kwargs, config = raw.get("kwargs") or {}, domains.settings(raw.get("keras_config"))
        # a parameter given as a named input is a tensor (e.g. in_train_phase's training), none of its documented values
        as_inputs = set(raw["inputs"]) if isinstance(raw.get("inputs"), dict) else set()
        row: domains.Row = {}
        for name in dims:
            if name in CASE_KEYS and name not in defaults:
                value = config[name]
            elif name in as_inputs:
                value = TENSOR
            else:
                value = kwargs.get(name, defaults.get(name))
            row[name] = domains.normal(value, name in tuple_params)
        rows.append((case_id, modes_of(raw), row))
    return rows, tuple_params


def _exercised_rows(spec: domains.SpecLike, op: str, dims: Mapping[str, Any]) -> Tuple[List[domains.Row], Set[str]]:
    rows, tuple_params = _case_rows(spec, op, dims)
    return [row for _, _, row in rows], tuple_params


def _documented(
    spec: domains.SpecLike, op: str, dims: Dict[str, List[Any]], tuple_params: Set[str]
) -> Tuple[Set[Value], Set[Item], Set[Item], Dict[str, Dict[Any, Any]]]:
    """(values, pairs, impossible pairs, shown): the documented values as (name, normal value), the pairs of two
    dimensions' values some allowed grid row holds and those every such row is excluded from, and each normal
    value's spelling in the spec."""
    normal_dims = {n: [domains.normal(v, n in tuple_params) for v in values] for n, values in dims.items()}
    shown = {n: {domains.normal(v, n in tuple_params): v for v in values} for n, values in dims.items()}
    values = {(n, v) for n, vs in normal_dims.items() for v in vs}
    pairs: Set[Item] = set()
    impossible: Set[Item] = set()
    if len(dims) > 1:
        rules = (spec.ops[op].get("grid") or {}).get("exclude", [])
        pairs, impossible = domains.required_pairs(dims, rules, tuple_params)
    return values, pairs, impossible, shown


def op_coverage(spec: domains.SpecLike, op: str) -> Dict[str, Any]:
    """{dimensions, values: [exercised, documented], pairs: [...], unexercised: [...], excluded: [...]}."""
    dims = domains.all_domains(spec, op)
    rows, tuple_params = _exercised_rows(spec, op, dims)
    values, pairs, impossible, shown = _documented(spec, op, dims, tuple_params)
    hit_values = {(n, row[n]) for row in rows for n in dims if (n, row[n]) in values}
    names = list(dims)
    hit_pairs: Set[Item] = set()
    for row in rows:
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                hit_pairs.add(((a, row[a]), (b, row[b])))
    unexercised: List[Dict[str, Any]] = []
    for n, v in sorted(values - hit_values, key=repr):
        unexercised.append({"op": op, "values": {n: shown[n][v]}})
    for pair in sorted(pairs - hit_pairs, key=repr):
        if all(p in hit_values or p not in values for p in pair):  # a missing single value is listed once above
            unexercised.append({"op": op, "values": {n: shown[n][v] for n, v in pair}})
    excluded = [{"op": op, "values": {n: shown[n][v] for n, v in pair}} for pair in sorted(impossible, key=repr)]
    return {
        "dimensions": {n: list(vs) for n, vs in dims.items()},
        "values": [len(hit_values), len(values)],
        "pairs": [len(pairs & hit_pairs), len(pairs)],
        "unexercised": unexercised,
        "excluded": excluded,
    }


def undeclared(spec: domains.SpecLike, op: str) -> List[str]:
    """The op's value parameters that declare no documented domain."""
    return [
        p["name"]
        for p in spec.ops[op].get("signature", [])
        if p.get("kind", "value") == "value" and "domain" not in p and "free" not in p and not p["name"].startswith("*")
    ]


def free(spec: domains.SpecLike, op: str) -> List[str]:
    """The op's value parameters that take any value of a type (no enumerable documented values)."""
    return [p["name"] for p in spec.ops[op].get("signature", []) if "free" in p]


def _covered_ops(spec: domains.SpecLike, ops: Optional[Sequence[str]] = None) -> List[str]:
    """The ops coverage is about (aliases and ops that cannot be checked left out), sorted."""
    return [
        op for op in sorted(ops or spec.ops) if not (spec.ops[op].get("alias_of") or spec.ops[op].get("not_checkable"))
    ]


def coverage(spec: domains.SpecLike, ops: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    per_op: Dict[str, Dict[str, Any]] = {}
    unexercised: List[Dict[str, Any]] = []
    excluded: List[Dict[str, Any]] = []
    totals = {"values": [0, 0], "pairs": [0, 0]}
    for op in _covered_ops(spec, ops):
        result = op_coverage(spec, op)
        result["undeclared"] = undeclared(spec, op)
        result["free"] = free(spec, op)
        if not result["dimensions"] and not result["undeclared"] and not result["free"]:
            continue
        per_op[op] = result
        unexercised += result["unexercised"]
        excluded += result["excluded"]
        for key in totals:
            totals[key] = [totals[key][0] + result[key][0], totals[key][1] + result[key][1]]
    return {
        "documented_values": totals["values"][1],
        "exercised_values": totals["values"][0],
        "documented_pairs": totals["pairs"][1],
        "exercised_pairs": totals["pairs"][0],
        "unexercised": unexercised,
        "excluded": excluded,
        "undeclared": {op: r["undeclared"] for op, r in per_op.items() if r["undeclared"]},
        "free_parameters": sum(len(r["free"]) for r in per_op.values()),
        "ops": per_op,
    }


def _values_text(values: Mapping[str, Any]) -> str:
    return " × ".join(f"{k}={domains.label(v)}" for k, v in values.items())


def render(report: Mapping[str, Any]) -> List[str]:
    lines = ["{}: {}".format(item["op"], _values_text(item["values"])) for item in report["unexercised"]]
    lines.append(
        "documented values: {} of {} exercised; pairs of values: {} of {} ({} excluded by grid rules); "
        "{} unexercised".format(
            report["exercised_values"],
            report["documented_values"],
            report["exercised_pairs"],
            report["documented_pairs"],
            len(report["excluded"]),
            len(report["unexercised"]),
        )
    )
    lines.append(
        "dimensions with a documented domain (parameters and keras.json settings): {}; "
        "free parameters (any value of a type): {}".format(
            sum(len(r["dimensions"]) for r in report["ops"].values()), report["free_parameters"]
        )
    )
    if report["undeclared"]:
        lines.append(
            "value parameters with no documented domain: {} in {} ops".format(
                sum(len(v) for v in report["undeclared"].values()), len(report["undeclared"])
            )
        )
    return lines


# ---------------------------------------------------------------- blind spots: exercised only by results that fail


def _items(row: domains.Row, names: Sequence[str], values: Set[Value], pairs: Set[Item]) -> Set[Item]:
    """The documented values and pairs of values one case's row holds."""
    keyed = [(n, row[n]) for n in names]
    found: Set[Item] = {(item,) for item in keyed if item in values}
    for i, a in enumerate(keyed):
        for b in keyed[i + 1 :]:
            if (a, b) in pairs:
                found.add((a, b))
    return found


def op_blind_spots(
    spec: domains.SpecLike,
    op: str,
    failing: Mapping[ResultKey, str],
    backend_modes: Sequence[str] = MODES,
    variants: Callable[[str, str], Iterable[str]] = lambda op, case: (),
    claims: Sequence[Claim] = (),
) -> List[Dict[str, Any]]:
    """The op's blind spots on one backend: each documented value, and pair of values (single values a blind spot
    already names are not repeated in pairs), that cases running in a mode exercise but no result of that mode that
    passes does. `failing` maps (op, case id, mode) to the status of every result that does not pass; any other
    result passes (a green gate). A case whose variant on the backend passes (`variants(op, case id)`: its
    variants' case ids, e.g. Theano's '<case>.kernel_flipped', the same call with a transformed input) counts as
    passing. A mode the backend cannot run (not in `backend_modes`) counts nothing: what only its cases exercise,
    and no passing result of another mode does, is a blind spot of kind `unsupported`. Of the modes the backend
    runs, a blind spot whose failing results are all `unsupported` (the backend lacks the function) is
    `unsupported`; one whose failing results all raise (`error` or `unsupported`: the backend refuses every call
    with the value, so no wrong value can hide there, and a change to the raise changes its recorded fingerprint;
    or its worker died, `crash`) is `refused`, judged on the results that reached the op (one that never reached
    it, `not_reached`, says nothing of the value; a blind spot with none that did is `real`). Any other is
    `real`, unless a claim of the op (`claims`, see Claim) names every call holding it in that mode: then the
    backend differs on each such call for a recorded cause, no passing sibling can exist, and it is of the
    claim's kind (`decided` or `broken`, with `by`)."""
    dims = domains.all_domains(spec, op)
    if not dims:
        return []
    rows, tuple_params = _case_rows(spec, op, dims)
    values, pairs, _, shown = _documented(spec, op, dims, tuple_params)
    names = list(dims)

    def passes(case_id: str, mode: str) -> bool:
        if (op, case_id, mode) not in failing:
            return True
        return any((op, v, mode) not in failing for v in variants(op, case_id))

    held = [(case_id, modes, _items(row, names, values, pairs)) for case_id, modes, row in rows]
    passing_any: Set[Any] = set()
    for case_id, modes, items in held:
        if any(m in backend_modes and passes(case_id, m) for m in modes):
            passing_any |= items
    spots = []
    for mode in MODES:
        runs = mode in backend_modes
        exercised: Dict[Any, List[str]] = {}
        passed: Set[Any] = set()
        for case_id, modes, items in held:
            if mode not in modes:
                continue
            for item in items:
                exercised.setdefault(item, []).append(case_id)
            if runs and passes(case_id, mode):
                passed |= items
        blind = {item for item in exercised if item not in (passed if runs else passing_any)}
        for item in sorted(blind, key=lambda it: (len(it), repr(it))):
            if len(item) == 2 and any((part,) in blind for part in item):
                continue  # its single value is listed already
            cases = [
                {"case": c, "status": failing.get((op, c, mode), "unsupported") if runs else "unsupported"}
                for c in exercised[item]
            ]
            spot = _blind_spot(op, mode, runs, {n: shown[n][v] for n, v in item}, cases)
            claim = next(
                (c for c in claims if c.op == op and mode in c.modes and c.names_item(item, tuple_params)), None
            )
            if spot["kind"] == "real" and claim is not None:
                spot.update(kind=claim.kind, by=claim.by)
            spots.append(spot)
    return spots


def contradictions(
    spec: domains.SpecLike,
    op: str,
    failing: Mapping[ResultKey, str],
    backend_modes: Sequence[str],
    claims: Sequence[Claim],
) -> List[Dict[str, Any]]:
    """The op's claims that a passing result contradicts: a case in a mode the claim names, holding its values,
    that passes on the backend (so the backend does not differ on every such call, and the claim is wrong or
    stale). One dict per claim: {op, mode, values, kind, by, cases: [passing case ids]}."""
    mine = [c for c in claims if c.op == op]
    dims = domains.all_domains(spec, op)
    if not mine or not dims:
        return []
    rows, tuple_params = _case_rows(spec, op, dims)
    found = []
    for claim in mine:
        for mode in claim.modes:
            if mode not in backend_modes:
                continue
            passing = [
                case_id
                for case_id, modes, row in rows
                if mode in modes and (op, case_id, mode) not in failing and claim.names_row(row, tuple_params)
            ]
            if passing:
                values = dict(claim.values or {})
                found.append(
                    {"op": op, "mode": mode, "values": values, "kind": claim.kind, "by": claim.by, "cases": passing}
                )
    return found


def _blind_spot(op: str, mode: str, runs: bool, values: Dict[str, Any], cases: List[Dict[str, str]]) -> Dict[str, Any]:
    """One blind spot, of its kind: `unsupported`, `refused` or `real` (see op_blind_spots)."""
    unsupported = not runs or all(c["status"] == "unsupported" for c in cases)
    reached = [c for c in cases if c["status"] != NOT_REACHED]
    refused = bool(reached) and all(c["status"] in REFUSED for c in reached)
    return {
        "op": op,
        "values": values,
        "mode": mode,
        "kind": "unsupported" if unsupported else "refused" if refused else "real",
        "cases": cases,
    }


def blind_spots(
    spec: domains.SpecLike,
    failing: Mapping[ResultKey, str],
    backend_modes: Sequence[str] = MODES,
    variants: Callable[[str, str], Iterable[str]] = lambda op, case: (),
    ops: Optional[Iterable[str]] = None,
    claims: Sequence[Claim] = (),
) -> Dict[str, Any]:
    """{blind_spots: [...], <kind>: count for each of KINDS, ops: {op: {<kind>: count}}, contradicted: [...]} over
    the ops (see op_blind_spots and contradictions)."""
    spots: List[Dict[str, Any]] = []
    contradicted: List[Dict[str, Any]] = []
    for op in _covered_ops(spec, list(ops) if ops is not None else None):
        spots += op_blind_spots(spec, op, failing, backend_modes, variants, claims)
        contradicted += contradictions(spec, op, failing, backend_modes, claims)
    per_op: Dict[str, Dict[str, int]] = {}
    for spot in spots:
        counts = per_op.setdefault(spot["op"], dict.fromkeys(KINDS, 0))
        counts[spot["kind"]] += 1
    out: Dict[str, Any] = {kind: sum(1 for s in spots if s["kind"] == kind) for kind in KINDS}
    out.update(ops=per_op, blind_spots=spots, contradicted=contradicted)
    return out


def render_blind_spots(report: Mapping[str, Any], shown_cases: int = 3) -> List[str]:
    """Short terminal lines: the counts per op, then each blind spot with (some of) its failing results."""
    lines = [
        "{}: {}".format(op, ", ".join(f"{counts[kind]} {kind}" for kind in KINDS))
        for op, counts in sorted(report["ops"].items())
    ]
    for spot in report["blind_spots"]:
        cases = ", ".join("{} ({})".format(c["case"], c["status"]) for c in spot["cases"][:shown_cases])
        more = len(spot["cases"]) - shown_cases
        lines.append(
            "{} [{}] {}: {}; only in {}{}{}".format(
                spot["kind"],
                spot["mode"],
                spot["op"],
                _values_text(spot["values"]),
                cases,
                f" and {more} more" if more > 0 else "",
                " (by {})".format(spot["by"]) if spot.get("by") else "",
            )
        )
    for claim in report.get("contradicted", []):
        lines.append(
            "contradicted [{}] {}: {} ({}) says every call with {} differs, but {} passed".format(
                claim["mode"],
                claim["op"],
                claim["by"],
                claim["kind"],
                _values_text(claim["values"]) if claim["values"] else "any values",
                ", ".join(claim["cases"][:shown_cases]) + (" and more" if len(claim["cases"]) > shown_cases else ""),
            )
        )
    lines.append(
        "{}: {} blind spots ({}) in {} ops{}, failing results from {}".format(
            report.get("backend", "backend"),
            sum(report[kind] for kind in KINDS),
            ", ".join(f"{report[kind]} {kind}" for kind in KINDS),
            len(report["ops"]),
            "; {} contradicted claims".format(len(report["contradicted"])) if report.get("contradicted") else "",
            report.get("source", "the given set"),
        )
    )
    return lines
