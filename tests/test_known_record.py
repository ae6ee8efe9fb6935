"""`kbtool known record`: a known-differences file made exact from a run, edited as text; and the gate it makes
(a known result that fails differently is `changed`, exit 1, in a run of one op)."""

import json

import pytest
from click.testing import CliRunner

from kbtool import files, known
from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.known import fingerprint
from kbtool.known import record as known_record
from kbtool.results import Result

SCALED = """
from kbtool.reference import *  # noqa
from kbtool.reference import abs as _abs

def abs(x):
    return _abs(x) * {scale}
"""
KNOWN = """# my backend's known differences: a comment that must stay
- op: abs
  backend: {module}
  status: [fail, error, unsupported]
  match: "."
  reason: it scales abs, on purpose   # and a comment on a line

# a section comment after the entry
"""


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_a_known_failure_that_changes_is_changed_in_a_one_op_run(custom_backend, tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    module = custom_backend("planted", "scaled", SCALED.format(scale=1.01))
    known_file = tmp_path / "known.yaml"
    known_file.write_text(KNOWN.format(module=module))
    first = run("check", "--backend", module, "--op", "abs", "--known", str(known_file), "-o", str(tmp_path / "a.json"))
    assert first.exit_code == 0, first.output  # explained by its regex: not yet recorded
    recorded = run("known", "record", str(tmp_path / "a.json"), "--known", str(known_file))
    assert recorded.exit_code == 0, recorded.output
    text = known_file.read_text()
    assert text.startswith("# my backend's known differences") and "# a section comment after the entry" in text
    assert "# and a comment on a line" in text
    (entry,) = known.load(str(known_file))
    report = json.loads((tmp_path / "a.json").read_text())
    # every result that diverges is recorded; special_values passes (NaN, inf, 0 and 1e-40 scaled stay within tolerance)
    passing = [(r["case"], r["mode"]) for r in report["results"] if r["status"] == "pass"]
    # in both modes: a symbolic call of the reference's module is the eager one deferred (kbtool.reference.core)
    assert passing == [("special_values", "eager"), ("special_values", "symbolic")]
    assert entry.count == len(entry.results) == len(report["results"]) - 2 > 3
    assert run("known", "record", str(tmp_path / "a.json"), "--known", str(known_file)).output.endswith(
        "already current\n"
    )
    same = run("check", "--backend", module, "--op", "abs", "--known", str(known_file))
    assert same.exit_code == 0, same.output
    custom_backend("planted", "scaled", SCALED.format(scale=2.0))
    second = run(
        "check", "--backend", module, "--op", "abs", "--known", str(known_file), "-o", str(tmp_path / "b.json")
    )
    assert second.exit_code == 1
    changed = [r for r in json.loads((tmp_path / "b.json").read_text())["results"] if r["status"] == "changed"]
    assert changed and all(r["case"] != "grad" for r in changed)
    # the results whose values scale, in both modes (a symbol of the reference's module takes `*` since #34: the
    # symbolic ones scale as the eager ones do); int32_min's values are near 2**31
    assert {(r["case"], r["mode"]) for r in changed} == {
        (case, mode) for case in ("basic", "float64", "int32", "int32_min") for mode in ("eager", "symbolic")
    }
    sizes = {"int32_min": (" 1e7 @", " 1e9 @")}
    for r in changed:
        before, now = sizes.get(r["case"], (" 1e-2 @", " 1e0 @"))
        assert before in r["changed"]["recorded"] and now in r["changed"]["now"], r
    assert "changed known result: abs" in second.output
    # the same in a run of one case of it: no filter hides a changed result
    one = run(
        "check", "--backend", module, "--op", "abs", "--case", "basic", "--mode", "eager", "--known", str(known_file)
    )
    assert one.exit_code == 1 and "changed known result: abs basic" in one.output


def result(case, message="1 of 2 values differ (...)", status="fail", backend="theano"):
    details = {"mismatched": 1, "size": 2, "max_abs_diff": 0.5, "first_index": [1], "mask": "00000001"}
    return Result(op="sum", case=case, backend=backend, mode="eager", status=status, message=message, details=details)


def recorded_text(text, results):
    root, data = files.parse_yaml("k.yaml", text)
    return known_record.record(text, root, known.numbered(data), results)


def test_record_keeps_layout_and_writes_sorted_keys():
    text = "# head\n- op: sum\n  backend: theano\n  match: differ\n  reason: >-\n    a long\n    reason\n\n# next\n"
    done = recorded_text(text, [result("b"), result("a")])
    fp = fingerprint.of_result(result("a"))
    assert done.text == (
        "# head\n- op: sum\n  backend: theano\n  match: differ\n  reason: >-\n    a long\n    reason\n"
        f'  count: 2\n  results:\n    "sum a theano eager": {json.dumps(fp)}\n    "sum b theano eager": {json.dumps(fp)}\n'
        "\n# next\n"
    )
    again = recorded_text(done.text, [result("b"), result("a")])
    assert again.text == done.text and again.changed_entries == []


def test_record_replaces_an_old_record_and_keeps_pairs_the_run_did_not_hold():
    text = (
        "- op: sum\n  backend: [theano, cntk]\n  match: differ\n  reason: r\n  count: 2\n  results:\n"
        '    "sum a theano eager": "old"\n    "sum a cntk eager": "kept"\n'
    )
    done = recorded_text(text, [result("b")])
    (entry,) = known.numbered(files.parse_yaml("k.yaml", done.text)[1])
    assert entry.results == {"sum a cntk eager": "kept", "sum b theano eager": fingerprint.of_result(result("b"))}
    assert entry.count == 2 and done.changed_entries == [1]


def test_record_keeps_a_record_of_several_ways_or_of_any_values_while_it_holds():
    fp = fingerprint.of_result(result("a"))
    varies = fp.rsplit("values: ", 1)[0] + "values: " + fingerprint.ANY
    text = (
        "- op: sum\n  backend: theano\n  match: differ\n  reason: r\n  count: 2\n  results:\n"
        f'    "sum a theano eager": {json.dumps(["crash | the worker died", fp])}\n'
        f'    "sum b theano eager": {json.dumps(varies)}\n'
    )
    other = result("b", message="2 of 2 values differ (...)")  # other values, the same status, message, shape, dtype
    other.details = dict(other.details, mismatched=2, max_abs_diff=9e12, mask="00000003")
    done = recorded_text(text, [result("a"), other])
    assert done.text == text and done.changed_entries == []
    # a record that no longer holds is replaced by what the run gave
    moved = result("a")
    moved.details = dict(moved.details, first_index=[0])
    again = recorded_text(text, [moved])
    (entry,) = known.numbered(files.parse_yaml("k.yaml", again.text)[1])
    assert entry.results["sum a theano eager"] == fingerprint.of_result(moved) != fp


def test_record_writes_a_flow_entry_again_whole():
    done = recorded_text("- {op: sum, backend: theano, match: differ, reason: r, count: 9}\n", [result("a")])
    (entry,) = known.numbered(files.parse_yaml("k.yaml", done.text)[1])
    assert entry.count == 1 and list(entry.results) == ["sum a theano eager"] and done.text.count("\n") == 1


@pytest.mark.parametrize(
    "text, problem",
    [
        ("- {op: sum, backend: theano, match: nothing, reason: r}\n", "entry 1 (sum): stale: explains none of the 1"),
        (
            "- {op: sum, backend: theano, match: differ, reason: r}\n- {op: sum, backend: theano, case: a, reason: s}\n",
            "entry 2 (sum): dead: the results it explains were all taken by earlier entries",
        ),
    ],
)
def test_record_refuses_stale_and_dead_entries(text, problem):
    with pytest.raises(KbtoolError, match="^" + problem.replace("(", r"\(").replace(")", r"\)")):
        recorded_text(text, [result("a")])


@pytest.mark.parametrize(
    "report, problem",
    [
        ({"incomplete": {"note": "interrupted by SIGINT"}}, "the run was interrupted"),
        ({"plan": {"all_cases": False}}, "the run did not hold every case of its ops"),
        ({"plan": {"all_cases": True}, "keras_config": {"override": {"floatx": "float64"}}}, "overrode keras.json"),
        ({"plan": {"all_cases": True}, "grid": "full"}, "expanded the grids as 'full'"),
        (
            {"plan": {"all_cases": True, "as_recorded": False}, "keras_config": {"values": {"floatx": "float64"}}},
            "settings are not the documented defaults (floatx float64)",
        ),
    ],
)
def test_record_refuses_a_run_it_cannot_record(report, problem):
    assert problem in known_record.comparable_problem(report)
    assert known_record.comparable_problem({"plan": {"all_cases": True}, "grid": "pairwise"}) is None


def test_record_cli_errors_are_one_line(tmp_path):
    out = run("known", "record", str(tmp_path / "missing.json"))
    assert out.exit_code == 2 and len(out.output.strip().splitlines()) == 1 and "Traceback" not in out.output
