"""The five Keras 3 engines on this machine: their devices and precision, through real workers.

Requires `kbtool env install --all`; CI's machines have no GPU, and the keras3-torch env's torch is the CPU build,
so `--device gpu` must fail to start it with torch's own word for it, never as a case error.
"""

import json

import pytest
from click.testing import CliRunner

from kbtool.cli import main

pytestmark = pytest.mark.backends

ENGINES = ["keras3-jax", "keras3-torch", "keras3-tensorflow", "keras3-numpy", "keras3-openvino"]


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_a_gpu_run_where_the_engine_has_no_gpu_could_not_start_and_is_not_green(tmp_path):
    out = tmp_path / "gpu.json"
    result = run(
        "check",
        "--device",
        "gpu",
        "--backend",
        "keras3-torch",
        "--backend",
        "keras3-numpy",
        "--op",
        "abs",
        "-o",
        str(out),
    )
    assert result.exit_code == 1, result.output
    report = json.loads(out.read_text())
    infos = {b["name"]: b for b in report["backends"]}
    assert infos["keras3-torch"]["status"] == "broken"
    assert "sees no CUDA device" in infos["keras3-torch"]["reason"]
    assert infos["keras3-numpy"]["status"] == "device unsupported"
    assert report["results"] == [] and report["plan"]["device"] == "gpu"


def test_every_engine_runs_both_modes_on_the_cpu_and_each_result_says_so(tmp_path):
    out = tmp_path / "cpu.json"
    args = ["check", "--op", "abs", "--op", "dot", "--precision", "highest", "-o", str(out)]
    for engine in ENGINES:
        args += ["--backend", engine]
    result = run(*args)
    report = json.loads(out.read_text())
    assert result.exit_code == 0, result.output
    assert {b["name"]: b["status"] for b in report["backends"]} == dict.fromkeys(ENGINES, "available")
    assert {(r["backend"], r["mode"]) for r in report["results"]} == {
        (e, m) for e in ENGINES for m in ("eager", "symbolic")
    }
    assert {r.get("device") for r in report["results"]} == {"cpu"}
    assert report["plan"]["precision"] == "highest"
    # abs passes as is on every engine in both modes, whatever the others do
    passed = {
        (r["backend"], r["mode"])
        for r in report["results"]
        if r["op"] == "abs" and r["case"] == "basic" and r["status"] == "pass"
    }
    assert len(passed) == 10
