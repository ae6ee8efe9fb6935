"""Progress of `kbtool models` on stderr, as check shows its own (reports/progress.py's live table on a terminal,
plain lines elsewhere): a row per engine with its models done of those planned, how many did not run ok so far, a
bar, and its state, which names the model it is running ("mobilenet · 0:42"), then the total.

Runs are judged against the oracle once every engine is done, so a running count says only whether the engine ran
the model (`ok`) or not (it raised, crashed, timed out or cannot run it)."""

import time
from typing import Any, Dict, List, Optional, Tuple

from kbtool.models.records import EngineRun
from kbtool.reports import progress as check_progress
from kbtool.reports.text import plural

LEGEND = "not ok = the engine did not run the model (runs are judged once all are in)"


class _Ran:
    """What CheckProgress counts of a result: its status (an engine's run of a model that went ok is a pass)."""

    def __init__(self, run: EngineRun) -> None:
        self.status = "pass" if run.status == "ok" else run.status


class ModelsProgress(check_progress.CheckProgress):
    """`with ModelsProgress({engine: models planned}) as progress:` then `progress.model(engine, name)` as a model
    starts, `progress(engine, run)` as it ends, `progress.state(engine, state)` as check's execute tells it."""

    def __init__(self, planned: Dict[str, int], **options: Any) -> None:
        super().__init__(planned, **options)
        self._legend_said = True  # plain lines: said once by the command, in its own words
        self._current: Dict[str, Tuple[str, float]] = {}

    def model(self, engine: str, name: str) -> None:
        with self._lock:
            self._current[engine] = (name, time.monotonic())

    def __call__(self, engine: str, result: Any) -> None:
        with self._lock:
            self._current.pop(engine, None)
        super().__call__(engine, _Ran(result) if isinstance(result, EngineRun) else result)

    def rows(self, now: Optional[float] = None) -> List[Tuple[str, str, str, float, str]]:
        rows = super().rows(now)
        with self._lock:
            current = dict(self._current)
        out = []
        for name, count, not_pass, fraction, words in rows:
            not_ok = not_pass.replace("not pass", "not ok")
            if name in current:
                model, since = current[name]
                words = f"{model} · {check_progress.clock(time.monotonic() - since)}"
            out.append((name, count, not_ok, fraction, words))
        return out

    def render_lines(self, width: int, now: Optional[float] = None) -> List[Any]:
        from rich.text import Text

        lines = super().render_lines(width, now)
        legend = Text(LEGEND, style="dim", no_wrap=True, overflow="ellipsis")
        legend.truncate(width, overflow="ellipsis")
        return [legend] + lines[1:]

    def _counts(self, tally: Any) -> str:
        return f"{tally.passed} ok, {tally.not_passed} not ok"

    def _running_line(self, engine: str, tally: Any, now: float) -> str:
        with_model = self._current.get(engine)
        now_on = f" · now {with_model[0]}" if with_model else ""
        return f"  {engine} {tally.done}/{tally.planned} models · {self._counts(tally)} · {self._since(tally, now)}{now_on}"

    def _done_line(self, engine: str, tally: Any, now: float) -> str:
        return f"  {engine} done: {plural(tally.done, 'model')} in {self._since(tally, now)} · {self._counts(tally)}"
