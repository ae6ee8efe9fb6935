"""Expand spec entries into concrete, seeded cases that a worker can run (binding: binding.py)."""

import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

from kbtool.specs import binding, domains
from kbtool.specs.records import ArgSpec, Entry, InputSpec, RawCase
from kbtool.vocabulary import CASE_DEFAULTS, MODES

if TYPE_CHECKING:
    from kbtool.specs.loader import Spec

DEFAULT_MODES = MODES


@dataclass
class Case:
    op: str
    id: str  # unique within the op: the case id, or "example:<id>" for documented examples
    arrays: List[NDArray[Any]]
    args: List[ArgSpec]
    kwargs: Dict[str, ArgSpec]
    modes: List[str]
    raises: Optional[str] = None
    match: Optional[str] = None
    tolerance: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # the spec's overrides (tolerances.py)
    stats: Optional[Dict[str, Any]] = None
    grad: bool = False
    observe: bool = False
    then: List[Dict[str, Any]] = field(default_factory=list)
    then_only: bool = False  # only the then-calls' results are compared (the op's own has no value)
    expect_backend_name: bool = False  # the result is the name of the backend under test (K.backend())
    shape_names: Dict[str, Any] = field(default_factory=dict)  # what shape rules see
    # tensor parameters whose symbolic-mode static shape has unknown (None) dims: that shape, by parameter name
    static_names: Dict[str, Any] = field(default_factory=dict)
    shown: List[Dict[str, Any]] = field(default_factory=list)  # what the docs show, for examples
    about: str = ""
    # array indices the worker builds as tensors, in its order (the reference's gradients are w.r.t. these)
    tensor_indices: List[int] = field(default_factory=list)
    # the keras.json settings the case runs under (complete: documented defaults, the case's own, an override)
    keras_config: Dict[str, Any] = field(default_factory=lambda: dict(CASE_DEFAULTS))
    keras_override: Dict[str, Any] = field(default_factory=dict)  # the --keras-config part of keras_config
    grid: str = "pairwise"  # how its op's grid was expanded (a repro of a full-grid case says --grid full)
    variant_of: Optional[str] = None  # a backend's variant of a case (same call, transformed input): its case id
    # a stats case of an op that takes a seed: {"index": its position in args, or None where passed as a keyword}
    seed_arg: Optional[Dict[str, Any]] = None
    params: List[str] = field(default_factory=list)  # the op's parameter names, in order (what call.py names args by)

    def random_plan(self) -> Dict[str, Any]:
        """How a stats case draws: the call `repeat` times, then once with the seed `reseed` (None: not).

        A seeded call is drawn twice where `reproducible` (the same values) and once more with seed + 1 (other
        values); an unseeded call three times (not all the same values)."""
        reproducible = bool(self.stats and self.stats.get("reproducible"))
        seed = self.shape_names.get("seed") if self.seed_arg is not None else None
        if self.seed_arg is None or not isinstance(seed, (int, type(None))) or isinstance(seed, bool):
            return {"repeat": 2 if reproducible else 1, "seed": None, "reseed": None}
        if seed is None:
            return {"repeat": 3, "seed": None, "reseed": None}
        return {"repeat": 2 if reproducible else 1, "seed": seed, "reseed": seed + 1}

    def request(self, mode: str) -> Dict[str, Any]:
        request: Dict[str, Any] = {
            "cmd": "run",
            "op": self.op,
            "mode": mode,
            "args": self.args,
            "kwargs": self.kwargs,
            "grad": self.grad,
            "observe": self.observe,
            "then": self.then,
            "then_only": self.then_only,
        }
        if self.stats:
            plan = self.random_plan()
            if plan["repeat"] > 1:
                request["repeat"] = plan["repeat"]
            if plan["reseed"] is not None and self.seed_arg is not None:
                request["reseed"] = {"index": self.seed_arg["index"], "value": plan["reseed"]}
        return request


def _rng(seed: int, op: str, case_id: str, index: int) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{seed}:{op}:{case_id}:{index}".encode()))


def make_array(spec: InputSpec, rng: np.random.Generator, floatx: str = "float32") -> NDArray[Any]:
    """One input's array; an input with no dtype is floatx (as K.variable and K.placeholder make it)."""
    dtype = spec.get("dtype", floatx)
    if "value" in spec:
        return np.array(spec["value"], dtype=dtype)
    shape = tuple(spec["shape"])
    if "fill" in spec:
        return np.full(shape, spec["fill"], dtype=dtype)
    dist = spec.get("dist", "randint" if np.dtype(dtype).kind in "iub" else "normal")
    low, high = spec.get("low"), spec.get("high")
    values: NDArray[Any]
    if dist == "normal":
        values = rng.standard_normal(shape)
    elif dist == "uniform":
        values = rng.uniform(-1.0 if low is None else low, 1.0 if high is None else high, shape)
    elif dist == "positive":
        values = rng.uniform(0.1 if low is None else low, 2.0 if high is None else high, shape)
    elif dist == "randint":
        values = rng.integers(0 if low is None else int(low), 5 if high is None else int(high), shape)
    elif dist == "ties":
        # repeated values and exact halves: where argmax/round/sort-like ops disagree
        values = rng.choice(np.array([-1.5, -0.5, 0.0, 0.5, 1.5, 2.5]), size=shape)
    else:  # arange
        values = np.arange(int(np.prod(shape))).reshape(shape)
    return np.asarray(values).astype(dtype)


def _then_arg(value: Any) -> Dict[str, Any]:
    """A literal, or {result: k}: the result of the case's call k (0 is the op's own)."""
    return value if isinstance(value, dict) and set(value) == {"result"} else {"value": value}


def expand_case(
    op: str,
    entry: Entry,
    raw: RawCase,
    seed: int,
    case_id: Optional[str] = None,
    shown: Sequence[Dict[str, Any]] = (),
    keras_config: Optional[Mapping[str, Any]] = None,
) -> Case:
    """A raw spec case as a runnable Case; `keras_config` (a --keras-config override) wins over the case's own."""
    case_id = case_id or raw["id"]
    config = domains.settings(raw.get("keras_config"), keras_config)
    if keras_config:
        own = domains.settings(raw.get("keras_config"))["image_data_format"]
        if own != config["image_data_format"]:
            raw = domains.follow_image_data_format(entry, raw, config["image_data_format"])
        raw = dict(raw, keras_config={k: v for k, v in config.items() if v != CASE_DEFAULTS[k]})
    bound = binding.bind(op, entry, raw)  # raises BindingError; `kbtool spec validate` reports them all
    arrays = [make_array(inp, _rng(seed, op, case_id, i), config["floatx"]) for i, inp in enumerate(bound.inputs)]
    grad = raw.get("grad", False)
    # the spec's own overrides; a gradient case's start from verdicts' GRAD_TOLERANCE instead of the entry's
    # (tolerances.case_overrides): compared with central differences, float32 analytic gradients need a looser bound
    tolerance = dict({} if grad else entry.get("tolerance", {}))
    tolerance.update(raw.get("tolerance", {}))
    modes = modes_of(raw)
    return Case(
        op=op,
        id=case_id,
        arrays=arrays,
        args=bound.args,
        kwargs=bound.kwargs,
        modes=list(modes),
        raises=raw.get("raises"),
        match=raw.get("match"),
        tolerance=tolerance,
        stats=raw.get("stats"),
        grad=grad,
        observe=raw.get("observe", False),
        then=[{"op": c["op"], "args": [_then_arg(a) for a in c.get("args", [])]} for c in raw.get("then", [])],
        then_only=raw.get("then_only", False),
        expect_backend_name=raw.get("expect_backend_name", False),
        shape_names=bound.shape_names,
        static_names=bound.static_names,
        shown=list(shown),
        about=raw.get("about", ""),
        tensor_indices=bound.tensor_indices,
        keras_config=config,
        keras_override=dict(keras_config or {}),
        seed_arg=_seed_arg(entry, bound) if raw.get("stats") else None,
        params=[p["name"] for p in entry.get("signature", []) if not p["name"].startswith("*")],
    )


def _seed_arg(entry: Entry, bound: binding.Binding) -> Optional[Dict[str, Any]]:
    """Where the call passes `seed`: {"index": i} positionally, {"index": None} as a keyword or not at all."""
    names = [p["name"] for p in entry.get("signature", [])]
    if "seed" not in names:
        return None
    index = names.index("seed")
    if "seed" not in bound.kwargs and index < len(bound.args):
        return {"index": index}
    return {"index": None}


def modes_of(raw: Mapping[str, Any]) -> List[str]:
    """The modes a raw case runs in: its own `modes`, else symbolic for a gradient case (K.gradients needs a graph;
    TensorFlow refuses it under eager execution), else every mode."""
    return list(raw.get("modes", ["symbolic"] if raw.get("grad", False) else DEFAULT_MODES))


def raw_cases(spec: domains.SpecLike, op: str, grid: str = "pairwise") -> List[RawCase]:
    """The op's spec cases, then the cases generated from its grid (kbtool/specs/domains.py)."""
    return list(spec.ops[op].get("cases", [])) + domains.grid_cases(spec, op, grid)


def case_ids(spec: domains.SpecLike, op: str, grid: str = "pairwise") -> List[str]:
    """The ids cases_for gives, without drawing any array."""
    entry = spec.ops[op]
    return [raw["id"] for raw in raw_cases(spec, op, grid)] + [
        "example:" + example["id"] for example in entry.get("examples", []) if "case" in example
    ]


def cases_for(
    spec: "Spec",
    op: str,
    seed: int = 0,
    include_examples: bool = True,
    grid: str = "pairwise",
    keras_config: Optional[Mapping[str, Any]] = None,
) -> List[Case]:
    entry = spec.ops[op]
    out = [expand_case(op, entry, raw, seed, keras_config=keras_config) for raw in raw_cases(spec, op, grid)]
    for case in out:
        case.grid = grid
    if include_examples:
        for example in entry.get("examples", []):
            if "case" in example:
                raw = dict(example["case"], id=example["id"])
                out.append(
                    expand_case(
                        op,
                        entry,
                        raw,
                        seed,
                        case_id="example:" + example["id"],
                        shown=example.get("shown", []),
                        keras_config=keras_config,
                    )
                )
    return out
