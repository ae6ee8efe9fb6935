"""kbtool.models.localise: a divergent layer's traced K.* calls replayed on the reference, the first that differs
named, Keras 3 names mapped through specs/keras3_map.yaml, and the op-level verdict (known or unexplained), with
synthetic TracedCalls and an op-level replay stand-in (no backend)."""

import numpy as np
import pytest

from kbtool import reference as K
from kbtool.models import localise
from kbtool.models.records import Localisation, ModelResult, TracedCall
from kbtool.specs import loader

RNG = np.random.default_rng(34)
X = np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4)
IMAGES = RNG.standard_normal((2, 5, 5, 4)).astype("float32")
KERNEL = RNG.standard_normal((3, 3, 4, 2)).astype("float32")
CONV = {"strides": [1, 1], "padding": "valid", "dilation_rate": [1, 1], "data_format": "channels_last"}


@pytest.fixture(scope="module")
def spec():
    return loader.load()


def relu_call(output, **kwargs):
    return TracedCall("relu", ({"array": 0},), kwargs, (X,), output)


def test_a_relu_off_by_1e_2_is_named_and_one_that_agrees_is_not(spec):
    good = np.maximum(X, 0)
    cause, notes = localise.first_cause([relu_call(good), relu_call(good + np.float32(1e-2))], spec)
    assert cause is not None and cause.index == 1 and cause.call.op == "relu"
    assert "values differ" in cause.message and notes == []
    assert localise.first_cause([relu_call(good), relu_call(good, alpha=0.0)], spec) == (None, [])


def test_accumulating_ops_are_judged_with_their_error_bound(spec):
    exact = K.conv2d(IMAGES, KERNEL, strides=(1, 1), padding="valid")
    rounded = exact + np.float32(1e-7) * np.abs(exact)  # float32 rounding: within the bound
    call = TracedCall("conv2d", ({"array": 0}, {"array": 1}), {"padding": "valid"}, (IMAGES, KERNEL), rounded)
    assert localise.first_cause([call], spec)[0] is None
    wrong = TracedCall("conv2d", ({"array": 0}, {"array": 1}), {"padding": "valid"}, (IMAGES, KERNEL), exact * 1.01)
    assert localise.first_cause([wrong], spec)[0].call.op == "conv2d"


def test_keras3_calls_map_to_their_k_function_through_the_map(spec):
    conv = K.conv2d(IMAGES, KERNEL, strides=(1, 1), padding="valid")
    call = TracedCall("ops.conv", ({"array": 0}, {"array": 1}), CONV, (IMAGES, KERNEL), conv * 1.01)
    cause, _ = localise.first_cause([call], spec)
    assert cause.call.op == "conv2d" and cause.traced == "ops.conv"  # conv1d and conv3d do not fit a 4-D input
    pooled = K.pool2d(IMAGES, (2, 2), strides=(2, 2), pool_mode="avg")
    kwargs = {"pool_size": (2, 2), "strides": (2, 2), "padding": "valid", "data_format": "channels_last"}
    avg = TracedCall("ops.average_pool", ({"array": 0},), kwargs, (IMAGES,), pooled)
    assert localise.first_cause([avg], spec)[0] is None  # pool_mode 'avg' comes from the map's `if`
    resolved = localise.resolve(avg, spec, localise.map_expressions(spec))
    assert (resolved.op, resolved.params["pool_mode"]) == ("pool2d", "avg")


def test_a_function_without_a_k_counterpart_says_so(spec):
    odd = TracedCall("ops.frobnicate", ({"array": 0},), {}, (X,), X)
    cause, notes = localise.first_cause([odd], spec)
    assert cause is None and "no K.* counterpart" in notes[0]
    hidden = TracedCall("relu", ({"repr": "<object at 0x1>"},), {}, (), X)
    assert "recorded only as" in localise.first_cause([hidden], spec)[1][0]


def divergent():
    where = Localisation(layer="conv2d_1", layer_class="Conv2D")
    return ModelResult("mini_cnn", "keras3-torch", "unexplained", "reference", localisation=where)


def test_the_cause_is_replayed_at_op_level_known_or_emitted(spec):
    bad = relu_call(np.maximum(X, 0) + np.float32(1e-2))
    seen = []

    def known(extended, op, case, engine):
        seen.append((op, case, engine, [c["id"] for c in extended.ops[op]["cases"]][-1]))
        return localise.OpVerdict("known", "relu-0123abcd", "a reason")

    where, emitted = localise.localise(divergent(), [bad], spec, replay=known)
    assert seen == [
        ("relu", "model.mini_cnn.keras3-torch.conv2d_1", "keras3-torch", "model.mini_cnn.keras3-torch.conv2d_1")
    ]
    assert (where.call, where.verdict, where.known_id, emitted) == ("relu", "known", "relu-0123abcd", None)
    assert where.call_text.startswith("K.relu(x[3,4] float32")

    def failing(extended, op, case, engine):
        return localise.OpVerdict("fail", None, "12 of 12 values differ")

    where, emitted = localise.localise(divergent(), [bad], spec, replay=failing)
    assert (where.verdict, where.case_id) == ("unexplained", "model.mini_cnn.keras3-torch.conv2d_1")
    assert emitted.op == "relu" and emitted.raw["id"] == where.case_id
    assert not [c for c in spec.ops["relu"]["cases"] if c["id"].startswith("model.")]  # the spec is left as it was


def test_no_differing_call_leaves_the_layer_named_without_a_call(spec):
    where, emitted = localise.localise(divergent(), [relu_call(np.maximum(X, 0))], spec, replay=None)
    assert where.call is None and emitted is None and "none of the layer's 1 traced" in where.why_not


@pytest.mark.backends
def test_the_op_level_replay_runs_the_case_on_the_engine(spec):
    """check_replay runs the cause's case through the check machinery on tensorflow: its relu is right, so the
    replay passes and the finding stays unexplained with its case to emit, saying the op level agrees."""
    bad = relu_call(np.maximum(X, 0) + np.float32(1e-2))
    result = ModelResult("mini_cnn", "tensorflow", "unexplained", "reference", localisation=divergent().localisation)
    where, emitted = localise.localise(result, [bad], spec)
    assert (where.verdict, where.call) == ("unexplained", "relu")
    assert "op-level replay passes" in where.why_not and emitted is not None
