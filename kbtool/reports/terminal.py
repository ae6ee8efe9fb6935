"""Terminal: a summary of the report that fits a screen, whatever the results.

    verbosity 1 (default)  a header; one line per backend (pass as is first, counts, conformance); the unexplained
                           failures, grouped
                           by backend × op × status (or × message, when one message spans ops), as many groups as
                           fit about 30 rows (4 to 15), each with its first message, call and repro; known differences grouped by reason (the 10 most frequent, grown
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
from typing import Any, Dict, List, Optional, Tuple

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kbtool.reports import backend_table
from kbtool.reports.console import (
    BAND_STYLES,
    SHELL_WORD,
    STYLES,
    entry_names,
    escape,
    pack,
    say,
    say_command,
    say_items,
)
from kbtool.reports.matrix import SYMBOLS, build, doc_claims
from kbtool.reports.matrix import symbols as present_symbols
from kbtool.reports.summary import (
    PASS_BANDS,
    backend_label,
    changed_results,
    claim_kind,
    details_text,
    failure_groups,
    known_groups,
    pass_as_is_text,
    pass_band,
    release_pins,
    release_versions,
    resources_line,
    run_pass_as_is,
    self_test,
    settings_items,
    short_versions,
    unexplained,
)
from kbtool.reports.summary import ordered as _ordered
from kbtool.reports.text import cell, plain, plural
from kbtool.reports.verdict import verdict_reasons
from kbtool.results import SEVERITY, BackendStatus
from kbtool.runners import names
from kbtool.specs import call

Record = Dict[str, Any]  # a report, or one of its records, as JSON data

MATRIX_OPS = 5  # a run of this many ops or fewer shows its matrix by default (the usual `--op X` loop)
FAILURE_ROWS = 26  # screen rows the unexplained failures may take by default (the legends take the rest of 30) ...
FAILURE_GROUPS = (4, 15)  # ... showing at least 4 groups (each with its call) and at most 15
KNOWN_REASONS = 10  # known-difference reasons shown by default
MESSAGE_CHARS = 200  # a failure's message is cut here by default (-v shows it whole) ...
GROUP_LINES = 3  # ... and where its group's line would take more screen lines than this
CALL_LINES = 1  # a group's call, at most, on the screen (-v: whole)
CALL_FIRST, CALL_INDENT = "      call: ", "          "  # a failure's call (kbtool/specs/call.py), under its message
_RANK = [str(s) for s in SEVERITY]


def render(report: Record, console: Optional[Console] = None, verbosity: int = 1) -> str:
    """Print the summary of `report` on `console` (stdout by default); returns "" (the text is printed)."""
    console = console or Console()
    if verbosity > 0:
        _header(report, console, verbosity)
        if verbosity >= 2 or len({r["op"] for r in report["results"]}) <= MATRIX_OPS:
            _matrix(report, console)
        backend_table.render(report, console, verbosity)
        _failures(report, console, verbosity)
        _known(report, console, verbosity)
        _doc_examples(report, console, verbosity)
    _verdict(report, console)
    return ""


_count = plural
SELF_TEST = "self-test (numpy, the reference, against itself; no Keras backend checked)"


def _header(report: Record, console: Console, verbosity: int) -> None:
    spec = report.get("spec") or {}
    parts = [
        "seed {}".format(report.get("seed")),
        "{}, {}".format(_count(spec.get("ops", "?"), "op"), _count(spec.get("cases", "?"), "case")),
        "grid {}".format(report.get("grid", "pairwise")),
    ]
    if report.get("filters"):
        parts.append(", ".join(report["filters"]))
    if self_test(report):
        parts.append(SELF_TEST)
    parts.append("kbtool {}".format(report.get("kbtool", "")))
    if verbosity >= 2:
        parts.append("created {}".format(report.get("created", "?")))
        if report.get("resources"):
            parts.append(resources_line(report["resources"]))
    lines = pack("kbtool check · ", [plain(p) for p in parts], console.width, " · ", "  ")
    first = Text.assemble(("kbtool check", "bold"), lines[0][len("kbtool check") :])
    for line in [first] + [Text(line) for line in lines[1:]]:
        say(console, line, overflow="fold")
    settings = settings_items(report)
    if settings:
        say_items(console, "keras.json settings: ", [plain(item) for item in settings])


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
    say_items(console, "Each cell: its worst result (", legend[:-1] + [legend[-1] + ")"] if legend else [], ", ", "  ")
    bands = Text("  passed/total shaded by pass as is: ")
    for i, (band, words) in enumerate(PASS_BANDS):
        bands.append(words, style=BAND_STYLES[band])
        if i < len(PASS_BANDS) - 1:
            bands.append(", ")
    say(console, bands)


def _cell(cell: Record) -> Text:
    """A matrix cell: the worst result's symbol in its status's colour, passed/total in its band's."""
    if cell["status"] is None:
        return Text("")
    return Text.assemble(
        (SYMBOLS[cell["status"]], STYLES[cell["status"]]),
        " ",
        ("{}/{}".format(cell["passed"], cell["total"]), BAND_STYLES[pass_band(cell["passed"], cell["total"])]),
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


def _cut_lines(lines: List[str], most: int, width: int) -> List[str]:
    """At most `most` lines, the last ending in `…` when any were left out."""
    if len(lines) <= most:
        return lines
    kept = lines[:most]
    kept[-1] = (kept[-1] if cell_len(kept[-1]) < width else kept[-1][: width - 1].rstrip()) + "…"
    return kept


def _group_screen(
    item: Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]], width: int
) -> Tuple[str, List[str], List[str]]:
    """A group as the screen shows it: (marker, the lines of what failed, wrapped under the marker, the repro's
    lines)."""
    marker, what, repro = _group_lines(item)
    lines = pack(marker + " ", what.lstrip(" ").split(" "), width, " ", "      ")
    called = [plain(line) for line in call.lines_of(item[1][0], width, CALL_FIRST, CALL_INDENT, most=CALL_LINES)]
    # the message and the call are cut to fit a screen of groups (-v has both whole)
    lines = _cut_lines(lines, GROUP_LINES, width)
    called = _cut_lines(called, CALL_LINES, width)
    return marker, lines, called + pack("      ", SHELL_WORD.findall(repro), width, " ", "          ", tail=" \\")


def _group_rows(item: Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]], width: int) -> int:
    _, lines, repro = _group_screen(item, width)
    return sum(_rows(line, width) for line in lines + repro)


def _failures(report: Record, console: Console, verbosity: int) -> None:
    records = unexplained(report)
    if not records:
        return
    groups = failure_groups(report)
    say(
        console,
        "[bold red]Unexplained failures[/] ({} in {}):".format(
            _count(len(records), "result"), _count(len(groups), "group")
        ),
    )
    if verbosity >= 2:
        for r in records:
            say(
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
                say(console, "      " + escape(numbers))
            for line in call.lines_of(r, console.width, CALL_FIRST, CALL_INDENT):
                say(console, Text(plain(line)), overflow="fold")
            for side, text in sorted((r.get("captured") or {}).items()):
                say(console, f"      [dim]{side} printed: {escape(_cut(text, 1000))}[/]")
            say_command(console, "reproduce: " + (r.get("repro") or ""), "      ")
        return
    picked = _pick(groups, FAILURE_ROWS, console.width)
    for item in picked:
        marker, lines, repro = _group_screen(item, console.width)
        say(console, Text.assemble((marker, STYLES.get(item[0][1], "")), lines[0][len(marker) :]), overflow="fold")
        for line in lines[1:] + repro:
            say(console, Text(line), overflow="fold")
    shown = {id(item) for item in picked}
    rest = [item for item in groups if id(item) not in shown]
    if rest:
        more = (
            "… {} ({}): -v lists every one (with --status unexplained, only those); the JSON report (-o FILE.json) "
            "has them all".format(_count(len(rest), "more group"), _count(sum(len(item[1]) for item in rest), "result"))
        )
        say_items(console, "  ", more.split(" "), " ", "    ")


# ------------------------------------------------------------------------------------------------ known
def _known(report: Record, console: Console, verbosity: int) -> None:
    groups = known_groups(report)
    if groups:
        say(
            console,
            "[bold]Known differences[/] ({}, {}; re-checked this run):".format(
                _count(sum(g["results"] for g in groups), "result"), _count(len(groups), "reason")
            ),
        )
        shown = groups if verbosity >= 2 else groups[:KNOWN_REASONS]
        if verbosity >= 2:
            for g in shown:
                say(
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
            _known_rows(shown, console)
            if len(groups) > len(shown):
                say(
                    console,
                    "  … {} ({}): -v lists every one".format(
                        _count(len(groups) - len(shown), "more reason"),
                        _count(sum(g["results"] for g in groups[len(shown) :]), "result"),
                    ),
                )
    _known_problems(report, console)


def _known_rows(shown: List[Record], console: Console) -> None:
    """The default view's known-difference reasons: a screen row each (count, backends, ops, the reason cut)."""
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


def _known_problems(report: Record, console: Console) -> None:
    """Known results that changed, and stale known differences: a red line each."""
    for result in changed_results(report):
        change = result["changed"]
        say(
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
        say(
            console,
            "[red]stale known difference[/]: {} {} on {}: {} ({})".format(
                escape(entry_names(entry["op"])),
                escape(str(entry.get("case", "*"))),
                escape(entry_names(entry["backend"])),
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
        say(
            console,
            "[bold]Documentation examples[/]: {} shown by the docs: [green]{} hold on every backend[/], "
            "[yellow]{} on some[/], [red]{} on none[/], {} text (not judged) (-v lists them)".format(
                len(claims), kinds.count("holds"), kinds.count("some"), kinds.count("wrong"), kinds.count("text")
            ),
        )
        return
    say(console, "[bold]Documentation examples[/] (what each doc version shows vs what ran):")
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
        say(
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
        say(console, line)
    else:
        say(console, facts + ":")
        say(console, "  " + verdict)


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
    if self_test(report):  # the reference against itself: never read as a parity result
        verdict = f"[yellow]self-test[/], {verdict}"
    results = summary.get("results", len(report["results"]))
    facts = "{} in {:.1f} s".format(_count(results, "result"), report["wall_seconds"])
    run = run_pass_as_is(report)
    if run["ran"]:
        facts += ", pass as is [{}]{}[/]".format(
            BAND_STYLES[pass_band(run["pass"], run["ran"])], escape(pass_as_is_text(run))
        )
    return facts, verdict
