"""The Markdown view of a bench report: verdict, machine and peak, the harness's cost, one table per size, the
growth exponents, the comparison and the slowest pairs. Rendered from the JSON alone."""

from typing import Any, Dict, Iterable, List, Sequence

from kbtool.bench import compare, stats
from kbtool.bench import load as bench_load
from kbtool.bench.units import (
    DEVICE_PEAK_ABOVE,
    PEAK_ABOVE,
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
from kbtool.reports.markdown import _code
from kbtool.reports.text import markdown as _escape

Record = Dict[str, Any]  # a bench, or one of its records, as JSON data


def _cell(value: Any) -> str:
    """Report text as Markdown text, as check's Markdown shows it (reports/text.py: no escape sequence, one line,
    < > | ` escaped); and no link or image either (a backend's message may hold `![x](http://...)`)."""
    return _escape(value).replace("[", "\\[").replace("]", "\\]")


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def render(report: Record) -> str:
    out = ["# kbtool bench", "", f"**{_cell(verdict_line(report))}**", ""]
    for banner in filter(None, (bench_load.warning(report), unstable_note(report))):
        out += ["> **Warning:** " + _cell(banner), ""]
    out += _facts(report)
    for size in report["settings"]["sizes"]:
        rows = [r for r in report["results"] if r["size"] == size]
        if rows:
            out += [f"## Size {_cell(size)}", "", results_table(rows), ""]
    out += _not_measured(report) + _growth(report) + _slowest(report)
    if report.get("comparison"):
        out += comparison_section(report["comparison"])
    return "\n".join(out).rstrip() + "\n"


def _not_measured(report: Record) -> List[str]:
    failed = [r for r in report["results"] if r["status"] != "ok"]
    if not failed:
        return []
    return [
        "## Not measured",
        "",
        _table(
            ["op", "size", "backend", "mode", "status", "why"],
            [
                [r["op"], r["size"], r["backend"], r["mode"], r["status"], (r.get("message") or "")[:300]]
                for r in failed
            ],
        ),
        "",
    ]


def _growth(report: Record) -> List[str]:
    if not report["scaling"]:
        return []
    return [
        "## Growth: time ∝ n^k",
        "",
        _table(
            ["op", "backend", "mode", "k", "n (from → to)"],
            [
                [
                    row["op"],
                    row["backend"],
                    row["mode"],
                    "{:.2f}".format(row["exponent"]),
                    "{:g} → {:g}".format(row["points"][0][0], row["points"][-1][0]),
                ]
                for row in report["scaling"]
            ],
        ),
        "",
    ]


def _slowest(report: Record) -> List[str]:
    slowest = stats.slowest_pairs(report["results"], 10)
    if not slowest:
        return []
    return [
        "## Furthest behind the fastest backend",
        "",
        _table(
            ["op", "backend", "× fastest", "size", "mode", "median", "fastest there"],
            [
                [
                    r["op"],
                    r["backend"],
                    fmt_ratio(r["ratio_to_fastest"]),
                    r["size"],
                    r["mode"],
                    fmt_seconds(r["median_s"]),
                    fmt_seconds(r["median_s"] / r["ratio_to_fastest"]),
                ]
                for r in slowest
            ],
        ),
        "",
    ]


def _facts(report: Record) -> List[str]:
    m, peak = report["machine"], report["peak"]
    figures = bench_load.describe(m.get("load"))
    lines = [
        "- Machine: {}, {} cores, {:.0f} GiB; {}".format(
            _cell(m["cpu"]), m["cores"], m["memory_gb"], _cell(m["platform"])
        ),
        *(["- Load: " + _cell(figures)] if figures else []),
        "- Controller: Python {}, NumPy {}{}".format(
            _cell(m["python"]), _cell(m["numpy"]), " ({})".format(_cell(m["blas"])) if m.get("blas") else ""
        ),
        "- Peak: not measured (the bench was interrupted first)"
        if peak is None
        else "- Peak, measured in this run on all cores: {:.1f} GFLOP/s (float32 matmul {n}×{n}, NumPy's BLAS), {:.1f} "
        "GB/s (copy of {:.0f} MB, read + write). % peak is a result's GFLOP/s (or GB/s, for an op without a flop "
        "model) over it; > 100 % is {}, or {}.".format(
            peak["matmul_gflops"],
            peak["copy_gbs"],
            peak["copy_mb"],
            PEAK_ABOVE["copy"],
            PEAK_ABOVE["matmul"],
            n=peak["matmul_n"],
        ),
        *_device_peaks(report),
        "- Method: per result, calls per sample calibrated to ≥ {:g} ms, warmup, samples for {:g} s (at least {}); "
        "median ± IQR; unstable when CV > {:.0%}. Backends one at a time. Command: {}".format(
            report["settings"]["min_sample_seconds"] * 1e3,
            report["settings"]["budget_seconds"],
            report["settings"]["min_samples"],
            report["settings"].get("unstable_cv", 0.1),
            _code(report["command"]),
        ),
        "",
        "| backend | versions | Python | harness per call |",
        "|---|---|---|---|",
    ]
    for b in report["backends"]:
        if b["status"] != "available":
            lines.append(
                "| {} | {}: {} | | |".format(
                    _cell(b["name"]), _cell(b["status"].replace("_", " ")), _cell(b.get("reason") or "")
                )
            )
            continue
        versions = ", ".join(f"{k} {v}" for k, v in sorted((b.get("versions") or {}).items()))
        overhead = b.get("overhead") or {}
        lines.append(
            "| {} | {} | {} | {} |".format(
                _cell(b["name"]), _cell(versions), _cell(b.get("python") or ""), fmt_seconds(overhead.get("harness_s"))
            )
        )
    notes = report["summary"].get("notes") or []
    return lines + [""] + ["> " + _cell(n) for n in notes] + ([""] if notes else [])


def _device_peaks(report: Record) -> List[str]:
    """The device peaks (a bench on a device other than the CPU), as bullets under this machine's."""
    lines = device_peak_lines(report)
    if not lines:
        return []
    said = ["- " + _cell(line[0].upper() + line[1:]) for line in lines]
    if any(b.get("peak") for b in report["backends"]):
        said[-1] += (
            ". A device's peak is measured in its backend's worker through its engine (a float32 matmul, a copy), "
            "synchronised in each sample; > 100 % of it is {}, or {}.".format(
                _cell(DEVICE_PEAK_ABOVE["copy"]), _cell(DEVICE_PEAK_ABOVE["matmul"])
            )
        )
    return said


def results_table(results: Iterable[Record]) -> str:
    rows: List[List[Any]] = []
    for r in sorted(results, key=lambda r: (r["op"], r["mode"], r.get("median_s") or float("inf"))):
        if r["status"] != "ok":
            rows.append([r["op"], r["backend"], r["mode"], "", r["status"], "", "", "", "", "", "", ""])
            continue
        rows.append(
            [
                r["op"],
                r["backend"],
                r["mode"],
                *measured_cells(r),
                fmt_ratio(r.get("ratio_to_numpy")),
                "; ".join(flags(r)),
            ]
        )
    return _table(
        [
            "op",
            "backend",
            "mode",
            "one-time",
            "median ± IQR",
            "min",
            "GFLOP/s",
            "GB/s",
            "% peak",
            "× fastest",
            "× numpy",
            "flags",
        ],
        rows,
    )


def comparison_section(comparison: Record) -> List[str]:
    counts = compare.counts(comparison)
    head = [
        f"## {_cell(against(comparison, capital=True))}",
        "",
        "{}. A change counts when Mann-Whitney U gives p < {:g} and the medians differ by ≥ {:g} %; the gate "
        "fails on a worse result beyond {:g} %: **{}**.".format(
            _cell(", ".join(f"{v} {k}" for k, v in sorted(counts.items()))),
            comparison["alpha"],
            comparison["min_effect_pct"],
            comparison["fail_over_pct"],
            "failed" if comparison["failed"] else "passed",
        ),
        "",
    ]
    rows = [
        [*comparison_cells(row), row.get("reason") or ""] for row in comparison["rows"] if row["verdict"] != "unchanged"
    ]
    if not rows:
        return head + ["No change.", ""]
    header = ["op", "size", "backend", "mode", "baseline", "now", "change", "p", "verdict", "why"]
    return head + [_table(header, rows), ""]
