"""The HTML view of a bench report: one offline page (no external resource), rendered from the JSON alone.

Per op: its results table, a log-log plot of time against size per backend and mode (with two sizes or more),
and the one-time cost beside the steady-state call per backend at the largest size measured (log scale). The
plots are inline SVG drawn here; colours follow the backend, dashes the mode."""

import base64
import hashlib
import math
import os
from collections import OrderedDict
from typing import Tuple

import jinja2

from . import stats
from .units import fmt_pct, fmt_rate, fmt_ratio, fmt_seconds, verdict_line

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
DASH = {"eager": "", "symbolic": "5,3"}
SIZES = ("small", "medium", "large")


TEMPLATES = os.path.join(os.path.dirname(__file__), "templates")
STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.5em; }
.verdict { font-weight: bold; padding: .4em .6em; border-radius: 4px; display: inline-block; }
.ok { background: #e6f4ea; } .notok { background: #fce8e6; }
table { border-collapse: collapse; font-size: .85em; margin: .5em 0; }
th, td { border-bottom: 1px solid #ddd; padding: 2px 8px; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
td.msg { text-align: left; white-space: normal; max-width: 40em; color: #a00; }
.swatch { display: inline-block; width: .8em; height: .8em; border-radius: 2px; margin-right: .3em; }
details { margin: .3em 0; } summary { cursor: pointer; font-weight: 600; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; align-items: flex-start; }
.unstable { color: #b26a00; } .facts li { margin: .15em 0; }
"""


def style() -> Tuple[str, str]:
    """(the page's one inline style, its Content-Security-Policy): the policy allows that style alone (its hash),
    no script, no other resource. A swatch's colour is a class (an inline style attribute would need
    'unsafe-inline')."""
    css = STYLE + "".join(f".c{i} {{ background: {colour}; }}\n" for i, colour in enumerate(PALETTE))
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return css, f"default-src 'none'; style-src 'sha256-{digest}'"


def render(report):
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    colours = {b["name"]: PALETTE[i % len(PALETTE)] for i, b in enumerate(report["backends"])}
    swatches = {b["name"]: f"c{i % len(PALETTE)}" for i, b in enumerate(report["backends"])}
    css, csp = style()
    ops = OrderedDict()
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
        sections=sections,
        colours=colours,
        swatches=swatches,
        style=markup(css),
        csp=markup(csp),  # our own text: its quotes stay quotes
        slowest=slowest,
        fmt_seconds=fmt_seconds,
        comparison=report.get("comparison"),
        changed=[row for row in (report.get("comparison") or {}).get("rows", []) if row["verdict"] != "unchanged"],
    )


def markup(svg):
    return jinja2.Markup(svg) if hasattr(jinja2, "Markup") else __import__("markupsafe").Markup(svg)


def _row(r):
    ok = r["status"] == "ok"
    return {
        "op": r["op"],
        "size": r["size"],
        "backend": r["backend"],
        "mode": r["mode"],
        "status": r["status"],
        "message": r.get("message") or "",
        "one_time": fmt_seconds(r["one_time"]["total_s"]) if ok else "",
        "median": "{} ± {}".format(fmt_seconds(r["median_s"]), fmt_seconds(r["iqr_s"])) if ok else r["status"],
        "min": fmt_seconds(r.get("min_s")),
        "gflops": fmt_rate(r.get("gflops")),
        "gbs": fmt_rate(r.get("gbs")),
        "peak": fmt_pct(r.get("peak_fraction")),
        "fastest": fmt_ratio(r.get("ratio_to_fastest")),
        "numpy": fmt_ratio(r.get("ratio_to_numpy")),
        "flags": "; ".join(
            f
            for f in (
                "unstable (CV {:.0%}, {} samples)".format(r["cv"], r["n_samples"]) if ok and r.get("unstable") else "",
                r.get("message") or "" if ok else "",  # an ok result's message flags it (output_varies, ...)
            )
            if f
        ),
    }


# ------------------------------------------------------------------------------------------------ plots (SVG)
W, H, LEFT, BOTTOM, TOP, RIGHT = 420, 240, 64, 34, 12, 120


def _log_axis(values):
    """(low, high) powers of ten around the values."""
    lows = math.floor(math.log10(min(values)))
    highs = math.ceil(math.log10(max(values)))
    return lows, max(highs, lows + 1)


def growth_svg(op, rows, colours):
    """Median time against n on log-log axes, a line per backend × mode; '' with fewer than two sizes."""
    lines = OrderedDict()
    for r in rows:
        if r["status"] == "ok" and r["n"] > 0:  # log axes: a fixed family's n of 0 has no place on them
            lines.setdefault((r["backend"], r["mode"]), []).append((float(r["n"]), r["median_s"]))
    lines = OrderedDict((k, sorted(v)) for k, v in lines.items() if len({n for n, _ in v}) >= 2)
    if not lines:
        return ""
    xs = [n for points in lines.values() for n, _ in points]
    ys = [t for points in lines.values() for _, t in points]
    (x0, x1), (y0, y1) = _log_axis(xs), _log_axis(ys)
    px = lambda n: LEFT + (math.log10(n) - x0) / (x1 - x0) * (W - LEFT - RIGHT)  # noqa: E731
    py = lambda t: H - BOTTOM - (math.log10(t) - y0) / (y1 - y0) * (H - BOTTOM - TOP)  # noqa: E731
    parts = [_frame(f"time per call against n ({op}), log-log")]
    for e in range(x0, x1 + 1):
        parts.append(_tick_x(px(10**e), f"1e{e}"))
    for e in range(y0, y1 + 1):
        parts.append(_tick_y(py(10**e), fmt_seconds(10.0**e)))
    for i, ((backend, mode), points) in enumerate(lines.items()):
        colour = colours.get(backend, "#000")
        path = " ".join(f"{px(n):.1f},{py(t):.1f}" for n, t in points)
        parts.append(
            '<polyline fill="none" stroke="{}" stroke-width="1.6" stroke-dasharray="{}" points="{}">'
            "<title>{} {}</title></polyline>".format(colour, DASH.get(mode, ""), path, _esc(backend), mode)
        )
        parts.append(
            f'<text x="{W - RIGHT + 6}" y="{TOP + 10 + 12 * i}" font-size="10" fill="{colour}">{_esc(backend)} {mode[:3]}</text>'
        )
    parts.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 4}" font-size="10" text-anchor="middle">n</text>')
    return _svg(W, H, parts)


def one_time_svg(rows, colours):
    """At the largest size measured: the one-time cost and the steady-state call per backend × mode, log scale."""
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return ""
    largest = max(SIZES.index(r["size"]) for r in ok)
    ok = [r for r in ok if SIZES.index(r["size"]) == largest]
    values = [v for r in ok for v in (r["one_time"]["total_s"], r["median_s"]) if v > 0]
    lo, hi = _log_axis(values)
    bar, gap = 7, 5
    height = TOP + BOTTOM + len(ok) * (2 * bar + gap)
    width = W + 40
    px = lambda t: 150 + (math.log10(max(t, 10.0**lo)) - lo) / (hi - lo) * (width - 170)  # noqa: E731
    parts = [
        f'<text x="4" y="10" font-size="10">{SIZES[largest]}: one-time (light) and per call (dark), log scale</text>'
    ]
    for i, r in enumerate(ok):
        y = TOP + i * (2 * bar + gap)
        colour = colours.get(r["backend"], "#000")
        parts.append(
            '<text x="146" y="{}" font-size="10" text-anchor="end">{} {}</text>'.format(
                y + bar + 3, _esc(r["backend"]), r["mode"]
            )
        )
        for k, (value, opacity) in enumerate(((r["one_time"]["total_s"], 0.35), (r["median_s"], 1.0))):
            parts.append(
                f'<rect x="150" y="{y + k * bar}" width="{max(px(value) - 150, 1):.1f}" height="{bar}" fill="{colour}" fill-opacity="{opacity}">'
                f"<title>{fmt_seconds(value)}</title></rect>"
            )
    axis_y = height - BOTTOM + 4
    for e in range(lo, hi + 1):
        parts.append(
            '<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" stroke="#ccc"/>'
            '<text x="{0:.1f}" y="{3}" font-size="9" text-anchor="middle">{4}</text>'.format(
                px(10**e), TOP - 2, axis_y, axis_y + 11, fmt_seconds(10.0**e)
            )
        )
    return _svg(width, height, parts)


def _frame(title):
    return (
        f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" height="{H - TOP - BOTTOM}" fill="none" stroke="#999"/>'
        f'<text x="{LEFT}" y="9" font-size="10">{_esc(title)}</text>'
    )


def _tick_x(x, label):
    return (
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{H - BOTTOM}" stroke="#ddd"/>'
        f'<text x="{x:.1f}" y="{H - BOTTOM + 12}" font-size="9" text-anchor="middle">{label}</text>'
    )


def _tick_y(y, label):
    return (
        f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
        f'<text x="{LEFT - 4}" y="{y + 3:.1f}" font-size="9" text-anchor="end">{label}</text>'
    )


def _svg(width, height, parts):
    return '<svg width="{0}" height="{1}" viewBox="0 0 {0} {1}" font-family="sans-serif">{2}</svg>'.format(
        width, height, "".join(parts)
    )


def _esc(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
