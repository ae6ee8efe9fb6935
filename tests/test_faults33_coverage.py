"""Fault audit of issue #33: `spec coverage --backend B --report R` counted every result the report lacks as
passing, so a report of one op (or an interrupted run, or a run of some cases) said "0 blind spots" for the whole
spec, exit 0. Now a report tells only of the ops it ran on B, from a whole run of them; else one line, exit 2."""

import json

from tests.helpers import available, make_report, record

from .helpers import invoke_cli as invoke

PLAN = {
    "ops": ["abs"],
    "case_patterns": [],
    "modes": [],
    "examples_only": False,
    "whole_spec": False,
    "all_cases": True,
    "counts_comparable": True,
    "as_recorded": True,
    "last_failed": False,
    "shard": None,
    "checkable_ops": ["abs"],
}


def report_file(tmp_path, **extra):
    report = make_report([available("numpy")], [record("abs", "basic", "numpy", "pass")])
    report["plan"] = dict(PLAN, **extra.pop("plan", {}))
    report.update(extra)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    return str(path)


def test_an_op_the_report_did_not_run_is_refused(tmp_path):
    path = report_file(tmp_path)
    result = invoke("spec", "coverage", "--backend", "numpy", "--report", path, "--op", "conv2d", "--op", "abs")
    assert result.exit_code == 2, result.stdout
    assert (
        result.stderr.strip()
        == f"kbtool: error: {path} holds no results of conv2d on numpy: it cannot tell its blind spots"
    )


def test_without_op_only_the_ops_the_report_ran_are_told(tmp_path):
    result = invoke("spec", "coverage", "--backend", "numpy", "--report", report_file(tmp_path), "--json")
    assert result.exit_code in (0, 1), result.stderr
    assert json.loads(result.stdout)["ops_checked"] == ["abs"]


def test_an_interrupted_or_filtered_run_is_refused(tmp_path):
    for extra, said in (
        ({"incomplete": {"signal": "SIGTERM", "note": "interrupted", "planned": 9, "ran": 1}}, "an interrupted run"),
        ({"plan": {"all_cases": False}}, "a run of some cases only"),
    ):
        path = report_file(tmp_path, **extra)
        result = invoke("spec", "coverage", "--backend", "numpy", "--report", path)
        assert result.exit_code == 2 and "Traceback" not in result.stderr
        assert result.stderr.strip() == (
            f"kbtool: error: {path} is {said}: the results it lacks would count as passing; give the report of a "
            "whole run of its ops"
        )
