"""Summaries of timing samples, the growth of time with size, and ratios between backends.

Each result's samples are seconds per call. A result is unstable when its coefficient of variation (standard
deviation / mean) passes `unstable_cv`, or when fewer than MIN_STABLE_SAMPLES samples fit its time limit."""

import math
from collections import defaultdict
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

Record = Dict[str, Any]  # a bench result, as JSON data

UNSTABLE_CV = 0.10
MIN_STABLE_SAMPLES = 3


def summarize(samples: Sequence[float], unstable_cv: float = UNSTABLE_CV) -> Record:
    """median, IQR (75th - 25th percentile), min, sample count, CV and the unstable flag of one result."""
    values = np.asarray(samples, dtype="float64")
    q1, median, q3 = np.percentile(values, [25, 50, 75])
    mean = float(values.mean())
    cv = float(values.std(ddof=1) / mean) if len(values) > 1 and mean > 0 else 0.0
    return {
        "median_s": float(median),
        "iqr_s": float(q3 - q1),
        "min_s": float(values.min()),
        "n_samples": int(len(values)),
        "cv": cv,
        "unstable": bool(cv > unstable_cv or len(values) < MIN_STABLE_SAMPLES),
    }


def growth_exponent(points: Iterable[Tuple[float, float]]) -> Optional[float]:
    """k of time = c * n**k, fitted by least squares on log-log axes over (n, seconds) points; None below two
    distinct sizes."""
    positive = [(n, t) for n, t in points if n > 0 and t > 0]
    if len({n for n, _ in positive}) < 2:
        return None
    logs = np.log([[n, t] for n, t in positive])
    slope, _ = np.polyfit(logs[:, 0], logs[:, 1], 1)
    return float(slope)


def scaling(results: Iterable[Record]) -> List[Record]:
    """One row per op × backend × mode measured at two sizes or more: the fitted exponent and its points."""
    grouped: Dict[Tuple[str, str, str], List[Tuple[float, float]]] = defaultdict(list)
    for r in results:
        if r["status"] == "ok":
            grouped[(r["op"], r["backend"], r["mode"])].append((float(r["n"]), r["median_s"]))
    rows = []
    for (op, backend, mode), points in sorted(grouped.items()):
        exponent = growth_exponent(points)
        if exponent is not None:
            rows.append(
                {
                    "op": op,
                    "backend": backend,
                    "mode": mode,
                    "exponent": exponent,
                    "points": [list(p) for p in sorted(points)],
                }
            )
    return rows


def add_ratios(results: List[Record], reference: str = "numpy") -> None:
    """Each ok result's median over the fastest backend's (same op, size, mode) and over the NumPy reference's."""
    fastest: Dict[Tuple[str, str, str], float] = {}
    numpy_median: Dict[Tuple[str, str, str], float] = {}
    for r in results:
        if r["status"] != "ok":
            continue
        key = (r["op"], r["size"], r["mode"])
        fastest[key] = min(fastest.get(key, math.inf), r["median_s"])
        if r["backend"] == reference:
            numpy_median[key] = r["median_s"]
    for r in results:
        key = (r["op"], r["size"], r["mode"])
        ok = r["status"] == "ok"
        r["ratio_to_fastest"] = r["median_s"] / fastest[key] if ok and fastest.get(key) else None
        r["ratio_to_numpy"] = r["median_s"] / numpy_median[key] if ok and numpy_median.get(key) else None


def slowest_pairs(results: Iterable[Record], count: int = 3) -> List[Record]:
    """The op × backend pairs furthest behind the fastest backend (largest ratio_to_fastest), one row per pair:
    its worst size and mode."""
    worst: Dict[Tuple[str, str], Record] = {}
    for r in results:
        if r.get("ratio_to_fastest") is None or r["ratio_to_fastest"] <= 1.0:  # the fastest is behind nobody
            continue
        key = (r["op"], r["backend"])
        if key not in worst or r["ratio_to_fastest"] > worst[key]["ratio_to_fastest"]:
            worst[key] = r
    return sorted(worst.values(), key=lambda r: -r["ratio_to_fastest"])[:count]
