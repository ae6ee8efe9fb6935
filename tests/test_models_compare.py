"""kbtool.models.metrics and kbtool.models.compare: CRADLE's measures, the oracle of a model, each engine's
Difference and its first divergent layer, on synthetic EngineRuns (no backend)."""

import math

import numpy as np
import pytest

from kbtool.models import compare, metrics
from kbtool.models.records import EngineRun, LayerOutput

RNG = np.random.default_rng(34)
X = RNG.standard_normal((2, 4)).astype("float32")
W1 = RNG.standard_normal((4, 3)).astype("float32")
W2 = RNG.standard_normal((3, 2)).astype("float32")


def run(engine, dense1_shift=0.0, out_shift=0.0, status="ok", weights=None, grads=True, names=("dense_1", "dense_2")):
    """A two-layer model's run: input -> dense_1 (relu) -> dense_2; shifts plant a difference in a layer."""
    h = np.maximum(X @ W1, 0) + np.float32(dense1_shift)
    y = (h @ W2 + np.float32(out_shift)).astype("float32")
    layers = [
        LayerOutput("input_1", "InputLayer", (), (X,)),
        LayerOutput(names[0], "Dense", ("input_1",), (h.astype("float32"),)),
        LayerOutput(names[1], "Dense", (names[0],), (y,)),
    ]
    return EngineRun(
        engine=engine,
        model="mlp",
        status=status,
        reason="" if status == "ok" else "no such thing",
        layers=layers if status == "ok" else [],
        outputs=[y] if status == "ok" else [],
        weights=weights or [("kernel_1", (4, 3)), ("kernel_2", (3, 2))],
        gradients=[W1.copy(), W2.copy()] if grads and status == "ok" else [],
    )


def test_mad_is_the_mean_absolute_deviation_and_d_mad_cradles_distance():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.5, 2.0])
    assert metrics.mad(a, b) == pytest.approx(0.5)
    truth = np.array([1.0, 2.0, 3.0])
    assert metrics.d_mad(a, b, truth) == pytest.approx(1.0)  # a exact, b off: as far apart as D_MAD goes
    assert metrics.d_mad(a, a, truth) == 0.0
    assert metrics.d_mad(b, b + 0.0, truth) == 0.0


def test_introduction_rate_is_the_growth_of_the_deviation_over_the_inbound_largest():
    assert metrics.introduction_rate(0.2, [0.1, 0.05]) == pytest.approx((0.2 - 0.1) / (0.1 + 1e-7))
    assert metrics.introduction_rate(1e-3, []) == pytest.approx(1e-3 / 1e-7)


def test_the_tolerance_grows_with_depth():
    assert metrics.depth_tolerance(10).rtol == pytest.approx(10 * metrics.depth_tolerance(1).rtol)
    base = np.ones(100, dtype="float32")
    near = base + np.float32(3e-6)  # within rtol 1e-5 + atol 1e-6 at depth 1
    assert not metrics.difference([near], [base], metrics.depth_tolerance(1)).inconsistent
    off = base + np.float32(5e-5)
    assert metrics.difference([off], [base], metrics.depth_tolerance(1)).inconsistent
    assert not metrics.difference([off], [base], metrics.depth_tolerance(10)).inconsistent


def test_a_nan_where_the_oracle_has_a_number_or_a_shape_that_differs_is_inconsistent():
    base = np.zeros(4, dtype="float32")
    nan = base.copy()
    nan[1] = np.nan
    found = metrics.difference([nan], [base], metrics.depth_tolerance(50))
    assert found.inconsistent and math.isinf(found.max_abs)
    assert not metrics.difference([nan], [nan], metrics.depth_tolerance(1)).inconsistent
    all_nan = np.full(4, np.nan, dtype="float32")
    found = metrics.difference([all_nan], [base], metrics.depth_tolerance(1))  # nothing finite on one side
    assert found.inconsistent and math.isinf(found.max_abs)
    assert metrics.difference([base[:3]], [base], metrics.depth_tolerance(1)).inconsistent


def test_the_reference_is_the_oracle_when_it_ran_and_the_majority_otherwise():
    runs = {"numpy": run("numpy"), "tensorflow": run("tensorflow"), "theano": run("theano", out_shift=0.5)}
    choice, results = compare.compare_model(runs)
    assert (choice.kind, choice.engine) == ("reference", "numpy")
    verdicts = {r.engine: r.verdict for r in results}
    assert verdicts == {"tensorflow": "pass", "theano": "unexplained"}  # the reference is not judged
    assert all(r.oracle == "reference" and r.oracle_engine == "numpy" for r in results)

    runs["numpy"] = run("numpy", status="error")
    runs["cntk"] = run("cntk")
    choice, results = compare.compare_model(runs)
    assert (choice.kind, choice.engine) == ("majority", "tensorflow")
    assert "2 of 3" in choice.note
    verdicts = {r.engine: r.verdict for r in results}
    assert verdicts == {"numpy": "error", "tensorflow": "pass", "cntk": "pass", "theano": "unexplained"}


def test_without_a_majority_nothing_is_judged():
    runs = {"tensorflow": run("tensorflow"), "theano": run("theano", out_shift=0.5)}
    choice, results = compare.compare_model(runs)
    assert choice.engine is None
    assert {r.verdict for r in results} == {"not_compared"}
    assert "no majority" in results[0].reason


def test_the_first_divergent_layer_is_the_one_whose_inputs_agree():
    runs = {"numpy": run("numpy"), "mxnet": run("mxnet", dense1_shift=0.25)}
    _, [result] = compare.compare_model(runs)
    assert result.verdict == "unexplained" and result.forward.inconsistent
    where = result.localisation
    assert (where.layer, where.layer_class, where.inputs_agree) == ("dense_1", "Dense", True)
    assert where.rate > 1e5  # from nothing to 0.25: CRADLE's rate spikes


def test_layers_are_matched_by_order_when_their_names_differ():
    runs = {"numpy": run("numpy"), "keras3-jax": run("keras3-jax", out_shift=0.25, names=("dense", "dense_1"))}
    _, [result] = compare.compare_model(runs)
    assert result.localisation.layer == "dense_1"
    assert "matched by order" in result.localisation.why_not


def test_other_weight_shapes_are_another_architecture():
    other = run("plaidml", weights=[("kernel_1", (3, 4)), ("kernel_2", (3, 2))])
    _, [result] = compare.compare_model({"numpy": run("numpy"), "plaidml": other})
    assert result.verdict == "not_compared"
    assert "architecture differs" in result.reason and "not comparable" in result.reason


def test_gradients_are_compared_when_both_trained():
    engine = run("tensorflow")
    engine.gradients = [engine.gradients[0] + np.float32(0.1), engine.gradients[1]]
    _, [result] = compare.compare_model({"numpy": run("numpy"), "tensorflow": engine})
    assert result.gradient is not None and result.gradient.inconsistent and not result.forward.inconsistent
    assert result.verdict == "unexplained" and result.localisation is None
    assert "gradients differ" in result.reason
    _, [untrained] = compare.compare_model({"numpy": run("numpy", grads=False), "tensorflow": run("tensorflow")})
    assert untrained.gradient is None and untrained.verdict == "pass"


def test_gradients_that_differ_under_an_agreeing_forward_pass_name_k_gradients_and_the_layer_nearest_the_output():
    oracle, plaid = run("tensorflow1"), run("plaidml")
    for r in (oracle, plaid):
        r.trainable, r.loss = ["dense_1/0", "dense_2/0"], 0.25
    plaid.gradients = [W1 * 4, W2.copy()]  # only dense_1's gradient is off: the backward pass went wrong there
    choice = compare.OracleChoice("reference", "tensorflow1", "the reference")
    result = compare.compare_run(plaid, oracle, choice)
    assert result.verdict == "unexplained" and not result.forward.inconsistent and result.gradient.inconsistent
    where = result.localisation
    assert (where.layer, where.layer_class, where.call) == ("dense_1", "Dense", "gradients")
    assert "loss 0.25 vs 0.25" in where.why_not and "dense_1 is the first counted from the output" in where.why_not
    plaid.gradients = [W1 * 4, W2 * 4]
    assert compare.compare_run(plaid, oracle, choice).localisation.layer == "dense_2"  # nearest the output
    plaid.trainable = ["other/0", "dense_2/0"]  # weights not named alike: no layer is claimed
    assert compare.compare_run(plaid, oracle, choice).localisation is None
