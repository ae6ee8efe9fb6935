"""Static shapes: in symbolic mode the worker reports K.int_shape of each result, and the controller compares it with
what the spec's shape rule predicts from the placeholders' shapes (None only where the inputs leave a dim unknown)."""

import json
import os
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

import kbtool
from kbtool import reference
from kbtool.cli import main
from kbtool.specs import binding, shapes
from kbtool.specs.cases import cases_for
from kbtool.verdicts import judge
from kbtool.verdicts.shape_rules import judge_static_shape
from kbtool.worker import invoke

REPO = os.path.dirname(os.path.dirname(os.path.abspath(kbtool.__file__)))
CONCAT_ROWS = [{"shape": "x[:1] + [x[1] + y[1]]"}]  # concatenate two matrices along axis 1
BATCH_DOT = [{"let": {"out": "[x[0]] + x[1:-1] + y[2:]"}, "shape": "out"}]


# -- the prediction ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "rules,names,static,want",
    [
        (CONCAT_ROWS, {"x": [4, 3], "y": [4, 2]}, {}, [4, 5]),  # nothing unknown: every dim known
        (CONCAT_ROWS, {"x": [4, 3], "y": [4, 2]}, {"x": [None, 3], "y": [None, 2]}, [None, 5]),
        (CONCAT_ROWS, {"x": [4, 3], "y": [4, 2]}, {"x": [4, None]}, [4, None]),  # a sum with an unknown term
        (CONCAT_ROWS, {"x": [4, 3], "y": [4, 2]}, {"x": [None, None], "y": [None, None]}, [None, None]),
        (BATCH_DOT, {"x": [7, 3, 4], "y": [7, 4, 5]}, {"x": [None, None, None], "y": [None, None, None]}, [None] * 3),
        (BATCH_DOT, {"x": [7, 3, 4], "y": [7, 4, 5]}, {"x": [None, 3, 4], "y": [None, 4, 5]}, [None, 3, 5]),
    ],
)
def test_known_dims_are_those_the_unknown_input_dims_do_not_move(rules, names, static, want):
    predicted, index, determined = shapes.expected_static_shape(rules, names, static)
    assert (predicted, index, determined) == (want, 0, True)


def test_a_rule_that_cannot_follow_the_unknown_dims_is_undetermined():
    # an unknown dim broadcast against a known one: the rule refuses other sizes, so any dim may be None
    rules = [{"shape": "broadcast(x, y)"}]
    predicted, _, determined = shapes.expected_static_shape(rules, {"x": [4, 3], "y": [4, 3]}, {"x": [None, 3]})
    assert predicted == [4, 3] and not determined


# -- the verdict ---------------------------------------------------------------------------------------------
def _case(static_names, **flags):
    fields = dict(raises=None, grad=False, observe=False, shape_names={"x": [4, 3], "y": [4, 2]})
    fields.update(flags)
    return SimpleNamespace(static_names=static_names, **fields)


def _header(static, shape=(4, 5)):
    output = {"kind": "array", "index": 0, "dtype": "float32", "shape": list(shape)}
    if static != "absent":
        output["static_shape"] = static
    return {"status": "ok", "outputs": [output], "sequence": False}


UNKNOWN_BATCH = {"x": [None, 3], "y": [None, 2]}


@pytest.mark.parametrize(
    "static,static_names,needle",
    [
        ([None, 5], UNKNOWN_BATCH, None),  # None where the inputs leave it unknown
        ([4, 5], UNKNOWN_BATCH, None),  # knowing more than the inputs say is allowed when it is the real size
        ([4, 5], {}, None),
        ([None, 5], {}, "static shape (None, 5) != predicted (4, 5) (shape rule 0): dim 0 is None where the inputs"),
        ([None, None], UNKNOWN_BATCH, "dim 1 is None where the inputs determine 5"),  # a dim it could know, lost
        ([4, 6], {}, "dim 1 is 6 where the inputs determine 5"),  # a misstated dim
        ([9, 5], UNKNOWN_BATCH, "dim 0 is 9, unknown from the inputs and 4 when run"),  # an invented one
        ([4, 5, 1], {}, "rank 3 where the inputs determine rank 2"),
        ([None, -3], {}, "dim 0 is None where the inputs determine 4; dim 1 is -3 where the inputs determine 5"),
        (None, {}, "static shape unknown (int_shape returned None) != predicted (4, 5)"),
    ],
)
def test_static_shape_verdict(static, static_names, needle):
    verdict = judge_static_shape(CONCAT_ROWS, _case(static_names), _header(static))
    if needle is None:
        assert verdict is None
    else:
        assert verdict.status.value == "fail" and needle in verdict.message, verdict.message
        details = verdict.details.as_dict()
        assert (
            details["predicted_static_shape"]
            == shapes.expected_static_shape(CONCAT_ROWS, {"x": [4, 3], "y": [4, 2]}, static_names)[0]
        )
        assert details.get("static_shape") == static
        json.dumps(details, allow_nan=False)


def test_no_static_shape_no_static_verdict():
    # eager replies, and backends whose int_shape is missing or raised (the reply says so), are not judged
    assert judge_static_shape(CONCAT_ROWS, _case({}), _header("absent")) is None
    header = _header("absent")
    header["outputs"][0]["static_shape_error"] = "TypeError: boom"
    assert judge_static_shape(CONCAT_ROWS, _case({}), header) is None
    for flags in ({"grad": True}, {"observe": True}, {"raises": "ValueError"}):
        assert judge_static_shape(CONCAT_ROWS, _case({}, **flags), _header([9, 9])) is None


def test_judge_checks_the_static_shape_after_the_values_pass():
    case = _case({}, stats=None, tolerance={}, op="concatenate")
    reference_reply = (_header("absent"), [np.zeros((4, 5), "float32")])
    verdict = judge(case, reference_reply, (_header([4, None]), [np.zeros((4, 5), "float32")]), CONCAT_ROWS)
    assert verdict.status.value == "fail" and verdict.message.startswith("static shape (4, None) != predicted (4, 5)")
    # values that differ are the finding; the static shape is not looked at
    verdict = judge(case, reference_reply, (_header([4, None]), [np.ones((4, 5), "float32")]), CONCAT_ROWS)
    assert "values differ" in verdict.message


# -- the worker ----------------------------------------------------------------------------------------------
def _run(module, request, arrays):
    return invoke.evaluate(module, request, arrays)


def test_the_worker_reports_int_shape_in_symbolic_mode_only():
    arrays = [np.ones((4, 3), "float32"), np.ones((4, 2), "float32")]
    args = [{"list": [{"tensor": 0, "ph_shape": [None, 3]}, {"tensor": 1, "ph_ndim": True}]}]
    request = {"op": "concatenate", "mode": "symbolic", "args": args, "kwargs": {"axis": {"value": 1}}}
    header, out = _run(reference, request, arrays)
    assert header["status"] == "ok" and header["outputs"][0]["static_shape"] == [None, None]
    assert out[0].shape == (4, 5)
    args = [{"list": [{"tensor": 0, "ph_shape": [None, 3]}, {"tensor": 1, "ph_shape": [None, 2]}]}]
    header, _ = _run(reference, dict(request, args=args), arrays)
    assert header["outputs"][0]["static_shape"] == [None, 5]
    header, _ = _run(reference, dict(request, mode="eager"), arrays)
    assert "static_shape" not in header["outputs"][0] and "static_shape_error" not in header["outputs"][0]


class _Without:
    """The reference without int_shape, or with one that raises."""

    def __init__(self, raising):
        self._raising = raising

    def __getattr__(self, name):
        if name == "int_shape":
            if not self._raising:
                raise AttributeError(name)
            return self._int_shape
        return getattr(reference, name)

    @staticmethod
    def _int_shape(x):
        raise TypeError("no static shapes here")


@pytest.mark.parametrize("raising,needle", [(False, "has no int_shape()"), (True, "TypeError: no static shapes here")])
def test_a_backend_without_a_working_int_shape_is_reported_not_failed(raising, needle):
    request = {"op": "abs", "mode": "symbolic", "args": [{"tensor": 0}], "kwargs": {}}
    header, out = _run(_Without(raising), request, [np.full((2, 3), -1.0, "float32")])
    assert header["status"] == "ok" and np.array_equal(out[0], np.ones((2, 3)))
    assert needle in header["outputs"][0]["static_shape_error"] and "static_shape" not in header["outputs"][0]


# -- ndim-only placeholders in the spec ----------------------------------------------------------------------
def test_ndim_only_inputs_become_ndim_placeholders(spec):
    (case,) = [c for c in cases_for(spec, "batch_dot") if c.id == "every_dim_unknown"]
    assert [a.get("ph_ndim") for a in case.args[:2]] == [True, True] and "ph_shape" not in case.args[0]
    assert case.static_names == {"x": [None] * 3, "y": [None] * 3}
    (case,) = [c for c in cases_for(spec, "batch_dot") if c.id == "none_batch_dim"]
    assert case.static_names == {"x": [None, 3, 5], "y": [None, 5, 2]}
    (case,) = [c for c in cases_for(spec, "batch_dot") if c.id == "rank3_default_axes"]
    assert case.static_names == {}


def test_ndim_only_with_none_dims_is_refused():
    entry = {"signature": [{"name": "x", "kind": "tensor"}]}
    raw = {"id": "bad", "inputs": [{"shape": [2, 3], "ndim_only": True, "none_dims": [0]}]}
    problems = binding.problems("abs", entry, raw)
    assert any("ndim_only makes every dim None" in str(p) for p in problems)


# -- end to end: a backend whose static shapes are wrong -----------------------------------------------------
LOSSY_BACKEND = """
from kbtool.reference import *  # noqa
from kbtool.reference import int_shape as _int_shape


def int_shape(x):
    shape = _int_shape(x)
    # loses the last dim of every rank-2 result (the placeholders themselves keep theirs)
    if shape is not None and len(shape) == 2 and getattr(x, "fn", None) is not None:
        return shape[:1] + (None,)
    return shape
"""


def test_check_fails_a_backend_that_loses_a_static_dim(tmp_path, monkeypatch):
    (tmp_path / "fbk_lossy_shapes.py").write_text(LOSSY_BACKEND)
    monkeypatch.chdir(tmp_path)
    env = {"KBTOOL_HOME": str(tmp_path / "home"), "PYTHONPATH": os.pathsep.join([REPO, str(tmp_path)])}
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()
    args = ["check", "--op", "transpose", "--backend", "fbk_lossy_shapes", "--mode", "symbolic", "--json"]
    result = runner.invoke(main, args, env=env)
    assert result.exit_code == 1, result.stderr
    results = {r["case"]: r for r in json.loads(result.stdout)["results"]}
    failed = [r for r in results.values() if r["status"] == "fail"]
    assert failed and all(r["message"].startswith("static shape (") for r in failed)
    assert all("static_shape" in r["details"] and "predicted_static_shape" in r["details"] for r in failed)
    # a rank-3 result keeps its dims: it passes
    assert any(r["status"] == "pass" for r in results.values())


# -- NaN and inf where the reference has other values: the message and the details say so -------------------
@pytest.mark.parametrize(
    "exp,act,needles,non_finite",
    [
        ([1.0, 1.5], [1.0, np.nan], ["max abs diff nan", "first at (1,): nan vs reference 1.5"], 1),
        ([2.0, 1.5], [3.0, np.inf], ["max abs diff inf", "the first inf where the reference is 1.5 at (1,)"], 1),
        (
            [np.inf, 1.5],
            [-np.inf, np.nan],
            ["max abs diff nan", "first at (0,): -inf vs reference inf", "2 of them non-finite"],
            2,
        ),
        ([1.0, 1.5], [1.0, 2.5], ["max abs diff 1,"], None),
    ],
)
def test_non_finite_differences_are_said_not_hidden_as_zero(exp, act, needles, non_finite):
    from kbtool.reports.summary import details_text
    from kbtool.verdicts import values

    verdict = values.compare_value(np.array(exp, "float32"), np.array(act, "float32"), {})
    assert not verdict.passed and "max abs diff 0" not in verdict.message
    assert all(n in verdict.message for n in needles), verdict.message
    details = verdict.details.as_dict()
    assert details.get("non_finite") == non_finite
    if non_finite:
        assert f"{non_finite} of them NaN or inf" in details_text(details)
    json.dumps(details, allow_nan=False)
