"""The call a case makes, as code: `K.conv2d(x[2,5,5,3] float32 in [-1.93, 2.3], strides=(2, 1))`.

One record, `Call`, built once from a spec case (its worker ARG specs, its drawn arrays and its op's parameter
names; kbtool/specs/cases.py) and shown by every view of a result that did not pass, and by `kbtool spec show` for
each case. An input is written `NAME[SHAPE] DTYPE SUMMARY`: its values themselves when it has at most INLINE of them,
else their range (and how many are NaN or infinite); an input named a second time (the loss of K.gradients and its
variables) is written by its name alone. Everything else is Python: literals, tuples, lists, steps by name, nested
K.* calls; the literals after the last input by their parameter's name (the worker passes them by position: the same
call). The JSON report stores `Call.as_dict()` on non-pass results only; `Call.from_dict` reads it back.
"""

from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import NDArray

INLINE = 6  # an input with at most this many values is written out whole
ELLIPSIS = "..."  # what stands for the part of an argument cut to fit a line
SOFT = "\x1f"  # within a token: where a line may break when the whole token fits no line
# how a tensor argument is made, when it is not a K.variable / K.placeholder (worker ARG kinds: worker/invoke.py)
_HOW = {"constant": "constant", "array": "ndarray"}


@dataclass(frozen=True)
class Input:
    """One array argument: the parameter it is passed as, its shape, dtype and a short summary of its values."""

    name: str
    shape: Tuple[int, ...]
    dtype: str
    summary: str  # "in [-1.93, 2.3]", "[1, 2, 3]", "all 1", "empty"
    how: str = ""  # "" a tensor (variable or placeholder); "constant", "ndarray", "sparse"

    def __str__(self) -> str:
        return self.token().replace(SOFT, " ")

    def token(self) -> str:
        """The input as one token of the code, which may break before its values."""
        words = [f"{self.name}[{','.join(map(str, self.shape))}]", self.dtype, self.how]
        return " ".join(w for w in words if w) + (SOFT + self.summary if self.summary else "")

    def as_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}
        out.update({k: v for k, v in (("summary", self.summary), ("how", self.how)) if v})
        return out


Arg = Union[Input, "Call", List[Any], str]  # an input, a nested K.* call, a Python list of args, or code


@dataclass
class Call:
    """`K.op(args..., name=kwarg...)`; `grad`: the case asks for K.gradients(K.sum(call), its tensors); `then`: the
    calls that follow it (config ops such as get_uid), `result0` standing for the first call's result."""

    op: str
    args: List[Arg] = field(default_factory=list)
    kwargs: Dict[str, Arg] = field(default_factory=dict)
    grad: List[str] = field(default_factory=list)  # the names of the tensors differentiated against (grad cases)
    then: List["Call"] = field(default_factory=list)

    def __str__(self) -> str:
        return " ".join(self.tokens()).replace(SOFT, " ")

    def brief(self) -> "Call":
        """The same call with no value summaries on its inputs."""

        def strip(arg: Any) -> Any:
            if isinstance(arg, Input):
                return replace(arg, summary="")
            if isinstance(arg, Call):
                return arg.brief()
            return [strip(a) for a in arg] if isinstance(arg, list) else arg

        return replace(
            self,
            args=[strip(a) for a in self.args],
            kwargs={k: strip(v) for k, v in self.kwargs.items()},
            then=[c.brief() for c in self.then],
        )

    def tokens(self) -> List[str]:
        """The code as unbreakable pieces: joined by single spaces they are str(self); a line breaks between them
        (after an argument's comma, never inside an input)."""
        out = self._own_tokens()
        if self.grad:  # K.gradients(K.sum(K.op(...)), [x, y])
            out = _wrapped("K.gradients(K.sum(", out, "),") + _list_tokens(self.grad, "[", "])")
        for then in self.then:
            out[-1] += ";"
            out += then.tokens()
        return [t for t in out if t]

    def _own_tokens(self) -> List[str]:
        parts = [_arg_tokens(a) for a in self.args] + [_keyword(k, _arg_tokens(v)) for k, v in self.kwargs.items()]
        return _joined(parts, f"K.{self.op}(", ")")

    def lines(self, width: int, first: str = "", indent: str = "    ") -> List[str]:
        """The code in lines of at most `width` columns: `first` then the pieces, broken between arguments, lines
        after the first at `indent`; a piece too wide for a line of its own is cut with `...`."""
        return pack_tokens(self.tokens(), width, first, indent)

    def inputs(self) -> List[Input]:
        """Every input, in the order the code names them."""
        found: List[Input] = []

        def walk(arg: Any) -> None:
            if isinstance(arg, Input):
                found.append(arg)
            elif isinstance(arg, Call):
                for item in list(arg.args) + list(arg.kwargs.values()):
                    walk(item)
            elif isinstance(arg, list):
                for item in arg:
                    walk(item)

        walk(self)
        return found

    def as_dict(self) -> Dict[str, Any]:
        """The JSON form (report.schema.json's `call`): an input as an object with a shape, a nested call as an
        object with an op, a list as a list, anything else as its code (a string)."""
        out: Dict[str, Any] = {"op": self.op, "args": [_arg_dict(a) for a in self.args]}
        if self.kwargs:
            out["kwargs"] = {k: _arg_dict(v) for k, v in self.kwargs.items()}
        if self.grad:
            out["grad"] = list(self.grad)
        if self.then:
            out["then"] = [t.as_dict() for t in self.then]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Call":
        return cls(
            op=str(data["op"]),
            args=[_arg_of(a) for a in data.get("args", [])],
            kwargs={str(k): _arg_of(v) for k, v in (data.get("kwargs") or {}).items()},
            grad=[str(g) for g in data.get("grad", [])],
            then=[cls.from_dict(t) for t in data.get("then", [])],
        )


def _arg_dict(arg: Arg) -> Any:
    if isinstance(arg, (Input, Call)):
        return arg.as_dict()
    if isinstance(arg, list):
        return [_arg_dict(a) for a in arg]
    return str(arg)


def _arg_of(data: Any) -> Arg:
    if isinstance(data, dict) and "shape" in data:
        return Input(
            str(data.get("name", "")),
            tuple(int(d) for d in data["shape"]),
            str(data.get("dtype", "")),
            str(data.get("summary", "")),
            str(data.get("how", "")),
        )
    if isinstance(data, dict) and "op" in data:
        return Call.from_dict(data)
    if isinstance(data, list):
        return [_arg_of(a) for a in data]
    return str(data)


# ------------------------------------------------------------------------------------------------ code as tokens
def _joined(parts: Sequence[List[str]], opening: str, closing: str) -> List[str]:
    """Argument token lists as one: `opening` before the first, a comma after each but the last, `closing` after."""
    out: List[str] = []
    for i, part in enumerate(parts):
        part = list(part)
        if i < len(parts) - 1:
            part[-1] += ","
        out += part
    if not out:
        return [opening + closing]
    return _wrapped(opening, out, closing)


def _wrapped(opening: str, tokens: List[str], closing: str) -> List[str]:
    out = list(tokens)
    out[0] = opening + out[0]
    out[-1] = out[-1] + closing
    return out


def _keyword(name: str, tokens: List[str]) -> List[str]:
    return _wrapped(f"{name}=", tokens, "")


def _list_tokens(items: Sequence[str], opening: str, closing: str) -> List[str]:
    return _joined([[item] for item in items], opening, closing)


def _arg_tokens(arg: Arg) -> List[str]:
    if isinstance(arg, Input):
        return [arg.token()]
    if isinstance(arg, Call):
        return arg.tokens()
    if isinstance(arg, list):
        return _joined([_arg_tokens(a) for a in arg], "[", "]")
    return [str(arg)]


def pack_tokens(tokens: Sequence[str], width: int, first: str = "", indent: str = "    ") -> List[str]:
    """Tokens joined by spaces in lines of at most `width` columns (`first` opens the first line, `indent` the
    others). A token that fits no line whole breaks at its soft breaks (an input between its shape and its values);
    a piece too wide for a line of its own is cut, ending in `...`."""
    lines: List[str] = []
    line = first
    for token in tokens:
        whole = token.replace(SOFT, " ")
        pieces = [whole] if len(indent) + len(whole) <= width or SOFT not in token else token.split(SOFT)
        for piece in pieces:
            fresh = line == (indent if lines else first)
            candidate = line + ("" if fresh else " ") + piece
            if len(candidate) <= width:
                line = candidate
                continue
            if not fresh:
                lines.append(line)
                line = indent
            room = max(width - len(line), len(ELLIPSIS) + 1)
            line += piece if len(piece) <= room else piece[: room - len(ELLIPSIS)] + ELLIPSIS
    lines.append(line)
    return lines


# ------------------------------------------------------------------------------------------------ values
def number(value: Any, digits: int = 4) -> str:
    """One value as code: an int as it is, a float in `digits` significant digits (nan, inf, -inf), a bool."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return format(float(value), f".{digits}g")
    if isinstance(value, (complex, np.complexfloating)):
        return format(complex(value), f".{digits}g")
    return repr(value)


def _nested(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_nested(v) for v in value) + "]"
    return number(value, 3)


def summary(array: NDArray[Any]) -> str:
    """An array's values in a few words: themselves when there are at most INLINE, else their range, with how many
    are NaN or infinite (a bool array: how many are True)."""
    if array.size == 0:
        return "empty"
    if array.size <= INLINE:
        return _nested(array.tolist())
    kind = array.dtype.kind
    if kind == "b":
        return f"{int(np.count_nonzero(array))} of {array.size} True"
    if kind not in "iuf":
        return f"{array.size} values"
    extra = []
    values = array
    if kind == "f":
        finite = np.isfinite(array)
        for word, count in (("nan", np.isnan(array).sum()), ("inf", np.isinf(array).sum())):
            if count:
                extra.append(f"{int(count)} {word}")
        values = array[finite]
    if values.size == 0:
        return ", ".join(extra)
    low, high = values.min(), values.max()
    span = f"all {number(low, 3)}" if low == high else f"in [{number(low, 3)}, {number(high, 3)}]"
    return ", ".join([span] + extra)


def literal(value: Any, as_tuple: bool = False) -> str:
    """A JSON literal of the spec as Python code (a list given as a tuple: `(2, 1)`, `(0,)`)."""
    if isinstance(value, list):
        inner = ", ".join(literal(v) for v in value)
        if as_tuple:
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str):
        return repr(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, float):
        return repr(value)
    return number(value)


# ------------------------------------------------------------------------------------------------ from a case
class _Builder:
    """A case's ARG specs (worker/invoke.py) as Call arguments; each array is described where it is first named."""

    def __init__(self, arrays: Sequence[NDArray[Any]]) -> None:
        self.arrays = arrays
        self.named: Dict[int, str] = {}  # array index -> the name it was first given

    def arg(self, spec: Any, name: str) -> Arg:
        if not isinstance(spec, dict):
            return literal(spec)
        for key in ("tensor", "constant", "array"):
            if key in spec:
                return self.input(spec[key], name, "sparse" if spec.get("sparse") else _HOW.get(key, ""))
        if "value" in spec:
            return literal(spec["value"])
        if "tuple" in spec:
            return literal(spec["tuple"], as_tuple=True)
        if "list" in spec:
            return [self.arg(item, f"{name}{j}" if name else "") for j, item in enumerate(spec["list"])]
        if "step" in spec:
            return str(spec["step"])
        if "call" in spec:
            return self.call(str(spec["call"]), spec.get("args") or [], spec.get("kwargs") or {}, [])
        if "result" in spec:
            return f"result{spec['result']}"
        return literal(spec)

    def input(self, index: Any, name: str, how: str) -> Arg:
        if not isinstance(index, int) or not 0 <= index < len(self.arrays):
            return f"<input {index}>"
        if index in self.named:
            return self.named[index]
        name = self.named[index] = name or f"a{index}"
        array = np.asarray(self.arrays[index])
        return Input(name, tuple(int(d) for d in array.shape), str(array.dtype), summary(array), how)

    def call(self, op: str, args: Sequence[Any], kwargs: Mapping[str, Any], params: Sequence[str]) -> "Call":
        # a positional argument is named by its parameter; past the signature (or in a nested call) by its index.
        # The literals after the last input are written as keywords: the worker passes the parameters given by
        # position up to the first one not given, and `strides=(2, 1)` says what `(2, 1)` does not
        names = list(params)[: len(args)] + [""] * max(len(args) - len(params), 0)
        keep = len(args)
        while keep and names[keep - 1] and _is_literal(args[keep - 1]):
            keep -= 1
        named = {names[i]: self.arg(args[i], names[i]) for i in range(keep, len(args))}
        named.update({str(k): self.arg(v, str(k)) for k, v in kwargs.items()})
        return Call(op, [self.arg(spec, names[i]) for i, spec in enumerate(args[:keep])], named)


def _is_literal(spec: Any) -> bool:
    """An ARG spec that is a plain value (a literal, a tuple, a step's name), not an input or a call."""
    return not isinstance(spec, dict) or bool({"value", "tuple", "step"} & spec.keys())


def of_case(case: Any) -> Call:
    """The call `case` (a kbtool.specs.cases.Case) makes, its arrays summarised."""
    builder = _Builder(case.arrays)
    call = builder.call(case.op, case.args, case.kwargs, getattr(case, "params", []) or [])
    if case.grad:  # the worker differentiates against the case's tensors, in its order
        call.grad = [builder.named.get(i, f"<input {i}>") for i in case.tensor_indices]
    for then in case.then:
        call.then.append(builder.call(str(then.get("op")), then.get("args") or [], {}, []))
    return call


def input_arrays(case: Any) -> List[Tuple[str, NDArray[Any]]]:
    """(name, array) of each array the case passes, in the order its call names them (`--show-inputs`)."""
    builder = _Builder(case.arrays)
    builder.call(case.op, case.args, case.kwargs, getattr(case, "params", []) or [])
    for then in case.then:
        builder.call(str(then.get("op")), then.get("args") or [], {}, [])
    return [(name, np.asarray(case.arrays[i])) for i, name in builder.named.items()]


def show_array(name: str, array: NDArray[Any], width: int = 80, indent: str = "      ") -> List[str]:
    """An input as NumPy prints it (at most about 100 values, the edges of a larger one), under `name = `."""
    head = f"{indent}{name} = "
    text = np.array2string(
        array,
        max_line_width=max(width - len(head), 20),
        threshold=100,
        edgeitems=3,
        precision=4,
        suppress_small=not _has_tiny(array),  # fixed notation, unless a value (1e-40) would print as 0.
        separator=", ",
    )
    pad = " " * len(head)
    return [((head if i == 0 else pad) + line).rstrip() for i, line in enumerate(text.splitlines())]


def _has_tiny(array: NDArray[Any]) -> bool:
    """Whether a float array holds a non-zero value that fixed notation at 4 decimals prints as 0 (a subnormal, a
    1e-40 edge case): then NumPy's own notation shows it, never a zero that is not in the input."""
    if array.dtype.kind != "f" or array.size == 0:
        return False
    values = np.abs(array[np.isfinite(array)].astype(np.float64))
    return bool(np.any((values > 0) & (values < 5e-5)))


def stored(data: Any) -> Optional[Call]:
    """A report's stored call as a Call; None when the result has none (a report from before calls were stored)
    or it is not one."""
    return Call.from_dict(data) if is_plain(data) else None


def is_plain(data: Any) -> bool:
    """Whether `data` is a call as report.schema.json's `call` says, checked in plain Python."""
    if type(data) is not dict or not {"op", "args"} <= data.keys() <= {"op", "args", "kwargs", "grad", "then"}:
        return False
    return (
        type(data["op"]) is str
        and type(data["args"]) is list
        and all(_plain_arg(a) for a in data["args"])
        and (type(data.get("kwargs", {})) is dict and all(_plain_arg(v) for v in data.get("kwargs", {}).values()))
        and (type(data.get("grad", [])) is list and all(type(g) is str for g in data.get("grad", [])))
        and (type(data.get("then", [])) is list and all(is_plain(t) for t in data.get("then", [])))
    )


_INPUT_KEYS = {"name", "shape", "dtype", "summary", "how"}


def _plain_arg(arg: Any) -> bool:
    if type(arg) is str:
        return True
    if type(arg) is list:
        return all(_plain_arg(a) for a in arg)
    if type(arg) is dict and "shape" in arg:
        return (
            {"name", "shape", "dtype"} <= arg.keys() <= _INPUT_KEYS
            and type(arg["shape"]) is list
            and all(type(d) is int and d >= 0 for d in arg["shape"])
            and all(type(arg[k]) is str for k in arg.keys() - {"shape"})
        )
    return is_plain(arg)


def code(data: Any) -> str:
    """A stored call (Call.as_dict) as code; "" when there is none."""
    found = stored(data)
    return str(found) if found is not None else ""


def text_of(record: Mapping[str, Any]) -> str:
    """A report's result record's call as code; "" when it has none (a pass, or a report from before calls)."""
    return code(record.get("call"))


def lines_of(record: Mapping[str, Any], width: int, first: str, indent: str, most: int = 0) -> List[str]:
    """A result record's call in lines of at most `width` columns ([] when it has none); with `most`, when the
    whole call takes more lines than that, the call without its inputs' value summaries (shapes, dtypes and every
    argument stay: what tells the case apart)."""
    found = stored(record.get("call"))
    if found is None:
        return []
    lines = found.lines(width, first, indent)
    return found.brief().lines(width, first, indent) if most and len(lines) > most else lines
