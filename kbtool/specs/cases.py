"""Expand spec entries into concrete, seeded cases that a worker can run."""
import zlib
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

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


def _bind(entry, inputs, kwargs, arrays, shape_names):
    """Map inputs (to tensor params, in order) and kwargs (to value params) onto the signature."""
    args, kw, positional = [], {}, True
    pending = list(enumerate(inputs))
    for param in entry["signature"]:
        name, kind = param["name"], param.get("kind", "value")
        spec = None
        if kind in ("tensor", "array") and pending:
            index, inp = pending.pop(0)
            spec = _arg_for(inp, index, arrays, kind)
            if param.get("weight") and "tensor" in spec:
                spec["weight"] = True
            shape_names[name] = list(arrays[index].shape)
        elif kind == "tensors" and pending:
            spec = {"list": [_arg_for(inp, i, arrays, "tensor") for i, inp in pending]}
            shape_names[name] = [list(arrays[i].shape) for i, _ in pending]
            pending = []
        elif name in kwargs:
            value = kwargs[name]
            if isinstance(value, dict) and "step" in value:
                spec = {"step": value["step"]}
            elif param.get("tuple") and isinstance(value, list):
                spec = {"tuple": value}
            else:
                spec = {"value": value}
        if spec is None:
            positional = False
            shape_names.setdefault(name, param.get("default"))
            continue
        if kind == "value":
            shape_names[name] = kwargs[name]
        if positional:
            args.append(spec)
        else:
            kw[name] = spec
    if any(p["name"].startswith("**") for p in entry["signature"]):
        names = {p["name"] for p in entry["signature"]}
        for name, value in kwargs.items():
            if name not in names:
                kw[name] = {"value": value}
    return args, kw


def _arg_for(inp, index, arrays, kind):
    how = inp.get("as", "array" if kind == "array" else "tensor")
    if how == "tensor":
        spec = {"tensor": index}
        if inp.get("none_dims"):
            spec["ph_shape"] = [None if d in inp["none_dims"] else s for d, s in enumerate(arrays[index].shape)]
        return spec
    return {how: index}


def _then_arg(value):
    """A literal, or {result: k}: the result of the case's call k (0 is the op's own)."""
    return value if isinstance(value, dict) and set(value) == {"result"} else {"value": value}


def expand_case(op, entry, raw, seed, case_id=None, shown=()):
    case_id = case_id or raw["id"]
    inputs = raw.get("inputs", [])
    arrays = [make_array(inp, _rng(seed, op, case_id, i)) for i, inp in enumerate(inputs)]
    shape_names = {}
    args, kwargs = _bind(entry, inputs, raw.get("kwargs", {}), arrays, shape_names)
    if "args" in raw:  # explicit worker ARG specs (nested lists, a tensor used twice)
        args = raw["args"]
    grad = raw.get("grad", False)
    # gradients: compared with central differences, so float32 analytic gradients get a looser bound
    tolerance = dict(GRAD_TOLERANCE if grad else entry.get("tolerance", {}))
    tolerance.update(raw.get("tolerance", {}))
    # K.gradients needs a graph (TensorFlow refuses it under eager execution)
    modes = raw.get("modes", ["symbolic"] if grad else DEFAULT_MODES)
    return Case(op=op, id=case_id, arrays=arrays, args=args, kwargs=kwargs,
                modes=list(modes), raises=raw.get("raises"), match=raw.get("match"),
                tolerance=tolerance, stats=raw.get("stats"), grad=grad, observe=raw.get("observe", False),
                then=[{"op": c["op"], "args": [_then_arg(a) for a in c.get("args", [])]} for c in raw.get("then", [])],
                then_only=raw.get("then_only", False), expect_backend_name=raw.get("expect_backend_name", False),
                shape_names=shape_names, shown=list(shown), about=raw.get("about", ""))


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
