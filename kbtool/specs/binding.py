"""Bind a spec case's inputs and kwargs to the op's signature: the one place that writes worker ARG specs.

A case names what it passes by parameter; the worker's wire format (the ARG specs documented in
kbtool/worker/invoke.py) is produced here and nowhere in the spec:

- `inputs` as a list binds in signature order to the params of kind tensor/tensors/array (a `tensors`
  param takes all remaining inputs); as a mapping, each key names any parameter and its value is an
  input spec, or a list of input specs (passed as a Python list of tensors).
- `kwargs` give the remaining parameters as literals; a `step` parameter takes a step function's bare
  name (`fn: add`; `{step: add}` is accepted too, and is how a callable goes to a non-step parameter).
- Params given are passed positionally up to the first one that is not given, then as keywords.
- Array indices (which seed the random draws) follow the inputs' order of appearance, lists flattened.
- A raw `args:` list (worker ARG specs) is the escape hatch for what a signature cannot express (nested
  lists, one tensor named twice, `{call: ...}`); the inputs are then a plain list of arrays, and kwargs
  may only give parameters after those the raw args cover. Raw ARG specs are checked as the worker reads
  them: one kind each with its own keys, array indices in range, lists nested, steps known, and calls to
  ops of the spec (when the binder is given the spec's op names).
- `then` calls are checked too (given the spec's op names): each calls an op of the spec, and `{result: k}`
  names a call already made.
- Inputs are bounded, so that a case can never ask for more memory than a check can give: at most
  MAX_INPUT_ELEMENTS elements (and no dimension larger, at most MAX_DIMS dimensions) per input, at most
  MAX_CASE_ELEMENTS for all the inputs of one case (kbtool/specs/loader.py bounds the whole spec).

Every problem is a BindingError carrying its path within the case; `kbtool spec validate` reports them.
"""

import math
from dataclasses import dataclass, field
from typing import Any, Collection, Dict, List, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from kbtool import files
from kbtool.specs.records import ArgSpec, Entry, InputSpec, KeyPath, Param, RawCase
from kbtool.vocabulary import CASE_DEFAULTS
from kbtool.worker import steps

_INPUT_KINDS = ("tensor", "tensors", "array")
MAX_INPUT_ELEMENTS = 10**7  # one input (40 MB as float32); the shipped spec's largest: 60,000
MAX_CASE_ELEMENTS = 2 * 10**7  # all the inputs of one case
MAX_DIMS = 32  # NumPy 1.x's limit (the shipped spec's most: 5)
# raw ARG specs (kbtool/worker/invoke.py): the key that names the kind, and the other keys it may have
_RAW_KINDS = {
    "tensor": ("ph_shape", "ph_ndim", "weight", "sparse"),
    "constant": (),
    "array": (),
    "value": (),
    "tuple": (),
    "list": (),
    "step": (),
    "call": ("args", "kwargs"),
}
_INDEX_KINDS = ("tensor", "constant", "array")

Shape = Optional[List[Any]]  # an input's shape (a list's: a list of shapes), None when unknown


class BindingError(ValueError):
    """A case that does not bind to its op's signature; `path` is the key path within the case."""

    def __init__(self, path: Sequence[Any], message: str) -> None:
        self.path = list(path)
        self.message = message
        super().__init__(f"{dotted(self.path)}: {message}")


@dataclass
class Binding:
    inputs: List[InputSpec]  # the input specs in array-index order (make_array draws array i from inputs[i])
    args: List[ArgSpec]  # worker ARG specs
    kwargs: Dict[str, ArgSpec]
    tensor_indices: List[int]  # arrays the worker builds as tensors, in the order it builds them
    shape_names: Dict[str, Any] = field(default_factory=dict)  # what shape rules see: shapes and kwargs
    # the tensor parameters' static shapes in symbolic mode: their shapes with the placeholders' unknown dims None
    static_names: Dict[str, Any] = field(default_factory=dict)


def _static_shape(spec: Any, shape: Any) -> Any:
    """An input's shape as a placeholder has it in symbolic mode (None where it is made unknown); a list's, item by
    item; anything else (a weight, a constant, a NumPy array, a value) as it is."""
    if isinstance(spec, dict) and "list" in spec and isinstance(shape, list) and len(shape) == len(spec["list"]):
        return [_static_shape(item, sub) for item, sub in zip(spec["list"], shape)]
    if not isinstance(spec, dict) or "tensor" not in spec or spec.get("weight") or not isinstance(shape, list):
        return shape
    if spec.get("ph_ndim"):
        return [None] * len(shape)
    return list(spec["ph_shape"]) if spec.get("ph_shape") is not None else shape


def dotted(path: Sequence[Any]) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else ("." if out else "") + str(key)
    return out


def bind(op: str, entry: Entry, raw: RawCase, ops: Optional[Collection[str]] = None) -> Binding:
    """The case `raw` bound to `entry`'s signature; raises the first BindingError found.
    `ops`, the spec's op names, is what raw `{call: ...}` and `then` may call; without it (expanding a case
    of a validated spec) neither call names nor then-calls are checked."""
    binding, found = _Binder(op, entry, raw, ops).run()
    if found:
        raise found[0]
    return binding


def problems(op: str, entry: Entry, raw: RawCase, ops: Optional[Collection[str]] = None) -> List[BindingError]:
    """Every BindingError of the case (binding, input specs, raw args, then-calls), without drawing any array."""
    return _Binder(op, entry, raw, ops).run()[1]


def elements(inp: InputSpec) -> int:
    """How many elements the array of one input spec has (0 for a literal NumPy cannot read)."""
    if "value" in inp:
        try:
            return int(np.size(np.array(inp["value"], dtype=object)))
        except (ValueError, TypeError):
            return 0
    shape = inp.get("shape")
    if not isinstance(shape, list) or not all(isinstance(d, int) for d in shape):
        return 0
    return math.prod(shape)


def case_inputs(raw: RawCase) -> List[InputSpec]:
    """The input specs of a raw case, in order (lists in a mapping flattened)."""
    inputs = raw.get("inputs") or []
    if isinstance(inputs, dict):
        return [inp for value in inputs.values() for inp in (value if isinstance(value, list) else [value])]
    return list(inputs)


def tensor_indices(args: Sequence[ArgSpec], kwargs: Dict[str, ArgSpec]) -> List[int]:
    """Array indices the worker builds as tensors, in its order: args left to right, then kwargs,
    recursing into lists and {call: ...} arguments; an index named twice is one tensor (built once)."""
    found: List[int] = []

    def walk(spec: Any) -> None:  # tolerant of malformed raw specs: the binder reports them
        if not isinstance(spec, dict):
            return
        if "tensor" in spec:
            if spec["tensor"] not in found:
                found.append(spec["tensor"])
            return
        for item in _list(spec.get("list")):
            walk(item)
        if "call" in spec:
            for item in _list(spec.get("args")):
                walk(item)
            kwargs = spec.get("kwargs")
            for item in kwargs.values() if isinstance(kwargs, dict) else ():
                walk(item)

    for spec in list(args) + list(kwargs.values()):
        walk(spec)
    return found


def _list(value: Any) -> List[Any]:
    return value if isinstance(value, list) else []


def _literal_problems(inp: InputSpec, key: str, dtype: str, what: str, path: KeyPath) -> List[BindingError]:
    """A literal `value` or `fill` that NumPy cannot make into `dtype` (or only by wrapping it)."""
    problem = _value_problem(inp[key], dtype)
    if not problem:
        return []
    return [BindingError(path + [key], f"{key} {files.quote(inp[key])} is not a {dtype} {what}: {problem}")]


def input_problems(inp: InputSpec, path: KeyPath) -> List[BindingError]:
    """Problems of one input spec that would otherwise only show when its array is drawn."""
    dtype = inp.get("dtype", "float32")
    if "value" in inp:
        return _literal_problems(inp, "value", dtype, "array", path)
    shape_problem = _shape_problem(inp.get("shape"))
    if shape_problem:
        return [BindingError(path + ["shape"], shape_problem)]
    if "fill" in inp:
        return _literal_problems(inp, "fill", dtype, "value", path)
    found: List[BindingError] = []
    dist = inp.get("dist", "randint" if np.dtype(dtype).kind in "iub" else "normal")
    bounds = [key for key in ("low", "high") if key in inp and not _finite(inp[key])]
    if bounds and dist in ("randint", "uniform", "positive"):
        return [BindingError(path + [key], f"{key} {files.quote(inp[key])} is not a finite number") for key in bounds]
    if dist == "randint":
        low = int(inp["low"]) if "low" in inp else 0
        high = int(inp["high"]) if "high" in inp else 5
        if low >= high:
            where = "low" if "low" in inp else "high"
            found.append(
                BindingError(
                    path + [where],
                    "randint needs low < high, got low {} and high {}{}".format(
                        low, high, "" if "low" in inp and "high" in inp else " (defaults: low 0, high 5)"
                    ),
                )
            )
        for key, bound in (("low", low), ("high", high)):
            if not -(2**63) <= bound <= 2**63:
                found.append(BindingError(path + [key], f"randint bound {bound} is outside int64"))
    elif dist in ("uniform", "positive"):
        low = inp.get("low", -1.0 if dist == "uniform" else 0.1)
        high = inp.get("high", 1.0 if dist == "uniform" else 2.0)
        if float(low) > float(high):
            found.append(
                BindingError(
                    path + ["low" if "low" in inp else "high"],
                    "{} needs low <= high, got low {} and high {}{}".format(
                        dist,
                        low,
                        high,
                        ""
                        if "low" in inp and "high" in inp
                        else " (defaults: low {}, high {})".format(*((-1.0, 1.0) if dist == "uniform" else (0.1, 2.0))),
                    ),
                )
            )
        elif not _finite(float(high) - float(low)):
            found.append(BindingError(path + ["high"], f"{dist} range {low} to {high} is too wide to draw from"))
    return found


def _finite(number: Any) -> bool:
    try:
        return math.isfinite(number)
    except (TypeError, OverflowError):  # a huge int: finite but not a float
        return False


def _shape_problem(shape: Any) -> Optional[str]:
    if not isinstance(shape, list):
        return None  # no shape: the schema says what is wrong
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        return f"a shape is a list of non-negative integers, not {files.quote(shape)}"
    if len(shape) > MAX_DIMS:
        return f"{len(shape)} dimensions; kbtool allows at most {MAX_DIMS}"
    size = math.prod(shape)
    if size > MAX_INPUT_ELEMENTS or any(d > MAX_INPUT_ELEMENTS for d in shape):
        return "shape {} has {} elements; one input may have at most {:,} (and no larger dimension)".format(
            files.quote(shape), f"{size:,}" if size < 10**30 else f"about 10**{len(str(size)) - 1}", MAX_INPUT_ELEMENTS
        )
    return None


def _value_problem(value: Any, dtype: str) -> Optional[str]:
    try:
        plain = np.array(value)
        if plain.ndim > MAX_DIMS:  # as for a shape: NumPy 1.x (in the backends' envs) stops at 32
            return f"{plain.ndim} dimensions; kbtool allows at most {MAX_DIMS}"
        if np.dtype(dtype).kind in "iu" and plain.dtype.kind in "iuf" and plain.size:
            # NumPy 1.x wraps out-of-range integers silently (2.x raises): the same answer on both
            info = np.iinfo(dtype)
            if plain.min() < info.min or plain.max() > info.max:
                return f"out of range ({info.min} to {info.max})"
        with np.errstate(over="ignore", invalid="ignore"):
            made = np.array(value, dtype=dtype)
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        return files.clip(exc)
    return _special_value_problem(plain, made)


def _special_value_problem(plain: NDArray[Any], made: NDArray[Any]) -> Optional[str]:
    """A literal whose numbers the dtype would change silently: a fraction, NaN or inf made an integer, a finite
    number that overflows to inf or a non-zero one that underflows to 0 (NaN, inf and -0.0 written as `.nan`,
    `.inf`, `-.inf`, `-0.0` pass as they are; a subnormal passes where the dtype holds it)."""
    if plain.dtype.kind != "f" or not plain.size:
        return None
    flat, got = plain.reshape(-1), made.reshape(-1)
    if made.dtype.kind in "iub":
        bad = ~np.isfinite(flat) | (np.isfinite(flat) & (np.mod(np.where(np.isfinite(flat), flat, 0), 1) != 0))
        if np.any(bad):
            return f"{flat[np.argmax(bad)].item()!r} is not an integer"
        return None
    if made.dtype.kind != "f":
        return None
    overflow = np.isfinite(flat) & ~np.isfinite(got)
    if np.any(overflow):
        return f"{flat[np.argmax(overflow)].item()!r} overflows {made.dtype} (write .inf or -.inf for an infinity)"
    underflow = (flat != 0) & (got == 0)
    if np.any(underflow):
        return f"{flat[np.argmax(underflow)].item()!r} underflows to 0 in {made.dtype}"
    return None


def _shape(inp: InputSpec, path: KeyPath) -> List[Any]:
    if "value" in inp:  # converted by input_problems first: not ragged
        return list(np.shape(inp["value"]))
    return list(inp["shape"])


def _step_problem(name: Any, path: KeyPath) -> Optional[BindingError]:
    if not isinstance(name, str) or name not in steps.STEPS:
        return BindingError(
            path, "unknown step {} (known: {})".format(files.quote(name), ", ".join(sorted(steps.STEPS)))
        )
    return None


def _is_index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Binder:
    def __init__(self, op: str, entry: Entry, raw: RawCase, ops: Optional[Collection[str]] = None) -> None:
        self.op, self.raw, self.ops = op, raw, ops
        self.reads_config: List[str] = entry.get("reads_config", [])
        self.shapes: List[Shape] = []  # each input's shape (None when unknown), in index order
        signature: List[Param] = entry.get("signature", [])
        self.params = [p for p in signature if not p["name"].startswith("*")]
        self.by_name = {p["name"]: p for p in self.params}
        self.var_kw = any(p["name"].startswith("**") for p in signature)
        self.found: List[BindingError] = []
        self.inputs: List[InputSpec] = []  # input specs in index order

    def problem(self, path: KeyPath, message: str) -> None:
        self.found.append(BindingError(path, message))

    def not_a_param(self, name: Any, path: KeyPath) -> None:
        self.problem(
            path,
            "{} is not a parameter of {} ({})".format(
                files.quote(name), self.op, ", ".join(p["name"] for p in self.params) or "no parameters"
            ),
        )

    def add_input(self, inp: InputSpec, path: KeyPath) -> Tuple[int, Shape]:
        """Registers one input spec; returns (its array index, its shape or None if unknown)."""
        index = len(self.inputs)
        self.inputs.append(inp)
        found = input_problems(inp, path)
        self.found.extend(found)
        shape = (
            None if found and ("value" in inp or any(p.path[-1:] == ["shape"] for p in found)) else _shape(inp, path)
        )  # a value numpy cannot convert, or a refused shape, has no shape to use
        self.shapes.append(shape)
        return index, shape

    def input_arg(
        self, inp: InputSpec, path: KeyPath, kind: str, param: Optional[Param] = None
    ) -> Tuple[ArgSpec, Shape]:
        """(ARG spec, shape) of one input bound to a parameter of `kind`."""
        index, shape = self.add_input(inp, path)
        how = inp.get("as", "array" if kind == "array" else "tensor")
        if how != "tensor":
            return {how: index}, shape
        spec: ArgSpec = {"tensor": index}
        if inp.get("none_dims") and shape is not None:
            spec["ph_shape"] = [None if d in inp["none_dims"] else s for d, s in enumerate(shape)]
        if inp.get("ndim_only"):
            if inp.get("sparse") or inp.get("none_dims"):
                self.problem(path + ["ndim_only"], "ndim_only makes every dim None: not with sparse or none_dims")
            spec["ph_ndim"] = True
        if param is not None and param.get("weight"):
            spec["weight"] = True
        if inp.get("sparse"):
            if shape is not None and len(shape) != 2:
                self.problem(path + ["sparse"], f"a sparse input is a 2-D matrix, not of shape {shape}")
            spec["sparse"] = True
        return spec, shape

    def kwarg_arg(self, param: Optional[Param], value: Any, path: KeyPath) -> ArgSpec:
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
        if isinstance(value, dict) and set(value) == {"tuple"}:  # a domain's tuple form: axis=(0, 2)
            if not isinstance(value["tuple"], list):
                self.problem(
                    path + ["tuple"], "a tuple is written as a list, not {}".format(files.quote(value["tuple"]))
                )
            return {"tuple": value["tuple"]}
        if param and param.get("tuple") and isinstance(value, list):
            return {"tuple": value}
        return {"value": value}

    def run(self) -> Tuple[Binding, List[BindingError]]:
        raw = self.raw
        inputs = raw.get("inputs") or []
        kwargs: Dict[str, Any] = raw.get("kwargs") or {}
        shape_names: Dict[str, Any] = {}  # what shape rules see: shapes of tensor params and kwargs' values
        if "args" in raw:
            args, kw = self.run_raw(raw["args"], inputs, kwargs)
            for param in self.params:  # what shape rules can still see: the kwargs, else the defaults
                name = param["name"]
                shape_names[name] = kwargs[name] if name in kwargs else param.get("default")
            return self.binding(args, kw, shape_names)
        given: Dict[str, ArgSpec] = {}  # parameters of the signature
        extra: Dict[str, ArgSpec] = {}  # names that go to **kwargs
        if isinstance(inputs, dict):
            self.bind_named_inputs(inputs, kwargs, given, extra, shape_names)
        else:
            self.bind_listed_inputs(inputs, kwargs, given, shape_names)
        self.bind_kwargs(kwargs, given, extra, shape_names)
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
        static_names = {name: _static_shape(given[name], shape) for name, shape in shape_names.items() if name in given}
        return self.binding(args, kw, shape_names, static_names)

    def bind_named_inputs(
        self,
        inputs: Dict[Any, Any],
        kwargs: Dict[str, Any],
        given: Dict[str, ArgSpec],
        extra: Dict[str, ArgSpec],
        shape_names: Dict[str, Any],
    ) -> None:
        """`inputs` as a mapping: each key names a parameter (or goes to **kwargs); a list is a list of tensors."""
        for name, value in inputs.items():
            path = ["inputs", name]
            if name not in self.by_name and (not self.var_kw or not isinstance(name, str)):
                self.not_a_param(name, path)
            if name in kwargs:
                self.problem(["kwargs", name], f"{name!r} is given twice: as inputs.{name} and as kwargs.{name}")
            param = self.by_name.get(name)
            kind = param.get("kind", "value") if param else "value"
            if isinstance(value, list):
                pairs = [self.input_arg(inp, path + [j], kind, param) for j, inp in enumerate(value)]
                spec: ArgSpec = {"list": [s for s, _ in pairs]}
                shape: Shape = [s for _, s in pairs]
            else:
                spec, shape = self.input_arg(value, path, kind, param)
            (given if param else extra)[name] = spec
            if param:
                shape_names[name] = shape

    def bind_listed_inputs(
        self, inputs: List[Any], kwargs: Dict[str, Any], given: Dict[str, ArgSpec], shape_names: Dict[str, Any]
    ) -> None:
        """`inputs` as a list: in signature order to the tensor parameters (a `tensors` one takes all the rest)."""
        pending = list(enumerate(inputs))
        for param in self.params:
            name, kind = param["name"], param.get("kind", "value")
            if kind not in _INPUT_KINDS or not pending:
                continue
            taken = pending[:1] if kind != "tensors" else pending
            pending = pending[len(taken) :]
            if name in kwargs:
                self.problem(
                    ["kwargs", name], f"{name!r} is given twice: by inputs[{taken[0][0]}] and as kwargs.{name}"
                )
            if kind == "tensors":
                pairs = [self.input_arg(inp, ["inputs", i], "tensor") for i, inp in taken]
                given[name] = {"list": [s for s, _ in pairs]}
                shape_names[name] = [s for _, s in pairs]
            else:
                ((i, inp),) = taken
                given[name], shape_names[name] = self.input_arg(inp, ["inputs", i], kind, param)
        for i, inp in pending:
            self.add_input(inp, ["inputs", i])
            self.problem(
                ["inputs", i],
                f"inputs[{i}] is left over: {self.op} has no tensor parameter left to take it "
                "(name its parameter: `inputs: {name: ...}`)",
            )

    def bind_kwargs(
        self,
        kwargs: Dict[str, Any],
        given: Dict[str, ArgSpec],
        extra: Dict[str, ArgSpec],
        shape_names: Dict[str, Any],
    ) -> None:
        """`kwargs` as literals for the parameters the inputs left (or **kwargs)."""
        for name, value in kwargs.items():
            if name in given or name in extra:
                continue  # given twice: reported above
            param = self.by_name.get(name)
            if param is None and (not self.var_kw or not isinstance(name, str)):  # **kwargs take names only
                self.not_a_param(name, ["kwargs", name])
                continue
            spec = self.kwarg_arg(param, value, ["kwargs", name])
            (given if param else extra)[name] = spec
            if param and param.get("kind", "value") == "value":
                shape_names[name] = value["tuple"] if isinstance(value, dict) and set(value) == {"tuple"} else value

    def run_raw(self, args: List[Any], inputs: Any, kwargs: Dict[str, Any]) -> Tuple[List[ArgSpec], Dict[str, ArgSpec]]:
        """Raw worker args: inputs are a plain list of arrays; kwargs only for params past the raw args."""
        if isinstance(inputs, dict):
            self.problem(
                ["args"],
                "raw args take the inputs as a plain list of arrays, not by name; "
                "bind the inputs by name without args, or list them",
            )
            inputs = [inp for value in inputs.values() for inp in (value if isinstance(value, list) else [value])]
        for i, inp in enumerate(inputs):
            self.add_input(inp, ["inputs", i])
        self.check_raw(args, ["args"])
        positions = {p["name"]: i for i, p in enumerate(self.params)}
        kw: Dict[str, ArgSpec] = {}
        for name, value in kwargs.items():
            if name not in positions and (not self.var_kw or not isinstance(name, str)):
                self.not_a_param(name, ["kwargs", name])
            elif name in positions and positions[name] < len(args):
                self.problem(
                    ["kwargs", name],
                    f"kwargs.{name} is ignored: args already gives parameter {positions[name] + 1} ({name})",
                )
            else:
                kw[name] = self.kwarg_arg(self.by_name.get(name), value, ["kwargs", name])
        return list(args), kw

    def check_raw(self, specs: Any, path: KeyPath) -> None:
        """Raw ARG specs as the worker reads them (kbtool/worker/invoke.py)."""
        if not isinstance(specs, list):
            self.problem(path, f"a list of raw ARG specs, not {files.quote(specs)}")
            return
        for j, spec in enumerate(specs):
            self.check_raw_one(spec, path + [j])

    def check_raw_one(self, spec: Any, where: KeyPath) -> None:
        if not isinstance(spec, dict):
            self.problem(where, "a raw ARG spec is a mapping such as {tensor: 0}, not " + files.quote(spec))
            return
        kinds = [key for key in _RAW_KINDS if key in spec]
        if len(kinds) != 1:
            self.problem(
                where,
                "a raw ARG spec has exactly one of {}; this one has {}".format(
                    ", ".join(_RAW_KINDS), ", ".join(kinds) if kinds else files.quote(sorted(map(str, spec)))
                ),
            )
            return
        (kind,) = kinds
        unknown = sorted(str(key) for key in spec if key != kind and key not in _RAW_KINDS[kind])
        if unknown:
            self.problem(
                where + [unknown[0]],
                "unknown key {} in a {} ARG spec{}".format(
                    files.clip(", ".join(unknown)),
                    kind,
                    " (it may also have {})".format(", ".join(_RAW_KINDS[kind]))
                    if _RAW_KINDS[kind]
                    else " (it has no other key)",
                ),
            )
        value = spec[kind]
        if kind in _INDEX_KINDS:
            if not (_is_index(value) and 0 <= value < len(self.inputs)):
                self.problem(where + [kind], f"no input {files.quote(value)}: the case has {len(self.inputs)} input(s)")
            elif "ph_shape" in spec:
                self.check_ph_shape(spec["ph_shape"], self.shapes[value], where + ["ph_shape"])
            for flag in ("weight", "sparse", "ph_ndim"):
                if flag in spec and not isinstance(spec[flag], bool):
                    self.problem(where + [flag], f"{flag} is true or false, not {files.quote(spec[flag])}")
        elif kind == "step":
            problem = _step_problem(value, where + ["step"])
            if problem:
                self.found.append(problem)
        elif kind in ("tuple", "list") and not isinstance(value, list):
            self.problem(where + [kind], f"{kind} takes a list, not {files.quote(value)}")
        elif kind == "list":
            self.check_raw(value, where + ["list"])
        elif kind == "call":
            self.check_call_name(value, where + ["call"])
            if "args" in spec:
                self.check_raw(spec["args"], where + ["args"])
            if "kwargs" in spec:
                if not isinstance(spec["kwargs"], dict):
                    self.problem(
                        where + ["kwargs"],
                        "kwargs is a mapping of name to ARG spec, not {}".format(files.quote(spec["kwargs"])),
                    )
                else:
                    for name, item in spec["kwargs"].items():
                        if not isinstance(name, str):
                            self.problem(where + ["kwargs", name], f"a keyword is a name, not {files.quote(name)}")
                        self.check_raw_one(item, where + ["kwargs", name])

    def check_ph_shape(self, ph_shape: Any, shape: Shape, where: KeyPath) -> None:
        if not (isinstance(ph_shape, list) and all(d is None or (_is_index(d) and d >= 0) for d in ph_shape)):
            self.problem(where, f"ph_shape is a list of sizes or nulls, not {files.quote(ph_shape)}")
        elif shape is not None and len(ph_shape) != len(shape):
            self.problem(
                where, f"ph_shape has {len(ph_shape)} dimensions but the input has {len(shape)} (shape {shape})"
            )

    def check_call_name(self, name: Any, where: KeyPath) -> None:
        """A raw {call: NAME} or a then-call: an op of the spec (unchecked when the binder has no op names)."""
        if not isinstance(name, str):
            self.problem(where, f"call names an op, not {files.quote(name)}")
        elif self.ops is not None and name not in self.ops:
            import difflib

            close = difflib.get_close_matches(name, sorted(self.ops), n=3)
            self.problem(
                where,
                "{} is not an op of the spec{}".format(
                    files.quote(name), "; did you mean {}?".format(", ".join(close)) if close else ""
                ),
            )

    def check_then(self, then: Any) -> None:
        """then-calls: ops of the spec; {result: k} names a call already made (0 is the op's own)."""
        if not isinstance(then, list):
            return  # the schema says what is wrong
        for i, call in enumerate(then):
            if not isinstance(call, dict):
                continue
            if "op" in call:
                self.check_call_name(call["op"], ["then", i, "op"])
            args = call.get("args", [])
            for j, arg in enumerate(args if isinstance(args, list) else []):
                if isinstance(arg, dict) and set(arg) == {"result"}:
                    k = arg["result"]
                    if not (_is_index(k) and 0 <= k <= i):
                        self.problem(
                            ["then", i, "args", j, "result"],
                            f"no result {files.quote(k)} before then[{i}]: results 0 to {i} (0 is the op's own)",
                        )

    def binding(
        self,
        args: List[ArgSpec],
        kw: Dict[str, ArgSpec],
        shape_names: Dict[str, Any],
        static_names: Optional[Dict[str, Any]] = None,
    ) -> Tuple[Binding, List[BindingError]]:
        # shape rules see the keras.json settings too, and a data_format of None as the one that applies
        config = dict(CASE_DEFAULTS, **(self.raw.get("keras_config") or {}))
        for key in self.reads_config:
            shape_names.setdefault(key, config[key])
        if (
            "data_format" in shape_names
            and shape_names["data_format"] is None
            and any(p["name"] == "data_format" for p in self.params)
        ):
            shape_names["data_format"] = config["image_data_format"]
        sizes = [elements(inp) for inp in self.inputs if isinstance(inp, dict)]
        total = sum(sizes)
        if total > MAX_CASE_ELEMENTS and max(sizes) <= MAX_INPUT_ELEMENTS:  # else an input's own problem says so
            self.problem(
                ["inputs"],
                f"the inputs have {total:,} elements together; a case may have at most {MAX_CASE_ELEMENTS:,}",
            )
        if self.ops is not None:  # validating against a spec (expansion binds cases validated already)
            self.check_then(self.raw.get("then", []))
        return Binding(
            inputs=self.inputs,
            args=args,
            kwargs=kw,
            tensor_indices=tensor_indices(args, kw),
            shape_names=shape_names,
            static_names={k: v for k, v in (static_names or {}).items() if v != shape_names.get(k)},
        ), self.found
