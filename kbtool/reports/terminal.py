"""Terminal: a summary of the report that fits a screen, whatever the results.

    verbosity 1 (default)  a header; one line per backend (counts, conformance); the unexplained failures, grouped
                           by backend × op × status (or × message, when one message spans ops), as many groups as
                           fit about 30 rows (5 to 15), each with its first message and repro; known differences grouped by reason (the 10 most frequent, grown
                           and stale entries always); one line of documentation-example counts; the verdict.
                           The op × backend matrix only for a run of at most MATRIX_OPS ops.
    verbosity 2 (-v)       everything: the matrix, every failure with its details, every reason, every example.
    verbosity 0 (-q)       the verdict line alone.

The verdict line is always the last line. Text from backends is shown as text: no ANSI escape or control character
reaches the terminal (text.plain) and no rich markup is interpreted (escape, or rich Text objects).
"""

import math
from typing import Any, Dict, List, Optional, Tuple

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.table import Table
from rich.text import Text

from ..results import SEVERITY, BackendStatus, Status
from .assemble import verdict_reasons
from .matrix import SYMBOLS, build, doc_claims
from .summary import (
    COUNT_COLUMNS,
    backend_label,
    backend_rows,
    changed_results,
    claim_kind,
    count_columns,
    details_text,
    failure_groups,
    known_groups,
    resources_line,
    settings_line,
    short_versions,
    unexplained,
)
from .summary import ordered as _ordered
from .text import cell, plain, plural

Record = Dict[str, Any]  # a report, or one of its records, as JSON data

MATRIX_OPS = 5  # a run of this many ops or fewer shows its matrix by default (the usual `--op X` loop)
FAILURE_ROWS = 30  # screen rows the unexplained failures may take by default ...
FAILURE_GROUPS = (5, 15)  # ... showing at least 5 groups and at most 15
KNOWN_REASONS = 10  # known-difference reasons shown by default
MESSAGE_CHARS = 200  # a failure's message is cut here by default (-v shows it whole)
_RANK = [str(s) for s in SEVERITY]


def escape(text: Any) -> str:
    """A table cell: no markup, no control character, one line."""
    return _markup_escape(cell(text))


def _names(value: Any) -> str:
    """An entry's op or backend field: a glob or a list of them."""
    return ", ".join(value) if isinstance(value, list) else str(value)


STYLES = {
    str(k): v
    for k, v in {
        Status.PASS: "green",
        "known": "yellow",
        Status.FAIL: "red",
        Status.ERROR: "red",
        Status.CRASH: "bold red",
        Status.TIMEOUT: "magenta",
        Status.UNSUPPORTED: "dim",
        Status.COULD_NOT_START: "bold red",
        Status.CHANGED: "bold magenta",
        Status.NONDETERMINISTIC: "bold yellow",
    }.items()
}


def render(report: Record, console: Optional[Console] = None, verbosity: int = 1) -> str:
    """Print the summary of `report` on `console` (stdout by default); returns "" (the text is printed)."""
    console = console or Console()
    if verbosity > 0:
        _header(report, console, verbosity)
        if verbosity >= 2 or len({r["op"] for r in report["results"]}) <= MATRIX_OPS:
            _matrix(report, console)
        _backends(report, console, verbosity)
        _failures(report, console, verbosity)
        _known(report, console, verbosity)
        _doc_examples(report, console, verbosity)
    console.print(verdict_line(report), highlight=False, soft_wrap=True)
    return ""


_count = plural


def _say(console: Console, text: Any, **options: Any) -> None:
    console.print(text, highlight=False, soft_wrap=True, **options)


# ------------------------------------------------------------------------------------------------ header
def _header(report: Record, console: Console, verbosity: int) -> None:
    spec = report.get("spec") or {}
    parts = [
        "seed {}".format(report.get("seed")),
        "{}, {}".format(_count(spec.get("ops", "?"), "op"), _count(spec.get("cases", "?"), "case")),
        "grid {}".format(report.get("grid", "pairwise")),
    ]
    if report.get("filters"):
        parts.append(", ".join(report["filters"]))
    parts.append("kbtool {}".format(report.get("kbtool", "")))
    if verbosity >= 2:
        parts.append("created {}".format(report.get("created", "?")))
        if report.get("resources"):
            parts.append(resources_line(report["resources"]))
    _say(console, "[bold]kbtool check[/] · " + escape(" · ".join(parts)))
    settings = settings_line(report)
    if settings:
        _say(console, escape(settings))


# ------------------------------------------------------------------------------------------------ matrix
def _matrix(report: Record, console: Console) -> None:
    backends, rows = build(report)
    if not rows:
        return
    info = {b["name"]: b for b in report["backends"]}
    backends = _ordered(report, backends)
    table = Table(box=box.SIMPLE_HEAVY)  # no title: the header line above already names the run and its seed
    table.add_column("op", style="bold")
    for name in backends:
        label = (
            backend_label(name, info[name])
            if info[name]["status"] == BackendStatus.AVAILABLE.value
            else "{} ({})".format(name, info[name]["status"])
        )
        table.add_column(escape(label + "\n" + short_versions(info[name], 1)), justify="center")
    for row in rows:
        cells = []
        for name in backends:
            cell = row["cells"][name]
            if cell["status"] is None:
                cells.append("")
                continue
            cells.append(
                "[{}]{} {}/{}[/]".format(STYLES[cell["status"]], SYMBOLS[cell["status"]], cell["passed"], cell["total"])
            )
        table.add_row(escape(row["op"]), *cells)
    console.print(table)


# ------------------------------------------------------------------------------------------------ backends
# dropped in this order, while all zero, when the table is wider than the console (CI logs are 80 wide)
_DROPPABLE = [
    "could_not_start",
    "changed",
    "nondeterministic",
    "timeout",
    "crash",
    "unsupported",
    "error",
    "fail",
    "known",
]
_KEYS = ["backend", "version", "results"] + [key for key, _ in COUNT_COLUMNS] + ["conformance", "unexplained"]


def _keys(report: Record) -> List[str]:
    """The backend table's column keys for this report (summary.count_columns: a --repeat column where it has one)."""
    return (
        ["backend", "version", "results"] + [key for key, _ in count_columns(report)] + ["conformance", "unexplained"]
    )


def _fit(
    header: List[str], rows: List[List[str]], width: int, verbosity: int, keys: Optional[List[str]] = None
) -> List[int]:
    """Column indices to show: every one that fits; where the table is too wide, the versions go first (-v keeps
    them), then count columns that are zero on every backend."""
    keys = keys or _KEYS
    keep = [
        i
        for i, key in enumerate(keys)
        if key not in ("could_not_start", "changed", "nondeterministic") or any(row[i] != "0" for row in rows)
    ]

    def wide() -> bool:
        # rich's padding (0, 1) without edges: two spaces between columns
        return sum(max(cell_len(t[i]) for t in [header] + rows) for i in keep) + 2 * (len(keep) - 1) > width

    if wide() and verbosity < 2:
        keep.remove(1)
    for key in _DROPPABLE:
        if not wide():
            break
        i = keys.index(key) if key in keys else -1
        if i in keep and all(row[i] == "0" for row in rows):
            keep.remove(i)
    return keep


def _backends(report: Record, console: Console, verbosity: int) -> None:
    header, rows = backend_rows(report, verbosity)
    if rows:
        keys = _keys(report)
        keep = _fit(header, rows, console.width, verbosity, keys)
        table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="bold")
        for i in keep:
            table.add_column(header[i], justify="left" if i < 2 else "right", no_wrap=not (verbosity >= 2 and i == 1))
        for row in rows:
            bad = row[-1] != "0"
            styles = dict(
                {key: "dim" if row[i] == "0" else STYLES.get(key, "") for i, key in enumerate(keys)},
                backend="bold",
                version="",
                results="",
                conformance="red" if bad else "green",
                unexplained="bold red" if bad else "dim",
            )
            table.add_row(*[Text(row[i], style=styles[keys[i]]) for i in keep])
        console.print(table)
    for b in report["backends"]:
        if b["status"] != BackendStatus.AVAILABLE.value:
            _say(
                console,
                "[yellow]{}[/]: {} — {}".format(escape(b["name"]), escape(b["status"]), escape(b.get("reason", ""))),
            )
        for mode, why in sorted((b.get("unsupported_modes") or {}).items()):
            _say(
                console,
                "[yellow]{}[/]: {} mode unsupported, none of its cases ran in it — {}".format(
                    escape(b["name"]), mode, escape(why)
                ),
            )
    if verbosity >= 2:
        for b in report["backends"]:
            if b.get("start_output"):
                _say(
                    console,
                    "[dim]{} printed while starting: {}[/]".format(escape(b["name"]), escape(b["start_output"])),
                )


# ------------------------------------------------------------------------------------------------ failures
def _pick(
    groups: List[Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]]], budget_rows: int, width: int
) -> List[Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]]]:
    """The groups the default view shows: taken round-robin over the backends (so every backend's failures are
    seen), while they fit `budget_rows` screen rows (at least FAILURE_GROUPS[0], at most FAILURE_GROUPS[1])."""
    queues: Dict[str, List[Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]]]] = {}
    for item in groups:
        queues.setdefault(item[0][0], []).append(item)
    picked: List[Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]]] = []
    rows = 0
    while any(queues.values()) and len(picked) < FAILURE_GROUPS[1]:
        for backend in list(queues):
            if not queues[backend] or len(picked) >= FAILURE_GROUPS[1]:
                continue
            item = queues[backend][0]
            need = _group_rows(item, width)
            if rows + need > budget_rows and len(picked) >= FAILURE_GROUPS[0]:
                queues = {}
                break
            queues[backend].pop(0)
            picked.append(item)
            rows += need
    keep = {id(item) for item in picked}
    return [item for item in groups if id(item) in keep]


def _rows(line: str, width: int) -> int:
    return max(1, math.ceil(cell_len(line) / max(width, 1)))


def _cut(value: Any, limit: int) -> str:
    text = plain(value).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _group_lines(
    item: Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]], verbosity: int = 1
) -> Tuple[str, str, str]:
    """One group as (marker, what failed with the first result's message, repro), plain text."""
    (backend, status, ops), records = item
    first = records[0]
    if len(ops) == 1:
        what = f"{cell(ops[0])} on {cell(backend)}"
    else:
        what = "{} ops on {} ({})".format(len(ops), cell(backend), _cut(", ".join(map(cell, ops)), 60))
    if len(records) > 1:
        what += f" · {len(records)} results, the first"  # more than one
    message = first.get("message") or ""
    what = f" {what}: {_cut(message, MESSAGE_CHARS) if verbosity < 2 else plain(message)}"
    return "  {} {}".format(SYMBOLS.get(status, "?"), status), plain(what), "      " + plain(first.get("repro") or "")


def _group_rows(item: Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]], width: int) -> int:
    marker, what, repro = _group_lines(item)
    return _rows(marker + what, width) + _rows(repro, width)


def _failures(report: Record, console: Console, verbosity: int) -> None:
    records = unexplained(report)
    if not records:
        return
    groups = failure_groups(report)
    _say(
        console,
        "[bold red]Unexplained failures[/] ({} in {}):".format(
            _count(len(records), "result"), _count(len(groups), "group")
        ),
    )
    if verbosity >= 2:
        for r in records:
            _say(
                console,
                Text.assemble(
                    ("  {} {}".format(SYMBOLS.get(r["status"], "?"), r["status"]), STYLES.get(r["status"], "")),
                    plain(
                        " {} {} on {} ({}): {}".format(
                            cell(r["op"]), cell(r["case"]), cell(r["backend"]), cell(r["mode"]), r.get("message", "")
                        )
                    ),
                ),
            )
            numbers = details_text(r.get("details"))
            if numbers:
                _say(console, "      " + escape(numbers))
            for side, text in sorted((r.get("captured") or {}).items()):
                _say(console, f"      [dim]{side} printed: {escape(_cut(text, 1000))}[/]")
            _say(console, "      reproduce: {}".format(escape(r.get("repro", ""))))
        return
    picked = _pick(groups, FAILURE_ROWS, console.width)
    for item in picked:
        marker, what, repro = _group_lines(item)
        _say(console, Text.assemble((marker, STYLES.get(item[0][1], "")), what))
        _say(console, Text(repro))
    shown = {id(item) for item in picked}
    rest = [item for item in groups if id(item) not in shown]
    if rest:
        _say(
            console,
            "  … {} ({}): -v lists every one (with --status unexplained, only those); the JSON report "
            "(-o FILE.json) has them all".format(
                _count(len(rest), "more group"), _count(sum(len(item[1]) for item in rest), "result")
            ),
        )


# ------------------------------------------------------------------------------------------------ known
def _known(report: Record, console: Console, verbosity: int) -> None:
    groups = known_groups(report)
    if groups:
        _say(
            console,
            "[bold]Known differences[/] ({}, {}; re-checked this run):".format(
                _count(sum(g["results"] for g in groups), "result"), _count(len(groups), "reason")
            ),
        )
        shown = groups if verbosity >= 2 else groups[:KNOWN_REASONS]
        if verbosity >= 2:
            for g in shown:
                _say(
                    console,
                    "  [yellow]≈[/] {} on {}, {} ({}): {}".format(
                        _count(g["results"], "result"),
                        escape(", ".join(g["backends"])),
                        _count(len(g["ops"]), "op"),
                        escape(", ".join(g["ops"])),
                        escape(g["reason"]),
                    ),
                )
        else:
            rows = [
                (
                    str(g["results"]),
                    ", ".join(g["backends"]),
                    g["ops"][0] if len(g["ops"]) == 1 else "{} ops".format(len(g["ops"])),
                    g["reason"],
                )
                for g in shown
            ]
            widths = [max(cell_len(plain(row[i])) for row in rows) for i in range(3)]
            for count, backends, ops, reason in rows:
                line = Text("  ")
                line.append("≈ " + count.rjust(widths[0]), style="yellow")
                line.append(
                    "  {}  {}  {}".format(
                        plain(backends).ljust(widths[1]), plain(ops).ljust(widths[2]), plain(reason).replace("\n", " ")
                    )
                )
                console.print(line, no_wrap=True, overflow="ellipsis", highlight=False)
            if len(groups) > len(shown):
                _say(
                    console,
                    "  … {} ({}): -v lists every one".format(
                        _count(len(groups) - len(shown), "more reason"),
                        _count(sum(g["results"] for g in groups[len(shown) :]), "result"),
                    ),
                )
    for result in changed_results(report):
        change = result["changed"]
        _say(
            console,
            "[red]changed known result[/]: {} {} on {} ({}), entry {}: recorded {}; now {}".format(
                escape(result["op"]),
                escape(result["case"]),
                escape(result["backend"]),
                result["mode"],
                change["entry"],
                escape(change["recorded"]),
                escape(change["now"]),
            ),
        )
    for entry in report.get("stale_known_differences", []):
        _say(
            console,
            "[red]stale known difference[/]: {} {} on {}: {} ({})".format(
                escape(_names(entry["op"])),
                escape(str(entry.get("case", "*"))),
                escape(_names(entry["backend"])),
                escape(entry["reason"]),
                escape(entry["note"]),
            ),
        )


# ------------------------------------------------------------------------------------------------ doc examples
def _doc_examples(report: Record, console: Console, verbosity: int) -> None:
    claims = doc_claims(report)
    if not claims:
        return
    if verbosity < 2:
        kinds = [claim_kind(c) for c in claims]
        _say(
            console,
            "[bold]Documentation examples[/]: {} shown by the docs: [green]{} hold on every backend[/], "
            "[yellow]{} on some[/], [red]{} on none[/], {} text (not judged) (-v lists them)".format(
                len(claims), kinds.count("holds"), kinds.count("some"), kinds.count("wrong"), kinds.count("text")
            ),
        )
        return
    _say(console, "[bold]Documentation examples[/] (what each doc version shows vs what ran):")
    for c in claims:
        kind = claim_kind(c)
        if kind == "text":
            verdict = "[dim]text (a repr or random draw): shown, not judged[/]"
        elif kind == "holds":
            verdict = "[green]holds on {}[/]".format(escape(", ".join(c["holds"])))
        elif kind == "wrong":
            verdict = "[red]wrong on every backend run ({})[/]".format(escape(", ".join(c["fails"])))
        else:
            verdict = "[yellow]holds on {} only; not on {}[/]".format(
                escape(", ".join(c["holds"])), escape(", ".join(c["fails"]))
            )
        _say(
            console,
            "  {} {} \\[{}] shows {}: {}".format(
                escape(c["op"]), escape(c["case"]), escape(", ".join(c["docs"])), escape(c["shown"]), verdict
            ),
        )


# ------------------------------------------------------------------------------------------------ verdict
def verdict_line_text(report: Record) -> str:
    """The verdict line as plain text."""
    return Text.from_markup(verdict_line(report)).plain


def verdict_line(report: Record) -> str:
    """The last line (rich markup): how many results, how long, and the verdict with its reasons."""
    summary = report["summary"]
    n_known = sum(c.get("known", 0) for c in summary["per_backend"].values())
    if summary["ok"]:
        verdict = "[green]all pass[/]" if not n_known else f"[green]no unexplained divergence[/] ({n_known} known)"
    else:
        verdict = "[red]{}[/]".format(escape(", ".join(verdict_reasons(report))))
    results = summary.get("results", len(report["results"]))
    return "{} in {:.1f} s: {}".format(_count(results, "result"), report["wall_seconds"], verdict)
