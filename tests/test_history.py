"""The parity history: lines from reports (`kbtool report history-add`, `check --history`), the append-only file,
and the page (`kbtool report history`): releases in version order, the ops whose results changed by release.

Fast tests use hand-built reports (tests/helpers.py) and the numpy backend; the browser test is marked slow."""

import json
import os
import re
import subprocess
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.reports import history

from .helpers import available, make_report, not_installed, record

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHA = "ab" * 32


def kbtool(*args, home=None):
    env = {"PYTHONPATH": ROOT}
    if home is not None:
        env["KBTOOL_HOME"] = str(home)
    result = CliRunner().invoke(main, [str(a) for a in args], env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def release_report(version, created, dot_message="2 of 4 values differ, max 0.5", sum_status="pass", extra=()):
    """A run of tensorflow1[keras=VERSION]: dot's c fails (with `dot_message`), sum's b has `sum_status`."""
    name = f"tensorflow1[keras={version}]"
    results = [
        record("dot", "a", name, "pass"),
        record("dot", "c", name, "fail", message=dot_message),
        record("sum", "a", name, "pass"),
        record("sum", "b", name, sum_status),
        record("mean", "a", name, "pass"),
        *extra,
    ]
    info = dict(available(name), versions={"keras": version, "tensorflow": "1.15.5"})
    report = make_report([info, not_installed("theano")], results)
    report["created"] = created
    report["spec"]["sha256"] = SHA
    return report


def save(tmp_path, name, report):
    path = tmp_path / name
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


# --- lines ---------------------------------------------------------------------------------------------------------


def test_a_report_gives_one_valid_line_per_backend_that_ran():
    report = release_report("2.2.4", "2024-05-01T12:00:00+00:00", sum_status="error")
    lines = history.lines_of(report)
    assert [line["backend"] for line in lines] == ["tensorflow1[keras=2.2.4]"]  # theano: not installed, no line
    line = lines[0]
    assert history.problems(line) == []
    assert line["base"] == "tensorflow1" and line["versions"] == {"keras": "2.2.4", "tensorflow": "1.15.5"}
    assert line["date"] == "2024-05-01T12:00:00+00:00" and line["spec"]["sha256"] == SHA
    assert line["counts"] == {"pass": 3, "fail": 1, "error": 1}
    assert line["pass_as_is"] == {"percent": 60.0, "pass": 3, "ran": 5} and line["conformance"] == 60.0
    columns = line["op_columns"]
    sum_digest = line["ops"]["sum"]
    assert sum_digest[columns.index("pass")] == 1 and sum_digest[columns.index("error")] == 1
    assert re.fullmatch(r"[0-9a-f]{8}", sum_digest[-1])


def test_the_op_digest_sees_a_new_message_but_not_new_numbers():
    base = history.lines_of(release_report("2.2.4", "2024-05-01T12:00:00+00:00"))[0]["ops"]["dot"]
    numbers = history.lines_of(
        release_report("2.2.4", "2024-05-02T12:00:00+00:00", dot_message="2 of 4 values differ, max 0.7")
    )[0]["ops"]["dot"]
    words = history.lines_of(
        release_report("2.2.4", "2024-05-02T12:00:00+00:00", dot_message="ValueError: shapes do not match")
    )[0]["ops"]["dot"]
    assert numbers == base  # fingerprint.py drops the numbers that vary from run to run
    assert words[:-1] == base[:-1] and words[-1] != base[-1]  # same counts, other behaviour


def test_the_schema_refuses_a_broken_line():
    line = history.lines_of(release_report("2.2.4", "2024-05-01T12:00:00+00:00"))[0]
    assert history.problems(dict(line, counts={"pass": -1}))
    assert history.problems(dict(line, ops={"dot": [1, 2, "not-hex!"]}))
    assert history.problems({k: v for k, v in line.items() if k != "spec"})
    short = dict(line, ops={"dot": [1, "0123abcd"]})  # one count for ten columns
    assert any("op_columns" in p for p in history.problems(short))


def test_an_interrupted_report_has_no_line():
    report = release_report("2.2.4", "2024-05-01T12:00:00+00:00")
    report["incomplete"] = {"reason": "interrupted"}
    with pytest.raises(KbtoolError, match="interrupted"):
        history.lines_of(report)


# --- the file ------------------------------------------------------------------------------------------------------


def test_appending_never_rewrites_earlier_lines(tmp_path):
    path = str(tmp_path / "h.jsonl")
    first = history.lines_of(release_report("2.2.4", "2024-05-01T12:00:00+00:00"))
    assert history.append(path, first) == (1, 0)
    before = open(path, "rb").read()
    second = history.lines_of(release_report("2.3.1", "2024-05-02T12:00:00+00:00"))
    assert history.append(path, first + second) == (1, 1)  # the run already there is skipped
    after = open(path, "rb").read()
    assert after.startswith(before) and after.count(b"\n") == 2
    # a line cut short (no newline): the next line starts on a line of its own, the cut bytes stay as they were
    with open(path, "ab") as fh:
        fh.write(b'{"history": 1, "cut')
    cut = open(path, "rb").read()
    third = history.lines_of(release_report("2.2.5", "2024-05-03T12:00:00+00:00"))
    history.append(path, third)
    final = open(path, "rb").read()
    assert final.startswith(cut) and final[len(cut) : len(cut) + 1] == b"\n"
    entries, problems = history.read(path)
    assert [e["backend"] for e, _ in entries] == [
        "tensorflow1[keras=2.2.4]",
        "tensorflow1[keras=2.3.1]",
        "tensorflow1[keras=2.2.5]",
    ]
    assert [n for _, n in entries] == [1, 2, 4] and len(problems) == 1 and ":3: not JSON" in problems[0]


def test_bad_lines_are_named_by_line_number_and_the_rest_is_drawn(tmp_path):
    path = tmp_path / "h.jsonl"
    good = [history.dumps(line) for line in history.lines_of(release_report("2.2.4", "2024-05-01T12:00:00+00:00"))]
    broken = json.loads(good[0])
    broken["counts"] = "many"
    path.write_text("\n".join([good[0], "{oops", json.dumps(broken), "", "\x00"]) + "\n", encoding="utf-8")
    entries, problems = history.read(str(path))
    assert len(entries) == 1
    assert [p.split(": ", 1)[0] for p in problems] == [f"{path}:2", f"{path}:3", f"{path}:5"]
    assert "counts" in problems[1]
    result = kbtool("report", "history", path, "--format", "html")
    assert result.exit_code == 0
    assert f"{path}:2" in result.stderr and f"{path}:3" in result.stderr
    assert f"{path}:3" in result.stdout and "tensorflow1 releases" in result.stdout


def test_a_file_of_many_bad_lines_names_the_first_ones_and_counts_the_rest(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text("x\n" * 120, encoding="utf-8")
    entries, problems = history.read(str(path))
    assert entries == [] and len(problems) == history.MAX_PROBLEMS + 1
    assert problems[0].startswith(f"{path}:1: not JSON") and problems[-1] == f"{path}: and 70 more bad lines"


def test_a_file_that_is_not_a_history_is_never_appended_to(tmp_path):
    report = save(tmp_path, "r.json", release_report("2.2.4", "2024-05-01T12:00:00+00:00"))
    other = tmp_path / "notes.txt"
    other.write_text("my notes\n", encoding="utf-8")
    result = kbtool("report", "history-add", report, "--history", other)
    assert result.exit_code == 2 and "not a kbtool history file" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert other.read_text(encoding="utf-8") == "my notes\n"


# --- the view ------------------------------------------------------------------------------------------------------


def three_releases(tmp_path):
    """2.10.0, 2.9.0, 2.2.4 added in that order: 2.9.0 changes dot's message (same counts) and sum's status; 2.10.0
    changes nothing."""
    reports = [
        release_report("2.10.0", "2024-05-03T12:00:00+00:00", dot_message="ValueError: rank", sum_status="error"),
        release_report("2.9.0", "2024-05-02T12:00:00+00:00", dot_message="ValueError: rank", sum_status="error"),
        release_report("2.2.4", "2024-05-01T12:00:00+00:00"),
    ]
    files = [save(tmp_path, f"r{i}.json", r) for i, r in enumerate(reports)]
    path = tmp_path / "h.jsonl"
    result = kbtool("report", "history-add", *files, "--history", path)
    assert result.exit_code == 0, result.stderr
    assert "appended 3 lines" in result.stderr
    return path


def test_releases_are_in_version_order_and_the_changes_name_the_ops(tmp_path):
    path = three_releases(tmp_path)
    result = kbtool("report", "history", path, "--format", "json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    [base] = data["bases"]
    [series] = base["series"]
    assert base["base"] == "tensorflow1" and series["kind"] == "releases"
    assert [p["label"] for p in series["points"]] == ["keras 2.2.4", "keras 2.9.0", "keras 2.10.0"]
    assert [p["pass_as_is"] for p in series["points"]] == [80.0, 60.0, 60.0]
    first, second = series["changes"]
    assert (first["before"], first["after"]) == ("keras 2.2.4", "keras 2.9.0")
    assert [op["op"] for op in first["ops"]] == ["dot", "sum"]  # mean did not change
    dot, total = first["ops"]
    assert dot["counts_same"] and dot["before"] == dot["after"] == {"pass": 1, "fail": 1}
    assert total["before"] == {"pass": 2} and total["after"] == {"pass": 1, "error": 1}
    assert second["ops"] == []
    assert series["first_changed"] == "keras 2.9.0"
    assert series["first_changed_by_op"] == [
        {"op": "dot", "release": "keras 2.9.0"},
        {"op": "sum", "release": "keras 2.9.0"},
    ]
    text = kbtool("report", "history", path).stdout
    assert text.index("keras 2.2.4") < text.index("keras 2.9.0") < text.index("keras 2.10.0")
    assert "First changed release: keras 2.9.0" in text and "- sum: 2 pass -> 1 pass, 1 error" in text
    assert "mean:" not in text
    markdown = kbtool("report", "history", path, "--format", "markdown").stdout
    assert markdown.startswith("# Parity history") and "`dot`" in markdown


def test_a_release_that_did_not_run_is_a_line_and_a_gap_the_changes_around_it_name(tmp_path):
    # a sweep over keras 2.1.6..2.2.3 where 2.2.0 could not be installed: the change 2.1.6 -> 2.2.3 may be 2.2.0's
    one = release_report("2.1.6", "2024-05-01T12:00:00+00:00")
    two = release_report("2.2.3", "2024-05-01T12:00:00+00:00", sum_status="error")
    gap = not_installed("tensorflow1[keras=2.2.0]")
    gap["reason"] = "could not be installed: `pip install` failed (exit 1): conflicting dependencies: ..."
    report = make_report(
        [one["backends"][0], gap, two["backends"][0], not_installed("theano")], one["results"] + two["results"]
    )
    report["created"], report["spec"]["sha256"] = one["created"], SHA
    lines = history.lines_of(report)
    assert [line["backend"] for line in lines] == [
        "tensorflow1[keras=2.1.6]",
        "tensorflow1[keras=2.2.0]",
        "tensorflow1[keras=2.2.3]",
    ]  # theano, not installed and no release, still has none
    assert all(history.problems(line) == [] for line in lines)
    assert lines[1]["did_not_run"]["reason"].startswith("could not be installed") and lines[1]["ops"] == {}
    path = tmp_path / "h.jsonl"
    assert kbtool("report", "history-add", save(tmp_path, "r.json", report), "--history", path).exit_code == 0
    data = json.loads(kbtool("report", "history", path, "--format", "json").stdout)
    [series] = data["bases"][0]["series"]
    assert [p["label"] for p in series["points"]] == ["keras 2.1.6", "keras 2.2.3"]  # no point drawn for the gap
    assert series["not_run"] == [{"label": "keras 2.2.0", "reason": gap["reason"]}]
    [change] = series["changes"]
    assert [op["op"] for op in change["ops"]] == ["sum"]
    assert change["notes"] == ["did not run between them: keras 2.2.0 (the change may have come with one of them)"]
    text = kbtool("report", "history", path).stdout
    assert "- did not run: keras 2.2.0: could not be installed" in text
    page = kbtool("report", "history", path, "--format", "html").stdout
    assert "Did not run:" in page and "keras 2.2.0: could not be installed" in page


def test_plain_runs_of_a_backend_are_ordered_by_date(tmp_path):
    def run(created, status):
        report = make_report([available("alpha")], [record("dot", "a", "alpha", status)])
        report["created"] = created
        return history.lines_of(report)

    path = str(tmp_path / "h.jsonl")
    history.append(path, run("2024-06-02T00:00:00+00:00", "fail") + run("2024-06-01T00:00:00+00:00", "pass"))
    data = history.view(path, *history.read(path))
    [series] = data["bases"][0]["series"]
    assert series["kind"] == "runs" and [p["date"][:10] for p in series["points"]] == ["2024-06-01", "2024-06-02"]
    assert [op["op"] for op in series["changes"][0]["ops"]] == ["dot"]


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links, self.external, self.tags = set(), [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for key in ("href", "src"):
            value = attrs.get(key) or ""
            if value.startswith("#"):
                self.links.append(value[1:])
            elif value:
                self.external.append(value)


def test_the_html_page_is_offline_and_every_change_links_to_its_counts(tmp_path):
    path = three_releases(tmp_path)
    out = tmp_path / "history.html"
    result = kbtool("report", "history", path, "-o", out)
    assert result.exit_code == 0 and f"wrote {out}" in result.stderr
    page = out.read_text(encoding="utf-8")
    parsed = _Page()
    parsed.feed(page)
    assert parsed.external == [] and "<script" not in page and "http://" not in page.replace("http://www.w3.org", "")
    assert "svg" in parsed.tags and "polyline" in parsed.tags and "table" in parsed.tags
    assert sorted(parsed.links) == sorted(set(parsed.links)) and len(parsed.links) == 2  # dot and sum
    assert set(parsed.links) <= parsed.ids
    assert "First changed release: <strong>keras 2.9.0</strong>" in page
    assert "80.0 % (4/5)" in page  # the table holds the chart's numbers


@pytest.mark.slow
def test_the_html_page_opens_in_a_browser(tmp_path):
    from .test_html_scoreboard import chromium

    path = three_releases(tmp_path)
    out = tmp_path / "history.html"
    assert kbtool("report", "history", path, "-o", out).exit_code == 0
    proc = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            f"file://{out}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = _Page()
    dom.feed(proc.stdout)
    assert "polyline" in dom.tags and "circle" in dom.tags and dom.external == []
    assert "keras 2.10.0" in proc.stdout


# --- the commands --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, said",
    [
        (["report", "history", "{missing}"], "cannot read history"),
        (["report", "history", "{dir}"], "directory"),
        (["report", "history", "{hist}", "-o", "{tmp}/page.pdf"], "cannot tell the format"),
        (["report", "history", "{hist}", "-o", "{tmp}/page.md", "--format", "html"], "does not match"),
        (["report", "history-add", "{missing}", "--history", "{tmp}/new.jsonl"], "cannot read report"),
        (["report", "history-add", "{bad}", "--history", "{tmp}/new.jsonl"], "not JSON"),
        (["report", "history-add", "{report}", "--history", "{dir}"], "directory"),
    ],
)
def test_bad_files_are_one_line_errors(tmp_path, args, said):
    hist = tmp_path / "h.jsonl"
    hist.write_text("", encoding="utf-8")
    (tmp_path / "d").mkdir()
    (tmp_path / "bad.json").write_text("{oops", encoding="utf-8")
    report = save(tmp_path, "r.json", release_report("2.2.4", "2024-05-01T12:00:00+00:00"))
    names = dict(missing=tmp_path / "nope", dir=tmp_path / "d", hist=hist, tmp=tmp_path, bad=tmp_path / "bad.json")
    names["report"] = report
    result = kbtool(*[a.format(**names) for a in args])
    assert result.exit_code == 2, result.output
    assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "new.jsonl").exists()  # nothing written when a report cannot be read


def test_an_empty_history_draws_a_page_that_says_so(tmp_path):
    hist = tmp_path / "h.jsonl"
    hist.write_text("", encoding="utf-8")
    result = kbtool("report", "history", hist)
    assert result.exit_code == 0 and "No runs recorded yet" in result.stdout


def test_check_appends_its_run(tmp_path):
    hist = tmp_path / "h.jsonl"
    args = ["check", "--op", "batch_dot", "--backend", "numpy", "--case", "*", "--mode", "eager", "-q"]
    result = kbtool(*args, "--history", hist, home=tmp_path / "home")
    assert result.exit_code in (0, 1), result.stderr
    entries, problems = history.read(str(hist))
    assert problems == [] and [e["backend"] for e, _ in entries] == ["numpy"]
    assert list(entries[0][0]["ops"]) == ["batch_dot"] and entries[0][0]["spec"]["sha256"]
    refused = kbtool(*args, "--history", tmp_path, home=tmp_path / "home")  # checked before the run
    assert refused.exit_code == 2 and "directory" in refused.stderr
