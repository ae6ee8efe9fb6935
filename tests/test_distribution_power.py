"""Distribution tests have the power to see a 3 % change in any documented parameter at the spec's sample sizes,
and stay quiet on unchanged draws (NumPy draws, no backend)."""

import numpy as np
import pytest

from kbtool.specs import loader
from kbtool.specs.cases import cases_for
from kbtool.verdicts import distributions as d
from kbtool.verdicts.stats import Draws, judge_stats

N_FLOAT = 100_000  # random_normal, random_uniform, truncated_normal: the spec's float cases
N_FLAGS = 300_000  # random_binomial's p 0.2 and 0.3 cases
SEEDS = 200  # unchanged draws, over the four laws


def _truncated(rng, mean, std, n):
    values = rng.normal(0.0, 1.0, n)
    bad = np.abs(values) > 2
    while bad.any():
        values[bad] = rng.normal(0.0, 1.0, int(bad.sum()))
        bad = np.abs(values) > 2
    return mean + std * values


def _law_and_draws(kind, rng, change=None):
    """(documented law, draws); `change` moves one parameter of the drawn law by 3 %."""
    c = d.CHANGE
    if kind == "normal":
        mean, std = 0.0, 1.0
        mean += c * std if change == "mean" else 0.0
        std *= 1 + c if change == "stddev" else 1.0
        return d.Normal(0.0, 1.0), rng.normal(mean, std, N_FLOAT).astype("float32")
    if kind == "uniform":
        low, high = 0.0, 1.0
        low += c if change == "minval" else 0.0
        high -= c if change == "maxval" else 0.0
        return d.Uniform(0.0, 1.0), rng.uniform(low, high, N_FLOAT).astype("float32")
    if kind == "truncated":
        mean = c if change == "mean" else 0.0
        std = 1 + c if change == "stddev" else 1.0
        return d.TruncatedNormal(0.0, 1.0), _truncated(rng, mean, std, N_FLOAT).astype("float32")
    p = 0.3 * (1 + c) if change == "p" else 0.3
    return d.Bernoulli(0.3), (rng.random(N_FLAGS) < p).astype("float32")


CHANGES = [
    ("normal", "mean"),
    ("normal", "stddev"),
    ("uniform", "minval"),
    ("uniform", "maxval"),
    ("truncated", "mean"),
    ("truncated", "stddev"),
    ("binomial", "p"),
]


@pytest.mark.parametrize("kind,change", CHANGES)
def test_a_3_percent_change_is_caught_at_the_spec_sizes(kind, change):
    caught = 0
    for seed in range(10):
        law, draws = _law_and_draws(kind, np.random.default_rng(seed), change)
        caught += law.check(draws) is not None
    assert caught == 10, f"{kind} {change} 3 % off caught in {caught} of 10 draws"


def test_unchanged_draws_pass_at_the_chosen_alpha():
    false = []
    for kind in ("normal", "uniform", "truncated", "binomial"):
        for seed in range(SEEDS // 4):
            law, draws = _law_and_draws(kind, np.random.default_rng(1000 + seed))
            broken = law.check(draws)
            if broken:
                false.append((kind, seed, broken))
    assert not false  # at alpha 1e-7 per test, 200 draws x ~5 tests: P(any false alarm) ~ 1e-4


def test_the_power_functions_say_0_99_or_more_at_the_spec_sizes():
    c = d.CHANGE
    assert d.power_mean(N_FLOAT, 1.0, c) > 0.99
    assert d.power_variance(N_FLOAT, 1.0, 0.0) > 0.99
    assert d.power_ks(N_FLOAT, c) > 0.99  # uniform: an end 3 % of the range off
    assert d.power_count(N_FLAGS, 0.3) > 0.99 and d.power_count(N_FLAGS, 0.2) > 0.99
    # ... and would not at the old 10000 draws: the reason the cases grew
    assert d.power_mean(10_000, 1.0, c) < 0.5 and d.power_count(10_000, 0.3) < 0.5


def test_a_failing_message_says_the_test_n_and_its_power():
    law, draws = _law_and_draws("normal", np.random.default_rng(0), "stddev")
    message = law.check(draws)
    assert message.startswith("stddev:") and "variance test, n=100000, power 1.00 to see a 3 % stddev change" in message
    law, draws = _law_and_draws("binomial", np.random.default_rng(0), "p")
    assert "binomial test, n=300000, power" in law.check(draws)


def test_statistics_are_measured_whatever_the_dtype():
    rng = np.random.default_rng(3)
    good, bad = rng.normal(0, 1, N_FLOAT), rng.normal(5, 2, N_FLOAT)  # float64 where the reference has float32
    reference = [np.zeros(N_FLOAT, "float32")]
    agree = judge_stats({}, reference, [good], Draws(law=d.Normal(0, 1)))
    differ = judge_stats({}, reference, [bad], Draws(law=d.Normal(0, 1)))
    assert agree.message == "dtype float64 != reference float32 (statistics agree)"
    assert differ.message.startswith("dtype float64 != reference float32 (statistics also differ: mean:")


def test_every_float_random_case_of_the_spec_has_the_power():
    """Each seeded or unseeded stats case of the four random ops draws enough values for power 0.99."""
    spec = loader.load()
    weak = []
    for op in ("random_normal", "random_uniform", "truncated_normal", "random_binomial"):
        for case in cases_for(spec, op):
            if not case.stats:
                continue
            n = int(np.prod(case.shape_names["shape"]))
            p = case.shape_names.get("p")
            power = d.power_count(n, p) if p is not None else d.power_mean(n, 1.0, d.CHANGE)
            if power < 0.99:
                weak.append((op, case.id, n, round(power, 3)))
    assert not weak


def test_a_normal_laws_variance_is_judged_by_its_exact_chi_square_at_small_n():
    # 6 draws of N(0, 1) with sample stddev 2.08 (tensorflow1's random_normal_variable doc example once drew them):
    # the normal approximation said p 7.5e-9 (a fail at alpha 1e-7); (n-1) s^2 is chi-square with 5 dof: p 1.2e-3
    draws = np.array([-2.9, 1.9, 2.6, -1.2, 0.3, -0.5])
    draws = (draws - draws.mean()) / draws.std(ddof=1) * 2.08
    assert d._moments(draws, 0.0, 1.0, 0.0, ("mean", "scale"), (0.03, "a 3 % mean change")) is None
    # a real change is still caught: twice the scale over 1,000 draws
    wide = np.random.default_rng(0).normal(0.0, 2.0, 1000)
    message = d._moments(wide, 0.0, 1.0, 0.0, ("mean", "scale"), (0.03, "a 3 % mean change"))
    assert message is not None and message.startswith("scale:")
