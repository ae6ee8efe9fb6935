"""The report stage (kbtool/reports): summary and exit code, the JSON Schema, every renderer, and writing files.

Hand-built reports for the tables; a few short runs on the numpy worker (and on custom backend modules) for
the promise that every report kbtool writes validates against its schema.
"""

import copy
import io
import json
import os
import re
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner
from rich.console import Console

from kbtool import plan
from kbtool.check.run import run_check
from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.reports import format_of, html, junit, markdown, matrix, prepare_outputs, progress, render, terminal, write
from kbtool.reports.report import SCHEMA_VERSION, schema, validate
from kbtool.reports.verdict import exit_code
from kbtool.results import BackendStatus, Details, Result, Status
from kbtool.runners import registry
from kbtool.runners.base import Unavailable
from kbtool.specs import loader

from .helpers import PASSES, STALE, available, broken, make_report, not_installed, record, renderer_report

# --- summary and exit code ---


@pytest.mark.parametrize(
    "backends, results, stale, expected",
    [
        # (results, divergences, stale, unavailable_backends, could_not_start, ok)
        ([available("alpha")], [], (), (0, 0, 0, [], [], False)),  # nothing ran: never green
        ([available("alpha")], PASSES, (), (2, 0, 0, [], [], True)),
        ([available("alpha")], PASSES + [record("dot", "x", "alpha", "fail")], (), (3, 1, 0, [], [], False)),
        ([available("alpha")], PASSES + [record("dot", "x", "alpha", "unsupported")], (), (3, 1, 0, [], [], False)),
        (
            [available("alpha")],
            PASSES + [record("dot", "x", "alpha", "fail", known="r"), record("dot", "y", "alpha", "crash", known="r")],
            (),
            (4, 0, 0, [], [], True),
        ),
        ([available("alpha")], PASSES, [STALE], (2, 0, 1, [], [], False)),
        ([available("alpha")], PASSES + [record("dot", "x", "alpha", "could_not_start")], (), (3, 1, 0, [], [], False)),
        ([available("alpha"), broken("my.kb")], PASSES, (), (2, 0, 0, ["my.kb"], ["my.kb"], False)),
        ([available("alpha"), not_installed("cntk")], PASSES, (), (2, 0, 0, ["cntk"], [], True)),
        (
            [not_installed("cntk"), available("alpha"), not_installed("theano")],
            PASSES,
            (),
            (2, 0, 0, ["cntk", "theano"], [], True),
        ),
        ([broken("my.kb")], [], (), (0, 0, 0, ["my.kb"], ["my.kb"], False)),
    ],
)
def test_summary_and_exit_code(backends, results, stale, expected):
    report = make_report(backends, results, stale)
    s = report["summary"]
    assert (
        s["results"],
        s["divergences"],
        s["stale"],
        s["unavailable_backends"],
        s["could_not_start"],
        s["ok"],
    ) == expected
    assert exit_code(report) == (0 if expected[-1] else 1)


def test_per_backend_counts_cover_every_status_and_known():
    results = [record("dot", s, "alpha", s) for s in (st.value for st in Status)]
    results += [
        record("dot", "explained", "alpha", "fail", known="alpha rounds"),
        record("dot", "explained2", "alpha", "timeout", known="alpha hangs"),
        record("dot", "basic", "beta", "pass", seconds=0.125),
        record("dot", "big", "beta", "error", seconds=0.0625),
    ]
    report = make_report([available("alpha"), available("beta"), not_installed("cntk")], results)
    s = report["summary"]
    # `nondeterministic` (only --repeat makes it) is counted where a result has it: last, after `known`
    assert s["per_backend"] == {
        "alpha": {
            "pass": 1,
            "fail": 1,
            "error": 1,
            "not_reached": 1,
            "unsupported": 1,
            "crash": 1,
            "timeout": 1,
            "could_not_start": 1,
            "changed": 1,
            "known": 2,
            "nondeterministic": 1,
        },
        "beta": {
            "pass": 1,
            "fail": 0,
            "error": 1,
            "not_reached": 0,
            "unsupported": 0,
            "crash": 0,
            "timeout": 0,
            "could_not_start": 0,
            "changed": 0,
            "known": 0,
            "nondeterministic": 0,
        },
        "cntk": {
            "pass": 0,
            "fail": 0,
            "error": 0,
            "not_reached": 0,
            "unsupported": 0,
            "crash": 0,
            "timeout": 0,
            "could_not_start": 0,
            "changed": 0,
            "known": 0,
            "nondeterministic": 0,
        },
    }
    assert s["case_seconds"] == {"alpha": 3.0, "beta": 0.19}  # 12 × 0.25; 0.1875 rounded
    assert (s["results"], s["divergences"], s["ok"]) == (14, 10, False)  # every status but pass (and known) diverges
    # pass as is: pass / results that ran (alpha's could_not_start never ran; its known ones ran and did not pass)
    assert s["pass_as_is"] == {
        "percent": 15.3846,  # 2 of 13, rounded down
        "pass": 2,
        "ran": 13,
        "per_backend": {
            # 12 results, one could not start (a not-reached one ran, and did not pass)
            "alpha": {"percent": 9.0909, "pass": 1, "ran": 11},
            "beta": {"percent": 50.0, "pass": 1, "ran": 2},
            "cntk": {"percent": None, "pass": 0, "ran": 0},
        },
    }
    assert validate(report) == []


def test_a_report_without_pass_as_is_loads_and_reads_the_same(tmp_path):
    report = make_report([available("alpha")], PASSES + [record("dot", "x", "alpha", "fail", known="r")])
    old = copy.deepcopy(report)
    del old["summary"]["pass_as_is"]  # a report written before the field
    assert validate(old) == []
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    result = CliRunner().invoke(main, ["report", "render", str(path), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "**Pass as is: 66.6 % (2/3)** of the results that ran" in result.stdout
    assert markdown.render(old) == markdown.render(report) and html.render(old) == html.render(report)


# --- the schema ---


def test_schema_words_are_the_results_words():
    defs = schema()["$defs"]
    assert defs["result"]["properties"]["status"]["enum"] == [s.value for s in Status]
    assert defs["backend"]["properties"]["status"]["enum"] == [s.value for s in BackendStatus]
    assert defs["result"]["properties"]["mode"]["enum"] == list(plan.MODES)
    # `changed` came in schema version 1's life: reports written before it have no such count
    # and `nondeterministic` (--repeat) is counted only in a report that has one
    optional = (Status.NOT_REACHED, Status.CHANGED, Status.NONDETERMINISTIC)
    assert defs["counts"]["required"] == [s.value for s in Status if s not in optional] + ["known"]
    assert sorted(defs["counts"]["properties"]) == sorted(defs["counts"]["required"] + [s.value for s in optional])
    assert sorted(defs["details"]["properties"]) == sorted(Details().__dataclass_fields__)
    assert sorted(defs["result"]["properties"]) == sorted(Result.__dataclass_fields__)
    assert schema()["properties"]["schema_version"] == {"const": SCHEMA_VERSION}


def full_report():
    results = [
        record("dot", "basic", "alpha", "pass"),
        record(
            "dot",
            "basic",
            "alpha",
            "fail",
            mode="symbolic",
            details=Details(
                expected_shape=[2, 3],
                actual_shape=[2, 3],
                expected_dtype="float32",
                actual_dtype="float32",
                max_abs_diff=0.5,
                max_rel_diff=1.0,
                mismatched=6,
                size=6,
                first_index=[0, 0],
                expected_value=-0.5,
                actual_value="nan",
                rtol=1e-5,
                atol=1e-6,
            ).as_dict(),
        ),
        record(
            "dot", "example:doc", "alpha", "pass", doc_check=[{"docs": ["ko-2.2"], "shown": "[[1]]", "matches": True}]
        ),
        record("sum", "basic", "alpha", "unsupported", known="alpha lacks sum", note="from a private module"),
    ]
    known_counts = [
        {
            "entry": 1,
            "op": "sum",
            "backend": ["alpha", "beta"],
            "reason": "alpha lacks sum",
            "targeted": 1,
            "explained": 1,
            "named": 1,
        },
        {
            "entry": "spec alias",
            "op": "lesser",
            "backend": "alpha",
            "reason": "renamed",
            "targeted": 2,
            "explained": 0,
            "named": 0,
        },
    ]
    return make_report([available("alpha"), broken("my.kb"), not_installed("cntk")], results, [STALE], known_counts)


def test_a_well_formed_report_validates():
    assert validate(full_report()) == []


def _drop(key):
    return lambda r: r.pop(key)


@pytest.mark.parametrize(
    "mutate, problems",
    [
        (_drop("schema_version"), ["(top): 'schema_version' is a required property"]),
        (lambda r: r.update(schema_version=2), ["schema_version: 1 was expected"]),
        (
            lambda r: r["results"][1].update(status="flaky"),
            [
                "results/1/status: 'flaky' is not one of ['pass', 'fail', 'error', 'not_reached', 'unsupported', 'crash', "
                "'timeout', "
                "'could_not_start', 'changed', "
                "'nondeterministic']"
            ],
        ),
        (lambda r: r["results"][1].pop("repro"), ["results/1: 'repro' is a required property"]),
        (
            lambda r: r["results"][0].update(repro="kbtool check --op dot"),
            ["results/0: {} should not be valid under {{'required': ['repro']}}"],
        ),
        (lambda r: r.update(extra=1), ["(top): Additional properties are not allowed ('extra' was unexpected)"]),
    ],
)
def test_validate_rejects(mutate, problems):
    report = full_report()
    mutate(report)
    expected = [p.format(report["results"][0]) if "{}" in p else p for p in problems]
    assert validate(report) == expected


# --- every report kbtool writes validates ---


def cli(*args):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout


def test_every_report_kbtool_writes_validates(tmp_path):
    out = {ext: str(tmp_path / ("X." + ext)) for ext in ("json", "md", "html", "xml")}
    code, stdout = cli(
        "check",
        "--op",
        "batch_dot",
        "--op",
        "clip",
        "--op",
        "random_normal",
        "--op",
        "rnn",
        "--backend",
        "numpy",
        "--json",
        *[a for p in out.values() for a in ("-o", p)],
    )
    assert code == 0, stdout
    report = json.loads(stdout)
    assert report["schema_version"] == 1
    assert validate(report) == []
    with open(out["json"], encoding="utf-8") as fh:
        written = json.load(fh)
    assert validate(written) == [] and written["results"] == report["results"]
    assert {r["op"] for r in report["results"]} == {"batch_dot", "clip", "random_normal", "rnn"}
    assert report["summary"]["results"] == len(report["results"]) > 0
    suites = ET.parse(out["xml"]).getroot()
    assert sum(int(s.get("tests")) for s in suites) == len(report["results"])
    assert open(out["md"], encoding="utf-8").read().startswith("# kbtool parity report\n")
    page = open(out["html"], encoding="utf-8").read()
    data = json.loads(re.search(r'<script type="application/json" id="kbtool-data">(.*?)</script>', page).group(1))
    assert {op["op"] for op in data["ops"]} == {"batch_dot", "clip", "random_normal", "rnn"}


CUSTOM = """from kbtool.reference import *
from kbtool.reference import clip as _clip, abs as _abs
import numpy as np

def clip(x, min_value, max_value):  # every value off by 0.5
    return _clip(x, min_value, max_value) + np.float32(0.5)

def transpose(x):  # the shape of its input
    return x

def abs(x):  # right values, wrong dtype
    return _abs(x).astype("float64")
"""


def test_failing_results_carry_details_and_validate(tmp_path, custom_backend):
    module = custom_backend("wrongkb", "kb", CUSTOM)
    target = str(tmp_path / "X.json")
    code, stdout = cli(
        "check",
        "--op",
        "clip",
        "--op",
        "transpose",
        "--op",
        "abs",
        "--backend",
        module,
        "--case",
        "basic",
        "--case",
        "rank3",
        "--mode",
        "eager",
        "--json",
        "-o",
        target,
    )
    assert code == 1, stdout
    report = json.loads(stdout)
    assert validate(report) == []
    with open(target, encoding="utf-8") as fh:
        assert validate(json.load(fh)) == []
    by_op = {r["op"]: r for r in report["results"]}
    assert sorted(by_op) == ["abs", "clip", "transpose"] and len(report["results"]) == 3
    assert {r["status"] for r in report["results"]} == {"fail"}
    assert all(
        r["repro"]
        == "kbtool check --op {} --case {} --backend {} --mode eager --seed 0".format(r["op"], r["case"], module)
        for r in report["results"]
    )
    clip = by_op["clip"]["details"]
    assert (clip["expected_shape"], clip["actual_shape"], clip["expected_dtype"], clip["actual_dtype"]) == (
        [3, 4],
        [3, 4],
        "float32",
        "float32",
    )
    assert clip["max_abs_diff"] == pytest.approx(0.5, abs=1e-6)
    assert (clip["mismatched"], clip["size"], clip["first_index"], clip["rtol"], clip["atol"]) == (
        12,
        12,
        [0, 0],
        1e-05,
        1e-06,
    )
    assert clip["actual_value"] - clip["expected_value"] == pytest.approx(0.5, abs=1e-6)
    transpose = by_op["transpose"]["details"]
    assert transpose["actual_shape"] == transpose["expected_shape"][::-1] and len(transpose["actual_shape"]) == 3
    abs_details = by_op["abs"]["details"]
    assert (abs_details["expected_dtype"], abs_details["actual_dtype"], abs_details["values"]) == (
        "float32",
        "float64",
        "agree",
    )
    assert report["summary"]["per_backend"][module]["fail"] == 3 and report["summary"]["divergences"] == 3


def test_reports_with_unavailable_and_broken_backends_validate(custom_backend):
    # one run: numpy works, tensorflow is not installed, a custom backend fails to import
    module = custom_backend("brokenkb", "kb", "raise ImportError('no engine here')\n")

    def launcher(name):
        if name == "tensorflow":
            raise Unavailable("not installed: run `kbtool env install tensorflow`")
        return registry.launch_for(name)

    spec = loader.load()
    the_plan = plan.make_plan(
        spec,
        plan.Selection(ops=["clip"], case_patterns=["basic"]),
        sources=plan.Sources(launcher=launcher, builtin=["numpy", "tensorflow", module]),
    )
    report = run_check(the_plan, known_entries=[])
    assert validate(report) == []
    assert [(b["name"], b["status"]) for b in report["backends"]] == [
        ("numpy", "available"),
        ("tensorflow", "not installed"),
        (module, "broken"),
    ]
    assert "ImportError: no engine here" in report["backends"][2]["reason"]
    assert [(r["backend"], r["status"]) for r in report["results"]] == [("numpy", "pass"), ("numpy", "pass")]
    s = report["summary"]
    assert (s["unavailable_backends"], s["could_not_start"], s["ok"]) == (["tensorflow", module], [module], False)
    assert report["filters"] == ["--case basic"] and report["spec"]["cases"] == 1
    # JUnit: the backend that could not start is an erroring suite, never absent (a dashboard would show green)
    suites = {s.get("name"): s for s in ET.fromstring(render(report, "junit"))}
    broken = suites["kbtool." + module]
    assert (broken.get("tests"), broken.get("errors")) == ("1", "1")
    assert "no engine here" in broken.find("testcase/error").get("message")
    # not installed: a skipped testcase, so a dashboard shows it was not run (and still not red)
    skipped = suites["kbtool.tensorflow"]
    assert (skipped.get("tests"), skipped.get("skipped"), skipped.get("errors")) == ("1", "1", "0")
    assert "kbtool env install tensorflow" in skipped.find("testcase/skipped").get("message")


# --- renderers ---


def test_markdown_matrix_and_divergences():
    text = markdown.render(renderer_report())
    lines = text.splitlines()
    assert "| op | alpha | beta |" in lines
    assert "| dot | ✗ 2/3 | – 0/3 |" in lines
    assert "| sum | ≈ 1/2 | ☠ 0/2 |" in lines
    # the headline is pass as is (of the 10 results, 3 pass as is), then the gate's verdict
    assert text.startswith(
        "# kbtool parity report\n\n**Pass as is: 30.0 % (3/10)** of the results that ran · conformance 40.0 % · "
        "6 unexplained\n\n**Not OK: 6 divergences**"
    )
    backends = text.split("## Backends\n", 1)[1].split("\n## ", 1)[0]
    assert "| backend | version | pass as is | results |" in backends
    assert (
        "| alpha | 1.0 | **60.0 %** (3/5) | 5 | 3 | 1 |" in backends and "| beta | 1.0 | **0.0 %** (0/5) |" in backends
    )
    section = text.split("## Unexplained failures\n", 1)[1].split("\n## ", 1)[0].strip().split("\n\n")[1]
    rows = section.splitlines()
    assert rows[0] == "| op | case | backend | mode | status | message | numbers | call | repro |"
    assert len(rows[2:]) == 6  # every unexplained result, each with the command that runs it again
    assert (
        "| dot | c | alpha | eager | ✗ fail | values differ \\| by 0.5 |  |  | "
        "`kbtool check --op dot --case c --backend alpha --mode eager --seed 0` |"
    ) in rows
    assert not any("| sum | b | alpha |" in row for row in rows)  # the known one is not a failure ...
    known = text.split("## Known differences\n", 1)[1]
    assert "| 1 | alpha | sum | alpha raises here |" in known  # ... it is counted under its reason


def test_junit_counts_per_suite():
    root = ET.fromstring(junit.render(renderer_report()))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert {
        name: (s.get("tests"), s.get("failures"), s.get("errors"), s.get("skipped")) for name, s in suites.items()
    } == {
        "kbtool.alpha": ("5", "1", "0", "1"),
        # unexplained unsupported is a divergence, as the CLI counts it
        "kbtool.beta": ("5", "3", "2", "0"),
    }
    for suite in suites.values():
        cases = suite.findall("testcase")
        assert len(cases) == int(suite.get("tests"))
        for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
            assert sum(1 for c in cases if c.find(tag) is not None) == int(suite.get(attr))
    crash = [c for c in suites["kbtool.beta"] if c.get("name") == "b[symbolic]"][0].find("error")
    assert crash.get("message") == "crash: crash here"
    assert crash.text == "kbtool check --op sum --case b --backend beta --mode symbolic --seed 0"


def test_junit_is_well_formed_with_control_characters_in_a_message():
    report = make_report(
        [available("alpha")],
        [record("dot", "a", "alpha", "error", message="ValueError: bad \x1b[31mred\x1b[0m \x07 bell")],
    )
    root = ET.fromstring(junit.render(report))
    (case,) = root.iter("testcase")
    assert "bad" in case.find("error").get("message")


def test_html_rows_and_cells():
    page = html.render(renderer_report())
    # the unexplained divergences as HTML (the known one is not among them), by op, the worst first
    assert re.findall(r'<tr class="(\w+)"><td class="op">', page) == [
        "fail",
        "unsupported",
        "unsupported",
        "unsupported",
        "crash",
        "error",
    ]
    # the matrix's cells, embedded for the page's script (tests/test_html_scoreboard.py draws them in a browser)
    data = json.loads(re.search(r'<script type="application/json" id="kbtool-data">(.*?)</script>', page).group(1))
    cells = [
        (c["s"], "{} {}/{}".format(data["symbols"][c["s"]], c["p"], c["t"])) for op in data["ops"] for c in op["cells"]
    ]
    assert cells == [("fail", "✗ 2/3"), ("unsupported", "– 0/3"), ("known", "≈ 1/2"), ("crash", "☠ 0/2")]


def test_html_escapes_messages():
    report = make_report([available("alpha")], [record("dot", "a", "alpha", "fail", message="<script>x</script>")])
    page = html.render(report)
    assert "<script>x" not in page and "&lt;script&gt;x&lt;/script&gt;" in page


def test_terminal_names_the_divergences():
    console = Console(file=io.StringIO(), width=200)
    assert terminal.render(renderer_report(), console) == ""
    out = console.file.getvalue()
    assert "✗ 2/3" in out and "– 0/3" in out and "≈ 1/2" in out and "☠ 0/2" in out  # two ops: the matrix shows
    assert "Unexplained failures (6 results in 4 groups):" in out  # beta's 3 unsupported dot results are one
    assert "Known differences (1 result, 1 reason; re-checked this run):" in out
    assert "  ≈ 1  alpha  sum  alpha raises here" in out
    assert out.count("      kbtool check --op") == 4  # a repro per group
    assert out.rstrip().splitlines()[-1] == "10 results in 1.0 s, pass as is 30.0 % (3/10): 6 divergences"
    console = Console(file=io.StringIO(), width=200)
    terminal.render(renderer_report(), console, verbosity=2)
    assert console.file.getvalue().count("reproduce: kbtool check") == 6  # -v: every result


def test_terminal_all_pass_and_unavailable_backend():
    console = Console(file=io.StringIO(), width=200)
    terminal.render(make_report([available("alpha"), not_installed("cntk")], PASSES), console)
    out = console.file.getvalue()
    assert "cntk: not installed: run `kbtool env install cntk`" in out
    assert "Divergences" not in out
    assert out.rstrip().splitlines()[-1] == "2 results in 1.0 s, pass as is 100.0 % (2/2): all pass"


def test_terminal_verdict_says_why_a_check_with_a_broken_backend_failed():
    console = Console(file=io.StringIO(), width=200)
    report = make_report([available("alpha"), broken("my.kb")], PASSES)
    assert exit_code(report) == 1
    terminal.render(report, console)
    verdict = console.file.getvalue().rstrip().splitlines()[-1]
    assert "my.kb" in verdict or "could not start" in verdict


@pytest.mark.parametrize(
    "statuses, worst",
    [
        (["pass", "pass"], "pass"),
        (["pass", "known"], "known"),
        (["known", "unsupported"], "unsupported"),
        (["unsupported", "fail"], "fail"),
        (["fail", "error"], "error"),
        (["error", "timeout"], "timeout"),
        (["timeout", "crash"], "crash"),
        (["crash", "could_not_start"], "could_not_start"),
        (["could_not_start", "pass"], "could_not_start"),
        (["fail", "pass", "unsupported"], "fail"),
        (["pass"], "pass"),
        ([], None),
    ],
)
def test_cell_status_picks_the_worst(statuses, worst):
    records = [{"status": "error", "known": "why"} if s == "known" else {"status": s} for s in statuses]
    assert matrix.cell_status(records) == worst
    assert matrix.cell_status(list(reversed(records))) == worst


def test_cell_status_known_hides_the_status_it_explains():
    assert matrix.cell_status([{"status": "crash", "known": "r"}, {"status": "pass"}]) == "known"


def test_render_json_and_unknown_format():
    report = renderer_report()
    assert json.loads(render(report, "json")) == report
    with pytest.raises(ValueError):
        render(report, "pdf")


# --- files ---


@pytest.mark.parametrize(
    "path, fmt",
    [
        ("r.json", "json"),
        ("out/r.md", "markdown"),
        ("/tmp/a.b/r.html", "html"),
        ("junit.xml", "junit"),
    ],
)
def test_format_of(path, fmt):
    assert format_of(path) == fmt


@pytest.mark.parametrize("path", ["r.pdf", "report", "r.htm", "r.json.txt"])
def test_format_of_unknown(path):
    with pytest.raises(KbtoolError) as info:
        format_of(path)
    assert str(info.value) == f"cannot tell the format of {path!r}: use one of .json, .md, .html, .xml"


def test_prepare_outputs_refuses_missing_folders_directories_and_uncreatable_folders(tmp_path):
    missing = tmp_path / "new" / "deeper" / "r.md"  # issue #33: a folder is never made for -o
    with pytest.raises(KbtoolError, match="no folder"):
        prepare_outputs([str(missing)])
    assert not (tmp_path / "new").exists()
    made = tmp_path / "r.md"
    prepare_outputs([str(made)])
    assert not made.exists()
    folder = tmp_path / "r.json"
    folder.mkdir()
    with pytest.raises(KbtoolError) as info:
        prepare_outputs([str(made), str(folder)])
    assert str(info.value) == f"{folder} is a directory"
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    target = blocker / "sub" / "r.md"
    with pytest.raises(KbtoolError) as info:
        prepare_outputs([str(target)])
    assert str(info.value) == f"-o {target}: {blocker} is a file, not a folder"
    assert blocker.read_text() == "not a folder"
    with pytest.raises(KbtoolError, match="cannot tell the format"):
        prepare_outputs([str(tmp_path / "ok.md"), str(tmp_path / "bad.pdf")])


def test_prepare_outputs_refuses_an_unwritable_folder(tmp_path, monkeypatch):
    # root may write anywhere, so the folder's permission is what os.access answers for it
    folder = tmp_path / "ro"
    folder.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: False if str(path) == str(folder) else real_access(path, mode))
    with pytest.raises(KbtoolError) as info:
        prepare_outputs([str(folder / "r.md")])
    assert str(info.value) == "cannot write {}: {} is not writable".format(folder / "r.md", folder)


def test_write_is_atomic_and_never_follows_a_planted_tmp_symlink(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    target = folder / "report.json"
    target.write_text("old")
    os.symlink(str(victim), str(folder / "report.json.tmp"))
    report = renderer_report()
    write(report, str(target))
    assert json.loads(target.read_text()) == report
    assert victim.read_text() == "precious"
    assert sorted(os.listdir(str(folder))) == ["report.json", "report.json.tmp"]
    assert os.path.islink(str(folder / "report.json.tmp"))
    write(report, str(folder / "report.md"))
    assert (folder / "report.md").read_text() == markdown.render(report)
    assert sorted(os.listdir(str(folder))) == ["report.json", "report.json.tmp", "report.md"]


def test_write_failure_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "report.md"
    target.write_text("old")

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(KbtoolError) as info:
        write(renderer_report(), str(target))
    assert str(info.value) == f"cannot write {target}: Permission denied"
    assert target.read_text() == "old" and os.listdir(str(tmp_path)) == ["report.md"]


def test_progress_in_a_log_is_a_few_lines_never_one_per_result():
    out = io.StringIO()
    with progress.CheckProgress({"numpy": 3}, stream=out, live=False, clock=lambda: 0.0) as show:
        for status in ("pass", "fail", "pass"):
            show("numpy", Result(op="clip", case=status, backend="numpy", mode="eager", status=Status(status)))
    assert out.getvalue().splitlines() == [
        f"  ({progress.LEGEND})",
        "  numpy        done: 3 results in 0:00 · 2 pass, 1 not pass",
        "  total        3 results in 0:00",
    ]


def test_reports_are_pure_functions_of_the_report():
    report = renderer_report()
    before = copy.deepcopy(report)
    for fmt in ("json", "markdown", "html", "junit"):
        render(report, fmt)
    terminal.render(report, Console(file=io.StringIO()))
    assert report == before


def test_write_keeps_the_mode_of_an_existing_file_and_gives_a_new_one_the_umask_default(tmp_path):
    from kbtool import files

    old = tmp_path / "old.txt"
    old.write_text("x")
    old.chmod(0o640)
    files.write_atomic(str(old), "y")
    assert (old.read_text(), old.stat().st_mode & 0o777) == ("y", 0o640)
    umask = os.umask(0o022)
    try:
        files.write_atomic(str(tmp_path / "new.txt"), "z")
    finally:
        os.umask(umask)
    assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o644


def test_write_through_a_symlink_updates_its_target_and_keeps_the_link(tmp_path):
    from kbtool import files

    target = tmp_path / "real.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    files.write_atomic(str(link), "[1]")
    assert link.is_symlink() and target.read_text() == "[1]"


def test_the_verdict_is_computed_by_its_own_module_below_the_format_and_the_views():
    """verdict.py computes the summary the format writes and the reasons every view says (one home: assemble no longer
    holds them)."""
    from kbtool.reports import assemble as assemble_mod
    from kbtool.reports import verdict
    from kbtool.reports.report import Report

    report = make_report([available("numpy")], [record("abs", "basic", "numpy", "fail", message="off by one")])
    assert report["summary"] == verdict.summarize(report)
    assert Report.from_dict(json.loads(json.dumps(report))).to_dict()["summary"] == report["summary"]
    assert verdict.verdict_reasons(report) == ["1 divergence"] and verdict.exit_code(report) == 1
    for name in ("summarize", "verdict_reasons", "strict_reasons", "strict_failures", "exit_code"):
        assert callable(getattr(verdict, name)) and not hasattr(assemble_mod, name)
