"""Fault audit of issue #33, second pass: a file of the wrong kind is named as such, in one line, exit 2.

- `report history` of a file with no history line at all (a check report, a gzipped bench report, any JSON) drew an
  empty page ("No runs recorded yet"), printed up to 51 "bad history line" warnings and exited 0; an empty file is
  still an empty history (exit 0), and a history with some bad lines is still drawn.
- A bench report given where a check report is expected (`report diff`, `render`, `judge`, `devices`) said "(top):
  'seed' is a required property (and 87 more problems)"; now it says it is a bench report and what reads it.
Fast: no backend runs."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.paths import CHECKOUT_ROOT

BENCH = str(Path(CHECKOUT_ROOT) / "tests" / "fixtures" / "bench-h100-gpu.json.gz")
HISTORY = Path(CHECKOUT_ROOT) / "reports" / "history.jsonl"
CPU = str(Path(CHECKOUT_ROOT) / "tests" / "fixtures" / "gpu_h100" / "cpu.json.gz")


def invoke(*args):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()  # click >= 8.2 keeps stderr apart
    return runner.invoke(main, [str(a) for a in args])


@pytest.fixture
def check_report(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"schema_version": 1, "results": []}, indent=1))
    return path


@pytest.mark.parametrize("kind", ["check report", "bench report", "other JSON"])
def test_history_of_a_file_with_no_history_line_is_refused(kind, tmp_path, check_report):
    path = {"check report": check_report, "bench report": BENCH, "other JSON": tmp_path / "x.json"}[kind]
    if kind == "other JSON":
        path.write_text('{"a": 1}\n')
    result = invoke("report", "history", path, "-o", tmp_path / "h.md")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kbtool: error: {path}: not a parity history (no line of it is")
    assert "line 1: " in lines[0] and lines[0].endswith("`kbtool report history-add REPORT.json --history FILE`")
    assert result.stdout == "" and not (tmp_path / "h.md").exists()


def test_an_empty_history_and_a_history_with_a_bad_line_are_still_drawn(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert invoke("report", "history", empty).exit_code == 0
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("{oops\n" + HISTORY.read_text().splitlines()[0] + "\n")  # a line kbtool wrote
    result = invoke("report", "history", mixed)
    assert result.exit_code == 0, result.stderr
    assert f"{mixed}:1: not JSON" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["report", "diff", CPU, BENCH],
        ["report", "diff", BENCH, CPU],
        ["report", "render", BENCH],
        ["report", "judge", BENCH],
        ["report", "devices", CPU, BENCH],
    ],
    ids=["diff run", "diff baseline", "render", "judge", "devices"],
)
def test_a_bench_report_where_a_check_report_goes_says_so(args):
    result = invoke(*args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.strip().splitlines() == [
        f"kbtool: error: {BENCH}: a bench report, not a check report (`kbtool bench --from {BENCH}` reads it)"
    ]
