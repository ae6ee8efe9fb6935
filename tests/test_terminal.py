"""The terminal view (kbtool/reports/terminal.py) fits a screen whatever the results; -q is the verdict line alone and
-v lists everything; and the check's progress (kbtool/reports/progress.py) is bars on a terminal and a few plain
lines in a log, never a line per result.

Hand-built reports and the published full run (reports/parity.json, 19857 results on 8 backends), also with every
known difference taken off (4269 unexplained failures) and with many long failures made up: the worst cases.
"""

import copy
import io
import json
import math
import os
import threading

import pytest
from click.testing import CliRunner
from rich.cells import cell_len
from rich.console import Console

from kbtool.cli import main
from kbtool.reports import console, matrix, progress, render, summary, terminal
from kbtool.reports.verdict import summarize
from kbtool.results import Result, Status

from .helpers import PASSES, STALE, available, broken, make_report, not_installed, record

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARITY = os.path.join(ROOT, "reports", "parity.json")
SCREEN = 60  # rows a default summary may take


def printed(report, verbosity=1, width=120):
    console = Console(file=io.StringIO(), width=width, record=True)
    assert terminal.render(report, console, verbosity=verbosity) == ""
    text = console.export_text()
    return text.rstrip("\n").split("\n")


def ends_with_verdict(lines, report):
    """The verdict line is the last line, or, on a console too narrow for it, its last two (the run's facts, then
    the verdict itself on the last)."""
    text = terminal.verdict_line_text(report)
    return lines[-1] == text or (lines[-2].endswith(":") and lines[-2] + " " + lines[-1].strip() == text)


def commands(lines):
    """The repros printed, each on one line again (a long one is wrapped with ` \\` continuations)."""
    out, joined = [], ""
    for line in lines:
        if joined:
            joined += " " + line.strip()
        elif line.startswith("      kbtool check"):
            joined = line
        if joined and not joined.endswith(" \\"):
            out.append(joined)
            joined = ""
        elif joined:
            joined = joined[:-2]
    return out


def screen_rows(lines, width):
    """Rows the lines take on a terminal `width` wide (a long line wraps)."""
    return sum(max(1, math.ceil(cell_len(line) / width)) for line in lines)


@pytest.fixture(scope="module")
def parity():
    with open(PARITY, encoding="utf-8") as fh:
        return json.load(fh)


def unexplained_everywhere(report):
    """The report as if no known difference existed: every explained result becomes an unexplained failure."""
    report = copy.deepcopy(report)
    for r in report["results"]:
        r.pop("known", None)
    report["summary"] = summarize(report)
    return report


def many_failures(n_ops=80, backends=("alpha", "beta", "gamma", "delta")):
    """Long messages, long case ids, every status, on several backends: what a badly broken backend gives."""
    statuses = ["fail", "error", "crash", "timeout", "unsupported", "could_not_start"]
    results = []
    for b, backend in enumerate(backends):
        for i in range(n_ops):
            for j in range(3):
                results.append(
                    record(
                        f"op{i:03d}",
                        f"grid.strides=2x1.padding=same.data_format=channels_first.dilation_rate=1x1.case{j}",
                        backend,
                        statuses[(i + b) % 6],
                        message="ValueError: " + f"a long backend message {i} " * 30,
                    )
                )
    return make_report([available(b) for b in backends], results)


# ---------------------------------------------------------------------------------------------------- fits a screen


@pytest.mark.parametrize("width", [80, 120])
def test_the_full_run_fits_a_screen(parity, width):
    lines = printed(parity, width=width)
    assert screen_rows(lines, width) < SCREEN
    assert ends_with_verdict(lines, parity)
    # every backend has its line with its counts and conformance
    for b in parity["backends"]:
        assert any(line.startswith(b["name"]) and "%" in line for line in lines), b["name"]
    reasons = summary.known_groups(parity)
    assert len(reasons) > terminal.KNOWN_REASONS  # the fixture has more reasons than the default shows
    assert sum(1 for line in lines if line.startswith("  ≈ ")) == terminal.KNOWN_REASONS
    hidden = reasons[terminal.KNOWN_REASONS :]
    assert (
        "  … {} more reasons ({} results): -v lists every one".format(len(hidden), sum(g["results"] for g in hidden))
        in lines
    )
    assert not any(line.startswith("  print_tensor") for line in lines)  # 154 ops: no matrix by default


@pytest.mark.parametrize("width", [80, 120])
def test_thousands_of_unexplained_failures_still_fit_a_screen(parity, width):
    report = unexplained_everywhere(parity)
    lines = printed(report, width=width)
    assert screen_rows(lines, width) < SCREEN
    groups = summary.failure_groups(report)
    shown = commands(lines)
    assert all(cell_len(line) <= width for line in lines)
    assert terminal.FAILURE_GROUPS[0] <= len(shown) <= terminal.FAILURE_GROUPS[1]
    assert any(line.startswith(f"  … {len(groups) - len(shown)} more groups") for line in lines)
    # the failures shown are taken round-robin over the backends, not only the first one's: as many backends as groups
    # shown (every backend with failures, when the screen holds a group of each)
    shown_backends = {line.split("--backend ")[1].split()[0] for line in shown}
    failing = {r["backend"] for r in summary.unexplained(report)}
    assert shown_backends <= failing and len(shown_backends) == min(len(failing), len(shown))


@pytest.mark.parametrize("width", [60, 80, 200])
def test_long_messages_and_case_ids_still_fit_a_screen(width):
    report = many_failures()
    lines = printed(report, width=width)
    assert screen_rows(lines, width) < SCREEN
    assert all(len(line) < width + 400 for line in lines)  # messages are cut by default


def test_quiet_is_the_verdict_line_alone(parity):
    for report in (parity, unexplained_everywhere(parity), many_failures()):
        lines = printed(report, verbosity=0)
        assert lines == [terminal.verdict_line_text(report)]


def test_verbose_lists_everything(parity):
    lines = printed(parity, verbosity=2, width=420)  # wide enough for every op name beside 14 backends
    ops = {r["op"] for r in parity["results"]}
    assert sum(1 for line in lines if line.startswith("  ≈ ")) == len(summary.known_groups(parity))
    assert all(any(line.split() and line.split()[0] == op for line in lines) for op in ops)  # the matrix rows
    claims = [line for line in lines if line.startswith("  ") and " shows " in line]
    assert len(claims) == len(matrix.doc_claims(parity))
    stripped = unexplained_everywhere(parity)
    lines = printed(stripped, verbosity=2, width=200)
    assert sum(1 for line in lines if line.startswith("      reproduce: ")) == len(summary.unexplained(stripped))


# ---------------------------------------------------------------------------------------------------- sections


def test_backend_lines_count_every_status_and_the_conformance():
    results = PASSES + [
        record("dot", "k", "alpha", "fail", known="r"),
        record("dot", "u", "alpha", "unsupported"),
        record("dot", "c", "alpha", "crash"),
        record("dot", "n", "alpha", "could_not_start"),
    ]
    report = make_report([available("alpha")], results)
    header, rows = summary.backend_rows(report)
    assert header[:4] == ["backend", "version", "pass as is", "results"]  # the headline is the first number
    row = dict(zip(header, rows[0]))
    assert (row["results"], row["pass"], row["known"], row["unsup."], row["crash"], row["not run"], row["unexpl."]) == (
        "6",
        "2",
        "1",
        "1",
        "1",
        "1",
        "3",
    )
    # pass / results that ran: the case that could not start never ran; known and unsupported did, and did not pass
    assert row["pass as is"] == "40.0 % (2/5)"
    assert row["conform."] == "50.0 %"  # (pass + known) / results
    counts = summary.backend_counts(report)["alpha"]
    assert (counts["ran"], counts["pass_as_is"], counts["conformance"]) == (5, 40.0, 50.0)


def test_conformance_is_never_rounded_up_to_100():
    results = [record("dot", str(i), "alpha", "pass") for i in range(9999)] + [record("dot", "x", "alpha", "fail")]
    report = make_report([available("alpha")], results)
    row = dict(zip(*[summary.backend_rows(report)[0], summary.backend_rows(report)[1][0]]))
    assert row["conform."] == "99.9 %" and row["pass as is"] == "99.9 % (9999/10000)"


def test_the_active_backend_comes_first_and_the_settings_line_says_where_they_came_from():
    results = PASSES + [record("dot", "basic", "beta", "pass"), record("dot", "x", "beta", "fail")]
    report = make_report([available("alpha"), available("beta")], results)
    report["active_backend"] = "beta"
    report["keras_config"] = {
        "override": {},
        "ran": [{"floatx": "float32"}],
        "values": {"image_data_format": "channels_first", "floatx": "float32", "epsilon": 1e-07},
        "source": {
            "backend": "KERAS_BACKEND",
            "image_data_format": "keras.json",
            "floatx": "documented default",
            "epsilon": "documented default",
        },
    }
    lines = printed(report, width=200)
    table = [line for line in lines if line.startswith(("alpha", "beta"))]
    assert table[0].startswith("beta (active)") and table[1].startswith("alpha ")
    assert (
        "keras.json settings: backend beta (active; KERAS_BACKEND), image_data_format channels_first "
        "(keras.json), floatx float32, epsilon 1e-07 (documented default)"
    ) in lines
    failures = [line for line in lines if line.startswith("      kbtool check")]
    assert failures == ["      kbtool check --op dot --case x --backend beta --mode eager --seed 0"]


def test_reports_without_the_new_fields_render():
    report = make_report([available("alpha")], PASSES)
    for key in ("keras_config", "grid", "active_backend"):
        report.pop(key, None)
    lines = printed(report)
    assert lines[-1] == "2 results in 1.0 s, pass as is 100.0 % (2/2): all pass"
    assert not any(line.startswith("keras.json settings") for line in lines)


def test_failures_are_grouped_with_their_message_numbers_and_repro():
    details = {"expected_shape": [2, 3], "actual_shape": [2, 3], "max_abs_diff": 0.5, "mismatched": 2, "size": 6}
    results = [
        record(
            "dot",
            f"c{i}",
            "alpha",
            "fail",
            details=details,
            message="2 of 6 values differ (max abs diff 0.5, rtol 1e-05, atol 1e-06); first at (0, 1)",
        )
        for i in range(4)
    ]
    # one message in three ops: one group, as a backend that lacks a feature says so everywhere
    results += [
        record(op, "grad", "alpha", "unsupported", message="NotImplementedError: no autodiff")
        for op in ("abs", "exp", "sum")
    ]
    report = make_report([available("alpha")], results)
    lines = printed(report, width=300)
    assert "Unexplained failures (7 results in 2 groups):" in lines
    assert (
        "  ✗ fail dot on alpha · 4 results, the first: 2 of 6 values differ (max abs diff 0.5, rtol 1e-05, "
        "atol 1e-06); first at (0, 1)"
    ) in lines
    assert "      kbtool check --op dot --case c0 --backend alpha --mode eager --seed 0" in lines
    assert (
        "  – unsupported 3 ops on alpha (abs, exp, sum) · 3 results, the first: NotImplementedError: no autodiff"
    ) in lines
    verbose = printed(report, verbosity=2, width=300)
    assert (
        verbose.count("      expected vs actual: shape (2, 3) vs (2, 3), 2 of 6 values differ, max abs diff 0.5") == 4
    )


def test_details_text():
    assert summary.details_text(None) == ""
    assert summary.details_text(
        {
            "expected_shape": [3],
            "actual_shape": [],
            "expected_dtype": "bool",
            "actual_dtype": "float32",
            "first_index": [0],
            "expected_value": 1.0,
            "actual_value": "inf",
            "rtol": 1e-05,
            "atol": 1e-06,
        }
    ) == ("expected vs actual: shape (3,) vs (), dtype bool vs float32, first at (0,): 1 vs inf, rtol 1e-05 atol 1e-06")


def test_known_differences_are_grouped_by_reason():
    results = (
        [record(op, "c", backend, "fail", known="same cause") for op in ("a", "b") for backend in ("alpha", "beta")]
        + [record("a", "d", "beta", "error", known="another cause")]
        + PASSES
    )
    report = make_report([available("alpha"), available("beta")], results)
    groups = summary.known_groups(report)
    assert [(g["reason"], g["results"], g["ops"], g["backends"]) for g in groups] == [
        ("same cause", 4, ["a", "b"], ["alpha", "beta"]),
        ("another cause", 1, ["a"], ["beta"]),
    ]
    lines = printed(report, width=200)
    assert "Known differences (5 results, 2 reasons; re-checked this run):" in lines
    assert "  ≈ 4  alpha, beta  2 ops  same cause" in lines
    assert "  ≈ 1  beta         a      another cause" in lines


def test_changed_results_and_stale_known_differences_are_always_shown():
    changed = record("dot", "big", "alpha", "changed")
    changed["changed"] = {"entry": 3, "reason": "flip", "status": "fail", "recorded": "fail | a", "now": "fail | b"}
    report = make_report([available("alpha")], PASSES + [changed], stale=[STALE])
    lines = printed(report, width=200)
    assert "changed known result: dot big on alpha (eager), entry 3: recorded fail | a; now fail | b" in lines
    assert (
        "stale known difference: dot basic on beta: beta rounds (did not reproduce in this run (2 results checked))"
    ) in lines
    assert lines[-1] == "3 results in 1.0 s, pass as is 66.6 % (2/3): 1 divergence, 1 stale known difference"


def test_documentation_examples_are_one_line_unless_verbose():
    def example(backend, matches):
        return record(
            "arange",
            "example:1",
            backend,
            "pass",
            doc_check=[{"docs": ["keras-2"], "shown": "[0, 1]", "matches": matches}],
        )

    report = make_report([available("alpha"), available("beta")], [example("alpha", True), example("beta", False)])
    lines = printed(report, width=200)
    assert (
        "Documentation examples: 1 shown by the docs: 0 hold on every backend, 1 on some, 0 on none, 0 text "
        "(not judged) (-v lists them)"
    ) in lines
    verbose = printed(report, verbosity=2, width=200)
    assert "  arange example:1 [keras-2] shows [0, 1]: holds on alpha only; not on beta" in verbose


def test_unavailable_backends_say_why():
    report = make_report([available("alpha"), not_installed("cntk"), broken("my.kb")], PASSES)
    lines = printed(report, width=200)
    assert "cntk: not installed: run `kbtool env install cntk`" in lines  # the status said once
    assert "my.kb: broken — ImportError: no engine here" in lines
    assert lines[-1] == "2 results in 1.0 s, pass as is 100.0 % (2/2): could not start: my.kb"


def test_backends_that_did_not_run_share_a_line_and_have_no_matrix_column():
    results = PASSES + [record("sum", "a", "alpha", "pass")]  # two ops: the matrix shows
    report = make_report([available("alpha"), not_installed("cntk"), not_installed("mxnet")], results)
    lines = printed(report, width=200)
    assert "cntk, mxnet: not installed: run `kbtool env install NAME`" in lines
    assert any("✓ 2/2" in line for line in lines)
    assert not any("cntk" in line for line in lines if "not installed" not in line)  # no empty matrix column


def test_backend_text_is_shown_as_text():
    nasty = "ValueError: bad \x1b[31mred\x1b[0m \x07bell [bold]not markup[/bold] <script>"
    report = make_report([available("alpha")], [record("dot", "x", "alpha", "error", message=nasty)])
    for verbosity in (1, 2):
        console = Console(file=io.StringIO(), width=200, force_terminal=False)
        terminal.render(report, console, verbosity=verbosity)
        out = console.file.getvalue()
        assert "\x1b" not in out and "\x07" not in out
        assert "ValueError: bad red bell [bold]not markup[/bold] <script>" in out


def test_a_narrow_console_drops_versions_then_zero_columns_but_keeps_the_verdict_columns():
    report = make_report([available("tensorflow")], PASSES + [record("dot", "x", "tensorflow", "fail")])
    report["active_backend"] = "tensorflow"
    wide = printed(report, width=200)
    narrow = printed(report, width=70)
    wide_header = [line for line in wide if line.startswith("backend")][0]
    assert "version" in wide_header and "timeout" in wide_header
    header = [line for line in narrow if line.startswith("backend")][0]
    assert "version" not in header and "timeout" not in header
    assert header.split()[-2:] == ["conform.", "unexpl."] and " fail " in header
    assert all(cell_len(line) <= 70 for line in narrow if line.startswith(("backend", "tensorflow")))


def test_render_passes_options_to_the_terminal_only():
    report = make_report([available("alpha")], PASSES)
    console = Console(file=io.StringIO(), width=120)
    assert render(report, "terminal", console=console, verbosity=0) == ""
    assert console.file.getvalue() == "2 results in 1.0 s, pass as is 100.0 % (2/2): all pass\n"
    assert render(report, "markdown").startswith("# kbtool parity report")


# ---------------------------------------------------------------------------------------------------- the CLI


def test_check_quiet_prints_the_verdict_line_alone():
    result = CliRunner().invoke(main, ["check", "--op", "transpose", "--case", "rank3", "--backend", "numpy", "-q"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "2 results in {} s, pass as is 100.0 % (2/2): self-test, all pass".format(
            result.stdout.split(" s,")[0].split(" in ")[1]
        )
    ]
    assert result.stderr == ""


def test_check_verbose_and_quiet_together_is_a_usage_error():
    result = CliRunner().invoke(main, ["check", "--op", "transpose", "--backend", "numpy", "-q", "-v"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines() == ["kbtool: error: give -q (the verdict line only) or -v (everything), not both"]


def test_check_verbose_lists_every_failure(custom_backend):
    module = custom_backend(
        "failingkb",
        "kb",
        "from kbtool.reference import *\n\ndef transpose(x):\n    raise ValueError('no transpose here')\n",
    )
    default = CliRunner().invoke(main, ["check", "--op", "transpose", "--backend", module])
    verbose = CliRunner().invoke(main, ["check", "--op", "transpose", "--backend", module, "-v"])
    assert default.exit_code == verbose.exit_code == 1
    n = int(default.stdout.rstrip().splitlines()[-1].split(": ")[1].split()[0])  # "N divergences"
    assert n > 1
    assert verbose.stdout.count("reproduce: kbtool check") == n
    assert default.stdout.count("      kbtool check --op transpose") == 1  # one group: one op, one message


# ---------------------------------------------------------------------------------------------------- progress


def result(status="pass", backend="numpy"):
    return Result(op="clip", case="c", backend=backend, mode="eager", status=Status(status))


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_plain_progress_is_at_most_a_line_per_tenth_and_ten_seconds():
    out, clock = io.StringIO(), Clock()
    with progress.CheckProgress({"numpy": 1000, "theano": 1000}, stream=out, live=False, clock=clock) as show:
        for i in range(1000):
            clock.now = (i + 1) * 0.1  # 100 s in all: a tenth of the plan every 10 s
            show("numpy", result("pass" if i % 10 else "fail"))
            if i < 500:
                show("theano", result(backend="theano"))
    lines = out.getvalue().splitlines()
    numpy_lines = [line for line in lines if line.startswith("  numpy")]
    assert 5 <= len(numpy_lines) <= 11  # never a line per result
    assert numpy_lines[0] == "  numpy        100/1000 (10%) · 90 pass, 10 not pass · 0:10"
    assert numpy_lines[-1] == "  numpy        done: 1000 results in 1:40 · 900 pass, 100 not pass"
    theano_lines = [line for line in lines if line.startswith("  theano")]
    assert theano_lines[-1] == "  theano       stopped: 500/1000 in 1:40 · 500 pass, 0 not pass"
    totals = [line for line in lines if line.startswith("  total")]
    assert 1 <= len(totals) <= 11 and "left" in totals[0]
    assert lines[-1] == "  total        1500 results in 1:40"
    assert lines[0] == f"  ({progress.LEGEND})" and out.getvalue().count(progress.LEGEND) == 1  # said once


def test_plain_progress_waits_at_least_ten_seconds_between_lines():
    out, clock = io.StringIO(), Clock()
    show = progress.CheckProgress({"numpy": 100}, stream=out, live=False, clock=clock)
    for i in range(99):  # 99% in 5 s: no line (too soon)
        clock.now = i * 0.05
        show("numpy", result())
    assert out.getvalue() == ""
    clock.now = 70.0  # the heartbeat: a result after a minute of silence says where it is
    show2 = progress.CheckProgress({"numpy": 1000}, stream=out, live=False, clock=clock)
    clock.now = 140.0
    show2("numpy", result())
    assert out.getvalue().splitlines()[-1] == "  numpy        1/1000 (0%) · 1 pass, 0 not pass · 1:10"


def test_progress_copes_with_more_results_than_planned():
    out = io.StringIO()
    with progress.CheckProgress({"theano": 2}, stream=out, live=False, clock=lambda: 0.0) as show:
        for _ in range(3):  # a variant the plan did not count
            show("theano", result(backend="theano"))
    assert out.getvalue().splitlines() == [
        f"  ({progress.LEGEND})",
        "  theano       done: 2 results in 0:00 · 2 pass, 0 not pass",
        "  theano       done: 3 results in 0:00 · 3 pass, 0 not pass",
        "  total        3 results in 0:00",
    ]


def test_live_progress_counts_from_many_threads_and_leaves_no_bar():
    out = io.StringIO()
    with progress.CheckProgress({"numpy": 400, "theano": 400}, stream=out, live=True) as show:
        threads = [
            threading.Thread(target=lambda b=b: [show(b, result("pass" if i % 4 else "fail", b)) for i in range(200)])
            for b in ("numpy", "numpy", "theano", "theano")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rows = {row[0]: row for row in show.rows()}
        assert rows["numpy"][1] == rows["theano"][1] == "400/400"
        assert rows["numpy"][2] == "100 not pass" and rows["numpy"][4].startswith("done in")
        assert rows["total"][1] == "800/800"
    assert show._live is None  # stopped: the summary prints on a clean screen


def test_live_progress_is_closed_when_the_check_is_interrupted():
    out = io.StringIO()
    show = progress.CheckProgress({"numpy": 10}, stream=out, live=True)
    with pytest.raises(KeyboardInterrupt):
        with show:
            show("numpy", result())
            raise KeyboardInterrupt
    assert show._live is None


def test_the_stream_is_bound_when_progress_starts(monkeypatch):
    # the reference redirects sys.stderr while it computes a case: progress must not write into that record
    real = io.StringIO()
    monkeypatch.setattr("sys.stderr", real)
    show = progress.CheckProgress({"numpy": 1}, live=False, clock=lambda: 0.0)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    show("numpy", result())
    assert real.getvalue().splitlines()[1].startswith("  numpy        done: 1 results")


def test_planned_per_backend_counts_modes_and_variants():
    import dataclasses

    from kbtool.plan import Plan, PlannedBackend
    from kbtool.runners import registry
    from kbtool.specs import loader
    from kbtool.specs.cases import Case

    def case(op, modes):
        return Case(op=op, id="c", arrays=[], args=[], kwargs={}, modes=list(modes))

    numpy = registry.launch_for("numpy")

    def slot(name, variants):
        return PlannedBackend(name, launch=dataclasses.replace(numpy, backend=name, variants=variants))

    plan = Plan(
        spec=loader.load(),
        ops=["conv2d", "sum"],
        work=[({}, case("conv2d", ["eager", "symbolic"])), ({}, case("sum", ["eager"]))],
        backends=[
            slot("numpy", lambda c: []),
            slot("theano", lambda c: [case(c.op, c.modes)] if c.op == "conv2d" else []),
            slot("broken", lambda c: 1 / 0),
            PlannedBackend("tensorflow", unavailable="not installed"),  # not runnable: nothing planned
        ],
    )
    assert progress.planned_per_backend(plan) == {"numpy": 3, "theano": 5, "broken": 3}
    # a backend that cannot run a mode plans none of its cases in that mode
    plan.backends[0].launch = dataclasses.replace(numpy, modes=("eager",))
    assert progress.planned_per_backend(plan)["numpy"] == 2


def test_the_time_left_is_the_slowest_backends():
    clock = Clock()
    show = progress.CheckProgress({"numpy": 10, "theano": 10}, stream=io.StringIO(), live=False, clock=clock)
    assert show.time_left() is None
    clock.now = 10.0
    for _ in range(10):
        show("numpy", result())
    assert show.time_left() is None  # theano has not answered yet: no guess
    for _ in range(progress.ESTIMATE_AFTER):
        show("theano", result(backend="theano"))
    # 5 of its 10 in 10 s (from the check's start: no `starting` was told): 5 more take 10 s; numpy is done
    assert show.time_left() == pytest.approx(10.0)


def test_plain_progress_says_nothing_when_nothing_ran():
    out = io.StringIO()
    with pytest.raises(ValueError):
        with progress.CheckProgress({"numpy": 2}, stream=out, live=False):
            raise ValueError("a known-differences file kbtool cannot read: refused before the run")
    assert out.getvalue() == ""


# ---------------------------------------------------------------------------------------------------- pass as is


def widest(lines):
    return max(cell_len(line) for line in lines)


@pytest.mark.parametrize("width", [80, 200])
def test_pass_as_is_is_the_first_number_of_every_backend_at_any_width(parity, width):
    lines = printed(parity, width=width)
    assert widest(lines) <= width
    header = [line for line in lines if line.startswith("backend ")][0]
    assert header.split()[1:4] == (["pass", "as", "is"] if width == 80 else ["version", "pass", "as"])
    counts = summary.backend_counts(parity)
    for name in summary.table_backends(parity):
        c = counts[name]
        figure = summary.pass_as_is_text(summary.pass_as_is(c["pass"], c["ran"]))
        row = [line for line in lines if line.split() and line.split()[0] == name][0]
        # the percent and its counts, whole (never cut), then conformance and unexplained at the end
        assert " ".join(row.split()).find(figure.replace("  ", " ")) > 0, (name, row)
        assert row.split()[-2:] == ["%", str(c["unexplained"])] and row.split()[-3] == "100.0"
    cntk = counts["cntk"]
    assert cntk["pass_as_is"] < 50 < 100 == cntk["conformance"]  # the headline no longer hides the differences
    assert "pass as is = pass / results that ran" in " ".join(lines)
    run = summary.run_pass_as_is(parity)
    assert f"pass as is {summary.pass_as_is_text(run)}" in " ".join(lines[-2:])


def test_the_settings_line_wraps_between_items_at_80_columns(parity):
    lines = printed(parity, width=80)
    start = [i for i, line in enumerate(lines) if line.startswith("keras.json settings:")][0]
    block = lines[start : start + 6]
    for item in summary.settings_items(parity):
        assert any(item in line for line in block), item  # never split: `epsilon 1e-07` stays on one line
    assert widest(block) <= 80 and block[1].startswith("  ")


def test_a_narrow_table_leaves_out_columns_rather_than_cut_a_number():
    results = [
        record("op", f"c{i}", "keras3-tensorflow", s)
        for i, s in enumerate(["pass", "fail", "error", "crash", "timeout", "unsupported", "could_not_start"] * 300)
    ]
    report = make_report([available("keras3-tensorflow")], results)
    report["active_backend"] = "keras3-tensorflow"
    lines = printed(report, width=80)
    assert widest(lines) <= 80
    row = [line for line in lines if line.startswith("keras3-tensorflow")][0]
    assert "16.6 % (300/1800)" in row and row.startswith(
        "keras3-tensorflow *"
    )  # 300 of the 1800 that ran (300 could not start)
    assert row.split()[-1] == "1800" and "* the active backend" in " ".join(lines)
    legend = " ".join(lines)
    assert "left out at this width:" in legend  # said, not silently cut
    wide = printed(report, width=200)
    assert "keras3-tensorflow (active)" in "\n".join(wide) and "left out" not in "\n".join(wide)


def test_matrix_cells_are_shaded_by_their_pass_fraction():
    results = [record("a", f"k{i}", "alpha", "fail", known="r") for i in range(26)]
    results += [record("b", f"p{i}", "alpha", "pass") for i in range(24)] + [
        record("b", "x", "alpha", "fail", known="r")
    ]
    results += [record("c", f"p{i}", "alpha", "pass") for i in range(3)]
    report = make_report([available("alpha")], results)
    _, rows = matrix.build(report)
    cells = {row["op"]: terminal._cell(row["cells"]["alpha"]) for row in rows}
    assert cells["a"].plain == "≈ 0/26" and cells["b"].plain == "≈ 24/25" and cells["c"].plain == "✓ 3/3"

    def count_style(text):
        return [str(span.style) for span in text.spans if text.plain[span.start : span.end].count("/")][0]

    # same worst status, not the same colour: 0 of 26 and 24 of 25 passing as is read differently
    assert count_style(cells["a"]) == console.BAND_STYLES["none"]
    assert count_style(cells["b"]) == console.BAND_STYLES["most"] != count_style(cells["a"])
    assert count_style(cells["c"]) == console.BAND_STYLES["all"]
    assert [summary.pass_band(p, 10) for p in (10, 9, 5, 1, 0)] == ["all", "most", "half", "few", "none"]
    lines = printed(report, width=80)
    assert "  passed/total shaded by pass as is: 100 %, ≥ 90 %, ≥ 50 %, < 50 %, 0 %" in lines


def test_a_long_repro_wraps_with_shell_continuations():
    case = "grid." + ".".join(f"k{i}=v{i}" for i in range(6))
    report = make_report([available("alpha")], [record("dot", case, "alpha", "fail")])
    lines = printed(report, width=60)
    assert widest(lines) <= 60
    wrapped = [line for line in lines if line.endswith(" \\")]
    assert wrapped and commands(lines) == [
        f"      kbtool check --op dot --case {case} --backend alpha --mode eager --seed 0"
    ]


@pytest.mark.backends
def test_check_at_80_columns_has_no_line_wider_than_80():
    import subprocess
    import sys

    env = dict(os.environ, COLUMNS="80", PYTHONPATH=ROOT)
    run = subprocess.run(
        [sys.executable, "-m", "kbtool", "check", "--op", "conv2d", "--backend", "numpy", "--backend", "tensorflow"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.rstrip("\n").splitlines()
    assert widest(lines) <= 80, [line for line in lines if cell_len(line) > 80]
    assert any(line.startswith("backend ") and "pass as is" in line for line in lines)
    assert "pass as is" in lines[-2] + lines[-1] and lines[-1].endswith("known)")


def test_the_console_wraps_items_between_items_and_a_command_between_its_arguments():
    """console.py, shared by the terminal views: a list wraps between its items (lines after the first indented),
    a repro between its arguments with a shell continuation, so that what is pasted still runs."""
    from kbtool.reports import console as console_mod

    lines = console_mod.pack("keys: ", ["alpha", "beta", "gamma", "delta"], 20, ", ", "  ")
    assert lines == ["keys: alpha, beta,", "  gamma, delta"]
    out = io.StringIO()
    console_mod.say_command(Console(file=out, width=30, color_system=None), "kbtool check --op abs --case 'a b'", "")
    printed_lines = out.getvalue().splitlines()
    assert all(line.endswith(" \\") for line in printed_lines[:-1]) and len(printed_lines) > 1
    assert " ".join(line.rstrip(" \\").strip() for line in printed_lines) == "kbtool check --op abs --case 'a b'"
    assert console_mod.escape("[red]x\x1b[0m") == "\\[red]x"


def test_an_item_too_wide_for_the_label_line_starts_the_next_line_indented():
    # this machine without a keras.json says so in the first item: it must not be folded at the edge, unindented
    item = "backend tensorflow (active; documented default: no keras.json)"
    lines = console.pack("keras.json settings: ", [item, "floatx float32"], 80, ", ", "  ")
    assert lines == ["keras.json settings:", "  " + item + ", floatx float32"]
    assert console.pack("label: ", ["short", "x"], 80, ", ", "  ") == ["label: short, x"]
    # a command's first line is its indent, not a label: a long first word stays there
    assert console.pack("    ", ["a" * 90, "b"], 80, " ", "        ", tail=" \\") == [
        "    " + "a" * 90 + " \\",
        "        b",
    ]
