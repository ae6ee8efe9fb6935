"""Comparison rules and known differences: what makes a result pass, fail, unsupported or explained."""
import numpy as np
import pytest

from kbtool import compare
from kbtool.check import apply_known_differences, load_known_differences
from kbtool.errors import KbtoolError
from kbtool.specs import cases as cases_mod, loader


def _reply(*values):
    return {"status": "ok", "outputs": [{"kind": "array", "index": i} for i in range(len(values))]}, list(values)


def _case(**kw):
    return cases_mod.Case(op="op", id="c", arrays=[], args=[], kwargs={}, modes=["eager"], **kw)


def test_dtype_difference_still_compares_values():
    exp = _reply(np.array([1, 2, 3], dtype="int32"))
    same = compare.compare(_case(), exp, _reply(np.array([1.0, 2.0, 3.0], dtype="float32")))
    assert same == ("fail", "dtype float32 != reference int32 (values agree)")
    status, message = compare.compare(_case(), exp, _reply(np.array([1.0, 2.0, 4.0], dtype="float32")))
    assert status == "fail" and "values also differ: 1 of 3 values differ" in message


def test_not_implemented_by_the_backend_is_unsupported_not_error():
    raised = {"status": "raised", "error": {"type": "NotImplementedError", "mro": ["NotImplementedError"],
                                            "message": ""}}
    status, message = compare.compare(_case(), _reply(np.zeros(2)), (raised, []))
    assert status == "unsupported" and message.startswith("NotImplementedError")
    other = dict(raised, error={"type": "ValueError", "mro": ["ValueError"], "message": "bad"})
    assert compare.compare(_case(), _reply(np.zeros(2)), (other, []))[0] == "error"


@pytest.mark.parametrize("want, got, ok", [
    ([None, 1e-05, None], [None, np.array(1e-05, dtype="float32"), None], True),
    ([None, 1e-05, None], [None, 1e-03, None], False),
    ([None, "float16", None], [None, "float16", None], True),
    ([[17], [53]], np.array([[17.0], [53.0]]), True),
    ([[17, 53]], np.array([[17.0], [53.0]]), False),
])
def test_doc_claims_compare_item_by_item(want, got, ok):
    assert compare._claim_matches(want, got) is ok


def _record(**kw):
    record = {"op": "sum", "case": "int32", "backend": "theano", "mode": "eager", "status": "fail",
              "message": "dtype int64 != reference int32 (values agree)"}
    record.update(kw)
    return record


def test_known_difference_globs_lists_and_status_lists():
    entry = {"op": ["mean", "sum"], "case": ["int*"], "backend": ["theano", "cntk"], "status": ["fail", "error"],
             "match": "dtype int64", "reason": "upcast"}
    explained, other_op, passing = _record(), _record(op="max"), _record(case="int64", status="pass")
    stale = apply_known_differences([explained, other_op, passing], [entry])
    assert explained["known"] == "upcast" and "known" not in other_op and "known" not in passing
    assert stale == []


def test_known_difference_that_no_longer_reproduces_is_stale():
    entry = {"op": "sum", "backend": "theano", "match": "dtype int64", "reason": "upcast"}
    record = _record(status="pass", message="")
    stale = apply_known_differences([record], [entry])
    assert len(stale) == 1 and "did not reproduce" in stale[0]["note"]


def test_broken_known_differences_file_is_one_clear_error(tmp_path):
    path = tmp_path / "known.yaml"
    path.write_text("- op: sum\n  reason: a: b\n")
    with pytest.raises(KbtoolError, match=r"known.yaml:2: not valid YAML"):
        load_known_differences(str(path))
    path.write_text("op: sum\n")
    with pytest.raises(KbtoolError, match="expected a list"):
        load_known_differences(str(path))
    path.write_text("- {op: sum, backend: theano, match: '(unclosed', reason: r}\n")
    with pytest.raises(KbtoolError, match=r"entry 1 \(sum\): match is not a valid regex"):
        load_known_differences(str(path))
    path.write_text("- {op: sum, backend: 3, reason: r}\n")
    with pytest.raises(KbtoolError, match="backend must be a glob"):
        load_known_differences(str(path))


def test_shipped_known_differences_name_real_ops_and_backends():
    spec = loader.load()
    names = set(spec.ops)
    for entry in load_known_differences():
        ops = [entry["op"]] if isinstance(entry["op"], str) else entry["op"]
        assert all(op == "*" or op in names for op in ops), entry
        assert entry["reason"].strip()


def test_layer_weights_stay_variables_in_symbolic_mode():
    spec = loader.load()
    (case, *_) = [c for c in cases_mod.cases_for(spec, "conv2d", 0) if "symbolic" in c.modes]
    data, kernel = case.args[:2]
    assert kernel.get("weight") is True and "weight" not in data


def test_an_entry_for_every_op_is_judged_stale_only_on_a_whole_spec_run():
    entry = {"op": "*", "backend": "theano", "status": "unsupported", "match": "NotImplementedError",
             "reason": "not implemented"}
    records = [_record(status="pass", message="")]
    assert apply_known_differences(records, [entry], whole_spec=False) == []
    assert len(apply_known_differences(records, [entry], whole_spec=True)) == 1


def test_seeded_random_cases_ask_for_two_draws_and_require_them_equal():
    spec = loader.load()
    (case,) = [c for c in cases_mod.cases_for(spec, "random_normal", 0) if c.id == "standard"]
    assert case.stats["reproducible"] and case.request("symbolic")["repeat"] == 2
    draw = np.random.default_rng(0).standard_normal((100, 100)).astype("float32")
    stats = {"mean": [-0.05, 0.05], "reproducible": True}
    assert compare.compare_stats(stats, [draw], [draw, draw.copy()]) == ("pass", "")
    status, message = compare.compare_stats(stats, [draw], [draw, draw + 1])
    assert status == "fail" and "not reproducible" in message and "10000 of 10000" in message
    assert compare.compare_stats(stats, [draw], [draw, draw[:5]])[0] == "fail"
