"""Localisation to the K.* call: the calls a divergent layer made on its engine (part W's trace: TracedCall records,
in call order) each replayed on the NumPy reference with the same argument values, and judged as the spec judges
that op (its case built from the call, kbtool.verdicts.judge with the op's tolerance or error bound); the first call
whose output differs is the cause (its inputs agree by construction: the reference gets the engine's own). That
call is then replayed at op level as a spec case on the engine, through kbtool's check machinery (plan, workers,
known differences): when a known difference explains the replay, the finding is `known` and names the entry;
else it is `unexplained` and its case is what `--emit-cases` writes.

A call is named by its K.* function on Keras 2 engines and tf_keras; on Keras 3 engines the trace names a Keras 3
function ("ops.conv"), mapped back to the K.* function whose specs/keras3_map.yaml expression calls it (the
expression's own argument names bind the call's arguments; a constant the expression tests for, as pool2d's
`pool_mode == 'avg'`, is passed); several candidates (conv1d, conv2d, conv3d for ops.conv) are tried on the
reference, the first whose output has the traced shape wins. A function the map does not reach has no K.*
counterpart, and says so.

Known at op level: the check machinery's own matching (an entry whose case glob and status/match name the replay),
or an entry of that op and backend whose recorded fingerprints have the replay's form (status, message and
magnitude class, the counts, element mask and index that are particular to one case set aside).
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from kbtool.errors import KbtoolError
from kbtool.models.emit import EmittedCase, case_id, raw_case
from kbtool.models.records import Localisation, ModelResult, TracedCall
from kbtool.specs.loader import Spec

KERAS3_PREFIX = "ops."  # how a Keras 3 engine's trace names a keras.ops function


class Unreplayable(Exception):
    """A traced call the reference cannot be given (an argument recorded only as its repr, a function not in the
    spec, one the keras3 map does not reach)."""


@dataclass(frozen=True)
class KCall:
    """A traced call as the reference takes it: the K.* op and its arguments by parameter name."""

    op: str
    params: Dict[str, Any]


@dataclass(frozen=True)
class Cause:
    """The first traced call whose output differs from the reference's, and how it differs."""

    index: int  # its position among the layer's traced calls
    call: KCall
    traced: str  # the function as traced ("conv2d", "ops.conv")
    message: str  # the verdict's words
    # judged against its definition's loop in the worker (K.rnn), not the reference: no spec case can carry it
    definitional: bool = False
    # a Keras 3 keras.ops function named as a K.* function that specs/keras3_map.yaml says it is not (the port's
    # K.* follows the map, so op level cannot see it): judged against the reference's K.* namesake
    namesake: bool = False
    # a backend function that is not a documented K.* function: not judged, named as the layer's only call that
    # could not be judged
    undocumented: bool = False


@dataclass(frozen=True)
class OpVerdict:
    """What the op-level replay of a call on its engine came to."""

    status: str  # the check result's status: pass, known, fail, error, ... ("" when it did not run)
    known_id: Optional[str] = None
    message: str = ""


# (spec with the case added, op, case id, engine) -> what the check machinery says of the case on that engine
OpReplay = Callable[[Spec, str, str, str], OpVerdict]


def decode(value: Any, arrays: Sequence[NDArray[Any]]) -> Any:
    """A traced argument as a Python value: {"array": i} the array, {"tuple": [...]} a tuple, lists element-wise."""
    if isinstance(value, dict):
        if set(value) == {"array"}:
            return arrays[int(value["array"])]
        if set(value) == {"tuple"}:
            return tuple(decode(v, arrays) for v in value["tuple"])
        if set(value) == {"repr"}:
            raise Unreplayable(f"an argument was recorded only as {str(value['repr'])[:60]}")
        return {k: decode(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v, arrays) for v in value]
    return value


def _params(entry: Mapping[str, Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> Dict[str, Any]:
    """Positional and keyword arguments by the op's parameter names."""
    names = [p["name"] for p in entry.get("signature", []) if not p["name"].startswith("*")]
    if len(args) > len(names):
        raise Unreplayable(f"{len(args)} positional arguments for {len(names)} parameters")
    return {**dict(zip(names, args)), **dict(kwargs)}


# ------------------------------------------------------------------------------------------ Keras 3 names -> K.*


def _condition(test: ast.expr) -> Optional[Tuple[str, Any]]:
    """(name, constant) of a test `name == constant`, else None."""
    if (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.comparators[0], ast.Constant)
    ):
        return test.left.id, test.comparators[0].value
    return None


def _calls(body: Sequence[ast.stmt], constants: Dict[str, Any], out: List[Tuple[ast.Call, Dict[str, Any]]]) -> None:
    """Every call of the statements, with the constants an enclosing `if name == constant:` fixes."""
    for statement in body:
        if isinstance(statement, ast.If):
            fixed = _condition(statement.test)
            _calls(statement.body, {**constants, fixed[0]: fixed[1]} if fixed else constants, out)
            _calls(statement.orelse, constants, out)
            continue
        out.extend((node, constants) for node in ast.walk(statement) if isinstance(node, ast.Call))


def keras3_candidates(function: str, expressions: Mapping[str, str]) -> List[Tuple[str, ast.Call, Dict[str, Any]]]:
    """The K.* ops whose Keras 3 expression calls `function` (e.g. "conv" for ops.conv): (op, that call, the
    constants it runs under), in the map's order."""
    found = []
    for op, code in expressions.items():
        try:
            tree = ast.parse(textwrap.dedent(code))
        except SyntaxError:
            continue
        calls: List[Tuple[ast.Call, Dict[str, Any]]] = []
        _calls(tree.body, {}, calls)
        for node, constants in calls:
            if ast.unparse(node.func).split(".")[-1] == function and ast.unparse(node.func).startswith("keras."):
                found.append((op, node, constants))
                break
    return found


def _bind_keras3(
    node: ast.Call, constants: Mapping[str, Any], args: Sequence[Any], kwargs: Mapping[str, Any], params: Sequence[str]
) -> Dict[str, Any]:
    """The K.* arguments of a Keras 3 call, through the names the map's expression passes them by."""
    out: Dict[str, Any] = dict(constants)
    for i, value in enumerate(args):
        if i >= len(node.args) or not isinstance(node.args[i], ast.Name):
            raise Unreplayable(f"positional argument {i} has no K.* parameter in the map's expression")
        out[node.args[i].id] = value  # type: ignore[attr-defined]
    by_keyword = {kw.arg: kw.value.id for kw in node.keywords if kw.arg and isinstance(kw.value, ast.Name)}
    for key, value in kwargs.items():
        name = by_keyword.get(key, key if key in params else None)
        if name is not None:
            out[name] = value
        elif value is not None:
            raise Unreplayable(f"keyword {key!r} has no K.* parameter in the map's expression")
    return out


def resolve(call: TracedCall, spec: Spec, expressions: Mapping[str, str]) -> KCall:
    """The K.* call a traced call stands for (see the module's docstring); Unreplayable says why there is none."""
    args = [decode(a, call.arrays) for a in call.args]
    kwargs = {k: decode(v, call.arrays) for k, v in call.kwargs.items()}
    if not call.fn.startswith(KERAS3_PREFIX):
        if call.fn not in spec.ops:
            raise Unreplayable(f"K.{call.fn} is not a function of the spec")
        return KCall(call.fn, _params(spec.ops[call.fn], args, kwargs))
    function = call.fn[len(KERAS3_PREFIX) :]
    tried = []
    for op, node, constants in keras3_candidates(function, expressions):
        names = [p["name"] for p in spec.ops[op].get("signature", [])]
        try:
            params = _bind_keras3(node, constants, args, kwargs, names)
            out = getattr(_reference(), op)(**params)
        except Exception as exc:  # a candidate the call does not fit: the next one
            tried.append(f"{op} ({type(exc).__name__})")
            continue
        if call.output is None or np.shape(out) == np.shape(call.output):
            return KCall(op, params)
        tried.append(f"{op} (shape {np.shape(out)})")
    if not tried:
        raise Unreplayable(f"{call.fn} has no K.* counterpart in specs/keras3_map.yaml")
    raise Unreplayable(f"{call.fn}: no K.* counterpart fits the call: {', '.join(tried)}")


def _reference() -> Any:
    from kbtool import reference

    return reference


def map_expressions(spec: Spec) -> Dict[str, str]:
    """Each spec op's Keras 3 expression (specs/keras3_map.yaml), for the ops that have one."""
    from kbtool.specs import keras3_map

    rows = keras3_map.load(spec_ops=list(spec.ops)).rows
    return {row.op: row.keras3 for row in rows if row.keras3 is not None}


# ------------------------------------------------------------------------------------------ judging one call


def judge_call(spec: Spec, call: KCall, output: NDArray[Any]) -> Optional[str]:
    """Why the traced output of the call differs from the reference's (the spec's verdict for the op), or None when
    it agrees. Unreplayable when the call cannot be made a case or the reference cannot compute it."""
    from kbtool.reference.oracle import Oracle
    from kbtool.specs import binding, cases
    from kbtool.verdicts import judge
    from kbtool.worker import invoke, protocol

    entry = spec.ops[call.op]
    raw = raw_case(entry, call.params, "replay")
    try:
        case = cases.expand_case(call.op, entry, raw, seed=0)
    except (binding.BindingError, KbtoolError, ValueError, TypeError) as exc:
        raise Unreplayable(f"the call is no case of {call.op}: {exc}")
    expected = Oracle().expected(case)
    if expected[0]["status"] != protocol.OK:
        raise Unreplayable(f"the reference could not compute K.{call.op} on these arguments")
    outputs, arrays = invoke.encode_values([output], [None])  # type: ignore[no-untyped-call]
    verdict = judge(case, expected, ({"status": protocol.OK, "outputs": outputs, "sequence": False}, arrays))
    return None if verdict.passed else (verdict.message or verdict.status.value)


def by_definition(spec: Spec, traced: TracedCall) -> Optional[str]:
    """Why a call's outputs differ from what its definition gives (the worker's loop, definitions.py), judged with
    the op's float32 tolerance; None when they agree or there is no definition to judge by."""
    from kbtool.verdicts.values import compare_value

    if not traced.expected:
        return None
    got = traced.outputs or ((traced.output,) if traced.output is not None else ())
    if len(got) != len(traced.expected):
        return f"K.{traced.fn} returned {len(got)} outputs where its definition gives {len(traced.expected)}"
    tolerance = dict(spec.ops.get(traced.fn, {}).get("tolerance", {}) or {})
    names = ("last output", "outputs", *(f"state {i}" for i in range(len(got) - 2)))
    for name, expected, actual in zip(names, traced.expected, got):
        verdict = compare_value(expected, actual, tolerance)
        if not verdict.passed:
            return f"its {name} differs from the definition's loop over the step function: {verdict.message}"
    return None


def namesake_cause(index: int, traced: TracedCall, spec: Spec, expressions: Mapping[str, str]) -> Optional[Cause]:
    """A Keras 3 call `ops.X` where X is a K.* function whose map expression does not call keras.ops.X (the map's note
    says why: ops.hard_sigmoid is not K.hard_sigmoid), judged against the reference's K.X on the same arguments;
    None when that is not the case or the outputs agree."""
    function = traced.fn[len(KERAS3_PREFIX) :]
    if function not in spec.ops or function not in expressions or keras3_candidates(function, expressions):
        return None
    args = [decode(a, traced.arrays) for a in traced.args]
    kwargs = {k: decode(v, traced.arrays) for k, v in traced.kwargs.items()}
    call = KCall(function, _params(spec.ops[function], args, kwargs))
    assert traced.output is not None
    differs = judge_call(spec, call, traced.output)
    if differs is None:
        return None
    note = map_notes(spec).get(function) or "its map row names another expression"
    message = (
        f"the layer calls keras.ops.{function}, which is not K.{function} (specs/keras3_map.yaml: {note}): {differs}"
    )
    return Cause(index, call, traced.fn, message, namesake=True)


def map_notes(spec: Spec) -> Dict[str, str]:
    """Each spec op's note in specs/keras3_map.yaml, where its row has one."""
    from kbtool.specs import keras3_map

    return {row.op: row.note for row in keras3_map.load(spec_ops=list(spec.ops)).rows if row.note}


def undocumented_cause(calls: Sequence[TracedCall], unjudged: Sequence[Tuple[int, str]]) -> Optional[Cause]:
    """The layer's only call with an array output that could not be judged, when that is because it is no K.*
    function of the spec (keras-mxnet's BatchNormalization calls K.mxnet_batchnorm): named, not judged."""
    if len(unjudged) != 1 or "is not a function of the spec" not in unjudged[0][1]:
        return None
    index = unjudged[0][0]
    traced = calls[index]
    shapes = ", ".join("[{}] {}".format(",".join(str(d) for d in a.shape), a.dtype) for a in traced.arrays)
    message = (
        f"K.{traced.fn} is not a documented K.* function (the reference cannot replay it) and is the layer's only "
        f"call that could not be judged; its array arguments: {shapes or 'none'}"
    )
    return Cause(index, KCall(traced.fn, {}), traced.fn, message, undocumented=True)


def first_cause(calls: Sequence[TracedCall], spec: Spec) -> Tuple[Optional[Cause], List[str]]:
    """The first call whose output differs from the reference's, and notes on the calls that could not be judged;
    when none differs, the layer's one undocumented call (undocumented_cause), if that is all that was not judged."""
    expressions: Optional[Dict[str, str]] = None
    notes: List[str] = []
    unjudged: List[Tuple[int, str]] = []
    for index, traced in enumerate(calls):
        if traced.expected or traced.no_expected:
            differs = by_definition(spec, traced)
            if differs is not None:
                return Cause(index, KCall(traced.fn, {}), traced.fn, differs, definitional=True), notes
            if traced.no_expected:
                notes.append(f"call {index} ({traced.fn}): {traced.no_expected}")
            continue
        if traced.output is None:
            notes.append(f"call {index} ({traced.fn}): no array output to compare")
            continue
        try:
            if traced.fn.startswith(KERAS3_PREFIX):
                expressions = map_expressions(spec) if expressions is None else expressions
                namesake = namesake_cause(index, traced, spec, expressions)
                if namesake is not None:
                    return namesake, notes
            call = resolve(traced, spec, expressions or {})
            differs = judge_call(spec, call, traced.output)
        except Unreplayable as exc:
            notes.append(f"call {index} ({traced.fn}): {exc}")
            unjudged.append((index, str(exc)))
            continue
        if differs is not None:
            return Cause(index, call, traced.fn, differs), notes
    return undocumented_cause(calls, unjudged), notes


def call_text(call: KCall) -> str:
    """The call as one line: K.conv2d(x[2,5,5,3] float32, kernel[3,3,3,4] float32, padding='same')."""
    parts = []
    for name, value in call.params.items():
        if isinstance(value, np.ndarray):
            parts.append("{}[{}] {}".format(name, ",".join(str(d) for d in value.shape), value.dtype))
        else:
            parts.append(f"{name}={value!r}")
    return f"K.{call.op}({', '.join(parts)})"


# ------------------------------------------------------------------------------------------ op level


def _form(fp: str) -> str:
    """A fingerprint without what is particular to one case: element counts, mask, first index, shapes."""
    fp = re.sub(r"\d+/\d+ differ mask \w+", "differ", fp)
    fp = re.sub(r" @ \([^)]*\)", "", fp)
    return re.sub(r"\(\d[\d, ]*\)", "(…)", fp)


def known_by_form(spec: Spec, result: Mapping[str, Any]) -> Optional[str]:
    """The id of an entry of the result's op, backend and mode that recorded a result of the same form, else None."""
    from kbtool.check.run import known_entries_for
    from kbtool.known import fingerprint
    from kbtool.known.globs import backend_matches, matches

    now = _form(fingerprint.of(result["status"], result.get("message", ""), result.get("details")))
    for entry in known_entries_for(spec):
        if not (matches(result["op"], entry.op) and backend_matches(result["backend"], entry.backend)):
            continue
        if entry.mode is not None and not matches(str(result.get("mode", "")), entry.mode):
            continue  # an entry of eager results does not explain a symbolic one of the same form
        for recorded in (entry.results or {}).values():
            if any(_form(fp) == now for fp in fingerprint.alternatives(recorded)):
                return entry.id
    return None


def check_replay(spec: Spec, op: str, case: str, engine: str) -> OpVerdict:
    """The case run on the engine as `kbtool check --op OP --case ID --backend ENGINE` runs it (in-process), judged in
    the mode the engine runs models in (model_mode: CNTK's eager convolutions fail for a reason of their own that
    says nothing of a model's graph): known only when every failing result of that mode is explained, by check's
    matching or by form (an entry of that mode)."""
    from kbtool.check.run import known_entries_for, run_check
    from kbtool.plan import Selection, make_plan

    plan = make_plan(spec, Selection(ops=(op,), backends=(engine,), case_patterns=(case,)))
    report = run_check(plan)
    results = [r for r in report["results"] if r["op"] == op and r["case"] == case]
    if not results:
        return OpVerdict("", message="the op-level replay ran nothing")
    failing = [r for r in results if r["status"] != "pass"]
    if not failing:
        return OpVerdict("pass", message="the op-level replay passes on every mode")
    mode = model_mode(engine)
    relevant = failing
    if any(r.get("mode") == mode for r in results):  # the mode the model ran in speaks for it, where it ran
        relevant = [r for r in failing if r.get("mode") == mode]
        if not relevant:
            return OpVerdict("pass", message=f"the op-level replay passes in {mode} mode, the model's")
    explained: List[Tuple[Mapping[str, Any], str]] = []
    for r in relevant:
        if r["status"] == "known":
            ids = [e.id for e in known_entries_for(spec) if e.reason == r.get("known")]
            ident: Optional[str] = ids[0] if ids else "?"
        else:
            ident = known_by_form(spec, r)
        if ident is None:
            return OpVerdict(r["status"], None, r.get("message", ""))
        explained.append((r, ident))
    return OpVerdict("known", explained[0][1], explained[0][0].get("known") or explained[0][0].get("message", ""))


GRAPH_ENGINES = (
    "tensorflow1",
    "theano",
    "cntk",
    "mxnet",
    "plaidml",
)  # Keras 2.x engines: models run as K.function graphs


def model_mode(engine: str) -> str:
    """The check mode a model's calls run in on this engine: symbolic on the Keras 2.x graph engines (a release or a
    module@env of one too), eager on tf_keras and Keras 3."""
    from kbtool.runners import names

    base = engine.split("@")[-1]
    base = names.base_of(base) if names.is_release(base) else base
    return "symbolic" if base in GRAPH_ENGINES else "eager"


def localise(
    result: ModelResult, calls: Sequence[TracedCall], spec: Spec, replay: OpReplay = check_replay
) -> Tuple[Localisation, Optional[EmittedCase]]:
    """The result's divergent layer (`result.localisation`, from compare) narrowed to the K.* call that caused it,
    with the op level's verdict; the case to emit when no known difference explains it."""
    assert result.localisation is not None, "localise needs compare's divergent layer"
    where = result.localisation
    cause, notes = first_cause(calls, spec)
    if cause is None:
        why = f"none of the layer's {len(calls)} traced K.* calls differs from the reference"
        return _replace(where, why_not="; ".join([why, *notes])[:500]), None
    if cause.definitional:
        text = f"K.{cause.traced}(step_function, inputs, initial_states, ...)"
        why = f"{cause.message[:300]}; it takes a step function, so no spec case can carry it"
        return _replace(where, call=cause.traced, call_text=text, verdict="unexplained", why_not=why), None
    if cause.namesake or cause.undocumented:  # op level cannot see it: specs/known_models.yaml may explain it
        text = call_text(cause.call) if cause.namesake else f"K.{cause.traced}(...)"
        return _replace(where, call=cause.call.op, call_text=text, verdict="unexplained", why_not=cause.message), None
    ident = case_id(result.model, result.engine, where.layer)
    about = f"model {result.model} on {result.engine}: layer {where.layer} ({where.layer_class}), call {cause.index}"
    raw = raw_case(spec.ops[cause.call.op], cause.call.params, ident, about)
    emitted = EmittedCase(cause.call.op, raw)
    text = call_text(cause.call)
    ops = dict(spec.ops)
    ops[cause.call.op] = dict(ops[cause.call.op], cases=list(ops[cause.call.op].get("cases", [])) + [raw])
    extended = Spec(spec.path, dict(spec.data, ops=ops))
    verdict = replay(extended, cause.call.op, ident, result.engine)
    found = _replace(where, call=cause.call.op, call_text=text, case_id=ident, why_not="")
    if verdict.status == "known":
        return _replace(found, verdict="known", known_id=verdict.known_id, case_id=None), None
    why = "" if verdict.status != "pass" else f"{verdict.message} (the model differs: {cause.message[:120]})"
    return _replace(found, verdict="unexplained", why_not=why), emitted


def raised_case(op: str, entry: Mapping[str, Any], args: Mapping[str, Any], ident: str, about: str) -> Dict[str, Any]:
    """The spec case of a call that raised, from its arguments as the worker described them: tensors as seeded inputs
    of their shape and dtype (a dim the graph left None is the zoo's batch, 2), the rest as kwargs."""
    names = [p["name"] for p in entry.get("signature", []) if not p["name"].startswith("*")]
    inputs: Dict[str, Any] = {}
    kwargs: Dict[str, Any] = {}
    for name, value in args.items():
        if name not in names:
            raise Unreplayable(f"K.{op} has no parameter {name!r}")
        if isinstance(value, Mapping) and "shape" in value:
            inputs[name] = {"shape": [2 if d is None else int(d) for d in value["shape"]], "dtype": value["dtype"]}
        elif isinstance(value, Mapping) and "repr" in value:
            raise Unreplayable(f"argument {name} was recorded only as {str(value['repr'])[:60]}")
        else:
            kwargs[name] = list(value["tuple"]) if isinstance(value, Mapping) and "tuple" in value else value
    raw: Dict[str, Any] = {"id": ident, "about": about}
    if inputs:
        raw["inputs"] = inputs
    if kwargs:
        raw["kwargs"] = kwargs
    return raw


def localise_error(
    result: ModelResult, spec: Spec, replay: OpReplay = check_replay
) -> Tuple[Localisation, Optional[EmittedCase]]:
    """A run that raised in a K.* call (compare's localisation from the worker's raised_in), replayed at op level: known
    when a known difference explains the call's result on the engine, else the case to emit."""
    assert result.localisation is not None and result.localisation.call, "localise_error needs the raising call"
    where = result.localisation
    op = str(where.call)
    if op not in spec.ops:
        return _replace(where, why_not=f"it raised in {op}, which is not a K.* function of the spec"), None
    ident = case_id(result.model, result.engine, where.layer)
    about = f"model {result.model} on {result.engine}: layer {where.layer} ({where.layer_class}) raised in K.{op}"
    try:
        raw = raised_case(op, spec.ops[op], result.raised_args, ident, about)
    except Unreplayable as exc:
        return _replace(where, why_not=f"the raising call cannot be replayed: {exc}"), None
    ops = dict(spec.ops)
    ops[op] = dict(ops[op], cases=list(ops[op].get("cases", [])) + [raw])
    verdict = replay(Spec(spec.path, dict(spec.data, ops=ops)), op, ident, result.engine)
    if verdict.status == "known":
        return _replace(where, verdict="known", known_id=verdict.known_id), None
    why = "the call alone does not raise at op level" if verdict.status == "pass" else ""
    return _replace(where, case_id=ident, why_not=why), EmittedCase(op, raw)


def _replace(where: Localisation, **changes: Any) -> Localisation:
    from dataclasses import replace

    return replace(where, **changes)
