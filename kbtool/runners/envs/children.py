"""The child processes an `env` command starts (an interpreter's probe, venv, pip): each one in a process group of
its own, waited on for a bounded time with a progress line every few seconds saying what kbtool waits for, and
killed with its whole group when the wait ends early (its bound passed, or SIGINT/SIGTERM: Children)."""

import os
import signal
import subprocess
import sys
import time
from typing import Any, Callable, List, Optional, Sequence

PROGRESS_SECONDS = 5.0  # a line this often while a child runs (after the first PROGRESS_SECONDS)

_running: List["subprocess.Popen[bytes]"] = []  # the children being waited on now: what a signal kills


def _stderr(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def wait(
    argv: Sequence[str],
    what: str,
    timeout: float,
    progress: Optional[Callable[[str], None]] = None,
    **popen: Any,
) -> "subprocess.CompletedProcess[bytes]":
    """subprocess.run(argv, timeout=timeout, **popen), the child in a process group of its own: every
    PROGRESS_SECONDS a line to `progress` (default: stderr) says "waiting for WHAT (N s of TIMEOUT s)"; when
    `timeout` passes, or the wait is interrupted (KeyboardInterrupt, interrupts.Interrupted), the child's whole group
    is killed before subprocess.TimeoutExpired (or the interrupt) goes on."""
    say = progress or _stderr
    if popen.pop("capture_output", False):
        popen.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    started = time.monotonic()
    proc: subprocess.Popen[bytes] = subprocess.Popen(list(argv), start_new_session=True, **popen)
    _running.append(proc)
    try:
        while True:
            left = timeout - (time.monotonic() - started)
            if left <= 0:
                kill(proc)
                proc.communicate()
                raise subprocess.TimeoutExpired(list(argv), timeout)
            try:
                out, err = proc.communicate(timeout=min(PROGRESS_SECONDS, left))
            except subprocess.TimeoutExpired:
                waited = time.monotonic() - started
                if waited < timeout:
                    say(f"kbtool: waiting for {what} ({waited:.0f} s of {timeout:g} s)")
                continue
            return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
    except BaseException:
        kill(proc)
        raise
    finally:
        if proc in _running:
            _running.remove(proc)


def kill(proc: "subprocess.Popen[Any]") -> None:
    """Kill `proc`'s process group (it leads one: `wait` starts it so) and reap it; never an exception."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # its group: what it started too, even once it has exited
    except OSError:
        pass
    try:
        proc.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        pass


class Children:
    """What interrupts.Interrupts cancels during an `env` command: every child being waited on, killed."""

    reason: Optional[str] = None

    def set(self, reason: str = "cancelled") -> None:
        self.reason = self.reason or reason
        self.kill_all()

    def is_set(self) -> bool:
        return self.reason is not None

    def kill_all(self) -> None:
        for proc in list(_running):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
