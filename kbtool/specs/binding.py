"""Bind a spec case's inputs and kwargs to the op's signature: the one place that writes worker ARG specs.

A case names what it passes by parameter; the worker's wire format (the ARG specs documented in
kbtool/runners/worker/invoke.py) is produced here and nowhere in the spec:

- `inputs` as a list binds in signature order to the params of kind tensor/tensors/array (a `tensors`
  param takes all remaining inputs); as a mapping, each key names any parameter and its value is an
  input spec, or a list of input specs (passed as a Python list of tensors).
- `kwargs` give the remaining parameters as literals; a `step` parameter takes a step function's bare
  name (`fn: add`; `{step: add}` is accepted too, and is how a callable goes to a non-step parameter).
- Params given are passed positionally up to the first one that is not given, then as keywords.
- Array indices (which seed the random draws) follow the inputs' order of appearance, lists flattened.
- A raw `args:` list (worker ARG specs) is the escape hatch for what a signature cannot express (nested
  lists, one tensor named twice, `{call: ...}`); the inputs are then a plain list of arrays, and kwargs
  may only give parameters after those the raw args cover.

Every problem is a BindingError carrying its path within the case; `kbtool spec validate` reports them.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List

import numpy as np

from ..runners.worker import steps

_INPUT_KINDS = ("tensor", "tensors", "array")


class BindingError(ValueError):
    """A case that does not bind to its op's signature; `path` is the key path within the case."""

    def __init__(self, path, message):
        self.path = list(path)
        self.message = message
        super().__init__("{}: {}".format(dotted(self.path), message))


@dataclass
class Binding:
    inputs: List[dict]  # the input specs in array-index order (make_array draws array i from inputs[i])
    args: List[dict]  # worker ARG specs
    kwargs: Dict[str, dict]
    tensor_indices: List[int]  # arrays the worker builds as tensors, in the order it builds them
    shape_names: Dict[str, Any] = field(default_factory=dict)  # what shape rules see: shapes and kwargs


def dotted(path):
    out = ""
    for key in path:
        out += "[{}]".format(key) if isinstance(key, int) else ("." if out else "") + str(key)
    return out


def bind(op, entry, raw):
    """The case `raw` bound to `entry`'s signature; raises the first BindingError found."""
    binding, found = _Binder(op, entry, raw).run()
    if found:
        raise found[0]
    return binding


def problems(op, entry, raw):
    """Every BindingError of the case (binding and input specs), without drawing any array."""
    return _Binder(op, entry, raw).run()[1]


def tensor_indices(args, kwargs):
    """Array indices the worker builds as tensors, in its order: args left to right, then kwargs,
    recursing into lists and {call: ...} arguments; an index named twice is one tensor (built once)."""
    found = []

    def walk(spec):
        if not isinstance(spec, dict):
            return
        if "tensor" in spec:
            if spec["tensor"] not in found:
                found.append(spec["tensor"])
            return
        for item in spec.get("list", []):
            walk(item)
        if "call" in spec:
            for item in spec.get("args", []):
                walk(item)
            for item in spec.get("kwargs", {}).values():
                walk(item)

    for spec in list(args) + list(kwargs.values()):
        walk(spec)
    return found


def input_problems(inp, path):
    """Problems of one input spec that would otherwise only show when its array is drawn."""
    found = []
    dtype = inp.get("dtype", "float32")
    if "value" in inp:
        problem = _value_problem(inp["value"], dtype)
        if problem:
            found.append(BindingError(path + ["value"], "value {!r} is not a {} array: {}".format(
                inp["value"], dtype, problem)))
        return found
    if "fill" in inp:
        return found
    dist = inp.get("dist", "randint" if np.dtype(dtype).kind in "iub" else "normal")
    if dist == "randint":
        low = int(inp["low"]) if "low" in inp else 0
        high = int(inp["high"]) if "high" in inp else 5
        if low >= high:
            where = "low" if "low" in inp else "high"
            found.append(BindingError(path + [where], "randint needs low < high, got low {} and high {}{}".format(
                low, high, "" if "low" in inp and "high" in inp else " (defaults: low 0, high 5)")))
    return found


def _value_problem(value, dtype):
    try:
        plain = np.array(value)
        if np.dtype(dtype).kind in "iu" and plain.dtype.kind in "iuf" and plain.size:
            # NumPy 1.x wraps out-of-range integers silently (2.x raises): the same answer on both
            info = np.iinfo(dtype)
            if plain.min() < info.min or plain.max() > info.max:
                return "out of range ({} to {})".format(info.min, info.max)
        np.array(value, dtype=dtype)
    except (ValueError, TypeError, OverflowError) as exc:
        return str(exc)
    return None


def _shape(inp, path):
    if "value" in inp:  # converted by input_problems first: not ragged
        return list(np.shape(inp["value"]))
    return list(inp["shape"])


def _step_problem(name, path):
    if not isinstance(name, str) or name not in steps.STEPS:
        return BindingError(path, "unknown step {!r} (known: {})".format(name, ", ".join(sorted(steps.STEPS))))
    return None


class _Binder(object):
    def __init__(self, op, entry, raw):
        self.op, self.raw = op, raw
        signature = entry.get("signature", [])
        self.params = [p for p in signature if not p["name"].startswith("*")]
        self.by_name = dict((p["name"], p) for p in self.params)
        self.var_kw = any(p["name"].startswith("**") for p in signature)
        self.found = []
        self.inputs = []  # input specs in index order

    def problem(self, path, message):
        self.found.append(BindingError(path, message))

    def not_a_param(self, name, path):
        self.problem(path, "{!r} is not a parameter of {} ({})".format(
            name, self.op, ", ".join(p["name"] for p in self.params) or "no parameters"))

    def add_input(self, inp, path):
        """Registers one input spec; returns (its array index, its shape or None if unknown)."""
        index = len(self.inputs)
        self.inputs.append(inp)
        found = input_problems(inp, path)
        self.found.extend(found)
        if found and "value" in inp:
            return index, None  # a value numpy cannot convert has no shape either
        return index, _shape(inp, path)

    def input_arg(self, inp, path, kind, param=None):
        """(ARG spec, shape) of one input bound to a parameter of `kind`."""
        index, shape = self.add_input(inp, path)
        how = inp.get("as", "array" if kind == "array" else "tensor")
        if how != "tensor":
            return {how: index}, shape
        spec = {"tensor": index}
        if inp.get("none_dims") and shape is not None:
            spec["ph_shape"] = [None if d in inp["none_dims"] else s for d, s in enumerate(shape)]
        if param is not None and param.get("weight"):
            spec["weight"] = True
        return spec, shape

    def kwarg_arg(self, param, value, path):
        kind = param.get("kind", "value") if param else "value"
        if isinstance(value, dict) and "step" in value:
            problem = _step_problem(value["step"], path + ["step"])
            if problem:
                self.found.append(problem)
            return {"step": value["step"]}
        if kind == "step":
            problem = _step_problem(value, path)
            if problem:
                self.found.append(problem)
            return {"step": value}
        if param and param.get("tuple") and isinstance(value, list):
            return {"tuple": value}
        return {"value": value}

    def run(self):
        raw = self.raw
        inputs = raw.get("inputs") or []
        kwargs = raw.get("kwargs") or {}
        given, extra, shape_names = {}, {}, {}
        if "args" in raw:
            args, kw = self.run_raw(raw["args"], inputs, kwargs)
            for param in self.params:  # what shape rules can still see: the kwargs, else the defaults
                name = param["name"]
                shape_names[name] = kwargs[name] if name in kwargs else param.get("default")
            return self.binding(args, kw, shape_names)
        if isinstance(inputs, dict):
            for name, value in inputs.items():
                path = ["inputs", name]
                if name not in self.by_name and not self.var_kw:
                    self.not_a_param(name, path)
                if name in kwargs:
                    self.problem(["kwargs", name], "{!r} is given twice: as inputs.{} and as kwargs.{}".format(
                        name, name, name))
                param = self.by_name.get(name)
                kind = param.get("kind", "value") if param else "value"
                if isinstance(value, list):
                    pairs = [self.input_arg(inp, path + [j], kind, param) for j, inp in enumerate(value)]
                    spec, shape = {"list": [s for s, _ in pairs]}, [s for _, s in pairs]
                else:
                    spec, shape = self.input_arg(value, path, kind, param)
                (given if param else extra)[name] = spec
                if param:
                    shape_names[name] = shape
        else:
            pending = list(enumerate(inputs))
            for param in self.params:
                name, kind = param["name"], param.get("kind", "value")
                if kind not in _INPUT_KINDS or not pending:
                    continue
                taken = pending[:1] if kind != "tensors" else pending
                pending = pending[len(taken):]
                if name in kwargs:
                    self.problem(["kwargs", name], "{!r} is given twice: by inputs[{}] and as kwargs.{}".format(
                        name, taken[0][0], name))
                if kind == "tensors":
                    pairs = [self.input_arg(inp, ["inputs", i], "tensor") for i, inp in taken]
                    given[name] = {"list": [s for s, _ in pairs]}
                    shape_names[name] = [s for _, s in pairs]
                else:
                    (i, inp), = taken
                    given[name], shape_names[name] = self.input_arg(inp, ["inputs", i], kind, param)
            for i, inp in pending:
                self.add_input(inp, ["inputs", i])
                self.problem(["inputs", i], "inputs[{}] is left over: {} has no tensor parameter left to take it "
                             "(name its parameter: `inputs: {{name: ...}}`)".format(i, self.op))
        for name, value in kwargs.items():
            if name in given or name in extra:
                continue  # given twice: reported above
            param = self.by_name.get(name)
            if param is None and not self.var_kw:
                self.not_a_param(name, ["kwargs", name])
                continue
            spec = self.kwarg_arg(param, value, ["kwargs", name])
            (given if param else extra)[name] = spec
            if param and param.get("kind", "value") == "value":
                shape_names[name] = value
        args, kw, positional = [], {}, True
        for param in self.params:
            name = param["name"]
            if name not in given:
                positional = False
                shape_names.setdefault(name, param.get("default"))
            elif positional:
                args.append(given[name])
            else:
                kw[name] = given[name]
        kw.update(extra)
        return self.binding(args, kw, shape_names)

    def run_raw(self, args, inputs, kwargs):
        """Raw worker args: inputs are a plain list of arrays; kwargs only for params past the raw args."""
        if isinstance(inputs, dict):
            self.problem(["args"], "raw args take the inputs as a plain list of arrays, not by name; "
                                   "bind the inputs by name without args, or list them")
            inputs = [inp for value in inputs.values() for inp in (value if isinstance(value, list) else [value])]
        for i, inp in enumerate(inputs):
            self.add_input(inp, ["inputs", i])
        self.check_raw(args, ["args"])
        positions = dict((p["name"], i) for i, p in enumerate(self.params))
        kw = {}
        for name, value in kwargs.items():
            if name not in positions and not self.var_kw:
                self.not_a_param(name, ["kwargs", name])
            elif name in positions and positions[name] < len(args):
                self.problem(["kwargs", name], "kwargs.{} is ignored: args already gives parameter {} ({})".format(
                    name, positions[name] + 1, name))
            else:
                kw[name] = self.kwarg_arg(self.by_name.get(name), value, ["kwargs", name])
        return list(args), kw

    def check_raw(self, specs, path):
        """Step names and array indices inside raw ARG specs."""
        for j, spec in enumerate(specs):
            self.check_raw_one(spec, path + [j])

    def check_raw_one(self, spec, where):
        if not isinstance(spec, dict):
            self.problem(where, "a raw ARG spec is a mapping such as {tensor: 0}, not " + repr(spec))
            return
        if "step" in spec:
            problem = _step_problem(spec["step"], where + ["step"])
            if problem:
                self.found.append(problem)
        for key in ("tensor", "array", "constant"):
            if key in spec and not (isinstance(spec[key], int) and 0 <= spec[key] < len(self.inputs)):
                self.problem(where + [key], "no input {!r}: the case has {} input(s)".format(
                    spec[key], len(self.inputs)))
        for key in ("list", "args"):
            if isinstance(spec.get(key), list):
                self.check_raw(spec[key], where + [key])
        if isinstance(spec.get("kwargs"), dict):
            for name, item in spec["kwargs"].items():
                self.check_raw_one(item, where + ["kwargs", name])

    def binding(self, args, kw, shape_names):
        return Binding(inputs=self.inputs, args=args, kwargs=kw, tensor_indices=tensor_indices(args, kw),
                       shape_names=shape_names), self.found
