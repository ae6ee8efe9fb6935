"""A model that raised: where (the worker's modelzoo/raised.py: the layer from the traceback, the outermost backend
call in flight with its arguments as they came in), that place as the finding's localisation (compare.py), and its
call replayed at op level as a spec case of the described shapes (localise.localise_error). No backend: a fake
Keras API whose K is NumPy, and an op-level replay stand-in."""

import types

import numpy as np

from kbtool.models import compare, localise
from kbtool.models.records import EngineRun, Localisation, ModelResult
from kbtool.specs import loader
from kbtool.worker.modelzoo import raised


class Layer:
    def __init__(self, name):
        self.name = name


class Conv(Layer):
    def call(self, x):
        return fake_k.conv2d(x, np.zeros((3, 3, 4, 2), "float32"), padding="same")


def _conv2d(x, kernel, strides=(1, 1), padding="valid"):
    x = "reassigned before raising"  # a backend reassigns its arguments: the in-flight record keeps what came in
    return fake_k.helper(x, kernel)


def _helper(x, kernel):
    raise ValueError("kernel dim 3 <= input dim 2")


fake_k = types.SimpleNamespace(
    conv2d=_conv2d, helper=_helper, int_shape=lambda v: tuple(v.shape), dtype=lambda v: str(v.dtype)
)
API = types.SimpleNamespace(
    keras=types.SimpleNamespace(layers=types.SimpleNamespace(Layer=Layer)), K=fake_k, flavor="keras2"
)


def test_the_outermost_call_in_flight_is_kept_with_its_arguments_as_they_came_in():
    watcher = raised.InFlight(Layer)
    fake_k.conv2d, fake_k.helper = watcher.wrap("conv2d", _conv2d), watcher.wrap("helper", _helper)
    try:
        Conv("block5_conv1").call(np.zeros((2, 2, 2, 4), "float32"))
    except ValueError as exc:
        _, layer = raised.layer_frame(API, raised.frames_of(exc))
    finally:
        fake_k.conv2d, fake_k.helper = _conv2d, _helper
    assert layer.name == "block5_conv1"
    assert watcher.layer is not None and watcher.layer.name == "block5_conv1"  # from the live stack, as it raised:
    # Keras 3 re-raises with its layers' frames trimmed from the traceback, the live stack still has them
    name, fn, args, kwargs = watcher.failed
    assert name == "conv2d"  # not helper: that ran inside it
    described = raised.arguments(API, fn, args, kwargs)
    assert described == {
        "x": {"shape": [2, 2, 2, 4], "dtype": "float32"},
        "kernel": {"shape": [3, 3, 4, 2], "dtype": "float32"},
        "padding": "same",
    }
    assert raised.describe(API, (1, 2)) == {"tuple": [1, 2]} and raised.describe(API, object())["repr"]


WHERE = {
    "layer": "block5_conv1",
    "class": "Conv2D",
    "fn": "conv2d",
    "args": {
        "x": {"shape": [None, 2, 2, 8], "dtype": "float32"},
        "kernel": {"shape": [3, 3, 8, 8], "dtype": "float32"},
        "strides": {"tuple": [1, 1]},
        "padding": "same",
    },
}


def test_a_run_that_raised_is_an_error_localised_to_its_layer_and_call():
    run = EngineRun("cntk", "vgg16", "error", reason="ValueError: kernel dim 3 <= input dim 2", raised_in=WHERE)
    oracle = EngineRun("numpy", "vgg16", "ok")
    result = compare.compare_run(run, oracle, compare.OracleChoice("reference", "numpy", "the reference"))
    assert result.verdict == "error" and result.raised_args == WHERE["args"]
    where = result.localisation
    assert (where.layer, where.layer_class, where.call) == ("block5_conv1", "Conv2D", "conv2d")
    assert where.call_text == "K.conv2d(x[None,2,2,8] float32, kernel[3,3,8,8] float32, strides=(1, 1), padding='same')"
    outside = compare.raised_localisation({"layer": "lambda_1", "class": "Lambda"})
    assert outside.call is None and "outside any backend function" in outside.why_not
    assert compare.raised_localisation({}) is None


def _error_result():
    where = Localisation("block5_conv1", "Conv2D", "conv2d", "K.conv2d(...)")
    return ModelResult("vgg16", "cntk", "error", "reference", localisation=where, raised_args=WHERE["args"])


def test_the_raising_call_is_replayed_at_op_level_as_a_case_of_its_shapes():
    spec = loader.load()
    seen = []

    def unexplained(extended, op, case, engine):
        seen.append([c for c in extended.ops[op]["cases"] if c["id"] == case][0])
        return localise.OpVerdict("error", None, "ValueError: kernel dim 3 <= input dim 2")

    where, emitted = localise.localise_error(_error_result(), spec, replay=unexplained)
    assert where.case_id == "model.vgg16.cntk.block5_conv1" and emitted.op == "conv2d"
    assert seen[0]["inputs"]["x"] == {"shape": [2, 2, 2, 8], "dtype": "float32"}  # the graph's None batch is 2
    assert seen[0]["kwargs"] == {"strides": [1, 1], "padding": "same"}

    def known(extended, op, case, engine):
        return localise.OpVerdict("known", "conv2d-0123abcd", "a reason")

    where, emitted = localise.localise_error(_error_result(), spec, replay=known)
    assert (where.verdict, where.known_id, emitted) == ("known", "conv2d-0123abcd", None)


def test_a_replay_is_judged_in_the_mode_the_engine_runs_models_in(monkeypatch):
    from kbtool import plan
    from kbtool.check import run as check_run

    spec = loader.load()
    rows = []
    monkeypatch.setattr(plan, "make_plan", lambda spec, selection: None)
    monkeypatch.setattr(check_run, "run_check", lambda plan: {"results": rows})
    eager = {"op": "conv2d", "case": "c", "backend": "cntk", "mode": "eager", "status": "known", "known": "x"}
    unseen = {"status": "error", "message": "RuntimeError: an error no entry has seen"}
    symbolic = dict(eager, mode="symbolic", **unseen)
    rows[:] = [eager, symbolic]  # cntk runs models as graphs: the symbolic failure is the model's
    assert localise.check_replay(spec, "conv2d", "c", "cntk").status == "error"
    rows[:] = [dict(eager, **unseen), dict(symbolic, status="known")]
    assert localise.check_replay(spec, "conv2d", "c", "cntk").status == "known"
    rows[:] = [eager, dict(symbolic, status="pass")]
    assert localise.check_replay(spec, "conv2d", "c", "cntk").status == "pass"
    rows[:] = [dict(eager, backend="keras3-jax", **unseen), dict(symbolic, backend="keras3-jax", status="pass")]
    assert localise.check_replay(spec, "conv2d", "c", "keras3-jax").status == "error"  # keras3 runs models eagerly
    assert [localise.model_mode(e) for e in ("theano", "tensorflow1[keras=2.2.4]", "mine@cntk", "tensorflow")] == [
        "symbolic",
        "symbolic",
        "symbolic",
        "eager",
    ]
