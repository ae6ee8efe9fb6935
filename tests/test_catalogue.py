"""Keras 2's backend-test catalogue (specs/catalogue.yaml): every divergence that applies is found by kbtool.

Fast tests check the catalogue against the spec and the known-differences file; the `backends` test runs
each named case on its backend and requires, of every result, the documented evidence (`expect`: status, message
substrings, details).
"""

import os
import re

import pytest
import yaml

from kbtool import paths
from kbtool.specs.cases import case_ids

BACKENDS = {"tensorflow", "theano", "cntk"}
MODES = {"eager", "symbolic"}
NOT_PASS = {"fail", "error", "unsupported", "crash", "timeout", "not_reached"}
EXPECT_KEYS = {"mode", "status", "message", "details"}


@pytest.fixture(scope="module")
def catalogue():
    with open(os.path.join(paths.specs_dir(), "catalogue.yaml"), encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def known_reasons():
    with open(paths.known_differences_file(), encoding="utf-8") as f:
        return [" ".join(str(entry.get("reason", "")).split()) for entry in yaml.safe_load(f)]


def _named_case(found_by):
    op, _, case = found_by["case"].partition("/")
    return op, case


def _substrings(item):
    message = item.get("message", [])
    return [message] if isinstance(message, str) else list(message)


def _same(want, got):
    """A documented detail against a result's: numbers to 4 significant digits, lists item by item, the rest equal."""
    if isinstance(want, list):
        return isinstance(got, list) and len(want) == len(got) and all(_same(w, g) for w, g in zip(want, got))
    numbers = (int, float)
    if isinstance(want, numbers) and not isinstance(want, bool):
        return (
            isinstance(got, numbers) and not isinstance(got, bool) and abs(got - want) <= 1e-4 * max(abs(want), 1e-12)
        )
    return want == got


def evidence_problems(div_id, expect, result):
    """What in `result` (a report's result) disagrees with the documented evidence `expect`, in words."""
    items = [item for item in expect if item.get("mode", result["mode"]) == result["mode"]]
    where = "{}: {} ({})".format(div_id, result["case"], result["mode"])
    if not items:
        return [f"{where}: no documented evidence for this mode"]
    problems = []
    for item in items:
        if result["status"] != item["status"]:
            problems.append(
                "{} is {} ({}), documented {}".format(where, result["status"], result["message"], item["status"])
            )
            continue
        for needle in _substrings(item):
            if needle not in result.get("message", ""):
                problems.append("{}: message {!r} lacks {!r}".format(where, result.get("message", ""), needle))
        details = result.get("details") or {}
        for key, want in (item.get("details") or {}).items():
            if not _same(want, details.get(key)):
                problems.append(f"{where}: details {key} is {details.get(key)!r}, documented {want!r}")
    return problems


def test_every_divergence_is_complete(catalogue):
    ids = [d["id"] for d in catalogue["divergences"]]
    assert len(ids) == len(set(ids)), "duplicate ids"
    for d in catalogue["divergences"]:
        assert {"id", "test", "backends", "behaviour", "found_by"} <= set(d), d.get("id")
        assert set(d["backends"]) <= BACKENDS and d["backends"], d["id"]
        if d["found_by"] is None:
            assert d.get("why"), "{}: a divergence kbtool does not find says why".format(d["id"])
        else:
            assert d.get("evidence"), d["id"]
            assert set(d["found_by"]) in ({"case", "backend"}, {"case", "backend", "mode"}, {"known"}), d["id"]
        if d["found_by"] and "case" in d["found_by"]:
            assert d.get("expect"), "{}: a named case says what its results show (expect)".format(d["id"])
            for item in d["expect"]:
                assert set(item) <= EXPECT_KEYS and item["status"] in NOT_PASS, d["id"]
                assert item.get("mode", "eager") in MODES and _substrings(item), d["id"]
    for item in catalogue["not_applicable"]:
        assert item["test"] and item["why"]


def test_found_by_cases_exist_in_the_spec(catalogue, spec):
    for d in catalogue["divergences"]:
        found = d["found_by"] or {}
        if "case" not in found:
            continue
        op, case = _named_case(found)
        assert op in spec.ops, "{}: no op {}".format(d["id"], op)
        assert case in case_ids(spec, op), "{}: {} has no case {}".format(d["id"], op, case)
        assert found["backend"] in d["backends"], d["id"]
        assert found.get("mode", "eager") in MODES, d["id"]


def test_found_by_known_names_an_entry(catalogue, known_reasons):
    for d in catalogue["divergences"]:
        found = d["found_by"] or {}
        if "known" in found:
            pattern = re.compile(found["known"])
            assert any(pattern.search(reason) for reason in known_reasons), (
                "{}: no known difference's reason matches {!r}".format(d["id"], found["known"])
            )


def test_catalogue_finds_all_that_applies(catalogue):
    # the measure: divergences that apply and that kbtool check finds (29 of 29 since static shapes are
    # compared in symbolic mode)
    found = [d for d in catalogue["divergences"] if d["found_by"]]
    assert (len(found), len(catalogue["divergences"])) == (29, 29)


def test_evidence_is_checked_status_message_and_details():
    expect = [
        {"mode": "eager", "status": "error", "message": "ZeroDivisionError"},
        {
            "mode": "symbolic",
            "status": "fail",
            "message": ["3 of 6", "vs reference nan"],
            "details": {"actual_value": -85.1},
        },
    ]
    result = {
        "case": "c",
        "mode": "symbolic",
        "status": "fail",
        "message": "3 of 6 values differ; -85.0999 vs reference nan",
    }
    assert evidence_problems("d", expect, dict(result, details={"actual_value": -85.0999984741211})) == []
    assert evidence_problems("d", expect, dict(result, details={"actual_value": -85.2}))  # another value
    assert evidence_problems("d", expect, dict(result, message="3 of 6 values differ", details={"actual_value": -85.1}))
    assert evidence_problems("d", expect, dict(result, status="error", details={"actual_value": -85.1}))
    assert evidence_problems("d", expect, {"case": "c", "mode": "eager", "status": "error", "message": "x"})
    assert evidence_problems("d", expect[:1], result) == ["d: c (symbolic): no documented evidence for this mode"]


@pytest.mark.backends
def test_named_cases_show_their_evidence_on_their_backend(catalogue, spec):
    from kbtool.check.run import run_check
    from kbtool.plan import Selection, make_plan
    from kbtool.settings import RunSettings

    by_backend = {}
    for d in catalogue["divergences"]:
        found = d["found_by"] or {}
        if "case" in found:
            by_backend.setdefault(found["backend"], []).append((d["id"], found, d["expect"]))
    problems = []
    for backend, named in sorted(by_backend.items()):
        ops = sorted({_named_case(found)[0] for _, found, _ in named})
        cases = sorted({_named_case(found)[1] for _, found, _ in named})
        report = run_check(
            make_plan(spec, Selection(ops=ops, backends=[backend], case_patterns=cases), settings=RunSettings(seed=0))
        )
        for div_id, found, expect in named:
            op, case = _named_case(found)
            results = [
                r
                for r in report["results"]
                if r["op"] == op
                and r["case"] == case
                and r["backend"] == backend
                and r["mode"] == found.get("mode", r["mode"])
            ]
            if not results:
                problems.append("{}: no result for {} on {}".format(div_id, found["case"], backend))
            for r in results:
                problems.extend(evidence_problems(div_id, expect, r))
    assert not problems, "\n".join(problems)


# -- the worker features the catalogue's cases need ------------------------------------------------------
def test_printed_text_is_judged_by_message_and_values():
    import numpy as np

    from kbtool.worker.invoke import describe_printed

    ones = np.ones((1, 1), dtype="float32")
    assert describe_printed("msg [[1.]]\n", ones) == ("msg", "printed the 1 value(s)")
    assert describe_printed("msg [[1]]\n", ones) == ("msg", "printed the 1 value(s)")  # tf.print's format
    assert describe_printed("msg __str__ = [[1.]]\n", ones)[0] == "msg __str__ ="  # Theano's Print
    assert describe_printed("msg\n", ones)[1] == "printed 0 number(s), not the tensor's 1 value(s)"  # CNTK
    assert describe_printed("x [0.5 2.0]", np.array([0.5, 2.5]))[1].startswith("printed 2 number(s), not")


def test_reference_print_tensor_reply_carries_the_printed_text(capfd):
    import numpy as np

    from kbtool import reference
    from kbtool.worker import invoke

    request = {"op": "print_tensor", "mode": "eager", "args": [{"tensor": 0}], "kwargs": {"message": {"value": "m"}}}
    header, arrays = invoke.evaluate(reference, request, [np.array([1.5, -2.0], dtype="float32")])
    assert header["status"] == "ok" and header["sequence"]
    assert [o.get("value") for o in header["outputs"][1:]] == ["m", "printed the 2 value(s)"]
    assert capfd.readouterr().out == ""  # captured: nothing reaches the caller's stdout


def test_sparse_input_and_eval_update_on_the_reference():
    import numpy as np

    from kbtool import reference
    from kbtool.worker import invoke

    dense = np.array([[0, 2.0, 0], [0, 0, 3.0]], dtype="float32")
    for mode in ("eager", "symbolic"):
        request = {"op": "transpose", "mode": mode, "args": [{"tensor": 0, "sparse": True}], "kwargs": {}}
        header, arrays = invoke.evaluate(reference, request, [dense])
        assert header["status"] == "ok" and np.array_equal(arrays[0], dense.T)
    coo = invoke.CooMatrix(dense)
    assert coo.tocoo() is coo and np.array_equal(coo.toarray(), dense) and list(coo.data) == [2.0, 3.0]
    request = {
        "op": "update_add",
        "mode": "eager",
        "observe": "eval",
        "args": [{"tensor": 0}, {"tensor": 1}],
        "kwargs": {},
    }
    header, arrays = invoke.evaluate(reference, request, [np.ones(2, "float32"), np.full(2, 0.5, "float32")])
    assert header["status"] == "ok" and np.allclose(arrays[0], 1.5)
