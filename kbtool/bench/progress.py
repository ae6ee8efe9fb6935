"""Progress of a bench, on stderr (stdout stays clean for --json): on a terminal a live table, one row per backend
(name, results done of planned, a bar, its state: queued, starting, the op and size it measures, done in M:SS) that
fits the terminal's width from 80 columns, the bar giving way first; in a log, a plain line per backend each time it
passes another tenth of its results, and when it is done. Backends are measured one after the other, but for the
two releases of `bench --versions`, measured in turns."""

import sys
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, TextIO

from kbtool.plan import backend_modes
from kbtool.reports.progress import clock


def planned(planned_backend: Any, items: Any, settings: Any) -> int:
    allowed = set(backend_modes(planned_backend))
    return sum(1 for item in items for mode in item.case.modes if mode in settings.modes and mode in allowed)


class BenchProgress:
    def __init__(
        self,
        planned_backends: Any,
        items: Any,
        settings: Any,
        enabled: bool = True,
        stream: Optional[TextIO] = None,
        clock: Any = time.monotonic,
        in_turns: bool = False,
    ) -> None:
        self.planned = {
            planned_backend.name: planned(planned_backend, items, settings) for planned_backend in planned_backends
        }
        self.done = dict.fromkeys(self.planned, 0)
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.clock = clock
        self.in_turns = in_turns  # `bench --versions`: two backends measured by turns, both running until done
        self.live: Any = None
        self.started = clock()
        self._lock = threading.Lock()
        self._current: Optional[str] = None  # the backend being measured
        self._what: Dict[str, str] = {}  # backend -> the op and size of its last result
        self._first: Dict[str, float] = {}  # backend -> when it began (the end of the one before it)
        self._last: Dict[str, float] = {}  # backend -> its last result

    def __enter__(self) -> "BenchProgress":
        if self.enabled and self.stream.isatty():
            from rich.console import Console
            from rich.live import Live

            self.live = Live(
                _Rendered(self),
                console=Console(file=self.stream),
                transient=True,
                refresh_per_second=4,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def __call__(self, backend: str, result: Dict[str, Any]) -> None:
        if not self.enabled:
            return
        with self._lock:
            now = self.clock()
            if self._current != backend:
                began = self._last.get(self._current, self.started) if self._current else self.started
                self._first.setdefault(backend, began)
                self._current = backend
            self._last[backend] = now
            self._what[backend] = "{} {}".format(result.get("op", ""), result.get("size", "")).strip()
            before = self.done.get(backend, 0)
            self.done[backend] = before + 1
            self.planned.setdefault(backend, 0)
            total = max(1, self.planned[backend])
        if self.live is None and (
            self.done[backend] == total or self.done[backend] * 10 // total > before * 10 // total
        ):
            try:
                self.stream.write(
                    f"kbtool bench: {backend} {self.done[backend]}/{total} ({now - self.started:.0f} s)\n"
                )
                self.stream.flush()
            except (OSError, ValueError):  # stderr gone: the bench goes on
                pass

    def status(self, backend: str, now: float) -> str:
        """queued / starting M:SS / the op and size it measures (M:SS) / done in M:SS / no results."""
        done, planned = self.done[backend], self.planned[backend]
        if backend in self._first and (done >= planned or (backend != self._current and not self.in_turns)):
            return f"done in {clock(self._last[backend] - self._first[backend])}"
        if backend == self._current or (self.in_turns and backend in self._first):
            return f"{clock(now - self._first[backend])} · {self._what.get(backend, '')}"
        names = list(self.planned)
        if any(n in self._first for n in names[names.index(backend) + 1 :]):
            return "no results"  # a later backend began: this one could not run (the report says why)
        ahead = [n for n in names[: names.index(backend)] if n not in self._first]
        if not ahead and (self._current is None or self.done[self._current] >= self.planned[self._current]):
            since = self._last[self._current] if self._current else self.started
            return f"starting {clock(now - since)}"
        return "queued"

    def render_lines(self, width: int, now: Optional[float] = None) -> List[Any]:
        """A rich Text per backend, none wider than `width` (the bar takes what name, counts and state leave)."""
        from rich.text import Text

        with self._lock:
            now = self.clock() if now is None else now
            rows = [(n, f"{self.done[n]}/{self.planned[n]}", self.status(n, now)) for n in self.planned]
        name_w = max([len(r[0]) for r in rows] + [1])
        count_w = max([len(r[1]) for r in rows] + [1])
        state_w = min(max([len(r[2]) for r in rows] + [1]), 32)
        bar_w = min(30, width - (name_w + 1 + count_w + 1 + state_w) - 1)
        lines = []
        for name, count, words in rows:
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(f"{name:<{name_w}} {count:>{count_w}} ")
            if bar_w >= 6:
                planned = max(1, self.planned[name])
                filled = int(round(min(1.0, self.done[name] / planned) * bar_w))
                line.append("━" * filled, style="magenta")
                line.append("━" * (bar_w - filled) + " ", style="grey23")
            line.append(words, style="dim" if words == "queued" else "cyan")
            line.truncate(width, overflow="ellipsis")
            lines.append(line)
        return lines


class _Rendered:
    def __init__(self, progress: BenchProgress) -> None:
        self.progress = progress

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        yield from self.progress.render_lines(options.max_width)
