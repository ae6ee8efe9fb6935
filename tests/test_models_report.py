"""`kbtool models`' JSON report: built from synthetic ModelResults (no backend), validated against
models.schema.json on write and on load, its summary and exit code computed, never read from the file."""

import json

import pytest

from kbtool.errors import KbtoolError
from kbtool.models import report
from kbtool.models.records import Difference, Localisation, ModelResult

CLOSE = Difference(1e-7, 1e-6, 1e-8, 1e-3, False)
FAR = Difference(0.5, float("inf"), 0.1, 1e-3, True)


def _run(*results, engines=("numpy", "tensorflow", "theano"), **extra):
    infos = [
        {"name": e, "status": "available", "versions": {"keras": "2.3.1"}, "seconds": 1.5, "models": 1} for e in engines
    ]
    return report.ModelsRun(
        settings={"seed": 0, "train": True, "models": [], "backends": []},
        oracle="numpy",
        engines=infos,
        models=[{"name": "mlp", "family": "dense", "about": "two Dense layers"}],
        results=list(results),
        wall_seconds=3.0,
        **extra,
    )


def test_a_run_where_every_model_passes_is_ok_and_exits_0():
    doc = report.assemble(_run(ModelResult("mlp", "tensorflow", "pass", "reference", forward=CLOSE, gradient=CLOSE)))
    assert report.validate(doc) == []
    assert doc["kind"] == "models" and doc["schema_version"] == 1
    assert doc["summary"]["ok"] and report.exit_code(doc) == 0


def test_an_unexplained_inconsistency_or_an_error_exits_1_and_a_known_one_0():
    where = Localisation("conv", "Conv2D", "conv2d", "K.conv2d(x)")
    bad = ModelResult("mlp", "theano", "unexplained", "reference", forward=FAR, localisation=where)
    assert report.exit_code(report.assemble(_run(bad))) == 1
    error = ModelResult("mlp", "theano", "error", "reference", reason="RuntimeError: boom")
    assert report.exit_code(report.assemble(_run(ModelResult("mlp", "tensorflow", "pass", "reference"), error))) == 1
    known = Localisation("conv", "Conv2D", "conv2d", "K.conv2d(x)", verdict="known", known_id="conv2d-theano-flip")
    doc = report.assemble(_run(ModelResult("mlp", "theano", "known", "reference", forward=FAR, localisation=known)))
    assert report.exit_code(doc) == 0
    assert doc["results"][0]["localisation"]["known_id"] == "conv2d-theano-flip"


def test_a_run_that_compared_nothing_is_never_green():
    for results in ([], [ModelResult("mlp", "keras-numpy", "unsupported", "reference", reason="no placeholder")]):
        doc = report.assemble(_run(*results))
        assert not doc["summary"]["ok"] and report.exit_code(doc) == 2
        assert "nothing compared" in " ".join(report.reasons(doc))
    not_compared = ModelResult("mlp", "tensorflow", "not_compared", "majority", reason="one engine ran it")
    assert report.exit_code(report.assemble(_run(not_compared))) == 2


def test_an_engine_that_could_not_start_fails_the_run():
    run = _run(ModelResult("mlp", "tensorflow", "pass", "reference"))
    run.engines.append({"name": "cntk", "status": "broken", "reason": "the worker could not start: ImportError"})
    doc = report.assemble(run)
    assert report.exit_code(doc) == 1 and "cntk could not start" in report.reasons(doc)


def test_non_finite_differences_are_written_as_standard_json_and_read_back(tmp_path):
    path = tmp_path / "models.json"
    doc = report.assemble(_run(ModelResult("mlp", "theano", "unexplained", "reference", forward=FAR)))
    report.write(doc, str(path))
    text = path.read_text()
    assert "Infinity" in text and json.loads(text, parse_constant=lambda c: pytest.fail(c))
    loaded = report.load(str(path))
    assert loaded["results"][0]["forward"]["max_rel"] == "Infinity"
    assert report.exit_code(loaded) == 1


def test_the_summary_is_computed_not_read(tmp_path):
    path = tmp_path / "models.json"
    doc = report.assemble(_run(ModelResult("mlp", "theano", "unexplained", "reference", forward=FAR)))
    doc["summary"]["ok"] = True
    report.write(doc, str(path))
    assert report.exit_code(report.load(str(path))) == 1


def test_an_invalid_document_is_refused_on_write_and_on_load_in_one_line(tmp_path):
    doc = report.assemble(_run(ModelResult("mlp", "tensorflow", "pass", "reference")))
    doc["results"][0]["verdict"] = "fine"
    with pytest.raises(KbtoolError) as raised:
        report.render_json(doc)
    assert "\n" not in str(raised.value) and "fine" in str(raised.value)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(KbtoolError) as raised:
        report.load(str(path))
    assert "\n" not in str(raised.value) and str(path) in str(raised.value)
    check_report = tmp_path / "check.json"
    check_report.write_text(json.dumps({"schema_version": 1, "results": []}))
    with pytest.raises(KbtoolError, match="not a models report"):
        report.load(str(check_report))


def test_a_finding_names_the_model_engine_layer_and_call():
    where = Localisation("conv", "Conv2D", "conv2d", "K.conv2d(x[2,5,5,3] float32, padding='same')", case_id="m-1")
    doc = report.assemble(
        _run(ModelResult("mlp", "theano", "unexplained", "reference", forward=FAR, localisation=where))
    )
    text = report.finding_text(doc["results"][0])
    assert text == "mlp on theano: layer conv (Conv2D) -> K.conv2d(x[2,5,5,3] float32, padding='same') [case m-1]"
    unnamed = Localisation("lstm", "LSTM", None, why_not="the engine records no K.* call inside its cuDNN kernel")
    doc = report.assemble(
        _run(ModelResult("mlp", "theano", "unexplained", "reference", forward=FAR, localisation=unnamed))
    )
    assert "no K.* call named: the engine records" in report.finding_text(doc["results"][0])
