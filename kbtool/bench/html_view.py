"""The HTML view of a bench report: one offline page (no external resource), rendered from the JSON alone.

Per op: its results table, a log-log plot of time against size per backend and mode (with two sizes or more),
and the one-time cost beside the steady-state call per backend at the largest size measured (log scale). The
plots are inline SVG drawn here; colours follow the backend, dashes the mode."""

import base64
import hashlib
import math
import os
from collections import OrderedDict
from typing import Any, Dict, Iterable, List, Sequence, Tuple

import jinja2
import markupsafe

from kbtool.bench import load as bench_load
from kbtool.bench import stats
from kbtool.bench.units import (
    DEVICE_PEAK_ABOVE,
    PEAK_ABOVE,
    against,
    device_peak_lines,
    flags,
    fmt_median,
    fmt_peak,
    fmt_rate,
    fmt_ratio,
    fmt_seconds,
    unstable_note,
    verdict_line,
)

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
DASH = {"eager": "", "symbolic": "5,3"}
SIZES = ("small", "medium", "large")
Record = Dict[str, Any]  # a bench, or one of its records, as JSON data


TEMPLATES = os.path.join(os.path.dirname(__file__), "templates")
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.5em; }
.verdict { font-weight: bold; padding: .4em .6em; border-radius: 4px; display: inline-block; }
.ok { background: #e6f4ea; } .notok { background: #fce8e6; } .warn { background: #fff3cd; }
.banner { padding: .4em .6em; border-radius: 4px; margin: .4em 0; max-width: 70em; }
table { border-collapse: collapse; font-size: .85em; margin: .5em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 2px 8px; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
td.msg { text-align: left; white-space: normal; max-width: 40em; color: #a00; }
.swatch { display: inline-block; width: .8em; height: .8em; border-radius: 2px; margin-right: .3em; }
section.op { margin: 1.2em 0 2em; } h3 { font-size: 1.05em; margin-bottom: .3em; }
.plots { display: flex; flex-wrap: wrap; gap: 1.5em; align-items: flex-start; }
.plots svg { max-width: 100%; height: auto; }
.unstable { color: #b26a00; } td.flags { white-space: normal; min-width: 18em; max-width: 36em; } .facts li { margin: .15em 0; }
"""


def style() -> Tuple[str, str]:
    """(the page's one inline style, its Content-Security-Policy): the policy allows that style alone (its hash),
    no script, no other resource. A swatch's colour is a class (an inline style attribute would need
    'unsafe-inline')."""
    css = STYLE + "".join(f".c{i} {{ background: {colour}; }}\n" for i, colour in enumerate(PALETTE))
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return css, f"default-src 'none'; style-src 'sha256-{digest}'"


def render(report: Record) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    colours = {b["name"]: PALETTE[i % len(PALETTE)] for i, b in enumerate(report["backends"])}
    swatches = {b["name"]: f"c{i % len(PALETTE)}" for i, b in enumerate(report["backends"])}
    css, csp = style()
    ops: Dict[str, List[Record]] = OrderedDict()
    for r in sorted(
        report["results"], key=lambda r: (r["op"], SIZES.index(r["size"]), r["mode"], r.get("median_s") or math.inf)
    ):
        ops.setdefault(r["op"], []).append(r)
    sections = [
        {
            "op": op,
            "family": report["families"].get(op, {}),
            "rows": [_row(r) for r in rows],
            "growth": markup(growth_svg(op, rows, colours)),
            "one_time": markup(one_time_svg(rows, colours)),
        }
        for op, rows in ops.items()
    ]
    slowest = [_row(r) for r in stats.slowest_pairs(report["results"], 10)]
    return env.get_template("bench.html.j2").render(
        report=report,
        verdict=verdict_line(report),
        verdict_class=verdict_class(report),
        banners=[b for b in (bench_load.warning(report), unstable_note(report)) if b],
        load_figures=bench_load.describe(report["machine"].get("load")),
        peak_above=PEAK_ABOVE,
        device_peaks=device_peak_lines(report),
        device_peak_measured=any(b.get("peak") for b in report["backends"]),
        device_peak_above=DEVICE_PEAK_ABOVE,
        sections=sections,
        colours=colours,
        swatches=swatches,
        style=markup(css),
        csp=markup(csp),  # our own text: its quotes stay quotes
        slowest=slowest,
        fmt_seconds=fmt_seconds,
        comparison=report.get("comparison"),
        against=against(report["comparison"], capital=True) if report.get("comparison") else None,
        changed=[row for row in (report.get("comparison") or {}).get("rows", []) if row["verdict"] != "unchanged"],
    )


def verdict_class(report: Record) -> str:
    """The banner's colour: red when the bench is not ok, amber when it is but some results are unstable or the
    machine was busy, green only when neither."""
    if not report["summary"]["ok"]:
        return "notok"
    if report["summary"].get("unstable") or (report["machine"].get("load") or {}).get("busy"):
        return "warn"
    return "ok"


def markup(svg: str) -> markupsafe.Markup:
    return markupsafe.Markup(svg)  # what jinja2.Markup was (jinja2 3 dropped the name)


def _row(r: Record) -> Dict[str, str]:
    ok = r["status"] == "ok"
    return {
        "op": r["op"],
        "size": r["size"],
        "backend": r["backend"],
        "mode": r["mode"],
        "status": r["status"],
        "message": r.get("message") or "",
        "one_time": fmt_seconds(r["one_time"]["total_s"]) if ok else "",
        "median": fmt_median(r) if ok else r["status"],
        "min": fmt_seconds(r.get("min_s")),
        "gflops": fmt_rate(r.get("gflops")),
        "gbs": fmt_rate(r.get("gbs")),
        "peak": fmt_peak(r.get("peak_fraction")),
        "fastest": fmt_ratio(r.get("ratio_to_fastest")),
        "numpy": fmt_ratio(r.get("ratio_to_numpy")),
        # an ok result's message flags it too (output_varies, ...)
        "flags": "; ".join(flags(r)) if ok else "",
    }


# ------------------------------------------------------------------------------------------------ plots (SVG)
# sizes in px: the plot area of the growth plot, the margins around it, the font; a legend entry's height
W, H, LEFT, BOTTOM, TOP, FONT, ENTRY = 560, 340, 72, 44, 28, 13, 18
CHAR = 7.8  # a generous width of one character at FONT px (the legend's room is made from it)


def _log_axis(values: Sequence[float]) -> Tuple[int, int]:
    """(low, high) powers of ten around the values."""
    lows = math.floor(math.log10(min(values)))
    highs = math.ceil(math.log10(max(values)))
    return lows, max(highs, lows + 1)


def _label(backend: str, mode: str) -> str:
    return f"{backend} {mode}"


def growth_svg(op: str, rows: Iterable[Record], colours: Dict[str, str]) -> str:
    """Median time against n on log-log axes, a line per backend × mode, and a legend that names each in full;
    '' with fewer than two sizes."""
    found: Dict[Tuple[str, str], List[Tuple[float, float]]] = OrderedDict()
    for r in rows:
        if r["status"] == "ok" and r["n"] > 0:  # log axes: a fixed family's n of 0 has no place on them
            found.setdefault((r["backend"], r["mode"]), []).append((float(r["n"]), r["median_s"]))
    lines = OrderedDict((k, sorted(v)) for k, v in found.items() if len({n for n, _ in v}) >= 2)
    if not lines:
        return ""
    xs = [n for points in lines.values() for n, _ in points]
    ys = [t for points in lines.values() for _, t in points]
    (x0, x1), (y0, y1) = _log_axis(xs), _log_axis(ys)
    legend_x = LEFT + W + 16
    width = int(legend_x + 34 + CHAR * max(len(_label(*key)) for key in lines) + 8)
    height = max(TOP + H + BOTTOM, TOP + ENTRY * len(lines) + 8)

    def px(n: float) -> float:
        return LEFT + (math.log10(n) - x0) / (x1 - x0) * W

    def py(t: float) -> float:
        return TOP + H - (math.log10(t) - y0) / (y1 - y0) * H

    parts = [
        f'<rect x="{LEFT}" y="{TOP}" width="{W}" height="{H}" fill="none" stroke="#999"/>'
        f'<text x="{LEFT}" y="{FONT + 2}" font-size="{FONT + 1}" font-weight="bold">'
        f"{_esc(f'time per call against n ({op}), log-log')}</text>"
    ]
    for e in range(x0, x1 + 1):
        x = px(10**e)
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + H}" stroke="#ddd"/>'
            f'<text x="{x:.1f}" y="{TOP + H + FONT + 4}" font-size="{FONT - 1}" text-anchor="middle">1e{e}</text>'
        )
    for e in range(y0, y1 + 1):
        y = py(10**e)
        parts.append(
            f'<line x1="{LEFT}" x2="{LEFT + W}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="{LEFT - 5}" y="{y + 4:.1f}" font-size="{FONT - 1}" text-anchor="end">{fmt_seconds(10.0**e)}</text>'
        )
    for i, ((backend, mode), points) in enumerate(lines.items()):
        colour = colours.get(backend, "#000")
        dash = DASH.get(mode, "")
        path = " ".join(f"{px(n):.1f},{py(t):.1f}" for n, t in points)
        label = _esc(_label(backend, mode))
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" stroke-dasharray="{dash}" points="{path}">'
            f"<title>{label}</title></polyline>"
        )
        y = TOP + 6 + ENTRY * i
        parts.append(
            f'<line x1="{legend_x}" x2="{legend_x + 26}" y1="{y:.1f}" y2="{y:.1f}" stroke="{colour}" '
            f'stroke-width="2.5" stroke-dasharray="{dash}"/>'
            f'<text x="{legend_x + 32}" y="{y + 4:.1f}" font-size="{FONT}">{label}</text>'
        )
    parts.append(
        f'<text x="{LEFT + W / 2}" y="{TOP + H + BOTTOM - 6}" font-size="{FONT}" text-anchor="middle">n</text>'
    )
    return _svg(width, height, parts)


def one_time_svg(rows: Iterable[Record], colours: Dict[str, str]) -> str:
    """At the largest size measured: the one-time cost and the steady-state call per backend × mode, log scale."""
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return ""
    largest = max(SIZES.index(r["size"]) for r in ok)
    ok = [r for r in ok if SIZES.index(r["size"]) == largest]
    values = [v for r in ok for v in (r["one_time"]["total_s"], r["median_s"]) if v > 0]
    lo, hi = _log_axis(values)
    bar, gap = 10, 8
    names = int(CHAR * max(len(_label(r["backend"], r["mode"])) for r in ok)) + 12  # the labels' column
    plot = 520
    height = TOP + 6 + BOTTOM + len(ok) * (2 * bar + gap)
    width = names + plot + 30

    def px(t: float) -> float:
        return names + (math.log10(max(t, 10.0**lo)) - lo) / (hi - lo) * plot

    parts = [
        f'<text x="4" y="{FONT + 2}" font-size="{FONT + 1}" font-weight="bold">{SIZES[largest]}: one-time (light) '
        "and per call (dark), log scale</text>"
    ]
    for i, r in enumerate(ok):
        y = TOP + 6 + i * (2 * bar + gap)
        colour = colours.get(r["backend"], "#000")
        parts.append(
            f'<text x="{names - 6}" y="{y + bar + 4}" font-size="{FONT}" text-anchor="end">'
            f"{_esc(_label(r['backend'], r['mode']))}</text>"
        )
        for k, (value, opacity) in enumerate(((r["one_time"]["total_s"], 0.35), (r["median_s"], 1.0))):
            parts.append(
                f'<rect x="{names}" y="{y + k * bar}" width="{max(px(value) - names, 1):.1f}" height="{bar}" '
                f'fill="{colour}" fill-opacity="{opacity}"><title>{fmt_seconds(value)}</title></rect>'
            )
    axis_y = height - BOTTOM + 6
    for e in range(lo, hi + 1):
        parts.append(
            '<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" stroke="#ccc"/>'
            '<text x="{0:.1f}" y="{3}" font-size="{5}" text-anchor="middle">{4}</text>'.format(
                px(10**e), TOP + 2, axis_y, axis_y + FONT + 2, fmt_seconds(10.0**e), FONT - 1
            )
        )
    return _svg(width, height, parts)


def _svg(width: float, height: float, parts: Iterable[str]) -> str:
    return '<svg width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="sans-serif">{2}</svg>'.format(
        width, height, "".join(parts)
    )


def _esc(text: Any) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
