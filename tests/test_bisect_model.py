"""`kbtool bisect --model NAME`: a model's forward outputs at each release compared with the first release's
(bisect/models_probe.py), with the runs given as data (a fake probe: no worker, no install), and the command's
options (one line, exit 2, for a bad combination or an unknown model)."""

import json

import numpy as np
import pytest

from kbtool.bisect import models_probe
from kbtool.bisect import search as bisect
from kbtool.models.records import Difference, EngineRun
from kbtool.runners import releases
from tests.helpers import invoke_cli

VERSIONS = ["2.2.4", "2.2.5", "2.3.0", "2.3.1"]
MODEL = "mlp"  # a model of the zoo (the skeleton's first)


def ok(value, engine="e"):
    return EngineRun(engine, MODEL, "ok", outputs=[np.full((2, 3), value, dtype=np.float32)])


def by_mad(run, baseline):
    """A compare that is a fixed tolerance: a MAD past 1e-3 is a change."""
    mad = float(np.mean(np.abs(run.outputs[0] - baseline.outputs[0])))
    return Difference(mad, mad, mad, 1e-3, mad > 1e-3)


def test_a_run_within_the_tolerance_is_the_same_and_past_it_changed():
    base = ok(1.0)
    assert models_probe.model_probe(base, base, "keras 2.2.4", by_mad).status == "same"
    assert models_probe.model_probe(ok(1.0005), base, "keras 2.2.4", by_mad).status == "same"
    small, large = (models_probe.model_probe(ok(v), base, "keras 2.2.4", by_mad) for v in (1.01, 3.0))
    assert small.status == large.status == "changed" and "keras 2.2.4's" in small.message
    assert small.same(large)  # the figures differ, the outcome does not: one change, not a non-monotonic one


def test_a_run_that_fails_is_its_failure_and_a_failed_lo_compares_nothing():
    failed = EngineRun("e", MODEL, "error", reason="ValueError: no such layer 7")
    outcome = models_probe.model_probe(failed, ok(1.0), "keras 2.2.4", by_mad)
    assert (outcome.status, outcome.message) == ("error", "ValueError: no such layer 7")
    assert outcome.same(models_probe.model_probe(failed, failed, "keras 2.2.4", by_mad))
    ran = models_probe.model_probe(ok(1.0), failed, "keras 2.2.4", by_mad)
    assert ran.status == "ran" and "keras 2.2.4 did not" in ran.message


def fake_runner(values, monkeypatch):
    """A ModelRunner whose runs are data ({version: output value or an EngineRun}), nothing installed; the runs it
    made, in order."""
    made = []
    monkeypatch.setattr(models_probe.ModelRunner, "ensure_installed", lambda self, version: None)

    def run_at(name):
        version = name.split("=")[-1].rstrip("]")
        made.append(version)
        value = values[version]
        return value if isinstance(value, EngineRun) else ok(value, name)

    return models_probe.ModelRunner("tensorflow1", "keras", MODEL, run_at=run_at, compare=by_mad), made


def test_the_release_where_the_outputs_moved_is_found_with_lo_run_first(monkeypatch):
    runner, made = fake_runner({"2.2.4": 1.0, "2.2.5": 1.0001, "2.3.0": 1.2, "2.3.1": 1.3}, monkeypatch)
    found = bisect.search(VERSIONS, runner)
    [change] = found.changes
    assert (change.first_changed, change.last_same, change.monotonic) == ("2.3.0", "2.2.5", True)
    assert change.key == (MODEL, "outputs", "forward") and change.lo.status == "same"
    assert change.after.repro == "kbtool models --backend 'tensorflow1[keras=2.3.0]' --model mlp --seed 0"
    assert made[:2] == ["2.2.4", "2.3.1"] and sorted(made) == sorted(set(made))  # LO first, no release twice


def test_outputs_that_stay_within_the_tolerance_are_no_change(monkeypatch):
    runner, _ = fake_runner({v: 1.0 + 1e-4 * i for i, v in enumerate(VERSIONS)}, monkeypatch)
    found = bisect.search(VERSIONS, runner)
    assert found.changes == [] and found.compared == 1


def test_a_release_where_the_model_stops_building_is_a_change(monkeypatch):
    broken = EngineRun("e", MODEL, "error", reason="TypeError: unexpected keyword 'reset_after'")
    runner, _ = fake_runner({"2.2.4": 1.0, "2.2.5": 1.0, "2.3.0": broken, "2.3.1": broken}, monkeypatch)
    [change] = bisect.search(VERSIONS, runner).changes
    assert change.first_changed == "2.3.0" and change.after.status == "error"


@pytest.fixture
def index(monkeypatch):
    monkeypatch.setattr(releases, "index_versions", lambda base, package, runner=None: list(VERSIONS))


def test_the_command_bisects_a_model_and_writes_a_valid_document(index, monkeypatch, tmp_path):
    values = {"2.2.4": 1.0, "2.2.5": 1.0, "2.3.0": 2.0, "2.3.1": 2.0}
    monkeypatch.setattr(models_probe.ModelRunner, "ensure_installed", lambda self, version: None)
    monkeypatch.setattr(
        models_probe.ModelRunner, "_run_release", lambda self, name: ok(values[name.split("=")[-1].rstrip("]")], name)
    )
    out = tmp_path / "bisect.json"
    args = ["bisect", "--model", MODEL, "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1", "-o", str(out)]
    result = invoke_cli(*args)
    assert result.exit_code == 0, result.stderr
    assert f"{MODEL} outputs forward: changed in keras 2.3.0 (last same: 2.2.5)" in result.stdout
    doc = json.loads(out.read_text())
    assert bisect.validate(doc) == [] and doc["selection"] == {"models": [MODEL]}
    assert doc["changes"][0]["after"]["status"] == "changed"


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--model", MODEL, "--op", "dot"], "one of the two"),
        (["--model", MODEL, "--case", "c*"], "one of the two"),
        ([], "one of the two"),
        (["--model", "no_such_model"], "no such model"),
    ],
)
def test_bad_model_options_are_one_line_and_exit_2(index, args, needle):
    result = invoke_cli("bisect", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1", *args)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbtool: error: ") and needle in lines[0], result.stderr
    assert result.exit_code == 2


def test_the_default_comparison_is_kbtool_models_s_tolerance():
    """Rounding noise (1e-7) is within the tolerance kbtool models judges a one-layer model by; 1 % is past it."""
    base = ok(1.0)
    assert models_probe.model_probe(ok(1.0 + 1e-7), base, "keras 2.2.4").status == "same"
    assert models_probe.model_probe(ok(1.01), base, "keras 2.2.4").status == "changed"
