"""Terminal: a summary of the report that fits a screen, whatever the results.

    verbosity 1 (default)  a header; one line per backend (pass as is first, counts, conformance); the unexplained
                           failures, grouped
                           by backend × op × status (or × message, when one message spans ops), as many groups as
                           fit about 30 rows (5 to 15), each with its first message and repro; known differences grouped by reason (the 10 most frequent, grown
                           and stale entries always); one line of documentation-example counts; the verdict.
                           The op × backend matrix only for a run of at most MATRIX_OPS ops.
    verbosity 2 (-v)       everything: the matrix, every failure with its details, every reason, every example.
    verbosity 0 (-q)       the verdict line alone.

The verdict (ok or not, and why) is always on the last line; the verdict line also gives the whole run's pass as is,
and on a console too narrow for it the verdict goes on a line of its own. No line is wider than the console (80
columns at least): long lines wrap between words (the settings between items, a repro between its arguments, with
a shell continuation `\\` so that it still pastes), the backend table leaves out columns rather than cut a number.
Text from backends is shown as text: no ANSI escape or control character
reaches the terminal (text.plain) and no rich markup is interpreted (escape, or rich Text objects).
"""

import math
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.table import Table
from rich.text import Text

from kbtool.reports.assemble import verdict_reasons
from kbtool.reports.matrix import SYMBOLS, build, doc_claims
from kbtool.reports.matrix import symbols as present_symbols
from kbtool.reports.summary import (
    COUNT_COLUMNS,
    PASS_AS_IS_LEGEND,
    PASS_BANDS,
    backend_counts,
    backend_label,
    backend_rows,
    changed_results,
    claim_kind,
    count_columns,
    details_text,
    failure_groups,
    known_groups,
    pass_as_is_text,
    pass_band,
    release_pins,
    release_versions,
    resources_line,
    run_pass_as_is,
    settings_items,
    short_versions,
    table_backends,
    unexplained,
)
from kbtool.reports.summary import ordered as _ordered
from kbtool.reports.text import cell, plain, plural
from kbtool.results import SEVERITY, BackendStatus, Status
from kbtool.runners import names

Record = Dict[str, Any]  # a report, or one of its records, as JSON data

MATRIX_OPS = 5  # a run of this many ops or fewer shows its matrix by default (the usual `--op X` loop)
FAILURE_ROWS = 26  # screen rows the unexplained failures may take by default (the legends take the rest of 30) ...
FAILURE_GROUPS = (5, 15)  # ... showing at least 5 groups and at most 15
KNOWN_REASONS = 10  # known-difference reasons shown by default
MESSAGE_CHARS = 200  # a failure's message is cut here by default (-v shows it whole) ...
GROUP_LINES = 3  # ... and where its group's line would take more screen lines than this
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


# a matrix cell's passed/total (and a backend's pass as is) shaded by its pass-as-is band (summary.pass_band)
BAND_STYLES = {"all": "bold green", "most": "green", "half": "yellow", "few": "red", "none": "bold white on red"}


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
    _verdict(report, console)
    return ""


_count = plural


def _say(console: Console, text: Any, **options: Any) -> None:
    """Print a line, wrapped between words at the console's width."""
    console.print(text, highlight=False, **options)


def _items(console: Console, first: str, items: Sequence[str], sep: str = ", ", indent: str = "  ") -> None:
    """`first` and the items joined by `sep`, wrapped between items (an item is never split unless it alone is
    wider than the console); lines after the first are indented. Plain text."""
    for line in _pack(first, items, console.width, sep, indent):
        _say(console, Text(line), overflow="fold")


def _pack(first: str, items: Sequence[str], width: int, sep: str, indent: str, tail: str = "") -> List[str]:
    """The lines of `_items`: `first` (ending with a space, or empty) then the items; `tail` ends each line but the
    last (a shell continuation)."""
    lines: List[str] = []
    line, fresh = first, True  # fresh: the line holds no item yet (an item too wide goes on a line of its own)
    for i, item in enumerate(items):
        last = i == len(items) - 1
        piece = item + ("" if last else sep.rstrip())
        gap = "" if fresh else " "
        if fresh or cell_len(line + gap + piece) + (0 if last else cell_len(tail)) <= width:
            line += gap + piece
        else:
            lines.append(line + tail)
            line = indent + piece
        fresh = False
    lines.append(line)
    return lines


_TOKEN = re.compile(r"""(?:[^\s'"]+|'[^']*'|"(?:\\.|[^"\\])*")+""")


def _command(console: Console, command: str, indent: str) -> None:
    """A shell command (a repro) at `indent`, wrapped between its arguments with ` \\` continuations, so that what
    is pasted from the screen still runs."""
    tokens = _TOKEN.findall(plain(command).replace("\n", " "))
    if not tokens:
        return
    for line in _pack(indent, tokens, console.width, " ", indent + "    ", tail=" \\"):
        _say(console, Text(line), overflow="fold")


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
    lines = _pack("kbtool check · ", [plain(p) for p in parts], console.width, " · ", "  ")
    first = Text.assemble(("kbtool check", "bold"), lines[0][len("kbtool check") :])
    for line in [first] + [Text(line) for line in lines[1:]]:
        _say(console, line, overflow="fold")
    settings = settings_items(report)
    if settings:
        _items(console, "keras.json settings: ", [plain(item) for item in settings])


# ------------------------------------------------------------------------------------------------ matrix
def _matrix(report: Record, console: Console) -> None:
    """The op × backend matrix: each cell its worst result's symbol (coloured by status) and passed/total shaded by
    its pass-as-is band; the backends in as many tables as the console's width needs (never a cell cut)."""
    backends, rows = build(report)
    if not rows:
        return
    info = {b["name"]: b for b in report["backends"]}
    # a backend with no result in any row (not installed, could not start) is said once in the backends table
    backends = [n for n in _ordered(report, backends) if any(row["cells"][n]["status"] is not None for row in rows)]
    if not backends:
        return
    headers, cells = {}, {}
    releases = release_versions(report)
    for name in backends:
        # a release's column: its base over its pins (`tensorflow1` over `[keras=2.2.4]`: the name in two short
        # lines, where `tensorflow1[keras=2.2.4]` would take 24 columns); a base swept beside its releases shows its
        # own versions of the packages they pin
        pins = release_pins(name)
        shown = names.base_of(name) if pins else name
        label = (
            backend_label(shown, info[name])
            if info[name]["status"] == BackendStatus.AVAILABLE.value
            else "{} ({})".format(shown, info[name]["status"])
        )
        under = names.pins_text(name) if pins else releases.get(name) or short_versions(info[name], 1)
        headers[name] = escape(label) + "\n" + escape(under)
        cells[name] = [_cell(row["cells"][name]) for row in rows]
    op_width = max(cell_len(plain(row["op"])) for row in rows)
    # SIMPLE_HEAVY without edges: 1 space of padding each side, a column border between columns (3 per column)
    widths = {
        name: max([cell_len(c.plain) for c in cells[name]] + [min(cell_len(h), 20) for h in headers[name].split("\n")])
        for name in backends
    }
    groups: List[List[str]] = [[]]
    used = op_width + 2
    for name in backends:
        if groups[-1] and used + widths[name] + 3 > console.width:
            groups.append([])
            used = op_width + 2
        groups[-1].append(name)
        used += widths[name] + 3
    for group in groups:
        table = Table(box=box.SIMPLE_HEAVY)  # no title: the header line above already names the run and its seed
        table.add_column("op", style="bold", no_wrap=True)
        for name in group:
            table.add_column(headers[name], justify="center", overflow="fold", min_width=widths[name])
        for i, row in enumerate(rows):
            table.add_row(escape(row["op"]), *[cells[name][i] for name in group])
        console.print(table)
    legend = [f"{SYMBOLS[k]} {k.replace('_', ' ')}" for k in present_symbols(report)]
    _items(console, "Each cell: its worst result (", legend[:-1] + [legend[-1] + ")"] if legend else [], ", ", "  ")
    bands = Text("  passed/total shaded by pass as is: ")
    for i, (band, words) in enumerate(PASS_BANDS):
        bands.append(words, style=BAND_STYLES[band])
        if i < len(PASS_BANDS) - 1:
            bands.append(", ")
    _say(console, bands)


def _cell(cell: Record) -> Text:
    """A matrix cell: the worst result's symbol in its status's colour, passed/total in its band's."""
    if cell["status"] is None:
        return Text("")
    return Text.assemble(
        (SYMBOLS[cell["status"]], STYLES[cell["status"]]),
        " ",
        ("{}/{}".format(cell["passed"], cell["total"]), BAND_STYLES[pass_band(cell["passed"], cell["total"])]),
    )


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
# then these, which "pass as is" already shows (752/1310: the passes and the results that ran)
_REDUNDANT = ["results", "pass"]
# and last, only where the table is still too wide: " (active)" becomes " *", then the count columns that are not
# zero go (a line under the table names them); pass as is, conformance and unexplained always stay, no number is cut
# and no backend name folds
_LAST_RESORT = ["changed", "nondeterministic", "timeout", "crash", "error", "unsupported", "fail", "known"]
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
        if key not in ("could_not_start", "changed", "nondeterministic") or any(row[i] != "0" for row in rows)
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

    if wide() and verbosity < 2 and not sweep:
        keep.remove(1)
    for key in _DROPPABLE:
        if wide():
            drop(key, only_zero=True)
    for key in _REDUNDANT:
        if wide():
            drop(key, only_zero=False)
    if wide() and verbosity < 2 and sweep:
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


def _backends(report: Record, console: Console, verbosity: int) -> None:
    header, rows = backend_rows(report, verbosity)
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
                no_wrap=not ((verbosity >= 2 and i == 1) or i == 0),
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
        _say(console, Text(" · ".join(notes), style="dim"))
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
        _say(console, "[yellow]{}[/]: {}".format(escape(", ".join(names)), escape(text)))
    for b in report["backends"]:
        for mode, why in sorted((b.get("unsupported_modes") or {}).items()):
            # one screen row by default (the reason is cut; -v has it whole)
            _say(
                console,
                "[yellow]{}[/]: {} mode unsupported, none of its cases ran in it — {}".format(
                    escape(b["name"]), mode, escape(why)
                ),
                **({} if verbosity >= 2 else {"no_wrap": True, "overflow": "ellipsis"}),
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


def _group_screen(
    item: Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]], width: int
) -> Tuple[str, List[str], List[str]]:
    """A group as the screen shows it: (marker, the lines of what failed, wrapped under the marker, the repro's
    lines)."""
    marker, what, repro = _group_lines(item)
    lines = _pack(marker + " ", what.lstrip(" ").split(" "), width, " ", "      ")
    if len(lines) > GROUP_LINES:  # the message is cut (-v has it whole)
        lines = lines[:GROUP_LINES]
        lines[-1] = (lines[-1] if cell_len(lines[-1]) < width else lines[-1][: width - 1].rstrip()) + "…"
    return marker, lines, _pack("      ", _TOKEN.findall(repro), width, " ", "          ", tail=" \\")


def _group_rows(item: Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]], width: int) -> int:
    _, lines, repro = _group_screen(item, width)
    return sum(_rows(line, width) for line in lines + repro)


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
            _command(console, "reproduce: " + (r.get("repro") or ""), "      ")
        return
    picked = _pick(groups, FAILURE_ROWS, console.width)
    for item in picked:
        marker, lines, repro = _group_screen(item, console.width)
        _say(console, Text.assemble((marker, STYLES.get(item[0][1], "")), lines[0][len(marker) :]), overflow="fold")
        for line in lines[1:] + repro:
            _say(console, Text(line), overflow="fold")
    shown = {id(item) for item in picked}
    rest = [item for item in groups if id(item) not in shown]
    if rest:
        more = (
            "… {} ({}): -v lists every one (with --status unexplained, only those); the JSON report (-o FILE.json) "
            "has them all".format(_count(len(rest), "more group"), _count(sum(len(item[1]) for item in rest), "result"))
        )
        _items(console, "  ", more.split(" "), " ", "    ")


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
            # the backends and the ops take at most a third and a sixth of the line: the reason gets the rest
            caps = [None, max(12, console.width // 3), max(8, console.width // 6)]
            rows = [(c, _cut(b, caps[1] or 0), _cut(o, caps[2] or 0), r) for c, b, o, r in rows]
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
    """The verdict line as plain text (one line, whatever the console's width)."""
    return Text.from_markup(verdict_line(report)).plain


def _verdict(report: Record, console: Console) -> None:
    """The verdict line; where the console is too narrow for it, the verdict itself (ok or not, and why) goes on
    the last line, under the run's facts."""
    facts, verdict = _verdict_parts(report)
    line = facts + ": " + verdict
    if cell_len(Text.from_markup(line).plain) <= console.width:
        _say(console, line)
    else:
        _say(console, facts + ":")
        _say(console, "  " + verdict)


def verdict_line(report: Record) -> str:
    """The last line (rich markup): how many results, how long, the whole run's pass as is, and the verdict (the
    gate: ok when no result is unexplained) with its reasons."""
    facts, verdict = _verdict_parts(report)
    return facts + ": " + verdict


def _verdict_parts(report: Record) -> Tuple[str, str]:
    summary = report["summary"]
    n_known = sum(c.get("known", 0) for c in summary["per_backend"].values())
    if summary["ok"]:
        verdict = "[green]all pass[/]" if not n_known else f"[green]no unexplained divergence[/] ({n_known} known)"
    else:
        verdict = "[red]{}[/]".format(escape(", ".join(verdict_reasons(report))))
    results = summary.get("results", len(report["results"]))
    facts = "{} in {:.1f} s".format(_count(results, "result"), report["wall_seconds"])
    run = run_pass_as_is(report)
    if run["ran"]:
        facts += ", pass as is [{}]{}[/]".format(
            BAND_STYLES[pass_band(run["pass"], run["ran"])], escape(pass_as_is_text(run))
        )
    return facts, verdict
