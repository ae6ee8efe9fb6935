"""Random ops' documented properties: planted generators that break one property each are caught, with a message
naming the property; correct generators pass (fixed seeds: deterministic)."""

import numpy as np
import pytest

from kbtool import reference
from kbtool.specs import cases, loader
from kbtool.verdicts import distributions, judge, stats
from kbtool.verdicts.distributions import ALPHA, Bernoulli, Dropout, Normal, TruncatedNormal, Uniform
from kbtool.worker import invoke


def rng(seed=0):
    return np.random.default_rng(seed)


def ar1(shape, rho, seed=0, axis=-1):
    """Standard normal draws correlated with their neighbour along `axis` (lag-1 correlation rho)."""
    z = np.moveaxis(rng(seed).standard_normal(shape), axis, -1)
    out = np.empty_like(z)
    out[..., 0] = z[..., 0]
    for i in range(1, z.shape[-1]):
        out[..., i] = rho * out[..., i - 1] + np.sqrt(1 - rho * rho) * z[..., i]
    return np.moveaxis(out, -1, axis)


SHAPE = (100, 100)


def check(law, draws):
    return law.check(np.asarray(draws, dtype="float32"))


# ---- each law: the correct generator passes, each planted fault fails naming its property -------------------------


@pytest.mark.parametrize("seed", range(5))
def test_correct_generators_pass(seed):
    g = rng(seed)
    assert check(Normal(2.0, 0.5), g.normal(2.0, 0.5, SHAPE)) is None
    assert check(Normal(-3.0, 3.0), g.normal(-3.0, 3.0, (20, 25, 20))) is None
    assert check(Uniform(-2.0, 2.0), g.uniform(-2.0, 2.0, SHAPE)) is None
    assert check(Uniform(9.0, 11.0), g.uniform(9.0, 11.0, (10, 1, 1000))) is None
    assert check(TruncatedNormal(10.0, 0.5), reference.truncated_normal(SHAPE, 10.0, 0.5, seed=seed)) is None
    assert check(Bernoulli(0.3), g.random(SHAPE) < 0.3) is None
    ones = np.ones((200, 50), "float32")
    assert check(Dropout(ones, 0.5, None), (g.random(ones.shape) >= 0.5) * 2.0) is None
    rows = np.ones((200, 20), "float32")
    assert check(Dropout(rows, 0.5, (200, 1)), np.repeat((g.random((200, 1)) >= 0.5) * 2.0, 20, axis=1)) is None


@pytest.mark.parametrize(
    "law, draws, property_",
    [
        # random_normal / random_normal_variable
        (Normal(2.0, 0.5), rng().normal(0.0, 0.5, SHAPE), "mean: "),  # ignores mean
        (Normal(5.0, 2.0, ("mean", "scale")), rng().normal(0.0, 2.0, SHAPE), "mean: "),
        (Normal(2.0, 0.5), rng().normal(2.0, 1.0, SHAPE), "stddev: "),  # ignores stddev
        (Normal(5.0, 2.0, ("mean", "scale")), rng().normal(5.0, 1.0, SHAPE), "scale: "),
        # the right mean and std, the wrong law
        (Normal(0.0, 1.0), rng().uniform(-np.sqrt(3), np.sqrt(3), SHAPE), "distribution: "),
        (Normal(0.0, 1.0), ar1(SHAPE, 0.3, axis=1), "independence: neighbouring draws along axis 1 "),
        (Normal(0.0, 1.0), ar1(SHAPE, 0.3, axis=0), "independence: neighbouring draws along axis 0 "),
        # one row drawn and broadcast over axis 0: all rows equal
        (Normal(0.0, 1.0), np.repeat(rng().normal(size=(1, 10000)), 2, axis=0), "independence: "),
        (Normal(0.0, 1.0), np.where(np.arange(10000) == 7, np.nan, rng().normal(size=10000)), "values: "),
        (Normal(1.5, 0.0), np.full((2, 3), 1.5000001), "stddev 0: "),
        # random_uniform / random_uniform_variable
        (Uniform(-2.0, 2.0), rng().uniform(0.0, 2.0, SHAPE), "distribution: "),  # draws in [0, maxval)
        (Uniform(-2.0, 2.0), rng().uniform(-2.0, 2.1, SHAPE), "bounds: "),
        (Uniform(-4.0, -3.0, ("low", "high")), rng().uniform(-4.0, -2.0, SHAPE), "bounds: "),  # ignores high
        (Uniform(-1.0, 1.0), rng().uniform(-1.0, 1.0, SHAPE) ** 3, "distribution: "),
        (Uniform(0.0, 1.0), np.sort(rng().uniform(size=SHAPE), axis=1), "independence: "),
        (Uniform(0.5, 0.5), np.full((2, 3), 0.4), "minval == maxval: "),
        # truncated_normal
        (TruncatedNormal(10.0, 0.5), np.clip(rng().normal(10.0, 0.5, SHAPE), 9.0, 11.0), "stddev: "),  # clipped
        (TruncatedNormal(10.0, 0.5), rng().normal(10.0, 0.5, SHAPE), "bounds: "),  # not truncated
        (TruncatedNormal(10.0, 0.5), reference.truncated_normal(SHAPE, 0.0, 0.5, seed=1), "bounds: "),  # mean ignored
        (TruncatedNormal(0.0, 2.0), reference.truncated_normal(SHAPE, 0.0, 1.0, seed=1), "stddev: "),  # stddev ignored
        # random_binomial
        (Bernoulli(0.3), (rng().random(SHAPE) < 0.3) * 2.0, "values: "),
        (Bernoulli(0.3), rng().random(SHAPE) < 0.5, "p: "),  # p ignored
        (Bernoulli(0.3), rng().random(SHAPE) >= 0.3, "p: "),  # 1 with probability 1 - p
        (Bernoulli(0.0), rng().random(SHAPE) < 0.001, "p: "),
        (Bernoulli(0.5), np.repeat(rng().random((100, 50)) < 0.5, 2, axis=1), "independence: "),
    ],
)
def test_planted_faults_are_caught(law, draws, property_):
    message = check(law, draws)
    assert message is not None and message.startswith(property_), message


X = np.ones((200, 50), "float32")


@pytest.mark.parametrize(
    "law, draws, property_",
    [
        (Dropout(X, 0.5, None), (rng().random(X.shape) >= 0.5) * 1.0, "values: "),  # kept values not scaled
        (Dropout(X, 0.2, None), (rng().random(X.shape) >= 0.2) * 2.0, "values: "),  # scaled by 1 / level
        (Dropout(X, 0.5, None), (rng().random(X.shape) >= 0.3) * 2.0, "level: "),  # drops 30%, not 50%
        (Dropout(X, 0.9, None), (rng().random(X.shape) < 0.9) * 10.0, "level: "),  # keeps `level`
        (Dropout(X[:, :20], 0.5, (200, 1)), (rng().random((200, 20)) >= 0.5) * 2.0, "noise_shape: "),
        (Dropout(X[:, :20], 0.5, (1, 20)), (rng().random((200, 20)) >= 0.5) * 2.0, "noise_shape: "),
        (
            Dropout(X, 0.5, None),
            np.repeat(rng().random((200, 25)) >= 0.5, 2, axis=1) * 2.0,
            "independence: neighbouring draws along axis 1",
        ),
        (Dropout(X, 0.0, None), (rng().random(X.shape) >= 0.1) * 1.0, "values: "),  # level 0 drops nothing
    ],
)
def test_planted_dropout_faults_are_caught(law, draws, property_):
    message = check(law, draws)
    assert message is not None and message.startswith(property_), message


def test_messages_name_the_documented_values():
    message = check(Normal(5.0, 2.0, ("mean", "scale")), rng().normal(0.0, 2.0, SHAPE))
    assert "from the documented 5 " in message and f"alpha {ALPHA:g}" in message
    assert "outside [minval, maxval] = [-2, 2]" in check(Uniform(-2.0, 2.0), rng().uniform(-2.0, 2.1, SHAPE))
    message = check(Dropout(X[:, :20], 0.5, (200, 1)), (rng().random((200, 20)) >= 0.5) * 2.0)
    assert "noise_shape (200, 1) asks for whole slices" in message and "along axis 1" in message


def test_bounds_allow_rounding_to_the_dtype_only():
    # float32 draws of [-4, -3) may round up to -3 exactly; a value one float32 step beyond is not rounding
    draws = rng().uniform(-4.0, -3.0, SHAPE).astype("float32")
    draws[0, 0] = -3.0
    assert Uniform(-4.0, -3.0).check(draws) is None
    draws[0, 0] = np.nextafter(np.float32(-3.0), np.float32(0), dtype="float32") + np.float32(1e-5)
    assert Uniform(-4.0, -3.0).check(draws).startswith("bounds: 1 of 10000 draws")


def test_dropout_scale_allows_a_float32_level_only():
    # Theano holds level 0.2 as a float32 constant: float64 kept values 1 / 0.800000011920929, not 1.25
    x = np.ones((100, 100), "float64")
    flags = rng().random(x.shape) >= 0.2
    assert Dropout(x, 0.2, None).check(flags / np.float64(np.float32(0.8))) is None
    assert Dropout(x, 0.2, None).check(flags * 1.2501).startswith("values: ")


def test_small_samples_skip_what_they_cannot_test():
    # six draws: no independence test (too few pairs), the exact bounds still hold
    assert Uniform(0.0, 1.0).check(np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], "float32")) is None
    assert Uniform(0.0, 1.0).check(np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 1.5]], "float32")).startswith("bounds: ")


def test_correct_draws_pass_across_seeds():
    # at alpha 1e-7 per test no correct draw among 50 seeds fails (each would with probability ~1e-6)
    failures = [
        seed
        for seed in range(50)
        if check(Normal(0.0, 1.0), rng(seed).normal(size=(50, 40)))
        or check(Bernoulli(0.2), rng(seed).random(2000) < 0.2)
    ]
    assert failures == []


# ---- seeds ---------------------------------------------------------------------------------------------------------


def test_seeds_another_seed_must_draw_other_values_and_no_seed_new_ones():
    law = Normal(0.0, 1.0)
    a, b = rng(1).normal(size=SHAPE).astype("float32"), rng(2).normal(size=SHAPE).astype("float32")
    seeded = stats.Draws(law, repeat=2, seed=1, reseed=2)
    ok = stats.judge_stats({"reproducible": True}, [a], [a, a.copy(), b], seeded)
    assert ok.passed
    ignored = stats.judge_stats({"reproducible": True}, [a], [a, a.copy(), a.copy()], seeded)
    assert ignored.message == "seed: seed 1 and seed 2 drew the same 10000 values (the seed is ignored)"
    unseeded = stats.Draws(law, repeat=3)
    assert stats.judge_stats({}, [a], [a, b, a.copy()], unseeded).passed  # two of three equal: not all
    # a backend whose same-seed draws differ (TF2 eager) still has its other-seed draw compared first
    c = rng(3).normal(size=SHAPE).astype("float32")
    assert stats.judge_stats({"reproducible": True}, [a], [a, c, a.copy()], seeded).message.startswith("seed: ")
    assert stats.judge_stats({"reproducible": True}, [a], [a, c, b], seeded).message.startswith("not reproducible")
    fixed = stats.judge_stats({}, [a], [a, a.copy(), a.copy()], unseeded)
    assert fixed.message == "seed: 3 unseeded calls drew the same 10000 values (seed None is not random)"
    # draws that may be equal by chance (p = 0, a 12-flag Bernoulli) are not compared
    zeros = np.zeros((3, 4), "float32")
    assert stats.judge_stats({}, [zeros], [zeros] * 3, stats.Draws(Bernoulli(0.0), repeat=3)).passed
    flags = (rng().random((3, 4)) < 0.5).astype("float32")
    assert Bernoulli(0.5).chance_equal(12) > ALPHA
    assert stats.judge_stats({}, [flags], [flags] * 3, stats.Draws(Bernoulli(0.5), repeat=3)).passed
    assert Bernoulli(0.5).chance_equal(10000) < ALPHA and Dropout(X, 0.5, None).chance_equal(X.size) < ALPHA


def test_the_law_is_checked_before_seeds_and_after_the_spec_bounds():
    a = rng().normal(0.0, 2.0, SHAPE).astype("float32")
    draws = stats.Draws(Normal(0.0, 1.0), repeat=2, seed=1, reseed=2)
    assert stats.judge_stats({"reproducible": True}, [a], [a, a, a], draws).message.startswith("stddev: ")
    assert stats.judge_stats({"mean": [5, 6]}, [a], [a], draws).message.startswith("mean 0.01")


# ---- the shipped spec: each random case's call gives its law; the plan of draws reaches the worker ----------------


@pytest.fixture(scope="module")
def spec():
    return loader.load()


RANDOM_OPS = [
    "random_normal",
    "random_uniform",
    "random_binomial",
    "truncated_normal",
    "dropout",
    "random_normal_variable",
    "random_uniform_variable",
]


def test_every_stats_case_of_a_random_op_has_a_documented_law(spec):
    found = 0
    for op in RANDOM_OPS:
        for case in cases.cases_for(spec, op):
            if case.stats:
                assert stats.draws_of(case).law is not None, (op, case.id)
                found += 1
    assert found >= 40


def test_each_documented_argument_changes_some_stats_case(spec):
    """Every argument that shapes the law takes a non-default value in some stats case (its effect is checked)."""
    defaults = {
        "mean": 0.0,
        "stddev": 1.0,
        "minval": 0.0,
        "maxval": 1.0,
        "p": 0.0,
        "scale": 1.0,
        "low": 0.0,
        "high": 1.0,
    }
    wanted = {
        "random_normal": ["mean", "stddev", "seed"],
        "random_normal_variable": ["mean", "scale", "seed"],
        "truncated_normal": ["mean", "stddev", "seed"],
        "random_uniform": ["minval", "maxval", "seed"],
        "random_uniform_variable": ["low", "high", "seed"],
        "random_binomial": ["p", "seed"],
        "dropout": ["level", "noise_shape", "seed"],
    }
    for op, names in wanted.items():
        changed = set()
        for case in cases.cases_for(spec, op):
            if not case.stats:
                continue
            for name in names:
                value = case.shape_names.get(name)
                if value is not None and value != defaults.get(name):
                    changed.add(name)
        assert changed == set(names), (op, set(names) - changed)
    noise = [c for c in cases.cases_for(spec, "dropout") if c.stats and c.shape_names.get("noise_shape")]
    # whole rows and whole columns: each axis broadcast by some case
    axes = {tuple(distributions.law_of("dropout", c.shape_names, c.arrays[0]).broadcast_axes()) for c in noise}
    assert {(0,), (1,)} <= axes


def test_request_plan_seeded_and_unseeded(spec):
    by_id = {c.id: c for c in cases.cases_for(spec, "random_normal")}
    seeded = by_id["standard"].request("eager")  # seed passed as a keyword
    assert (seeded["repeat"], seeded["reseed"]) == (2, {"index": None, "value": 2})
    positional = by_id["float64_rank3"].request("eager")  # seed the fifth positional argument
    assert (positional["repeat"], positional["reseed"]) == (2, {"index": 4, "value": 4})
    unseeded = by_id["unseeded_size1_dims"].request("eager")
    assert unseeded["repeat"] == 3 and "reseed" not in unseeded
    assert "repeat" not in by_id["stddev_zero"].request("eager")  # compared by value: drawn once


@pytest.mark.parametrize("case_id", ["standard", "float64_rank3"])
def test_worker_reseeds_where_the_seed_is_passed(spec, case_id):
    case = {c.id: c for c in cases.cases_for(spec, "random_normal")}[case_id]
    header, arrays = invoke.evaluate(reference, case.request("eager"), case.arrays)
    assert header["status"] == "ok" and len(arrays) == 3
    assert np.array_equal(arrays[0], arrays[1]) and not np.array_equal(arrays[0], arrays[2])
    seed = case.shape_names["seed"]
    expected = reference.random_normal(
        case.shape_names["shape"],
        case.shape_names["mean"],
        case.shape_names["stddev"],
        case.shape_names["dtype"],
        seed + 1,
    )
    assert np.array_equal(arrays[2], expected)


def test_judge_uses_the_law_of_the_case(spec):
    """Through verdicts.judge: the reference's draws pass; correlated draws (the spec's bounds hold) fail."""
    case = {c.id: c for c in cases.cases_for(spec, "random_normal")}["shifted"]  # mean 2, stddev 0.5
    expected = invoke.evaluate(reference, case.request("eager"), case.arrays)
    assert judge(case, expected, expected).passed
    first = (2.0 + 0.5 * ar1((100, 1000), 0.3, seed=3)).astype("float32")  # the case's shape
    wrong = [first, first.copy(), rng(4).normal(2.0, 0.5, (100, 1000)).astype("float32")]
    verdict = judge(case, expected, (expected[0], wrong))
    assert verdict.status.value == "fail" and verdict.message.startswith("independence: "), verdict.message
    ignored = judge(case, expected, (expected[0], [first, first, first]))
    assert ignored.message.startswith("independence: ")  # the law comes first
    fine = rng(5).normal(2.0, 0.5, (100, 1000)).astype("float32")
    assert judge(case, expected, (expected[0], [fine, fine.copy(), fine.copy()])).message == (
        "seed: seed 2 and seed 3 drew the same 100000 values (the seed is ignored)"
    )


# ---- end to end: `kbtool check` on a backend with one property of each random op broken ---------------------------

PLANTED_RANDOM = "tests.fixtures.planted_random_backend"


def test_check_catches_each_planted_random_fault(tmp_path):
    """Each planted fault fails in the cases that exercise it, with a message naming the property; the spec's own
    mean/std/min/max bounds pass on every one of them; the unchanged op passes everywhere."""
    import json
    import os

    from click.testing import CliRunner

    from kbtool.cli import main

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ops = ["random_normal", "random_uniform", "random_binomial", "dropout", "truncated_normal"]
    env = {"KBTOOL_HOME": str(tmp_path), "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    args = ["check", *sum([["--op", op] for op in ops], []), "--backend", PLANTED_RANDOM, "--mode", "eager", "--json"]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 1, result.stderr
    failed = {(r["op"], r["case"]): r["message"] for r in json.loads(result.stdout)["results"] if r["status"] != "pass"}
    prefixes = {op: set() for op in ops}
    for (op, _case_id), message in failed.items():
        prefixes[op].add(message.split(":")[0])
    assert prefixes == {
        "random_normal": {"independence"},
        "random_uniform": {"seed"},
        "random_binomial": {"seed"},
        "dropout": {"noise_shape"},
        "truncated_normal": set(),
    }, failed
    assert failed[("random_normal", "shifted")].startswith("independence: neighbouring draws along axis 1 ")
    assert (
        failed[("random_uniform", "range")]
        == "seed: seed 2 and seed 3 drew the same 100000 values (the seed is ignored)"
    )
    assert failed[("random_binomial", "unseeded_p02")].startswith("seed: 3 unseeded calls drew the same 300000 values")
    assert {case for op, case in failed if op == "dropout"} == {
        "noise_shape_rows",
        "noise_shape_columns",
        "noise_shape_rank3_middle",
    }
