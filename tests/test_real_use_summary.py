"""Real use II (#33), part E: summary.md fits a PR comment with room to spare (the published run in under 10,000
characters, any run under summary_md.MAX_CHARS), says a self-test is one, caps the failures with "and N more" and
names the full report; `--format github` stays under half of GitHub's limit; reports/summary.md is the published
run's summary as rendered now."""

import json
import os

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.reports import format_of, github, render, summary_md

from .helpers import available, broken, make_report, record, renderer_report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARITY = os.path.join(ROOT, "reports", "parity.json")


@pytest.fixture(autouse=True)
def _outside_actions(monkeypatch):
    for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def parity():
    with open(PARITY, encoding="utf-8") as fh:
        return json.load(fh)


def test_the_published_run_summary_is_small_and_keeps_each_backends_pass_as_is(parity):
    text = summary_md.render(parity, source="reports/parity.json")
    assert len(text) < 10_000
    assert "**OK**: no unexplained divergence" in text
    for name, counts in parity["summary"]["per_backend"].items():
        ran = sum(v for k, v in counts.items() if k != "could_not_start")
        assert f"({counts['pass']}/{ran})** |" in text, name  # pass as is, with its denominator
    assert text.rstrip().endswith("`reports/parity.json` (`kbtool report render reports/parity.json` shows it all).")


def test_reports_summary_md_is_the_published_runs_summary(parity):
    with open(os.path.join(ROOT, "reports", "summary.md"), encoding="utf-8") as fh:
        assert fh.read() == summary_md.render(parity, source="reports/parity.json")


def test_the_github_view_of_the_published_run_is_well_under_the_limit(parity):
    assert len(render(parity, "github")) <= github.BUDGET <= github.LIMIT // 2


def many_failures(groups=300):
    results = [
        record(f"op{g}", f"case{c}", "b0", "fail", message=f"values differ in op{g} " + "x" * 2000)
        for g in range(groups)
        for c in range(3)
    ]
    results += [record("op0", "k", "b1", "fail", known="reason " + "y" * 500)]
    return make_report([available("b0"), available("b1"), broken("b2")], results)


def test_failures_are_capped_with_and_n_more_and_any_run_stays_small():
    text = summary_md.render(many_failures(), url="https://github.com/o/r/actions/runs/7")
    assert len(text) < 10_000
    assert "### Unexplained failures: 900 results in 300 groups" in text
    assert text.count("\n- ✗ **fail** ") == summary_md.FAILURE_GROUPS
    assert (
        f"- and {300 - summary_md.FAILURE_GROUPS} more groups ({(300 - summary_md.FAILURE_GROUPS) * 3} results)" in text
    )
    assert "**Not OK: 900 divergences" in text and "- broken: b2" in text
    assert "[this run's artifacts](https://github.com/o/r/actions/runs/7)" in text
    huge = summary_md.render(many_failures(groups=5000))
    assert len(huge) <= summary_md.MAX_CHARS


def test_a_self_test_says_so():
    report = renderer_report()
    report["plan"] = dict(report.get("plan") or {}, self_test=True)
    assert "**Self-test**: numpy (kbtool's own reference) against itself" in summary_md.render(report)


def test_the_format_is_reached_by_name_and_by_file_name(tmp_path):
    assert format_of("summary.md") == format_of("out/parity.summary.md") == "summary"
    assert format_of("parity.md") == "markdown"
    out = CliRunner().invoke(main, ["report", "render", PARITY, "--format", "summary"])
    assert out.exit_code == 0 and out.output.startswith("## kbtool parity summary")
    written = CliRunner().invoke(main, ["report", "render", PARITY, "-o", str(tmp_path / "summary.md")])
    assert written.exit_code == 0
    assert (tmp_path / "summary.md").read_text().startswith("## kbtool parity summary")
