"""Every output, every value (issue #30, item 2): values are compared whatever the shape or dtype, every output of a
function of several is compared, the fingerprint holds the value verdict apart from the shape and dtype verdicts (so a
known shape difference never covers a value change), and hard values (NaN, ±inf, -0.0) are differences where they
should be. Fast: replies and results are built by hand."""

import numpy as np
import pytest

from kbtool import known, verdicts
from kbtool.known import fingerprint
from kbtool.reports.report import validate as validate_report
from kbtool.results import Result, Status
from kbtool.specs import cases as cases_mod
from kbtool.specs import loader
from kbtool.specs.loader import SpecError
from kbtool.verdicts import values

from .helpers import HEADER, available, make_report, record

NAN, INF = float("nan"), float("inf")
BIG = 1e300  # a stand-in for the largest finite value of the dtype under test
X = np.arange(6.0).reshape(2, 3)  # the reference's (2, 3) float64 output


def cmp(exp, act, tolerance=None):
    verdict = values.compare_value(exp, act, tolerance or {})
    return verdict.status.value, verdict.message


def details(verdict):
    return verdict.details.as_dict() if verdict.details else {}


# ---- values whatever the shape ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "act, message",
    [
        # the same number of values: compared flattened, in C order
        (X.reshape(1, 2, 3), "shape (1, 2, 3) != reference (2, 3); values (flattened) agree"),
        (X.reshape(6), "shape (6,) != reference (2, 3); values (flattened) agree"),
        (
            X.reshape(1, 2, 3) * 1.5,
            "shape (1, 2, 3) != reference (2, 3); values (flattened) also differ: 5 of 6 values differ (max abs diff "
            "2.5, rtol 1e-10, atol 1e-12); first at (1,): 1.5 vs reference 1.0",
        ),
        # the transpose holds the same values in another order: flattened, they differ
        (X.T, "shape (3, 2) != reference (2, 3); values (flattened) also differ: 4 of 6 values differ"),
        # one that broadcasts to the other: compared after broadcasting
        (X[:1], "shape (1, 3) != reference (2, 3); values (broadcast) also differ: 3 of 6 values differ"),
        # neither: said why not
        (np.arange(5.0), "shape (5,) != reference (2, 3); values not compared: 5 values vs 6, shapes do not broadcast"),
        (
            np.zeros((2, 1, 3)),
            "shape (2, 1, 3) != reference (2, 3); values (flattened) also differ: 5 of 6 values differ",
        ),
    ],
)
def test_values_are_compared_whatever_the_shape(act, message):
    status, got = cmp(X, act)
    assert status == "fail" and got.startswith(message)


def test_a_shape_that_broadcasts_compares_after_broadcasting_and_says_so():
    rows = np.tile(np.arange(3.0), (2, 1))
    assert cmp(rows, np.arange(3.0)) == ("fail", "shape (3,) != reference (2, 3); values (broadcast) agree")
    assert cmp(np.arange(3.0), rows) == ("fail", "shape (2, 3) != reference (3,); values (broadcast) agree")
    # both broadcast only to a third shape: neither side holds those values
    assert cmp(np.ones((2, 1)), np.ones((1, 3))) == (
        "fail",
        "shape (1, 3) != reference (2, 1); values not compared: 3 values vs 2, shapes broadcast only to a third "
        "shape (2, 3)",
    )


def test_the_details_keep_the_value_verdict_apart_from_shape_and_dtype():
    agree = values.compare_value(X, X.reshape(1, 2, 3).astype("float32"), {})
    assert agree.message == (
        "shape (1, 2, 3) != reference (2, 3); dtype float32 != reference float64; values (flattened) agree"
    )
    assert details(agree) == {
        "expected_shape": [2, 3],
        "actual_shape": [1, 2, 3],
        "expected_dtype": "float64",
        "actual_dtype": "float32",
        "values": "agree",
        "compared_as": "flattened",
    }
    differ = details(values.compare_value(X, X.reshape(6) * 1.5, {}))
    assert (differ["values"], differ["compared_as"], differ["mismatched"], differ["size"]) == (
        "differ",
        "flattened",
        5,
        6,
    )
    assert (differ["expected_shape"], differ["actual_shape"]) == ([2, 3], [6])
    not_compared = details(values.compare_value(X, np.arange(5.0), {}))
    assert not_compared["values"] == "not compared" and "mismatched" not in not_compared
    # same shape and dtype: a value difference says so too
    assert details(values.compare_value(X, X + 1, {}))["values"] == "differ"


def test_a_dtype_difference_reads_like_a_shape_difference():
    assert cmp(X, X.astype("float32")) == ("fail", "dtype float32 != reference float64; values agree")
    status, message = cmp(X, X.astype("float32") + 1)
    assert message.startswith("dtype float32 != reference float64; values also differ: 6 of 6 values differ")


# ---- every output ----------------------------------------------------------------------------------------------------


def test_every_output_is_compared_and_each_failing_one_named():
    got = values.compare_outputs([X, np.ones(2)], [X + 1, np.ones(2, "float32") * 2])
    assert got.status == Status.FAIL
    assert got.message.startswith("output 0: 6 of 6 values differ")
    assert "; output 1: dtype float32 != reference float64; values also differ: 2 of 2 values differ" in got.message
    outputs = got.details.outputs
    assert [(o["index"], o["status"]) for o in outputs] == [(0, "fail"), (1, "fail")]
    assert outputs[1]["details"]["values"] == "differ" and outputs[1]["details"]["actual_dtype"] == "float32"
    # the first failing output's own details stay at the top (what one line of the report shows)
    assert got.details.mismatched == 6 and got.details.size == 6


def test_a_wrong_second_output_fails_where_the_first_agrees():
    got = values.compare_outputs([X, np.ones(2)], [X, np.ones(2) * 2])
    assert got.message.startswith("output 1: 2 of 2 values differ")
    assert [o["status"] for o in got.details.outputs] == ["pass", "fail"]
    # under a known difference of the first output, a wrong second output is named too
    got = values.compare_outputs([X, np.ones(2)], [X.astype("int32"), np.ones(2) * 2])
    assert got.message.startswith("output 0: dtype int32 != reference float64; values agree; output 1: 2 of 2 values")


def test_other_counts_still_compare_the_documented_outputs_by_position():
    # an extra output: the reference's are compared, and the count is said
    got = values.compare_outputs([X, np.ones(2)], [X, np.ones(2), np.zeros(3)])
    assert got.message == "returned 3 outputs, reference returned 2; the 2 compared agree"
    assert (got.details.expected_outputs, got.details.actual_outputs) == (2, 3)
    wrong = values.compare_outputs([X, np.ones(2)], [X, np.ones(2) * 3, np.zeros(3)])
    assert wrong.message.startswith("returned 3 outputs, reference returned 2; output 1: 2 of 2 values differ")
    # a missing output: those there are compared
    short = values.compare_outputs([X, np.ones(2)], [X + 1])
    assert short.message.startswith("returned 1 outputs, reference returned 2; output 0: 6 of 6 values differ")
    assert [o["index"] for o in short.details.outputs] == [0]


def test_a_single_output_reads_as_before():
    got = values.compare_outputs([X], [X + 1])
    assert got.message.startswith("6 of 6 values differ") and got.details.outputs is None


def test_a_report_with_per_output_details_validates():
    got = values.compare_outputs([X, np.ones(2)], [X.reshape(6), np.ones(2) * 2, 3])
    result = record("op", "c", "alpha", "fail", message=got.message, details=got.details.as_dict())
    assert validate_report(make_report([available("alpha")], [result])) == []
    result["details"]["outputs"][0]["details"]["values"] = "maybe"
    assert validate_report(make_report([available("alpha")], [result])) != []


# ---- the fingerprint: the value verdict apart from the shape and dtype verdicts ---------------------------------------


def fingerprint_of(exp, act):
    verdict = values.compare_outputs(exp, act)
    return fingerprint.of(verdict.status.value, verdict.message, details(verdict))


def test_the_fingerprint_holds_shape_dtype_and_values_apart():
    assert fingerprint_of([X], [X.reshape(1, 2, 3).astype("float32")]) == (
        "fail | shape (1, 2, 3) != reference (2, 3); dtype float32 != reference float64; values (flattened) agree | "
        "shape (1,2,3)!=(2,3) | dtype float32!=float64 | values: agree"
    )
    wrong = fingerprint_of([X], [X.reshape(1, 2, 3) * 1.5])
    assert wrong.startswith(
        "fail | shape (1, 2, 3) != reference (2, 3); values (flattened) also differ: values differ |"
    )
    mask = values.compare_value(X, X.reshape(1, 2, 3) * 1.5, {}).details.mask
    assert wrong.endswith(f" | shape (1,2,3)!=(2,3) | dtype float64 | values: 5/6 differ mask {mask} 1e0 @ (1)")
    assert fingerprint_of([X], [np.arange(5.0)]).endswith("| shape (5)!=(2,3) | dtype float64 | values: not compared")


def test_each_failing_output_has_its_own_fingerprint_part():
    one = fingerprint_of([X, np.ones(2)], [X.astype("int32"), np.ones(2)])
    assert one.endswith("| output 0: shape (2,3) | dtype int32!=float64 | values: agree")
    two = fingerprint_of([X, np.ones(2)], [X.astype("int32"), np.ones(2) * 2])
    assert "| output 1: shape (2) | dtype float64 | values: 2/2 differ mask " in two and one != two


def shape_differs(scale):
    """A keepdims-style result: the backend's (1, 2, 3) against the reference's (2, 3), its values × `scale`."""
    verdict = values.compare_outputs([X], [X.reshape(1, 2, 3) * scale])
    return Result("sum", "keepdims", "theano", "eager", verdict.status, verdict.message, details=details(verdict))


def test_a_known_shape_difference_never_covers_a_value_change():
    recorded_result = shape_differs(1.0)
    assert recorded_result.message == "shape (1, 2, 3) != reference (2, 3); values (flattened) agree"
    entry = {"op": "sum", "case": "keepdims", "backend": "theano", "reason": "keeps a leading 1", "count": 1}
    entry["results"] = {known.result_key(recorded_result): fingerprint.of_result(recorded_result)}

    same = shape_differs(1.0)
    known.apply([same], [entry], whole_spec=False, all_cases=False)
    assert same.known == "keeps a leading 1"

    wrong = shape_differs(1.5)  # the same shape difference, and now wrong values
    known.apply([wrong], [entry], whole_spec=False, all_cases=False)
    assert wrong.status == Status.CHANGED and wrong.known is None
    assert wrong.changed["recorded"].endswith("values: agree") and "values: 5/6 differ" in wrong.changed["now"]


def test_a_values_differ_message_is_normalised_up_to_the_next_output():
    text = fingerprint.normalised_message(
        "output 0: 2 of 6 values differ (max abs diff 0.5, rtol 1e-05, atol 1e-06); first at (0,): 1.5 vs reference "
        "1.0; output 1: dtype int32 != reference int64; values agree"
    )
    assert text == "output 0: values differ; output 1: dtype int32 != reference int64; values agree"


# ---- hard values: NaN, infinities, signed zeros ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "exp, act, passes",
    [
        ([NAN, 1.0], [NAN, 1.0], True),  # NaN equals NaN at the same place
        ([NAN], [1.0], False),
        ([1.0], [NAN], False),
        ([INF], [INF], True),
        ([INF], [-INF], False),
        ([INF], [BIG], False),  # the largest finite value of the dtype
        ([-INF], [-BIG], False),
        ([1.0], [INF], False),
        ([0.0, -0.0], [-0.0, 0.0], True),  # -0.0 == 0.0 unless the case says signed_zeros
    ],
)
def test_nan_and_infinities_are_values_like_any_other(exp, act, passes):
    def array(values_, dtype):
        big = float(np.finfo(dtype).max)
        return np.array([big if v is BIG else -big if v == -BIG else v for v in values_], dtype)

    for dtype in ("float32", "float64"):
        assert (cmp(array(exp, dtype), array(act, dtype))[0] == "pass") == passes, (exp, act, dtype)
    # across a dtype difference the values are judged the same way
    assert ("values agree" in cmp(array(exp, "float64"), array(act, "float32"))[1]) == passes


def test_signed_zeros_makes_minus_zero_differ_from_zero():
    signed = {"signed_zeros": True}
    zeros, minus = np.array([0.0, -0.0, 1.0]), np.array([0.0, 0.0, 1.0])
    assert cmp(zeros, minus) == ("pass", "")
    assert cmp(zeros, minus, signed) == (
        "fail",
        "1 of 3 values differ (max abs diff 0, rtol 1e-10, atol 1e-12); first at (1,): 0.0 vs reference -0.0",
    )
    assert cmp(zeros, zeros.copy(), signed) == ("pass", "")
    # a tiny value is no zero: the tolerance judges it as before
    assert cmp(np.array([-0.0]), np.array([1e-13]), signed) == ("pass", "")
    assert cmp(zeros, minus.astype("float32"), signed)[1].startswith("dtype float32 != reference float64; values also")
    assert cmp(-0.0, 0.0) == ("pass", "") and cmp(-0.0, 0.0, signed) == ("fail", "returned 0.0, reference -0.0")
    # other overrides still apply beside it
    assert cmp(np.array([1.0]), np.array([1.25]), {"signed_zeros": True, "float64": {"atol": 0.5}}) == ("pass", "")


SPEC = (
    HEADER
    + """  neg:
    category: math
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
    cases:
      - {id: zero, inputs: [{value: [0.0, 1.0]}], tolerance: TOLERANCE}
"""
)


def test_a_case_says_signed_zeros_in_its_tolerance(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(SPEC.replace("TOLERANCE", "{signed_zeros: true}"))
    (case,) = cases_mod.cases_for(loader.load(str(path)), "neg")
    assert case.tolerance == {"signed_zeros": True}

    def reply(value):
        return {"status": "ok", "outputs": [{"kind": "array", "index": 0, "dtype": "float64", "shape": [2]}]}, [value]

    got = verdicts.judge(case, reply(np.array([-0.0, -1.0])), reply(np.array([0.0, -1.0])))
    assert got.status == Status.FAIL and got.message.endswith("0.0 vs reference -0.0")
    path.write_text(SPEC.replace("TOLERANCE", "{signed_zeros: yes please}"))
    with pytest.raises(SpecError):
        loader.load(str(path))


def test_a_draws_verdict_fingerprint_never_moves_with_the_length_of_its_numbers():
    """An unseeded draw's statistics differ in every run, and so does their length: the words kept are the same
    (numbers are blanked before the message is clipped), so a long random verdict stays recorded."""
    from kbtool.known import fingerprint

    words = "stddev: the draws' standard deviation {} where the documented law's is {} ({} standard errors; " * 3
    short = words.format(*[0.5, 0.9, 3] * 3) + "power 1.00"
    long = words.format(*[0.51234567, 0.90000001, 3.1415926] * 3) + "power 0.9987"
    details = {"draws": 1000}
    assert fingerprint.of("fail", short, details) == fingerprint.of("fail", long, details)
    # a seeded value verdict keeps its numbers' words as before: not blanked
    assert "#" not in fingerprint.normalised_message("shape (2, 3) != reference (3, 2)")
