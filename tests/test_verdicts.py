"""The verdict rules, one table per rule: what makes a result pass, fail, error, unsupported, crash or time out.

Fast and self-contained: replies are built by hand (no backend environments, no worker processes).
"""

import dataclasses
import re
import warnings

import numpy as np
import pytest

from kbtool import verdicts
from kbtool.results import Details, Status, Verdict
from kbtool.specs import cases as cases_mod
from kbtool.verdicts import doc_claims, raises, replies, shape_rules, stats, tolerances, values

NAN, INF = float("nan"), float("inf")
F16, F32, F64 = np.float16, np.float32, np.float64


# ---- helpers --------------------------------------------------------------------------------------------------------


def reply(*outputs, status="ok"):
    """A worker reply with these outputs: arrays travel as arrays, anything else as a Python value."""
    header, arrays = {"status": status, "outputs": []}, []
    for value in outputs:
        if isinstance(value, np.ndarray):
            header["outputs"].append(
                {"kind": "array", "index": len(arrays), "dtype": str(value.dtype), "shape": list(value.shape)}
            )
            arrays.append(value)
        else:
            header["outputs"].append({"kind": "python", "value": value})
    return header, arrays


def raised(type_="ValueError", mro=None, message="bad"):
    mro = mro if mro is not None else [type_, "Exception", "BaseException", "object"]
    return {"status": "raised", "error": {"type": type_, "mro": mro, "message": message}}, []


def case(**kw):
    return cases_mod.Case(op="op", id="c", arrays=[], args=[], kwargs={}, modes=["eager"], tensor_indices=[], **kw)


def judge(case_, expected, actual, shape_rules_=None):
    verdict = verdicts.judge(case_, expected, actual, shape_rules_)
    assert isinstance(verdict.status, Status)
    return verdict.status.value, verdict.message


def cmp(exp, act, tolerance=None):
    verdict = values.compare_value(exp, act, tolerance or {})
    return verdict.status.value, verdict.message


def arr(values_, dtype="float64"):
    return np.array(values_, dtype=dtype)


OK_REPLY = reply(arr([1.0, 2.0]))


# ---- judge: replies that are verdicts by themselves -------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply_status, status",
    [
        ("crash", "crash"),
        ("timeout", "timeout"),
        ("unsupported", "unsupported"),
        ("unavailable", "could_not_start"),
    ],
)
def test_reply_status_is_the_verdict(reply_status, status):
    header = {"status": reply_status, "message": "worker said " + reply_status}
    assert judge(case(), OK_REPLY, (header, [])) == (status, "worker said " + reply_status)
    # a message-less reply gives an empty message; the reply's status wins even over an expected raise
    assert judge(case(raises="ValueError"), raised(), ({"status": reply_status}, [])) == (status, "")


# ---- judge: expected exceptions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case_kw, expected, actual, verdict",
    [
        # the case says raises: one array output names its shape
        (
            {"raises": "ValueError"},
            raised("ValueError"),
            reply(np.zeros((2, 3))),
            ("fail", "expected ValueError to be raised, got a result of shape (2, 3)"),
        ),
        (
            {"raises": "ValueError"},
            OK_REPLY,
            reply(np.zeros(())),
            ("fail", "expected ValueError to be raised, got a result of shape ()"),
        ),
        ({"raises": "ValueError"}, OK_REPLY, reply(3), ("fail", "expected ValueError to be raised, got a result")),
        (
            {"raises": "ValueError"},
            OK_REPLY,
            reply(np.zeros(2), np.zeros(3)),
            ("fail", "expected ValueError to be raised, got a result"),
        ),
        (
            {"raises": "ArithmeticError"},
            OK_REPLY,
            raised("ZeroDivisionError", ["ZeroDivisionError", "ArithmeticError", "Exception"]),
            ("pass", ""),
        ),
        (
            {"raises": "ZeroDivisionError"},
            OK_REPLY,
            raised("ArithmeticError", ["ArithmeticError", "Exception"], "x"),
            ("fail", "expected ZeroDivisionError, raised ArithmeticError: x"),
        ),
        # a case that expects a value never passes because both sides raised: the reference raising is an error
        (
            {},
            raised("ValueError", message="bad"),
            raised("ValueError"),
            ("error", "the reference raised ValueError: bad (a case that expects an error says `raises:`)"),
        ),
        (
            {},
            raised("ValueError", message="bad"),
            reply(np.zeros(2)),
            ("error", "the reference raised ValueError: bad (a case that expects an error says `raises:`)"),
        ),
        # the case says raises although the reference returned a value
        (
            {"raises": "TypeError"},
            OK_REPLY,
            OK_REPLY,
            ("fail", "expected TypeError to be raised, got a result of shape (2,)"),
        ),
        ({"raises": "TypeError"}, OK_REPLY, raised("TypeError"), ("pass", "")),
        # the case's exception wins over the reference's
        ({"raises": "TypeError"}, raised("ValueError"), raised("TypeError"), ("pass", "")),
        (
            {"raises": "TypeError"},
            raised("ValueError"),
            raised("ValueError", message="m"),
            ("fail", "expected TypeError, raised ValueError: m"),
        ),
        # the same type, and a parent class found in the raised error's MRO
        ({"raises": "Exception"}, OK_REPLY, raised("ValueError"), ("pass", "")),
        # the MRO decides, not the type's name
        (
            {"raises": "ValueError"},
            OK_REPLY,
            raised("InvalidArgumentError", ["InvalidArgumentError", "ValueError"]),
            ("pass", ""),
        ),
        (
            {"raises": "ValueError"},
            OK_REPLY,
            raised("ValueError", ["Other"], "m"),
            ("fail", "expected ValueError, raised ValueError: m"),
        ),
        # the message regex is searched, not fully matched
        (
            {"raises": "ValueError", "match": "incompatible sh.pe"},
            OK_REPLY,
            raised(message="an incompatible shape (2, 3)"),
            ("pass", ""),
        ),
        (
            {"raises": "ValueError", "match": "^shape"},
            OK_REPLY,
            raised(message="bad shape"),
            ("fail", "raised ValueError but message 'bad shape' does not match '^shape'"),
        ),
        (
            {"raises": "ValueError", "match": "axis"},
            OK_REPLY,
            raised(message="bad shape"),
            ("fail", "raised ValueError but message 'bad shape' does not match 'axis'"),
        ),
        ({"raises": "ValueError", "match": ""}, OK_REPLY, raised(message="anything"), ("pass", "")),
        # the type is checked before the message
        (
            {"raises": "ValueError", "match": "axis"},
            OK_REPLY,
            raised("TypeError", message="axis"),
            ("fail", "expected ValueError, raised TypeError: axis"),
        ),
    ],
)
def test_expected_exceptions(case_kw, expected, actual, verdict):
    assert judge(case(**case_kw), expected, actual) == verdict


def test_expected_exception_messages_are_cut_and_carry_details():
    long = "y" * 500
    verdict = raises.judge_raises("ValueError", None, raised("TypeError", message=long)[0])
    assert verdict.message == "expected ValueError, raised TypeError: " + "y" * 200
    assert verdict.details.as_dict() == {"expected_value": "ValueError", "actual_value": "TypeError"}
    verdict = raises.judge_raises("ValueError", "z", raised("ValueError", message=long)[0])
    assert verdict.message == "raised ValueError but message {!r} does not match 'z'".format("y" * 200)
    assert verdict.details is None
    assert raises.judge_raises("ValueError", None, raised()[0]) == Verdict(Status.PASS)


# ---- judge: the backend raised where the reference returned a value ---------------------------------------------------


@pytest.mark.parametrize(
    "error, verdict",
    [
        (
            ("NotImplementedError", ["NotImplementedError", "RuntimeError"], "no CTC here"),
            ("unsupported", "NotImplementedError: no CTC here"),
        ),
        (("NotImplementedError", ["NotImplementedError"], ""), ("unsupported", "NotImplementedError: (no message)")),
        # a subclass of NotImplementedError says the same
        (("MissingOp", ["MissingOp", "NotImplementedError"], "m"), ("unsupported", "MissingOp: m")),
        (("ValueError", ["ValueError", "Exception"], "bad"), ("error", "ValueError: bad")),
        (("ValueError", ["ValueError"], ""), ("error", "ValueError: ")),
        # the name alone does not count: only the MRO does
        (("NotImplementedError", ["Other"], "m"), ("error", "NotImplementedError: m")),
        (("RuntimeError", ["RuntimeError"], "x" * 400), ("error", "RuntimeError: " + "x" * 300)),
        (
            ("NotImplementedError", ["NotImplementedError"], "x" * 400),
            ("unsupported", "NotImplementedError: " + "x" * 300),
        ),
    ],
)
def test_backend_raised(error, verdict):
    assert judge(case(), OK_REPLY, raised(*error)) == verdict


def test_backend_raised_verdicts_have_no_details():
    assert raises.judge_backend_raised(raised("ValueError")[0]["error"]).details is None


# ---- judge: the reference produced no value ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expected, message",
    [
        ({"status": "crash", "message": "worker died"}, "reference did not produce a value: worker died"),
        ({"status": "timeout"}, "reference did not produce a value: timeout"),
        ({"status": "weird", "message": ""}, "reference did not produce a value: "),
    ],
)
def test_reference_without_value_is_an_error(expected, message):
    assert judge(case(), (expected, []), OK_REPLY) == ("error", message)


# ---- judge: stats and values paths -----------------------------------------------------------------------------------


def test_stats_case_is_judged_by_statistics_not_values():
    draw = arr([0.0, 1.0], "float32")
    other = arr([1.0, 0.0], "float32")
    assert judge(case(stats={"mean": [0.5, 0.5]}), reply(draw), reply(other)) == ("pass", "")
    assert judge(case(stats={"mean": [0.0, 0.1]}), reply(draw), reply(other)) == ("fail", "mean 0.5 outside [0, 0.1]")
    # without stats the same reply is a value difference
    assert judge(case(), reply(draw), reply(other))[0] == "fail"


def test_values_case_uses_the_case_tolerance():
    exp, act = reply(arr([1.0], "float32")), reply(arr([1.5], "float32"))
    assert judge(case(tolerance={"float32": {"atol": 0.5}}), exp, act) == ("pass", "")
    assert judge(case(), exp, act) == (
        "fail",
        "1 of 1 values differ (max abs diff 0.5, rtol 1e-05, atol 1e-06); first at (0,): 1.5 vs reference 1.0",
    )


def test_judge_takes_the_workers_reply_as_it_comes():
    """The session hands judge the worker's Reply (a (header, arrays) NamedTuple), not a plain tuple copied from it."""
    from kbtool.runners.messages import Reply

    header, arrays = reply(arr([1.0, 2.0]))
    assert judge(case(), (header, arrays), Reply(header, list(arrays))) == ("pass", "")
    assert judge(case(), (header, arrays), Reply(*reply(arr([1.0, 3.0]))))[0] == "fail"
    assert judge(case(), (header, arrays), Reply(*raised()))[0] == "error"


def test_judge_dtype_difference_still_compares_values():  # legacy (tests/test_rules_legacy.py)
    exp = reply(arr([1, 2, 3], "int32"))
    assert judge(case(), exp, reply(arr([1.0, 2.0, 3.0], "float32"))) == (
        "fail",
        "dtype float32 != reference int32; values agree",
    )
    status, message = judge(case(), exp, reply(arr([1.0, 2.0, 4.0], "float32")))
    assert status == "fail" and "values also differ: 1 of 3 values differ" in message


# ---- judge: shape rules after a pass ----------------------------------------------------------------------------------

RULES = [{"when": "len(x) == 3", "shape": "[1]"}, {"shape": "x[:-1]"}]


@pytest.mark.parametrize(
    "case_kw, exp, act, verdict",
    [
        # the rule says (2,) but the (otherwise passing) output has shape (3,)
        ({}, arr([1, 2, 3]), arr([1, 2, 3]), ("fail", "shape (3,) but the spec's shape rule 1 says (2,)")),
        # a failing result keeps its own message: the rules apply only after a pass
        (
            {},
            arr([1, 2, 3]),
            arr([1, 2, 4]),
            (
                "fail",
                "1 of 3 values differ (max abs diff 1, rtol 1e-10, atol 1e-12); first at (2,): 4.0 vs reference 3.0",
            ),
        ),
        ({}, arr([1, 2]), arr([1, 2]), ("pass", "")),
        # not for gradients or observed updates: their outputs are not the op's result
        ({"grad": True}, arr([1, 2, 3]), arr([1, 2, 3]), ("pass", "")),
        ({"observe": True}, arr([1, 2, 3]), arr([1, 2, 3]), ("pass", "")),
    ],
)
def test_shape_rules_apply_after_a_pass_to_plain_cases(case_kw, exp, act, verdict):
    assert judge(case(shape_names={"x": [2, 3]}, **case_kw), reply(exp), reply(act), RULES) == verdict


def test_shape_rule_failure_carries_details_and_no_rules_means_no_check():
    verdict = verdicts.judge(case(shape_names={"x": [2, 3]}), reply(arr([1, 2, 3])), reply(arr([1, 2, 3])), RULES)
    assert verdict.details.as_dict() == {"expected_shape": [2], "actual_shape": [3]}
    for rules in (None, []):
        assert judge(case(shape_names={"x": [2, 3]}), reply(arr([1, 2, 3])), reply(arr([1, 2, 3])), rules) == (
            "pass",
            "",
        )


@pytest.mark.parametrize(
    "rules, names, header_shapes, verdict",
    [
        (RULES, {"x": [4, 5, 6]}, [[1]], None),  # the first rule whose `when` holds
        (RULES, {"x": [4, 5, 6]}, [[2]], ("fail", "shape (2,) but the spec's shape rule 0 says (1,)")),
        (RULES, {"x": [2, 3]}, [[2]], None),
        ([{"when": "len(x) == 9", "shape": "[1]"}], {"x": [2]}, [[5]], None),  # no rule applies: nothing said
        (
            [{"shape": "x[5]"}],
            {"x": [2]},
            [[2]],
            ("fail", "spec shape rule error: shape rule 0 failed: IndexError: list index out of range"),
        ),
        ([{"shape": "y"}], {"x": [2]}, [[2]], ("fail", "spec shape rule error: unknown name 'y' (known: x)")),
        # skipped unless exactly one array output
        ([{"shape": "[9]"}], {}, [], None),
        ([{"shape": "[9]"}], {}, [[1], [2]], None),
        ([{"shape": "[9]"}], {}, [[1]], ("fail", "shape (1,) but the spec's shape rule 0 says (9,)")),
        ([{"shape": "x[5]"}], {"x": [2]}, [[1], [2]], None),
    ],
)
def test_judge_shape_rules(rules, names, header_shapes, verdict):
    header = {
        "status": "ok",
        "outputs": [{"kind": "array", "index": i, "shape": s} for i, s in enumerate(header_shapes)]
        + [{"kind": "python", "value": 1}],
    }
    got = shape_rules.judge_shape_rules(rules, case(shape_names=names), header)
    assert (got if got is None else (got.status.value, got.message)) == verdict


@pytest.mark.parametrize("case_kw", [{"raises": "ValueError"}, {"grad": True}, {"observe": True}])
def test_shape_rules_skip_raises_gradients_and_observed_updates(case_kw):
    header = {"status": "ok", "outputs": [{"kind": "array", "index": 0, "shape": [1]}]}
    assert shape_rules.judge_shape_rules([{"shape": "[9]"}], case(**case_kw), header) is None
    assert shape_rules.judge_shape_rules([{"shape": "[9]"}], case(), header).status == Status.FAIL


# ---- values: outputs ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expected, actual, verdict",
    [
        ([1, 2], [1], ("fail", "returned 1 outputs, reference returned 2; the 1 compared agree")),
        ([], [1], ("fail", "returned 1 outputs, reference returned 0")),
        ([], [], ("pass", "")),
        # the index prefix only when there are several outputs
        ([1], [2], ("fail", "returned 2, reference 1")),
        ([1, 2], [1, 3], ("fail", "output 1: returned 3, reference 2")),
        # every failing output is named
        ([1, 2], [0, 3], ("fail", "output 0: returned 0, reference 1; output 1: returned 3, reference 2")),
        ([arr([1.0]), "a"], [arr([1.0]), "a"], ("pass", "")),
    ],
)
def test_compare_outputs(expected, actual, verdict):
    got = values.compare_outputs(expected, actual)
    assert (got.status.value, got.message) == verdict


def test_compare_outputs_tolerance_applies_to_every_output():
    tol = {"float64": {"atol": 0.5}}
    exp, act = [arr([1.0]), arr([2.0])], [arr([1.25]), arr([2.75])]
    got = values.compare_outputs(exp, act, tol)
    assert got.message == (
        "output 1: 1 of 1 values differ (max abs diff 0.75, rtol 1e-10, atol 0.5); first at (0,): 2.75 vs reference 2.0"
    )
    assert values.compare_outputs(exp[:1], act[:1], tol).passed


# ---- values: Python values, NumPy scalars, arrays --------------------------------------------------------------------


@pytest.mark.parametrize(
    "exp, act, verdict",
    [
        # a NumPy scalar (0-d integer array) and a Python number compare by value
        (np.array(3), 3, ("pass", "")),
        (3, np.array(3, dtype="int32"), ("pass", "")),
        (np.array(3, dtype="uint8"), 3.0, ("pass", "")),
        (np.array(3), 4, ("fail", "returned 4, reference 3")),
        (4, np.array(3, dtype="int64"), ("fail", "returned 3, reference 4")),
        (np.array(3), np.array(3), ("pass", "")),
        (np.array(3), np.array(4), ("fail", "returned 4, reference 3")),
        (np.float64(0.5), 0.5, ("pass", "")),
        (np.int64(3), 3, ("pass", "")),
        (np.int64(3), 4, ("fail", "returned 4, reference np.int64(3)")),
        # numbers within NumPy's default isclose (rtol 1e-5, atol 1e-8), whatever the case's tolerance
        (1.0, 1.00001, ("pass", "")),
        (1.0, 1.0000201, ("fail", "returned 1.0000201, reference 1.0")),
        (0, 1e-8, ("pass", "")),
        (0, 2e-8, ("fail", "returned 2e-08, reference 0")),
        (INF, INF, ("pass", "")),
        (INF, -INF, ("fail", "returned -inf, reference inf")),
        (1, 1.0, ("pass", "")),
        # a float 0-d array is an array: it does not compare with a Python number
        (np.array(1.0), 1.0, ("fail", "returned 1.0, reference returned an array")),
        (1.0, np.array(1.0), ("fail", "returned an array, reference returned 1.0")),
        # arrays against anything else
        (arr([1, 2]), [1, 2], ("fail", "returned [1, 2], reference returned an array")),
        ([1, 2], arr([1, 2]), ("fail", "returned an array, reference returned [1, 2]")),
        (arr([1]), 1, ("fail", "returned 1, reference returned an array")),
        (None, arr([1]), ("fail", "returned an array, reference returned None")),
        # Python values by equality; lists and tuples alike, nested too
        ([1, (2, 3)], (1, [2, 3]), ("pass", "")),
        ((1, 2), [1, 2], ("pass", "")),
        ([1, 2], [1, 3], ("fail", "returned [1, 3], reference [1, 2]")),
        ([1, 2], [1, 2, 3], ("fail", "returned [1, 2, 3], reference [1, 2]")),
        ([[1]], [1], ("fail", "returned [1], reference [[1]]")),
        ("channels_last", "channels_last", ("pass", "")),
        ("channels_last", "channels_first", ("fail", "returned 'channels_first', reference 'channels_last'")),
        (None, None, ("pass", "")),
        (1, None, ("fail", "returned None, reference 1")),
        (True, False, ("fail", "returned False, reference True")),
        (True, True, ("pass", "")),
        ("1", 1, ("fail", "returned 1, reference '1'")),
    ],
)
def test_compare_value_python_and_scalars(exp, act, verdict):
    assert cmp(exp, act) == verdict


def test_number_and_python_value_details():
    verdict = values.compare_value(np.array(3), 4, {})
    assert verdict.details.as_dict() == {"expected_value": 3, "actual_value": 4}
    verdict = values.compare_value(1.0, INF, {})
    assert verdict.details.as_dict() == {"expected_value": 1.0, "actual_value": "inf"}
    verdict = values.compare_value([1, (2, NAN)], [1, (2, 3)], {})
    assert verdict.details.as_dict() == {"expected_value": [1, [2, "nan"]], "actual_value": [1, [2, 3]]}
    verdict = values.compare_value("a", {"b": 1}, {})
    assert verdict.details.as_dict() == {"expected_value": "a", "actual_value": "{'b': 1}"}
    assert values.compare_value(arr([1]), [1], {}).details is None


@pytest.mark.parametrize(
    "exp, act, verdict",
    [
        # shapes first: a shape difference is reported before dtypes or values
        (
            arr([1, 2]),
            arr([1, 2, 3]),
            (
                "fail",
                "shape (3,) != reference (2,); values not compared: 3 values vs 2, shapes do not broadcast",
            ),
        ),
        (
            arr([1, 2], "int32"),
            arr([[1.0, 2.0]], "float32"),
            (
                "fail",
                "shape (1, 2) != reference (2,); dtype float32 != reference int32; values (flattened) agree",
            ),
        ),
        (arr([[1, 2]]), arr([[1], [2]]), ("fail", "shape (2, 1) != reference (1, 2); values (flattened) agree")),
        (np.zeros((0, 2)), np.zeros((2, 0)), ("fail", "shape (2, 0) != reference (0, 2); values (flattened) agree")),
        (np.zeros((0, 2)), np.zeros((0, 2)), ("pass", "")),
        # NaN equals NaN at the same place; NaN against a number differs
        (arr([NAN, 1.0]), arr([NAN, 1.0]), ("pass", "")),
        (arr([NAN, 1.0], "float32"), arr([NAN, 1.0], "float32"), ("pass", "")),
        (
            arr([NAN, 1.0]),
            arr([1.0, NAN]),
            (
                "fail",
                "2 of 2 values differ (max abs diff nan, rtol 1e-10, atol 1e-12); first at (0,): 1.0 vs reference nan; "
                "2 of them non-finite",
            ),
        ),
        (
            arr([1.0, 2.0]),
            arr([1.0, NAN]),
            (
                "fail",
                "1 of 2 values differ (max abs diff nan, rtol 1e-10, atol 1e-12); first at (1,): nan vs reference 2.0; "
                "1 of them non-finite",
            ),
        ),
        # inf equals inf of the same sign
        (arr([INF, -INF]), arr([INF, -INF]), ("pass", "")),
        (
            arr([INF]),
            arr([-INF]),
            (
                "fail",
                "1 of 1 values differ (max abs diff inf, rtol 1e-10, atol 1e-12); first at (0,): -inf vs reference inf; "
                "1 of them non-finite",
            ),
        ),
        (
            arr([INF]),
            arr([1e308]),
            (
                "fail",
                "1 of 1 values differ (max abs diff inf, rtol 1e-10, atol 1e-12); first at (0,): 1e+308 vs reference inf; "
                "1 of them non-finite",
            ),
        ),
        # integers and booleans exactly
        (
            arr([1, 2], "int32"),
            arr([1, 3], "int32"),
            ("fail", "1 of 2 values differ (max abs diff 1, rtol 0, atol 0); first at (1,): 3 vs reference 2"),
        ),
        (
            arr([10**15], "int64"),
            arr([10**15 + 1], "int64"),
            (
                "fail",
                "1 of 1 values differ (max abs diff 1, rtol 0, atol 0); first at (0,): 1000000000000001 vs reference "
                "1000000000000000",
            ),
        ),
        (arr([True, False], "bool"), arr([True, False], "bool"), ("pass", "")),
        (
            arr([True, False], "bool"),
            arr([True, True], "bool"),
            ("fail", "1 of 2 values differ (max abs diff 1, rtol 0, atol 0); first at (1,): True vs reference False"),
        ),
        # several differences: the count, the worst, the first in C order
        (
            arr([[1.0, 2.0], [3.0, 4.0]]),
            arr([[1.0, 2.5], [0.0, 4.0]]),
            (
                "fail",
                "2 of 4 values differ (max abs diff 3, rtol 1e-10, atol 1e-12); first at (0, 1): 2.5 vs reference 2.0",
            ),
        ),
    ],
)
def test_compare_value_arrays(exp, act, verdict):
    assert cmp(exp, act) == verdict


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
def test_complex_values_are_compared_exactly():
    assert cmp(arr([1 + 1j], "complex128"), arr([1 + 1j], "complex128")) == ("pass", "")
    verdict = values.compare_value(arr([1 + 1j, 2], "complex128"), arr([1 + 2j, 2], "complex128"), {})
    assert verdict.status == Status.FAIL
    assert verdict.message.startswith("1 of 2 values differ (max abs diff ")
    assert verdict.message.endswith(", rtol 0, atol 0); first at (0,): (1+2j) vs reference (1+1j)")
    assert (verdict.details.mismatched, verdict.details.first_index) == (1, [0])


def test_isclose_is_relative_to_the_reference():
    tol = {"float64": {"rtol": 1.0, "atol": 0.0}}
    assert cmp(arr([1.0]), arr([0.0]), tol) == ("pass", "")
    assert cmp(arr([0.0]), arr([1.0]), tol) == (
        "fail",
        "1 of 1 values differ (max abs diff 1, rtol 1, atol 0); first at (0,): 1.0 vs reference 0.0",
    )


@pytest.mark.parametrize(
    "exp, act, verdict",
    [
        (
            arr([1, 2, 3], "int32"),
            arr([1.0, 2.0, 3.0], "float32"),
            ("fail", "dtype float32 != reference int32; values agree"),
        ),
        (
            arr([1, 2, 3], "int32"),
            arr([1.0, 2.0, 4.0], "float32"),
            (
                "fail",
                "dtype float32 != reference int32; values also differ: 1 of 3 values differ (max abs diff 1, rtol 1e-05, "
                "atol 1e-06); first at (2,): 4.0 vs reference 3.0",
            ),
        ),
        (arr([1, 2], "int32"), arr([1, 2], "int64"), ("fail", "dtype int64 != reference int32; values agree")),
        (
            arr([1, 2], "int32"),
            arr([1, 5], "int64"),
            (
                "fail",
                "dtype int64 != reference int32; values also differ: 1 of 2 values differ (max abs diff 3, rtol 0, atol 0);"
                " first at (1,): 5 vs reference 2",
            ),
        ),
        # booleans against numbers are compared as float64 values
        (arr([True, False], "bool"), arr([1, 0], "int32"), ("fail", "dtype int32 != reference bool; values agree")),
        (
            arr([True], "bool"),
            arr([2], "int32"),
            (
                "fail",
                "dtype int32 != reference bool; values also differ: 1 of 1 values differ (max abs diff 1, rtol 0, atol 0);"
                " first at (0,): 2.0 vs reference 1.0",
            ),
        ),
        (
            arr([2], "int8"),
            arr([True], "bool"),
            (
                "fail",
                "dtype bool != reference int8; values also differ: 1 of 1 values differ (max abs diff 1, rtol 0, atol 0);"
                " first at (0,): 1.0 vs reference 2.0",
            ),
        ),
        # the loosest of the two dtypes' tolerances: float32's, not float64's
        (
            arr([1.0], "float64"),
            arr([1.0 + 2**-20], "float32"),
            ("fail", "dtype float32 != reference float64; values agree"),
        ),
        (
            arr([1.0 + 2**-20], "float32"),
            arr([1.0], "float64"),
            ("fail", "dtype float64 != reference float32; values agree"),
        ),
        (arr([1.0], "float64"), arr([1.001], "float16"), ("fail", "dtype float16 != reference float64; values agree")),
        (
            arr([1.0], "float64"),
            arr([1.01], "float16"),
            (
                "fail",
                "dtype float16 != reference float64; values also differ: 1 of 1 values differ (max abs diff 0.00977, rtol "
                "0.001, atol 0.001); first at (0,): 1.009765625 vs reference 1.0",
            ),
        ),
        (arr([NAN], "float32"), arr([NAN], "float64"), ("fail", "dtype float64 != reference float32; values agree")),
    ],
)
def test_dtype_difference_still_compares_values(exp, act, verdict):
    assert cmp(exp, act) == verdict


def test_dtype_difference_uses_the_loosest_overridden_tolerance():
    exp, act = arr([1.0], "float64"), arr([1.25], "float32")
    assert cmp(exp, act, {"float32": {"atol": 0.25}}) == ("fail", "dtype float32 != reference float64; values agree")
    assert cmp(exp, act, {"float64": {"atol": 0.25}}) == ("fail", "dtype float32 != reference float64; values agree")
    assert cmp(exp, act, {"float64": {"atol": 0.2}})[1].startswith(
        "dtype float32 != reference float64; values also "
        "differ: 1 of 1 values differ (max abs diff 0.25, "
        "rtol 1e-05, atol 0.2)"
    )


def _mask_of(details):
    """The mask digest of the details (eight hex digits), checked and taken out (None) for an exact comparison."""
    assert re.fullmatch("[0-9a-f]{8}", details.mask or ""), details.mask
    return None


def _no_mask(details):
    assert re.fullmatch("[0-9a-f]{8}", details.pop("mask", "")), details
    return details


def test_mask_digest_names_which_elements_differ():
    exp = np.zeros((2, 3), dtype="float32")
    one, same, other = exp.copy(), exp.copy(), exp.copy()
    one[0, 1] = same[0, 1] = 5.0
    other[1, 0] = 5.0
    digest = [values.compare_arrays(exp, a, {"rtol": 1e-5, "atol": 1e-6}).details.mask for a in (one, same, other)]
    assert digest[0] == digest[1] != digest[2]
    # the same flat mask in another shape is another mask
    assert (
        values.compare_arrays(exp.reshape(3, 2), one.reshape(3, 2), {"rtol": 1e-5, "atol": 1e-6}).details.mask
        != digest[0]
    )


def test_dtype_difference_details():
    agree = values.compare_value(arr([1, 2], "int32"), arr([1, 2], "int64"), {})
    assert agree.details.as_dict() == {
        "expected_shape": [2],
        "actual_shape": [2],
        "expected_dtype": "int32",
        "actual_dtype": "int64",
        "values": "agree",
    }
    differ = values.compare_value(arr([1, 2, 3], "int32"), arr([1.0, 2.0, 4.0], "float32"), {})
    assert _no_mask(differ.details.as_dict()) == {
        "expected_shape": [3],
        "actual_shape": [3],
        "expected_dtype": "int32",
        "actual_dtype": "float32",
        "max_abs_diff": 1.0,
        "max_rel_diff": 1 / 3,
        "mismatched": 1,
        "size": 3,
        "first_index": [2],
        "expected_value": 3.0,
        "actual_value": 4.0,
        "rtol": 1e-05,
        "atol": 1e-06,
        "values": "differ",
    }
    shape = values.compare_value(arr([1, 2, 3], "int32"), arr([1.0, 2.0], "float32"), {})
    assert shape.details.as_dict() == {
        "expected_shape": [3],
        "actual_shape": [2],
        "expected_dtype": "int32",
        "actual_dtype": "float32",
        "values": "not compared",
    }


# ---- values: Details -------------------------------------------------------------------------------------------------


def test_compare_arrays_details_are_exact():
    verdict = values.compare_arrays(
        arr([[1.0, 2.0], [4.0, 8.0]]), arr([[1.0, 3.0], [4.0, 2.0]]), {"rtol": 0.0, "atol": 0.5}
    )
    assert verdict.status == Status.FAIL
    assert dataclasses.replace(verdict.details, mask=_mask_of(verdict.details)) == Details(
        expected_shape=[2, 2],
        actual_shape=[2, 2],
        expected_dtype="float64",
        actual_dtype="float64",
        max_abs_diff=6.0,
        max_rel_diff=0.75,
        mismatched=2,
        size=4,
        first_index=[0, 1],
        expected_value=2.0,
        actual_value=3.0,
        rtol=0.0,
        atol=0.5,
    )
    assert verdict.message == (
        "2 of 4 values differ (max abs diff 6, rtol 0, atol 0.5); first at (0, 1): 3.0 vs reference 2.0"
    )


@pytest.mark.parametrize(
    "exp, act, details",
    [
        # a NaN against a number: no finite difference anywhere, so no max diffs; the values as strings
        (
            arr([NAN]),
            arr([1.0]),
            {
                "mismatched": 1,
                "non_finite": 1,
                "size": 1,
                "first_index": [0],
                "expected_value": "nan",
                "actual_value": 1.0,
            },
        ),
        (
            arr([1.0]),
            arr([-INF]),
            {
                "mismatched": 1,
                "non_finite": 1,
                "size": 1,
                "first_index": [0],
                "expected_value": 1.0,
                "actual_value": "-inf",
            },
        ),
        # a zero reference: the relative difference is infinite, so left out
        (
            arr([0.0]),
            arr([2.0]),
            {
                "max_abs_diff": 2.0,
                "mismatched": 1,
                "size": 1,
                "first_index": [0],
                "expected_value": 0.0,
                "actual_value": 2.0,
            },
        ),
        # a non-finite difference beside finite ones: the largest difference is NaN, which JSON cannot hold, so no
        # max diffs (never the largest finite one: that would hide the NaN), and a count of the non-finite ones
        (
            arr([NAN, 4.0]),
            arr([1.0, 5.0]),
            {
                "mismatched": 2,
                "non_finite": 1,  # how many of them: the details say what the max diffs cannot
                "size": 2,
                "first_index": [0],
                "expected_value": "nan",
                "actual_value": 1.0,
            },
        ),
        (
            arr([True], "bool"),
            arr([False], "bool"),
            {
                "max_abs_diff": 1.0,
                "max_rel_diff": 1.0,
                "mismatched": 1,
                "size": 1,
                "first_index": [0],
                "expected_value": True,
                "actual_value": False,
            },
        ),
        (
            arr([7], "int32"),
            arr([5], "int32"),
            {
                "max_abs_diff": 2.0,
                "max_rel_diff": 2 / 7,
                "mismatched": 1,
                "size": 1,
                "first_index": [0],
                "expected_value": 7,
                "actual_value": 5,
            },
        ),
    ],
)
def test_details_handle_non_finite_values(exp, act, details):
    verdict = values.compare_arrays(exp, act, tolerances.tolerance_for(str(exp.dtype)))
    got = _no_mask(verdict.details.as_dict())
    tol = tolerances.tolerance_for(str(exp.dtype))
    assert got == dict(
        details,
        expected_shape=list(exp.shape),
        actual_shape=list(act.shape),
        expected_dtype=str(exp.dtype),
        actual_dtype=str(act.dtype),
        rtol=tol["rtol"],
        atol=tol["atol"],
    )


def test_compare_arrays_itself_raises_no_numpy_warnings():
    # inf - inf (invalid), 1/0 (divide) and 1e308 - -1e308 (overflow: a difference past float64, inf) while measuring
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        verdict = values.compare_arrays(
            arr([INF, 0.0, -1e308, 0.0]), arr([INF, 1.0, 1e308, 0.0]), {"rtol": 1e-10, "atol": 1e-12}
        )
    assert [str(w.message) for w in caught if w.filename == values.__file__] == []
    verdict.details.mask = _mask_of(verdict.details)
    assert verdict.message == (
        "2 of 4 values differ (max abs diff inf, rtol 1e-10, atol 1e-12); first at (1,): 1.0 vs reference 0.0"
    )
    assert verdict.details.as_dict() == {
        "expected_shape": [4],
        "actual_shape": [4],
        "expected_dtype": "float64",
        "actual_dtype": "float64",
        "mismatched": 2,
        "size": 4,
        "first_index": [1],
        "expected_value": 0.0,
        "actual_value": 1.0,
        "rtol": 1e-10,
        "atol": 1e-12,
    }


def test_details_as_dict_drops_none_only():
    assert Details().as_dict() == {}
    assert Details(mismatched=0, size=0, rtol=0, atol=0.0, expected_value=False, actual_value="").as_dict() == {
        "mismatched": 0,
        "size": 0,
        "rtol": 0,
        "atol": 0.0,
        "expected_value": False,
        "actual_value": "",
    }


def test_passing_comparisons_have_no_details():
    assert values.compare_value(arr([1.0]), arr([1.0]), {}) == Verdict(Status.PASS)
    assert values.compare_value(1, 1, {}) == Verdict(Status.PASS)
    assert values.compare_arrays(arr([1]), arr([1]), {"rtol": 0, "atol": 0}) == Verdict(Status.PASS)


def test_plain_values_for_the_report():
    assert values._plain(np.array([[1.0, NAN], [INF, 2.0]])) == [[1.0, "nan"], ["inf", 2.0]]
    assert values._plain(np.float32(0.5)) == 0.5 and type(values._plain(np.float32(0.5))) is float
    assert values._plain(np.int16(3)) == 3 and type(values._plain(np.int16(3))) is int
    assert values._plain((1, [True, None, "s"])) == [1, [True, None, "s"]]
    assert values._plain(-INF) == "-inf"
    assert values._plain(object) == "<class 'object'>"


@pytest.mark.parametrize(
    "a, b, equal",
    [
        ([1, (2, [3])], ((1, [2, (3,)])), True),
        ((), [], True),
        ([1], (1, 2), False),
        (1, (1,), False),
        ("ab", ["a", "b"], False),
        (None, None, True),
    ],
)
def test_py_equal(a, b, equal):
    assert values.py_equal(a, b) is equal
    assert values.py_equal(b, a) is equal


# ---- tolerances ------------------------------------------------------------------------------------------------------


def test_default_tolerances():
    assert tolerances.DEFAULT_TOLERANCE == {
        "float16": {"rtol": 1e-3, "atol": 1e-3},
        "float32": {"rtol": 1e-5, "atol": 1e-6},
        "float64": {"rtol": 1e-10, "atol": 1e-12},
        "int": {"rtol": 0, "atol": 0},
    }
    assert tolerances.GRAD_TOLERANCE == {
        "float32": {"rtol": 2e-3, "atol": 2e-3},
        "float64": {"rtol": 1e-6, "atol": 1e-6},
    }
    assert not hasattr(cases_mod, "GRAD_TOLERANCE")  # one home: the verdicts'


@pytest.mark.parametrize(
    "case_kw, status",
    [
        ({}, "fail"),  # float32's own bound: rtol 1e-5
        ({"grad": True}, "pass"),  # a gradient against central differences: GRAD_TOLERANCE's rtol 2e-3
        ({"grad": True, "tolerance": {"float32": {"rtol": 1e-5, "atol": 0}}}, "fail"),  # the case's own wins
        ({"tolerance": {"float32": {"rtol": 2e-3}}}, "pass"),
    ],
)
def test_gradient_cases_are_judged_with_the_looser_bound(case_kw, status):
    expected, actual = arr([1.0, 2.0], "float32"), arr([1.001, 2.002], "float32")
    assert judge(case(**case_kw), reply(expected), reply(actual))[0] == status


@pytest.mark.parametrize(
    "dtype, overrides, tol",
    [
        ("float16", None, {"rtol": 1e-3, "atol": 1e-3}),
        ("float32", None, {"rtol": 1e-5, "atol": 1e-6}),
        ("float64", {}, {"rtol": 1e-10, "atol": 1e-12}),
        (np.dtype("float32"), None, {"rtol": 1e-5, "atol": 1e-6}),
        # integers, booleans and anything else: exact
        ("int32", None, {"rtol": 0, "atol": 0}),
        ("bool", None, {"rtol": 0, "atol": 0}),
        ("complex64", None, {"rtol": 0, "atol": 0}),
        ("bfloat16", None, {"rtol": 0, "atol": 0}),
        # overrides per dtype, partial or whole
        ("float32", {"float32": {"rtol": 0.1}}, {"rtol": 0.1, "atol": 1e-6}),
        ("float32", {"float32": {"rtol": 0.1, "atol": 0.2}}, {"rtol": 0.1, "atol": 0.2}),
        ("float32", {"float64": {"rtol": 0.1}}, {"rtol": 1e-5, "atol": 1e-6}),
        ("float64", {"float32": {"rtol": 0.1}, "float64": {"atol": 0.3}}, {"rtol": 1e-10, "atol": 0.3}),
        ("int8", {"int": {"atol": 1}}, {"rtol": 0, "atol": 1}),
        ("uint8", {"uint8": {"atol": 1}}, {"rtol": 0, "atol": 0}),
    ],
)
def test_tolerance_for(dtype, overrides, tol):
    assert tolerances.tolerance_for(dtype, overrides) == tol


def test_tolerance_for_returns_a_copy():
    tolerances.tolerance_for("float32")["rtol"] = 99
    assert tolerances.tolerance_for("float32") == {"rtol": 1e-5, "atol": 1e-6}


@pytest.mark.parametrize(
    "dtypes, overrides, tol",
    [
        (["float16", "float64"], None, {"rtol": 1e-3, "atol": 1e-3}),
        (["float64", "float32"], None, {"rtol": 1e-5, "atol": 1e-6}),
        (["int32", "float64"], None, {"rtol": 1e-10, "atol": 1e-12}),
        (["int32", "bool"], None, {"rtol": 0, "atol": 0}),
        (["float32"], None, {"rtol": 1e-5, "atol": 1e-6}),
        # each bound on its own: the largest rtol of one dtype, the largest atol of another
        (["int32", "float32"], {"int": {"atol": 0.5}}, {"rtol": 1e-5, "atol": 0.5}),
        (["float16", "float32"], {"float32": {"rtol": 0.01}}, {"rtol": 0.01, "atol": 1e-3}),
    ],
)
def test_loosest(dtypes, overrides, tol):
    assert tolerances.loosest(dtypes, overrides) == tol


def _f32(bits_above_one):
    return F32(1.0 + bits_above_one * 2.0**-23)


@pytest.mark.parametrize(
    "dtype, exp, at, beyond",
    [
        # atol alone, against a zero reference: exactly atol passes, the next representable value fails
        ("float16", 0.0, F16(1e-3), np.nextafter(F16(1e-3), F16(1))),
        ("float32", 0.0, F32(1e-6), np.nextafter(F32(1e-6), F32(1))),
        ("float64", 0.0, 1e-12, np.nextafter(1e-12, 1.0)),
        # atol + rtol*|reference|: the last representable value within the bound, then the next one
        ("float16", 64.0, F16(64.0625), F16(64.125)),  # bound 0.001 + 0.064 = 0.065; spacing 1/16
        ("float32", 2.0**20, F32(2**20 + 10.375), F32(2**20 + 10.5)),  # bound 1e-6 + 10.48576; spacing 1/8
        ("float64", 1000.0, 1000.0 + 1e-12 + 1e-7, np.nextafter(1000.0 + 1e-12 + 1e-7, 2000.0)),
    ],
)
def test_default_tolerance_boundaries(dtype, exp, at, beyond):
    assert cmp(arr([exp], dtype), arr([at], dtype)) == ("pass", "")
    assert cmp(arr([exp], dtype), arr([-at if exp == 0 else 2 * exp - at], dtype)) == ("pass", "")
    status, message = cmp(arr([exp], dtype), arr([beyond], dtype))
    tol = tolerances.tolerance_for(dtype)
    assert status == "fail"
    assert message.startswith(
        "1 of 1 values differ (max abs diff {:.3g}, rtol {:g}, atol {:g}); first at (0,): ".format(
            float(beyond) - exp, tol["rtol"], tol["atol"]
        )
    )


@pytest.mark.parametrize(
    "dtype, overrides, exp, ok, bad",
    [
        ("float32", {"float32": {"atol": 0.5, "rtol": 0}}, 0.0, 0.5, 0.5000001),
        ("float32", {"float32": {"atol": 0, "rtol": 0.5}}, 2.0, 3.0, 3.0000005),
        ("float64", {"float64": {"atol": 0.25}}, 0.0, 0.25, 0.2500001),
        ("float16", {"float16": {"atol": 0.5}}, 0.0, 0.5, 0.51),
        ("float32", {"float64": {"atol": 0.5}}, 0.0, 1e-6, 0.5),  # another dtype's override does not apply
    ],
)
def test_overridden_tolerance_boundaries(dtype, overrides, exp, ok, bad):
    assert cmp(arr([exp], dtype), arr([ok], dtype), overrides) == ("pass", "")
    assert cmp(arr([exp], dtype), arr([bad], dtype), overrides)[0] == "fail"


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize(
    "dtype, overrides",
    [
        ("int32", None),
        ("int32", {"int": {"atol": 1, "rtol": 1}}),
        ("uint8", {"int": {"atol": 5}}),
        ("bool", {"int": {"atol": 1}}),
        ("complex64", None),
    ],
)
def test_integer_and_unknown_dtypes_are_exact_whatever_the_override(dtype, overrides):
    exp = arr([1, 2], dtype) if dtype != "bool" else arr([True, False], dtype)
    act = arr([1, 3], dtype) if dtype != "bool" else arr([True, True], dtype)
    if dtype == "complex64":
        act = arr([1, 2 + 1e-7j], dtype)
    tol = tolerances.tolerance_for(dtype, overrides)
    assert cmp(exp, exp.copy(), overrides) == ("pass", "")
    status, message = cmp(exp, act, overrides)
    assert status == "fail"
    assert message.startswith("1 of 2 values differ (max abs diff ")
    assert ", rtol {:g}, atol {:g}); first at (1,): ".format(tol["rtol"], tol["atol"]) in message


# ---- stats -----------------------------------------------------------------------------------------------------------


def _stats(spec, expected, draws):
    verdict = stats.judge_stats(spec, expected, draws)
    return verdict.status.value, verdict.message


DRAW = arr([0.0, 1.0, 0.0, 1.0])  # mean 0.5, std 0.5, min 0, max 1


@pytest.mark.parametrize(
    "bounds, verdict",
    [
        ({}, ("pass", "")),
        # each bound inclusive at both edges
        ({"mean": [0.5, 0.5]}, ("pass", "")),
        ({"std": [0.5, 0.5]}, ("pass", "")),
        ({"min": [0.0, 0.0]}, ("pass", "")),
        ({"max": [1.0, 1.0]}, ("pass", "")),
        ({"mean": [0.5, 0.6], "std": [0.4, 0.5], "min": [-1, 0], "max": [1, 2]}, ("pass", "")),
        # just outside each edge of each measure
        ({"mean": [0.51, 1]}, ("fail", "mean 0.5 outside [0.51, 1]")),
        ({"mean": [0, 0.49]}, ("fail", "mean 0.5 outside [0, 0.49]")),
        ({"std": [0.51, 1]}, ("fail", "std 0.5 outside [0.51, 1]")),
        ({"std": [0, 0.49]}, ("fail", "std 0.5 outside [0, 0.49]")),
        ({"min": [0.01, 1]}, ("fail", "min 0 outside [0.01, 1]")),
        ({"min": [-1, -0.01]}, ("fail", "min 0 outside [-1, -0.01]")),
        ({"max": [1.01, 2]}, ("fail", "max 1 outside [1.01, 2]")),
        ({"max": [0, 0.99]}, ("fail", "max 1 outside [0, 0.99]")),
        # measures in order: mean, std, min, max
        ({"max": [5, 6], "mean": [5, 6]}, ("fail", "mean 0.5 outside [5, 6]")),
        ({"max": [5, 6], "std": [5, 6], "min": [5, 6]}, ("fail", "std 0.5 outside [5, 6]")),
        ({"max": [5, 6], "min": [5, 6]}, ("fail", "min 0 outside [5, 6]")),
        # other keys are not measures
        ({"median": [5, 6]}, ("pass", "")),
    ],
)
def test_stats_bounds(bounds, verdict):
    assert _stats(bounds, [DRAW], [DRAW.copy()]) == verdict


def test_stats_bounds_use_four_significant_digits():
    draw = arr([0.123456, 0.123456])
    assert _stats({"mean": [1.5, 2.25]}, [draw], [draw]) == ("fail", "mean 0.1235 outside [1.5, 2.25]")
    ints = arr([1, 2, 3], "int32")  # measured as float64
    assert _stats({"mean": [2, 2], "std": [0.8, 0.9], "max": [3, 3]}, [ints], [ints]) == ("pass", "")


@pytest.mark.parametrize(
    "expected, draws, verdict, details",
    [
        ([DRAW], [], ("fail", "returned [], expected an array"), None),
        ([DRAW], [1.5], ("fail", "returned [1.5], expected an array"), None),
        ([DRAW], [[1, 2], DRAW], ("fail", "returned [[1, 2]], expected an array"), None),
        (
            [DRAW],
            [arr([1.0, 2.0])],
            ("fail", "shape (2,) != reference (4,) (statistics agree)"),
            {"expected_shape": [4], "actual_shape": [2]},
        ),
        (
            [np.zeros((2, 2))],
            [np.full(4, 20.0)],  # measured whatever the shape: a mean outside the bounds still shows
            ("fail", "shape (4,) != reference (2, 2) (statistics also differ: mean 20 outside [-10, 10])"),
            {"expected_shape": [2, 2], "actual_shape": [4]},
        ),
        (
            [DRAW],
            [DRAW.astype("float32")],
            ("fail", "dtype float32 != reference float64 (statistics agree)"),
            {"expected_dtype": "float64", "actual_dtype": "float32"},
        ),
        ([np.zeros((0, 3))], [np.zeros((0, 3))], ("fail", "empty output"), None),
    ],
)
def test_stats_shape_dtype_and_emptiness(expected, draws, verdict, details):
    got = stats.judge_stats({"mean": [-10, 10]}, expected, draws)
    assert (got.status.value, got.message) == verdict
    assert (got.details.as_dict() if got.details else None) == details


@pytest.mark.parametrize(
    "draws, verdict, details",
    [
        ([DRAW, DRAW.copy()], ("pass", ""), None),
        (
            [DRAW, arr([0.0, 1.0, 0.0, 0.5])],
            ("fail", "not reproducible: the same seed drew different values (1 of 4 differ)"),
            {"mismatched": 1, "size": 4},
        ),
        (
            [DRAW, arr([1.0, 0.0, 1.0, 1.0])],
            ("fail", "not reproducible: the same seed drew different values (3 of 4 differ)"),
            {"mismatched": 3, "size": 4},
        ),
        # no second draw, or one of another shape: every value counts as different
        (
            [DRAW],
            ("fail", "not reproducible: the same seed drew different values (4 of 4 differ)"),
            {"mismatched": 4, "size": 4},
        ),
        (
            [DRAW, DRAW[:2]],
            ("fail", "not reproducible: the same seed drew different values (4 of 4 differ)"),
            {"mismatched": 4, "size": 4},
        ),
        (
            [DRAW, DRAW.reshape(2, 2)],
            ("fail", "not reproducible: the same seed drew different values (4 of 4 differ)"),
            {"mismatched": 4, "size": 4},
        ),
        # a second draw that is a Python list of equal values is read as an array
        ([DRAW, [0.0, 1.0, 0.0, 1.0]], ("pass", ""), None),
    ],
)
def test_stats_reproducible(draws, verdict, details):
    got = stats.judge_stats({"mean": [0, 1], "reproducible": True}, [DRAW], draws)
    assert (got.status.value, got.message) == verdict
    assert (got.details.as_dict() if got.details else None) == details
    # without `reproducible` the second draw is not looked at
    assert stats.judge_stats({"mean": [0, 1]}, [DRAW], draws).passed
    assert stats.judge_stats({"mean": [0, 1], "reproducible": False}, [DRAW], draws).passed


def test_stats_bounds_come_before_reproducibility():
    assert _stats({"mean": [2, 3], "reproducible": True}, [DRAW], [DRAW]) == ("fail", "mean 0.5 outside [2, 3]")


# legacy (tests/test_rules_legacy.py): the shipped random_normal case asks for two draws and requires them equal
def test_seeded_random_cases_ask_for_two_draws_and_require_them_equal(shipped_spec):
    (case_,) = [c for c in cases_mod.cases_for(shipped_spec, "random_normal", 0) if c.id == "standard"]
    assert case_.stats["reproducible"] and case_.request("symbolic")["repeat"] == 2
    draw = np.random.default_rng(0).standard_normal((100, 100)).astype("float32")
    spec = {"mean": [-0.05, 0.05], "reproducible": True}
    assert _stats(spec, [draw], [draw, draw.copy()]) == ("pass", "")
    status, message = _stats(spec, [draw], [draw, draw + 1])
    assert status == "fail" and "not reproducible" in message and "10000 of 10000" in message
    assert message == "not reproducible: the same seed drew different values (10000 of 10000 differ)"
    assert _stats(spec, [draw], [draw, draw[:5]])[0] == "fail"


def test_layer_weights_stay_variables_in_symbolic_mode(shipped_spec):
    (case_, *_) = [c for c in cases_mod.cases_for(shipped_spec, "conv2d", 0) if "symbolic" in c.modes]
    data, kernel = case_.args[:2]
    assert kernel.get("weight") is True and "weight" not in data


# ---- replies ---------------------------------------------------------------------------------------------------------


def test_replies():
    header = {
        "status": "ok",
        "outputs": [
            {"kind": "array", "index": 1, "shape": [2]},
            {"kind": "python", "value": 7},
            {"kind": "array", "index": 0},
        ],
    }
    a, b = arr([1.0]), arr([2.0, 3.0])
    assert replies.output_values(header, [a, b]) == [b, 7, a]
    assert replies.output_values({"status": "ok"}, []) == []
    assert replies.array_shapes(header) == [[2], []]
    assert replies.shape_note(header) == ""
    assert replies.shape_note({"outputs": [{"kind": "array", "shape": [2, 1]}]}) == " of shape (2, 1)"
    assert replies.shape_note({"outputs": [{"kind": "python", "value": 1}]}) == ""
    assert replies.shape_note({}) == ""
    assert replies.kind_of(a) == "an array"
    assert replies.kind_of("x") == "'x'"
    assert replies.kind_of(np.float32(1)) == "np.float32(1.0)"


# ---- doc claims ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "want, got, matches",
    [
        # numbers within 1e-4 (plus NumPy's default rtol of 1e-5)
        (0.0, 1e-4, True),
        (0.0, -1e-4, True),
        (0.0, 1.1e-4, False),
        (1.0, np.array(1.0001, dtype="float32"), True),
        (1.0, 1.0002, False),
        ([[17, 53]], np.array([[17.0, 53.0]]), True),
        ([[17, 53]], np.array([[17.0, 53.001]]), False),
        # shapes must agree too
        ([[17], [53]], np.array([[17.0], [53.0]]), True),
        ([[17, 53]], np.array([[17.0], [53.0]]), False),
        ([1, 2], np.array([[1, 2]]), False),
        (3, [3], False),
        (True, np.array(True), True),
        # None items compared item by item
        ([None, 1e-05, None], [None, np.array(1e-05, dtype="float32"), None], True),
        ([None, 1e-05, None], [None, 1e-03, None], False),
        ([None, "float16", None], [None, "float16", None], True),
        ([None, 3], (None, 3), True),
        ([None, 3], [None, 3, 4], False),
        ([None, 3], [None], False),
        ([None, 3], [0, 3], False),
        ([None, 3], np.array([1, 3]), False),
        ([None, [None, 2]], [None, np.array([1, 2])], False),
        ([None, [1, 2]], [None, np.array([1, 2])], True),
        ([None], "x", False),
        (None, None, True),
        (None, 0, False),
        (None, [1, 2], False),
        (None, [None], False),
        ([None], None, False),
        # anything else by equality
        ("float32", "float32", True),
        ("channels_last", "channels_first", False),
        ("tf", np.array(1.0), False),
        ({"a": 1}, {"a": 1}, True),
        # a number against a non-number: not a match (None is read as NaN)
        (1, "x", False),
        (1.0, None, False),
        ([1, 2], ["a", "b"], False),
    ],
)
def test_claim_matches(want, got, matches):
    assert doc_claims.claim_matches(want, got) is matches


@pytest.mark.parametrize(
    "shown, outputs, verdicts_",
    [
        (
            [{"docs": ["en-2"], "value": [[17, 53]]}],
            [np.array([[17.0, 53.0]])],
            [{"docs": ["en-2"], "shown": "[[17, 53]]", "matches": True}],
        ),
        ([{"docs": ["en-2"], "value": 3}], [np.array(4)], [{"docs": ["en-2"], "shown": "3", "matches": False}]),
        (
            [{"docs": "ja-2", "shape": [2, 3]}],
            [np.zeros((2, 3))],
            [{"docs": "ja-2", "shown": "shape [2, 3]", "matches": True}],
        ),
        (
            [{"docs": "ja-2", "shape": [2, 3]}],
            [np.zeros((3, 2))],
            [{"docs": "ja-2", "shown": "shape [2, 3]", "matches": False}],
        ),
        # a Python result (e.g. int_shape's tuple) is compared with the shape as it is
        ([{"docs": "ja-2", "shape": [2, 3]}], [(2, 3)], [{"docs": "ja-2", "shown": "shape [2, 3]", "matches": True}]),
        (
            [{"docs": "ja-2", "shape": [2, None]}],
            [[2, None]],
            [{"docs": "ja-2", "shown": "shape [2, None]", "matches": True}],
        ),
        # a textual claim is shown, not judged
        (
            [{"docs": "zh", "text": "<tf.Variable 'x'>"}],
            [np.zeros(2)],
            [{"docs": "zh", "shown": "<tf.Variable 'x'>", "matches": None}],
        ),
        ([{"docs": "zh"}], [np.zeros(2)], [{"docs": "zh", "shown": "None", "matches": None}]),
        # several outputs are compared as one list
        (
            [{"docs": "ko", "value": [[1, 2], [3, 4]]}],
            [np.array([1, 2]), np.array([3, 4])],
            [{"docs": "ko", "shown": "[[1, 2], [3, 4]]", "matches": True}],
        ),
        ([{"docs": "ko", "value": [1, 2]}], [1, 2], [{"docs": "ko", "shown": "[1, 2]", "matches": True}]),
        ([{"docs": "ko", "value": 1}], [1, 2], [{"docs": "ko", "shown": "1", "matches": False}]),
        # no values at all: every claim fails, with nothing shown
        (
            [{"docs": "a", "value": 1}, {"docs": "b", "shape": [1]}],
            [],
            [{"docs": "a", "matches": False}, {"docs": "b", "matches": False}],
        ),
        # one verdict per claim, in order
        (
            [{"docs": "a", "value": 1}, {"docs": "b", "value": 2}, {"docs": "c", "text": "t"}],
            [np.array(1)],
            [
                {"docs": "a", "shown": "1", "matches": True},
                {"docs": "b", "shown": "2", "matches": False},
                {"docs": "c", "shown": "t", "matches": None},
            ],
        ),
        ([], [np.array(1)], []),
    ],
)
def test_doc_check(shown, outputs, verdicts_):
    assert doc_claims.doc_check(shown, outputs) == verdicts_
    assert verdicts.doc_check is doc_claims.doc_check


@pytest.mark.parametrize(
    "value, found",
    [
        (None, True),
        ([1, [2, None]], True),
        ((None,), True),
        ([1, [2, 3]], False),
        ([], False),
        (0, False),
        ("None", False),
    ],
)
def test_contains_none(value, found):
    assert doc_claims._contains_none(value) is found


def test_doc_check_value_within_1e4():
    for got, ok in ((1e-4, True), (-1e-4, True), (1.01e-4, False), (-1.01e-4, False)):
        assert doc_claims.doc_check([{"docs": "d", "value": 0}], [np.array(got)])[0]["matches"] is ok, got


# --- fixed bugs, pinned ---------------------------------------------------------------------------------------


def test_python_nan_against_python_nan_passes_like_arrays_do():
    from kbtool.verdicts.values import compare_value

    assert compare_value(float("nan"), float("nan"), {}).status == Status.PASS
    assert compare_value(float("nan"), 1.0, {}).status == Status.FAIL


def test_a_shape_claim_on_several_outputs_is_false_not_a_crash():
    from kbtool.verdicts.doc_claims import doc_check

    verdicts_ = doc_check([{"docs": ["d"], "shape": [2, 3]}], [np.zeros(2), np.zeros(3)])
    assert verdicts_ == [{"docs": ["d"], "shown": "shape [2, 3]", "matches": False}]


# ---- expected exceptions: messages cut at 200 characters, the regex time limit ----------------------------------------


def test_reference_raised_message_is_cut_at_200_characters():
    long = "r" * 300
    assert judge(case(), raised(message=long), OK_REPLY) == (
        "error",
        "the reference raised ValueError: {} (a case that expects an error says `raises:`)".format("r" * 200),
    )


def test_expected_exception_match_is_cut_at_200_characters():
    verdict = raises.judge_raises("ValueError", "q" * 300, raised(message="bad")[0])
    assert verdict == Verdict(Status.FAIL, "raised ValueError but message 'bad' does not match {!r}".format("q" * 200))


def test_expected_exception_match_timeout_is_exact(monkeypatch):
    monkeypatch.setattr(raises, "MATCH_TIMEOUT", 0.01)
    slow = "a" * 600  # "(a+)+b" takes ~0.5 s on it without a time limit
    verdict = raises.judge_raises("ValueError", "(a+)+b", raised(message=slow)[0])
    assert verdict == Verdict(
        Status.FAIL,
        "raised ValueError but message {!r} does not match '(a+)+b' (the regex "
        "search timed out after 0.01 s: taken as no match)".format("a" * 200),
    )
    assert raises.judge_raises("ValueError", "(a+)+b", raised(message="aab")[0]) == Verdict(Status.PASS)
