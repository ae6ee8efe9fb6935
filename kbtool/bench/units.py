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
    """The fraction of the measured peak (this machine's, or the device's the row ran on); above 1 it says
    "> 100 %" (the why: PEAK_ABOVE, DEVICE_PEAK_ABOVE)."""
    if fraction is None:
        return ""
    return "> 100 %" if fraction > 1.0 else fmt_pct(fraction)


PEAK_ABOVE = {
    "copy": "above the copy peak: the op moves less than its inputs and outputs (a view, no copy) or works in cache "
    "(the peak is a 64 MB copy through memory)",
    "matmul": "above the matmul peak: the op ran faster than NumPy's float32 matmul on all cores did while the peak "
    "was measured (another BLAS, or the load changed)",
}


# a row that ran on a device other than the CPU is rated against that device's peak, measured through its engine
DEVICE_PEAK_ABOVE = {
    "copy": "above its device's copy peak: the op moves less than its inputs and outputs (a view, no copy) or works "
    "in the device's cache (the peak is a large copy through its memory)",
    "matmul": "above its device's matmul peak: the op ran faster than the engine's float32 matmul on that device did "
    "while the peak was measured (a faster kernel, or the device's clock changed)",
}


# a result's flag when it is above the peak (PEAK_ABOVE, said once beside the peak, says why at length)
PEAK_FLAG = {
    "copy": "above the copy peak (moved less than counted, or in cache)",
    "matmul": "above the matmul peak (measured at another moment, or another BLAS)",
}
DEVICE_PEAK_FLAG = {
    "copy": "above its device's copy peak (moved less than counted, or in cache)",
    "matmul": "above its device's matmul peak (measured at another moment, or a faster kernel)",
}


def above_peak(r: Dict[str, Any], at_length: bool = False) -> str:
    """Why a result is above the peak it is rated against (a flag; `at_length`: the note said once)."""
    device = r.get("peak_source") == "device"
    said = (DEVICE_PEAK_ABOVE if device else PEAK_ABOVE) if at_length else (DEVICE_PEAK_FLAG if device else PEAK_FLAG)
    return said.get(r.get("peak_kind") or "", "above the peak")


def on_a_device(backend: Dict[str, Any]) -> bool:
    """Whether a backend ran on a device other than the CPU (its rows are rated against that device's peak)."""
    return backend.get("status") == "available" and backend.get("device") not in (None, "cpu")


def device_peak_lines(report: Dict[str, Any]) -> List[str]:
    """A line per backend that ran on a device other than the CPU: its device's peak, or why it has none (it could
    not be measured: its rows have no % peak; a report from before device peaks: its rows are rated against this
    machine's); then which rows are rated against which peak. Nothing for a CPU bench."""
    devices = [b for b in report["backends"] if on_a_device(b)]
    lines = []
    for b in devices:
        peak = b.get("peak")
        if peak:
            lines.append(describe_device_peak(b["name"], peak))
        elif b.get("peak_error"):
            lines.append(
                "peak ({} on {}): not measured ({}): its rows have no % peak".format(
                    b["name"], b["device"], b["peak_error"]
                )
            )
        else:
            lines.append(
                "peak ({} on {}): none in this report (written before kbtool measured a device's peak): its rows' % "
                "peak is against this machine's CPU peak".format(b["name"], b["device"])
            )
    rated = [b for b in devices if b.get("peak")]
    if rated:
        lines.append(
            "% peak: the rows of {} (on {}) against their device's peak; every other row against this machine's".format(
                ", ".join(b["name"] for b in rated), ", ".join(sorted({b["device"] for b in rated}))
            )
        )
    return lines


def describe_device_peak(name: str, peak: Dict[str, Any]) -> str:
    """'peak (keras3-jax on cuda:0 NVIDIA H100, in its worker): 400,000 GFLOP/s float32 matmul at 8192² at default
    precision (this run's), 51,000 at highest; 2,900 GB/s copy of 512 MB'."""
    run = peak["precision"]
    others = [
        "{} at {}".format(fmt_rate(figures["gflops"]), precision)
        for precision, figures in (peak.get("matmul_precisions") or {}).items()
        if precision != run
    ]
    return "peak ({} on {}, in its worker): {} GFLOP/s float32 matmul at {}² at {} precision{}{}; {} GB/s copy of {:.0f} MB".format(
        name,
        peak.get("device_name") or peak["device"],
        fmt_rate(peak["matmul_gflops"]),
        peak["matmul_n"],
        run,
        " (this run's)" if others else "",
        "".join(", " + other for other in others),
        fmt_rate(peak["copy_gbs"]),
        peak["copy_mb"],
    )


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
        said.append(above_peak(r))
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
