"""Progress of a running check, on stderr (stdout stays clean for --json).

On a terminal: rich bars, one per backend (results done of those planned, how many passed so far) and a total
with the time left. Elsewhere (CI logs): plain lines, at most one per backend every `min_seconds` as it crosses
another tenth of its plan (or after `heartbeat` seconds of silence), a line when a backend is done, and a total now
and then; never a line per result.

Known differences are matched once every result is in, so a running count can only say `pass` or `not pass`
(not yet matched against known differences); the summary after the run says which of them are explained.

`CheckProgress` is the callback `progress(backend, result)` that execute.py calls from the backends' threads, and a
context manager: the bars are gone before the summary prints, also when the check is interrupted.
"""

import sys
import threading
import time
from typing import Any, Callable, Dict, Optional, TextIO

from ..results import Status

NOT_YET_MATCHED = "not pass = not yet matched against known differences"


def planned_per_backend(plan: Any) -> Dict[str, int]:
    """Results each runnable backend sets out to produce: every case in each of its modes, plus the variants its
    launch adds (Theano's flipped kernels). A variant that cannot be computed up front counts nothing, so the
    figure is a lower bound and the display copes with more."""
    planned: Dict[str, int] = {}
    for slot in plan.runnable:
        # a backend's own work (under --last-failed, what failed there), else the whole plan's
        work = plan.work_for(slot.name)
        base, extra = sum(len(case.modes) for _, case in work), 0
        # a custom module runs its base's variants for the ops it inherits: not known before its worker starts
        for _, case in [] if slot.launch.base_backend else work:
            try:
                extra += sum(len(v.modes) for v in slot.launch.variants(case) or [])
            except Exception:  # a variant that cannot be built now fails in the run, where it is reported
                pass
        planned[slot.name] = planned.get(slot.name, 0) + base + extra
    return planned


def _clock(seconds: float) -> str:
    whole = int(max(0, seconds))
    return (
        f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"
        if whole >= 3600
        else f"{whole // 60}:{whole % 60:02d}"
    )


def _eta_words(seconds: Optional[float]) -> str:
    return "time left unknown" if seconds is None else f"about {_clock(seconds)} left"


class _Tally:
    __slots__ = ("planned", "done", "passed", "step", "last_line", "finished", "task")

    def __init__(self, planned: int, now: float) -> None:
        self.planned, self.done, self.passed = planned, 0, 0
        self.step, self.last_line, self.finished = 0, now, False
        self.task: Any = None  # its bar (rich's TaskID) on a terminal

    @property
    def not_passed(self) -> int:
        return self.done - self.passed


class CheckProgress:
    """The progress of one check: `with CheckProgress(planned) as progress: run_check(plan, progress=progress)`.

    `planned` maps each backend to the results it should produce (in display order). The stream is bound here,
    not looked up at each write: the reference redirects sys.stderr while it computes a case (to record what it
    prints), and progress from another backend's thread must not land in that record."""

    def __init__(
        self,
        planned: Dict[str, int],
        stream: Optional[TextIO] = None,
        live: Optional[bool] = None,
        clock: Callable[[], float] = time.monotonic,
        min_seconds: float = 10.0,
        step: float = 0.1,
        heartbeat: float = 60.0,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.clock, self.min_seconds, self.step, self.heartbeat = clock, min_seconds, step, heartbeat
        self.started = clock()
        self._lock = threading.Lock()
        self._tallies = {name: _Tally(int(n), self.started) for name, n in planned.items()}
        self._total_step, self._total_line = 0, self.started
        self._console: Any = None
        if live is None:
            live = self._terminal()
        self.live = live
        self._bars: Any = None  # rich's Progress on a terminal
        self._total_task: Any = None

    @classmethod
    def for_plan(cls, plan: Any, **options: Any) -> "CheckProgress":
        return cls(planned_per_backend(plan), **options)

    def _terminal(self) -> bool:
        from rich.console import Console

        console = Console(file=self.stream)
        return console.is_terminal and not console.is_dumb_terminal

    # -- context manager -------------------------------------------------------------------------
    def __enter__(self) -> "CheckProgress":
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._console = Console(file=self.stream)
            # no stdout/stderr redirection: nothing but kbtool writes there during a check (the reference and
            # the workers are captured), and a redirect would race the reference's own capture
            self._bars = Progress(
                TextColumn("{task.description:<12}"),
                BarColumn(bar_width=30),
                MofNCompleteColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                TextColumn("{task.fields[eta]}"),
                console=self._console,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            with self._lock:
                for name, tally in self._tallies.items():
                    tally.task = self._bars.add_task(name, total=max(tally.planned, 1), counts="", eta="")
                self._total_task = self._bars.add_task(
                    "total", total=max(self._planned_total(), 1), counts=f"({NOT_YET_MATCHED})", eta=""
                )
            self._bars.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self._bars is not None:
            self._bars.stop()  # transient: the bars leave the screen to the summary
            self._bars = None
        else:
            with self._lock:
                self._final_lines()

    # -- the callback --------------------------------------------------------------------------------
    def __call__(self, backend: str, result: Any) -> None:
        passed = str(result.status) == Status.PASS.value
        with self._lock:
            tally = self._tallies.get(backend)
            if tally is None:  # not planned (cannot happen in a check): shown all the same
                tally = self._tallies[backend] = _Tally(0, self.started)
                if self._bars is not None:
                    tally.task = self._bars.add_task(backend, total=1, counts="", eta="")
            tally.done += 1
            tally.passed += passed
            if self._bars is not None:
                self._update_bars(tally)
            else:
                self._plain(backend, tally)

    # -- rich bars --------------------------------------------------------------------------------------
    def _update_bars(self, tally: _Tally) -> None:
        # a backend may produce more than planned (variants): the bar stays full and its total follows
        now = self.clock()
        self._bars.update(
            tally.task,
            completed=tally.done,
            total=max(tally.planned, tally.done, 1),
            counts=f"{tally.passed} pass · {tally.not_passed} not pass",
            eta=_eta_words(self._left(tally, now)),
        )
        self._bars.update(
            self._total_task,
            completed=self._done_total(),
            total=max(self._planned_total(), 1),
            eta=_eta_words(self.time_left(now)),
        )

    def _left(self, tally: _Tally, now: float) -> Optional[float]:
        """Seconds a backend still needs at its pace so far (None before its first result)."""
        if tally.done >= tally.planned:
            return 0.0
        if not tally.done:
            return None
        return (now - self.started) / tally.done * (tally.planned - tally.done)

    def time_left(self, now: Optional[float] = None) -> Optional[float]:
        """Seconds until the check ends: backends run side by side, so the slowest one's time left (None while
        one has not answered yet)."""
        now = self.clock() if now is None else now
        lefts = [self._left(t, now) for t in self._tallies.values()]
        known = [left for left in lefts if left is not None]
        return None if len(known) < len(lefts) else max(known + [0.0])

    def _planned_total(self) -> int:
        return sum(max(t.planned, t.done) for t in self._tallies.values())

    def _done_total(self) -> int:
        return sum(t.done for t in self._tallies.values())

    # -- plain lines ------------------------------------------------------------------------------------
    def _write(self, line: str) -> None:
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed or gone: the check goes on without progress
            pass

    def _plain(self, backend: str, tally: _Tally) -> None:
        now = self.clock()
        if tally.planned and tally.done >= tally.planned and not tally.finished:
            tally.finished, tally.last_line = True, now
            self._write(self._done_line(backend, tally, now))
            return
        step = int(tally.done / tally.planned / self.step) if tally.planned else 0
        quiet_for = now - tally.last_line
        if (step > tally.step and quiet_for >= self.min_seconds) or quiet_for >= self.heartbeat:
            tally.step, tally.last_line = step, now
            self._write(self._running_line(backend, tally, now))
        total, planned = self._done_total(), self._planned_total()
        total_step = int(total / planned / self.step) if planned else 0
        if total_step > self._total_step and now - self._total_line >= self.min_seconds and total < planned:
            self._total_step, self._total_line = total_step, now
            self._write(self._total_line_text(total, planned, now))

    def _counts(self, tally: _Tally) -> str:
        return f"{tally.passed} pass, {tally.not_passed} not pass"

    def _running_line(self, backend: str, tally: _Tally, now: float) -> str:
        share = f" ({tally.done / tally.planned:.0%})" if tally.planned else ""
        return f"  {backend:<12} {tally.done}/{tally.planned} results{share} · {self._counts(tally)} · {_clock(now - self.started)}"

    def _done_line(self, backend: str, tally: _Tally, now: float) -> str:
        return f"  {backend:<12} done: {tally.done} results in {_clock(now - self.started)} · {self._counts(tally)}"

    def _total_line_text(self, total: int, planned: int, now: float) -> str:
        return "  {:<12} {}/{} results ({:.0%}) · {} elapsed, {}".format(
            "total", total, planned, total / planned, _clock(now - self.started), _eta_words(self.time_left(now))
        )

    def _final_lines(self) -> None:
        """When the run ends: a line for each backend that has not said it is done (stopped early, or more
        results than planned), then the total; nothing when no result came (a check refused before it ran)."""
        if not self._done_total():
            return
        now = self.clock()
        for backend, tally in self._tallies.items():
            if tally.finished and tally.done == tally.planned:
                continue
            if tally.done >= tally.planned:
                self._write(self._done_line(backend, tally, now))
            else:
                self._write(
                    f"  {backend:<12} stopped: {tally.done} of {tally.planned} planned results in {_clock(now - self.started)} · {self._counts(tally)}"
                )
        if self._tallies:
            self._write(
                "  {:<12} {} results in {} ({})".format(
                    "total", self._done_total(), _clock(now - self.started), NOT_YET_MATCHED
                )
            )
