"""The small wrongs of issue 22: the HTML header's filters, a custom backend's version, a peak memory of "0 MB",
"1 results" and "divergence(s)", the pytest summary's "unsupported" for a known result, and an absolute spec path in
a published report."""

import json
import re

import pytest
from click.testing import CliRunner

from kbtool import paths
from kbtool.cli import main
from kbtool.reports import render
from kbtool.reports.summary import resources_line, short_versions
from kbtool.reports.terminal import verdict_line_text
from kbtool.reports.text import megabytes, plural
from tests.helpers import synthetic

pytest_plugins = "pytester"


def check(*args):
    result = CliRunner().invoke(main, ["check", *args], env={"COLUMNS": "200"})
    assert result.exit_code in (0, 1), result.output
    return result


def test_plural_and_megabytes():
    assert [plural(1, "result"), plural(0, "result"), plural(2, "op"), plural("?", "case")] == [
        "1 result",
        "0 results",
        "2 ops",
        "? cases",
    ]
    assert plural(2, "entry", "entries") == "2 entries"
    assert [megabytes(None), megabytes(0), megabytes(0.4), megabytes(812.6)] == ["n/a", "n/a", "<1 MB", "813 MB"]


def test_peak_memory_not_measured_or_below_a_megabyte_is_never_0_mb():
    line = resources_line({"jobs": 1, "peak_workers_rss_mb": 0.0, "peak_controller_rss_mb": 0.3})
    assert line == "1 worker slot, peak memory n/a in the workers together, <1 MB in the controller"
    assert "0 MB" not in resources_line({"jobs": 2, "peak_workers_rss_mb": 0.2, "peak_controller_rss_mb": 95.0})


def test_one_result_and_one_divergence_read_in_the_singular_in_every_view():
    report = synthetic([("abs", "basic", "numpy", "eager", "fail", 0.1, "values differ")])
    assert re.match(r"1 result in [\d.]+ s, pass as is 0.0 % \(0/1\): 1 divergence$", verdict_line_text(report))
    html = render(report, "html")
    assert "1 unexplained divergence" in html
    for text in (render(report, "markdown"), html):
        assert "divergence(s)" not in text and "1 results" not in text and "result(s)" not in text
    assert "1 result in 1 group" in render(report, "markdown")


def test_the_terminal_says_1_result_in_1_group(capsys):
    report = synthetic([("abs", "basic", "numpy", "eager", "fail", 0.1, "values differ")])
    render(report, "terminal", verbosity=1)
    out = capsys.readouterr().out
    assert "(1 result in 1 group)" in out and "1 results" not in out and "(s)" not in out


def test_a_custom_backends_version_is_its_own_or_custom_never_numpys():
    numpy = {"name": "numpy", "kind": "builtin", "versions": {"numpy": "2.4.6"}}
    assert short_versions(numpy, 1) == "2.4.6"
    bare = {
        "name": "mine.kb",
        "kind": "custom",
        "module": "mine.kb",
        "versions": {"mine.kb": "unknown", "numpy": "2.4"},
    }
    assert short_versions(bare, 1) == "custom"
    old = {"name": "mine.kb", "kind": "custom", "module": "mine.kb", "versions": {"numpy": "2.4"}}  # an older report
    assert short_versions(old, 1) == "custom"
    own = {"name": "mine.kb@tensorflow", "kind": "custom", "module": "mine.kb", "versions": {"mine.kb": "0.9"}}
    assert short_versions(own, 1) == "0.9"


def test_a_custom_module_reports_its_own_version(custom_backend, tmp_path):
    name = custom_backend("versioned", "kb", "from kbtool.reference import *\n__version__ = '0.9.1'\n")
    (tmp_path / "k.yaml").write_text("[]\n")
    result = check(
        "--op", "abs", "--backend", name, "--case", "basic", "--mode", "eager", "--known", str(tmp_path / "k.yaml")
    )
    assert "0.9.1" in result.output and "2.4" not in result.output.split("keras.json settings")[-1].split("\n")[2]
    out = check("--op", "abs", "--backend", name, "--case", "basic", "--mode", "eager", "--json").stdout
    info = json.loads(out)["backends"][0]
    assert info["versions"][name] == "0.9.1" and short_versions(info, 1) == "0.9.1"


def test_the_html_header_names_the_runs_filters_and_the_report_no_absolute_spec_path(tmp_path, monkeypatch):
    monkeypatch.chdir(paths.CHECKOUT_ROOT)  # a check in the checkout: the spec is specs/ops.yaml
    html, data = tmp_path / "r.html", tmp_path / "r.json"
    check("--op", "abs", "--backend", "numpy", "--case", "basic", "-o", str(html), "-o", str(data))
    header = html.read_text()
    assert "<code>--op abs --backend numpy --case basic</code>" in header
    assert "none (whole spec)" not in header
    report = json.loads(data.read_text())
    assert report["spec"]["path"] == "specs/ops.yaml"
    assert report["known_files"][0]["path"] == "specs/known_differences.yaml"
    assert report["plan"]["backends"] == ["numpy"]


@pytest.mark.slow  # a nested pytest session
def test_the_pytest_summary_counts_explained_results_as_known(pytester):
    pytester.makeini("[pytest]\n")
    result = pytester.runpytest("--kbtool", "--kbtool-op", "abs", "--kbtool-backend", "numpy", "--kbtool-case", "grad")
    line = next(line for line in result.outlines if re.match(r"\d+ results?: ", line))
    assert "known" in line and "unsupported" not in line, line
