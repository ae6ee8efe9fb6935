"""The planted-fault suite (issue #30, "Done means"): every fault of tests/faults/faults.yaml is caught by
`kbtool check` (scripts/planted_faults.py measures it), and the machinery that plants them does what it says."""

import importlib.util
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest

from kbtool.runners.registry import is_builtin
from kbtool.specs import loader

from .conftest import ROOT

spec = importlib.util.spec_from_file_location("planted_faults", os.path.join(ROOT, "scripts", "planted_faults.py"))
faults_mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(faults_mod)

KINDS, FAULTS = faults_mod.load()
WORKER_MAIN = os.path.join(ROOT, "kbtool", "worker", "main.py")


def test_at_least_40_faults_and_5_of_each_kind():
    assert len(FAULTS) >= 40
    counts = {kind: sum(f.kind == kind for f in FAULTS) for kind in KINDS}
    assert counts == {kind: n for kind, n in counts.items() if n >= 5}, counts


def test_every_fault_names_a_spec_op_and_a_built_in_backend():
    ops = set(loader.load().ops)
    assert [f.id for f in FAULTS if f.op not in ops] == []
    assert [f.id for f in FAULTS if not is_builtin(f.backend)] == []


def test_a_bad_fault_is_one_line_error(tmp_path):
    path = tmp_path / "faults.yaml"
    path.write_text("kinds: {map: m, masked: w}\nfaults:\n- {id: a, kind: masked, backend: b, op: sum, why: w}\n")
    with pytest.raises(faults_mod.FaultsError, match="exactly one of `plant` and `edit`"):
        faults_mod.load(str(path))
    path.write_text(
        "kinds: {map: m}\nfaults:\n- {id: a, kind: map, backend: b, op: sum, why: w, plant: {out: 'out'}}\n"
    )
    with pytest.raises(faults_mod.FaultsError, match="`map` fault is an `edit`"):
        faults_mod.load(str(path))


def test_batches_hold_distinct_ops_of_one_backend_and_mechanism():
    plan = faults_mod.batches(FAULTS)
    assert sorted(f.id for b in plan for f in b.faults) == sorted(f.id for f in FAULTS)
    for batch in plan:
        assert len(batch.ops) == len(batch.faults)
        assert {(f.backend, f.cases, f.edit is not None) for f in batch.faults} == {
            (batch.backend, batch.cases, batch.edits)
        }
    assert len(plan) < len(FAULTS) / 3  # batching is what keeps the suite to minutes


def test_every_map_edit_changes_exactly_its_function_in_a_copy(tmp_path):
    edits = [f for f in FAULTS if f.edit is not None]
    copy = faults_mod.edited_copy(ROOT, edits, str(tmp_path))
    for fault in edits:
        name = fault.edit["function"]
        before = _function_source(ROOT, name)
        after = _function_source(copy, name)
        assert after == before.replace(fault.edit["old"], fault.edit["new"]) != before, fault.id
    with open(os.path.join(ROOT, faults_mod.PORT_DIR, "arrays.py")) as f:
        assert "ops.multiply(x, x)" not in f.read()  # the real tree is never edited


def _function_source(root, name):
    port = os.path.join(root, faults_mod.PORT_DIR)
    for file in sorted(os.listdir(port)):
        if file.endswith(".py"):
            with open(os.path.join(port, file)) as f:
                text = f.read()
            start, end = faults_mod.function_block(text, name)
            if start >= 0:
                return text[start:end]
    raise AssertionError(f"no {name}() in {port}")


def test_an_edit_whose_text_is_not_there_says_so(tmp_path):
    copy = faults_mod.edited_copy(ROOT, [], str(tmp_path))
    with pytest.raises(faults_mod.FaultsError, match="0 times"):
        faults_mod.edit_port(copy, {"function": "square", "old": "ops.cube(x)", "new": "x"})
    with pytest.raises(faults_mod.FaultsError, match="no function nothing_here"):
        faults_mod.edit_port(copy, {"function": "nothing_here", "old": "a", "new": "b"})


def _fake_backend():
    K = types.ModuleType("fake_backend")

    def sum(x, axis=None, keepdims=False):
        return np.sum(x, axis=axis, keepdims=keepdims)

    def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
        return (mean, stddev, dtype)

    K.sum, K.random_normal = sum, random_normal
    return K


def test_plant_wraps_only_where_its_condition_holds(tmp_path, monkeypatch):
    plant = {}
    with open(faults_mod.PLANT_FILE) as f:
        exec(compile(f.read(), faults_mod.PLANT_FILE, "exec"), plant)
    faults = [
        {"id": "a", "op": "sum", "when": "axis is None and keepdims", "out": "out * 1.5"},
        {"id": "b", "op": "random_normal", "when": "dtype == 'float64'", "set": {"stddev": "stddev * 1.03"}},
    ]
    monkeypatch.setenv("KBTOOL_PLANT_FAULTS", json.dumps(faults))
    monkeypatch.setenv("KBTOOL_PLANT_MARK", str(tmp_path))
    K = _fake_backend()
    plant["plant"](K)
    x = np.ones((2, 2))
    assert K.sum(x, keepdims=True).tolist() == [[6.0]]
    assert K.sum(x) == 4.0 and K.sum(x, None, True).tolist() == [[6.0]]
    assert K.random_normal((2,), dtype="float64") == (0.0, 1.03, "float64")
    assert K.random_normal((2,), 0.0, 2.0, "float32") == (0.0, 2.0, "float32")
    assert json.loads(next(tmp_path.iterdir()).read_text()) == ["a", "b"]
    monkeypatch.setenv("KBTOOL_PLANT_FAULTS", json.dumps([{"id": "c", "op": "sum", "out": "no_such_name"}]))
    plant["plant"](K)
    with pytest.raises(plant["PlantError"], match=r"fault c \(out: no_such_name\): NameError"):
        K.sum(x)


def _start_worker(tmp_path, env):
    (tmp_path / "fake_k.py").write_text("def backend():\n    return 'fake'\n\ndef sum(x):\n    return x\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path), **env)
    argv = [sys.executable, WORKER_MAIN, "--module", "fake_k"]
    return subprocess.run(argv, input=b"", capture_output=True, env=env, timeout=60)


def test_the_worker_seam_calls_plant_only_when_asked(tmp_path):
    marker = tmp_path / "planted"
    plant = tmp_path / "plant.py"
    plant.write_text(f"def plant(K):\n    open({str(marker)!r}, 'w').write(K.backend())\n")
    assert _start_worker(tmp_path, {}).returncode == 0
    assert not marker.exists()
    assert _start_worker(tmp_path, {"KBTOOL_PLANT": str(plant)}).returncode == 0
    assert marker.read_text() == "fake"
    plant.write_text("def plant(K):\n    raise RuntimeError('bad plant')\n")
    done = _start_worker(tmp_path, {"KBTOOL_PLANT": str(plant)})
    assert done.returncode == 3 and b"bad plant" in done.stdout  # a broken plant: the worker says so, never runs


def test_judge_counts_only_unexplained_results_of_the_op():
    fault = FAULTS[0]
    base = {"backends": [{"name": fault.backend, "status": "available"}], "results": []}

    def result(status, known=None, op=fault.op):
        return {"op": op, "case": "c", "mode": "eager", "status": status, "message": "m", "known": known}

    faulted = dict(base, results=[result("fail", known="k"), result("unsupported"), result("fail", op="other")])
    assert faulted["results"] and faults_mod.judge(fault, base, faulted, "").outcome == "missed"
    faulted["results"].append(result("changed"))
    assert faults_mod.judge(fault, base, faulted, "").caught
    dirty = dict(base, results=[result("error")])
    assert faults_mod.judge(fault, dirty, faulted, "").outcome == "baseline not clean"
    assert faults_mod.judge(fault, base, faulted, "no seam").outcome == "not planted"
    faulted["results"].append(result("error") | {"message": "PlantError: fault x (out: y): NameError"})
    assert faults_mod.judge(fault, base, faulted, "").outcome == "not planted"


@pytest.mark.backends
@pytest.mark.slow
def test_every_planted_fault_is_caught(tmp_path):
    outcomes = faults_mod.measure(ROOT, FAULTS)
    missed = [f"{o.id} [{o.kind}] {o.backend} {o.op}: {o.outcome}, {o.detail}" for o in outcomes if not o.caught]
    assert missed == [], f"{len(missed)} of {len(outcomes)} planted faults not caught:\n" + "\n".join(missed)
