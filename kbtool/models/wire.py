"""The controller's side of the models wire: a `model` request to an engine's worker decoded into an EngineRun, a
`model_trace` request into the TracedCalls of one layer. The worker's side is kbtool/worker/modelzoo/serve.py.

A reply the client could not get (the worker crashed, hung, could not start) becomes the run's status; a reply that
does not follow the wire (an index out of range, a field missing) is an `error` run whose reason says what is wrong.
In a TracedCall's args and kwargs an array is {"array": i} (an index into its `arrays`; `resolve` puts the arrays in),
a tuple a Python tuple, a dict a dict, and what the worker could not carry {"repr": text}."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from kbtool.models.records import EngineRun, LayerOutput, TracedCall
from kbtool.runners.client import WorkerClient
from kbtool.runners.messages import CANCELLED, CRASH, OK, RAISED, TIMEOUT, UNAVAILABLE, UNSUPPORTED, Reply, Request

# the client's and the worker's statuses -> EngineRun's (records.RUN_STATUSES)
_STATUS = {
    UNSUPPORTED: "unsupported",
    RAISED: "error",
    CRASH: "crash",
    TIMEOUT: "timeout",
    UNAVAILABLE: "could_not_start",
    CANCELLED: "error",
}


class WireError(Exception):
    """A reply that does not follow the models wire, or (trace_layer) a request that got no answer: `status` is one
    of records.RUN_STATUSES, the message one line."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


def _failure(reply: Reply) -> Optional[WireError]:
    """Why a reply is not an answer (None when its status is ok)."""
    status = reply.status or ""
    if status == OK:
        return None
    reason = str(reply.header.get("error") or reply.message or f"the worker answered {status!r}")
    return WireError(_STATUS.get(status, "error"), " ".join(reason.split()))


def _array(arrays: Sequence[NDArray[Any]], index: object, what: str) -> NDArray[Any]:
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(arrays):
        raise WireError("error", f"malformed reply: {what} is array {index!r} of {len(arrays)}")
    return arrays[index]


def _field(header: Mapping[str, Any], name: str, kind: type) -> Any:
    value = header.get(name)
    if not isinstance(value, kind):
        raise WireError("error", f"malformed reply: {name!r} is {type(value).__name__}, not {kind.__name__}")
    return value


def _layers(header: Mapping[str, Any], arrays: Sequence[NDArray[Any]]) -> List[LayerOutput]:
    layers = []
    for entry in _field(header, "layers", list):
        if not isinstance(entry, dict):
            raise WireError("error", "malformed reply: a layer entry is not an object")
        name = str(entry.get("name"))
        outputs = [_array(arrays, i, f"layer {name}'s output") for i in _field(entry, "outputs", list)]
        inbound = tuple(str(n) for n in _field(entry, "inbound", list))
        layers.append(LayerOutput(name, str(entry.get("class")), inbound, tuple(outputs)))
    return layers


def _train(run: EngineRun, header: Mapping[str, Any], arrays: Sequence[NDArray[Any]]) -> None:
    train = _field(header, "train", dict)
    if "note" in train:
        run.train_note = str(train["note"])
        run.train_raised = bool(train.get("raised"))
        return
    run.loss = float(np.asarray(_array(arrays, train.get("loss"), "the loss")).ravel()[0])
    run.gradients = [_array(arrays, i, "a gradient") for i in _field(train, "gradients", list)]
    run.trainable = [str(key) for key in train.get("trainable") or []]


def _seconds(header: Mapping[str, Any]) -> float:
    seconds = header.get("seconds")
    if isinstance(seconds, dict):
        return float(sum(float(v) for v in seconds.values() if isinstance(v, (int, float))))
    return 0.0


def decode_run(engine: str, model: str, reply: Reply, versions: Optional[Mapping[str, Any]] = None) -> EngineRun:
    """An EngineRun from a `model` reply (or the client's failure reply)."""
    run = EngineRun(engine, model, "ok", versions={str(k): str(v) for k, v in (versions or {}).items()})
    try:
        failed = _failure(reply)
        if failed is not None:
            raise failed
        header, arrays = reply.header, reply.arrays
        run.layers = _layers(header, arrays)
        run.outputs = [_array(arrays, i, "a model output") for i in _field(header, "outputs", list)]
        run.weights = [(str(w[0]), tuple(int(d) for d in w[1])) for w in _field(header, "weights", list)]
        _train(run, header, arrays)
        run.seconds = _seconds(header)
        if header.get("keras"):
            run.versions.setdefault("keras", str(header["keras"]))
    except WireError as exc:
        where = reply.header.get("raised_in") if isinstance(reply.header, Mapping) else None
        raised_in = dict(where) if isinstance(where, Mapping) else {}
        return EngineRun(engine, model, exc.status, reason=str(exc), versions=run.versions, raised_in=raised_in)
    except (TypeError, ValueError, IndexError) as exc:
        return EngineRun(engine, model, "error", reason=f"malformed reply: {exc}", versions=run.versions)
    return run


def _decode_value(value: Any, arrays: Sequence[NDArray[Any]]) -> Any:
    """A traced argument from the wire: {"array": i} kept (its index checked), tuples and dicts rebuilt."""
    if isinstance(value, list):
        return [_decode_value(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if "array" in value:
        _array(arrays, value["array"], "an argument")
        return {"array": value["array"]}
    if isinstance(value.get("tuple"), list):
        return tuple(_decode_value(v, arrays) for v in value["tuple"])
    if isinstance(value.get("dict"), dict):
        return {str(k): _decode_value(v, arrays) for k, v in value["dict"].items()}
    return {"repr": str(value.get("repr", value))}


def resolve(value: Any, arrays: Sequence[NDArray[Any]]) -> Any:
    """A TracedCall's argument with its {"array": i} markers replaced by the arrays (for a replay)."""
    if isinstance(value, list):
        return [resolve(v, arrays) for v in value]
    if isinstance(value, tuple):
        return tuple(resolve(v, arrays) for v in value)
    if isinstance(value, dict):
        if set(value) == {"array"}:
            return arrays[value["array"]]
        if set(value) == {"repr"}:
            return value
        return {k: resolve(v, arrays) for k, v in value.items()}
    return value


def _arrays(arrays: Tuple[NDArray[Any], ...], indices: Any, what: str) -> Tuple[NDArray[Any], ...]:
    return tuple(_array(arrays, i, what) for i in (indices or []))


def decode_calls(reply: Reply) -> List[TracedCall]:
    """The TracedCalls of a `model_trace` reply; WireError for a failure or a malformed reply."""
    failed = _failure(reply)
    if failed is not None:
        raise failed
    arrays = tuple(reply.arrays)
    calls = []
    try:
        for entry in _field(reply.header, "calls", list):
            output = entry.get("output")
            calls.append(
                TracedCall(
                    fn=str(entry["fn"]),
                    args=tuple(_decode_value(a, arrays) for a in entry.get("args", [])),
                    kwargs={str(k): _decode_value(v, arrays) for k, v in dict(entry.get("kwargs", {})).items()},
                    arrays=arrays,
                    output=None if output is None else _array(arrays, output, f"{entry['fn']}'s output"),
                    outputs=_arrays(arrays, entry.get("outputs"), f"{entry['fn']}'s outputs"),
                    expected=_arrays(arrays, entry.get("expected"), f"{entry['fn']}'s definition"),
                    no_expected=str(entry.get("no_expected", "")),
                )
            )
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise WireError("error", f"malformed reply: {type(exc).__name__}: {exc}") from None
    return calls


def run_model(client: WorkerClient, model: str, seed: int, train: bool, timeout: float) -> EngineRun:
    """Run `model` (the zoo's name) on the client's engine: forward, and one training step where `train`."""
    request = Request("model", {"model": model, "seed": int(seed), "train": bool(train)}, (), timeout)
    reply = client.request(request)
    hello: Dict[str, Any] = dict(client.hello or {})
    return decode_run(client.launch.backend, model, reply, hello.get("versions"))


def trace_layer(
    client: WorkerClient, model: str, seed: int, layer: str, inputs: Sequence[NDArray[Any]], timeout: float
) -> List[TracedCall]:
    """The K.* calls `layer` of `model` makes on `inputs` (its input values, inbound order) on the client's engine;
    WireError (its status: crash, timeout, could_not_start, unsupported, error) when there is no answer."""
    fields = {"model": model, "seed": int(seed), "layer": layer}
    reply = client.request(Request("model_trace", fields, tuple(np.asarray(a) for a in inputs), timeout))
    return decode_calls(reply)


__all__ = ["WireError", "decode_calls", "decode_run", "resolve", "run_model", "trace_layer"]
