"""Error bounds that scale with the work (kbtool/verdicts/bounds.py, kbtool/reference/magnitude.py): no backend."""

import numpy as np
import pytest

from kbtool import schemas
from kbtool.reference.oracle import Oracle
from kbtool.reports import report as report_mod
from kbtool.results import Result, Status
from kbtool.specs import loader
from kbtool.specs.cases import cases_for
from kbtool.verdicts import judge
from kbtool.verdicts.bounds import K_FLOOR, compare_bounded, k_of, read_bounds

EPS32 = float(np.finfo("float32").eps)


def _case(op, case_id):
    return [c for c in cases_for(loader.load(), op) if c.id == case_id][0]


def _bound(m, n, of="Σ|a||b|"):
    return {"M": np.asarray(m, dtype="float64"), "n": n, "of": of}


def _sequential(x, axis=-1):
    """float32 recursive summation, left to right: another legitimate order than NumPy's pairwise sum."""
    return np.cumsum(x.astype("float32"), axis=axis, dtype="float32").take(-1, axis=axis)


def test_the_bound_of_a_dot_is_k_eps_sum_of_abs_products():
    case = _case("dot", case_id=[c.id for c in cases_for(loader.load(), "dot") if c.arrays][0])
    header, arrays = Oracle().expected(case)
    (bound,) = read_bounds(header, arrays)
    a, b = (x.astype("float64") for x in case.arrays[:2])
    assert np.allclose(bound["M"], np.dot(np.abs(a), np.abs(b)))
    assert bound["n"] == a.shape[-1] and bound["of"] == "Σ|a||b|"
    assert k_of(bound["n"]) == K_FLOOR + np.sqrt(a.shape[-1])


def test_the_reference_gives_a_sum_its_sum_of_abs_and_count():
    case = _case("sum", "all")
    header, arrays = Oracle().expected(case)
    (bound,) = read_bounds(header, arrays)
    assert np.isclose(bound["M"], np.sum(np.abs(case.arrays[0].astype("float64"))))
    assert bound["n"] == case.arrays[0].size


def test_a_1e_3_relative_error_on_a_4096_long_float32_dot_fails():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(16, 4096)).astype("float32"), rng.normal(size=(4096, 16)).astype("float32")
    exp = np.dot(a, b)
    bound = _bound(np.dot(np.abs(a).astype("float64"), np.abs(b).astype("float64")), 4096)
    verdict = compare_bounded([exp], [(exp * np.float32(1 + 1e-3)).astype("float32")], [bound], {})
    assert verdict.status == Status.FAIL
    assert "× bound (k·eps·Σ|a||b|, k 68" in verdict.message and verdict.margin > 2


def test_a_1e_3_relative_error_on_a_4096_long_float32_sum_fails():
    x = np.random.default_rng(1).uniform(0.5, 1.5, (8, 4096)).astype("float32")
    exp = np.sum(x, axis=1)
    bound = _bound(np.sum(np.abs(x.astype("float64")), axis=1), 4096, "Σ|x|")
    verdict = compare_bounded([exp], [exp * np.float32(1 + 1e-3)], [bound], {})
    assert verdict.status == Status.FAIL and verdict.margin > 100


@pytest.mark.parametrize("low", [-1.0, 0.0])  # mixed signs, one sign
def test_a_legit_float32_summation_order_error_passes(low):
    x = np.random.default_rng(2).uniform(low, 1.0, (8, 4096)).astype("float32")
    exp = np.sum(x, axis=1)  # NumPy: pairwise
    act = _sequential(x, axis=1)
    assert not np.array_equal(exp, act)  # the orders differ, in the last bits
    bound = _bound(np.sum(np.abs(x.astype("float64")), axis=1), 4096, "Σ|x|")
    verdict = compare_bounded([exp], [act], [bound], {})
    assert verdict.status == Status.PASS and 0 < verdict.margin < 0.5


def test_a_legit_float32_dot_in_another_order_passes():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(4, 1024)).astype("float32"), rng.normal(size=(1024, 4)).astype("float32")
    act = _sequential(a[:, :, None] * b[None, :, :], axis=1)  # products rounded, then summed left to right
    bound = _bound(np.dot(np.abs(a).astype("float64"), np.abs(b).astype("float64")), 1024)
    assert compare_bounded([np.dot(a, b)], [act], [bound], {}).passed


def test_the_margin_is_recorded_and_the_report_schema_takes_it():
    case = _case("sum", "all")
    header, arrays = Oracle().expected(case)
    exp = arrays[header["outputs"][0]["index"]]
    nudged = np.asarray(exp * (1 + 2 * EPS32), dtype=exp.dtype)
    actual = ({**{k: v for k, v in header.items() if k != "bounds"}}, [nudged])
    verdict = judge(case, (header, arrays), actual)
    assert verdict.passed and 0 < verdict.margin < 1
    record = Result("sum", "all", "numpy", "eager", Status.PASS, margin=verdict.margin).as_dict()
    assert record["margin"] == verdict.margin
    assert not schemas.problems(report_mod.SCHEMA_FILE, record, "result")


def test_an_infinite_error_fails_without_a_margin_and_nan_matches_nan():
    bound = _bound([1.0, 1.0, 1.0], 3)
    exp = np.array([1.0, np.nan, 2.0], "float32")
    assert compare_bounded([exp], [exp.copy()], [bound], {}).passed
    verdict = compare_bounded([exp], [np.array([np.inf, np.nan, 2.0], "float32")], [bound], {})
    assert verdict.status == Status.FAIL and verdict.margin is None and "error inf × bound" in verdict.message


def test_a_dtype_difference_is_the_verdict_and_says_whether_the_values_agree():
    bound = _bound([10.0], 10)
    exp = np.array([3.0], "float32")
    agree = compare_bounded([exp], [exp.astype("float64")], [bound], {})
    assert agree.message == "dtype float64 != reference float32; values agree"
    differ = compare_bounded([exp], [np.array([3.1])], [bound], {})
    assert differ.message.startswith("dtype float64 != reference float32; values also differ: 1 of 1 values differ")


def test_every_output_is_compared_and_the_margin_is_the_largest():
    bound = _bound([1.0], 1)
    one = np.array([1.0], "float32")
    off = np.array([1.0 + 3 * EPS32], "float32")
    verdict = compare_bounded([one, one], [one, off], [bound, bound], {})
    assert verdict.passed and verdict.margin == pytest.approx(3 * EPS32 / (k_of(1) * EPS32 + 1.2e-38), rel=0.01)


def test_the_markdown_report_names_each_backends_op_nearest_its_bound():
    from kbtool.reports.markdown import _margins

    results = [
        {"backend": "numpy", "op": "sum", "margin": 0.02},
        {"backend": "numpy", "op": "dot", "margin": 0.4},
        {"backend": "theano", "op": "conv2d", "margin": 0.07},
        {"backend": "theano", "op": "abs"},
    ]
    (line,) = [x for x in _margins({"results": results}) if x]
    assert line.endswith("numpy dot 0.4 · theano conv2d 0.07")
    assert _margins({"results": [{"backend": "numpy", "op": "abs"}]}) == []
