"""`kbtool models` end to end without a backend: the engines planned, one (fake) worker per engine running each
model through the wire's run_model, the judging and localising stages stubbed at their seams, the report written
and rendered, the exit codes (0 explained, 1 unexplained, 2 usage or nothing compared), and bad input in one line."""

import json
import sys
import types

import numpy as np
import pytest

import kbtool.models
from kbtool.models import execute
from kbtool.models import report as models_report
from kbtool.models.records import Difference, EngineRun, LayerOutput, Localisation, ModelResult, TracedCall
from kbtool.runners.base import Launch
from kbtool.runners.session import Cancel
from tests.helpers import invoke_cli

CLOSE = Difference(0.0, 0.0, 0.0, 1e-3, False)
FAR = Difference(0.5, 2.0, 0.1, 1e-3, True)


def _launch(name):
    return Launch(backend=name, python=sys.executable, module="kbtool.reference")


def _engines(*names, unsupported=("keras-numpy",)):
    engines = [execute.Engine("numpy", _launch("numpy"), oracle=True)]
    engines += [execute.Engine(n, _launch(n)) for n in names]
    engines += [execute.Engine(n, status="unsupported", reason=execute.KERAS_NUMPY_REASON) for n in unsupported]
    return engines


class FakeWorker:
    def __init__(self, engine, ready=True):
        self.ready, self.client = ready, types.SimpleNamespace(engine=engine)
        self.hello = {"versions": {"keras": "2.3.1"}, "python": "3.11"}
        self.why_not_ready = "ImportError: no module named theano"


class FakeSession:
    started = []

    def __init__(self, engine, ready=True):
        self.engine, self.ready = engine, ready

    def __enter__(self):
        FakeSession.started.append(self.engine.name)
        return self

    def __exit__(self, *exc):
        self.stop()

    def worker(self):
        return FakeWorker(self.engine.name, self.ready)

    def stop(self):
        pass


def _run_model(client, model, seed, train, timeout):
    layers = [
        LayerOutput("x", "InputLayer", (), (np.ones((3, 8), np.float32),)),
        LayerOutput("dense_1", "Dense", ("x",), (np.ones((3, 16), np.float32),)),
    ]
    if client.engine == "mxnet":
        raise ValueError("malformed reply")
    return EngineRun("?", model, "ok", layers=layers, outputs=[np.zeros((3, 4), np.float32)], seconds=0.5)


def _judge(bad=(), known=False):
    def judge(runs, models):
        results = []
        for engine, by_model in runs.items():
            if engine == "numpy":
                continue
            for model, run in by_model.items():
                if run.status != "ok":
                    results.append(ModelResult(model, engine, "error", "reference", reason=run.reason))
                elif (model, engine) in bad:
                    where = Localisation("dense_1", "Dense")
                    results.append(
                        ModelResult(model, engine, "unexplained", "reference", forward=FAR, localisation=where)
                    )
                else:
                    results.append(ModelResult(model, engine, "pass", "reference", forward=CLOSE, gradient=CLOSE))
        return results

    return judge


@pytest.fixture
def fakes(monkeypatch):
    """The seams of parts W and L stubbed: the wire, the judging, localise and emit; workers are FakeSessions."""
    traced = []
    wire = types.ModuleType("kbtool.models.wire")
    wire.run_model = _run_model

    def trace_layer(client, model, seed, layer, inputs, timeout):
        traced.append((client.engine, model, layer, [a.shape for a in inputs]))
        return [TracedCall("dot", ({"array": 0}, {"array": 1}), {}, tuple(inputs), None)]

    wire.trace_layer = trace_layer
    state = {"known": False}
    localise = types.ModuleType("kbtool.models.localise")

    def localise_fn(result, calls, spec):
        assert calls and calls[0].fn == "dot"
        verdict = "known" if state["known"] else "unexplained"
        where = Localisation(
            result.localisation.layer,
            "Dense",
            "dot",
            "K.dot(x[3,8] float32, kernel[8,16] float32)",
            verdict=verdict,
            known_id="dot-entry" if state["known"] else None,
            case_id=None if state["known"] else f"model.{result.model}.{result.engine}.dense_1",
        )
        return where, (None if state["known"] else ("dot", where.case_id))

    localise.localise = localise_fn
    emit = types.ModuleType("kbtool.models.emit")

    def write_cases(path, cases):
        with open(path, "w") as fh:
            fh.write("cases:\n" + "".join(f"  # {op} {case}\n" for op, case in cases))

    emit.write_cases = write_cases
    for name, module in (("wire", wire), ("localise", localise), ("emit", emit)):
        monkeypatch.setitem(sys.modules, f"kbtool.models.{name}", module)
        monkeypatch.setattr(kbtool.models, name, module, raising=False)
    monkeypatch.setattr("kbtool.specs.loader.load", lambda *a, **k: "the spec")
    monkeypatch.setattr(execute, "_session", lambda engine, seed, timeout, cancel: FakeSession(engine))
    monkeypatch.setattr(
        execute, "plan_engines", lambda names, device, jobs=None, not_run=None: _engines("tensorflow", "theano")
    )
    monkeypatch.setattr(execute, "judge", _judge())
    FakeSession.started = []
    return types.SimpleNamespace(monkeypatch=monkeypatch, traced=traced, state=state)


def test_every_model_explained_on_every_engine_exits_0_and_writes_a_valid_report(fakes, tmp_path):
    out = tmp_path / "models.json"
    result = invoke_cli("models", "-o", str(out), "--model", "mlp")
    assert result.exit_code == 0, result.output
    doc = models_report.load(str(out))
    assert [(r["model"], r["engine"], r["verdict"]) for r in doc["results"]] == [
        ("mlp", "tensorflow", "pass"),
        ("mlp", "theano", "pass"),
        ("mlp", "keras-numpy", "unsupported"),
    ]
    assert doc["oracle"] == "numpy" and doc["settings"]["models"] == ["mlp"]
    assert {e["name"]: e["status"] for e in doc["engines"]}["keras-numpy"] == "unsupported"
    assert all(e.get("seconds") is not None for e in doc["engines"] if e["status"] == "available")
    assert FakeSession.started[0] == "numpy"  # the oracle's worker first
    assert "ok: 2 pass, 1 unsupported" in result.stdout


def test_an_unexplained_inconsistency_is_localised_its_case_emitted_and_exits_1(fakes, tmp_path):
    fakes.monkeypatch.setattr(execute, "judge", _judge(bad={("mlp", "theano")}))
    cases, out = tmp_path / "found.yaml", tmp_path / "models.json"
    result = invoke_cli("models", "--model", "mlp", "--emit-cases", str(cases), "-o", str(out))
    assert result.exit_code == 1, result.output
    assert fakes.traced == [("theano", "mlp", "dense_1", [(3, 8)])]  # the layer's own inputs, from its engine's run
    shown = " ".join(result.stdout.split())  # wrapped at the terminal's width
    assert "mlp on theano: layer dense_1 (Dense) -> K.dot(x[3,8] float32, kernel[8,16] float32)" in shown
    assert "model.mlp.theano.dense_1" in cases.read_text()
    doc = models_report.load(str(out))
    assert doc["cases"] == {"path": str(cases), "written": 1}
    assert doc["results"][1]["localisation"]["case_id"] == "model.mlp.theano.dense_1"


def test_without_emit_cases_no_case_id_is_claimed(fakes):
    fakes.monkeypatch.setattr(execute, "judge", _judge(bad={("mlp", "theano")}))
    result = invoke_cli("models", "--model", "mlp", "--json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 1 and "case_id" not in doc["results"][1]["localisation"]
    assert "cases" not in doc


def test_a_finding_a_known_difference_explains_is_known_and_exits_0(fakes):
    fakes.monkeypatch.setattr(execute, "judge", _judge(bad={("mlp", "theano")}))
    fakes.state["known"] = True
    result = invoke_cli("models", "--model", "mlp", "--json")
    doc = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    theano = [r for r in doc["results"] if r["engine"] == "theano"][0]
    assert theano["verdict"] == "known" and theano["localisation"]["known_id"] == "dot-entry"


def test_a_run_that_compares_nothing_exits_2(fakes):
    fakes.monkeypatch.setattr(execute, "judge", lambda runs, models: [])
    result = invoke_cli("models", "--model", "mlp")
    assert result.exit_code == 2 and "nothing compared" in result.stdout


def test_only_the_oracle_runnable_is_refused_before_any_worker_starts(fakes):
    fakes.monkeypatch.setattr(execute, "plan_engines", lambda *a, **k: _engines())
    result = invoke_cli("models", "--model", "mlp")
    assert result.exit_code == 2 and FakeSession.started == []
    assert result.stderr.count("\n") == 1 and "nothing to compare" in result.stderr


@pytest.mark.parametrize(
    "args, words",
    [
        (["--model", "nope*"], "unknown model 'nope*'"),
        (["--backend", "tensorflw"], "unknown backend 'tensorflw'"),
        (["--backend", "my_backend@nowhere"], "unknown environment 'nowhere'"),
        (["-o", "missing/folder/x.json"], "no folder"),
        (["-o", "report.txt"], "cannot tell the format"),
        (["--emit-cases", "cases.txt"], "spec cases are YAML"),
        (["--json", "--format", "html"], "not both"),
        (["--timeout", "0"], "--timeout takes a number of seconds"),
        (["-q", "-v"], "not both"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, words, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke_cli("models", *args)
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and words in result.stderr and "Traceback" not in result.stderr


def test_list_shows_the_zoo_without_running(fakes):
    from kbtool.worker.modelzoo import zoo

    result = invoke_cli("models", "--list")
    assert result.exit_code == 0 and FakeSession.started == []
    for model in zoo.MODELS.values():
        flat = "".join(result.stdout.split())  # the about column wraps to the terminal's width
        assert model.name in result.stdout and "".join(model.about.split()) in flat
    listed = json.loads(invoke_cli("models", "--list", "--json", "--model", "mlp").stdout)
    assert listed == [{"name": "mlp", "family": zoo.MODELS["mlp"].family, "about": zoo.MODELS["mlp"].about}]


# ---------------------------------------------------------------------------- the stages, one by one


def test_an_engine_whose_worker_cannot_start_has_no_run_and_is_broken(fakes):
    fakes.monkeypatch.setattr(
        execute, "_session", lambda engine, seed, timeout, cancel: FakeSession(engine, ready=False)
    )
    outcome = execute.run_engine(execute.Engine("theano", _launch("theano")), ["mlp"], 0, True, 60.0, Cancel())
    assert outcome.runs["mlp"].status == "could_not_start" and outcome.info["status"] == "broken"
    assert "no module named theano" in outcome.info["reason"]


def test_a_model_whose_answer_cannot_be_decoded_costs_only_itself(fakes):
    runs, infos = execute.run_all(_engines("mxnet", "tensorflow"), ["mlp", "small_cnn"], 0, True, 60.0, 2, Cancel())
    assert runs["mxnet"]["mlp"].status == "error" and "malformed reply" in runs["mxnet"]["mlp"].reason
    assert runs["tensorflow"]["mlp"].status == "ok" and runs["tensorflow"]["mlp"].engine == "tensorflow"
    assert [i["name"] for i in infos] == ["numpy", "mxnet", "tensorflow", "keras-numpy"]


def test_a_cancelled_run_starts_no_more_models(fakes):
    cancel = Cancel()
    cancel.set("SIGINT")
    runs, _ = execute.run_all(_engines("tensorflow"), ["mlp"], 0, True, 60.0, 1, cancel)
    assert runs["tensorflow"] == {}


def test_engines_that_cannot_run_models_are_unsupported_with_why():
    engines = {e.name: e for e in execute.plan_engines(["keras-numpy", "my.mod@keras3-jax"])}
    assert engines["keras-numpy"].status == "unsupported" and "no placeholder" in engines["keras-numpy"].reason
    assert engines["my.mod@keras3-jax"].status == "unsupported" and "keras.ops" in engines["my.mod@keras3-jax"].reason


def test_the_oracle_is_the_reference_as_a_keras_backend_on_the_cpu(monkeypatch):
    from kbtool.runners.recipes import oracles

    monkeypatch.setattr(oracles, "reference_keras_launch", lambda: _launch("numpy"), raising=False)
    (engine,) = execute.plan_engines(["numpy"], device="gpu")
    assert engine.oracle and engine.launch is not None and engine.launch.device is None
    monkeypatch.delattr(oracles, "reference_keras_launch")
    (engine,) = execute.plan_engines(["numpy"])
    assert engine.launch is None and engine.status == "unsupported"


def test_a_model_that_changes_between_releases_is_a_finding():
    def run(engine, value):
        return EngineRun(engine, "mlp", "ok", outputs=[np.full((2, 2), value, np.float32)])

    old, new = "tensorflow1[keras=2.2.4]", "tensorflow1[keras=2.2.5]"
    runs = {old: {"mlp": run(old, 1.0)}, new: {"mlp": run(new, 1.5)}, "tensorflow": {"mlp": run("tensorflow", 9.0)}}
    results = [ModelResult("mlp", old, "pass", "reference"), ModelResult("mlp", new, "unexplained", "reference")]
    (change,) = execute.release_changes(runs, results, [old, new, "tensorflow"])
    assert change["from"] == old and change["to"] == new and change["max_abs"] == 0.5
    assert "verdict pass -> unexplained" in change["what"] and "outputs differ" in change["what"]
    assert execute.release_changes({old: runs[old], new: {"mlp": run(new, 1.0)}}, [], [old, new]) == []


def test_a_layers_inputs_are_its_inbound_layers_outputs_in_order():
    a, b = np.zeros(2), np.ones(3)
    run = EngineRun(
        "tf",
        "m",
        "ok",
        layers=[
            LayerOutput("a", "InputLayer", (), (a,)),
            LayerOutput("b", "InputLayer", (), (b,)),
            LayerOutput("add", "Concatenate", ("b", "a"), (np.ones(5),)),
        ],
    )
    assert [x.shape for x in execute.layer_inputs(run, "add")] == [(3,), (2,)]
