"""The terminal view of a bench report (rich): machine, load and peak, the harness's cost per backend, a table of
results (every result up to MAX_ROWS, else the ones furthest behind the fastest backend), the comparison, and a
verdict line.

Every line fits the console's width (80 columns included): plain lines wrap between words, and the results table
keeps one line per result and whole headers by leaving out columns, least telling first, until it fits (a line under
the table names what it left out)."""

import os
import sys
import textwrap
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from rich import box
from rich.console import Console
from rich.table import Table

from kbtool.bench import compare, stats
from kbtool.bench import load as bench_load
from kbtool.bench.report import one_line
from kbtool.bench.units import (
    above_peak,
    against,
    comparison_cells,
    device_peak_lines,
    flags,
    fmt_ratio,
    fmt_seconds,
    measured_cells,
    unstable_note,
    verdict_line,
)
from kbtool.reports.console import escape
from kbtool.reports.text import plain

MAX_ROWS = 200


def sized(stream: Any) -> bool:
    """Whether a stream has a width to keep: a terminal, or COLUMNS set (else a log: lines stay whole)."""
    return stream.isatty() or os.environ.get("COLUMNS", "").isdigit()


def console_for(stream: Any) -> Console:
    """A terminal keeps its own width; COLUMNS, when set, is the width; a log or a pipe gets rows as wide as they
    need (180)."""
    return Console(file=stream, highlight=False, width=None if sized(stream) else 180)


def wrap(text: str, width: int) -> List[str]:
    """A plain line as lines of at most `width` columns, broken between words (continuations indented)."""
    return textwrap.wrap(
        plain(text), width=max(width, 20), subsequent_indent="  ", break_on_hyphens=False, replace_whitespace=False
    ) or [""]


Say = Callable[[str], None]


def render(report: Dict[str, Any], console: Optional[Console] = None, verbose: bool = False) -> None:
    whole = False  # a log's lines stay whole (grep finds them); a terminal's or a given width's are broken
    if console is None:
        console, whole = console_for(sys.stdout), not sized(sys.stdout)
    out = console

    def say(text: str) -> None:  # a plain line: no markup, no escape sequence, broken at the console's width
        for line in [plain(text)] if whole else wrap(text, out.width):
            out.print(line, markup=False, soft_wrap=True, highlight=False)

    for line in machine_lines(report):
        say(line)
    results = report["results"]
    _results(results, console, say, verbose)
    for line in not_measured_lines(results, console.width):
        say(line)
    if report["scaling"] and verbose:
        console.print(scaling_table(report["scaling"]))
    if report.get("comparison"):
        console.print(comparison_table(report["comparison"]))
        for line in compare.gate_lines(report["comparison"]):
            say(line)
    for line in closing_lines(report):
        say(line)


def machine_lines(report: Dict[str, Any]) -> List[str]:
    """What the bench ran on: the machine, its load, its peak, and each backend's status or harness cost."""
    m, peak = report["machine"], report["peak"]
    lines = [
        "machine: {} ({} cores, {:.0f} GiB), Python {}, NumPy {}{}".format(
            m["cpu"], m["cores"], m["memory_gb"], m["python"], m["numpy"], ", " + m["blas"] if m.get("blas") else ""
        )
    ]
    figures = bench_load.describe(m.get("load"))
    if figures:
        lines.append("load: " + figures)
    if peak is None:
        lines.append("peak: not measured (the bench was interrupted first)")
    else:
        lines.append(
            "peak (measured now, all cores): {:.1f} GFLOP/s float32 matmul at {}², {:.1f} GB/s copy of {:.0f} MB".format(
                peak["matmul_gflops"], peak["matmul_n"], peak["copy_gbs"], peak["copy_mb"]
            )
        )
    lines.extend(device_peak_lines(report))
    for b in report["backends"]:
        if b["status"] != "available":
            lines.append("{}: {} ({})".format(b["name"], b["status"].replace("_", " "), b.get("reason")))
        elif b.get("overhead"):
            lines.append(
                "{}: harness {} per call over a bare loop ({} a no-op call)".format(
                    b["name"], fmt_seconds(b["overhead"]["harness_s"]), fmt_seconds(b["overhead"]["noop_call_s"])
                )
            )
    return lines


def _results(results: List[Dict[str, Any]], console: Console, say: Say, verbose: bool) -> None:
    """The results table (every result up to MAX_ROWS or with -v, else the 30 furthest behind) and its notes."""
    shown, note = results, None
    if len(results) > MAX_ROWS and not verbose:
        shown = sorted(
            (r for r in results if r.get("ratio_to_fastest") is not None), key=lambda r: -r["ratio_to_fastest"]
        )[:30]
        note = (
            f"{len(results)} results: the 30 furthest behind the fastest backend are shown (all: -v, -o FILE.md/.html, "
            "--json)"
        )
    if shown:
        table, fit = fitted_table(shown, console.width)
        console.print(table)
        console.print()  # the table ends here: what follows is said of it
        for line in table_notes(shown, fit):
            say(line)
    if note:
        say(note)


def not_measured_lines(results: List[Dict[str, Any]], width: int) -> List[str]:
    """The results not measured (the first 20, with their message) and those whose output varied (flagged)."""
    failed = [r for r in results if r["status"] not in ("ok",)]
    lines = [
        "{} {} {} {}: {}: {}".format(
            r["op"],
            r["size"],
            r["backend"],
            r["mode"],
            r["status"],
            one_line(r.get("message") or "", min(200, max(60, 2 * width - 60))),
        )
        for r in failed[:20]
    ]
    if len(failed) > 20:
        lines.append(f"... and {len(failed) - 20} more not measured (see --json)")
    for r in [r for r in results if r.get("output_varies")][:20]:
        lines.append(
            "{} {} {} {}: flagged: {}".format(r["op"], r["size"], r["backend"], r["mode"], one_line(r["message"], 200))
        )
    return lines


def closing_lines(report: Dict[str, Any]) -> List[str]:
    """The bench's notes, its slowest pairs, the load and stability warnings, and the verdict line last."""
    results = report["results"]
    lines = list(report["summary"].get("notes") or [])  # what was not benched; how --versions timed its releases
    slowest = stats.slowest_pairs(results, 3)
    if slowest and len({r["backend"] for r in results}) > 1:
        lines.append(
            "slowest relative to the fastest backend: "
            + "; ".join(
                "{} on {} {} ({} {})".format(
                    r["op"], r["backend"], fmt_ratio(r["ratio_to_fastest"]), r["size"], r["mode"]
                )
                for r in slowest
            )
        )
    lines.extend(filter(None, [bench_load.warning(report), unstable_note(report)]))
    lines.append(verdict_line(report))
    return lines


# the results table's columns: (name, justify); the cells of a result come from row_cells in this order
COLUMNS: Tuple[Tuple[str, str], ...] = (
    ("op", "left"),
    ("size", "left"),
    ("backend", "left"),
    ("mode", "left"),
    ("one-time", "right"),
    ("median ± IQR", "right"),
    ("min", "right"),
    ("GFLOP/s", "right"),
    ("GB/s", "right"),
    ("% peak", "right"),
    ("× fastest", "right"),
    ("flags", "left"),
)
# what a narrow console leaves out, first to last ("flags" gives way to a mark: * unstable, ! above the peak); past
# these, sizes and modes are abbreviated (s/m/l, sym), and last the op and backend names fold
LEAVE_OUT = ("flags", "min", "one-time", "GB/s", "GFLOP/s", "% peak")
SHORT = {"small": "s", "medium": "m", "large": "l", "eager": "eager", "symbolic": "sym"}
SEPARATOR = 2  # columns between two cells (box.SIMPLE_HEAD, a right padding of 1, no edge); 1 more after the last


def row_cells(r: Dict[str, Any]) -> List[str]:
    if r["status"] != "ok":
        return [r["op"], r["size"], r["backend"], r["mode"], "", r["status"], "", "", "", "", "", ""]
    return [r["op"], r["size"], r["backend"], r["mode"], *measured_cells(r), ", ".join(flags(r))]


def marks(r: Dict[str, Any]) -> str:
    """The short marks a narrow table puts after a result's median in place of its flags."""
    if r["status"] != "ok":
        return ""
    return ("*" if r.get("unstable") else "") + ("!" if (r.get("peak_fraction") or 0) > 1.0 else "")


class Fit:
    """How a results table fits a width: the columns it leaves out, whether sizes and modes are abbreviated."""

    def __init__(self, left_out: List[str], short: bool, no_iqr: bool = False) -> None:
        self.left_out = left_out
        self.short = short
        self.no_iqr = no_iqr  # the median without its IQR (the narrowest)

    def header(self, name: str) -> str:
        return "median" if name == "median ± IQR" and self.no_iqr else name


def fitted_table(results: Sequence[Dict[str, Any]], width: int) -> Tuple[Table, Fit]:
    """The results table with every column that fits `width`, one line per result, whole headers; and how it
    was fitted (what table_notes says under it)."""
    rows = [row_cells(r) for r in results]
    names = [name for name, _ in COLUMNS]
    constant = []  # a column that says the same on every row (one op, one size, one mode) is said once, under it
    for name in ("op", "size", "mode"):
        i = names.index(name)
        if len({row[i] for row in rows}) == 1 and len(rows) > 1:
            constant.append(name)
    tries = [Fit(constant + list(LEAVE_OUT[:k]), False) for k in range(len(LEAVE_OUT) + 1)]
    tries.append(Fit(constant + list(LEAVE_OUT), True))
    tries.append(Fit(constant + list(LEAVE_OUT), True, no_iqr=True))
    for fit in tries:
        kept = [i for i, n in enumerate(names) if n not in fit.left_out]
        cells = [_narrow(row, r, names, fit) for row, r in zip(rows, results)]
        if _width([fit.header(n) for n in names], kept, cells) <= width:
            break
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    for i in kept:
        name, justify = fit.header(COLUMNS[i][0]), COLUMNS[i][1]
        text = name in ("op", "backend", "flags")  # the last resort: these fold; numbers never do
        table.add_column(
            name,
            justify=justify,  # type: ignore[arg-type]
            no_wrap=not text,
            overflow="fold" if text else "ignore",
            min_width=len(name),
        )
    for row in cells:
        table.add_row(*_cells(*[row[i] for i in kept]))
    return table, fit


def _narrow(row: List[str], r: Dict[str, Any], names: List[str], fit: Fit) -> List[str]:
    out = list(row)
    if fit.no_iqr and r["status"] == "ok":
        i = names.index("median ± IQR")
        out[i] = fmt_seconds(r["median_s"]) + (" (1 sample)" if r.get("n_samples") == 1 else "")
    if "flags" in fit.left_out:
        mark = marks(r)
        if mark:
            i = names.index("median ± IQR")
            out[i] = out[i] + " " + mark
    if fit.short:
        for name in ("size", "mode"):
            i = names.index(name)
            out[i] = SHORT.get(out[i], out[i])
    return out


def _width(names: List[str], kept: List[int], cells: List[List[str]]) -> int:
    widths = [max([len(names[i])] + [len(row[i]) for row in cells]) for i in kept]
    return sum(widths) + SEPARATOR * (len(kept) - 1) + 1


def table_notes(results: Sequence[Dict[str, Any]], fit: Fit) -> List[str]:
    """What a fitted table says under it: the one op, size or mode it left out, its marks and abbreviations, and
    the columns left out."""
    out = []
    said = []
    for name in ("op", "size", "mode"):
        values = sorted({r[name] for r in results})
        if name in fit.left_out and len(values) == 1:
            said.append(f"{name} {values[0]}")
    if said:
        out.append("all rows: " + ", ".join(said))
    if "flags" in fit.left_out:
        if any(r.get("unstable") for r in results if r["status"] == "ok"):
            out.append("* unstable (the flags column, which says why, did not fit)")
        above = [r for r in results if r["status"] == "ok" and (r.get("peak_fraction") or 0) > 1.0]
        for why in dict.fromkeys(sorted(above_peak(r, at_length=True) for r in above)):
            out.append("! " + why)
    if fit.short:
        out.append("size s, m, l: small, medium, large; mode sym: symbolic")
    dropped = [n for n in fit.left_out if n not in ("op", "size", "mode")] + (["IQR"] if fit.no_iqr else [])
    if dropped:
        out.append(
            "left out at this width: {} (a wider terminal, -o FILE.md/.html or --json has them)".format(
                ", ".join(dropped)
            )
        )
    return out


def results_table(results: Sequence[Dict[str, Any]], width: Optional[int] = None) -> Table:
    """The results table with every column (or those that fit `width`)."""
    return fitted_table(results, width if width is not None else 10**6)[0]


def _cells(*values: Any) -> List[str]:
    """Table cells from report text: shown as text (no rich markup applied, no escape sequence)."""
    return [escape(v) for v in values]


def scaling_table(rows: Iterable[Dict[str, Any]]) -> Table:
    table = Table(title="growth: time ∝ n^k", show_edge=False, pad_edge=False)
    for name in ("op", "backend", "mode", "k", "sizes"):
        table.add_column(name)
    for row in rows:
        table.add_row(
            *_cells(row["op"], row["backend"], row["mode"], "{:.2f}".format(row["exponent"]), len(row["points"]))
        )
    return table


def comparison_table(comparison: Dict[str, Any]) -> Table:
    counts = compare.counts(comparison)
    table = Table(
        title="{} ({})".format(escape(against(comparison)), ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))),
        show_edge=False,
        pad_edge=False,
    )
    for name in ("op", "size", "backend", "mode", "baseline", "now", "change", "p", "verdict"):
        table.add_column(name)
    for row in comparison["rows"]:
        if row["verdict"] == "unchanged" and len(comparison["rows"]) > 40:
            continue
        table.add_row(*_cells(*comparison_cells(row)))
    return table
