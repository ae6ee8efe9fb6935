"""The terminal view's backend table, and the backends that did not run.

A row per backend that ran (pass as is first, its counts, conformance and the unexplained count), leaving out
columns, least telling first, rather than cut a number at the console's width; under it (-v) every backend's
versions, wrapped (a 66-character openvino version never pushes pass as is out); then the backends that did not run,
their unsupported modes, and (-v) which backends printed while starting (the text is in the report, never here)."""

from typing import Any, Dict, List, Optional, Tuple

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kbtool.reports.console import BAND_STYLES, STYLES, escape, pack, say, say_items
from kbtool.reports.summary import (
    COUNT_COLUMNS,
    PASS_AS_IS_LEGEND,
    backend_counts,
    backend_rows,
    count_columns,
    pass_band,
    release_pins,
    short_versions,
    table_backends,
)
from kbtool.reports.text import plural
from kbtool.results import BackendStatus

Record = Dict[str, Any]  # a report, or one of its records, as JSON data

# dropped in this order, while all zero, when the table is wider than the console (CI logs are 80 wide)
_DROPPABLE = [
    "could_not_start",
    "not_reached",
    "changed",
    "nondeterministic",
    "timeout",
    "crash",
    "unsupported",
    "error",
    "fail",
    "known",
]
# then these, which "pass as is" already shows (752/1310: the passes and the results that ran)
_REDUNDANT = ["results", "pass"]
# and last, only where the table is still too wide: " (active)" becomes " *", then the count columns that are not
# zero go (a line under the table names them); pass as is, conformance and unexplained always stay, no number is cut
# and no backend name folds
_LAST_RESORT = [
    "changed",
    "nondeterministic",
    "not_reached",
    "timeout",
    "crash",
    "error",
    "unsupported",
    "fail",
    "known",
]
ACTIVE, ACTIVE_SHORT = " (active)", " *"
_KEYS = (
    ["backend", "version", "pass_as_is", "results"] + [key for key, _ in COUNT_COLUMNS] + ["conformance", "unexplained"]
)


def _keys(report: Record) -> List[str]:
    """The backend table's column keys for this report (summary.count_columns: a --repeat column where it has one)."""
    return (
        ["backend", "version", "pass_as_is", "results"]
        + [key for key, _ in count_columns(report)]
        + ["conformance", "unexplained"]
    )


def _fit(
    header: List[str],
    rows: List[List[str]],
    width: int,
    verbosity: int,
    keys: Optional[List[str]] = None,
    sweep: bool = False,
) -> Tuple[List[int], List[int]]:
    """(column indices to show, indices left out that were not all zero). Every column fits, or, in this order:
    the versions go (-v keeps them), the count columns that are zero on every backend, results and pass (pass as
    is shows both), then the active backend's " (active)" becomes " *" (in `rows`), then the other count columns
    go. Numbers are never cut; a backend name folds only where the table cannot fit otherwise. In a `sweep` (release
    backends: the version column says what tells them apart) the versions go after results and pass, not first."""
    keys = keys or _KEYS
    keep = [
        i
        for i, key in enumerate(keys)
        if key not in ("could_not_start", "changed", "nondeterministic", "not_reached")
        or any(row[i] != "0" for row in rows)
    ]

    def wide() -> bool:
        # rich's padding (0, 1) without edges: two spaces between columns
        return sum(max(cell_len(t[i]) for t in [header] + rows) for i in keep) + 2 * (len(keep) - 1) > width

    def drop(key: str, only_zero: bool) -> bool:
        i = keys.index(key) if key in keys else -1
        if i in keep and (not only_zero or all(row[i] == "0" for row in rows)):
            keep.remove(i)
            return True
        return False

    if wide() and not sweep:  # -v lists the versions under the table
        keep.remove(1)
    for key in _DROPPABLE:
        if wide():
            drop(key, only_zero=True)
    for key in _REDUNDANT:
        if wide():
            drop(key, only_zero=False)
    if wide() and sweep:
        keep.remove(1)
    if wide():
        for row in rows:
            if row[0].endswith(ACTIVE):
                row[0] = row[0][: -len(ACTIVE)] + ACTIVE_SHORT
    dropped: List[int] = []
    for key in _LAST_RESORT:
        if wide() and key in keys and drop(key, only_zero=False):
            dropped.append(keys.index(key))
    return keep, dropped


def _align_pass_as_is(rows: List[List[str]], i: int) -> None:
    """`92.0 % (2491/2706)` over ` 52.7 %  (691/1310)`: the percents and the counts each in line."""
    parts = [row[i].split(" (", 1) if " (" in row[i] else [row[i], ""] for row in rows]
    wide = [max(cell_len(p[k]) for p in parts) for k in (0, 1)]
    for row, (pct, counts) in zip(rows, parts):
        row[i] = pct.rjust(wide[0]) + (" " + ("(" + counts).rjust(wide[1] + 1) if wide[1] else "")


def render(report: Record, console: Console, verbosity: int) -> None:
    """The backends: a table of those that ran (a row each: pass as is first, its counts, conformance), then a line
    for those that did not run, their unsupported modes and (-v) what they printed while starting."""
    _table(report, console, verbosity)
    if verbosity >= 2:
        _versions(report, console)
    _not_run(report, console, verbosity)


def _table(report: Record, console: Console, verbosity: int) -> None:
    # the table's version column is the short one at every verbosity: -v's every version goes under the table
    header, rows = backend_rows(report, min(verbosity, 1))
    if rows:
        keys = _keys(report)
        _align_pass_as_is(rows, keys.index("pass_as_is"))
        sweep = any(release_pins(b["name"]) for b in report["backends"])
        keep, dropped = _fit(header, rows, console.width, verbosity, keys, sweep)
        counts = backend_counts(report)
        names = table_backends(report, counts)
        table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold")
        for i in keep:
            table.add_column(
                header[i],
                justify="left" if i < 2 else "right",
                no_wrap=i != 0,
                overflow="fold" if i == 0 else "ellipsis",
                min_width=max(cell_len(t[i]) for t in [header] + rows) if i else None,
            )
        for name, row in zip(names, rows):
            bad = row[-1] != "0"
            c = counts[name]
            band = pass_band(c.get("pass", 0), c["ran"])
            styles = dict(
                {key: "dim" if row[i] == "0" else STYLES.get(key, "") for i, key in enumerate(keys)},
                backend="bold",
                version="",
                pass_as_is=BAND_STYLES.get(band, ""),
                results="",
                conformance="red" if bad else "green",
                unexplained="bold red" if bad else "dim",
            )
            table.add_row(*[Text(row[i], style=styles[keys[i]]) for i in keep])
        console.print(table)
        notes = [PASS_AS_IS_LEGEND]
        if any(row[0].endswith(ACTIVE_SHORT) for row in rows):
            notes.append("* the active backend")
        if dropped:
            notes.append("left out at this width: {}".format(", ".join(header[i] for i in dropped)))
        say(console, Text(" · ".join(notes), style="dim"))


def _versions(report: Record, console: Console) -> None:
    """-v: each backend that ran with every version it reported, a line each, wrapped between packages."""
    infos = [b for b in report["backends"] if b.get("versions")]
    if not infos:
        return
    say(console, Text("versions:", style="bold"))
    width = max(cell_len(b["name"]) for b in infos)
    for b in infos:
        items = short_versions(b, 2).replace(" · ", ", ").split(", ")
        say_items(console, "  {}  ".format(b["name"].ljust(width)), items, ", ", " " * (width + 4))


def _not_run(report: Record, console: Console, verbosity: int) -> None:
    # backends that did not run, those with the same reason (their name aside) on one line: a fresh machine's
    # thirteen "not installed: run `kbtool env install NAME`" read as one
    down: Dict[str, List[str]] = {}
    for b in report["backends"]:
        if b["status"] != BackendStatus.AVAILABLE.value:
            reason = b.get("reason") or ""
            why = reason if reason.startswith(b["status"]) else "{} — {}".format(b["status"], reason)
            down.setdefault(why.replace(b["name"], "NAME"), []).append(b["name"])
    for why, names in down.items():
        text = why if len(names) > 1 else why.replace("NAME", names[0])
        say(console, "[yellow]{}[/]: {}".format(escape(", ".join(names)), escape(text)))
    for b in report["backends"]:
        for mode, why in sorted((b.get("unsupported_modes") or {}).items()):
            # one screen row by default (the reason is cut; -v has it whole)
            say(
                console,
                "[yellow]{}[/]: {} mode unsupported, none of its cases ran in it — {}".format(
                    escape(b["name"]), mode, escape(why)
                ),
                **({} if verbosity >= 2 else {"no_wrap": True, "overflow": "ellipsis"}),
            )
    chatty = [b["name"] for b in report["backends"] if b.get("start_output")]
    if verbosity >= 2 and chatty:
        # start-up logs (TensorFlow's, CNTK's warnings) are kept in the report (backends[].start_output) and, by
        # check, in a log file it names: a third of -v's lines were theirs
        words = "{} printed while starting (kept in the report's backends[].start_output): {}".format(
            plural(len(chatty), "backend"), ", ".join(chatty)
        )
        for line in pack("", words.split(" "), console.width, " ", "  "):
            say(console, Text(line, style="dim"), overflow="fold")
