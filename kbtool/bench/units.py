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


def measured_cells(r):
    """The cells every view shows of a measured result: one-time, median ± IQR, min, GFLOP/s, GB/s, % peak and
    × fastest."""
    return [
        fmt_seconds(r["one_time"]["total_s"]),
        "{} ± {}".format(fmt_seconds(r["median_s"]), fmt_seconds(r["iqr_s"])),
        fmt_seconds(r["min_s"]),
        fmt_rate(r.get("gflops")),
        fmt_rate(r.get("gbs")),
        fmt_pct(r.get("peak_fraction")),
        fmt_ratio(r.get("ratio_to_fastest")),
    ]


def flags(r):
    """What a view says beside a measured result's numbers: unstable, and the result's message."""
    said = ["unstable (CV {:.0%}, {} samples)".format(r["cv"], r["n_samples"])] if r.get("unstable") else []
    return said + ([r["message"]] if r.get("message") else [])


def comparison_cells(row):
    """The cells every view shows of a gate row: op, size, backend, mode, baseline and new medians, change, p and
    the verdict."""
    return [
        row["op"],
        row["size"],
        row["backend"],
        row["mode"],
        fmt_seconds(row["baseline_median_s"]),
        fmt_seconds(row["median_s"]),
        "" if row["change_pct"] is None else "{:+.1f} %".format(row["change_pct"]),
        "" if row["p_value"] is None else "{:.3g}".format(row["p_value"]),
        row["verdict"] + (" (fails the gate)" if row["fails_gate"] else ""),
    ]


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
        gate = [r for r in comparison["rows"] if r["fails_gate"]]
        worse = sum(r["verdict"] == "worse" for r in comparison["rows"])
        better = sum(r["verdict"] == "better" for r in comparison["rows"])
        failing = {}
        for r in gate:
            word = (
                "slower beyond {:g} %".format(comparison["fail_over_pct"]) if r["verdict"] == "worse" else r["verdict"]
            )
            failing[word] = failing.get(word, 0) + 1
        parts.append(
            "against {}: {} worse, {} better; {}".format(
                comparison["baseline"],
                worse,
                better,
                "{}: gate FAILED".format(", ".join(f"{n} {word}" for word, n in failing.items()))
                if gate
                else "gate passed",
            )
        )
    if report.get("incomplete"):
        parts.append("incomplete ({})".format(report["incomplete"].get("note", "interrupted")))
    from .report import problems

    for problem in problems(report):
        parts.append(problem + ": not ok")
    if s["measured"] == 0:
        parts.append("nothing was measured: not ok")
    return "bench: " + ", ".join(parts) + " in {:.1f} s".format(report["wall_seconds"])
