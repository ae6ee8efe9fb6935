"""Faults during a check run: a check is never lost, never orphans a process, never lets one bad reply kill the
run, and never exits green on nothing.

    signals     SIGINT / SIGTERM stop the run, kill every worker process group, write the partial report
                (marked `incomplete`) to every -o path, exit 130 / 143 within seconds even with a hung worker;
                a second signal exits at once; no child outlives kbtool
    replies     a reply the verdicts cannot read (datetime64, strings, structured arrays, ...) costs only its case;
                an exception in one backend's thread costs only that backend
    writes      outputs checked before the run (/proc); one path failing at the end does not stop the others;
                concurrent writers; backend text escaped per format and always encodable
    flags       --timeout takes a finite number of seconds in (0, 86400]
    environment the caller's KERAS_BACKEND / KERAS_HOME never reach a worker
    nothing     a broken backend or a selection that checks nothing is never green

Custom backend modules run on kbtool's own Python (the `custom_backend` fixture puts them on PYTHONPATH).
"""

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from click.testing import CliRunner
from rich.console import Console

import kbtool
from kbtool import reports
from kbtool.check.run import run_check
from kbtool.cli import main
from kbtool.plan import Selection, make_plan
from kbtool.reports import html, junit, markdown, terminal
from kbtool.reports.report import validate
from kbtool.reports.verdict import exit_code
from kbtool.runners.base import Launch, kbtool_home
from kbtool.runners.client import WorkerClient
from kbtool.runners.messages import Reply, Request
from kbtool.runners.registry import launch_for
from kbtool.runners.session import BackendSession, Cancel, Expected, Worker
from kbtool.settings import RunSettings
from kbtool.specs import loader

REPO = os.path.dirname(os.path.dirname(os.path.abspath(kbtool.__file__)))  # the kbtool under test
SPEC = loader.load()
# the results one backend gives for transpose: every case in each of its modes
TRANSPOSE = sum(len(case.modes) for _, case in make_plan(SPEC, Selection(ops=["transpose"], backends=["numpy"])).work)
_FIRST = make_plan(SPEC, Selection(ops=["transpose"], backends=["numpy"])).work[0][1]
FIRST_TRANSPOSE, FIRST_MODE = _FIRST.id, _FIRST.modes[0]  # the case (and its mode) a worker runs first
TRANSPOSE_EAGER = ["example:variable", "int32", "rank3", "vector"]  # transpose's cases that run eagerly


def invoke(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env)


def assert_no_traceback(result):
    uncaught = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not uncaught, f"TRACEBACK: {type(result.exception).__name__}: {result.exception}"
    assert "Traceback" not in result.stderr + result.stdout


def error_lines(result):
    return [line for line in result.stderr.splitlines() if line.startswith("kbtool: error:")]


def temp_files(folder):
    return sorted(name for name in os.listdir(str(folder)) if name.endswith(".tmp"))


def alive(pid):
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def wait_gone(pids, seconds=3.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def processes_mentioning(text):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if text.encode() in fh.read() and alive(int(pid)):
                    found.append(int(pid))
        except OSError:
            pass
    return found


# ------------------------------------------------------------------------------------------------ replies

# transpose returns each of these for its rank-3 input (the `rank3` case) and the right answer otherwise
BAD_REPLIES = {
    "datetime64": 'np.zeros((4, 3, 2), dtype="datetime64[s]")',
    "timedelta64": 'np.zeros((4, 3, 2), dtype="timedelta64[s]")',
    "str_array": 'np.full((4, 3, 2), "abc")',
    "bytes_array": 'np.full((4, 3, 2), b"ab")',
    "structured": 'np.zeros((4, 3, 2), dtype=[("a", "f4"), ("b", "i4")])',
    "complex": 'np.zeros((4, 3, 2), dtype="complex128")',
    "float16_nan": 'np.full((4, 3, 2), np.nan, dtype="float16")',
    "python_str": '"a string"',
    "none": "None",
    "dict": '{"a": 1}',
    "mixed_list": '[[1, "a"]]',
    "huge_int": "2 ** 70",
    "scalar_array": "np.float32(1.5)",
}
UNREADABLE = {"datetime64", "timedelta64", "str_array", "bytes_array", "structured"}  # they raised in the verdicts

BAD_SOURCE = """import numpy as np
from kbtool.reference import *
from kbtool.reference import transpose as _transpose

def transpose(x):
    if np.ndim(x) == 3:
        return {value}
    return _transpose(x)
"""


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize("kind", sorted(BAD_REPLIES))
def test_a_bad_reply_costs_only_its_case(kind, custom_backend, tmp_path):
    module = custom_backend("bad_" + kind, "kb", BAD_SOURCE.format(value=BAD_REPLIES[kind]))
    the_plan = make_plan(SPEC, Selection(ops=["transpose"], backends=[module], modes=["eager"]))
    report = run_check(the_plan, known_entries=[])
    assert validate(report) == []
    by_case = {r["case"]: r for r in report["results"]}
    assert sorted(by_case) == TRANSPOSE_EAGER  # every case has its result
    assert by_case["rank3"]["status"] in ("fail", "error") and by_case["rank3"]["repro"]
    assert all(r["status"] == "pass" for case, r in by_case.items() if case != "rank3")
    if kind in UNREADABLE:
        assert by_case["rank3"]["status"] == "error"
        assert by_case["rank3"]["message"].startswith("kbtool could not compare the reply: ")
    assert exit_code(report) == 1
    for fmt in ("json", "markdown", "html", "junit"):  # every view renders it, every file is written
        reports.render(report, fmt)
    terminal.render(report, Console(file=io.StringIO()))
    for ext in ("json", "md", "html", "xml"):
        reports.write(report, str(tmp_path / ("r." + ext)))
    assert json.load(open(str(tmp_path / "r.json"))) == json.loads(json.dumps(report))


def test_a_bad_reply_never_loses_the_other_backends_results(custom_backend, tmp_path):
    module = custom_backend("bad_dt_cli", "kb", BAD_SOURCE.format(value=BAD_REPLIES["datetime64"]))
    target = tmp_path / "r.json"
    result = invoke("check", "--op", "transpose", "--backend", "numpy", "--backend", module, "-o", str(target))
    assert_no_traceback(result)
    assert result.exit_code == 1
    report = json.loads(target.read_text())
    assert validate(report) == []
    counts = {}
    for r in report["results"]:
        counts[r["backend"]] = counts.get(r["backend"], 0) + 1
    assert counts == {"numpy": TRANSPOSE, module: TRANSPOSE}
    numpy_statuses = {(r["case"], r["mode"]): r["status"] for r in report["results"] if r["backend"] == "numpy"}
    statuses = {(r["case"], r["mode"]): r["status"] for r in report["results"] if r["backend"] == module}
    numpy_statuses[("rank3", "eager")] = "error"
    assert statuses == numpy_statuses  # the same as numpy's, but for its one case


def test_an_exception_in_one_backends_thread_costs_only_that_backend(custom_backend, monkeypatch):
    module = custom_backend("plainkb", "kb", "from kbtool.reference import *\n")
    real_judged, calls = BackendSession._judged, []

    def flaky_judged(self, *args):
        if self.name == "numpy":
            calls.append(self.name)
            if len(calls) == 3:
                raise RuntimeError("boom in kbtool")
        return real_judged(self, *args)

    def failing_progress(backend, result):
        raise BrokenPipeError("stderr is gone")  # a progress line that cannot be printed costs nothing

    monkeypatch.setattr(BackendSession, "_judged", flaky_judged)
    the_plan = make_plan(SPEC, Selection(ops=["transpose"], backends=["numpy", module]))
    report = run_check(the_plan, known_entries=[], progress=failing_progress)
    assert validate(report) == []
    info = {b["name"]: b for b in report["backends"]}
    assert info["numpy"]["status"] == "broken"
    assert info["numpy"]["reason"] == (
        "kbtool failed while running this backend (2 results kept): RuntimeError: boom in kbtool"
    )
    assert info[module]["status"] == "available"
    backends = [r["backend"] for r in report["results"]]
    assert backends.count(module) == TRANSPOSE and backends.count("numpy") == 2
    assert report["summary"]["ok"] is False and report["summary"]["could_not_start"] == ["numpy"]


def test_judge_raising_is_an_error_result():
    case = [c for _, c in make_plan(SPEC, Selection(ops=["transpose"], backends=["numpy"])).work if c.id == "rank3"][0]

    class Client:
        def request(self, request):
            return Reply(
                {"status": "ok", "outputs": [{"kind": "array", "index": 0, "dtype": "<U3", "shape": [4, 3, 2]}]},
                [np.full((4, 3, 2), "abc")],
            )

    expected = (
        {"status": "ok", "outputs": [{"kind": "array", "index": 0, "dtype": "float32", "shape": [4, 3, 2]}]},
        [np.zeros((4, 3, 2), "float32")],
    )
    session = BackendSession("alpha", launch_for("numpy"))
    result = session._judged(Worker(Client(), {"status": "ready"}), {}, case, "eager", Expected(reply=expected))
    assert result.status == "error" and result.message.startswith("kbtool could not compare the reply: ValueError")
    assert result.repro.startswith("kbtool check --op transpose --case rank3 --backend alpha")


# ------------------------------------------------------------------------------------------------ signals

HANG_SOURCE = """import os, subprocess, time
from kbtool.reference import *
from kbtool.reference import transpose as _transpose

_calls = [0]
if os.environ.get("HANG_AT") == "import":
    child = subprocess.Popen(["sleep", "300"])  # a child in the worker's process group
    with open(os.environ["HANG_MARKER"], "w") as fh:
        fh.write("{} {}".format(os.getpid(), child.pid))
    time.sleep(300)


def transpose(x):
    _calls[0] += 1
    if _calls[0] >= 2:  # the second case hangs
        child = subprocess.Popen(["sleep", "300"])
        with open(os.environ["HANG_MARKER"], "w") as fh:
            fh.write("{} {}".format(os.getpid(), child.pid))
        time.sleep(300)
    return _transpose(x)
"""


@pytest.fixture
def reaper():
    """Kills what a failing test left running: kbtool processes (by session) and pids read from markers."""
    procs, pids = [], []
    yield procs, pids
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def _default_sigint():
    # as in a terminal, where Ctrl-C reaches kbtool: a suite started in the background (`cmd &`) would pass on an
    # ignored SIGINT, and kbtool rightly keeps what its caller chose (see check's signal handlers)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_check(module, folder, reaper, hang_at="case"):
    marker = folder / "marker"
    env = dict(
        os.environ,
        HANG_MARKER=str(marker),
        HANG_AT=hang_at,
        PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]),
    )
    # one worker (--jobs 1): under load a second one would join the lane and run a case before the signal lands
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kbtool",
            "check",
            "--op",
            "transpose",
            "--backend",
            module,
            "--jobs",
            "1",
            "-o",
            str(folder / "r.json"),
            "-o",
            str(folder / "r.md"),
        ],
        cwd=str(folder),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=_default_sigint,
    )
    reaper[0].append(proc)
    deadline = time.monotonic() + 60
    while not (marker.exists() and len(marker.read_text().split()) == 2):  # the worker is hung now
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.1)
    pids = [int(p) for p in marker.read_text().split()]
    reaper[1].extend(pids)
    return proc, pids


@pytest.mark.slow
@pytest.mark.parametrize(
    "signame, code, hang_at",
    [
        ("SIGINT", 130, "case"),
        ("SIGTERM", 143, "case"),
        ("SIGINT", 130, "import"),  # the worker hangs before it is ready
    ],
)
def test_a_signal_writes_the_partial_report_and_kills_every_worker(
    signame, code, hang_at, custom_backend, tmp_path, reaper
):
    package = f"hang_{signame.lower()}_{hang_at}_{os.getpid()}"  # unique: other runs may be about
    module = custom_backend(package, "kb", HANG_SOURCE)
    proc, pids = start_check(module, tmp_path, reaper, hang_at)
    started = time.monotonic()
    proc.send_signal(getattr(signal, signame))
    out, err = proc.communicate(timeout=30)
    took = time.monotonic() - started
    assert proc.returncode == code and took < 5, (proc.returncode, took, err.decode())
    assert "Traceback" not in err.decode()
    assert wait_gone(pids) == [] and processes_mentioning(package) == []  # the worker and its child
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)
    report = json.loads((tmp_path / "r.json").read_text())
    assert validate(report) == []
    incomplete = report["incomplete"]
    assert incomplete["signal"] == signame and incomplete["planned"] == TRANSPOSE
    assert report["summary"]["ok"] is False
    if hang_at == "case":
        assert [(r["case"], r["mode"], r["status"]) for r in report["results"]] == [
            (FIRST_TRANSPOSE, FIRST_MODE, "pass")
        ]
        assert incomplete["ran"] == 1 and f"1 of the {TRANSPOSE} planned results ran" in incomplete["note"]
        assert report["backends"][0]["status"] == "available"
    else:
        assert report["results"] == [] and incomplete["ran"] == 0
        assert report["backends"][0]["reason"] == f"interrupted ({signame}) before its worker was ready"
    markdown_text = (tmp_path / "r.md").read_text()
    assert f"**Incomplete: interrupted by {signame}" in markdown_text
    assert f"incomplete (interrupted by {signame}" in " ".join(out.decode().split())  # terminal summary
    assert temp_files(tmp_path) == []


@pytest.mark.slow
def test_a_second_signal_exits_at_once_and_still_kills_the_workers(custom_backend, tmp_path, reaper):
    package = f"hang_twice_{os.getpid()}"
    module = custom_backend(package, "kb", HANG_SOURCE)
    proc, pids = start_check(module, tmp_path, reaper)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert proc.returncode == 130 and time.monotonic() - started < 5
    assert wait_gone(pids) == [] and processes_mentioning(package) == []


def test_cancel_ends_an_in_process_run_with_the_results_that_ran(custom_backend, tmp_path, monkeypatch, reaper):
    module = custom_backend("hang_inproc", "kb", HANG_SOURCE)
    marker = tmp_path / "marker"
    monkeypatch.setenv("HANG_MARKER", str(marker))
    cancel = Cancel()

    def cancel_when_hung():
        while not (marker.exists() and len(marker.read_text().split()) == 2):
            time.sleep(0.02)
        cancel.set("SIGINT")

    threading.Thread(target=cancel_when_hung, daemon=True).start()
    started = time.monotonic()
    report = run_check(
        make_plan(SPEC, Selection(ops=["transpose"], backends=["numpy", module])), known_entries=[], cancel=cancel
    )
    assert time.monotonic() - started < 10
    pids = [int(p) for p in marker.read_text().split()]
    reaper[1].extend(pids)
    assert wait_gone(pids) == []
    assert validate(report) == [] and report["summary"]["ok"] is False and exit_code(report) == 1
    assert report["incomplete"]["ran"] == len(report["results"]) and report["incomplete"]["planned"] == 2 * TRANSPOSE
    assert [r["case"] for r in report["results"] if r["backend"] == module] == [FIRST_TRANSPOSE]
    assert report["stale_known_differences"] == []  # an interrupted run judges no known difference stale


@pytest.mark.slow
def test_worker_client_kill_from_another_thread_cancels_the_request(custom_backend, tmp_path, monkeypatch, reaper):
    module = custom_backend("hang_client", "kb", HANG_SOURCE)
    monkeypatch.setenv("HANG_MARKER", str(tmp_path / "marker"))
    client = WorkerClient(launch_for(module))
    assert client.start()["status"] == "ready"
    request = {"cmd": "run", "op": "transpose", "mode": "eager", "args": [{"tensor": 0}]}
    x = np.zeros((2, 2), "float32")
    request = Request.from_header(request, [x])
    assert client.request(request).status == "ok"
    replies = []
    thread = threading.Thread(target=lambda: replies.append(client.request(request)))
    thread.start()
    while not (tmp_path / "marker").exists() or len((tmp_path / "marker").read_text().split()) < 2:
        time.sleep(0.02)
    reaper[1].extend(int(p) for p in (tmp_path / "marker").read_text().split())
    started = time.monotonic()
    client.kill()
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - started < 4
    assert replies[0][0]["status"] == "cancelled"
    pids = [int(p) for p in (tmp_path / "marker").read_text().split()]
    assert wait_gone(pids) == []
    assert client.request(request).status == "cancelled"  # and no worker is started again
    assert client.proc is None or client.proc.poll() is not None
    client.stop()


# ------------------------------------------------------------------------------------------------ incomplete views


def test_an_incomplete_report_is_never_ok_and_every_view_says_so():
    from .helpers import PASSES, available, make_report

    report = make_report([available("alpha")], PASSES)
    assert report["summary"]["ok"] is True
    report["incomplete"] = {
        "signal": "SIGTERM",
        "planned": 8,
        "ran": 2,
        "note": "interrupted by SIGTERM: 2 of the 8 planned results ran; the others are absent",
    }
    from kbtool.reports.verdict import summarize

    report["summary"] = summarize(report)
    assert validate(report) == [] and report["summary"]["ok"] is False and exit_code(report) == 1
    console = Console(file=io.StringIO(), width=300)
    terminal.render(report, console)
    assert (
        console.file.getvalue()
        .rstrip()
        .splitlines()[-1]
        .startswith(
            "2 results in 1.0 s, pass as is 100.0 % (2/2): incomplete (interrupted by SIGTERM: 2 of the 8 planned"
        )
    )
    assert "**Incomplete: interrupted by SIGTERM: 2 of the 8 planned results ran" in markdown.render(report)
    assert '<p class="incomplete"><strong>Incomplete:</strong> interrupted by SIGTERM' in html.render(report)
    suites = {s.get("name"): s for s in ET.fromstring(junit.render(report))}
    assert suites["kbtool.incomplete"].get("errors") == "1"
    bad = dict(report, incomplete={"signal": "SIGINT"})
    assert validate(bad) == ["incomplete: 'note' is a required property"]


# ------------------------------------------------------------------------------------------------ writes


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_an_unwritable_output_is_refused_before_the_run(tmp_path):
    ok = tmp_path / "ok.json"
    result = invoke("check", "--op", "transpose", "--backend", "numpy", "-o", str(ok), "-o", "/proc/r.json")
    assert_no_traceback(result)
    assert result.exit_code == 2 and error_lines(result) == [
        "kbtool: error: cannot write /proc/r.json: No such file or directory"
    ]
    assert result.stderr.count("\n") == 1 and result.stdout == "" and not ok.exists()  # refused before the run


def test_a_write_failing_at_the_end_does_not_stop_the_others(tmp_path, monkeypatch):
    from kbtool import files

    real = files.write_atomic
    bad = [str(tmp_path / "a.json"), str(tmp_path / "c.html")]

    def write_atomic(path, text):
        if path in bad:
            raise OSError(30, "Read-only file system")
        return real(path, text)

    monkeypatch.setattr(files, "write_atomic", write_atomic)
    outputs = [str(tmp_path / n) for n in ("a.json", "b.md", "c.html", "d.xml")]
    result = invoke(
        "check", "--op", "transpose", "--case", "rank3", "--backend", "numpy", *[a for p in outputs for a in ("-o", p)]
    )
    assert_no_traceback(result)
    assert result.exit_code == 2
    assert error_lines(result) == [
        "kbtool: error: cannot write {}: Read-only file system; cannot write {}: Read-only file system".format(*bad)
    ]
    assert (tmp_path / "b.md").read_text().startswith("# kbtool parity report")
    assert ET.parse(str(tmp_path / "d.xml")).getroot().tag == "testsuites"
    assert "results in" in result.stdout  # the terminal summary is still shown


def test_concurrent_runs_writing_one_output(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kbtool",
                "check",
                "--op",
                "transpose",
                "--case",
                "rank3",
                "--backend",
                "numpy",
                "-o",
                "r.json",
                "-o",
                "r.md",
            ],
            cwd=str(tmp_path),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], errors
    assert validate(json.loads((tmp_path / "r.json").read_text())) == []
    assert temp_files(tmp_path) == [] and sorted(os.listdir(str(tmp_path))) == ["r.json", "r.md"]


NASTY = "bad \udcff \x1b[31mred\x1b[0m \x07bell <script>alert(1)</script> | `tick`"
NASTY_SOURCE = f"""from kbtool.reference import *

def transpose(x):
    raise ValueError({NASTY!r})
"""


def test_backend_text_is_escaped_per_format_and_always_encodable(custom_backend, tmp_path):
    module = custom_backend("nastykb", "kb", NASTY_SOURCE)
    out = {ext: tmp_path / ("r." + ext) for ext in ("json", "md", "html", "xml")}
    result = invoke(
        "check",
        "--op",
        "transpose",
        "--case",
        "rank3",
        "--backend",
        module,
        *[a for p in out.values() for a in ("-o", str(p))],
    )
    assert_no_traceback(result)
    assert result.exit_code == 1 and error_lines(result) == []
    assert temp_files(tmp_path) == [] and all(p.stat().st_size > 0 for p in out.values())
    report = json.loads(out["json"].read_text())
    assert validate(report) == [] and "\udcff" in report["results"][0]["message"]  # JSON keeps it, escaped
    md = out["md"].read_text(encoding="utf-8")
    assert "<script>" not in md and "&lt;script&gt;alert(1)&lt;/script&gt; \\| \\`tick\\`" in md and "\x1b" not in md
    page = out["html"].read_text(encoding="utf-8")
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\x1b" not in page and "\x07" not in page
    ET.parse(str(out["xml"]))
    terminal_text = result.stdout
    assert "\x1b" not in terminal_text and "\x07" not in terminal_text and "\udcff" not in terminal_text
    assert "ValueError: bad ? red bell <script>alert(1)</script> | `tick`" in " ".join(terminal_text.split())


# ------------------------------------------------------------------------------------------------ flags


@pytest.mark.parametrize(
    "value", ["nan", "inf", "-inf", "1e308", "-1", "0", "0.0", "1e-400", "86400.5", "abc", "", "1,5"]
)
def test_bad_timeouts_are_one_line_usage_errors(value):
    result = invoke("check", "--op", "transpose", "--backend", "numpy", "--timeout", value)
    assert_no_traceback(result)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [
        f"kbtool: error: --timeout takes a number of seconds, more than 0 and at most 86400 (got {value!r})"
    ]


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--timeout"], "Option '--timeout' requires an argument."),
        (["--seed", "x"], "Invalid value for '--seed': 'x' is not a valid integer."),
        (["--mode", "lazy"], "Invalid value for '--mode'"),
        (["--jobs", "0"], "Invalid value for '--jobs' / '-j': 0 is not in the range 1<=x<=256."),
    ],
)
def test_other_bad_flags_are_one_line_usage_errors(args, needle):
    result = invoke("check", "--op", "transpose", "--backend", "numpy", *args)
    assert_no_traceback(result)
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("kbtool: error: ") and needle in line and line.endswith(" check -h`)")


@pytest.mark.parametrize("value, seconds", [("86400", 86400.0), ("1e-3", 0.001)])
def test_good_timeouts_reach_the_worker_client(value, seconds, monkeypatch):
    from kbtool.runners import client as client_mod

    seen = []
    real = client_mod.WorkerClient.__init__

    def spy(self, launch, keras_config=None, case_timeout=None, **kw):
        seen.append(case_timeout)
        real(self, launch, keras_config=keras_config, case_timeout=86400, **kw)

    monkeypatch.setattr(client_mod.WorkerClient, "__init__", spy)
    result = invoke("check", "--op", "transpose", "--case", "rank3", "--backend", "numpy", "--timeout", value)
    assert_no_traceback(result)
    assert result.exit_code == 0 and seen == [seconds]


def test_a_short_timeout_is_that_timeout(custom_backend, tmp_path, monkeypatch, reaper):
    module = custom_backend("hang_timeout", "kb", HANG_SOURCE)
    monkeypatch.setenv("HANG_MARKER", str(tmp_path / "marker"))
    report = run_check(
        make_plan(
            SPEC,
            Selection(ops=["transpose"], backends=[module], case_patterns=["rank3"]),
            RunSettings(case_timeout=0.5),
        ),
        known_entries=[],
    )
    reaper[1].extend(int(p) for p in (tmp_path / "marker").read_text().split())
    assert [r["status"] for r in report["results"]] == ["pass", "timeout"]
    assert report["results"][1]["message"] == "no answer within 0.5 s; worker killed"
    assert wait_gone([int(p) for p in (tmp_path / "marker").read_text().split()]) == []


# ------------------------------------------------------------------------------------------------ environment


def test_the_callers_keras_backend_and_keras_home_never_reach_a_worker(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_BACKEND", "theano")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "mine"))
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbtool"))
    env = launch_for("numpy").environ()
    assert "KERAS_BACKEND" not in env
    assert os.path.dirname(env["KERAS_HOME"]) == os.path.join(kbtool_home(), "keras_home")
    assert json.loads(open(os.path.join(env["KERAS_HOME"], "keras.json")).read()) == {
        "epsilon": 1e-07,
        "floatx": "float32",
        "image_data_format": "channels_last",
    }  # the documented defaults
    own = Launch(backend="theano", python=sys.executable, module="keras.backend", env={"KERAS_BACKEND": "cntk"})
    assert own.environ()["KERAS_BACKEND"] == "cntk"  # only a recipe's own keras_backend sets it


ENV_SOURCE = """import os
from kbtool.reference import *
from kbtool.reference import transpose as _transpose

def transpose(x):
    if "KERAS_BACKEND" in os.environ:
        raise RuntimeError("KERAS_BACKEND reached the worker: " + os.environ["KERAS_BACKEND"])
    return _transpose(x)
"""


def test_keras_backend_in_the_callers_environment_changes_nothing(custom_backend):
    module = custom_backend("envkb", "kb", ENV_SOURCE)
    result = invoke(
        "check",
        "--op",
        "transpose",
        "--case",
        "rank3",
        "--backend",
        "numpy",
        "--backend",
        module,
        env={"KERAS_BACKEND": "theano"},
    )
    assert_no_traceback(result)
    assert result.exit_code == 0, result.stdout


# ------------------------------------------------------------------------------------------------ nothing checked


@pytest.mark.parametrize("backend", ["nosuch.module", "x.y@", "exits.kb"])
def test_a_backend_that_cannot_start_is_never_green(backend, custom_backend, tmp_path):
    custom_backend("exits", "kb", "raise SystemExit(0)\n")
    xml = tmp_path / "r.xml"
    result = invoke("check", "--op", "transpose", "--backend", backend, "-o", str(xml))
    assert_no_traceback(result)
    assert result.exit_code == 1
    verdict = " ".join(result.stdout.split())
    assert f"could not start: {backend}, nothing was checked" in verdict
    suites = {s.get("name"): s for s in ET.parse(str(xml)).getroot()}
    assert suites["kbtool." + backend].get("errors") == "1"


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--op", "transpose", "--case", "nomatch*"], "nothing to check: no case of transpose matches --case nomatch*"),
        (["--op", "sum", "--examples"], "nothing to check: no case of sum matches --examples (no documented example)"),
    ],
)
def test_a_selection_that_checks_nothing_is_a_usage_error(args, needle):
    result = invoke("check", "--backend", "numpy", *args)
    assert_no_traceback(result)
    assert result.exit_code == 2 and result.stderr.splitlines() == ["kbtool: error: " + needle]
