"""The terminal view of a bench report (rich): machine and peak, the harness's cost per backend, a table of
results (every result up to MAX_ROWS, else the ones furthest behind the fastest backend), the comparison, and a
verdict line."""

import sys

from rich.console import Console
from rich.table import Table

from ..files import one_line
from ..reports.terminal import escape
from ..reports.text import plain
from . import compare, stats
from .units import comparison_cells, flags, fmt_ratio, fmt_seconds, measured_cells, verdict_line

MAX_ROWS = 200


def render(report, console=None, verbose=False):
    if console is None:  # in a log or a pipe, rows as wide as they need (a terminal keeps its own width)
        console = Console(file=sys.stdout, highlight=False, width=None if sys.stdout.isatty() else 180)

    def say(text):  # a plain line: no markup, no escape sequence, never wrapped (a log keeps it whole)
        console.print(plain(text), markup=False, soft_wrap=True, highlight=False)

    m, peak = report["machine"], report["peak"]
    say(
        "machine: {} ({} cores, {:.0f} GiB), Python {}, NumPy {}{}".format(
            m["cpu"], m["cores"], m["memory_gb"], m["python"], m["numpy"], ", " + m["blas"] if m.get("blas") else ""
        )
    )
    if peak is None:
        say("peak: not measured (the bench was interrupted first)")
    else:
        say(
            "peak (measured now): {:.1f} GFLOP/s float32 matmul at {}², {:.1f} GB/s copy of {:.0f} MB".format(
                peak["matmul_gflops"], peak["matmul_n"], peak["copy_gbs"], peak["copy_mb"]
            )
        )
    for b in report["backends"]:
        if b["status"] != "available":
            say("{}: {} ({})".format(b["name"], b["status"].replace("_", " "), b.get("reason")))
        elif b.get("overhead"):
            say(
                "{}: harness {} per call over a bare loop ({} a no-op call)".format(
                    b["name"], fmt_seconds(b["overhead"]["harness_s"]), fmt_seconds(b["overhead"]["noop_call_s"])
                )
            )
    results = report["results"]
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
        console.print(results_table(shown))
    if note:
        say(note)
    failed = [r for r in results if r["status"] not in ("ok",)]
    for r in failed[:20]:
        say(
            "{} {} {} {}: {}: {}".format(
                r["op"], r["size"], r["backend"], r["mode"], r["status"], one_line(r.get("message") or "", 200)
            )
        )
    if len(failed) > 20:
        say(f"... and {len(failed) - 20} more not measured (see --json)")
    for r in [r for r in results if r.get("output_varies")][:20]:
        say("{} {} {} {}: flagged: {}".format(r["op"], r["size"], r["backend"], r["mode"], one_line(r["message"], 200)))
    if report["scaling"] and verbose:
        console.print(scaling_table(report["scaling"]))
    if report.get("comparison"):
        console.print(comparison_table(report["comparison"]))
        for line in compare.gate_lines(report["comparison"]):
            say(line)
    slowest = stats.slowest_pairs(results, 3)
    if slowest and len({r["backend"] for r in results}) > 1:
        say(
            "slowest relative to the fastest backend: "
            + "; ".join(
                "{} on {} {} ({} {})".format(
                    r["op"], r["backend"], fmt_ratio(r["ratio_to_fastest"]), r["size"], r["mode"]
                )
                for r in slowest
            )
        )
    say(verdict_line(report))


def results_table(results):
    table = Table(show_edge=False, pad_edge=False)
    for name, justify in (
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
        ("", "left"),
    ):
        table.add_column(name, justify=justify)
    for r in results:
        if r["status"] != "ok":
            table.add_row(*_cells(r["op"], r["size"], r["backend"], r["mode"], "", r["status"], "", "", "", "", "", ""))
            continue
        table.add_row(*_cells(r["op"], r["size"], r["backend"], r["mode"], *measured_cells(r), ", ".join(flags(r))))
    return table


def _cells(*values):
    """Table cells from report text: shown as text (no rich markup applied, no escape sequence)."""
    return [escape(v) for v in values]


def scaling_table(rows):
    table = Table(title="growth: time ∝ n^k", show_edge=False, pad_edge=False)
    for name in ("op", "backend", "mode", "k", "sizes"):
        table.add_column(name)
    for row in rows:
        table.add_row(
            *_cells(row["op"], row["backend"], row["mode"], "{:.2f}".format(row["exponent"]), len(row["points"]))
        )
    return table


def comparison_table(comparison):
    counts = compare.counts(comparison)
    table = Table(
        title="against {} ({})".format(
            escape(comparison["baseline"]), ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
        ),
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
