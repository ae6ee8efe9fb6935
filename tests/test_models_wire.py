"""The models wire decoded on the controller's side (kbtool/models/wire.py), on synthetic replies: no backend."""

from typing import Any, Dict, List

import numpy as np
import pytest

from kbtool.models import wire
from kbtool.runners.messages import Reply


def _model_reply(train: Dict[str, Any]) -> Reply:
    arrays: List[Any] = [np.ones((2, 3)), np.full((2, 4), 2.0), np.float64(0.5), np.ones((3, 4)), np.ones(4)]
    header = {
        "status": "ok",
        "model": "m",
        "flavor": "keras2",
        "keras": "2.3.1",
        "layers": [
            {"name": "x", "class": "InputLayer", "inbound": [], "outputs": [0]},
            {"name": "d", "class": "Dense", "inbound": ["x"], "outputs": [1]},
        ],
        "outputs": [1],
        "weights": [["d/kernel:0", [3, 4]], ["d/bias:0", [4]]],
        "train": train,
        "seconds": {"build": 0.5, "forward": 0.25, "train": 0.25},
    }
    return Reply(header, [np.asarray(a) for a in arrays])


def test_an_ok_reply_becomes_a_run_with_layers_outputs_weights_loss_and_gradients() -> None:
    run = wire.decode_run("tensorflow1", "m", _model_reply({"loss": 2, "gradients": [3, 4]}), {"keras": "2.3.1"})
    assert run.status == "ok" and run.engine == "tensorflow1" and run.model == "m"
    assert [(o.name, o.cls, o.inbound) for o in run.layers] == [("x", "InputLayer", ()), ("d", "Dense", ("x",))]
    assert run.layers[1].arrays[0].shape == (2, 4) and run.outputs[0][0, 0] == 2.0
    assert run.weights == [("d/kernel:0", (3, 4)), ("d/bias:0", (4,))]
    assert run.loss == 0.5 and [g.shape for g in run.gradients] == [(3, 4), (4,)]
    assert run.train_note == "" and run.seconds == 1.0 and run.versions["keras"] == "2.3.1"


def test_a_training_note_replaces_loss_and_gradients() -> None:
    run = wire.decode_run("keras3-numpy", "m", _model_reply({"note": "does not train"}))
    assert run.status == "ok" and run.train_note == "does not train" and run.loss is None and run.gradients == []


@pytest.mark.parametrize(
    "header, status",
    [
        ({"status": "unsupported", "error": "no Xception here"}, "unsupported"),
        ({"status": "raised", "error": "ValueError: bad"}, "error"),
        ({"status": "crash", "message": "worker killed by signal SIGSEGV"}, "crash"),
        ({"status": "timeout", "message": "no answer within 5 s; worker killed"}, "timeout"),
        ({"status": "unavailable", "message": "worker could not start: ImportError"}, "could_not_start"),
        ({"status": "cancelled", "message": "cancelled"}, "error"),
    ],
)
def test_a_failure_reply_becomes_the_runs_status_with_its_one_line_reason(header: Dict[str, Any], status: str) -> None:
    run = wire.decode_run("theano", "m", Reply(header, []))
    assert run.status == status and run.reason == (header.get("error") or header["message"]) and run.layers == []


def test_an_array_index_out_of_range_is_an_error_run_saying_so() -> None:
    reply = _model_reply({"loss": 9, "gradients": []})
    run = wire.decode_run("cntk", "m", reply)
    assert run.status == "error" and "the loss is array 9 of 5" in run.reason


def test_a_missing_field_is_an_error_run_not_a_traceback() -> None:
    reply = _model_reply({"loss": 2, "gradients": []})
    del reply.header["layers"]
    run = wire.decode_run("cntk", "m", reply)
    assert run.status == "error" and "'layers'" in run.reason


def _trace_reply() -> Reply:
    arrays = [np.ones((2, 5, 5, 3)), np.ones((3, 3, 3, 8)), np.zeros((2, 3, 3, 8))]
    calls = [
        {
            "fn": "conv2d",
            "args": [{"array": 0}, {"array": 1}],
            "kwargs": {"strides": {"tuple": [1, 1]}, "padding": "valid", "opts": {"dict": {"a": {"array": 1}}}},
            "output": 2,
        },
        {
            "fn": "floatx",
            "args": [],
            "kwargs": {"f": {"repr": "<function relu>"}, "l": [1, {"tuple": []}]},
            "output": None,
        },
    ]
    return Reply({"status": "ok", "calls": calls}, arrays)


def test_traced_calls_keep_array_markers_rebuild_tuples_and_dicts_and_resolve_to_the_arrays() -> None:
    conv, floatx = wire.decode_calls(_trace_reply())
    assert conv.fn == "conv2d" and conv.args == ({"array": 0}, {"array": 1})
    assert conv.kwargs["strides"] == (1, 1) and conv.kwargs["opts"] == {"a": {"array": 1}}
    assert conv.output is not None and conv.output.shape == (2, 3, 3, 8) and len(conv.arrays) == 3
    assert floatx.output is None and floatx.kwargs == {"f": {"repr": "<function relu>"}, "l": [1, ()]}
    x, kernel = wire.resolve(conv.args, conv.arrays)
    assert x.shape == (2, 5, 5, 3) and kernel.shape == (3, 3, 3, 8)
    assert wire.resolve(conv.kwargs, conv.arrays)["opts"]["a"].shape == (3, 3, 3, 8)


def test_a_trace_argument_out_of_range_or_a_failed_trace_raises_wire_error_with_the_status() -> None:
    reply = _trace_reply()
    reply.header["calls"][0]["args"] = [{"array": 7}]
    with pytest.raises(wire.WireError, match="an argument is array 7 of 3"):
        wire.decode_calls(reply)
    with pytest.raises(wire.WireError) as failed:
        wire.decode_calls(Reply({"status": "timeout", "message": "no answer within 9 s; worker killed"}, []))
    assert failed.value.status == "timeout" and str(failed.value) == "no answer within 9 s; worker killed"
