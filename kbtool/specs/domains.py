"""Documented parameter domains, and the cases generated from them.

A signature parameter may declare its documented domain (`domain: [valid, same]`, or the name of a list in the
spec's top-level `domains:`); an op may declare the keras.json settings it reads (`reads_config:`), whose domains
are the spec's `domains.<key>`. An op with a `grid:` gets cases generated from these domains:

- `pairwise` (the default): the fewest rows, chosen greedily and deterministically from the full grid, such that
  every value of every parameter and every pair of values of two parameters appears in some row;
- `full`: every row of the grid (behind `kbtool check --grid full`).

Rows a `grid.exclude` rule rejects are never generated (each rule says why); rows a `grid.raises` rule names expect
that exception. A grid input written `layout: channels` is given channels_last and is transposed to channels_first
when the row's effective data format (the `data_format` parameter, else keras.json's image_data_format) says so.
"""

import itertools
from typing import Any, Collection, Dict, List, Mapping, Optional, Protocol, Sequence, Set, Tuple

from kbtool import vocabulary
from kbtool.specs import shapes
from kbtool.specs.records import Entry, RawCase

Row = Dict[str, Any]  # one row of a grid: a value for each dimension (parameter or keras.json key)
Domains = Mapping[str, Sequence[Any]]  # each dimension's documented values, in order
Pair = Tuple[Tuple[str, Any], ...]  # one or two (dimension, normal value) pairs


class SpecLike(Protocol):
    """What this module reads of a spec: a loaded Spec (kbtool/specs/loader.py), or its data before it is one."""

    data: Dict[str, Any]
    ops: Dict[str, Entry]


# the keras.json settings a case runs under and their documented defaults (defined in kbtool/vocabulary.py)
CONFIG_KEYS = vocabulary.CASE_KEYS
CONFIG_DEFAULTS = vocabulary.CASE_DEFAULTS
GRID_MODES = ("pairwise", "full")
MAX_GRID_ROWS = 20000  # the largest full grid the pairwise search enumerates (the shipped spec's largest: 216)
GRID_PREFIX = "grid."


class DomainError(ValueError):
    """A domain or grid the spec cannot mean (an unknown domain name, a rule that does not evaluate)."""


def named_domains(spec: Any) -> Dict[str, Any]:
    named: Dict[str, Any]
    named = (spec.data.get("domains") or {}) if hasattr(spec, "data") else (spec.get("domains") or {})
    return named


def resolve(domain: Any, named: Mapping[str, Any]) -> List[Any]:
    """A param's `domain:` as a list of values (a name refers to the spec's `domains:`)."""
    if isinstance(domain, str):
        if domain not in named:
            raise DomainError("unknown domain {!r} (the spec's domains: {})".format(domain, ", ".join(sorted(named))))
        return list(named[domain])
    return list(domain)


def param_domains(spec: SpecLike, op: str) -> Dict[str, List[Any]]:
    """{param: [values]} for the op's parameters that declare a documented domain, in signature order."""
    entry = spec.ops[op]
    named = named_domains(spec)
    return {p["name"]: resolve(p["domain"], named) for p in entry.get("signature", []) if "domain" in p}


def config_domains(spec: SpecLike, op: str) -> Dict[str, List[Any]]:
    """{keras.json key: [values]} for the settings the op reads (`reads_config`)."""
    named = named_domains(spec)
    out: Dict[str, List[Any]] = {}
    for key in spec.ops[op].get("reads_config", []):
        out[key] = resolve(key, named) if key in named else [CONFIG_DEFAULTS[key]]
    return out


def all_domains(spec: SpecLike, op: str) -> Dict[str, List[Any]]:
    """Parameters first, then keras.json settings: every dimension of the op's documented space."""
    out = dict(param_domains(spec, op))
    out.update(config_domains(spec, op))
    return out


def settings(
    keras_config: Optional[Mapping[str, Any]] = None, override: Optional[Mapping[str, Any]] = None
) -> Dict[str, Any]:
    """The complete keras.json settings a case runs under: documented defaults, the case's own, then an override."""
    out = dict(CONFIG_DEFAULTS)
    out.update(keras_config or {})
    out.update(override or {})
    return out


def parse_override(items: Sequence[Any]) -> Dict[str, Any]:
    """`--keras-config KEY=VALUE` (repeatable) as settings; a DomainError (one line) for anything else."""
    out: Dict[str, Any] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in CONFIG_KEYS:
            raise DomainError(
                "--keras-config takes KEY=VALUE with KEY one of {} (got {!r})".format(", ".join(CONFIG_KEYS), item)
            )
        setting = vocabulary.SETTINGS[key]
        try:
            parsed: Any = setting.from_text(value)
        except ValueError:
            parsed = value
        if setting.check(parsed) is None:
            out[key] = parsed
        elif setting.choices is None:  # epsilon
            raise DomainError(f"--keras-config {key} takes a positive number (got {value!r})")
        else:
            raise DomainError(
                "--keras-config {} is one of {} (got {!r})".format(key, ", ".join(setting.choices), value)
            )
    return out


# ---------------------------------------------------------------- values: compare and name


def normal(value: Any, as_tuple_param: bool = False) -> Any:
    """A hashable form of a domain value or a kwarg, so that a case's value and a domain value compare equal.
    For a parameter documented as a tuple (`tuple: true`), a list and `{tuple: [...]}` are the same value."""
    if isinstance(value, dict) and set(value) == {"tuple"}:
        inner = normal(value["tuple"])
        return inner if as_tuple_param else ("tuple", inner)
    if isinstance(value, (list, tuple)):
        return ("list",) + tuple(normal(v) for v in value)
    if isinstance(value, bool):
        return ("bool", value)  # True == 1 in Python; as documented values they differ
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value) if isinstance(value, float) else value
    return repr(value)


def label(value: Any) -> str:
    """A value as it appears in a generated case id: none, true, 2x1, (0x2) for a tuple, -1, 0.001."""
    if isinstance(value, dict) and set(value) == {"tuple"}:
        return "({})".format(label(value["tuple"]))
    if value is None or isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "x".join(label(v) for v in value) or "empty"
    return str(value)


def literal(value: Any) -> Any:
    """A domain value as a kwarg literal (the tuple marker stays: binding.py passes it as a tuple)."""
    return value


# ---------------------------------------------------------------- rows: pairwise and full grids


def _allowed(row: Row, rules: Sequence[Mapping[str, Any]]) -> bool:
    for rule in rules:
        if _holds(rule["when"], row):
            return False
    return True


def _holds(expr: str, row: Row) -> bool:
    names = {k: _plain(v) for k, v in row.items()}
    names["fmt"] = effective_data_format(row, {k: row[k] for k in CONFIG_KEYS if k in row})
    try:
        return bool(shapes.evaluate(expr, names))
    except (shapes.ShapeExprError, TypeError, ValueError, IndexError, KeyError, ZeroDivisionError) as exc:
        raise DomainError(f"grid rule {expr!r} does not evaluate on {row}: {exc}")


def _plain(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"tuple"}:
        return list(value["tuple"])
    return value


def full_rows(domains: Domains, exclude: Sequence[Mapping[str, Any]] = ()) -> List[Row]:
    """Every allowed row of the grid, in product order."""
    names = list(domains)
    total = 1
    for values in domains.values():
        total *= max(len(values), 1)
    if total > MAX_GRID_ROWS:
        raise DomainError(f"the grid has {total:,} rows; kbtool enumerates at most {MAX_GRID_ROWS:,}")
    rows = [dict(zip(names, combo)) for combo in itertools.product(*[domains[n] for n in names])]
    return [row for row in rows if _allowed(row, exclude)]


def _pairs(row: Row, names: Sequence[str], tuple_params: Collection[str] = ()) -> Set[Pair]:
    keyed = [(n, normal(row[n], n in tuple_params)) for n in names]
    if len(keyed) == 1:
        return {(keyed[0],)}
    return {(a, b) for a, b in itertools.combinations(keyed, 2)}


def pairwise_rows(domains: Domains, exclude: Sequence[Mapping[str, Any]] = ()) -> List[Row]:
    """Greedy covering array of strength 2 over the allowed rows: every value, and every pair of values that some
    allowed row holds, appears in at least one chosen row. Deterministic (ties go to the earlier row)."""
    names = list(domains)
    candidates = full_rows(domains, exclude)
    covers = [_pairs(row, names) for row in candidates]
    uncovered: Set[Pair] = set().union(*covers) if covers else set()
    chosen: List[Row] = []
    while uncovered:
        best = max(range(len(candidates)), key=lambda i: (len(covers[i] & uncovered), -i))
        chosen.append(candidates[best])
        uncovered -= covers[best]
    return chosen


def required_pairs(
    domains: Domains, exclude: Sequence[Mapping[str, Any]] = (), tuple_params: Collection[str] = ()
) -> Tuple[Set[Pair], Set[Pair]]:
    """(required, impossible): the value pairs (single values for one dimension) the documented space holds, split
    into those some allowed row holds and those every row holding them is excluded. For a parameter documented as a
    tuple (`tuple_params`), a list and its tuple form are one value."""
    names = list(domains)
    everything: Set[Pair] = set()
    for row in full_rows(domains):
        everything |= _pairs(row, names, tuple_params)
    possible: Set[Pair] = set()
    for row in full_rows(domains, exclude):
        possible |= _pairs(row, names, tuple_params)
    return possible, everything - possible


# ---------------------------------------------------------------- grid → raw cases


def grid_rows(spec: SpecLike, op: str, mode: str = "pairwise") -> List[Row]:
    entry = spec.ops[op]
    grid = entry["grid"]
    domains: Domains = all_domains(spec, op)
    names = grid.get("params")
    if names:
        domains = {n: domains[n] for n in names if n in domains}
    exclude = grid.get("exclude", [])
    rows = full_rows(domains, exclude) if mode == "full" else pairwise_rows(domains, exclude)
    return rows


def case_id(row: Row) -> str:
    return GRID_PREFIX + ".".join(f"{k}={label(v)}" for k, v in row.items())


def effective_data_format(row_or_kwargs: Mapping[str, Any], keras_config: Optional[Mapping[str, Any]]) -> Any:
    data_format = row_or_kwargs.get("data_format")
    return data_format if data_format else settings(keras_config)["image_data_format"]


def _channels_first(shape: Sequence[Any]) -> List[Any]:
    return [shape[0], shape[-1]] + list(shape[1:-1])


def _move_channels(dims: Sequence[Any], to_format: str) -> List[Any]:
    """A shape moved between layouts: channels last → at axis 1, or back."""
    shape = list(dims)
    if to_format == "channels_first":
        return _channels_first(shape)
    return [shape[0]] + shape[2:] + [shape[1]]


def _moved_input(given: Mapping[str, Any], to_format: str) -> Dict[str, Any]:
    import numpy as np

    inp = dict(given)
    if "shape" in inp:
        rank = len(inp["shape"])
        inp["shape"] = _move_channels(inp["shape"], to_format)
    else:
        value = np.asarray(inp["value"])
        rank = value.ndim
        inp["value"] = (
            np.moveaxis(value, -1, 1) if to_format == "channels_first" else np.moveaxis(value, 1, -1)
        ).tolist()
    if "none_dims" in inp:  # the same dims stay unknown wherever they move to
        where = _move_channels(list(range(rank)), to_format)
        inp["none_dims"] = sorted(where.index(d) for d in inp["none_dims"])
    return inp


def follow_image_data_format(entry: Entry, raw: RawCase, to_format: str) -> RawCase:
    """A case written for one image_data_format, run under the other (--keras-config): where the op's data_format
    is left to keras.json (None), its data input (the first tensor parameter, rank 3 or more) moves to the layout
    keras.json now says, so the case asks the same question in the other layout. Other cases are unchanged."""
    params = entry.get("signature", [])
    if "image_data_format" not in entry.get("reads_config", []) or not any(p["name"] == "data_format" for p in params):
        return raw
    if (raw.get("kwargs") or {}).get("data_format") is not None or "args" in raw:
        return raw
    data = next((p["name"] for p in params if p.get("kind") == "tensor"), None)
    inputs = raw.get("inputs")
    key: Any  # the data input's parameter name, or its place in a list
    if isinstance(inputs, dict) and isinstance(inputs.get(data), dict):
        key = data
    elif isinstance(inputs, list) and inputs and isinstance(inputs[0], dict):
        key = 0
    else:
        return raw
    inp = inputs[key]
    rank = len(inp["shape"]) if "shape" in inp else len(__import__("numpy").asarray(inp["value"]).shape)
    if rank < 3:
        return raw
    moved: Any = dict(inputs) if isinstance(inputs, dict) else list(inputs)
    moved[key] = _moved_input(inp, to_format)
    return dict(raw, inputs=moved)


def grid_cases(spec: SpecLike, op: str, mode: str = "pairwise") -> List[RawCase]:
    """The raw cases (spec-case dicts, as if written in ops.yaml) of the op's grid."""
    entry = spec.ops[op]
    if "grid" not in entry:
        return []
    grid = entry["grid"]
    config_keys = set(config_domains(spec, op))
    out: List[Dict[str, Any]] = []
    for row in grid_rows(spec, op, mode):
        kwargs = {k: literal(v) for k, v in row.items() if k not in config_keys}
        keras_config = {k: v for k, v in row.items() if k in config_keys}
        fmt = effective_data_format(row, keras_config)
        inputs: Dict[str, Any] = {}
        for name, written in grid["inputs"].items():
            inp = dict(written)
            if inp.pop("layout", None) == "channels" and fmt == "channels_first":
                inp["shape"] = _channels_first(inp["shape"])
            inputs[name] = inp
        raw: RawCase = {"id": case_id(row), "inputs": inputs, "kwargs": {**grid.get("kwargs", {}), **kwargs}}
        if keras_config:
            raw["keras_config"] = keras_config
        for key in ("modes", "tolerance", "stats", "then", "then_only"):
            if key in grid:
                raw[key] = grid[key]
        for rule in grid.get("raises", []):
            if _holds(rule["when"], row):
                raw["raises"] = rule["type"]
                break
        out.append(raw)
    return out
