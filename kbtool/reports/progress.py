"""Progress of a running check, on stderr (stdout stays clean for --json).

On a terminal: a live table, one row per backend (its name, results done of those planned, how many did not pass
so far, a bar, and its state) and a total; it fits the terminal's width from 80 columns (the bar gives way first).
Elsewhere (CI logs): plain lines, at most one per backend every `min_seconds` as it crosses another tenth of its
plan (or after `heartbeat` seconds of silence), a line when a backend is done, and a total now and then; never a
line per result.

A backend's state, as execute.py tells it (`state(backend, ...)`): *queued* while it waits for a worker slot (no
clock runs), *starting* while its first worker imports its engine, *first case running* once the worker is ready
and before any result (Theano compiles for minutes there), then its elapsed time and its time left: *estimating*
until it has finished `ESTIMATE_AFTER` results, then *about M:SS left* from its own pace since its worker was ready.
A finished backend says *done in M:SS*. The total's time left is the slowest backend's; while some backend has no
estimate yet it is a lower bound (*at least*), or *estimating* when none has one.

Known differences are matched once every result is in, so a running count can only say `pass` or `not pass`
(not yet matched against known differences); the legend says so once, and the summary after the run says which
of them are explained.

`CheckProgress` is the callback `progress(backend, result)` that execute.py calls from the backends' threads, and a
context manager: the live table is gone before the summary prints, also when the check is interrupted.
"""

import sys
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, TextIO, Tuple

from kbtool.results import Status

LEGEND = "not pass = not yet matched against known differences (see the summary)"
ESTIMATE_AFTER = 5  # results a backend finishes before its time left is estimated from its own pace

# a backend's states, in the order they go (execute.py tells the first three; a result implies `running`)
QUEUED, STARTING, RUNNING, FAILED, FINISHED = "queued", "starting", "running", "failed", "finished"
_ORDER = {QUEUED: 0, STARTING: 1, RUNNING: 2, FAILED: 3, FINISHED: 3}


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


def clock(seconds: float) -> str:
    """M:SS, or H:MM:SS from an hour."""
    whole = int(max(0, seconds))
    return (
        f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"
        if whole >= 3600
        else f"{whole // 60}:{whole % 60:02d}"
    )


class _Tally:
    __slots__ = (
        "planned",
        "done",
        "passed",
        "step",
        "last_line",
        "finished",
        "state",
        "started_at",
        "ready_at",
        "ended_at",
    )

    def __init__(self, planned: int, now: float) -> None:
        self.planned, self.done, self.passed = planned, 0, 0
        self.step, self.last_line, self.finished = 0, now, False  # (plain lines) its last tenth and line
        self.state = QUEUED
        self.started_at: Optional[float] = None  # its first worker was given a slot
        self.ready_at: Optional[float] = None  # its first worker said it was ready (its pace counts from here)
        self.ended_at: Optional[float] = None  # its last result, once it has them all (or its end otherwise)

    @property
    def not_passed(self) -> int:
        return self.done - self.passed

    @property
    def complete(self) -> bool:
        return self.state in (FAILED, FINISHED) or (self.planned > 0 and self.done >= self.planned)

    def left(self, now: float) -> Optional[float]:
        """Seconds it still needs at its own pace since its worker was ready; None before `ESTIMATE_AFTER`
        results (its first cases carry compiles and caches: no honest pace yet), 0 when complete."""
        if self.complete:
            return 0.0
        if self.done < ESTIMATE_AFTER:
            return None
        since = self.ready_at if self.ready_at is not None else self.started_at
        if since is None:
            return None
        return (now - since) / self.done * (self.planned - self.done)

    def status(self, now: float) -> str:
        """Its state in words: queued / starting M:SS / first case running M:SS / M:SS · estimating /
        M:SS · about M:SS left / done in M:SS / could not start / stopped after M:SS."""
        start = self.started_at if self.started_at is not None else now
        if self.state == FAILED and not self.done:
            return "could not start"
        if self.complete:
            took = clock((self.ended_at if self.ended_at is not None else now) - start)
            if self.planned and self.done < self.planned:
                return f"stopped after {took}"
            return f"done in {took}"
        if self.state == QUEUED:
            return "queued"
        if self.state == STARTING:
            return f"starting {clock(now - start)}"
        if not self.done:
            return f"first case running {clock(now - start)}"
        left = self.left(now)
        return f"{clock(now - start)} · " + ("estimating" if left is None else f"about {clock(left)} left")


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
        quiet: Optional[float] = None,
    ) -> None:
        """`quiet` (plain lines): a line whenever nothing was said for that many seconds, results or not (one case
        under --repeat 1000 runs for a minute before its result)."""
        self.quiet, self._said_at, self._silence = quiet, time.monotonic(), threading.Event()
        self._filler: Optional[threading.Thread] = None
        self.stream = stream if stream is not None else sys.stderr
        self.clock, self.min_seconds, self.step, self.heartbeat = clock, min_seconds, step, heartbeat
        self.started = clock()
        self._lock = threading.Lock()
        self._tallies = {name: _Tally(int(n), self.started) for name, n in planned.items()}
        self._total_step, self._total_line = 0, self.started
        self._legend_said = False
        self._console: Any = None
        if live is None:
            live = self._terminal()
        self.live = live
        self._live: Any = None  # rich's Live on a terminal

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
            from rich.live import Live

            self._console = Console(file=self.stream)
            # no stdout/stderr redirection: nothing but kbtool writes there during a check (the reference and
            # the workers are captured), and a redirect would race the reference's own capture
            self._live = Live(
                _Rendered(self),
                console=self._console,
                transient=True,
                refresh_per_second=4,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        elif self.quiet:
            self._filler = threading.Thread(target=self._fill_silence, name="kbtool-progress", daemon=True)
            self._filler.start()
        return self

    def _fill_silence(self) -> None:
        assert self.quiet
        while not self._silence.wait(min(1.0, self.quiet)):
            with self._lock:
                if time.monotonic() - self._said_at >= self.quiet:
                    now = self.clock()
                    self._write(
                        "  {:<12} {}/{} results · {} elapsed, waiting for a result".format(
                            "total", self._done_total(), self._planned_total(), clock(now - self.started)
                        )
                    )

    def __exit__(self, *exc_info: Any) -> None:
        self._silence.set()
        if self._filler is not None:
            self._filler.join(timeout=5)
        if self._live is not None:
            self._live.stop()  # transient: the table leaves the screen to the summary
            self._live = None
        else:
            with self._lock:
                self._final_lines()

    # -- what execute.py tells ---------------------------------------------------------------------
    def __call__(self, backend: str, result: Any) -> None:
        passed = str(result.status) == Status.PASS.value
        with self._lock:
            now = self.clock()
            tally = self._tally(backend)
            self._advance(tally, RUNNING, now)
            tally.done += 1
            tally.passed += passed
            if tally.planned and tally.done >= tally.planned:
                tally.ended_at = now  # (more results than planned move it on)
            if self._live is None:
                self._plain(backend, tally)

    def state(self, backend: str, state: str) -> None:
        """A backend's worker was given a slot (`starting`), is ready (`running`), could not start (`failed`), or
        the backend has nothing left to run (`finished`). States only go forward: a second worker starting does
        not make a running backend `starting` again."""
        with self._lock:
            now = self.clock()
            tally = self._tally(backend)
            if state == FAILED and tally.state == RUNNING:
                return  # one of several workers did not start: the others' results stand
            self._advance(tally, state, now)
            if state in (FAILED, FINISHED) and tally.ended_at is None:
                tally.ended_at = now

    def _tally(self, backend: str) -> _Tally:
        tally = self._tallies.get(backend)
        if tally is None:  # not planned (cannot happen in a check): shown all the same
            tally = self._tallies[backend] = _Tally(0, self.started)
        return tally

    def _advance(self, tally: _Tally, state: str, now: float) -> None:
        if _ORDER[state] <= _ORDER[tally.state]:
            return
        if tally.started_at is None:  # a result with no `starting` told first: counted from the check's start
            tally.started_at = now if state in (STARTING, FAILED) else self.started
        if state in (RUNNING, FINISHED) and tally.ready_at is None:
            tally.ready_at = now if tally.state == STARTING else tally.started_at
        tally.state = state

    # -- time ---------------------------------------------------------------------------------------
    def time_left(self, now: Optional[float] = None) -> Optional[float]:
        """Seconds until the check ends: backends run side by side, so the slowest one's time left (None while
        one has no estimate yet)."""
        seconds, exact = self._total_left(self.clock() if now is None else now)
        return seconds if exact else None

    def _total_left(self, now: float) -> Tuple[Optional[float], bool]:
        """(the slowest estimated backend's time left, whether every backend has an estimate)."""
        lefts = [t.left(now) for t in self._tallies.values()]
        known = [left for left in lefts if left is not None]
        return (max(known + [0.0]) if known else None), len(known) == len(lefts)

    def _total_words(self, now: float) -> str:
        seconds, exact = self._total_left(now)
        if exact:
            return f"about {clock(seconds or 0.0)} left"
        if seconds:
            return f"at least {clock(seconds)} left"
        return "estimating"

    def _planned_total(self) -> int:
        return sum(max(t.planned, t.done) for t in self._tallies.values())

    def _done_total(self) -> int:
        return sum(t.done for t in self._tallies.values())

    # -- the live table -----------------------------------------------------------------------------
    def rows(self, now: Optional[float] = None) -> List[Tuple[str, str, str, float, str]]:
        """(name, done/planned, not-pass count, fraction done, state in words) per backend, then the total."""
        with self._lock:
            now = self.clock() if now is None else now
            out = []
            for name, t in self._tallies.items():
                planned = max(t.planned, t.done)
                fraction = 1.0 if t.complete else (t.done / planned if planned else 0.0)
                out.append((name, f"{t.done}/{planned}", f"{t.not_passed} not pass", fraction, t.status(now)))
            done, planned = self._done_total(), self._planned_total()
            everything = all(t.complete for t in self._tallies.values())
            words = (
                f"done in {clock(now - self.started)}"
                if everything
                else (f"{clock(now - self.started)} · {self._total_words(now)}")
            )
            not_passed = sum(t.not_passed for t in self._tallies.values())
            out.append(
                ("total", f"{done}/{planned}", f"{not_passed} not pass", done / planned if planned else 0.0, words)
            )
            return out

    def render_lines(self, width: int, now: Optional[float] = None) -> List[Any]:
        """The live table as rich Text lines, none wider than `width`: the legend, then a line per backend and the
        total. Name, counts and state keep their room; the bar takes what is left (none below 6 cells)."""
        from rich.text import Text

        rows = self.rows(now)
        name_w = max(len(r[0]) for r in rows)
        count_w = max(len(r[1]) for r in rows)
        not_w = max(len(r[2]) for r in rows)
        state_w = max(len(r[4]) for r in rows)
        fixed = name_w + 1 + count_w + 1 + not_w + 1 + state_w
        bar_w = min(30, width - fixed - 1)
        legend = Text(LEGEND, style="dim", no_wrap=True, overflow="ellipsis")
        legend.truncate(width, overflow="ellipsis")
        lines = [legend]
        for name, count, not_pass, fraction, words in rows:
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(f"{name:<{name_w}} ", style="bold" if name == "total" else "")
            line.append(f"{count:>{count_w}} ")
            line.append(f"{not_pass:>{not_w}} ", style="yellow" if not not_pass.startswith("0 ") else "")
            if bar_w >= 6:
                filled = int(round(fraction * bar_w))
                line.append("━" * filled, style="green" if fraction >= 1 else "magenta")
                line.append("━" * (bar_w - filled) + " ", style="grey23")
            line.append(words, style="dim" if words == "queued" else "cyan")
            line.truncate(width, overflow="ellipsis")
            lines.append(line)
        return lines

    # -- plain lines ------------------------------------------------------------------------------------
    def _write(self, line: str) -> None:
        try:
            if not self._legend_said:
                self._legend_said = True
                self.stream.write(f"  ({LEGEND})\n")
            self.stream.write(line + "\n")
            self.stream.flush()
            self._said_at = time.monotonic()
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

    def _since(self, tally: _Tally, now: float) -> str:
        return clock(now - (tally.started_at if tally.started_at is not None else self.started))

    def _running_line(self, backend: str, tally: _Tally, now: float) -> str:
        share = f" ({tally.done / tally.planned:.0%})" if tally.planned else ""
        return (
            f"  {backend:<12} {tally.done}/{tally.planned}{share} · {self._counts(tally)} · {self._since(tally, now)}"
        )

    def _done_line(self, backend: str, tally: _Tally, now: float) -> str:
        return f"  {backend:<12} done: {tally.done} results in {self._since(tally, now)} · {self._counts(tally)}"

    def _total_line_text(self, total: int, planned: int, now: float) -> str:
        return "  {:<12} {}/{} results ({:.0%}) · {} elapsed, {}".format(
            "total", total, planned, total / planned, clock(now - self.started), self._total_words(now)
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
                    f"  {backend:<12} stopped: {tally.done}/{tally.planned} in {self._since(tally, now)} · {self._counts(tally)}"
                )
        if self._tallies:
            self._write("  {:<12} {} results in {}".format("total", self._done_total(), clock(now - self.started)))


class _Rendered:
    """The live table as rich renders it: at the console's width on each refresh."""

    def __init__(self, progress: CheckProgress) -> None:
        self.progress = progress

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        yield from self.progress.render_lines(options.max_width)
