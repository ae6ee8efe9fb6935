"""Progress of a bench, on stderr (stdout stays clean for --json): rich bars on a terminal, one per backend; in
a log, a plain line per backend each time it passes another tenth of its results, and when it is done."""

import sys
import time

from ..plan import backend_modes


def planned(slot, items, settings):
    allowed = set(backend_modes(slot))
    return sum(1 for item in items for mode in item.case.modes if mode in settings.modes and mode in allowed)


class BenchProgress:
    def __init__(self, slots, items, settings, enabled=True, stream=None):
        self.planned = {slot.name: planned(slot, items, settings) for slot in slots}
        self.done = dict.fromkeys(self.planned, 0)
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.bars = None
        self.tasks = {}
        self.started = time.monotonic()

    def __enter__(self):
        if self.enabled and self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=True,
            )
            self.bars.start()
            for name, total in self.planned.items():
                self.tasks[name] = self.bars.add_task(name, total=total)
        return self

    def __exit__(self, *exc):
        if self.bars is not None:
            self.bars.stop()
        return False

    def __call__(self, backend, result):
        if not self.enabled:
            return
        before = self.done[backend]
        self.done[backend] = before + 1
        total = max(1, self.planned[backend])
        if self.bars is not None:
            self.bars.update(
                self.tasks[backend], advance=1, description="{} {} {}".format(backend, result["op"], result["size"])
            )
        elif self.done[backend] == total or self.done[backend] * 10 // total > before * 10 // total:
            self.stream.write(
                f"kbtool bench: {backend} {self.done[backend]}/{total} ({time.monotonic() - self.started:.0f} s)\n"
            )
            self.stream.flush()
