"""`kbtool bench` end to end on kbtool's own Python (the NumPy reference, and custom modules built on it): the
JSON it writes, the regression gate with a planted slowdown, and one-line errors for bad input."""

import json
import re

import pytest

from kbtool.bench import report as bench_report
from tests.helpers import bench

QUICK = ["--budget", "0.02", "--min-samples", "5", "--size", "small"]
SLOW_ABS = """import time as _time
from kbtool.reference import *
from kbtool.reference import abs as _abs


def abs(x):
    _time.sleep({delay})
    return _abs(x)
"""


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    return tmp_path


def test_the_json_has_every_op_in_both_modes_with_samples_rates_and_the_harness_cost(home):
    out = home / "b.json"
    code, stdout, _ = bench("--op", "dot", "--op", "abs", "--backend", "numpy", "-o", str(out), *QUICK)
    assert code == 0, stdout
    data = json.loads(out.read_text())
    assert bench_report.validate(data) == []
    got = {(r["op"], r["mode"]): r for r in data["results"]}
    assert set(got) == {("dot", "eager"), ("dot", "symbolic"), ("abs", "eager"), ("abs", "symbolic")}
    dot = got[("dot", "eager")]
    assert dot["status"] == "ok" and dot["n"] == 64 and dot["inputs"][0]["shape"] == [64, 64]
    assert dot["flops"] == 2.0 * 64**3 and dot["gflops"] == pytest.approx(dot["flops"] / dot["median_s"] / 1e9)
    assert dot["peak_kind"] == "matmul" and 0 < dot["peak_fraction"]
    assert len(dot["samples_s"]) == dot["n_samples"] >= 5 and dot["min_s"] <= dot["median_s"]
    assert got[("abs", "eager")]["flops"] is None and got[("abs", "eager")]["peak_kind"] == "copy"
    assert data["families"]["dot"]["kind"] == "spec" and data["families"]["abs"]["kind"] == "scaled"
    numpy_info = data["backends"][0]
    assert numpy_info["name"] == "numpy" and 0 < numpy_info["overhead"]["harness_s"] < 5e-6
    assert data["peak"]["matmul_gflops"] > 0 and data["peak"]["copy_gbs"] > 0
    assert "dot" in stdout and "measured" in stdout.splitlines()[-1]


def test_a_bench_against_itself_reports_no_change(home):
    out = home / "b.json"
    assert bench("--op", "dot", "--backend", "numpy", "-o", str(out), *QUICK)[0] == 0
    code, stdout, _ = bench("--from", str(out), "--compare", str(out), "--json")
    data = json.loads(stdout)
    assert code == 0 and {r["verdict"] for r in data["comparison"]["rows"]} == {"unchanged"}
    assert data["comparison"]["failed"] is False


@pytest.mark.slow
def test_a_planted_slowdown_fails_the_gate_and_its_removal_passes_it(home, custom_backend):
    base, now = home / "base.json", home / "now.json"
    module = custom_backend("planted", "slow", SLOW_ABS.format(delay=0))
    args = ["--op", "abs", "--backend", module, "--mode", "eager"] + QUICK
    assert bench(*args, "-o", str(base))[0] == 0
    custom_backend("planted", "slow", SLOW_ABS.format(delay=0.002))
    code, stdout, _ = bench(*args, "--compare", str(base), "-o", str(now))
    assert code == 1, stdout
    row = json.loads(now.read_text())["comparison"]["rows"][0]
    assert row["verdict"] == "worse" and row["fails_gate"] and row["p_value"] < 0.01 and row["change_pct"] > 100
    assert "gate FAILED" in stdout.splitlines()[-1]
    custom_backend("planted", "slow", SLOW_ABS.format(delay=0))
    code, stdout, _ = bench(*args, "--compare", str(now))  # against the slow run: faster now, the gate holds
    assert code == 0 and "gate passed" in stdout.splitlines()[-1]


def test_markdown_and_html_views_are_written_from_the_same_run(home):
    md, html = home / "b.md", home / "b.html"
    code, _, _ = bench("--op", "dot", "--backend", "numpy", "-o", str(md), "-o", str(html), *QUICK)
    assert code == 0
    markdown, page = md.read_text(), html.read_text()
    verdict = re.search(r"\*\*(bench: 2 measured[^*]*)\*\*", markdown).group(1)
    assert "| dot | numpy | eager |" in markdown and "| dot | numpy | symbolic |" in markdown
    assert 'id="op-dot"' in page and verdict in page  # the same run, the same verdict


@pytest.mark.parametrize(
    "args, message",
    [
        (["--sizes", "tiny"], "--sizes takes a comma-separated list"),
        (["--size", "small", "--sizes", "all"], "give --size or --sizes, not both"),
        (["--op", "no_such_op"], "unknown op 'no_such_op'"),
        (["--op", "abs", "--budget", "0"], "--budget takes a number of seconds above 0"),
        (["--op", "abs", "--fail-over", "-1"], "--fail-over takes a percentage"),
        (["--op", "abs", "-o", "bench.txt"], "cannot tell the format of 'bench.txt'"),
        (["--op", "abs", "--compare", "missing.json"], "missing.json"),
        (["--from", "x.json", "--op", "abs"], "--from renders an earlier bench"),
        (["-q", "-v", "--op", "abs"], "give -q"),
        (["--op", "abs", "--backend", "keras-numpy"], "keras-numpy is a test oracle"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(home, monkeypatch, args, message):
    monkeypatch.chdir(home)
    (home / "x.json").write_text("{}")
    code, stdout, stderr = bench(*args)
    assert code == 2 and message in stderr and "Traceback" not in stderr + stdout
    assert len(stderr.strip().splitlines()) == 1


def test_a_backend_that_cannot_start_is_named_and_a_bench_that_measured_nothing_is_not_ok(home):
    code, stdout, _ = bench("--op", "abs", "--backend", "no_such_package.kb", *QUICK)
    assert code == 1
    assert "no_such_package.kb: broken (ModuleNotFoundError" in stdout
    assert stdout.splitlines()[-1].startswith("bench: 0 measured") and "nothing was measured: not ok" in stdout


def test_a_file_that_is_not_a_bench_is_refused_as_a_baseline(home):
    other = home / "parity.json"
    other.write_text(json.dumps({"schema_version": 1, "results": []}))
    code, _, stderr = bench("--op", "abs", "--compare", str(other))
    assert code == 2 and "not a kbtool bench report" in stderr


@pytest.mark.slow
@pytest.mark.parametrize("signame, code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_writes_the_partial_bench_and_stops_the_worker(home, signame, code):
    import os
    import signal
    import subprocess
    import sys
    import time

    out = home / "b.json"
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(__file__)), os.environ.get("PYTHONPATH", "")]),
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kbtool",
            "bench",
            "--op",
            "dot",
            "--op",
            "abs",
            "--backend",
            "numpy",
            "--size",
            "small",
            "--budget",
            "1",
            "-o",
            str(out),
        ],
        cwd=str(home),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 60
    for line in proc.stderr:  # progress: a line per result here (4 planned)
        if "numpy 1/4" in line:
            break
        assert time.monotonic() < deadline
    proc.send_signal(getattr(signal, signame))
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr
    data = json.loads(out.read_text())
    assert bench_report.validate(data) == []
    assert data["incomplete"]["signal"] == signame and 1 <= len(data["results"]) < 4
    assert data["summary"]["ok"] is False and "incomplete" in stdout.splitlines()[-1]
