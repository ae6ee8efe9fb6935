"""Defects the fresh adversarial pass of issue #32 found (scripts/adversarial/attacks.py), each pinned here: the
attack's id is in the test's docstring, so `python scripts/adversarial/attacks.py -k ID` runs it again."""

import errno
import os
import stat
import threading
import time

import pytest
from click.testing import CliRunner

from kbtool import files
from kbtool.cli import main
from kbtool.runners import probe_cache
from kbtool.runners.envs import interpreters

from .helpers import register_ext

GPU = os.path.join(os.path.dirname(__file__), "fixtures", "gpu_h100")


def within(seconds, fn):
    """fn's result, or a failure when it has not returned within `seconds` (a hang, not a wait for the suite)."""
    box = {}
    thread = threading.Thread(target=lambda: box.update(value=fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return box.get("value")


@pytest.mark.parametrize("kind", ["fifo", "devzero"])
def test_a_probe_cache_that_is_a_fifo_or_a_device_is_no_cache_not_a_hang(tmp_path, kind):
    """probes-fifo, probes-devzero: `kbtool backends` hung on a FIFO and read /dev/zero until it was killed."""
    path = tmp_path / "probes.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    cache = within(10, lambda: probe_cache.ProbeCache(str(path)))
    assert cache._entries == {}


def test_report_devices_says_a_file_it_cannot_write_in_one_line(tmp_path, monkeypatch):
    """devices-ulimit: a file-size limit (EFBIG) writing -o was a traceback, exit 1."""

    def full(path, text):
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    monkeypatch.setattr(files, "write_atomic", full)
    out = str(tmp_path / "d.json")
    result = CliRunner().invoke(
        main,
        ["report", "devices", os.path.join(GPU, "cpu.json.gz"), os.path.join(GPU, "gpu-default.json.gz"), "-o", out],
    )
    assert result.exit_code == 2, result.output
    assert f"cannot write {out}: File too large" in result.output
    assert "Traceback" not in result.output


def fake_interpreter(tmp_path):
    """A 'python' that never answers, as a shim whose child hangs: the child's pid is written beside it."""
    pid_file = tmp_path / "child.pid"
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\nsleep 600 &\necho $! > {pid_file}\nwait\n")
    script.chmod(0o755)
    return str(script), pid_file


def gone(pid, seconds=5.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def test_an_interpreter_that_does_not_answer_is_killed_with_what_it_started(tmp_path, monkeypatch):
    """env-install-fake-py-hangs: the probe's timeout killed the interpreter and left its child running."""
    monkeypatch.setattr(interpreters, "PROBE_SECONDS", 1.0)
    python, pid_file = fake_interpreter(tmp_path)
    version, why = within(20, lambda: interpreters.probe(python))
    assert version is None and why.startswith("did not answer")
    pid = int(pid_file.read_text())
    assert gone(pid), f"the interpreter's child {pid} outlived the probe"


def test_env_use_of_an_interpreter_that_never_answers_fails_in_seconds_not_600(tmp_path, monkeypatch):
    """env-use-fake-hangs: `env use` gave a silent interpreter the import's 600 s; now the version probe's."""
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(interpreters, "PROBE_SECONDS", 1.0)
    register_ext(monkeypatch)
    python, pid_file = fake_interpreter(tmp_path)
    result = within(30, lambda: CliRunner().invoke(main, ["env", "use", "ext", "--python", python]))
    assert result.exit_code == 2, result.output
    assert "did not start within 1 s (killed); nothing was registered" in result.output
    assert gone(int(pid_file.read_text()))
    assert not os.path.exists(tmp_path / "home" / "envs" / "ext")


def test_an_atomic_write_through_a_link_to_a_device_refuses_and_leaves_the_device(tmp_path):
    """probes-devzero: probes.json linked to /dev/zero made `kbtool backends` replace /dev/zero with a file."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "probes.json"
    link.symlink_to(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        files.write_atomic(str(link), "{}")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    cache = probe_cache.ProbeCache(str(link))
    cache._changed = True
    assert "not a regular file" in cache.save()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_machine_where_no_file_can_be_written_is_one_line_not_a_traceback(tmp_path):
    """probes-no-file-at-all: under `ulimit -f 0` (as on a full disk) Python's tempfile finds no usable folder in
    the worker client; any OSError no command expected ends kbtool in one line, exit 2."""
    import resource
    import subprocess
    import sys

    def no_file_at_all():
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, KBTOOL_HOME=str(tmp_path / "home"), PYTHONPATH=root, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [sys.executable, "-m", "kbtool", "backends", "--backend", "tests.fixtures.tf32_backend"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=no_file_at_all,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("kbtool: error: ")
