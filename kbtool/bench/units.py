"""Numbers as every bench view writes them: times in adaptive units, rates, percentages, ratios, the verdict."""

import math


def fmt_seconds(seconds):
    """3 significant digits in ns, µs, ms or s ('' for None)."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return ""
    magnitude = abs(seconds)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if magnitude >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_rate(value):
    return "" if value is None else f"{value:.3g}"


def fmt_pct(fraction):
    return "" if fraction is None else f"{fraction * 100:.1f} %"


def fmt_ratio(ratio):
    return "" if ratio is None else f"×{ratio:.3g}"


def verdict_line(report):
    """The one line that says what a bench measured and whether its gate holds."""
    s = report["summary"]
    parts = ["{} measured".format(s["measured"])]
    if s.get("failed"):
        parts.append("{} not measured (raised, crashed or timed out)".format(s["failed"]))
    if s.get("unsupported"):
        parts.append("{} unsupported".format(s["unsupported"]))
    parts.append("{} unstable".format(s["unstable"]))
    comparison = report.get("comparison")
    if comparison:
        gate = sum(r["fails_gate"] for r in comparison["rows"])
        worse = sum(r["verdict"] == "worse" for r in comparison["rows"])
        better = sum(r["verdict"] == "better" for r in comparison["rows"])
        parts.append(
            "against {}: {} worse, {} better; {}".format(
                comparison["baseline"],
                worse,
                better,
                "{} slower beyond {:g} %: gate FAILED".format(gate, comparison["fail_over_pct"])
                if gate
                else "gate passed",
            )
        )
    if report.get("incomplete"):
        parts.append("incomplete ({})".format(report["incomplete"].get("note", "interrupted")))
    if s["measured"] == 0:
        parts.append("nothing was measured: not ok")
    return "bench: " + ", ".join(parts) + " in {:.1f} s".format(report["wall_seconds"])
