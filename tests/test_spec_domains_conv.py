"""The documented domains of the convolution / pooling / resizing / padding family (issue #8, item 1)."""

import pytest

from kbtool.specs import coverage, domains, loader
from kbtool.specs.cases import cases_for

FAMILY = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv2d_transpose",
    "conv3d_transpose",
    "separable_conv1d",
    "separable_conv2d",
    "depthwise_conv2d",
    "local_conv1d",
    "local_conv2d",
    "pool2d",
    "pool3d",
    "resize_images",
    "resize_volumes",
    "spatial_2d_padding",
    "spatial_3d_padding",
    "temporal_padding",
    "bias_add",
]
# the parameters whose documented values the issue names: every one of them must declare a domain
NAMED = ("padding", "data_format", "strides", "dilation_rate", "pool_mode", "interpolation")
# ops with a grid (the others' output_shape / kernel shape follow the parameters: hand-written dom_* cases)
GRIDDED = [
    "conv1d",
    "conv2d",
    "conv3d",
    "separable_conv1d",
    "separable_conv2d",
    "depthwise_conv2d",
    "pool2d",
    "pool3d",
    "resize_images",
    "resize_volumes",
    "spatial_2d_padding",
    "spatial_3d_padding",
    "temporal_padding",
    "bias_add",
]


@pytest.mark.parametrize("op", FAMILY)
def test_named_params_declare_a_domain(spec, op):
    undeclared = [p["name"] for p in spec.ops[op]["signature"] if p["name"] in NAMED and "domain" not in p]
    assert undeclared == []


@pytest.mark.parametrize("op", FAMILY)
def test_family_coverage_is_empty(spec, op):
    report = coverage.op_coverage(spec, op)
    assert report["unexercised"] == []
    assert report["values"][0] == report["values"][1] > 0


@pytest.mark.parametrize(
    "op",
    [
        op
        for op in FAMILY
        if any(p["name"] == "data_format" and p.get("default", "x") is None for p in loader.load().ops[op]["signature"])
    ],
)
def test_data_format_none_reads_image_data_format(spec, op):
    # data_format=None means keras.json's image_data_format: the op must vary it, and None must be in its domain
    assert "image_data_format" in spec.ops[op].get("reads_config", [])
    assert None in domains.param_domains(spec, op)["data_format"]
    assert domains.config_domains(spec, op)["image_data_format"] == ["channels_last", "channels_first"]


def test_conv1d_documents_causal_and_sizes_above_one(spec):
    params = domains.param_domains(spec, "conv1d")
    assert params["padding"] == ["valid", "same", "causal"]
    assert max(params["strides"]) > 1 and max(params["dilation_rate"]) > 1


@pytest.mark.parametrize(
    "op",
    [
        "conv2d",
        "conv3d",
        "separable_conv2d",
        "depthwise_conv2d",
        "pool2d",
        "pool3d",
        "conv2d_transpose",
        "conv3d_transpose",
        "local_conv2d",
    ],
)
def test_tuple_strides_include_an_asymmetric_value(spec, op):
    strides = domains.param_domains(spec, op)["strides"]
    assert any(len(set(s)) > 1 for s in strides)


@pytest.mark.parametrize("op", GRIDDED)
def test_pairwise_grid_stays_lean(spec, op):
    rows = domains.grid_rows(spec, op)
    assert 2 <= len(rows) <= 15
    assert len(rows) <= len(domains.grid_rows(spec, op, "full"))


@pytest.mark.parametrize("op", ["conv1d", "conv3d", "separable_conv2d", "depthwise_conv2d", "pool2d", "pool3d"])
def test_grid_holds_channels_first_same_strided_row(spec, op):
    def strided(row):
        s = row["strides"]
        return (s if isinstance(s, int) else max(s)) > 1

    rows = domains.grid_rows(spec, op)
    assert any(
        domains.effective_data_format(row, row) == "channels_first" and row["padding"] == "same" and strided(row)
        for row in rows
    )


def test_dilated_strided_rows_are_excluded(spec):
    # TensorFlow refuses strides > 1 with dilation_rate > 1: no grid row may ask for it
    for op in ["conv1d", "conv3d", "separable_conv1d", "separable_conv2d", "depthwise_conv2d"]:
        for row in domains.grid_rows(spec, op, "full"):
            s, d = row["strides"], row["dilation_rate"]
            assert not ((s if isinstance(s, int) else max(s)) > 1 and (d if isinstance(d, int) else max(d)) > 1)


def test_grid_case_follows_image_data_format(spec):
    # data_format=None under image_data_format=channels_first: the input is laid out channels_first
    raws = {raw["id"]: raw for raw in domains.grid_cases(spec, "pool2d")}
    row = next(
        r
        for r in domains.grid_rows(spec, "pool2d")
        if r["data_format"] is None and r["image_data_format"] == "channels_first"
    )
    raw = raws[domains.case_id(row)]
    assert raw["keras_config"] == {"image_data_format": "channels_first"}
    assert raw["inputs"]["x"]["shape"] == [2, 3, 7, 6]
    assert domains.case_id(row) in {case.id for case in cases_for(spec, "pool2d")}


def test_hand_written_domain_cases_bind_consistent_shapes(spec):
    # conv2d_transpose's dom_* cases give an output_shape laid out in the row's effective data format
    for raw in spec.ops["conv2d_transpose"]["cases"]:
        if not raw["id"].startswith("dom_"):
            continue
        fmt = domains.effective_data_format(raw["kwargs"], raw.get("keras_config"))
        x, out = raw["inputs"][0]["shape"], raw["kwargs"]["output_shape"]
        channels = 1 if fmt == "channels_first" else -1
        assert x[channels] == 2 and out[channels] == 3
