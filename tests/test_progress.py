"""Progress at 80 columns: the check's live table, bench's and explore's bars; queued / starting / running / done
states as execute.py tells them; honest time-left wording."""

import io
import threading

import pytest
from rich.console import Console

from kbtool.bench.progress import BenchProgress
from kbtool.explore import render as explore_render
from kbtool.reports import progress
from kbtool.results import Result, Status

LONG = ["numpy", "tensorflow", "keras3-tensorflow", "theano", "cntk", "keras3-openvino", "tensorflow1", "mxnet"]


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def result(backend, status="pass"):
    return Result(op="clip", case="c", backend=backend, mode="eager", status=Status(status))


def screen(lines, width=80):
    """What a terminal `width` columns wide shows of rich Text lines."""
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    for line in lines:
        console.print(line)
    return console.export_text().splitlines()


def busy_check(clock):
    """Eight backends of 13,100 results each, in every state: done, running with and without an estimate, first
    case running, starting, queued."""
    show = progress.CheckProgress(dict.fromkeys(LONG, 13100), stream=io.StringIO(), live=False, clock=clock)
    show.state("numpy", "starting")
    clock.now = 2.0
    show.state("numpy", "running")
    for i in range(13100):
        show("numpy", result("numpy", "pass" if i % 3 else "fail"))
    clock.now = 12.0
    show.state("numpy", "finished")
    show.state("tensorflow", "starting")
    clock.now = 20.0
    show.state("tensorflow", "running")
    for i in range(7000):
        show("tensorflow", result("tensorflow", "pass" if i % 3 else "fail"))
    show.state("keras3-tensorflow", "starting")
    show.state("keras3-tensorflow", "running")
    for _ in range(progress.ESTIMATE_AFTER - 1):
        show("keras3-tensorflow", result("keras3-tensorflow"))
    show.state("theano", "starting")
    clock.now = 100.0
    show.state("theano", "running")
    show.state("cntk", "starting")
    clock.now = 3725.0  # over an hour: H:MM:SS clocks, the widest they get
    return show


def test_live_table_fits_80_columns_and_cuts_no_name_or_count():
    show = busy_check(Clock())
    lines = screen(show.render_lines(80))
    assert max(len(line) for line in lines) <= 80, lines
    assert lines[0] == progress.LEGEND  # the legend: once, on a line of its own
    by_name = {line.split()[0]: line for line in lines[1:]}
    assert list(by_name) == LONG + ["total"]  # every name whole, in order
    assert "…" not in "".join(lines)
    assert by_name["numpy"].split()[1:4] == ["13100/13100", "4367", "not"]
    assert by_name["tensorflow"].split()[1:3] == ["7000/13100", "2334"]
    assert by_name["total"].split()[1] == f"{13100 + 7000 + 4}/{13100 * 8}"


def test_states_and_time_left_in_words():
    show = busy_check(Clock())
    words = {row[0]: row[4] for row in show.rows()}
    assert words["numpy"] == "done in 0:02"  # from its worker's start to its last result, not "about 0:00 left"
    # 7000 results in 3705 s since its worker was ready: 6100 more take 3228 s
    assert words["tensorflow"] == "1:01:53 · about 53:48 left"
    assert words["keras3-tensorflow"] == "1:01:45 · estimating"  # too few results for an honest pace
    assert words["theano"] == "first case running 1:01:45"  # ready, compiling its first case: no "unknown"
    assert words["cntk"] == "starting 1:00:25"  # its worker imports its engine
    assert words["tensorflow1"] == words["mxnet"] == "queued"  # no slot yet: no clock
    # the total: a lower bound while some backend has no estimate
    assert words["total"] == "1:02:05 · at least 53:48 left"
    assert show.time_left() is None


def test_a_queued_backend_has_no_ticking_clock():
    clock = Clock()
    show = progress.CheckProgress({"numpy": 10, "theano": 10}, stream=io.StringIO(), live=False, clock=clock)
    show.state("numpy", "starting")
    rows = []
    for clock.now in (0.0, 30.0, 90.0):
        rows.append({row[0]: row[4] for row in show.rows()})
    assert [r["theano"] for r in rows] == ["queued"] * 3
    assert [r["numpy"] for r in rows] == ["starting 0:00", "starting 0:30", "starting 1:30"]
    clock.now = 100.0
    show.state("theano", "starting")  # a slot came free: its clock starts now, not at the check's start
    clock.now = 105.0
    assert {row[0]: row[4] for row in show.rows()}["theano"] == "starting 0:05"


def test_states_only_go_forward():
    clock = Clock()
    show = progress.CheckProgress({"theano": 10}, stream=io.StringIO(), live=False, clock=clock)
    show.state("theano", "starting")
    show.state("theano", "running")
    clock.now = 10.0
    show("theano", result("theano"))
    show.state("theano", "starting")  # its second worker starts: still running
    show.state("theano", "failed")  # ... and fails: the first one's results stand
    assert show.rows()[0][4] == "0:10 · estimating"


def test_a_backend_that_could_not_start_and_one_that_stopped():
    clock = Clock()
    show = progress.CheckProgress({"cntk": 10, "theano": 10}, stream=io.StringIO(), live=False, clock=clock)
    show.state("cntk", "starting")
    show.state("cntk", "failed")
    show.state("cntk", "finished")
    show.state("theano", "starting")
    show.state("theano", "running")
    clock.now = 4.0
    show("theano", result("theano"))
    show.state("theano", "finished")  # nothing of it left (its worker died): 1 of 10
    clock.now = 50.0
    words = {row[0]: row[4] for row in show.rows()}
    assert words == {"cntk": "could not start", "theano": "stopped after 0:04", "total": "done in 0:50"}


def test_time_left_from_the_backends_own_pace_after_a_few_results():
    clock = Clock()
    show = progress.CheckProgress({"theano": 100}, stream=io.StringIO(), live=False, clock=clock)
    show.state("theano", "starting")
    clock.now = 60.0  # a minute to import: not part of its pace
    show.state("theano", "running")
    for i in range(progress.ESTIMATE_AFTER):
        clock.now = 60.0 + 2 * (i + 1)
        assert show.time_left() is None if i < progress.ESTIMATE_AFTER - 1 else True
        show("theano", result("theano"))
    # 5 results in 10 s since it was ready: 95 more take 190 s
    assert show.time_left() == pytest.approx(190.0)
    assert show.rows()[0][4] == "1:10 · about 3:10 left"


@pytest.mark.parametrize("width", [80, 100, 160])
def test_the_bar_gives_way_not_the_text(width):
    show = busy_check(Clock())  # the widest it gets: over an hour, 100,000 results, every name long
    lines = screen(show.render_lines(width), width)
    assert max(len(line) for line in lines) <= width
    assert [line.split()[0] for line in lines[1:]] == LONG + ["total"] and "…" not in "".join(lines)
    bars = {line.count("━") for line in lines[1:]}
    assert len(bars) == 1  # one width for every row (none at 80 here: the text keeps its room)
    assert bars == {30} if width == 160 else bars <= {0} | set(range(6, 30))


def test_a_usual_check_keeps_its_bar_at_80_columns():
    clock = Clock()
    show = progress.CheckProgress(dict.fromkeys(LONG, 1310), stream=io.StringIO(), live=False, clock=clock)
    show.state("keras3-tensorflow", "starting")
    show.state("keras3-tensorflow", "running")
    for i in range(700):
        clock.now = i * 0.1
        show("keras3-tensorflow", result("keras3-tensorflow", "pass" if i % 3 else "fail"))
    lines = screen(show.render_lines(80))
    assert max(len(line) for line in lines) <= 80
    row = next(line for line in lines if line.startswith("keras3-tensorflow"))
    assert row.count("━") >= 10 and row.endswith("1:09 · about 1:00 left") and " 700/1310 234 not pass " in row


def test_plain_lines_fit_80_columns_with_long_names_and_big_counts():
    out, clock = io.StringIO(), Clock()
    with progress.CheckProgress(
        {"keras3-tensorflow": 9999, "keras3-openvino": 9999}, stream=out, live=False, clock=clock
    ) as show:
        for i in range(9999):
            clock.now = 3600.0 + i
            show("keras3-tensorflow", result("keras3-tensorflow", "pass" if i % 3 else "fail"))
            if i < 5000:
                show("keras3-openvino", result("keras3-openvino", "fail"))
    lines = out.getvalue().splitlines()
    assert len(lines) > 5 and max(len(line) for line in lines) <= 80, max(lines, key=len)
    assert lines[0] == f"  ({progress.LEGEND})"
    assert any(line.startswith("  keras3-tensorflow done: 9999 results") for line in lines)
    assert any(line.startswith("  keras3-openvino stopped: 5000/9999") for line in lines)


def test_execute_tells_each_state(tmp_path):
    """A real check on the numpy backend: its worker is given a slot, is ready, and its last worker leaves."""
    from kbtool.check.run import run_check
    from kbtool.plan import Selection, make_plan
    from kbtool.settings import RunSettings
    from kbtool.specs import loader

    told = []

    class Listener:
        lock = threading.Lock()

        def __call__(self, backend, result):
            with self.lock:
                if not told or told[-1] != ("result", backend):
                    told.append(("result", backend))

        def state(self, backend, state):
            with self.lock:
                told.append((state, backend))

    plan = make_plan(loader.load(), Selection(ops=["abs"], backends=["numpy"]), RunSettings(jobs=1))
    run_check(plan, progress=Listener())
    assert told == [("starting", "numpy"), ("running", "numpy"), ("result", "numpy"), ("finished", "numpy")]


def test_bench_progress_fits_80_columns_and_says_queued_and_done():
    clock = Clock()

    class Slot:
        def __init__(self, name):
            self.name = name

    show = BenchProgress([], [], None, stream=io.StringIO(), clock=clock)
    show.planned = {"keras3-tensorflow": 36, "keras3-openvino": 36, "tensorflow1": 36}
    show.done = dict.fromkeys(show.planned, 0)
    words = {n: show.status(n, 0.0) for n in show.planned}
    assert words == {"keras3-tensorflow": "starting 0:00", "keras3-openvino": "queued", "tensorflow1": "queued"}
    for i in range(36):
        clock.now = 10.0 + i
        show("keras3-tensorflow", {"op": "conv2d_transpose", "size": "large"})
    clock.now = 60.0
    show("keras3-openvino", {"op": "conv2d_transpose", "size": "large"})
    clock.now = 4000.0
    lines = screen(show.render_lines(80))
    assert max(len(line) for line in lines) <= 80, lines
    by_name = {line.split()[0]: line for line in lines}
    assert list(by_name) == list(show.planned)
    assert by_name["keras3-tensorflow"].split()[1] == "36/36" and by_name["keras3-tensorflow"].endswith("done in 0:45")
    assert by_name["keras3-openvino"].endswith("1:05:55 · conv2d_transpose large")
    assert by_name["tensorflow1"].endswith("queued")


def test_explore_bars_fit_80_columns():
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(width=80, record=True, file=io.StringIO(), color_system=None)
    bars = Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=explore_render.bar_width(80)),
        MofNCompleteColumn(),
        TextColumn("{task.fields[found]}"),
        TimeElapsedColumn(),
        console=console,
    )
    bars.add_task("explore keras3-tensorflow", total=1000, completed=999, found="1000 rejected")
    console.print(bars.make_tasks_table(bars.tasks))
    (line,) = console.export_text().splitlines()
    assert len(line) <= 80 and line.startswith("explore keras3-tensorflow ") and "999/1000 1000 rejected" in line


def test_bench_progress_in_turns_shows_both_releases_running_until_each_is_done():
    clock = Clock()
    old, new = "tensorflow1[keras=2.2.4]", "tensorflow1[keras=2.3.1]"
    for in_turns, waiting in ((True, "0:02 · dot small"), (False, "done in 0:01")):
        show = BenchProgress([], [], None, stream=io.StringIO(), clock=clock, in_turns=in_turns)
        show.planned = {old: 2, new: 2}
        show.done = dict.fromkeys(show.planned, 0)
        clock.now = show.started = 0.0
        for now, name in ((1.0, old), (2.0, new)):
            clock.now = now
            show(name, {"op": "dot", "size": "small"})
        assert show.status(old, 2.0) == waiting  # in turns, the one waiting its turn is not done
        clock.now = 3.0
        show(new, {"op": "dot", "size": "small"})
        assert show.status(new, 3.0) == "done in 0:02"
