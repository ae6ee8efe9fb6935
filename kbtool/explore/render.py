"""What `kbtool explore` shows: the JSON document, the terminal text, and progress on stderr (rich)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence

import click

from kbtool.reports.text import plural

if TYPE_CHECKING:
    from rich.progress import TaskID

    from kbtool.explore.engine import BackendOutcome


def as_json(
    op: str, seed: int, max_examples: int, outcomes: Sequence[BackendOutcome], saved: Iterable[str] = ()
) -> Dict[str, Any]:
    failures = [f.as_dict() for o in outcomes for f in o.failures]
    return {
        "op": op,
        "seed": seed,
        "max_examples": max_examples,
        "backends": [o.as_dict() for o in outcomes],
        "examples": {o.backend: o.examples for o in outcomes},
        "failures": failures,
        "unexplained": sum(1 for f in failures if not f["known"]),
        "saved": list(saved),
    }


def text(op: str, outcomes: Sequence[BackendOutcome], saved: Iterable[str] = ()) -> str:
    """The terminal report: one line per backend, then each failure with its minimal case and repro."""
    lines: List[str] = []
    for outcome in outcomes:
        if outcome.could_not_run:
            lines.append(f"{outcome.backend:<12} did not run: {outcome.could_not_run}")
            continue
        unexplained, known = len(outcome.unexplained), len(outcome.failures) - len(outcome.unexplained)
        verdict = plural(unexplained, "unexplained failure") if unexplained else "nothing unexplained"
        lines.append(
            "{:<12} {}: {} ({} rejected), {}{}".format(
                outcome.backend,
                op,
                plural(outcome.examples, "example"),
                outcome.rejected,
                verdict,
                f", {known} known" if known else "",
            )
        )
        if outcome.note:
            lines.append(f"             note: {outcome.note}")
    for failure in [f for o in outcomes for f in o.failures]:
        lines.append("")
        lines.append(
            "{} {} on {} ({} mode): {}{}".format(
                "KNOWN" if failure.known else "FAILURE",
                failure.op,
                failure.backend,
                failure.mode,
                failure.status,
                f" (known: {failure.known})" if failure.known else "",
            )
        )
        lines.append(f"  case:    {failure.case_id}")
        lines.append("  inputs:  {}".format(_short(failure.case.get("inputs"))))
        if failure.case.get("kwargs"):
            lines.append("  kwargs:  {}".format(_short(failure.case["kwargs"])))
        if failure.case.get("keras_config"):
            lines.append("  keras.json: {}".format(_short(failure.case["keras_config"])))
        lines.append(f"  message: {failure.message}")
        lines.append(f"  replay:  {failure.repro}")
    for line in saved:
        lines.append(f"saved: {line}")
    return "\n".join(lines)


def _short(value: Any, limit: int = 400) -> str:
    out = json.dumps(value)
    return out if len(out) <= limit else out[: limit - 3] + "..."


TEXT_WIDTH = 58  # "explore keras3-tensorflow" 1000/1000 "1000 rejected" 0:00:00, with the spaces between


def bar_width(width: int) -> int:
    """The bar's cells at a terminal `width`: at most 40, at least 4, and none of the text cut from 80 columns."""
    return max(4, min(40, width - TEXT_WIDTH))


class Progress:
    """A rich progress bar per backend on stderr (stdout stays clean for --json); silent when stderr is not a
    terminal, where one summary line per backend is printed instead."""

    def __init__(self) -> None:
        import sys

        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        # the stream bound now: the reference redirects sys.stderr while it computes a case (kbtool/capture.py)
        self.console = Console(file=sys.stderr)
        # at 80 columns the name ("explore keras3-tensorflow"), the counts and the clock keep their room: the bar
        # takes what they leave (rich would otherwise squeeze and cut the text columns)
        self.bar = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(bar_width=bar_width(self.console.width)),
            MofNCompleteColumn(),
            TextColumn("{task.fields[found]}"),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
            disable=not self.console.is_terminal,
        )
        self.task: Optional[TaskID] = None

    def __enter__(self) -> Progress:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.__exit__(*exc)  # rich's returns None: an exception goes on

    def start(self, backend: str, total: int) -> None:
        self.task = self.bar.add_task(f"explore {backend}", total=total, found="")

    def tick(self, outcome: BackendOutcome) -> None:
        # shrinking runs examples too: the bar stops at the budget while the count goes on
        assert self.task is not None  # started
        self.bar.update(
            self.task,
            completed=min(outcome.examples, self.bar.tasks[-1].total or 0),
            found=f"{outcome.rejected} rejected",
        )

    def done(self, outcome: BackendOutcome) -> None:
        assert self.task is not None  # started
        self.bar.remove_task(self.task)
        click.echo(
            f"  {outcome.backend:<12} {outcome.examples} examples, {outcome.rejected} rejected, {len(outcome.unexplained)} unexplained",
            err=True,
        )
