"""Numbers as every bench view writes them: times in adaptive units, rates, percentages, ratios, the verdict."""

import math
from typing import Any, Dict, List, Optional

from kbtool.bench.report import problems
from kbtool.bench.stats import MIN_STABLE_SAMPLES


def fmt_seconds(seconds: Optional[float]) -> str:
    """3 significant digits in ns, µs, ms or s ('' for None)."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return ""
    magnitude = abs(seconds)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if magnitude >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def fmt_rate(value: Optional[float]) -> str:
    """A rate (GFLOP/s, GB/s) to 3 significant digits, never an exponent: 0.0123, 45.6, 1,230; below 0.001 as
    such."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if value <= 0:
        return f"{value:g}"
    if value < 0.001:
        return "< 0.001"
    value = float(f"{value:.3g}")
    return _plain(value) if value < 1000 else _grouped(value)


def fmt_pct(fraction: Optional[float]) -> str:
    return "" if fraction is None else f"{fraction * 100:.1f} %"


def fmt_peak(fraction: Optional[float]) -> str:
    """The fraction of this machine's measured peak; above 1 it says "> 100 %" (the why: PEAK_ABOVE)."""
    if fraction is None:
        return ""
    return "> 100 %" if fraction > 1.0 else fmt_pct(fraction)


PEAK_ABOVE = {
    "copy": "above the copy peak: the op moves less than its inputs and outputs (a view, no copy) or works in cache "
    "(the peak is a 64 MB copy through memory)",
    "matmul": "above the matmul peak: the op ran faster than NumPy's float32 matmul on all cores did while the peak "
    "was measured (another BLAS, or the load changed)",
}


# a result's flag when it is above the peak (PEAK_ABOVE, said once beside the peak, says why at length)
PEAK_FLAG = {
    "copy": "above the copy peak (moved less than counted, or in cache)",
    "matmul": "above the matmul peak (measured at another moment, or another BLAS)",
}


def fmt_ratio(ratio: Optional[float]) -> str:
    """A ratio as a reader reads it: ×1.23, ×45.6, ×789, ×2,520, ×2,520,000 (3 significant digits, never an
    exponent); below 0.01 as a fraction: ×1/2,500."""
    if ratio is None or (isinstance(ratio, float) and math.isnan(ratio)):
        return ""
    if ratio <= 0:
        return f"×{ratio:g}"
    if ratio < 0.01:
        return "×1/" + _grouped(1.0 / ratio)
    ratio = float(f"{ratio:.3g}")
    if ratio < 1000:
        return "×" + _plain(ratio)
    return "×" + _grouped(ratio)


def _plain(value: float) -> str:
    """3 significant digits without an exponent (0.0123, 1.23, 12.3, 123)."""
    value = float(f"{value:.3g}")  # rounded first: 9.996 is 10.0, not 10.00
    digits = max(0, 2 - int(math.floor(math.log10(abs(value)))))
    return f"{value:.{digits}f}"


def _grouped(value: float) -> str:
    """A large number to 3 significant digits, grouped by thousands: 2,520,000."""
    return f"{float(f'{value:.3g}'):,.0f}"


def fmt_median(r: Dict[str, Any]) -> str:
    """A measured result's median ± IQR, or its one sample said as such ('58.9 s (1 sample)', not '± 0 ns')."""
    if r.get("n_samples", len(r.get("samples_s") or ())) == 1:
        return "{} (1 sample)".format(fmt_seconds(r["median_s"]))
    return "{} ± {}".format(fmt_seconds(r["median_s"]), fmt_seconds(r["iqr_s"]))


def unstable_words(settings: Dict[str, Any]) -> str:
    """What unstable means, for a note beside the count."""
    return (
        "the samples' CV (standard deviation / mean) above {:.0%}, or fewer than {} samples: their medians are less "
        "sure, and a difference smaller than their spread is no difference".format(
            settings.get("unstable_cv", 0.1), MIN_STABLE_SAMPLES
        )
    )


def unstable_note(report: Dict[str, Any]) -> Optional[str]:
    """'N of M results unstable (what that means)', or None when none is."""
    s = report["summary"]
    if not s.get("unstable"):
        return None
    return "{:,} of {:,} results unstable: {}".format(s["unstable"], s["measured"], unstable_words(report["settings"]))


def measured_cells(r: Dict[str, Any]) -> List[str]:
    """The cells every view shows of a measured result: one-time, median ± IQR, min, GFLOP/s, GB/s, % peak and
    × fastest."""
    return [
        fmt_seconds(r["one_time"]["total_s"]),
        fmt_median(r),
        fmt_seconds(r["min_s"]),
        fmt_rate(r.get("gflops")),
        fmt_rate(r.get("gbs")),
        fmt_peak(r.get("peak_fraction")),
        fmt_ratio(r.get("ratio_to_fastest")),
    ]


def flags(r: Dict[str, Any]) -> List[str]:
    """What a view says beside a measured result's numbers: unstable, and the result's message."""
    said = []
    if r.get("unstable"):  # a CV of one sample says nothing: too few samples say so instead
        few = r["n_samples"] < MIN_STABLE_SAMPLES
        said.append(
            "unstable (only {})".format(samples(r["n_samples"]))
            if few
            else "unstable (CV {:.0%}, {})".format(r["cv"], samples(r["n_samples"]))
        )
    if (r.get("peak_fraction") or 0) > 1.0:
        said.append(PEAK_FLAG.get(r.get("peak_kind") or "", "above the peak"))
    return said + ([r["message"]] if r.get("message") else [])


def samples(n: int) -> str:
    return "1 sample" if n == 1 else f"{n} samples"


def against(comparison: Dict[str, Any], capital: bool = False) -> str:
    """What a comparison is of, as every view titles it: "against BASELINE.json" ("Against" with `capital`), or
    "NEW against OLD" for two backends of one bench (`kbtool bench --versions`)."""
    pair = comparison.get("pair")
    if pair:
        return "{} against {}".format(pair["now"], pair["baseline"])
    return "{} {}".format("Against" if capital else "against", comparison["baseline"])


def comparison_cells(row: Dict[str, Any]) -> List[str]:
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


def verdict_line(report: Dict[str, Any]) -> str:
    """The one line that says what a bench measured and whether its gate holds."""
    s = report["summary"]
    parts = ["{} measured".format(s["measured"])]
    if s.get("failed"):
        parts.append("{} not measured (raised, crashed or timed out)".format(s["failed"]))
    if s.get("unsupported"):
        parts.append("{} unsupported".format(s["unsupported"]))
    parts.append("{} unstable".format(s["unstable"]))
    load = report["machine"].get("load") or {}
    if load.get("busy"):
        parts.append("machine busy")
    comparison = report.get("comparison")
    if comparison:
        gate = [r for r in comparison["rows"] if r["fails_gate"]]
        worse = sum(r["verdict"] == "worse" for r in comparison["rows"])
        better = sum(r["verdict"] == "better" for r in comparison["rows"])
        failing: Dict[str, int] = {}
        for r in gate:
            word = (
                "slower beyond {:g} %".format(comparison["fail_over_pct"]) if r["verdict"] == "worse" else r["verdict"]
            )
            failing[word] = failing.get(word, 0) + 1
        parts.append(
            "{}: {} worse, {} better; {}".format(
                against(comparison),
                worse,
                better,
                "{}: gate FAILED".format(", ".join(f"{n} {word}" for word, n in failing.items()))
                if gate
                else "gate passed",
            )
        )
    if report.get("incomplete"):
        parts.append("incomplete ({})".format(report["incomplete"].get("note", "interrupted")))
    for problem in problems(report):
        parts.append(problem + ": not ok")
    if s["measured"] == 0:
        parts.append("nothing was measured: not ok")
    return "bench: " + ", ".join(parts) + " in {:.1f} s".format(report["wall_seconds"])
