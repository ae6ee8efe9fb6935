"""SIGINT and SIGTERM for every command that drives backend workers (check, bench, explore, backends).

The first signal cancels the run: every registered worker's process group is killed at once and no new case starts;
the command then writes and shows what it measured, marked incomplete, and exits 128 + the signal's number. A second
signal exits at once. Where the main thread waits on something that does not poll the cancel switch (a Hypothesis
search, a pool of probes), the first signal also raises `Interrupted` there.
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING, Any, Dict, List, Optional

if TYPE_CHECKING:  # the session (and what it imports) loads with the first command that runs workers, not at start
    from kbtool.runners.session import Cancel

SIGNALS = (signal.SIGINT, signal.SIGTERM)

# Set by the `kbtool` entry points: the process ends with the command. Then, once a signal has stopped a command, a
# later one (a second Ctrl-C while it exits) is ignored instead of killing the process with a status of its own.
OWNS_PROCESS = False


def restore(previous: Dict[int, Any], caught: bool) -> None:
    """Put back the handlers a command replaced, or, when a signal stopped it in a process kbtool owns, ignore
    further signals: the command is exiting with 128 + that signal's number, which a late one must not change."""
    for signum, handler in previous.items():
        signal.signal(signum, signal.SIG_IGN if caught and OWNS_PROCESS else handler)


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by the first signal (with `raise_in_main`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def say(line: str) -> None:
    """Write to stderr from a signal handler: no buffered stream (it may be mid-write), and never an exception."""
    try:
        os.write(2, line.encode())
    except OSError:
        pass


class Interrupts:
    """Installs the handlers for the duration of a `with` block (in the main thread; elsewhere it does nothing).

    `what` completes the first signal's message: "kbtool: SIGINT: stopping; {what} (SIGINT again to exit now)".
    """

    def __init__(self, cancel: Cancel, what: str = "the partial results follow", raise_in_main: bool = False) -> None:
        self.cancel, self.what, self.raise_in_main = cancel, what, raise_in_main
        self.caught: List[int] = []
        self._previous: Dict[int, Any] = {}

    @property
    def signum(self) -> Optional[int]:
        return self.caught[0] if self.caught else None

    @property
    def name(self) -> Optional[str]:
        return signal.Signals(self.caught[0]).name if self.caught else None

    @property
    def exit_code(self) -> Optional[int]:
        return 128 + self.caught[0] if self.caught else None

    def _handle(self, signum: int, frame: Optional[FrameType]) -> None:
        name = signal.Signals(signum).name
        if self.caught:
            self.cancel.kill_all()
            say("kbtool: {} again: exiting now\n{}".format(name, "\x1b[?25h" if os.isatty(2) else ""))  # cursor back
            os._exit(128 + self.caught[0])
        self.caught.append(signum)
        self.cancel.set(name)
        say(f"kbtool: {name}: stopping; {self.what} ({name} again to exit now)\n")
        if self.raise_in_main:
            raise Interrupted(signum)

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                if signal.getsignal(signum) is not signal.SIG_IGN:  # `nohup`, `cmd &`: keep what the caller chose
                    self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel.kill_all()
        restore(self._previous, bool(self.caught))
