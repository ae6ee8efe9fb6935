"""Reading JSON reports back (`kbtool report ...`, `check --last-failed`), and the last check's report.

A report file may be anything: each problem is one line naming the file (missing, not JSON, not a kbtool report,
a newer schema_version than this kbtool reads, or the first way it breaks the schema).
"""

import os
import sys
from typing import Any, Callable, Dict, Optional

from kbtool.errors import KbtoolError
from kbtool.reports.report import MAX_REPORT_BYTES as MAX_REPORT_BYTES  # its old home, re-exported
from kbtool.reports.report import Report, write_atomic

LAST_REPORT = "last-report.json"


def read_report(path: str) -> Dict[str, Any]:
    """The report dict in `path`, validated against the shipped schema, its known entries held to the known file's
    rules and its summary computed from its results; a one-line KbtoolError otherwise."""
    return Report.load_data(path)


def last_report_path() -> str:
    from kbtool.runners import base

    return os.path.join(base.kbtool_home(), LAST_REPORT)


def save_last(report: Dict[str, Any], warn: Optional[Callable[[str], None]] = None) -> None:
    """Keep `report` as the last check's (for --last-failed). A failure costs a warning, never the check."""
    from kbtool.reports import render
    from kbtool.reports.text import encodable

    try:
        write_atomic(last_report_path(), encodable(render(report, "json")))
    except (KbtoolError, OSError, UnicodeError, ValueError) as exc:
        message = "kbtool: warning: could not save the report for --last-failed: {}".format(
            getattr(exc, "strerror", None) or exc
        )
        (warn or (lambda line: print(line, file=sys.stderr)))(message)


def load_last() -> Optional[Dict[str, Any]]:
    """The last check's report, or None when none was saved. One that cannot be read is a KbtoolError."""
    path = last_report_path()
    if not os.path.lexists(path):
        return None
    return read_report(path)


def last_failures(seed: int, grid: str, say: Callable[[str], None]) -> Optional[Dict[str, Any]]:
    """--last-failed: {backend: keys} of what failed in the last check, or None (run everything, as `say` tells the
    user). A last report that cannot be read is a KbtoolError saying how to start afresh."""
    from kbtool.plan import failures_of

    try:
        last = load_last()
    except KbtoolError as exc:
        raise KbtoolError(f"{exc} (delete {last_report_path()} to start afresh)")
    if last is None:
        say("kbtool: no last run recorded; running everything")
        return None
    selection = failures_of(last)
    if not selection:
        say("kbtool: last run had no failures; running everything")
        return None
    if (last["seed"], last.get("grid", "pairwise")) != (seed, grid):
        say(
            "kbtool: note: the last run used --seed {} --grid {}; this one uses --seed {} --grid {}".format(
                last["seed"], last.get("grid", "pairwise"), seed, grid
            )
        )
    return selection
