"""JUnit XML (kbtool/reports/junit.py) for CI: counted as the CLI counts (a dashboard is green exactly when
`kbtool check` exits 0), every backend present (one that could not start is an error, one not installed a skipped
testcase), suites with time, timestamp and properties, and well-formed by the JUnit schema CI tools read
(Ant's junit.xsd, as Jenkins and GitLab take it), checked here element by element.
"""

import copy
import json
import os
import re
import xml.etree.ElementTree as ET

import pytest

from kbtool.reports import junit
from kbtool.reports.verdict import exit_code, summarize

from .helpers import STALE, available, broken, make_report, not_installed, record

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARITY = os.path.join(ROOT, "reports", "parity.json")
COUNTS = ("tests", "failures", "errors", "skipped")
_DECIMAL = re.compile(r"^\d+(\.\d+)?$")
_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$")  # xs:dateTime without a zone, as junit.xsd has it


def conforming(text):
    """Parse JUnit XML and check it as junit.xsd would, plus the counts; returns the root element."""
    root = ET.fromstring(text)
    assert root.tag == "testsuites"
    totals = dict.fromkeys(COUNTS, 0)
    total_time = 0.0
    for suite in root:
        assert suite.tag == "testsuite"
        for attr in ("name",) + COUNTS + ("time",):
            assert suite.get(attr) is not None, (suite.get("name"), attr)
        assert _DECIMAL.match(suite.get("time")), suite.get("time")
        if suite.get("timestamp") is not None:
            assert _TIMESTAMP.match(suite.get("timestamp")), suite.get("timestamp")
        children = list(suite)
        if children and children[0].tag == "properties":
            for prop in children[0]:
                assert prop.tag == "property" and prop.get("name") and prop.get("value") is not None
            children = children[1:]
        counted = dict.fromkeys(COUNTS, 0)
        seconds = 0.0
        for case in children:
            assert case.tag == "testcase"  # properties come first, then testcases only
            assert case.get("name") and case.get("classname") and _DECIMAL.match(case.get("time"))
            outcomes = [c for c in case if c.tag in ("failure", "error", "skipped")]
            assert len(outcomes) <= 1 and all(c.tag in ("failure", "error", "skipped", "system-out") for c in case)
            for outcome in outcomes:
                assert outcome.get("message") is not None
                counted[
                    "failures" if outcome.tag == "failure" else "errors" if outcome.tag == "error" else "skipped"
                ] += 1
            counted["tests"] += 1
            seconds += float(case.get("time"))
        assert {k: int(suite.get(k)) for k in COUNTS} == counted, suite.get("name")
        assert float(suite.get("time")) == pytest.approx(seconds, abs=1e-3 * (1 + len(children)))
        for k in COUNTS:
            totals[k] += counted[k]
        total_time += float(suite.get("time"))
    assert {k: int(root.get(k)) for k in COUNTS} == totals
    assert float(root.get("time")) == pytest.approx(total_time, abs=0.01)
    return root


def suites_of(report):
    return {s.get("name"): s for s in conforming(junit.render(report))}


def outcome(case):
    found = [c for c in case if c.tag in ("failure", "error", "skipped")]
    return found[0].tag if found else "passed"


def is_green(root):
    return root.get("failures") == "0" and root.get("errors") == "0"


# ---------------------------------------------------------------------------------------------------- counting

REPORTS = {
    "all pass": ([available("alpha")], [record("dot", "a", "alpha", "pass")], ()),
    "known fail": (
        [available("alpha")],
        [record("dot", "a", "alpha", "pass"), record("dot", "b", "alpha", "fail", known="r")],
        (),
    ),
    "known unsupported": (
        [available("alpha")],
        [record("dot", "a", "alpha", "pass"), record("dot", "b", "alpha", "unsupported", known="r")],
        (),
    ),
    "unsupported": (
        [available("alpha")],
        [record("dot", "a", "alpha", "pass"), record("dot", "b", "alpha", "unsupported")],
        (),
    ),
    "fail": ([available("alpha")], [record("dot", "a", "alpha", "fail")], ()),
    "crash": ([available("alpha")], [record("dot", "a", "alpha", "crash")], ()),
    "stale": ([available("alpha")], [record("dot", "a", "alpha", "pass")], [STALE]),
    "broken": ([available("alpha"), broken("my.kb")], [record("dot", "a", "alpha", "pass")], ()),
    "not installed": ([available("alpha"), not_installed("cntk")], [record("dot", "a", "alpha", "pass")], ()),
    "nothing ran": ([available("alpha")], [], ()),
}


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_a_dashboard_is_green_exactly_when_the_cli_exits_0(name):
    backends, results, stale = REPORTS[name]
    report = make_report(backends, results, stale)
    root = conforming(junit.render(report))
    if name == "nothing ran":  # no testcase at all: CI tools show that as a failed (empty) run
        assert root.get("tests") == "0"
        return
    assert is_green(root) == (exit_code(report) == 0), name


def test_an_unexplained_unsupported_fails_and_a_known_one_is_skipped_with_its_reason():
    report = make_report(
        [available("alpha")],
        [
            record("dot", "a", "alpha", "unsupported", message="alpha has no dot"),
            record("dot", "b", "alpha", "unsupported", known="alpha never had it"),
        ],
    )
    suite = suites_of(report)["kbtool.alpha"]
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert outcome(cases["a[eager]"]) == "failure"
    assert cases["a[eager]"].find("failure").get("message") == "unsupported: alpha has no dot"
    assert (
        cases["a[eager]"].find("failure").text == "kbtool check --op dot --case a --backend alpha --mode eager --seed 0"
    )
    assert outcome(cases["b[eager]"]) == "skipped"
    assert cases["b[eager]"].find("skipped").get("message") == "known difference: alpha never had it"


def test_strict_fails_known_unsupported_and_a_changed_result_always_fails():
    changed = record("dot", "d", "alpha", "changed")
    changed["changed"] = {"entry": 3, "reason": "flip", "status": "fail", "recorded": "fail | a", "now": "fail | b"}
    report = make_report(
        [available("alpha")],
        [
            record("dot", "b", "alpha", "unsupported", known="never had it"),
            record("dot", "c", "alpha", "fail", known="rounds"),
        ],
    )
    assert is_green(conforming(junit.render(report)))  # without --strict: skipped
    report["summary"] = summarize(report, strict=True)
    assert exit_code(report) == 1
    suites = suites_of(report)
    cases = {c.get("name"): c for c in suites["kbtool.alpha"].iter("testcase")}
    assert outcome(cases["b[eager]"]) == "failure" and outcome(cases["c[eager]"]) == "skipped"
    report = make_report([available("alpha")], [changed])
    cases = {c.get("name"): c for c in suites_of(report)["kbtool.alpha"].iter("testcase")}
    assert outcome(cases["d[eager]"]) == "failure"
    assert cases["d[eager]"].find("failure").get("message") == (
        "changed known result (entry 3): recorded fail | a; now fail | b"
    )


def test_every_status_maps_to_its_outcome():
    statuses = {
        "pass": "passed",
        "fail": "failure",
        "unsupported": "failure",
        "error": "error",
        "crash": "error",
        "timeout": "error",
        "could_not_start": "error",
    }
    report = make_report([available("alpha")], [record("dot", s, "alpha", s) for s in statuses])
    cases = {c.get("name"): c for c in suites_of(report)["kbtool.alpha"].iter("testcase")}
    assert {name.split("[")[0]: outcome(c) for name, c in cases.items()} == statuses
    assert cases["crash[eager]"].find("error").get("message") == "crash: crash here"


# ---------------------------------------------------------------------------------------------------- backends


def test_a_backend_that_could_not_start_is_an_error_even_with_results():
    info = broken("theano")
    info["reason"] = "kbtool failed while running this backend (1 results kept): RuntimeError: boom"
    info["start_output"] = "WARNING: no BLAS"
    report = make_report(
        [available("alpha"), info], [record("dot", "a", "alpha", "pass"), record("dot", "a", "theano", "pass")]
    )
    suite = suites_of(report)["kbtool.theano"]
    cases = list(suite.iter("testcase"))
    assert [(c.get("name"), outcome(c)) for c in cases] == [("start", "error"), ("a[eager]", "passed")]
    assert "RuntimeError: boom" in cases[0].find("error").get("message")
    assert cases[0].find("system-out").text == "WARNING: no BLAS"
    assert (suite.get("tests"), suite.get("errors")) == ("2", "1")


def test_a_backend_that_is_not_installed_is_a_skipped_testcase():
    report = make_report([available("alpha"), not_installed("cntk")], [record("dot", "a", "alpha", "pass")])
    suite = suites_of(report)["kbtool.cntk"]
    (case,) = suite.iter("testcase")
    assert outcome(case) == "skipped"
    assert case.find("skipped").get("message") == "not run: not installed: run `kbtool env install cntk`"


def test_stale_known_differences_are_failing_testcases():
    report = make_report([available("alpha")], [record("dot", "a", "alpha", "pass")], stale=[STALE])
    (case,) = suites_of(report)["kbtool.known_differences"].iter("testcase")
    assert case.get("name") == "stale known difference: dot basic on beta" and outcome(case) == "failure"
    assert case.find("failure").get("message") == "beta rounds (did not reproduce in this run (2 results checked))"


def test_an_interrupted_check_is_an_error():
    report = make_report([available("alpha")], [record("dot", "a", "alpha", "pass")])
    report["incomplete"] = {"signal": "SIGINT", "planned": 4, "ran": 1, "note": "interrupted by SIGINT"}
    report["summary"] = summarize(report)
    case = suites_of(report)["kbtool.incomplete"].find("testcase")
    assert outcome(case) == "error" and case.find("error").get("message") == "interrupted by SIGINT"


# ---------------------------------------------------------------------------------------------------- suites


def test_suites_carry_time_timestamp_and_properties():
    report = make_report(
        [available("alpha")],
        [record("dot", "a", "alpha", "pass", seconds=0.25), record("dot", "b", "alpha", "fail", seconds=0.5)],
    )
    report["created"] = "2024-05-01T14:00:00+02:00"
    report["grid"] = "pairwise"
    report["keras_config"] = {
        "override": {},
        "ran": [{"floatx": "float32"}],
        "values": {"floatx": "float32"},
        "source": {"floatx": "keras.json"},
    }
    report["active_backend"] = "alpha"
    suite = suites_of(report)["kbtool.alpha"]
    assert suite.get("time") == "0.750" and suite.get("timestamp") == "2024-05-01T12:00:00"  # UTC, no zone
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["version.alpha"] == "1.0" and props["python"] == "3.11.7" and props["module"] == "kbtool.reference"
    assert props["seed"] == "0" and props["kbtool"] == report["kbtool"] and props["grid"] == "pairwise"
    assert props["keras.json.floatx"] == "float32" and props["keras.json.floatx.source"] == "keras.json"
    assert json.loads(props["keras_config.ran"]) == [{"floatx": "float32"}]
    assert props["backend.status"] == "available" and props["active_backend"] == "alpha"
    assert props["pass_as_is"] == "50.0 % (1/2)"  # as every view's headline: pass / results that ran


def test_what_a_case_printed_goes_to_its_system_out():
    report = make_report(
        [available("alpha")],
        [
            record(
                "log",
                "zero",
                "alpha",
                "pass",
                captured={
                    "reference": "math.py:11: RuntimeWarning: divide by zero encountered in log",
                    "backend": "x is: [1 2]",
                },
            )
        ],
    )
    case = suites_of(report)["kbtool.alpha"].find("testcase")
    assert case.find("system-out").text == (
        "reference printed:\nmath.py:11: RuntimeWarning: divide by zero "
        "encountered in log\nbackend printed:\nx is: [1 2]"
    )


def test_an_unreadable_timestamp_is_left_out():
    report = make_report([available("alpha")], [record("dot", "a", "alpha", "pass")])
    report["created"] = "now"
    assert suites_of(report)["kbtool.alpha"].get("timestamp") is None


def test_control_characters_never_reach_the_xml():
    report = make_report([available("alpha")], [record("dot", "a", "alpha", "error", message="bad \x1b[31m\x00\x07")])
    case = suites_of(report)["kbtool.alpha"].find("testcase")
    assert case.find("error").get("message") == "error: bad \ufffd[31m\ufffd\ufffd"


def test_the_published_full_run():
    with open(PARITY, encoding="utf-8") as fh:
        report = json.load(fh)
    root = conforming(junit.render(report))
    summary = report["summary"]
    assert int(root.get("tests")) == len(report["results"]) + sum(
        1 for b in report["backends"] if b["status"] != "available"
    ) + summary["stale"] + sum(
        len(b.get("unsupported_modes") or {}) for b in report["backends"]
    )  # keras3's symbolic mode: one testcase
    assert int(root.get("skipped")) >= sum(c["known"] for c in summary["per_backend"].values())
    assert is_green(root) == summary["ok"]
    stripped = copy.deepcopy(report)
    for r in stripped["results"]:
        r.pop("known", None)
    stripped["summary"] = summarize(stripped)
    root = conforming(junit.render(stripped))
    assert int(root.get("failures")) + int(root.get("errors")) == stripped["summary"]["divergences"]
