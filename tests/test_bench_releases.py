"""`kbtool bench --backend B --versions PKG=OLD..NEW`: the two ends of a release range timed in one run and the newer
compared against the older with the --compare gate (compare.between pairs the two backends' results by op, size and
mode). Fast tests use synthetic results, or the numpy worker standing in for two releases; the last one times two
real keras releases on tensorflow1 (no timing is asserted anywhere)."""

import dataclasses
import json

import numpy as np
import pytest

from kbtool.bench import compare
from kbtool.bench import report as bench_report
from kbtool.runners import envs, registry, releases
from kbtool.vocabulary import MODES
from tests.helpers import bench

OLD, NEW = "tensorflow1[keras=2.2.4]", "tensorflow1[keras=2.3.1]"
QUICK = ["--budget", "0.02", "--min-samples", "5", "--size", "small"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def samples(median, seed, count=15, spread=0.02):
    return list(median * (1 + spread * np.random.default_rng(seed).standard_normal(count)))


def result(backend, median, op="dot", size="small", mode="eager", seed=0, status="ok"):
    return {
        "op": op,
        "size": size,
        "backend": backend,
        "mode": mode,
        "n": 64.0,
        "status": status,
        "median_s": median,
        "samples_s": samples(median, seed) if median else [],
    }


def test_the_newer_release_is_paired_with_the_older_by_op_size_and_mode_and_a_slowdown_fails_the_gate():
    bench_data = {
        "results": [
            result(OLD, 1.0, seed=1),
            result(OLD, 1.0, mode="symbolic", seed=2),
            result(OLD, 1.0, op="abs", seed=3),
            result(NEW, 1.3, seed=4),  # 30 % slower
            result(NEW, 0.7, mode="symbolic", seed=5),  # faster
            result(NEW, 1.0, op="abs", seed=6),
        ],
        "settings": {"ops": ["dot", "abs"], "sizes": ["small"], "modes": ["eager", "symbolic"]},
        "backends": [{"name": OLD, "status": "available"}, {"name": NEW, "status": "available"}],
    }
    found = compare.between(bench_data, OLD, NEW, fail_over_pct=10)
    rows = {(r["op"], r["mode"]): r for r in found["rows"]}
    assert set(rows) == {("dot", "eager"), ("dot", "symbolic"), ("abs", "eager")}  # three pairs, no new/gone
    assert {r["backend"] for r in found["rows"]} == {NEW}
    slower = rows[("dot", "eager")]
    assert slower["verdict"] == "worse" and slower["fails_gate"] and slower["change_pct"] == pytest.approx(30, abs=3)
    assert slower["baseline_median_s"] == 1.0 and slower["median_s"] == 1.3
    assert rows[("dot", "symbolic")]["verdict"] == "better" and rows[("abs", "eager")]["verdict"] == "unchanged"
    assert found["failed"] is True and found["pair"] == {"baseline": OLD, "now": NEW} and found["baseline"] == OLD
    assert compare.between(bench_data, OLD, NEW, fail_over_pct=50)["failed"] is False  # within the tolerance
    gate = compare.gate_lines(found)
    assert gate == [f"gate: dot small {NEW} eager: " + slower["reason"]] and "% slower (1 s → 1.3 s" in gate[0]


def test_what_the_older_release_measured_and_the_newer_could_not_fails_the_gate():
    bench_data = {
        "results": [result(OLD, 1.0), result(OLD, 1.0, op="abs"), result(NEW, None, status="raised")],
        "backends": [{"name": OLD, "status": "available"}, {"name": NEW, "status": "available"}],
    }
    verdicts = {r["op"]: (r["verdict"], r["fails_gate"]) for r in compare.between(bench_data, OLD, NEW)["rows"]}
    assert verdicts == {"dot": ("failed", True), "abs": ("gone", True)}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--backend", "tensorflow1", "--versions", "keras=2.3.1..2.3.1"], "both ends are keras 2.3.1"),
        (["--backend", "tensorflow1", "--versions", "keras=2.3.1..2.2.4"], "2.3.1 is newer than 2.2.4"),
        (["--backend", "tensorflow1", "--versions", "keras2.2.4"], "write PACKAGE=LOW..HIGH"),
        (["--versions", "keras=2.2.4..2.3.1"], "--versions takes exactly one --backend"),
        (["--backend", "tensorflow1", "--backend", "theano", "--versions", "keras=2.2.4..2.3.1"], "exactly one"),
        (["--backend", "numpy", "--versions", "keras=2.2.4..2.3.1"], "not numpy"),
        (["--backend", "tensorflow1", "--versions", "nosuchpkg=1.0..2.0"], "nosuchpkg is not a package of"),
        (
            ["--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1", "--compare", "x.json"],
            "--versions compares two releases measured now; --compare",
        ),
        (["--from", "x.json", "--versions", "keras=2.2.4..2.3.1"], "--versions cannot apply"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(home, args, message):
    (home / "x.json").write_text("{}")
    code, stdout, stderr = bench("--op", "dot", *args) if "--from" not in args else bench(*args)
    assert code == 2 and message in stderr, stderr
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stdout + stderr


@pytest.fixture
def numpy_releases(home, monkeypatch):
    """Two keras releases of tensorflow1 (and one between) as the index would list them, each run by kbtool's numpy
    worker under its release name; the env installs it asks for are recorded (and succeed unless told to fail)."""
    between = releases.Release("tensorflow1", (("keras", "2.2.5"),))
    monkeypatch.setattr(releases, "expand", lambda base, text: [releases.parse(OLD), between, releases.parse(NEW)])
    real = registry.launch_for
    monkeypatch.setattr(
        registry,
        "launch_for",
        lambda name: dataclasses.replace(real("numpy"), backend=name) if name in (OLD, NEW) else real(name),
    )
    asked = {"installed": [], "fail": []}

    def install_all(recipes, force, out, err, **kwargs):
        asked["installed"].append([r.name for r in recipes])
        return [r.name for r in recipes if r.name in asked["fail"]]

    monkeypatch.setattr(envs, "install_all", install_all)
    monkeypatch.setattr(releases, "refuse_missing_base", lambda names: None)  # the base env stands installed
    return asked


def test_the_two_ends_are_installed_timed_in_turns_and_compared_in_every_view(home, numpy_releases):
    args = ["--op", "dot", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1", *QUICK]
    code, stdout, stderr = bench(*args, "-o", "b.json", "-o", "b.md", "-o", "b.html")
    assert code in (0, 1), stderr  # the verdict is the timings' (never asserted): the run itself worked
    assert numpy_releases["installed"] == [[OLD], [NEW]]  # both ends, one at a time, not the release between them
    assert f"installing {OLD}, {NEW} first" in stderr
    data = json.loads((home / "b.json").read_text())
    assert bench_report.validate(data) == []
    assert [b["name"] for b in data["backends"]] == [OLD, NEW]
    assert {(r["backend"], r["mode"]) for r in data["results"]} == {(b, m) for b in (OLD, NEW) for m in MODES}
    # in turns: each result on both releases back to back, which goes first alternating (ABBA)
    assert [(r["mode"], r["backend"]) for r in data["results"]] == [
        (MODES[0], OLD), (MODES[0], NEW), (MODES[1], NEW), (MODES[1], OLD)
    ]  # fmt: skip
    comparison = data["comparison"]
    assert comparison["pair"] == {"baseline": OLD, "now": NEW}
    olds = {r["mode"]: r["median_s"] for r in data["results"] if r["backend"] == OLD}
    assert {r["mode"]: r["baseline_median_s"] for r in comparison["rows"]} == olds
    assert {r["verdict"] for r in comparison["rows"]} <= {"better", "worse", "unchanged"}
    note = next(n for n in data["summary"]["notes"] if n.startswith("--versions"))
    assert "timed in turns" in note and "1 release between them not measured" in note and "seed 0" in note
    assert (code == 1) == comparison["failed"]
    title = f"{NEW} against {OLD}"
    assert title in stdout and note in stdout
    assert f"{title}:" in stdout.splitlines()[-1]  # the verdict line names both releases
    assert f"## {title}".replace("[", "\\[").replace("]", "\\]") in (home / "b.md").read_text()
    assert f"<h2>{title}: gate" in (home / "b.html").read_text()
    # rendered again from the JSON: the same comparison, the same exit code
    again = bench("--from", "b.json", "--json")
    assert again[0] == code and json.loads(again[1])["comparison"] == comparison


def test_a_release_that_fails_to_install_stops_the_bench_before_anything_is_timed(home, numpy_releases):
    numpy_releases["fail"] = [NEW]
    code, stdout, stderr = bench("--op", "dot", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1")
    assert code == 2 and stdout == ""
    assert stderr.strip().splitlines()[-1] == (
        f"kbtool: error: could not install {NEW}: nothing was timed (`kbtool env install '{NEW}'` says why)"
    )


@pytest.mark.backends
def test_two_keras_releases_on_tensorflow1_are_timed_and_compared():
    args = ["--op", "dot", "--size", "small", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1"]
    code, stdout, stderr = bench(*args, "--budget", "0.02", "--json")
    assert code in (0, 1), stderr  # 1 only for a significant slowdown: timings are never asserted
    data = json.loads(stdout)
    assert [(b["name"], b["status"]) for b in data["backends"]] == [(OLD, "available"), (NEW, "available")]
    assert {b["name"]: b["versions"].get("keras") for b in data["backends"]} == {OLD: "2.2.4", NEW: "2.3.1"}
    assert {(r["backend"], r["status"]) for r in data["results"]} == {(OLD, "ok"), (NEW, "ok")}
    assert data["comparison"]["pair"] == {"baseline": OLD, "now": NEW}
    assert {r["backend"] for r in data["comparison"]["rows"]} == {NEW} and len(data["comparison"]["rows"]) == 2
    assert (code == 1) == data["comparison"]["failed"]


def test_a_bad_op_is_said_before_any_release_is_installed(home, numpy_releases):
    code, _, stderr = bench("--op", "no_such_op", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1")
    assert code == 2 and "unknown op 'no_such_op'" in stderr and numpy_releases["installed"] == []
