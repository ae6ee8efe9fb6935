"""Reading JSON reports back (`kbtool report ...`, `check --last-failed`), and the last check's report.

A report file may be anything: each problem is one line naming the file (missing, not JSON, not a kbtool report,
a newer schema_version than this kbtool reads, or the first way it breaks the schema).

The last check's report is kept per *run key* (`run_keys`: the first -o JSON report's real path, and the directory the
check ran in) under kbtool's home `last/`, so that two checks at once in two directories (or writing two reports)
never overwrite each other's --last-failed; `last-report.json` in the home is the last one of all, wherever it ran.
"""

import hashlib
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence

from kbtool.errors import KbtoolError
from kbtool.reports.report import MAX_REPORT_BYTES as MAX_REPORT_BYTES  # its old home, re-exported
from kbtool.reports.report import Report, write_atomic

LAST_REPORT = "last-report.json"
LAST_FOLDER = "last"  # in kbtool's home: a last report per run key
LAST_KEPT = 100  # the last reports of this many run keys are kept (the least recent go)


def read_report(path: str) -> Dict[str, Any]:
    """The report dict in `path`, validated against the shipped schema, its known entries held to the known file's
    rules and its summary computed from its results; a one-line KbtoolError otherwise."""
    return Report.load_data(path)


def run_keys(outputs: Sequence[str] = ()) -> List[str]:
    """The keys a check's last report is kept (and --last-failed looks) under, most particular first: the real path
    of its first -o JSON report, if any, then the real path of the directory it runs in."""
    reports = [os.path.realpath(path) for path in outputs if str(path).lower().endswith(".json")]
    return (["report:" + reports[0]] if reports else []) + ["dir:" + os.path.realpath(os.getcwd())]


def last_report_path(key: Optional[str] = None) -> str:
    """The last report of run key `key` (None: the last check's of all, wherever it ran)."""
    from kbtool.runners import base

    if key is None:
        return os.path.join(base.kbtool_home(), LAST_REPORT)
    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return os.path.join(base.kbtool_home(), LAST_FOLDER, digest + ".json")


def save_last(report: Dict[str, Any], warn: Optional[Callable[[str], None]] = None, keys: Sequence[str] = ()) -> None:
    """Keep `report` as the last check's of every run key in `keys` and of all (for --last-failed), each written
    atomically under its lock (the others are links to the first: a 25 MB report is written once). A failure costs
    a warning, never the check."""
    from kbtool.reports import render
    from kbtool.reports.text import encodable

    try:
        text = encodable(render(report, "json"))
        paths = [last_report_path(key) for key in keys] + [last_report_path()]
        for i, path in enumerate(paths):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            _keep_as(path, text, paths[0] if i else None)
        if keys:  # the per-key folder (never the home itself)
            _prune(os.path.dirname(last_report_path(keys[0])))
    except (KbtoolError, OSError, UnicodeError, ValueError) as exc:
        message = "kbtool: warning: could not save the report for --last-failed: {}".format(
            getattr(exc, "strerror", None) or exc
        )
        (warn or (lambda line: print(line, file=sys.stderr)))(message)


def _prune(folder: str) -> None:
    """Remove the least recent last reports beyond LAST_KEPT (a run key per directory adds up over a year)."""
    import glob

    try:
        old = sorted(glob.glob(os.path.join(folder, "*.json")), key=os.path.getmtime)[:-LAST_KEPT]
        for path in old:
            for name in (path, path + ".lock"):
                if os.path.lexists(name):
                    os.remove(name)
    except OSError:  # another run pruned it first
        pass


def _keep_as(path: str, text: str, same_as: Optional[str]) -> None:
    """Write `text` to `path` atomically under its lock: a hard link to `same_as` (which holds it) where one can be
    made, else the text itself."""
    from kbtool import files

    with files.locked(path, "the last report"):
        if same_as is not None:
            temporary = f"{path}.{os.getpid()}.link"
            try:
                os.link(same_as, temporary)
                os.replace(temporary, path)
                return
            except OSError:
                if os.path.lexists(temporary):
                    os.remove(temporary)
        write_atomic(path, text)


def load_last(key: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """The last report of run key `key` (None: of all), or None when none was saved. One that cannot be read is a
    KbtoolError."""
    path = last_report_path(key)
    if not os.path.lexists(path):
        return None
    return read_report(path)


def last_failures(
    seed: int, grid: str, say: Callable[[str], None], keys: Optional[Sequence[str]] = None
) -> Optional[Dict[str, Any]]:
    """--last-failed: {backend: keys} of what failed in the last check of the first of `keys` that has one (run_keys;
    None: the last check of all), or None (run everything, as `say` tells the user). A last report that cannot be
    read is a KbtoolError saying how to start afresh."""
    from kbtool.plan import failures_of

    last = None
    for key in list(keys) if keys is not None else [None]:
        try:
            last = load_last(key)
        except KbtoolError as exc:
            raise KbtoolError(f"{exc} (delete {last_report_path(key)} to start afresh)")
        if last is not None:
            break
    if last is None:
        say(
            "kbtool: no last run recorded; running everything{}".format(
                " (--last-failed reads the last check with this -o report, else in this directory)"
                if keys is not None
                else ""
            )
        )
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
