"""Process hygiene under faults, per command: no worker outlives kbtool, however kbtool ends.

Every command that drives backend workers (check, explore, bench, backends, `pytest --kbtool`) is started on a
custom backend whose worker hangs at import (after starting a child of its own, as a real backend may), then ended
with SIGKILL (nothing of kbtool runs after it: the workers' watchdog must act) or SIGTERM. The worker and its child
must be gone within 5 s. Workers also run in a scratch directory of their own, and a dead worker's output is read
from its end.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from kbtool.runners import client as client_mod
from kbtool.runners.registry import launch_for
from kbtool.runners.session import BackendSession

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HANG_AT_IMPORT = """import os, subprocess, time
from kbtool.reference import *

child = subprocess.Popen(["sleep", "300"])  # a child in the worker's process group
with open(os.environ["HANG_MARKER"], "w") as fh:
    fh.write("{} {}".format(os.getpid(), child.pid))
time.sleep(300)
"""


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def wait_gone(pids, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


COMMANDS = {
    "check": ["-m", "kbtool", "check", "--op", "transpose", "--backend", "{module}", "--jobs", "1"],
    "explore": ["-m", "kbtool", "explore", "--op", "transpose", "--backend", "{module}", "--max-examples", "3"],
    "bench": ["-m", "kbtool", "bench", "--op", "abs", "--backend", "{module}", "--size", "small", "--mode", "eager"],
    "backends": ["-m", "kbtool", "backends", "--backend", "{module}"],
    "pytest": ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--kbtool", "--kbtool-op", "transpose"]
    + ["--kbtool-backend", "{module}"],
}


@pytest.fixture
def hung(custom_backend, tmp_path):
    """Start a command on a backend whose worker hangs at import; yields (proc, worker pids) once it hangs."""
    module = custom_backend("hangproc", "kb", HANG_AT_IMPORT)
    started = []

    def start(command):
        marker = tmp_path / "marker"
        env = dict(
            os.environ,
            HANG_MARKER=str(marker),
            KBTOOL_HOME=str(tmp_path / "home"),  # no backend env here: only numpy and the custom module start
            PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]),
        )
        argv = [sys.executable] + [a.format(module=module) for a in COMMANDS[command]]
        proc = subprocess.Popen(
            argv, cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        started.append(proc)
        deadline = time.monotonic() + 90
        while not (marker.exists() and len(marker.read_text().split()) == 2):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the worker never hung"
            time.sleep(0.05)
        pids = [int(p) for p in marker.read_text().split()]
        started.extend(pids)
        return proc, pids

    yield start
    for item in started:  # whatever a failing test left behind
        if isinstance(item, subprocess.Popen):
            if item.poll() is None:
                os.killpg(item.pid, signal.SIGKILL)
            item.communicate()
        elif alive(item):
            os.kill(item, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_kill_9_of_kbtool_leaves_no_worker(hung, command):
    proc, pids = hung(command)
    os.kill(proc.pid, signal.SIGKILL)  # nothing of kbtool runs after this
    proc.wait()
    assert wait_gone(pids, 5.0) == []


@pytest.mark.slow
@pytest.mark.parametrize("command, code", [("explore", 143), ("backends", 143), ("pytest", None), ("bench", 143)])
def test_sigterm_ends_the_command_at_once_and_leaves_no_worker(hung, command, code):
    proc, pids = hung(command)
    sent = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    took = time.monotonic() - sent
    assert wait_gone(pids, 5.0) == []
    assert "Traceback" not in err.decode(), err.decode()
    if code is not None:
        assert proc.returncode == code, err.decode()
        assert took < 3.0, took
    else:  # pytest ends on SIGTERM's default action; its workers die with it
        assert proc.returncode == -signal.SIGTERM


def test_a_worker_runs_in_a_scratch_directory_of_its_own(custom_backend, tmp_path, monkeypatch):
    source = (
        "import os\nfrom kbtool.reference import *\n"
        "open('left-by-the-backend.txt', 'w').write(os.getcwd())\n"
        "for name in os.listdir('.'):\n    os.remove(name) if name != 'left-by-the-backend.txt' else None\n"
    )
    module = custom_backend("cwdkb", "kb", source)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "precious.txt").write_text("the user's file")
    with BackendSession(module, launch_for(module)) as session:
        worker = session.worker()
        assert worker.ready, worker.hello
        scratch = worker.client._scratch
        assert scratch and os.path.realpath(scratch) != os.path.realpath(str(tmp_path))
        assert open(os.path.join(scratch, "left-by-the-backend.txt")).read() == os.path.realpath(scratch)
    assert (tmp_path / "precious.txt").read_text() == "the user's file"
    assert not (tmp_path / "left-by-the-backend.txt").exists()
    assert not os.path.exists(scratch)  # removed with its worker


def test_a_dead_workers_last_words_are_read_from_the_end_of_its_output(tmp_path):
    client = client_mod.WorkerClient(launch_for("numpy"))
    client._stderr = open(tmp_path / "out", "w+b")
    client._stderr.write(b"x" * (8 * 1024 * 1024) + b"\nfirst\nsecond\nthe last words\n")
    reads = []
    real_read = client._stderr.read

    class Spy:
        def __getattr__(self, name):
            return getattr(client._stderr_file, name)

        def read(self, n=-1):
            reads.append(n)
            return real_read(n)

    client._stderr_file, client._stderr = client._stderr, Spy()
    assert client.stderr_tail() == "first | second | the last words"
    assert reads and all(0 < n <= client_mod.TAIL_BYTES for n in reads)
    client._stderr = client._stderr_file
    client.stop()


def test_a_missing_interpreter_is_a_broken_hello_not_a_traceback(tmp_path):
    import dataclasses

    launch = dataclasses.replace(launch_for("numpy"), python=str(tmp_path / "gone" / "python"))
    with BackendSession("numpy", launch) as session:
        worker = session.worker()
    assert not worker.ready and "cannot start the worker" in worker.why_not_ready


NESTED_SIGNALS = """
import signal, sys
sys.path.insert(0, sys.argv[1])
from kbtool.runners.session import Cancel

cancel = Cancel()
calls = [0]

def handler(signum, frame):  # as interrupts.Interrupts and bench's handler do: set the run's Cancel
    calls[0] += 1
    cancel.set("SIGALRM")

signal.signal(signal.SIGALRM, handler)
signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)  # signals land inside set(), and inside their own handler
for _ in range(200000):
    cancel.set("main")
signal.setitimer(signal.ITIMER_REAL, 0, 0)
print(calls[0])
"""


def test_a_signal_inside_a_signal_handler_never_deadlocks_the_cancel():
    """Three SIGTERMs in a row hung `kbtool bench` for ever: the second handler waited on the lock of the
    threading.Event the first was setting. Cancel.set is now re-entrant; this stress hangs the old one."""
    proc = subprocess.run([sys.executable, "-c", NESTED_SIGNALS, REPO], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) > 20  # the handler really ran, many times, while set() ran
