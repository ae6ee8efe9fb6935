"""Hard values (issue 30, item 4): the spec's cases carry NaN, +-inf, -0.0, subnormals and large integers to the
arrays with the right dtype, the case builder refuses a literal its dtype would change silently, and the NumPy
reference gives the documented (or NumPy's) answer for each hard value. Fast: no backend runs here."""

import warnings

import numpy as np
import pytest

from kbtool import reference as R
from kbtool.specs import binding, loader
from kbtool.specs.cases import cases_for, make_array

NAN, INF = float("nan"), float("inf")


@pytest.fixture(scope="module")
def spec():
    return loader.load()


def _case(spec, op, case_id):
    (case,) = [c for c in cases_for(spec, op, include_examples=False) if c.id == case_id]
    return case


# ---------------------------------------------------------------------------------------------------- the arrays
def test_special_floats_reach_the_array_in_floatx(spec):
    (x,) = _case(spec, "abs", "special_values").arrays
    assert x.dtype == np.float32
    assert np.isnan(x[0]) and x[1] == INF and x[2] == -INF
    assert x[3] == 0 and np.signbit(x[3])  # -0.0 keeps its sign
    tiny = np.finfo(np.float32).tiny
    assert 0 < x[4] < tiny and -tiny < x[5] < 0  # 1.0e-40 is a float32 subnormal, not 0


def test_large_integers_reach_the_array_exactly(spec):
    x, y = _case(spec, "maximum", "int64_large").arrays
    assert x.dtype == y.dtype == np.int64
    assert x.tolist() == [2**53 + 1, -(2**63), 2**63 - 1] and y.tolist() == [2**53, 0, 2**63 - 2]


def test_a_float64_subnormal_is_kept():
    x = make_array({"value": [5.0e-324, -0.0], "dtype": "float64"}, np.random.default_rng(0))
    assert x[0] > 0 and np.signbit(x[1])


@pytest.mark.parametrize(
    "value, dtype, problem",
    [
        ([1.5], "int32", "1.5 is not an integer"),
        ([NAN], "int64", "NaN to integer"),
        ([INF], "int32", "out of range"),
        ([1.0e39], "float32", "1e+39 overflows float32"),
        ([1.0e5], "float16", "overflows float16"),
        ([1.0e-50], "float32", "1e-50 underflows to 0 in float32"),
    ],
)
def test_a_literal_its_dtype_would_change_is_refused(value, dtype, problem):
    found = binding.input_problems({"value": value, "dtype": dtype}, ["inputs", 0])
    assert len(found) == 1 and problem in found[0].message


@pytest.mark.parametrize(
    "value, dtype",
    [
        ([NAN, INF, -INF, -0.0, 1.0e-40], "float32"),
        ([5.0e-324], "float64"),
        ([3.0, -2], "int32"),
        ([2**63 - 1], "int64"),
    ],
)
def test_special_values_the_dtype_holds_are_accepted(value, dtype):
    assert binding.input_problems({"value": value, "dtype": dtype}, ["inputs", 0]) == []


def test_the_spec_carries_hard_values_in_every_class(spec):
    """Each function class has cases holding NaN, inf and -0.0 (an op that loses them is seen)."""
    for op in ("maximum", "equal", "sum", "argmax", "softplus", "logsumexp", "var"):
        arrays = [a for c in cases_for(spec, op, include_examples=False) for a in c.arrays if a.dtype.kind == "f"]
        assert any(np.isnan(a).any() or np.isinf(a).any() for a in arrays), op


# ---------------------------------------------------------------------------------------------------- the reference
def f32(*values):
    return np.array(values, dtype="float32")


def same(actual, expected):
    """Equal values, NaN equal to NaN, and the same sign of every zero."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    return (
        actual.shape == expected.shape
        and bool(np.all((actual == expected) | (np.isnan(actual) & np.isnan(expected))))
        and bool(np.all(np.signbit(actual[actual == 0]) == np.signbit(expected[actual == 0])))
    )


@pytest.fixture(autouse=True)
def no_warnings():
    """Hard values are values: the reference answers them without a RuntimeWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_maximum_and_minimum_propagate_nan():
    x, y = f32(NAN, 1, NAN, INF), f32(1, NAN, NAN, -INF)
    assert same(R.maximum(x, y), f32(NAN, NAN, NAN, INF))
    assert same(R.minimum(x, y), f32(NAN, NAN, NAN, -INF))


def test_comparisons_with_nan_are_false_except_not_equal():
    x, y = f32(NAN, NAN, 1), f32(NAN, 1, NAN)
    for op in (R.equal, R.greater, R.greater_equal, R.less, R.less_equal):
        assert not np.any(op(x, y)), op.__name__
    assert np.all(R.not_equal(x, y))
    assert R.equal(f32(-0.0), f32(0.0)).all() and not R.greater(f32(-0.0), f32(0.0)).any()


def test_arg_reductions_answer_the_first_nan_and_the_first_tie():
    x = f32(1, NAN, 3, NAN)
    assert R.argmax(x).item() == 1 and R.argmin(x).item() == 1
    assert R.argmax(f32(2, 5, 5)).item() == 1 and R.argmin(f32(2, 1, 1)).item() == 1
    assert R.argmax(np.array([2**53, 2**53 + 1], dtype="int64")).item() == 1


def test_empty_axes_give_the_identity_or_nan():
    empty = np.zeros((2, 0), dtype="float32")
    assert same(R.sum(empty, axis=1), f32(0, 0)) and same(R.prod(empty, axis=1), f32(1, 1))
    assert same(R.mean(empty, axis=1), f32(NAN, NAN)) and same(R.logsumexp(empty, axis=1), f32(-INF, -INF))
    assert R.any(empty, axis=1).tolist() == [False, False] and R.all(empty, axis=1).tolist() == [True, True]


def test_reductions_propagate_nan_and_inf():
    x = np.array([[1, NAN], [INF, 1], [INF, -INF]], dtype="float32")
    for op in (R.sum, R.mean):
        assert same(op(x, axis=1), f32(NAN, INF, NAN)), op.__name__
    assert same(R.prod(np.array([[0, INF]], dtype="float32"), axis=1), f32(NAN))
    assert same(R.max(x, axis=1), f32(NAN, INF, INF)) and same(R.min(x, axis=1), f32(NAN, 1, -INF))
    assert same(R.cumsum(f32(1, NAN, 2)), f32(1, NAN, NAN))


def test_float32_reductions_are_exact_despite_a_large_common_offset():
    row = np.full((1, 6), 10000.1, dtype="float32")
    assert R.var(row, axis=1).item() == 0 and R.std(row, axis=1).item() == 0  # float32 two-pass gives 9.5e-7
    x = np.array([[10000.1, 10000.2, 10000.3, 10000.4]], dtype="float32")
    assert R.var(x, axis=1).item() == pytest.approx(np.var(x.astype("float64")), rel=1e-6)


def test_logsumexp_and_softmax_do_not_overflow_near_1000():
    x = f32(1000, 1000, 999)
    assert R.logsumexp(x).item() == pytest.approx(1000 + np.log(2 + np.exp(-1)), rel=1e-6)
    assert same(R.logsumexp(f32(-INF, -INF)), np.float32(-INF)) and same(R.logsumexp(f32(INF, 1)), np.float32(INF))
    assert np.allclose(R.softmax(f32(1000, 1001, 1002)), R.softmax(f32(0, 1, 2)))
    assert same(R.softmax(f32(-INF, 0, 0)), f32(0, 0.5, 0.5))


def test_integer_results_wrap_as_numpy_fixed_width_arithmetic():
    assert R.sum(np.array([2**31 - 1, 1], dtype="int32")).item() == -(2**31)
    assert R.abs(np.array([-(2**31)], dtype="int32")).item() == -(2**31)
    assert R.cumprod(np.array([65536, 65536], dtype="int32")).tolist() == [65536, 0]


def test_elementwise_special_values():
    x = f32(NAN, INF, -INF, -0.0)
    assert same(R.abs(x), f32(NAN, INF, INF, 0.0))
    assert same(R.exp(x), f32(NAN, INF, 0, 1)) and same(R.log(x), f32(NAN, INF, NAN, -INF))
    assert same(R.tanh(x), f32(NAN, 1, -1, -0.0))  # tanh keeps -0.0
    assert same(R.round(f32(-0.4, 2.5, -2.5)), f32(-0.0, 2, -2))  # half to even, -0.0 kept
    assert same(R.pow(x, 0), f32(1, 1, 1, 1)) and same(R.pow(f32(-2), 3), f32(-8))
    assert same(R.clip(x, 0.0, 1.0)[:3], f32(NAN, 1, 0))
    assert R.log(f32(1.0e-40)).item() == pytest.approx(np.log(1.0e-40), rel=1e-4)  # a subnormal is not 0


def test_activations_saturate_without_nan():
    x = f32(NAN, INF, -INF, 100, -100)
    assert same(R.relu(x), f32(NAN, INF, 0, 100, 0))  # relu(-inf) is 0, not 0 * inf
    assert same(R.sigmoid(x)[:4], f32(NAN, 1, 0, 1)) and 0 < R.sigmoid(x)[4] < 1e-40
    assert same(R.softplus(x)[:4], f32(NAN, INF, 0, 100)) and 0 < R.softplus(x)[4] < 1e-40
    assert same(R.elu(x)[:3], f32(NAN, INF, -1))
    assert same(R.hard_sigmoid(x)[:3], f32(NAN, 1, 0))


def test_the_recorded_reference_decisions_on_hard_values():
    assert same(R.sqrt(f32(NAN, -INF, INF)), f32(NAN, 0, INF))  # NaN stays NaN (the docs' NumPy code gives 0)
    assert same(R.softsign(f32(INF, -INF, 1.0e30)), f32(NAN, NAN, 1))  # x / (1 + |x|) in IEEE arithmetic
    big = np.array([[3.0e20, 4.0e20]], dtype="float32")
    assert same(
        R.l2_normalize(big, axis=1), f32(0, 0).reshape(1, 2)
    )  # float32 squares overflow: x / inf, as documented
    assert np.allclose(R.l2_normalize(big.astype("float64"), axis=1), [[0.6, 0.8]])


def test_losses_clip_probabilities_0_and_1_and_take_extreme_logits():
    eps_loss = -np.log(1e-7)
    target, output = np.array([[0.0, 1.0]]), np.array([[1.0, 0.0]])
    assert np.allclose(R.binary_crossentropy(target, output), eps_loss, rtol=1e-6)
    assert np.allclose(R.categorical_crossentropy(target, output), eps_loss, rtol=1e-6)
    logits = f32(100, -100, 0).reshape(1, 3)
    assert np.allclose(R.categorical_crossentropy(f32(0, 1, 0).reshape(1, 3), logits, from_logits=True), 200)
    assert np.allclose(R.binary_crossentropy(f32(0, 1), f32(1.0e4, -1.0e4), from_logits=True), 1.0e4)


# ---------------------------------------------------------------------------------------------------- planted faults
def _naive_var(x, axis=None, keepdims=False):
    x = np.asarray(x, dtype="float32")
    mean = np.mean(x, axis=axis, keepdims=True, dtype="float32")
    out = np.mean(x * x, axis=axis, keepdims=True, dtype="float32") - mean * mean  # E[x^2] - E[x]^2
    return out if keepdims else np.squeeze(out, axis=axis)


def _naive_logsumexp(x, axis=None, keepdims=False):
    with np.errstate(all="ignore"):
        return np.log(np.sum(np.exp(np.asarray(x, dtype="float32")), axis=axis, keepdims=keepdims))


FAULTS = [  # (op, case, a wrong implementation of the kind the issue names)
    ("maximum", "nan", lambda x, y: np.fmax(x, y)),  # NaN dropped, as TF 1 / PlaidML / OpenVINO
    ("max", "nan", lambda x, axis=None, keepdims=False: np.nanmax(x, axis=axis, keepdims=keepdims)),
    ("argmax", "nan", lambda x, axis=-1: np.nanargmax(np.where(np.isnan(x), -np.inf, x), axis=axis)),
    ("argmax", "ties_infinities", lambda x, axis=-1: x.shape[axis] - 1 - np.argmax(np.flip(x, axis), axis=axis)),
    ("not_equal", "nan_inf_zero", lambda x, y: ~np.equal(x, y) & ~np.isnan(x) & ~np.isnan(y)),
    ("var", "large_offset", _naive_var),
    ("logsumexp", "near_1000", _naive_logsumexp),
    ("relu", "special_values", lambda x: 0.5 * (x + np.abs(x))),  # relu(-inf) = NaN
    ("sign", "special_values", lambda x: np.where(np.abs(x) < np.finfo(np.float32).tiny, 0, np.sign(x))),  # FTZ
    ("softplus", "special_values", lambda x: np.log1p(np.exp(x))),  # exp(100) overflows float32
]


@pytest.mark.parametrize("op, case_id, wrong", FAULTS, ids=[f"{op}:{case}" for op, case, _ in FAULTS])
def test_a_planted_hard_value_fault_fails_its_case(spec, op, case_id, wrong):
    """The case's verdict catches a wrong implementation of the hard value it names (and passes the reference)."""
    from kbtool.verdicts.tolerances import case_overrides
    from kbtool.verdicts.values import compare_outputs

    case = _case(spec, op, case_id)
    args = [case.arrays[a["tensor"]] if "tensor" in a else a.get("value") for a in case.args]
    kwargs = {k: case.arrays[a["tensor"]] if "tensor" in a else a.get("value") for k, a in case.kwargs.items()}
    expected = getattr(R, op)(*args, **kwargs)
    with np.errstate(all="ignore"):
        got = np.asarray(wrong(*args, **kwargs)).astype(np.asarray(expected).dtype)
    assert compare_outputs([expected], [expected], case_overrides(case)).passed
    assert not compare_outputs([expected], [got], case_overrides(case)).passed
