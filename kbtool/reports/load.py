"""Reading JSON reports back (`kbtool report ...`, `check --last-failed`), and the last check's report.

A report file may be anything: each problem is one line naming the file (missing, not JSON, not a kbtool report,
a newer schema_version than this kbtool reads, or the first way it breaks the schema).
"""

import json
import os
import sys
from typing import Callable, Optional

from .. import files
from ..errors import KbtoolError

MAX_REPORT_BYTES = 1024 * 1024 * 1024  # a full run of the shipped spec is 5 MB
LAST_REPORT = "last-report.json"


def read_report(path):
    """The report dict in `path`, validated against the shipped schema; a one-line KbtoolError otherwise."""
    from .assemble import SCHEMA_VERSION, validate

    try:
        size = os.stat(path).st_size
    except OSError as exc:
        raise KbtoolError(f"cannot read report {path}: {exc.strerror or exc}")
    if size > MAX_REPORT_BYTES:
        raise KbtoolError(f"report {path}: larger than {MAX_REPORT_BYTES // (1024 * 1024)} MB")
    text = files.read_text(path, what="report ", max_bytes=MAX_REPORT_BYTES)
    try:
        report = json.loads(text)
    except ValueError as exc:
        raise KbtoolError(f"report {path}: not JSON ({exc})")
    except RecursionError:
        raise KbtoolError(f"report {path}: not JSON (nested too deeply)")
    if not isinstance(report, dict) or "schema_version" not in report or "results" not in report:
        raise KbtoolError(
            f"{path}: not a kbtool report (no schema_version and results; write one with `kbtool check -o FILE.json`)"
        )
    version = report["schema_version"]
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise KbtoolError(
            f"report {path}: schema_version {version} is newer than this kbtool reads ({SCHEMA_VERSION}); upgrade kbtool"
        )
    problems = validate(report)
    if problems:
        raise KbtoolError(
            files.one_line(
                "report {}: {}{}".format(
                    path,
                    files.clip(problems[0], 300),
                    f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else "",
                )
            )
        )
    return report


def last_report_path():
    from ..runners.base import kbtool_home

    return os.path.join(kbtool_home(), LAST_REPORT)


def save_last(report, warn=None):
    """Keep `report` as the last check's (for --last-failed). A failure costs a warning, never the check."""
    from . import render
    from .text import encodable

    try:
        files.write_atomic(last_report_path(), encodable(render(report, "json")))
    except (KbtoolError, OSError, UnicodeError, ValueError) as exc:
        message = "kbtool: warning: could not save the report for --last-failed: {}".format(
            getattr(exc, "strerror", None) or exc
        )
        (warn or (lambda line: print(line, file=sys.stderr)))(message)


def load_last():
    """The last check's report, or None when none was saved. One that cannot be read is a KbtoolError."""
    path = last_report_path()
    if not os.path.lexists(path):
        return None
    return read_report(path)


def last_failures(seed: int, grid: str, say: Callable[[str], None]) -> Optional[dict]:
    """--last-failed: {backend: keys} of what failed in the last check, or None (run everything, as `say` tells the
    user). A last report that cannot be read is a KbtoolError saying how to start afresh."""
    from ..plan import failures_of

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
