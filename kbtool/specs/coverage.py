"""Which documented values and pairs of values no case exercises (`kbtool spec coverage`).

The documented space of an op is its parameters' domains and the keras.json settings it reads
(kbtool/specs/domains.py). A case exercises the value each dimension has in it: its kwarg, else the parameter's
default; its keras_config, else the documented default. Every value must appear in some case, and every pair of
values of two dimensions, unless every row holding that pair is excluded by the op's grid rules (then it is listed
as excluded). Hand-written cases that expect an exception exercise an error path, not the documented behaviour,
and do not count; a grid row that must raise (a `grid.raises` rule) is that row's documented behaviour and counts.
"""

from ..vocabulary import CASE_KEYS
from . import domains
from .cases import raw_cases


def _exercised_rows(spec, op, dims):
    entry = spec.ops[op]
    tuple_params = {p["name"] for p in entry.get("signature", []) if p.get("tuple")}
    defaults = {p["name"]: p.get("default") for p in entry.get("signature", [])}
    raws = raw_cases(spec, op) + [dict(e["case"], id=e["id"]) for e in entry.get("examples", []) if "case" in e]
    rows = []
    for raw in raws:
        if raw.get("raises") and not raw["id"].startswith(domains.GRID_PREFIX):
            continue  # a hand-written error case exercises its bad value, not the others' (a grid row is meant)
        kwargs, config = raw.get("kwargs") or {}, domains.settings(raw.get("keras_config"))
        row = {}
        for name in dims:
            if name in CASE_KEYS and name not in defaults:
                value = config[name]
            else:
                value = kwargs.get(name, defaults.get(name))
            row[name] = domains.normal(value, name in tuple_params)
        rows.append(row)
    return rows, tuple_params


def op_coverage(spec, op):
    """{dimensions, values: [exercised, documented], pairs: [...], unexercised: [...], excluded: [...]}."""
    dims = domains.all_domains(spec, op)
    rows, tuple_params = _exercised_rows(spec, op, dims)
    normal_dims = {n: [domains.normal(v, n in tuple_params) for v in values] for n, values in dims.items()}
    shown = {n: {domains.normal(v, n in tuple_params): v for v in values} for n, values in dims.items()}
    values = {(n, v) for n, vs in normal_dims.items() for v in vs}
    hit_values = {(n, row[n]) for row in rows for n in dims if (n, row[n]) in values}
    grid = spec.ops[op].get("grid") or {}
    rules = grid.get("exclude", [])
    names = list(dims)
    pairs, impossible = set(), set()
    if len(names) > 1:
        raw_possible, raw_impossible = domains.required_pairs(dims, rules, tuple_params)
        pairs = raw_possible
        impossible = raw_impossible
    hit_pairs = set()
    for row in rows:
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                hit_pairs.add(((a, row[a]), (b, row[b])))
    unexercised = []
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


def undeclared(spec, op):
    """The op's value parameters that declare no documented domain."""
    return [
        p["name"]
        for p in spec.ops[op].get("signature", [])
        if p.get("kind", "value") == "value" and "domain" not in p and "free" not in p and not p["name"].startswith("*")
    ]


def free(spec, op):
    """The op's value parameters that take any value of a type (no enumerable documented values)."""
    return [p["name"] for p in spec.ops[op].get("signature", []) if "free" in p]


def coverage(spec, ops=None):
    names = sorted(ops or spec.ops)
    per_op, unexercised, excluded = {}, [], []
    totals = {"values": [0, 0], "pairs": [0, 0]}
    for op in names:
        if spec.ops[op].get("alias_of") or spec.ops[op].get("not_checkable"):
            continue
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


def _values_text(values):
    return " × ".join(f"{k}={domains.label(v)}" for k, v in values.items())


def render(report):
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
