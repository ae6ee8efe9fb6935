"""SIGINT and SIGTERM for every command that drives backend workers (check, bench, explore, backends).

The first signal cancels the run: every registered worker's process group is killed at once and no new case starts;
the command then writes and shows what it measured, marked incomplete, and exits 128 + the signal's number. A second
signal exits at once. Where the main thread waits on something that does not poll the cancel switch (a Hypothesis
search, a pool of probes, a bench's timed loop), the first signal also raises `Interrupted` there.

A command whose partial output takes a moment to write (bench) gives `while_writing`: once a signal has stopped it,
or once it says it is `finishing()`, one more signal kills any worker again and lets the writing go on (saying
`while_writing`), and the next one exits at once, unwinding (its atomic writes leave no half file).
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

    @property
    def name(self) -> str:
        """The signal's name, e.g. SIGTERM."""
        return signal.Signals(self.signum).name


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

    def __init__(
        self,
        cancel: Cancel,
        what: Optional[str] = "the partial results follow",
        raise_in_main: bool = False,
        while_writing: Optional[str] = None,
    ) -> None:
        """`what=None`: the first signal's handler says nothing (the command says it once it has stopped)."""
        self.cancel, self.what, self.raise_in_main = cancel, what, raise_in_main
        self.while_writing = while_writing
        self.caught: List[int] = []
        self.later = 0  # signals after the first one (or after `finishing`), while the command writes its output
        self._finishing = False
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

    def finishing(self) -> None:
        """The command's work is over and it writes its output: from here a signal no longer interrupts it (with
        `while_writing`: the first lets the writing finish, the next exits at once)."""
        self._finishing = True

    def _handle(self, signum: int, frame: Optional[FrameType]) -> None:
        name = signal.Signals(signum).name
        if self.caught or self._finishing:
            self._again(signum, name)
            return
        self.caught.append(signum)  # before anything else: a signal arriving inside this handler is a later one
        self.cancel.set(name)
        if self.what is not None:
            say(f"kbtool: {name}: stopping; {self.what} ({name} again to exit now)\n")
        if self.raise_in_main:
            raise Interrupted(signum)

    def _again(self, signum: int, name: str) -> None:
        """A signal after the first one (or once the command is finishing)."""
        self.cancel.kill_all()
        if self.while_writing is None:
            say("kbtool: {} again: exiting now\n{}".format(name, "\x1b[?25h" if os.isatty(2) else ""))  # cursor back
            os._exit(128 + (self.signum or signum))
        self.later += 1
        if self.later >= 2:
            say(f"kbtool: {name} again: exiting at once\n")
            raise SystemExit(128 + signum)
        say(f"kbtool: {name}: {self.while_writing}\n")

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                if signal.getsignal(signum) is not signal.SIG_IGN:  # `nohup`, `cmd &`: keep what the caller chose
                    self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel.kill_all()
        restore(self._previous, bool(self.caught) or self.later > 0)
