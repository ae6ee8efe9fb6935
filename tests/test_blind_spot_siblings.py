"""Blind-spot siblings (issue #30 item 6): for each documented value (or pair) that a backend's known difference hits in
every case holding it, the shipped spec keeps a sibling case holding the same value where that difference cannot
show, so some passing result still exercises it. These tests pin the siblings' defining property on the spec itself,
and the reference decisions the arg-reduction siblings rely on, without running a backend."""

import itertools
import math
from typing import Any, Dict, List, Mapping, Sequence

import numpy as np
import pytest

from kbtool import reference
from kbtool.specs import coverage, domains, loader

POOLS = ["pool2d", "pool3d"]
CONVS = ["conv1d", "conv2d", "conv3d", "depthwise_conv2d", "separable_conv1d", "separable_conv2d"]
REDUCTIONS = ["sum", "prod", "min", "max"]


@pytest.fixture(scope="module")
def spec() -> loader.Spec:
    return loader.load()


def _spatial(case: Mapping[str, Any], window: Sequence[int]) -> List[int]:
    """The case's spatial sizes (its first input, in the layout its data format or keras.json says)."""
    shape = list(case["inputs"][0]["shape"])
    fmt = (case.get("kwargs") or {}).get("data_format") or (case.get("keras_config") or {}).get("image_data_format")
    spatial = shape[2:] if fmt == "channels_first" else shape[1:-1]
    assert len(spatial) == len(window)
    return spatial


def _even_padding(case: Mapping[str, Any], window: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether 'same' pads an even total on every axis (TensorFlow's rule), so every backend's split agrees."""
    if (case.get("kwargs") or {}).get("padding", "valid") != "same":
        return True
    for n, k, s in zip(_spatial(case, window), window, strides):
        if max((math.ceil(n / s) - 1) * s + k - n, 0) % 2:
            return False
    return True


def _pairs_held(spec: loader.Spec, op: str, keep: Any) -> set:
    """Every documented pair of values that some case `keep` accepts holds (coverage's own rows)."""
    dims = domains.all_domains(spec, op)
    rows, tuple_params = coverage._case_rows(spec, op, dims)
    raws = {raw["id"]: raw for raw in spec.ops[op]["cases"]}
    held = set()
    for case_id, _, row in rows:
        if case_id in raws and keep(raws[case_id]):
            held |= set(itertools.combinations(sorted(row.items(), key=lambda kv: kv[0]), 2))
    return held


def _required(spec: loader.Spec, op: str) -> set:
    dims = domains.all_domains(spec, op)
    tuple_params = {p["name"] for p in spec.ops[op]["signature"] if p.get("tuple")}
    required, _ = domains.required_pairs(dims, spec.ops[op].get("grid", {}).get("exclude", []), tuple_params)
    return {tuple(sorted(pair, key=lambda kv: kv[0])) for pair in required}


@pytest.mark.parametrize("op", POOLS)
def test_every_documented_pool_pair_has_a_hand_written_case_that_pads_evenly(spec, op):
    def evenly(case: Dict[str, Any]) -> bool:
        kwargs = case.get("kwargs") or {}
        if case.get("raises") or "pool_size" not in kwargs or case.get("grad"):
            return False
        window = kwargs["pool_size"]
        return _even_padding(case, window, kwargs.get("strides", [1] * len(window)))

    missing = _required(spec, op) - _pairs_held(spec, op, evenly)
    assert not missing, f"pairs no evenly padded case holds: {sorted(missing)[:5]}"


@pytest.mark.parametrize("op", POOLS)
def test_the_avg_siblings_in_float64_cover_every_avg_pair(spec, op):
    # numpy_backend's mean is float64 whatever its input: only float64 avg cases can pass there
    def float64_avg(case: Dict[str, Any]) -> bool:
        return case["id"].startswith("avg_float64.") and case["inputs"][0].get("dtype") == "float64"

    held = _pairs_held(spec, op, float64_avg)
    avg_pairs = {p for p in _required(spec, op) if ("pool_mode", "avg") in p}
    none_last = (("data_format", None), ("image_data_format", "channels_last"))
    missing = {p for p in avg_pairs - held if not set(none_last) & set(p)}
    assert avg_pairs and not missing, sorted(missing)[:5]


@pytest.mark.parametrize("op", CONVS)
def test_each_conv_has_a_strided_same_sibling_with_odd_kernels_over_odd_sizes(spec, op):
    siblings = [c for c in spec.ops[op]["cases"] if c["id"].startswith("odd_kernel.")]
    assert siblings
    for case in siblings:
        kwargs = case["kwargs"]
        kernel = case["inputs"][1]["shape"]
        rank = len(case["inputs"][0]["shape"]) - 2
        window = [d + (d - 1) * (r - 1) for d, r in zip(kernel[:rank], _tuple(kwargs["dilation_rate"], rank))]
        assert kwargs["padding"] == "same" and all(k % 2 for k in kernel[:rank]), case["id"]
        assert _even_padding(case, window, _tuple(kwargs["strides"], rank)), case["id"]
    assert any(max(_tuple(c["kwargs"]["strides"], len(c["inputs"][0]["shape"]) - 2)) > 1 for c in siblings)


def _tuple(value: Any, rank: int) -> List[int]:
    return list(value) if isinstance(value, list) else [value] * rank


@pytest.mark.parametrize("op", ["any", "all", "argmax", "argmin"])
def test_each_axis_value_is_compared_after_a_cast_that_hides_only_the_dtype(spec, op):
    siblings = [c for c in spec.ops[op]["cases"] if c["id"].startswith("as_float.")]
    assert all(c["then"] == [{"op": "cast", "args": [{"result": 0}, "float32"]}] and c["then_only"] for c in siblings)
    held = {domains.normal(c["kwargs"]["axis"], False) for c in siblings}
    documented = {domains.normal(v, False) for v in domains.all_domains(spec, op)["axis"]}
    assert documented and documented <= held


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_the_arg_siblings_use_distinct_values(spec, op):
    for case in (c for c in spec.ops[op]["cases"] if c["id"].startswith("as_float.")):
        assert "dist" not in case["inputs"][0] and "value" not in case["inputs"][0]  # continuous draws: no ties


@pytest.mark.parametrize("op", REDUCTIONS)
def test_axis_none_with_keepdims_has_rank_0_and_rank_1_siblings(spec, op):
    ranks = {
        len(c["inputs"][0]["shape"])
        for c in spec.ops[op]["cases"]
        if (c.get("kwargs") or {}) == {"axis": None, "keepdims": True}
    }
    assert {0, 1} <= ranks


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_the_reference_follows_the_arg_reduction_decisions(spec, op):
    decisions = " ".join(d["decision"] for d in spec.ops[op]["reference_decisions"])
    assert "int64" in decisions and "first index" in decisions
    ties = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 0.0, 0.0, 2.0]], dtype="float32")
    out = np.asarray(getattr(reference, op)(ties, axis=-1))
    assert out.dtype == np.int64
    assert out.tolist() == ([1, 0] if op == "argmax" else [3, 1])
