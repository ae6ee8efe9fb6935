"""Expand spec entries into concrete, seeded cases that a worker can run (binding: binding.py)."""
import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from . import binding

DEFAULT_MODES = ("eager", "symbolic")
GRAD_TOLERANCE = {"float32": {"rtol": 2e-3, "atol": 2e-3}, "float64": {"rtol": 1e-6, "atol": 1e-6}}


@dataclass
class Case:
    op: str
    id: str  # unique within the op: the case id, or "example:<id>" for documented examples
    arrays: List[np.ndarray]
    args: List[dict]
    kwargs: Dict[str, dict]
    modes: List[str]
    raises: Optional[str] = None
    match: Optional[str] = None
    tolerance: Dict[str, dict] = field(default_factory=dict)
    stats: Optional[dict] = None
    grad: bool = False
    observe: bool = False
    then: List[dict] = field(default_factory=list)
    then_only: bool = False  # only the then-calls' results are compared (the op's own has no value)
    expect_backend_name: bool = False  # the result is the name of the backend under test (K.backend())
    shape_names: Dict[str, Any] = field(default_factory=dict)  # what shape rules see
    shown: List[dict] = field(default_factory=list)  # what the docs show, for examples
    about: str = ""
    # array indices the worker builds as tensors, in its order (the reference's gradients are w.r.t. these)
    tensor_indices: List[int] = field(default_factory=list)

    def request(self, mode):
        request = {"cmd": "run", "op": self.op, "mode": mode, "args": self.args, "kwargs": self.kwargs,
                   "grad": self.grad, "observe": self.observe, "then": self.then, "then_only": self.then_only}
        if self.stats and self.stats.get("reproducible"):
            request["repeat"] = 2  # the same seeded call twice: a reproducible op draws the same values
        return request


def _rng(seed, op, case_id, index):
    return np.random.default_rng(zlib.crc32("{}:{}:{}:{}".format(seed, op, case_id, index).encode()))


def make_array(spec, rng):
    dtype = spec.get("dtype", "float32")
    if "value" in spec:
        return np.array(spec["value"], dtype=dtype)
    shape = tuple(spec["shape"])
    if "fill" in spec:
        return np.full(shape, spec["fill"], dtype=dtype)
    dist = spec.get("dist", "randint" if np.dtype(dtype).kind in "iub" else "normal")
    low, high = spec.get("low"), spec.get("high")
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


def _then_arg(value):
    """A literal, or {result: k}: the result of the case's call k (0 is the op's own)."""
    return value if isinstance(value, dict) and set(value) == {"result"} else {"value": value}


def expand_case(op, entry, raw, seed, case_id=None, shown=()):
    case_id = case_id or raw["id"]
    bound = binding.bind(op, entry, raw)  # raises BindingError; `kbtool spec validate` reports them all
    arrays = [make_array(inp, _rng(seed, op, case_id, i)) for i, inp in enumerate(bound.inputs)]
    grad = raw.get("grad", False)
    # gradients: compared with central differences, so float32 analytic gradients get a looser bound
    tolerance = dict(GRAD_TOLERANCE if grad else entry.get("tolerance", {}))
    tolerance.update(raw.get("tolerance", {}))
    # K.gradients needs a graph (TensorFlow refuses it under eager execution)
    modes = raw.get("modes", ["symbolic"] if grad else DEFAULT_MODES)
    return Case(op=op, id=case_id, arrays=arrays, args=bound.args, kwargs=bound.kwargs,
                modes=list(modes), raises=raw.get("raises"), match=raw.get("match"),
                tolerance=tolerance, stats=raw.get("stats"), grad=grad, observe=raw.get("observe", False),
                then=[{"op": c["op"], "args": [_then_arg(a) for a in c.get("args", [])]} for c in raw.get("then", [])],
                then_only=raw.get("then_only", False), expect_backend_name=raw.get("expect_backend_name", False),
                shape_names=bound.shape_names, shown=list(shown), about=raw.get("about", ""),
                tensor_indices=bound.tensor_indices)


def case_ids(spec, op):
    """The ids cases_for gives, without drawing any array."""
    entry = spec.ops[op]
    return ([raw["id"] for raw in entry.get("cases", [])]
            + ["example:" + example["id"] for example in entry.get("examples", []) if "case" in example])


def cases_for(spec, op, seed=0, include_examples=True):
    entry = spec.ops[op]
    out = [expand_case(op, entry, raw, seed) for raw in entry.get("cases", [])]
    if include_examples:
        for example in entry.get("examples", []):
            if "case" in example:
                raw = dict(example["case"], id=example["id"])
                out.append(expand_case(op, entry, raw, seed, case_id="example:" + example["id"],
                                       shown=example.get("shown", [])))
    return out
