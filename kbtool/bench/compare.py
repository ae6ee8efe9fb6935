"""The regression gate: each op × size × backend × mode of a bench against a baseline bench.

A change counts when the two sets of samples differ significantly (two-sided Mann-Whitney U, p < alpha, as
asv compares samples) and the medians differ by at least `min_effect_pct`; it is then `worse` (slower) or
`better`. A worse result slower by more than `fail_over_pct` fails the gate (exit 1).

What the baseline measured and this bench did not also fails the gate, with its reason: `failed` (it raises,
crashes, times out or is unsupported now) and `gone` (this bench covered it and has no result: its backend did
not start, was not installed or not run, or the op lost the mode). So does a pair whose medians cannot be compared
(not finite or not positive: `not comparable`). Never failing: `new`, `not benched` (outside this bench's
selection: another op, size, mode or backend) and `not comparable` when the baseline had no measurement.

`between` compares two backends of one bench the same way (`kbtool bench --versions`: a backend's newer release
against its older one): the newer one's results paired with the older one's by op, size and mode."""

import math
from typing import Any, Dict, List, Optional, Tuple

from kbtool.bench.units import fmt_seconds

ALPHA = 0.05
MIN_EFFECT_PCT = 5.0
FAIL_OVER_PCT = 10.0


def _key(r: Dict[str, Any]) -> Tuple[str, str, str, str]:
    return r["op"], r["size"], r["backend"], r["mode"]


def _usable(r: Dict[str, Any]) -> Optional[str]:
    """Why an ok result's times cannot be compared (None when they can)."""
    median, samples = r.get("median_s"), r.get("samples_s") or []
    if not isinstance(median, (int, float)) or not math.isfinite(median) or median <= 0:
        return f"median {median!r}"
    if not samples or not all(isinstance(s, (int, float)) and math.isfinite(s) and s > 0 for s in samples):
        return "samples missing or not positive finite numbers"
    return None


def _covers(current: Dict[str, Any], r: Dict[str, Any]) -> bool:
    """Whether `current` set out to measure the baseline's result `r` (its op, size, mode and backend)."""
    settings = current.get("settings") or {}
    backends = current.get("backends")
    return (
        ("ops" not in settings or r["op"] in settings["ops"])
        and ("sizes" not in settings or r["size"] in settings["sizes"])
        and ("modes" not in settings or r["mode"] in settings["modes"])
        and (backends is None or r["backend"] in {b["name"] for b in backends})
    )


def _absent(current: Dict[str, Any], backend: str) -> str:
    for b in current.get("backends") or []:
        if b["name"] == backend and b["status"] != "available":
            return "gone: no result now, the backend is {}{}".format(
                b["status"], " ({})".format(b["reason"]) if b.get("reason") else ""
            )
    return "gone: no result now (measured in the baseline)"


def compare(
    current: Dict[str, Any],
    baseline: Dict[str, Any],
    baseline_name: str,
    alpha: float = ALPHA,
    min_effect_pct: float = MIN_EFFECT_PCT,
    fail_over_pct: float = FAIL_OVER_PCT,
) -> Dict[str, Any]:
    """The comparison of `current` (a bench, or {"results", "settings", "backends"}) with `baseline`."""
    before = {_key(r): r for r in baseline.get("results", [])}
    rows = []
    for r in current["results"]:
        old = before.pop(_key(r), None)
        row = _row(r, old)
        row["median_s"] = r.get("median_s")
        row.update(_judged(r, old, alpha, min_effect_pct, fail_over_pct))
        rows.append(row)
    for old in before.values():  # in the baseline, not measured now
        row = _row(old, old)
        if not _covers(current, old):
            row["verdict"] = "not benched"
        elif old.get("status") != "ok":
            row["verdict"] = "gone"  # it had no time: nothing is lost
        else:
            row.update(verdict="gone", fails_gate=True, reason=_absent(current, old["backend"]))
        rows.append(row)
    return {
        "baseline": baseline_name,
        "alpha": alpha,
        "min_effect_pct": min_effect_pct,
        "fail_over_pct": fail_over_pct,
        "rows": rows,
        "failed": any(row["fails_gate"] for row in rows),
    }


def _judged(
    r: Dict[str, Any], old: Optional[Dict[str, Any]], alpha: float, min_effect_pct: float, fail_over_pct: float
) -> Dict[str, Any]:
    """A result of this bench against its baseline's (None: not in the baseline): its row's verdict, and the change,
    p-value, gate and reason where they are known."""
    from scipy.stats import mannwhitneyu

    if old is None:
        return {"verdict": "new"}
    if old.get("status") != "ok":
        return {"verdict": "not comparable"}  # the baseline has no time to compare with: nothing to lose
    if r["status"] != "ok":
        return dict(
            verdict="failed",
            fails_gate=True,
            reason="{} now{}; {} in the baseline".format(
                r["status"],
                ": " + str(r["message"])[:200] if r.get("message") else "",
                fmt_seconds(old.get("median_s")),
            ),
        )
    if _usable(old) or _usable(r):
        which = "the baseline's" if _usable(old) else "this bench's"
        return dict(
            verdict="not comparable",
            fails_gate=True,
            reason=f"{which} {_usable(old) or _usable(r)}: cannot be compared",
        )
    change = (r["median_s"] / old["median_s"] - 1.0) * 100.0
    p_value = float(mannwhitneyu(r["samples_s"], old["samples_s"], alternative="two-sided").pvalue)
    if not (math.isfinite(change) and math.isfinite(p_value)):  # cannot happen with usable samples
        return dict(verdict="not comparable", fails_gate=True, reason="the change cannot be computed")
    significant = p_value < alpha and abs(change) >= min_effect_pct
    verdict = ("worse" if change > 0 else "better") if significant else "unchanged"
    judged: Dict[str, Any] = dict(change_pct=change, p_value=p_value, verdict=verdict)
    judged["fails_gate"] = verdict == "worse" and change > fail_over_pct
    if judged["fails_gate"]:
        judged["reason"] = "{:+.1f} % slower ({} → {}, p = {:.3g}), beyond {:g} %".format(
            change, fmt_seconds(old["median_s"]), fmt_seconds(r["median_s"]), p_value, fail_over_pct
        )
    return judged


def between(
    current: Dict[str, Any],
    old: str,
    new: str,
    alpha: float = ALPHA,
    min_effect_pct: float = MIN_EFFECT_PCT,
    fail_over_pct: float = FAIL_OVER_PCT,
) -> Dict[str, Any]:
    """The comparison of backend `new`'s results in `current` (a bench, or {"results", "settings", "backends"}) with
    backend `old`'s in the same bench, paired by op, size and mode: `compare` with `old`'s results as the baseline.
    Its rows name `new`; its "pair" names both ("baseline": old, "now": new)."""
    results = current["results"]
    baseline = {"results": [dict(r, backend=new) for r in results if r["backend"] == old]}
    now: Dict[str, Any] = {"results": [r for r in results if r["backend"] == new], "settings": current.get("settings")}
    if current.get("backends") is not None:
        now["backends"] = [b for b in current["backends"] if b["name"] == new]
    found = compare(now, baseline, old, alpha=alpha, min_effect_pct=min_effect_pct, fail_over_pct=fail_over_pct)
    found["pair"] = {"baseline": old, "now": new}
    return found


def _row(r: Dict[str, Any], old: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    return {
        "op": r["op"],
        "size": r["size"],
        "backend": r["backend"],
        "mode": r["mode"],
        "baseline_median_s": old.get("median_s") if old else None,
        "median_s": None,
        "change_pct": None,
        "p_value": None,
        "fails_gate": False,
    }


def gate_lines(comparison: Dict[str, Any]) -> List[str]:
    """A line per row that fails the gate: op, size, backend, mode and what happened."""
    return [
        "gate: {} {} {} {}: {}".format(
            row["op"], row["size"], row["backend"], row["mode"], row.get("reason") or row["verdict"]
        )
        for row in comparison["rows"]
        if row["fails_gate"]
    ]


def counts(comparison: Dict[str, Any]) -> Dict[str, int]:
    found: Dict[str, int] = {}
    for row in comparison["rows"]:
        found[row["verdict"]] = found.get(row["verdict"], 0) + 1
    return found
