"""Every Hypothesis strategy of `kbtool explore`: drawn spec cases built on the op's own cases as templates.

A drawn case is a raw spec case (the dict a `cases:` item holds), so it binds, expands and runs exactly like a
case of `kbtool check`. Its inputs are literal `value:` arrays (exact to replay and to save), drawn within
bounds that follow the template's distribution, with edge values (zeros, ties, negatives) mixed in. Every
parameter is drawn from its documented domain and the values the op's cases pass; the template's own value comes
first, so a failure shrinks towards the template. Shapes vary where the op allows it: freely (any rank) for the
inputs an unconditional shape rule names (`shape: x`, elementwise ops), dimension by dimension for an op with a
single input; every other shape stays the template's (a conv kernel keeps matching its input's channels).
"""

import json
import math
import re
from typing import Any, Callable, Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Set, Tuple, Type, Union

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from kbtool.specs import domains
from kbtool.vocabulary import CASE_DEFAULTS as KERAS_DEFAULTS

_UNSET = object()  # a parameter the drawn case does not pass (its default applies)
# template features a drawn case cannot vary meaningfully: raw worker args, expected exceptions, statistics of
# random ops, gradients (central differences per draw), a backend's own name
SKIPPED_TEMPLATE_KEYS = ("args", "raises", "stats", "grad", "expect_backend_name")
NORMAL_BOUND = 10.0  # |x| for templates drawn from the normal distribution: ~10 standard deviations
POSITIVE_HIGH = 10.0  # `positive` templates reach at least this high (they stay above their low)
MAX_RANK, MAX_DIM = 4, 5  # shapes drawn for elementwise ops
EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -1.5)  # zeros, signs, exact halves (ties for round/argmax)
TIES = (-1.5, -0.5, 0.0, 0.5, 1.5, 2.5)  # what a template's `dist: ties` draws from (specs/cases.py)
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_WIDTHS: Dict[str, Literal[16, 32]] = {"float16": 16, "float32": 32}  # a float dtype's bits (other: 64)

RawCase = Dict[str, Any]  # a raw spec case, as a `cases:` item holds it
InputSpec = Dict[str, Any]  # one input of a raw case (shape, dtype, dist, value, ...)
Layout = Union[List[Any], Dict[str, Any]]  # a case's inputs: a list, or a mapping of parameter names
Shape = Tuple[int, ...]
Pools = Dict[str, Tuple[List[Any], Any]]  # {param: (values, default)}


def templates(cases: Sequence[RawCase]) -> List[RawCase]:
    """The cases a drawn case may start from."""
    return [raw for raw in cases if not any(raw.get(key) for key in SKIPPED_TEMPLATE_KEYS)]


def param_pools(
    entry: Mapping[str, Any], cases: Sequence[RawCase], domains: Optional[Mapping[str, Sequence[Any]]] = None
) -> Pools:
    """{param: (values, default)} for every non-tensor parameter: its documented domain and the values the op's
    cases pass where they expect no exception (each value once, in that order), and its default (_UNSET when it
    has none)."""
    pools: Pools = {}
    for param in entry.get("signature", []):
        name = param["name"]
        if name.startswith("*") or param.get("kind", "value") not in ("value", "step"):
            continue
        values = list((domains or {}).get(name, []))
        # a case that expects an exception passes a value the op refuses: no use drawing it elsewhere
        values += [raw["kwargs"][name] for raw in cases if name in (raw.get("kwargs") or {}) and not raw.get("raises")]
        default = param.get("default", _UNSET)
        if values:
            pools[name] = (_unique(values), default)
    return pools


def choices(own: Any, values: Sequence[Any], default: Any) -> List[Any]:
    """What a drawn case may pass: the template's own choice first (where shrinking goes), then every other
    value; not passing a parameter already means its default, so the default is not passed explicitly too."""
    skip = default if own is _UNSET else own
    return [own] + [v for v in values if skip is _UNSET or not _same(v, skip)]


def float_dtypes(cases: Sequence[RawCase]) -> List[str]:
    """The float dtypes the op's cases use: what a drawn case may switch its float inputs to."""
    found = [inp.get("dtype", "float32") for raw in cases for inp in _input_specs(raw)]
    return _unique([d for d in found if np.dtype(d).kind == "f"]) or ["float32"]


def free_shape_params(entry: Mapping[str, Any]) -> Set[str]:
    """Parameters an unconditional shape rule returns as they are (`shape: x`): their shape may be anything."""
    names = {p["name"] for p in entry.get("signature", [])}
    return {
        rule["shape"].strip()
        for rule in entry.get("shape_rules", [])
        if "when" not in rule
        and "let" not in rule
        and isinstance(rule.get("shape"), str)
        and rule["shape"].strip() in names
    }


def input_params(entry: Mapping[str, Any]) -> List[str]:
    """The tensor parameters a list of inputs binds to, in signature order (see specs/binding.py)."""
    return [p["name"] for p in entry.get("signature", []) if p.get("kind") in ("tensor", "tensors", "array")]


def case_strategy(
    op: str,
    entry: Mapping[str, Any],
    cases: Optional[Sequence[RawCase]] = None,
    domains: Optional[Mapping[str, Sequence[Any]]] = None,
    config_domains: Optional[Mapping[str, Iterable[Any]]] = None,
) -> Optional[st.SearchStrategy[RawCase]]:
    """Drawn raw spec cases of `op`, built on `cases` (default: the entry's own); None when no case can start one."""
    cases = entry.get("cases", []) if cases is None else cases
    usable = templates(cases)
    if not usable:
        return None
    pools = param_pools(entry, cases, domains)
    dtypes = float_dtypes(cases)
    free = free_shape_params(entry)
    order = input_params(entry)
    configs = {key: _unique(list(values)) for key, values in (config_domains or {}).items() if values}
    return st.sampled_from(usable).flatmap(lambda template: _drawn_case(template, pools, dtypes, free, order, configs))


@st.composite
def _drawn_case(
    draw: st.DrawFn,
    template: RawCase,
    pools: Pools,
    dtypes: List[str],
    free: Set[str],
    order: List[str],
    configs: Dict[str, List[Any]],
) -> RawCase:
    raw = {key: value for key, value in template.items() if key not in ("id", "about", "inputs", "kwargs")}
    kwargs = dict(template.get("kwargs") or {})
    for name, (values, default) in pools.items():
        value = draw(st.sampled_from(choices(kwargs.get(name, _UNSET), values, default)))
        if value is _UNSET:
            kwargs.pop(name, None)
        else:
            kwargs[name] = value
    own_kwargs = template.get("kwargs") or {}
    parts = [
        "{}={}".format(name, id_text(kwargs[name]) if name in kwargs else "default")
        for name in _unique(list(kwargs) + list(own_kwargs))
        if name not in kwargs or name not in own_kwargs or not _same(kwargs[name], own_kwargs[name])
    ]
    shape_parts: List[str] = []  # what the parameters do not say: the float dtype, the shapes
    float_dtype = None
    if any(np.dtype(inp.get("dtype", "float32")).kind == "f" for inp in _input_specs(template)):
        own = _first_float_dtype(template)
        float_dtype = draw(st.sampled_from([own] + [d for d in dtypes if d != own]))
        if float_dtype != own:
            shape_parts.append("dtype=" + float_dtype)
    inputs, varied = draw(_drawn_inputs(template, free, order, float_dtype))
    if varied:
        shape_parts.append("shape=" + "-".join(_unique([id_text(shape) for shape in varied])))
    if kwargs:
        raw["kwargs"] = kwargs
    raw["inputs"] = inputs
    config = dict(template.get("keras_config") or {})
    for key, values in configs.items():
        own = config.get(key, _UNSET)
        value = draw(st.sampled_from(choices(own, values, KERAS_DEFAULTS.get(key, _UNSET))))
        if value is not _UNSET:
            config[key] = value
        if value is not own:
            parts.append("{}={}".format(key, id_text(value) if value is not _UNSET else "default"))
    if config:
        raw["keras_config"] = config
    if template["id"].startswith(domains.GRID_PREFIX):  # named as the grid names its rows
        row = dict(kwargs, **config)
        named = sorted((template["id"].find(f".{k}="), k) for k in row if f".{k}=" in template["id"])
        raw["id"] = case_id(domains.case_id({k: row[k] for _, k in named}), shape_parts)
    else:
        raw["id"] = case_id(template["id"], parts + shape_parts)
    return raw


@st.composite
def _drawn_inputs(
    draw: st.DrawFn, template: RawCase, free: Set[str], order: List[str], float_dtype: Optional[str]
) -> Tuple[Layout, List[Shape]]:
    """(the template's inputs with drawn values, the shapes that were varied) in the template's layout."""
    layout = template.get("inputs") or []
    specs = _input_specs(template)
    shapes = [_shape_of(inp) for inp in specs]
    new_shapes: List[Shape] = list(shapes)
    free_specs = _free_specs(layout, free, order)
    if free_specs:  # inputs with the shape of the one the rule returns share one drawn shape
        anchor = shapes[specs.index(free_specs[0])]
        if all(d > 0 for d in anchor):
            drawn = tuple(
                draw(
                    st.one_of(
                        st.just(anchor), hnp.array_shapes(min_dims=1, max_dims=MAX_RANK, min_side=1, max_side=MAX_DIM)
                    )
                )
            )
            new_shapes = [drawn if shape == anchor else shape for shape in shapes]
    elif len(specs) == 1 and shapes[0] and all(d > 0 for d in shapes[0]):
        same_rank = st.tuples(*[st.integers(1, MAX_DIM) for _ in shapes[0]])
        new_shapes = [tuple(draw(st.one_of(st.just(shapes[0]), same_rank)))]
    arrays: List[InputSpec] = []
    for inp, old, new in zip(specs, shapes, new_shapes):
        arrays.append(draw(_drawn_input(inp, old, new, float_dtype)))
    varied = [new for old, new in zip(shapes, new_shapes) if new != old]
    return _relayout(layout, arrays), varied


def _drawn_input(
    inp: InputSpec, old_shape: Shape, shape: Shape, float_dtype: Optional[str]
) -> st.SearchStrategy[InputSpec]:
    """One input spec with drawn literal values (an empty array keeps its shape: a literal cannot say it)."""
    dtype = inp.get("dtype", "float32")
    if np.dtype(dtype).kind == "f" and float_dtype:
        dtype = float_dtype
    kept = {key: inp[key] for key in ("as",) if key in inp}
    if inp.get("none_dims"):
        dims = [d for d in inp["none_dims"] if d < len(shape)] if shape != old_shape else inp["none_dims"]
        if dims:
            kept["none_dims"] = dims
    if 0 in shape:
        return st.just(dict(kept, shape=list(shape), dtype=dtype))
    if "fill" in inp or ("value" in inp and np.dtype(dtype).kind in "iub" and shape == old_shape):
        # a constant (ones, a mask) or literal integers (indices, class ids): what they say is the point
        value = np.full(shape, inp["fill"], dtype=dtype) if "fill" in inp else np.array(inp["value"], dtype=dtype)
        return st.just(dict(kept, value=value.tolist(), dtype=dtype))
    array = hnp.arrays(np.dtype(dtype), tuple(shape), elements=elements(inp, dtype))
    return array.map(lambda a: dict(kept, value=a.tolist(), dtype=dtype))


def elements(inp: InputSpec, dtype: str) -> st.SearchStrategy[Any]:
    """Values for one array of the template's input `inp`, drawn as `dtype`."""
    kind = np.dtype(dtype).kind
    if kind == "b":
        return st.booleans()
    if kind in "iu":
        if "value" in inp:
            values = np.array(inp["value"]).ravel()
            low, high = int(values.min()), int(values.max()) + 1
        else:
            low, high = int(inp.get("low", 0)), int(inp.get("high", 5))
        info = np.iinfo(dtype)
        return st.integers(max(low, info.min), min(high - 1, info.max))
    if inp.get("dist") == "ties":
        return st.sampled_from(TIES)
    return _float_elements(inp, dtype)


def _float_elements(inp: InputSpec, dtype: str) -> st.SearchStrategy[float]:
    """Floats within the template's bounds as `dtype` can hold them, with the edge values among them first."""
    low, high = float_bounds(inp)
    width: Literal[16, 32, 64] = _WIDTHS.get(np.dtype(dtype).name, 64)
    low, high = _representable(low, width, math.floor), _representable(high, width, math.ceil)
    edges = [e for e in EDGES + (low, high) if low <= e <= high]
    floats = st.floats(low, high, width=width, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    return st.one_of(st.sampled_from(_unique(edges)), floats) if edges else floats


def float_bounds(inp: InputSpec) -> Tuple[float, float]:
    """[low, high] for a float input: the template's distribution, widened where that keeps its meaning."""
    dist = inp.get("dist", "normal")
    if "value" in inp:
        values = np.array(inp["value"], dtype="float64").ravel()
        low, high = float(values.min()), float(values.max())
        if low >= 0:  # non-negative literals (a log's or sqrt's domain) stay non-negative
            return low, max(high, NORMAL_BOUND)
        return min(low, -NORMAL_BOUND), max(high, NORMAL_BOUND)
    if dist == "uniform":
        return float(inp.get("low", -1.0)), float(inp.get("high", 1.0))
    if dist == "positive":
        low = float(inp.get("low", 0.1))
        return low, max(float(inp.get("high", 2.0)), POSITIVE_HIGH)
    return -NORMAL_BOUND, NORMAL_BOUND  # normal, arange


def _representable(bound: float, width: int, towards: Callable[[float], int]) -> float:
    """`bound` as a float of `width` bits, rounded inwards past the dtype's finite range."""
    types: Dict[int, Type[np.floating[Any]]] = {16: np.float16, 32: np.float32}
    dtype = types.get(width, np.float64)
    limit = float(np.finfo(dtype).max)
    bound = max(-limit, min(limit, bound))
    value = float(dtype(bound))
    if (towards is math.floor and value < bound) or (towards is math.ceil and value > bound):
        value = float(np.nextafter(dtype(value), dtype(-math.inf if towards is math.ceil else math.inf)))
    return value


def case_id(template_id: str, parts: List[str]) -> str:
    """`<template id>.<param>=<value>...` for what differs from the template (parameters, float dtype, shapes,
    keras.json settings; `default` where the template's value was dropped), values written as the generated grid
    cases write them: known differences and `--case` globs match it, and a draw that differs from its template only
    in values keeps the template's id. (`--save` makes it a valid spec-case id.)"""
    return ".".join([template_id] + parts)


def id_text(value: Any) -> str:
    if isinstance(value, dict) and set(value) != {"tuple"}:  # a {step: name} literal
        return "_".join(f"{k}_{id_text(v)}" for k, v in value.items())
    label: str = domains.label(value)
    return label


def spec_case_id(drawn_id: str) -> str:
    """A drawn case's id as a spec case may spell it (`=`, parentheses and the like become `_`)."""
    return _ID_UNSAFE.sub("_", drawn_id)


def _first_float_dtype(raw: RawCase) -> str:
    dtype: str = next(
        inp.get("dtype", "float32") for inp in _input_specs(raw) if np.dtype(inp.get("dtype", "float32")).kind == "f"
    )
    return dtype


def _input_specs(raw: RawCase) -> List[InputSpec]:
    inputs = raw.get("inputs") or []
    if isinstance(inputs, dict):
        return [inp for value in inputs.values() for inp in (value if isinstance(value, list) else [value])]
    return list(inputs)


def _free_specs(layout: Layout, free: Set[str], order: List[str]) -> List[InputSpec]:
    """The input specs bound to a parameter that a shape rule returns unchanged."""
    if isinstance(layout, dict):
        return [v for name, v in layout.items() if name in free and isinstance(v, dict)]
    return [inp for i, inp in enumerate(layout) if i < len(order) and order[i] in free]


def _relayout(layout: Layout, arrays: List[InputSpec]) -> Layout:
    """The drawn input specs, in the template's list or mapping layout."""
    items = iter(arrays)
    if isinstance(layout, dict):
        return {
            name: ([next(items) for _ in value] if isinstance(value, list) else next(items))
            for name, value in layout.items()
        }
    return [next(items) for _ in layout]


def _shape_of(inp: InputSpec) -> Shape:
    return tuple(np.shape(inp["value"])) if "value" in inp else tuple(inp["shape"])


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=repr)


def _same(a: Any, b: Any) -> bool:
    return _key(a) == _key(b)


def _unique(values: Iterable[Any]) -> List[Any]:
    seen: Set[str] = set()
    out: List[Any] = []
    for value in values:
        if _key(value) not in seen:
            seen.add(_key(value))
            out.append(value)
    return out
