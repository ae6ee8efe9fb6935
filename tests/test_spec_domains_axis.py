"""The documented domains of the axis / keepdims / dtype / from_logits family in the shipped spec (issue #8, item 1):
each such parameter declares its values, the grids exercise them (and the keras.json settings the ops read), the
coverage of the family is complete, and the reference follows floatx and epsilon. No backend needed."""

import numpy as np
import pytest

from kbtool import reference
from kbtool.reference.oracle import keras_settings
from kbtool.specs import coverage, domains

REDUCTIONS = ["max", "min", "sum", "prod", "mean", "var", "std", "any", "all", "logsumexp"]
INT_AXIS = ["argmax", "argmin", "cumsum", "cumprod", "softmax"]
AXIS_OPS = (
    REDUCTIONS
    + INT_AXIS
    + [
        "l2_normalize",
        "concatenate",
        "stack",
        "squeeze",
        "expand_dims",
        "categorical_crossentropy",
        "sparse_categorical_crossentropy",
        "batch_normalization",
    ]
)
READS_FLOATX = ["zeros", "ones", "eye", "constant", "variable", "floatx"]
READS_EPSILON = ["epsilon", "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy"]
FAMILY = sorted(
    set(
        AXIS_OPS
        + READS_FLOATX
        + READS_EPSILON
        + ["reverse", "cast", "zeros_like", "ones_like", "arange", "rnn", "normalize_batch_in_training"]
    )
)


def _param(spec, op, name):
    return next(p for p in spec.ops[op]["signature"] if p["name"] == name)


@pytest.mark.parametrize("op", AXIS_OPS)
def test_every_axis_parameter_declares_its_domain(spec, op):
    values = domains.param_domains(spec, op)["axis"]
    assert any(isinstance(v, int) and v < 0 for v in values), "a negative axis is a documented form"
    assert any(isinstance(v, int) and v >= 0 for v in values)


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reductions_cover_every_axis_form_with_and_without_keepdims(spec, op):
    doms = domains.param_domains(spec, op)
    forms = doms["axis"]
    assert None in forms and any(isinstance(v, list) for v in forms)
    assert any(isinstance(v, dict) and "tuple" in v for v in forms)
    assert doms["keepdims"] == [False, True]
    rows = {(domains.label(c["kwargs"]["axis"]), c["kwargs"]["keepdims"]) for c in domains.grid_cases(spec, op)}
    assert len(rows) == len(forms) * 2  # every pair of axis form and keepdims


@pytest.mark.parametrize("op", ["binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy"])
def test_crossentropies_grid_from_logits_under_another_epsilon(spec, op):
    assert domains.param_domains(spec, op)["from_logits"] == [False, True]
    cases = domains.grid_cases(spec, op)
    assert {(c["kwargs"]["from_logits"], c["keras_config"]["epsilon"]) for c in cases} >= {
        (False, 1e-3),
        (True, 1e-3),
        (False, 1e-7),
    }


@pytest.mark.parametrize("op", READS_FLOATX)
def test_ops_with_a_floatx_default_run_under_float16_and_float64(spec, op):
    assert spec.ops[op]["reads_config"] == ["floatx"]
    settings = {c.get("keras_config", {}).get("floatx") for c in domains.grid_cases(spec, op)}
    assert {"float16", "float64"} <= settings
    if "dtype" in {p["name"] for p in spec.ops[op]["signature"]}:
        assert None in domains.param_domains(spec, op)["dtype"]  # None: floatx decides


def test_the_epsilon_grid_changes_the_setting(spec):
    assert {c["keras_config"]["epsilon"] for c in domains.grid_cases(spec, "epsilon")} == {1e-07, 1e-03}


@pytest.mark.parametrize("op", FAMILY)
def test_family_coverage_is_complete_and_grids_stay_lean(spec, op):
    result = coverage.op_coverage(spec, op)
    assert result["unexercised"] == []
    assert result["values"][1] >= 2
    assert len(domains.grid_cases(spec, op)) <= 15


def test_reference_follows_floatx_and_epsilon():
    with keras_settings(reference, {"floatx": "float16", "epsilon": 1e-3}):
        assert reference.zeros((2,)).dtype == np.float16
        assert reference.eye(2).dtype == np.float16
        assert reference.floatx() == "float16" and reference.epsilon() == 1e-3
        clipped = reference.binary_crossentropy(np.array([1.0]), np.array([1.0]))
    assert reference.floatx() == "float32" and reference.epsilon() == 1e-07
    assert np.isclose(float(clipped[0]), -np.log(1 - 1e-3), rtol=1e-3)  # the output clipped to 1 - epsilon
