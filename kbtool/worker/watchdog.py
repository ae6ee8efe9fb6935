# py36-compatible
"""A worker dies with its controller, however the controller ends (SIGKILL included).

At start the worker forks a sentinel that holds no file descriptor of the worker's (so a crashed worker's pipes
still close) and watches the controller's pid. Once the controller is gone, the sentinel kills the worker's whole
process group (the worker leads its own session). A process rather than a thread: a backend hung in C code that
holds the GIL cannot stop it. When the worker goes first, the sentinel leaves too.
"""

import os
import signal
import time

POLL_SECONDS = 0.25
ENV = "KBTOOL_CONTROLLER_PID"


def _identity(pid):
    """(start time, state) of a process from /proc, or None when it is gone; a reused pid has another start time."""
    try:
        with open("/proc/{}/stat".format(pid)) as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[19], fields[0]  # starttime (field 22), state (field 3)


def _alive(pid, started):
    found = _identity(pid)
    if found is None:
        try:
            os.kill(pid, 0)  # no /proc (not Linux): the signal test, zombies and reused pids aside
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return started is None
    return found[1] not in ("Z", "X") and (started is None or found[0] == started)


def guard(environ=None):
    """Fork the sentinel when the controller named itself (KBTOOL_CONTROLLER_PID); the worker returns at once."""
    environ = os.environ if environ is None else environ
    try:
        controller = int(environ.get(ENV, ""))
    except ValueError:
        return None
    worker = os.getpid()
    leader = os.getpgrp() == worker  # started in a session of its own: its group is the worker and what it started
    identity = _identity(controller)
    if identity is None and not _alive(controller, None):
        _kill(worker, leader)  # the controller is already gone: nobody will read this worker
    started = identity[0] if identity else None
    try:
        pid = os.fork()
    except OSError:
        return None
    if pid:
        return pid
    try:  # the sentinel
        os.closerange(0, 65536)
        while True:
            time.sleep(POLL_SECONDS)
            if os.getppid() != worker:
                os._exit(0)  # the worker ended: nothing to guard
            if not _alive(controller, started):
                _kill(worker, leader)
                os._exit(0)
    finally:
        os._exit(0)


def _kill(worker, leader):
    try:
        if leader:
            os.killpg(worker, signal.SIGKILL)  # the sentinel is in the group too
        else:
            os.kill(worker, signal.SIGKILL)
    except OSError:
        pass
