"""The regression gate: each op × size × backend × mode of a bench against a baseline bench.

A change counts when the two sets of samples differ significantly (two-sided Mann-Whitney U, p < alpha, as
asv compares samples) and the medians differ by at least `min_effect_pct`; it is then `worse` (slower) or
`better`. A worse result slower by more than `fail_over_pct` fails the gate (exit 1)."""

ALPHA = 0.05
MIN_EFFECT_PCT = 5.0
FAIL_OVER_PCT = 10.0


def _key(r):
    return r["op"], r["size"], r["backend"], r["mode"]


def compare(current, baseline, baseline_name, alpha=ALPHA, min_effect_pct=MIN_EFFECT_PCT, fail_over_pct=FAIL_OVER_PCT):
    from scipy.stats import mannwhitneyu

    before = {_key(r): r for r in baseline.get("results", [])}
    rows = []
    for r in current["results"]:
        old = before.pop(_key(r), None)
        row = {
            "op": r["op"],
            "size": r["size"],
            "backend": r["backend"],
            "mode": r["mode"],
            "baseline_median_s": old.get("median_s") if old else None,
            "median_s": r.get("median_s"),
            "change_pct": None,
            "p_value": None,
            "fails_gate": False,
        }
        if old is None:
            row["verdict"] = "new"
        elif r["status"] != "ok" or old.get("status") != "ok" or not old.get("samples_s") or not r.get("samples_s"):
            row["verdict"] = "not comparable"
        else:
            change = (r["median_s"] / old["median_s"] - 1.0) * 100.0
            p_value = float(mannwhitneyu(r["samples_s"], old["samples_s"], alternative="two-sided").pvalue)
            significant = p_value < alpha and abs(change) >= min_effect_pct
            row.update(
                change_pct=change,
                p_value=p_value,
                verdict=("worse" if change > 0 else "better") if significant else "unchanged",
            )
            row["fails_gate"] = row["verdict"] == "worse" and change > fail_over_pct
        rows.append(row)
    for old in before.values():  # in the baseline, not measured now
        rows.append(
            {
                "op": old["op"],
                "size": old["size"],
                "backend": old["backend"],
                "mode": old["mode"],
                "verdict": "gone",
                "baseline_median_s": old.get("median_s"),
                "median_s": None,
                "change_pct": None,
                "p_value": None,
                "fails_gate": False,
            }
        )
    return {
        "baseline": baseline_name,
        "alpha": alpha,
        "min_effect_pct": min_effect_pct,
        "fail_over_pct": fail_over_pct,
        "rows": rows,
        "failed": any(row["fails_gate"] for row in rows),
    }


def counts(comparison):
    found = {}
    for row in comparison["rows"]:
        found[row["verdict"]] = found.get(row["verdict"], 0) + 1
    return found
