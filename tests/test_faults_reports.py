"""Hostile reports: each attack gives one line and the right exit code, or a correct view; never a traceback or a
hang, never a lost file. Reports are made as `kbtool check` assembles them (tests/test_report_commands.synthetic)."""

import copy
import hashlib
import json
import time

import pytest

from kbtool import schemas
from kbtool.reports import report as report_mod

from .test_report_commands import ROWS, kbtool, synthetic, write

FAILING = [("abs", f"c{i}", "numpy", "eager", "fail", 0.1, "values differ") for i in range(11)]
ENTRY = {"op": ["abs"], "backend": "numpy", "case": "b", "status": "unsupported", "reason": "no autodiff", "count": 1}


def part(shard, extra=None):
    rows = [r for i, r in enumerate(ROWS + FAILING) if i % 2 == shard - 1]
    entries = [ENTRY] + ([extra] if extra else [])
    return synthetic(rows, entries=[ENTRY], shard=(shard, 2)) | {"known_entries": entries}


def edited(report, **changes):
    out = copy.deepcopy(report)
    out.update(changes)
    return out


MERGE = [  # (name, extra embedded entry, the line's words)
    ("400 KB glob", dict(ENTRY, case="*a" * 200000), "case has a glob longer than 1000 characters"),
    ("op: 5", dict(ENTRY, op=5), "op must be a glob or a list of globs"),
    ("regex ((((", dict(ENTRY, match="(((("), "match is not a valid regex"),
    ("status null", dict(ENTRY, status=["fail", None]), "status must be a glob or a list of globs"),
    ("unknown key", dict(ENTRY, evil=1), "unknown key evil"),
    ("forged spec alias", {"op": "abs", "backend": "*", "status": "*", "reason": "x", "source": "spec"}, "spec alias"),
]


@pytest.mark.parametrize("name, extra, words", MERGE, ids=[m[0] for m in MERGE])
def test_merge_holds_embedded_entries_to_the_known_file_rules(tmp_path, name, extra, words):
    a, b = write(tmp_path, "a.json", part(1, extra)), write(tmp_path, "b.json", part(2, extra))
    start = time.monotonic()
    ran = kbtool("report", "merge", a, b, "-o", tmp_path / "out.json", home=tmp_path)
    assert time.monotonic() - start < 10
    assert ran.code == 2 and words in ran.stderr and len(ran.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out.json").exists()


def test_merge_refuses_entries_that_differ_from_the_known_file_it_names(tmp_path):
    known_file = tmp_path / "known.yaml"
    known_file.write_text(
        "- op: [abs]\n  backend: numpy\n  case: b\n  status: unsupported\n  reason: no autodiff\n  count: 1\n"
    )

    recorded = {"path": str(known_file), "sha256": hashlib.sha256(known_file.read_bytes()).hexdigest()}
    forged = {"op": ["abs"], "backend": "*", "match": ".", "reason": "forged", "count": 0}  # a valid entry
    parts = [edited(part(k, forged), known_file=recorded) for k in (1, 2)]
    paths = [write(tmp_path, f"p{k}.json", p) for k, p in enumerate(parts)]
    ran = kbtool("report", "merge", *paths, home=tmp_path)
    assert ran.code == 2 and "not those of the known file it names" in ran.stderr
    honest = [edited(part(k), known_file=recorded) for k in (1, 2)]
    paths = [write(tmp_path, f"h{k}.json", p) for k, p in enumerate(honest)]
    assert kbtool("report", "merge", *paths, home=tmp_path).code == 1  # 11 failures, not explained


def test_render_recomputes_the_verdict(tmp_path):
    report = synthetic(ROWS + FAILING, entries=[ENTRY])
    report["summary"].update(ok=True, divergences=0)
    path = write(tmp_path, "r.json", report)
    ran = kbtool("report", "render", path, home=tmp_path)
    assert ran.code == 0 and "all pass" not in ran.stdout and "11 divergence" in ran.stdout
    md = kbtool("report", "render", path, "--format", "markdown", home=tmp_path).stdout
    assert "Not OK: 11 divergence" in md


def nan_report():
    report = synthetic(ROWS + FAILING[:1], entries=[ENTRY])
    failing = next(r for r in report["results"] if r["status"] == "fail")
    failing["details"] = {"max_abs_diff": float("nan"), "expected_value": [float("inf"), float("-inf")]}
    return report


@pytest.mark.parametrize("ext", ["json", "md", "html", "xml"])
def test_every_format_renders_from_a_report_read_back(tmp_path, ext):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(nan_report()))  # Python's NaN / Infinity literals, as older kbtools wrote them
    assert kbtool("report", "render", path, "-o", tmp_path / "back.json", home=tmp_path).code == 0
    text = (tmp_path / "back.json").read_text()
    json.loads(text, parse_constant=lambda name: pytest.fail(f"non-standard JSON: {name}"))
    assert '"max_abs_diff": "NaN"' in text and '"-Infinity"' in text
    ran = kbtool("report", "render", tmp_path / "back.json", "-o", tmp_path / f"again.{ext}", home=tmp_path)
    assert ran.code == 0, ran.stderr
    again = (tmp_path / f"again.{ext}").read_text()
    assert "values differ" in again
    if ext == "json":
        assert again.replace(json.loads(again)["created"], "") == text.replace(json.loads(text)["created"], "")


def deep_report():
    report = synthetic(ROWS + FAILING[:1], entries=[ENTRY])
    value = "leaf"
    for _ in range(500):
        value = [value]
    next(r for r in report["results"] if r["status"] == "fail")["details"] = {"expected_value": value}
    return report


BAD_FILES = [  # (name, bytes or a report to edit, the line's words)
    ("400-digit seed", lambda r: json.dumps(r).replace('"seed": 0', '"seed": ' + "9" * 400), "a 400-digit number"),
    ("400-digit seconds", lambda r: json.dumps(r).replace('"seconds": 0.1', '"seconds": ' + "9" * 400, 1), "400-digit"),
    ("1e400", lambda r: json.dumps(r).replace('"seconds": 0.1', '"seconds": 1e400', 1), "out of range (1e400)"),
    ("NaN wall_seconds", lambda r: json.dumps(edited(r, wall_seconds=float("nan"))), "wall_seconds: 'NaN'"),
    ("empty", lambda r: "", "empty (not a kbtool report)"),
    ("latin-1", lambda r: b'{"a": "\xff"}', "not UTF-8 text"),
]


@pytest.mark.parametrize("name, make, words", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_bad_report_files_give_one_line(tmp_path, name, make, words):
    data = make(synthetic(ROWS, entries=[ENTRY]))
    path = tmp_path / "bad.json"
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    ran = kbtool("report", "render", path, home=tmp_path)
    assert ran.code == 2 and words in ran.stderr and "YAML" not in ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1


def test_dev_null_is_not_a_report(tmp_path):
    ran = kbtool("report", "render", "/dev/null", home=tmp_path)
    assert ran.code == 2 and "not a regular file" in ran.stderr and "No such file" not in ran.stderr


def test_a_report_past_the_size_limit_is_refused_at_once(tmp_path):
    path = tmp_path / "big.json"
    with open(path, "wb") as fh:
        fh.truncate(report_mod.MAX_REPORT_BYTES + 1)  # sparse: no disk used
    start = time.monotonic()
    ran = kbtool("report", "render", path, home=tmp_path)
    assert ran.code == 2 and "larger than the 256 MB" in ran.stderr and time.monotonic() - start < 10


def test_html_bounds_depth_and_every_other_view_is_written(tmp_path):
    path = write(tmp_path, "deep.json", deep_report())
    outs = [tmp_path / f"deep-out.{ext}" for ext in ("html", "md", "xml", "json")]  # not over deep.json: an input
    ran = kbtool("report", "render", path, *sum([["-o", o] for o in outs], []), home=tmp_path)
    assert ran.code == 0, ran.stderr
    assert all(o.exists() for o in outs)
    assert "nested deeper than 20 levels" in outs[0].read_text()


def test_markdown_escapes_links_and_the_terminal_strips_control_characters(tmp_path):
    report = synthetic(
        ROWS
        + [
            (
                "abs",
                "c\x1b[31mRED\nline",
                "numpy",
                "eager",
                "fail",
                0.1,
                "[x](http://e.example) ![i](http://e.example/p.png)",
            )
        ],
        entries=[ENTRY],
    )
    path = write(tmp_path, "r.json", report)
    md = kbtool("report", "render", path, "--format", "markdown", home=tmp_path).stdout
    assert "[x](http" not in md and "![i](" not in md and "[x\\](http" in md and "!\\[i\\](http" in md
    term = kbtool("report", "render", path, "-v", home=tmp_path).stdout
    assert "\x1b[31m" not in term and "RED\nline" not in term and "cRED ⏎ line" in term


def test_the_page_allows_its_own_script_by_hash_only(tmp_path):
    from kbtool.reports import html

    page = html.render(synthetic(ROWS, entries=[ENTRY]))
    assert "'unsafe-inline'; img-src" not in page and "script-src 'unsafe-inline'" not in page
    script = page.split("<script>", 1)[1].split("</script>", 1)[0]
    assert html.script_hash(script) in page.split("</head>")[0]


# ---- the quick check of each result agrees with the schema -------------------------------------------------------

GOOD = {"op": "abs", "case": "a", "backend": "numpy", "mode": "eager", "status": "pass", "message": "", "seconds": 0.1}
FAILED = dict(GOOD, status="fail", message="m", repro="kbtool check", details={"max_abs_diff": 1.0})
RECORDS = [
    GOOD,
    FAILED,
    dict(GOOD, status="flaky"),
    dict(GOOD, mode=["eager"]),
    dict(GOOD, seconds=-1),
    dict(GOOD, seconds=True),
    dict(GOOD, seconds="NaN"),
    dict(GOOD, op=5),
    dict(GOOD, repro="x"),
    {k: v for k, v in FAILED.items() if k != "repro"},
    dict(GOOD, extra=1),
    {k: v for k, v in GOOD.items() if k != "message"},
    dict(FAILED, details={"max_abs_diff": "NaN", "expected_value": [1, None]}),
    dict(FAILED, details={"max_abs_diff": "nan"}),
    dict(FAILED, details={"first_index": [1, True]}),
    dict(FAILED, details={"size": -1}),
    dict(FAILED, details={"max_abs_diff": -1.0}),  # valid for the schema: the quick check defers to it
    dict(GOOD, keras_config={"floatx": "float32", "epsilon": 1e-7}),
    dict(GOOD, keras_config={"floatx": "float8"}),
    dict(GOOD, captured={"backend": "x"}),
    dict(GOOD, captured={"backend": 1}),
    dict(GOOD, doc_check=[{"docs": ["ja-1"], "shown": "1", "matches": None}]),
    dict(GOOD, doc_check=[{"docs": ["ja-1"], "matches": 1}]),
    dict(GOOD, note=None),
    "not a record",
]


@pytest.mark.parametrize("record", RECORDS, ids=range(len(RECORDS)))
def test_the_quick_check_passes_only_what_the_schema_passes(record):
    schema_problems = schemas.problems(report_mod.SCHEMA_FILE, record, "result", ["results", len(ROWS)])
    if report_mod._plain_result(record):
        assert schema_problems == []
    report = synthetic(ROWS, entries=[ENTRY])
    report["results"].append(record)
    assert report_mod.validate(report) == schema_problems  # the schema's own words, or nothing


def test_loading_is_fast_and_load_data_is_load_to_dict():
    path = report_mod.os.path.join(report_mod.os.path.dirname(__file__), "..", "reports", "parity.json")
    start = time.monotonic()
    data = report_mod.Report.load_data(path)  # 10 MB, 19,857 results: ~0.3 s (the schema alone took 5-6 s)
    assert time.monotonic() - start < 5
    assert data == report_mod.Report.load(path).to_dict()


def test_hostile_regexes_share_one_time_budget(tmp_path, monkeypatch):
    """30 entries whose regex backtracks for ever on every message: without a budget for the whole run each spends
    REGEX_TIMEOUT (30 s at 1 s); with it the merge answers in about REGEX_BUDGET (then REGEX_LATE_TIMEOUT a search),
    saying so in the notes."""
    from kbtool import known

    monkeypatch.setattr(known.regexes, "REGEX_TIMEOUT", 0.2)
    monkeypatch.setattr(known.regexes, "REGEX_BUDGET", 0.5)
    evil = [
        {"op": ["abs"], "backend": "numpy", "match": "(a|aa)+$" + "x" * i, "reason": f"r{i}", "count": 0}
        for i in range(30)
    ]
    parts = []
    for k in (1, 2):
        report = part(k)
        for record in report["results"]:
            if record["status"] == "fail":
                record["message"] = "a" * 5000
        report["known_entries"] = report["known_entries"] + evil
        parts.append(write(tmp_path, f"p{k}.json", report))
    start = time.monotonic()
    ran = kbtool("report", "merge", *parts, "-o", tmp_path / "out.json", home=tmp_path)
    assert time.monotonic() - start < 3  # 30 × 0.2 s = 6 s without the budget
    assert ran.code == 1
    notes = [r.get("note", "") for r in json.loads((tmp_path / "out.json").read_text())["results"]]
    assert any("when timed-out searches had already cost the run" in n for n in notes)


def test_a_result_explained_by_no_entry_of_the_report_is_refused(tmp_path):
    report = synthetic(ROWS + FAILING, entries=[ENTRY])
    for record in report["results"]:
        if record["status"] == "fail":
            record["known"] = "forged: all fine"
    ran = kbtool("report", "render", write(tmp_path, "r.json", report), home=tmp_path)
    assert ran.code == 2 and "the reason of no known entry the report applied" in ran.stderr
    assert "all pass" not in ran.stdout and "no unexplained divergence" not in ran.stdout


@pytest.mark.slow
def test_in_chromium_the_page_script_runs_and_no_other_inline_script_does(tmp_path):
    """The CSP allows the page's own script by its hash: it still draws the page, and a script smuggled in (here
    added to the page by hand, as a renderer bug would) does not run."""
    from kbtool.reports import html

    from .test_html_scoreboard import open_views

    page = html.render(synthetic(ROWS + FAILING, entries=[ENTRY]))
    smuggled = '<script>document.body.appendChild(document.createElement("img"))</script>'
    path = tmp_path / "page.html"
    path.write_text(page.replace("</main>", smuggled + "</main>", 1), encoding="utf-8")
    dom = open_views(path, [""], tmp_path)[""]
    assert dom.ready is not None and dom.rows  # the page's own script drew the matrix
    assert dom.images == 0  # the smuggled one did not run


def test_report_save_and_load_round_trip(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(nan_report()))
    first = report_mod.Report.load(str(path))
    assert [r.details for r in first.results if r.details] == [
        {"max_abs_diff": "NaN", "expected_value": ["Infinity", "-Infinity"]}
    ]
    first.save(str(tmp_path / "saved.json"))
    again = report_mod.Report.load(str(tmp_path / "saved.json"))
    assert again == first and again.to_dict() == first.to_dict()
    assert again.to_dict()["summary"]["divergences"] == 1
