"""GitHub output: `report render --format github` always fits a PR comment (65,536 characters) and says what it
folded and left out; `--format annotations` gives one escaped ::error per unexplained group at its spec line."""

import hashlib
import os
import re

import pytest
from click.testing import CliRunner

from kbtool import paths
from kbtool.cli import main
from kbtool.reports import annotations, github, render
from kbtool.reports.summary import failure_groups
from kbtool.specs.lines import case_line, spec_lines

from .helpers import HEADER, available, make_report, record, renderer_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARITY = os.path.join(ROOT, "reports", "parity.json")


@pytest.fixture(autouse=True)
def _outside_actions(monkeypatch):
    for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID", "GITHUB_WORKSPACE"):
        monkeypatch.delenv(name, raising=False)


def many_failures(n_backends=4, n_ops=400, per_op=5):
    """Thousands of unexplained results in thousands of groups, with long messages, plus known ones."""
    results = []
    for b in range(n_backends):
        for o in range(n_ops):
            for c in range(per_op):
                results.append(
                    record(f"op{o}", f"case{c}", f"b{b}", "fail", message=f"values differ by {o}.{c} " + "x" * 400)
                )
            results.append(record(f"op{o}", "known", f"b{b}", "fail", known=f"reason {o} " + "y" * 300))
    return make_report([available(f"b{b}") for b in range(n_backends)], results)


def test_the_published_report_fits_a_comment_and_says_what_it_left_out():
    with open(PARITY, encoding="utf-8") as fh:
        report = __import__("json").load(fh)
    text = render(report, "github")
    assert len(text) <= github.BUDGET <= github.LIMIT
    # the headline: pass as is with its denominator, per backend, from the report's own counts
    tf = report["summary"]["per_backend"]["tensorflow"]
    results = sum(tf.values())
    assert f"({tf['pass']}/{results})" in text
    assert "| backend | pass as is | conformance | unexplained | known |" in text
    # what did not fit is named and counted, and where the whole report is
    left = re.search(r"Left out to keep this comment short [^:]*: (\d+) known-difference reasons?", text)
    assert left and int(left.group(1)) > 0
    shown_reasons = text.count("\n| ") - text.count("\n| backend")  # table rows (headers excluded)
    assert "Folded (click to open): " in text and "artifacts" in text.splitlines()[-1]
    assert shown_reasons >= github.KNOWN_REASONS and f"Folded (click to open): {github.KNOWN_REASONS} known" in text
    assert text.count("<details>") == text.count("</details>") == 1


def test_thousands_of_unexplained_failures_still_fit_and_come_first():
    report = many_failures()
    assert len(failure_groups(report)) == 1600
    text = github.render(report, url="https://github.com/o/r/actions/runs/1")
    assert len(text) <= github.BUDGET
    assert text.index("### Unexplained failures") < text.index("### Known differences")
    footer = text.split("\n---\n")[-1]
    groups = re.search(r"Left out to [^:]+: (\d+) unexplained groups? \((\d+) results?\)", footer)
    folded = re.search(r"Folded \(click to open\): (\d+) unexplained groups? \((\d+) results?\)", footer)
    assert groups and folded
    shown = github.OPEN_GROUPS + int(folded.group(1))
    assert shown + int(groups.group(1)) == 1600  # every group is shown, folded or counted as left out
    assert int(groups.group(2)) + int(folded.group(2)) + github.OPEN_GROUPS * 5 == 1600 * 5
    assert "[this run's artifacts](https://github.com/o/r/actions/runs/1)" in footer
    # the per-backend known summary was kept though the failures filled the page
    assert "| b3 | 400 | 400 |" in text


def test_any_budget_is_kept():
    report = many_failures(n_backends=2, n_ops=50)
    for budget in (3_000, 10_000, 30_000):
        assert len(github.render(report, budget=budget)) <= budget


def test_a_small_report_is_whole_and_says_nothing_was_left_out():
    text = github.render(renderer_report())
    assert "Left out" not in text
    assert "**Not OK: 6 divergences**" in text
    assert "| alpha | **60.0 % (3/5)** | 80.0 % | 1 | 1 |" in text
    assert "| beta | **0.0 % (0/5)** | 0.0 % | 5 | 0 |" in text
    # every unexplained group, open: its message escaped (a pipe would split the cell) and its repro
    assert "values differ \\| by 0.5" in text and "`kbtool check --op dot --case c --backend alpha" in text
    assert "Folded (click to open): 1 known-difference reason." in text


def test_the_cli_prints_it():
    out = CliRunner().invoke(main, ["report", "render", PARITY, "--format", "github"])
    assert out.exit_code == 0 and len(out.output) <= github.LIMIT and "Left out" in out.output


# --- annotations ---


def test_workflow_commands_are_escaped_by_githubs_rules():
    line = annotations.command("error", "50% off\r\nnext", file="a,b:c.yaml", line="3", title="t: x, y%")
    assert line == "::error file=a%2Cb%3Ac.yaml,line=3,title=t%3A x%2C y%25::50%25 off%0D%0Anext"
    assert annotations.command("warning", "m", file=None) == "::warning::m"


def test_spec_lines_name_each_case_where_it_is_written(tmp_path):
    spec = tmp_path / "ops.yaml"
    spec.write_text(
        HEADER
        + "  dot:\n"
        + "    grid:\n      inputs: {}\n"
        + "    examples:\n      - id: doc\n        case: {}\n"
        + "    cases:\n      - {id: basic}\n      - id: big\n        inputs: []\n"
    )
    lines = spec_lines(str(spec))
    text = spec.read_text().splitlines()
    assert text[case_line(lines, "dot", "basic") - 1] == "      - {id: basic}"
    assert text[case_line(lines, "dot", "big") - 1] == "      - id: big"
    assert case_line(lines, "dot", "big.kernel_flipped") == case_line(lines, "dot", "big")
    assert text[case_line(lines, "dot", "example:doc") - 1] == "      - id: doc"
    assert text[case_line(lines, "dot", "grid.x=1") - 1] == "    grid:"
    assert text[case_line(lines, "dot", "gone") - 1] == "  dot:"  # the op's line
    assert case_line(lines, "sum", "basic") is None
    assert spec_lines(str(tmp_path / "missing.yaml")) is None
    (tmp_path / "bad.yaml").write_text("ops: [unclosed\n")
    assert spec_lines(str(tmp_path / "bad.yaml")) is None


def shipped_spec_report(results):
    report = make_report([available("alpha"), available("beta")], results)
    with open(paths.spec_file(), "rb") as fh:
        report["spec"] = {"path": paths.spec_file(), "sha256": hashlib.sha256(fh.read()).hexdigest()}
    return report


def test_one_error_per_unexplained_group_at_the_case_line():
    report = shipped_spec_report(
        [
            record("sum", "all", "alpha", "fail", message="off by 1, at [0]: 50%"),
            record("sum", "all", "beta", "pass"),
            record("abs", "no_such_case", "beta", "error", message="no\nway"),
            record("batch_dot", "example:diagonal", "beta", "error", message="no\nway"),
            record("sum", "known", "beta", "fail", known="recorded"),
        ]
    )
    text = annotations.render(report, workspace=ROOT)
    lines = text.splitlines()
    assert len(lines) == 2  # alpha's fail; beta's one message in two ops
    spec_text = open(paths.spec_file(), encoding="utf-8").read().splitlines()
    first = re.match(r"::error file=specs/ops\.yaml,line=(\d+),title=kbtool%3A sum all on alpha::(.*)$", lines[0])
    assert first, lines[0]
    assert spec_text[int(first.group(1)) - 1].strip() == "- {id: all, inputs: [{shape: [3, 4]}]}"
    assert first.group(2).startswith("fail: off by 1, at [0]: 50%25%0Arepro: kbtool check --op sum --case all")
    second = re.match(r"::error file=specs/ops\.yaml,line=(\d+),title=(.*?)::(.*)$", lines[1])
    assert second.group(2) == "kbtool%3A abs no_such_case on beta (+1 more in 2 ops)"
    assert spec_text[int(second.group(1)) - 1] == "  abs:"  # no such case: the op's line
    assert second.group(3).startswith("error: no%0Away%0Aops: abs, batch_dot%0Arepro: kbtool check --op abs")


def test_no_file_when_the_spec_is_not_the_one_that_ran_or_not_in_the_workspace(tmp_path):
    report = shipped_spec_report([record("sum", "all", "alpha", "fail")])
    assert annotations.render(report, workspace=str(tmp_path)).startswith("::error title=kbtool%3A sum all on alpha::")
    report["spec"]["sha256"] = "0" * 64  # another spec ran: its lines would point at the wrong case
    assert annotations.render(report, workspace=ROOT).startswith("::error title=")


def test_annotations_are_capped_with_a_warning_that_counts_the_rest():
    report = many_failures(n_backends=1, n_ops=60)
    lines = annotations.render(report).splitlines()
    assert len(lines) == annotations.MAX_ANNOTATIONS + 1
    assert all(line.startswith("::error ") for line in lines[:-1])
    assert lines[-1].startswith("::warning title=kbtool%3A 10 groups not annotated::10 more unexplained groups")
    assert "(50 of 300 unexplained results)" in lines[-1]


def test_a_green_report_has_no_annotation_and_the_cli_prints_them():
    assert annotations.render(make_report([available("alpha")], [record("dot", "a", "alpha", "pass")])) == ""
    out = CliRunner().invoke(main, ["report", "render", PARITY, "--format", "annotations"])
    assert out.exit_code == 0 and out.output == ""
