"""Summaries, growth exponents, ratios between backends and the regression gate (kbtool/bench/stats.py and
compare.py), on synthetic samples."""

import numpy as np
import pytest

from kbtool.bench import compare, cost, stats


def test_summary_median_iqr_min_cv_and_the_unstable_flag():
    s = stats.summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (s["median_s"], s["min_s"], s["n_samples"]) == (3.0, 1.0, 5)
    assert s["iqr_s"] == pytest.approx(4.0 - 2.0)
    assert s["cv"] == pytest.approx(np.std([1, 2, 3, 4, 100], ddof=1) / 22.0)
    assert s["unstable"] is True
    steady = stats.summarize([1.0, 1.01, 0.99, 1.0, 1.02])
    assert steady["unstable"] is False and steady["cv"] < 0.02
    assert stats.summarize([1.0, 1.0])["unstable"] is True  # too few samples to say


@pytest.mark.parametrize("k", [1.0, 2.0, 3.0, 0.0])
def test_growth_exponent_recovers_the_power_law(k):
    points = [(n, 2e-9 * n**k) for n in (64, 512, 2048)]
    assert stats.growth_exponent(points) == pytest.approx(k, abs=1e-9)
    assert stats.growth_exponent(points[:1]) is None


def result(op, backend, median, size="medium", mode="eager", n=10.0, status="ok", samples=None):
    return {
        "op": op,
        "backend": backend,
        "size": size,
        "mode": mode,
        "n": n,
        "status": status,
        "median_s": median,
        "samples_s": samples or [median] * 5,
    }


def test_ratios_to_the_fastest_and_to_numpy_are_per_op_size_and_mode():
    results = [
        result("dot", "numpy", 2.0),
        result("dot", "tensorflow", 1.0),
        result("dot", "theano", 4.0),
        result("dot", "theano", 1.0, mode="symbolic"),
        result("dot", "cntk", None, status="raised"),
    ]
    stats.add_ratios(results)
    assert [r["ratio_to_fastest"] for r in results] == [2.0, 1.0, 4.0, 1.0, None]
    assert [r["ratio_to_numpy"] for r in results] == [1.0, 0.5, 2.0, None, None]
    worst = stats.slowest_pairs(results, 2)
    assert [(r["op"], r["backend"]) for r in worst] == [("dot", "theano"), ("dot", "numpy")]
    assert [(r["op"], r["backend"]) for r in stats.slowest_pairs(results, 5)] == [("dot", "theano"), ("dot", "numpy")]


def test_scaling_rows_fit_each_op_backend_mode_over_its_sizes():
    results = [
        result("dot", "numpy", 1e-9 * n**3, size=s, n=n)
        for s, n in (("small", 64.0), ("medium", 512.0), ("large", 2048.0))
    ]
    rows = stats.scaling(results + [result("abs", "numpy", 1.0)])
    assert len(rows) == 1 and rows[0]["exponent"] == pytest.approx(3.0) and len(rows[0]["points"]) == 3


def test_rates_and_the_peak_that_bounds_an_op():
    peak = {"matmul_gflops": 100.0, "copy_gbs": 10.0}
    r = cost.rates(2e9, 1e9, 0.1, peak)
    assert r["gflops"] == pytest.approx(20.0) and r["gbs"] == pytest.approx(10.0)
    assert (r["peak_fraction"], r["peak_kind"]) == (pytest.approx(0.2), "matmul")
    r = cost.rates(None, 1e9, 0.2, peak)
    assert (r["gflops"], r["peak_fraction"], r["peak_kind"]) == (None, pytest.approx(0.5), "copy")


def rng_samples(median, count=15, seed=0, spread=0.02):
    return list(median * (1 + spread * np.random.default_rng(seed).standard_normal(count)))


def test_a_bench_against_itself_is_unchanged_and_passes_the_gate():
    run = {"results": [result("dot", "numpy", 1.0, samples=rng_samples(1.0))]}
    comparison = compare.compare(run, run, "self.json")
    assert [r["verdict"] for r in comparison["rows"]] == ["unchanged"] and comparison["failed"] is False
    assert comparison["rows"][0]["p_value"] == pytest.approx(1.0, abs=0.05)


def test_a_significant_slowdown_beyond_fail_over_fails_the_gate_and_a_speedup_is_better():
    base = {
        "results": [
            result("dot", "numpy", 1.0, samples=rng_samples(1.0)),
            result("abs", "numpy", 1.0, samples=rng_samples(1.0, seed=1)),
        ]
    }
    now = {
        "results": [
            result("dot", "numpy", 1.3, samples=rng_samples(1.3, seed=2)),
            result("abs", "numpy", 0.7, samples=rng_samples(0.7, seed=3)),
        ]
    }
    comparison = compare.compare(now, base, "base.json", fail_over_pct=10)
    dot, absolute = comparison["rows"]
    assert dot["verdict"] == "worse" and dot["fails_gate"] and dot["p_value"] < 0.001
    assert dot["change_pct"] == pytest.approx(30, abs=3)
    assert absolute["verdict"] == "better" and not absolute["fails_gate"]
    assert comparison["failed"] is True
    assert compare.compare(now, base, "base.json", fail_over_pct=50)["failed"] is False  # within tolerance


def test_a_small_or_insignificant_change_is_unchanged():
    base = {"results": [result("dot", "numpy", 1.0, samples=rng_samples(1.0))]}
    tiny = {"results": [result("dot", "numpy", 1.02, samples=rng_samples(1.02, seed=5, spread=0.001))]}
    assert compare.compare(tiny, base, "b", min_effect_pct=5)["rows"][0]["verdict"] == "unchanged"
    noisy = {"results": [result("dot", "numpy", 1.3, samples=[0.5, 2.0, 1.3])]}  # 3 scattered samples
    assert compare.compare(noisy, base, "b")["rows"][0]["verdict"] == "unchanged"


def test_rows_only_on_one_side_or_not_measured_are_said_so():
    base = {"results": [result("dot", "numpy", 1.0), result("abs", "numpy", 1.0)]}
    now = {"results": [result("dot", "numpy", None, status="crash"), result("exp", "numpy", 1.0)]}
    rows = compare.compare(now, base, "b")["rows"]
    verdicts = {r["op"]: (r["verdict"], r["fails_gate"]) for r in rows}
    # what was measured and crashes or is absent now fails the gate (tests/test_faults_bench.py: every way)
    assert verdicts == {"dot": ("failed", True), "exp": ("new", False), "abs": ("gone", True)}


def test_the_peak_is_the_best_of_before_and_after_with_every_sample():
    from kbtool.bench import peak

    before = {
        "matmul_gflops": 100.0,
        "matmul_n": 2048,
        "matmul_samples_s": [0.2],
        "copy_gbs": 20.0,
        "copy_mb": 64.0,
        "copy_samples_s": [0.01],
    }
    after = dict(before, matmul_gflops=120.0, matmul_samples_s=[0.15], copy_gbs=18.0, copy_samples_s=[0.012])
    both = peak.combine(before, after)
    assert (both["matmul_gflops"], both["copy_gbs"]) == (120.0, 20.0)
    assert both["matmul_samples_s"] == [0.2, 0.15] and both["copy_samples_s"] == [0.01, 0.012]
