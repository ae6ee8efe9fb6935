"""The fingerprint of a non-passing result: what a known difference records of each result it explains.

A known-differences entry keeps its human part (ops, backends, a reason checked against the backend's source) and,
once `kbtool known record` has run, a machine part: the fingerprint of every result it explained in that run. A
later run explains a result only where the entry recorded that very result (op, case, backend, mode), and only as
long as the fingerprint is the same: a known failure that starts failing differently is `changed`, not known.

A fingerprint is one line a reviewer can read in a diff, built from what the verdict measured:
- the status;
- the message, normalised: numbers the details already carry are left out (a values-differ message becomes
  'values differ'), and what changes from run to run, or with the cases run before, without meaning anything is
  blanked (memory addresses, temporary paths, CNTK's native and the backends' Python stacks, the folders of a file
  path (this machine's checkout and environments), runs of whitespace, the module named in
  'has no attribute', log time stamps, graph node counters, the order of a printed set); a verdict on random draws
  keeps its words without their numbers;
- per output (each failing output of a function of several, 'output 1: ...'), three parts held apart, so that a
  known shape or dtype difference never covers a value change: the shape ('shape (2,3)', or 'shape (1,2,3)!=(2,3)':
  the backend's, then the reference's), the dtype ('dtype float32!=float64') and the value verdict: 'values: agree',
  'values: not compared', or 'values: 3/6 differ mask ab12cd34 1e-1 @ (0,1)' (how many of how many elements differ,
  a digest of which ones, the magnitude class of the largest difference (its power of ten: 2.3e-3 is 1e-3; NaN or
  inf: 'non-finite'), and the first differing index);
- for a `nondeterministic` result (--repeat N): its words without their numbers (which run disagreed first, by how
  much: luck), and whether all the repeated runs disagreed with the first or only some.
The magnitude class is coarse on purpose: a known 1% error stays known from run to run, a 100% one is new.
"""

import math
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

MAX_MESSAGE = 160  # characters of the normalised message kept (an error's first words say what it is)

# a values-differ message, up to the next output's verdict of a function of several outputs
_VALUES_DIFFER = re.compile(r"\d+ of \d+ values differ(?:(?!; output \d+: ).)*", re.S)
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")
_TEMP_PATH = re.compile(r"/tmp/[^\s'\":,)]+")
_SPACES = re.compile(r"\s+")
# kbtool's own 'lacks the function' message names the module: a derived backend's is its base's result
_NO_ATTRIBUTE = re.compile(r"^[A-Za-z_][\w.]* has no attribute ")
# what a backend numbers as it goes, so that a run of other cases (a filter, a shard) numbers it otherwise:
# MXNet's log time stamps, CNTK's and TensorFlow's graph node names (Reshape8097, Placeholder_3), MXNet's operator
# and placeholder names (operator linalg_gemm211, /placeholder45)
_CLOCK = re.compile(r"\[\d{2}:\d{2}:\d{2}\]")
_NODE = re.compile(r"\b([A-Z][A-Za-z]*[a-z][A-Za-z]*)_?\d+(?![0-9A-Za-z])")
_OPERATOR = re.compile(r"((?:operator |/)[A-Za-z_][\w]*?[A-Za-z_])\d+(?=[:\s'\"),]|$)")
# TensorFlow 1's TensorArray names count the graph's loops (output_ta_99 in one run, output_ta_100 after one more case)
_TENSOR_ARRAY = re.compile(r"(TensorArray [A-Za-z_][\w/]*?_)\d+\b")
# Python sets printed as lists (Theano's list of dtypes comes out in another order in every process)
_WORDS = re.compile(r"([\[{])('[^'\]}]*'(?:, '[^'\]}]*')+)([\]}])")
# TensorFlow lists an op's attributes in hash order: "with these attrs: [T=DT_DOUBLE, ksize=[1, 2, 2, 2, 1], ...]"
_ATTRS = re.compile(r"(attrs: \[)(.*?)(\] Registered)")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")  # a number, not a word's digits


def _sorted_attrs(match: "re.Match[str]") -> str:
    items, depth, start, text = [], 0, 0, match.group(2)
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    return match.group(1) + ", ".join(sorted(items)) + match.group(3)


def _sorted_words(match: "re.Match[str]") -> str:
    return match.group(1) + ", ".join(sorted(match.group(2).split(", "))) + match.group(3)


_CALL_STACK = "[CALL STACK]"  # CNTK appends its native stack: addresses that differ in every process
# where a backend appends the Python stack that made the failing node (TF 1 graphs, TF 2 functions, Theano): file
# paths of this machine's checkout and environments, and line numbers of kbtool's own worker
_PYTHON_STACKS = ("Original stack trace for", "Backtrace when that variable is created", "defined at (most recent call")
# a file named with its folders (/root/.cache/kbtool/envs/..., ../src/operator/...): its name is what it is
_PATH = re.compile(r"(?:[\w.~-]*/)+([\w.-]+\.(?:py|pyx|h|hpp|cc|cpp|so)\b)")
# a dead worker's message ends with the last lines it printed, which hold whatever earlier cases logged (PlaidML's
# device banner, CNTK's earlier exceptions), and which signal ends a corrupted CNTK process varies (SIGSEGV, SIGABRT):
# that the worker died is what the crash is
_CRASH = re.compile(r"^worker (killed by signal \w+|exited with code -?\d+)\b.*", re.S)


def normalised_message(message: str, numbers: bool = True) -> str:
    """The message without what varies between runs of the same behaviour (see the module's docstring); with
    `numbers` False its numbers too (each '#'), before it is clipped, so that numbers of another length never move
    the clip."""
    text = _CRASH.sub("the worker died", message.split(_CALL_STACK, 1)[0])
    for marker in _PYTHON_STACKS:
        text = text.split(marker, 1)[0]
    text = _PATH.sub(r"\1", text)
    text = _VALUES_DIFFER.sub("values differ", text)
    text = _ADDRESS.sub("0x…", text)
    text = _NO_ATTRIBUTE.sub("the module has no attribute ", text)
    text = _CLOCK.sub("[…]", text)
    text = _NODE.sub(r"\1#", text)
    text = _OPERATOR.sub(r"\1#", text)
    text = _TENSOR_ARRAY.sub(r"\1#", text)
    text = _WORDS.sub(_sorted_words, text)
    text = _ATTRS.sub(_sorted_attrs, text)
    text = _TEMP_PATH.sub("/tmp/…", text)
    text = _SPACES.sub(" ", text).strip()
    if not numbers:
        text = _NUMBER.sub("#", text)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def words(message: str) -> str:
    """The normalised message with its numbers left out: what a behaviour says, not the sizes it names ('Dimensions
    must be equal, but are # and #'). `kbtool bisect` compares releases by it."""
    return _NUMBER.sub("#", normalised_message(message or ""))


def magnitude(value: Optional[float]) -> str:
    """The power of ten of a difference: '1e-3' for 0.0023, '0' for none, 'non-finite' for NaN or inf."""
    if value is None or not math.isfinite(value):
        return "non-finite"
    if value == 0:
        return "0"
    return f"1e{math.floor(math.log10(abs(value)))}"


MAX_OUTPUTS = 8  # failing outputs fingerprinted one by one (a recorded fingerprint stays under 1000 characters)


def _shape(shape: Optional[List[int]]) -> str:
    return "(" + ",".join(str(d) for d in shape) + ")" if shape is not None else "?"


def _pair(expected: str, actual: str) -> str:
    """'a' when both agree, else 'actual!=expected' (the backend's, then the reference's)."""
    return expected if expected == actual else f"{actual}!={expected}"


def _leading_parts(status: str, message: str, d: Mapping[str, Any]) -> List[str]:
    """The status, the normalised message and, for a repeated run, how many runs disagreed: every format's first
    parts. A verdict on draws keeps no numbers: an unseeded draw's numbers (and their lengths) differ in every run."""
    nondeterministic = str(status) == "nondeterministic"
    parts = [str(status), normalised_message(message or "", numbers=not (d.get("draws") or nondeterministic))]
    if nondeterministic and d.get("runs") and d.get("disagreed"):
        parts.append("{} of the repeated runs disagree".format("all" if d["disagreed"] >= d["runs"] - 1 else "some"))
    return parts


def of(status: str, message: str, details: Optional[Mapping[str, Any]]) -> str:
    """The fingerprint of one result (its status, message and details, as the report carries them). A verdict on
    random draws (`details.draws`) keeps its words, not its numbers: an unseeded draw's statistic differs in every
    run, the property it breaks does not."""
    d: Dict[str, Any] = dict(details or {})
    parts = _leading_parts(status, message, d)
    if d.get("outputs"):
        failing = [out for out in d["outputs"] if out.get("status") != "pass"]
        for out in failing[:MAX_OUTPUTS]:
            own = _output_parts(out.get("details") or {}) or [normalised_message(out.get("message", ""))[:80]]
            parts.append("output {}: {}".format(out.get("index", "?"), " | ".join(own)))
        if len(failing) > MAX_OUTPUTS:
            parts.append(f"{len(failing) - MAX_OUTPUTS} more failing outputs")
    else:
        parts.extend(_output_parts(d))
    return " | ".join(p for p in parts if p)


def _output_parts(d: Mapping[str, Any]) -> List[str]:
    """One output's shape, dtype and value verdict, each its own part (those the details hold)."""
    parts = []
    shapes = (d.get("expected_shape"), d.get("actual_shape"))
    dtypes = (d.get("expected_dtype"), d.get("actual_dtype"))
    if any(s is not None for s in shapes):
        parts.append("shape " + _pair(_shape(shapes[0]), _shape(shapes[1])))
    if any(t is not None for t in dtypes):
        parts.append("dtype " + _pair(str(dtypes[0] or "?"), str(dtypes[1] or "?")))
    if d.get("draws"):
        return parts  # how many draws differ is luck (an unseeded draw), and the message says what broke
    if d.get("mismatched") is not None:
        first = d.get("first_index")
        parts.append(
            "values: {}/{} differ mask {} {} @ {}".format(
                d["mismatched"],
                d.get("size", "?"),
                d.get("mask", "?"),
                magnitude(d.get("max_abs_diff")) if d.get("max_abs_diff") is not None else "non-finite",
                _shape(first) if first is not None else "?",
            )
        )
    elif d.get("values"):
        parts.append(f"values: {d['values']}")
    return parts


def of_result(result: Any) -> str:
    """The fingerprint of a Result (or its report dict). A result marked `changed` keeps its verdict's status
    there (its own status says only that it changed)."""
    get = result.get if isinstance(result, Mapping) else lambda key, default=None: getattr(result, key, default)
    changed = get("changed")
    status = changed["status"] if changed else get("status")
    return of(str(getattr(status, "value", status)), get("message") or "", get("details"))


def of_first_format(status: str, message: str, details: Optional[Mapping[str, Any]]) -> str:
    """The fingerprint as kbtool wrote it before each output's shape, dtype and values were parts of their own (the
    format of the records a report of that kbtool carries, e.g. the H100 reports of main 2938746): one part for the
    differing values ('3/6 differ, max 1e-1, first (0,1), mask ab12cd34'), one for shape and dtype together
    ('(2,3) float32!=float64', '?' for what the details lack). `kbtool report judge` compares such a report's
    results with the entries it carries in this format; a record in it is never written any more."""
    d: Dict[str, Any] = dict(details or {})
    parts = _leading_parts(status, message, d)
    if d.get("mismatched") is not None and not d.get("draws"):
        first = d.get("first_index")
        parts.append(
            "{}/{} differ, max {}, first {}, mask {}".format(
                d["mismatched"],
                d.get("size", "?"),
                magnitude(d.get("max_abs_diff")) if d.get("max_abs_diff") is not None else "non-finite",
                _shape(first) if first is not None else "?",
                d.get("mask", "?"),
            )
        )
    shapes = (d.get("expected_shape"), d.get("actual_shape"))
    dtypes = (d.get("expected_dtype"), d.get("actual_dtype"))
    if any(s is not None for s in shapes) or any(t is not None for t in dtypes):
        pair = [(_shape(shapes[0]), _shape(shapes[1])), (str(dtypes[0] or "?"), str(dtypes[1] or "?"))]
        parts.append(" ".join(exp if exp == act else f"{act} != {exp}" for exp, act in pair))
    return " | ".join(p for p in parts if p)


def holds_for(recorded: "Recorded", result: Any) -> bool:
    """Whether the record holds for `result`: its fingerprint now, or (a record of the first format, which only an
    older kbtool wrote: its shape-and-dtype part has no word of its own) the result's fingerprint in that format."""
    if holds(recorded, of_result(result)):
        return True
    get = result.get if isinstance(result, Mapping) else lambda key, default=None: getattr(result, key, default)
    changed = get("changed")
    status = changed["status"] if changed else get("status")
    first = of_first_format(str(getattr(status, "value", status)), get("message") or "", get("details"))
    return first != of_result(result) and holds(recorded, first)


# A recorded result's fingerprint is one string, or a list of them: a result whose failure depends on what its worker
# ran before (PlaidML aborts on a zero-size Tile program in one process and raises in another) is explained while it
# fails in one of the ways the entry's reason names. Within a recorded fingerprint, ANY stands for any text inside one
# part (no ' | '): for a backend whose wrong values vary from run to run (CNTK reading memory it never wrote) the
# status, message, shape and dtype still must hold. `kbtool known record` keeps such a record while it holds.
ANY = "<any>"
Recorded = Union[str, Sequence[str]]


def alternatives(recorded: Recorded) -> List[str]:
    return [recorded] if isinstance(recorded, str) else list(recorded)


def _pattern(recorded: str) -> "re.Pattern[str]":
    return re.compile("[^|]*".join(re.escape(part) for part in recorded.split(ANY)) + r"\Z")


def holds(recorded: Recorded, now: str) -> bool:
    """Whether the fingerprint `now` is one the record allows: equal to one of its alternatives, or matched by one
    that holds ANY."""
    return any(now == was or (ANY in was and _pattern(was).match(now) is not None) for was in alternatives(recorded))
