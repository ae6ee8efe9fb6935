"""Reference decisions (specs/ops.yaml `reference_decisions`): where the docs leave a behaviour open or the backends
disagree, what kbtool's reference does, the evidence, and the backends that do otherwise. Each decision the reference
implements is pinned here on a small input against a value worked out by hand from the cited source."""

import numpy as np
import pytest
from click.testing import CliRunner

from kbtool import reference
from kbtool.cli import main
from kbtool.runners import registry
from kbtool.specs import loader, schema

DECIDED = ["resize_images", "batch_normalization", "mean", "conv1d", "set_value", "relu", "moving_average_update"]


@pytest.fixture(scope="module")
def spec():
    return loader.load()


@pytest.mark.parametrize("op", DECIDED)
def test_the_shipped_decisions_carry_their_evidence(spec, op):
    decisions = spec.ops[op]["reference_decisions"]
    assert decisions
    for item in decisions:
        assert item["decision"] and "keras 2.3.1" in item["evidence"]
        assert item["differs"] and set(item["differs"]) <= set(schema.DECISION_BACKENDS)


def test_a_decision_may_name_every_built_in_backend():
    # the specs layer cannot import the registry: its list must keep up with the recipes
    assert set(registry.RECIPES) <= set(schema.DECISION_BACKENDS)


def test_spec_show_prints_the_reference_decisions():
    result = CliRunner().invoke(main, ["spec", "show", "resize_images"])
    assert result.exit_code == 0
    assert "Reference decisions" in result.output and "i / factor" in result.output
    assert "differs: tensorflow, keras3" in result.output


HEADER = """schema_version: 1
docs:
  ko-2.2: {file: 004.txt, lang: ko}
ops:
  abs:
    category: math
    summary: s
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
"""


@pytest.mark.parametrize(
    "body, needle",
    [
        ("    reference_decisions: [{decision: d, differs: [theano]}]\n", "'evidence' is a required property"),
        ("    reference_decisions: [{decision: d, evidence: e}]\n", "'differs' is a required property"),
        ("    reference_decisions: [{decision: '', evidence: e, differs: []}]\n", "should be non-empty"),
        ("    reference_decisions: [{decision: d, evidence: e, differs: [theano2]}]\n", "'theano2' is not one of"),
        ("    reference_decisions: [{decision: d, evidence: e, differs: [cntk, cntk]}]\n", "non-unique elements"),
        ("    reference_decisions: [{decision: d, evidence: e, differs: [], why: w}]\n", "Additional properties"),
        ("    reference_decisions: {decision: d, evidence: e, differs: []}\n", "is not of type 'array'"),
    ],
)
def test_a_malformed_decision_is_refused_in_one_line(tmp_path, body, needle):
    path = tmp_path / "ops.yaml"
    path.write_text(HEADER + body)
    result = CliRunner().invoke(main, ["spec", "validate", str(path)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert needle in lines[0] and ":10: ops.abs.reference_decisions" in lines[0]


def test_a_well_formed_decision_loads(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(HEADER + "    reference_decisions: [{decision: d, evidence: e, differs: [keras-numpy]}]\n")
    assert loader.load(str(path)).ops["abs"]["reference_decisions"][0]["differs"] == ["keras-numpy"]


# ---------------------------------------------------------------------------- the decisions, on small inputs
def test_bilinear_resize_samples_at_i_over_factor():
    # keras 2.3.1 tensorflow_backend.py resize_images -> TF 1 resize_bilinear (align_corners=False,
    # half_pixel_centers=False): output j reads input j * in / out = j / 2, the next pixel clamped at the edge;
    # theano_backend.py's bilinear_upsampling(ratio=2) gives the same: [0, .5, 1, 1.5, 2, 2] for a row [0, 1, 2]
    x = np.array([0.0, 1.0, 2.0], dtype="float32").reshape(1, 1, 3, 1)
    out = reference.resize_images(x, 1, 2, "channels_last", interpolation="bilinear")
    np.testing.assert_array_equal(out[0, 0, :, 0], [0.0, 0.5, 1.0, 1.5, 2.0, 2.0])
    # both axes, channels_first: rows [0, 1] x columns [0, 2] -> corners kept, midpoints averaged
    x = np.array([[0.0, 2.0], [4.0, 6.0]], dtype="float32").reshape(1, 1, 2, 2)
    out = reference.resize_images(x, 2, 2, "channels_first", interpolation="bilinear")
    np.testing.assert_array_equal(
        out[0, 0], [[0, 1, 2, 2], [2, 3, 4, 4], [4, 5, 6, 6], [4, 5, 6, 6]]
    )  # half-pixel centres would give 0.5, 1.5, ... at the first column instead


def test_batch_normalization_applies_1d_statistics_along_the_last_axis_whatever_axis_says():
    # keras 2.3.1 numpy_backend.py batch_normalization: ((x - mean) / sqrt(var + epsilon)) * gamma + beta, NumPy
    # broadcasting (so (2,) statistics meet x's last axis); axis=1 changes nothing
    x = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    mean, var = np.array([1.0, 2.0]), np.array([1.0, 4.0])
    beta, gamma = np.zeros(2), np.ones(2)
    expected = [[[0.0, 0.0], [2.0, 1.0]]]  # columns: (x - 1) / 1 and (x - 2) / 2
    for axis in (-1, 1):
        out = reference.batch_normalization(x, mean, var, beta, gamma, axis=axis, epsilon=0.0)
        np.testing.assert_array_equal(out, expected)
    with pytest.raises(ValueError):  # statistics that do not broadcast against x, as in NumPy
        reference.batch_normalization(np.ones((2, 3, 4)), *(np.ones(3),) * 4, axis=1)


def test_conv1d_refuses_causal_padding_with_channels_first():
    # keras 2.3.1 tensorflow_backend.py conv1d: ValueError('When using causal padding in `conv1d`, `data_format`
    # must be "channels_last" (temporal data).')
    with pytest.raises(ValueError, match="causal"):
        reference.conv1d(np.ones((1, 2, 6)), np.ones((3, 2, 2)), padding="causal", data_format="channels_first")
    # channels_last still pads dilation * (width - 1) steps on the left: [1, 2, 3] * kernel [1, 1] -> [1, 3, 5]
    out = reference.conv1d(np.array([[[1.0], [2.0], [3.0]]]), np.ones((2, 1, 1)), padding="causal")
    np.testing.assert_array_equal(out[0, :, 0], [1.0, 3.0, 5.0])


def test_mean_of_int32_is_a_floatx_mean():
    # ko-2.2's NumPy implementation of mean is np.mean (1.5 for [1, 2]); keras 2.3.1 theano_backend.py mean casts
    # int input to floatx
    out = reference.mean(np.array([[1, 2]], dtype="int32"), axis=1)
    assert out.dtype == np.float32 and out.tolist() == [1.5]


def test_set_value_keeps_the_variable_shape():
    # docs: "a Numpy array (of the same shape)"; no case runs another shape, the reference refuses it
    x = np.zeros((2, 3), dtype="float32")
    with pytest.raises(ValueError):
        reference.set_value(x, np.ones((3, 2)))
    assert x.shape == (2, 3)


def test_the_float64_cases_use_constants_exact_in_float32(spec):
    # backends round relu's alpha and moving_average_update's momentum to float32 (tf.nn.leaky_relu's float attribute,
    # a Theano floatX constant); a constant float32 holds exactly leaves the float64 path checked at rtol 1e-10
    (relu,) = [c for c in spec.ops["relu"]["cases"] if c["id"] == "float64"]
    (update,) = [c for c in spec.ops["moving_average_update"]["cases"] if c["id"] == "float64"]
    for value in (relu["kwargs"]["alpha"], update["kwargs"]["momentum"], 1 - update["kwargs"]["momentum"]):
        assert float(np.float32(value)) == value
    x = np.array([-2.0, 0.5])
    np.testing.assert_array_equal(reference.relu(x, alpha=0.25), [-0.5, 0.5])
    # x <- x - (x - value) * (1 - momentum): 10 - (10 - 2) * 0.125 = 9 exactly
    var = np.array([10.0])
    reference.moving_average_update(var, np.array([2.0]), 0.875)
    assert var.tolist() == [9.0]
