"""Every case reaches its op: a result whose case's inputs could not be made is `not_reached`, never a pass, an
error of the op or coverage; the Keras 3 harness makes inputs the way that works on the engine (an int variable is
non-trainable), so an int case reaches its op on keras3-torch."""

import json
import types
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from click.testing import CliRunner

from kbtool.reports import junit, markdown
from kbtool.reports.summary import backend_counts
from kbtool.reports.verdict import summarize, verdict_reasons
from kbtool.results import SEVERITY, SYMBOLS, Status
from kbtool.specs.coverage import _blind_spot
from kbtool.verdicts import judge
from kbtool.worker import invoke, protocol


class Boom(Exception):
    pass


def fake_backend(variable_fails=False, op_fails=False, hooks=False):
    """A backend module with variable/eval/constant, an op `double` and a `make` helper for {"call": ...} args."""
    made = []

    def variable(value, dtype=None):
        if variable_fails:
            raise Boom("cannot make an int variable")
        made.append("K.variable")
        return np.asarray(value, dtype=dtype)

    def double(x):
        if op_fails:
            raise Boom("the op itself")
        return x * 2

    def make():
        raise Boom("the helper call")

    K = types.SimpleNamespace(
        __name__="fake",
        variable=variable,
        constant=lambda value, dtype=None: np.asarray(value, dtype=dtype),
        eval=lambda x: np.asarray(x),
        double=double,
        make=make,
        made=made,
    )
    if hooks:

        def kbtool_variable(value, dtype):
            made.append("kbtool_variable")
            return np.asarray(value, dtype=dtype)

        K.kbtool_variable = kbtool_variable
        K.kbtool_eval = lambda x: np.asarray(x)
    return K


def run(K, request):
    return invoke.evaluate(K, request, [np.arange(3, dtype="int32")])


def test_a_failure_while_making_a_variable_is_not_reached():
    header, _ = run(fake_backend(variable_fails=True), {"op": "double", "args": [{"tensor": 0}]})
    assert header["status"] == protocol.NOT_REACHED
    assert header["error"]["type"] == "Boom" and "int variable" in header["error"]["message"]


def test_a_failure_in_a_call_argument_is_not_reached_and_one_in_the_op_is_raised():
    header, _ = run(fake_backend(), {"op": "double", "args": [{"call": "make"}]})
    assert header["status"] == protocol.NOT_REACHED
    header, _ = run(fake_backend(op_fails=True), {"op": "double", "args": [{"tensor": 0}]})
    assert header["status"] == protocol.RAISED and header["error"]["message"] == "the op itself"


def test_a_failure_after_the_op_is_raised_not_not_reached():
    request = {"op": "double", "args": [{"tensor": 0}], "then": [{"op": "make", "args": []}]}
    header, _ = run(fake_backend(), request)
    assert header["status"] == protocol.RAISED


def test_the_builder_uses_the_harness_hooks_where_the_module_has_them():
    K = fake_backend(hooks=True)
    header, arrays = run(K, {"op": "double", "args": [{"tensor": 0}]})
    assert header["status"] == protocol.OK and arrays[0].tolist() == [0, 2, 4]
    assert K.made == ["kbtool_variable"]
    K = fake_backend()  # a Keras 2 backend: its own K.variable is the native way
    run(K, {"op": "double", "args": [{"tensor": 0}]})
    assert K.made == ["K.variable"]


CASE = types.SimpleNamespace(raises=None, match=None, stats=None)
OK_REPLY = ({"status": "ok", "outputs": [{"kind": "python", "value": 1, "pytype": "int"}], "sequence": False}, [])


def not_reached_reply(message="cannot make it"):
    error = {"type": "RuntimeError", "mro": ["RuntimeError", "Exception"], "message": message}
    return {"status": protocol.NOT_REACHED, "error": error}, []


def test_judge_says_not_reached_for_the_backend_and_for_the_reference():
    verdict = judge(CASE, OK_REPLY, not_reached_reply())
    assert verdict.status == Status.NOT_REACHED and verdict.message == "RuntimeError: cannot make it"
    verdict = judge(CASE, not_reached_reply("ref"), OK_REPLY)
    assert verdict.status == Status.NOT_REACHED and verdict.message == "the reference: RuntimeError: ref"
    # a case that expects an error is not passed by an input that failed before the op
    raising = types.SimpleNamespace(raises="RuntimeError", match=None, stats=None)
    assert judge(raising, OK_REPLY, not_reached_reply()).status == Status.NOT_REACHED


def test_not_reached_is_a_status_with_a_symbol_and_a_severity_above_error():
    assert Status("not_reached") == Status.NOT_REACHED and SYMBOLS["not_reached"]
    assert SEVERITY.index(Status.NOT_REACHED) > SEVERITY.index(Status.ERROR) > SEVERITY.index("known")


def record(status, known=None, case="c", message="RuntimeError: x"):
    out = {"op": "sum", "case": case, "backend": "b", "mode": "eager", "status": status, "message": message}
    out.update(seconds=0.1, known=known) if known else out.update(seconds=0.1)
    return out


def report_of(results):
    report = {
        "backends": [{"name": "b", "status": "available"}],
        "results": results,
        "stale_known_differences": [],
        "known_differences": [],
    }
    report["summary"] = summarize(report)
    return report


def test_an_unexplained_not_reached_result_fails_the_gate_and_is_named():
    report = report_of([record("pass", case="a"), record("not_reached")])
    summary = report["summary"]
    assert summary["per_backend"]["b"]["not_reached"] == 1 and summary["per_backend"]["b"]["pass"] == 1
    assert not summary["ok"] and summary["divergences"] == 1
    assert verdict_reasons(report) == ["1 divergence (1 not reached)"]
    assert backend_counts(report)["b"]["unexplained"] == 1


def test_an_explained_not_reached_result_passes_the_gate_but_counts_as_not_reached_never_known():
    report = report_of([record("pass", case="a"), record("not_reached", known="int variables on torch")])
    summary = report["summary"]
    counts = summary["per_backend"]["b"]
    assert counts["not_reached"] == 1 and counts["known"] == 0
    assert summary["ok"] and summary["not_reached_explained"] == {"b": 1}
    assert backend_counts(report)["b"]["unexplained"] == 0
    report.pop("summary")  # a view computing the counts from the results says the same
    assert backend_counts(report)["b"]["unexplained"] == 0 and backend_counts(report)["b"]["not_reached"] == 1


def test_junit_says_not_reached_as_an_error():
    report = report_of([record("not_reached", message="RuntimeError: cannot")])
    report.update(created="2026-01-01T00:00:00", seed=0, wall_seconds=1.0)
    root = ET.fromstring(junit.render(report))
    errors = root.findall(".//testcase/error")
    assert [e.get("message") for e in errors] == ["not reached: RuntimeError: cannot"]


def test_markdown_names_and_counts_not_reached():
    report = report_of([record("pass", case="a"), record("not_reached")])
    report.update(created="2026-01-01T00:00:00", seed=0, wall_seconds=1.0)
    text = markdown.render(report)
    assert "not reached" in text and "1 unexplained" in text


def test_a_not_reached_result_says_nothing_of_whether_a_blind_spot_is_refused():
    cases = [{"case": "a", "status": "not_reached"}, {"case": "b", "status": "error"}]
    # judged on the results that reached the op: b raised, a never called it
    assert _blind_spot("sum", "eager", True, {"dtype": "int32"}, cases)["kind"] == "refused"
    assert _blind_spot("sum", "eager", True, {"dtype": "int32"}, cases[1:])["kind"] == "refused"
    # with no result that reached the op, nothing says the backend refuses the value
    assert _blind_spot("sum", "eager", True, {"dtype": "int32"}, cases[:1])["kind"] == "real"
    assert (
        _blind_spot("sum", "eager", True, {"dtype": "int32"}, cases + [{"case": "c", "status": "fail"}])["kind"]
        == "real"
    )


@pytest.mark.backends
def test_an_int_case_reaches_its_op_on_keras3_torch(tmp_path):
    """sum's int32 case: its input is an int variable, which keras.Variable cannot make trainable on torch."""
    from kbtool.cli import main

    out = tmp_path / "r.json"
    args = ["check", "--backend", "keras3-torch", "--op", "sum", "--case", "int32", "--mode", "eager", "-o", str(out)]
    CliRunner().invoke(main, args)
    results = json.loads(out.read_text())["results"]
    assert [r["status"] for r in results] == ["pass"], results
