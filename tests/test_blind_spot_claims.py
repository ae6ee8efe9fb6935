"""Claims (kbtool/specs/coverage.py: Claim): a reference decision's `values` and a known entry's `every_call` say a
backend differs on every call holding some documented values, so a blind spot they name has no passing sibling to
find (`decided`, `broken`); a passing result of such a call contradicts the claim. No backend is started."""

import json

import pytest
from click.testing import CliRunner

from kbtool import known
from kbtool.cli import main
from kbtool.reports import blind_spots as bs
from kbtool.specs import coverage
from kbtool.specs.loader import load
from tests.test_blind_spots import PAIRS, report_file, spec_of

BOTH = ("eager", "symbolic")


def claim(values, kind="broken", modes=BOTH, op="op"):
    return coverage.Claim(kind, op, modes, values, "known entry 7")


def kinds(failing, claims, entry=PAIRS):
    found = coverage.blind_spots(spec_of(entry), failing, BOTH, claims=claims)
    return [(s["mode"], s["values"], s["kind"], s.get("by")) for s in found["blind_spots"]], found


def test_a_claim_naming_a_blind_spots_value_gives_it_the_claims_kind():
    failing = {("op", c, "eager"): "fail" for c in ("c22", "c21", "example:doc")}  # a=2 fails in eager
    assert kinds(failing, [])[0] == [("eager", {"a": 2}, "real", None)]
    assert kinds(failing, [claim({"a": [2]})])[0] == [("eager", {"a": 2}, "broken", "known entry 7")]
    assert kinds(failing, [claim({"a": [2]}, kind="decided")])[0][0][2] == "decided"
    assert kinds(failing, [claim(None)])[0][0][2] == "broken"  # every call
    # a claim about another value, another mode or another op leaves it real
    assert kinds(failing, [claim({"a": [1]})])[0][0][2] == "real"
    assert kinds(failing, [claim({"a": [2]}, modes=("symbolic",))])[0][0][2] == "real"
    assert kinds(failing, [claim({"a": [2]}, op="other")])[0][0][2] == "real"


def test_a_claim_on_two_dimensions_names_only_the_pairs_holding_both():
    failing = {("op", c, m): "fail" for c in ("c21", "example:doc") for m in BOTH}  # a=2 × b=true fails
    spots, found = kinds(failing, [claim({"a": [2]})])
    assert [s[2] for s in spots] == ["broken", "broken"]  # the pair holds a=2
    spots, found = kinds(failing, [claim({"a": [2], "b": [False]})])
    assert [s[2] for s in spots] == ["real", "real"]  # the pair holds b=true: the claim does not name it
    # c22 holds a=2 × b=false and passes: the claim is wrong, in both modes
    assert [(c["mode"], c["cases"]) for c in found["contradicted"]] == [("eager", ["c22"]), ("symbolic", ["c22"])]


def test_a_passing_call_the_claim_names_contradicts_it():
    failing = {("op", c, m): "fail" for c in ("c21", "example:doc") for m in BOTH}
    # c22 (a=2, b=false) passes in both modes, so "every call with a=2 differs" is wrong
    found = coverage.blind_spots(spec_of(PAIRS), failing, BOTH, claims=[claim({"a": [2]}, modes=("eager",))])
    assert found["contradicted"] == [
        {"op": "op", "mode": "eager", "values": {"a": [2]}, "kind": "broken", "by": "known entry 7", "cases": ["c22"]}
    ]
    failing.update({("op", "c22", "eager"): "fail"})
    found = coverage.blind_spots(spec_of(PAIRS), failing, BOTH, claims=[claim({"a": [2]}, modes=("eager",))])
    assert found["contradicted"] == [] and found["broken"] == 1
    # a mode the backend cannot run contradicts nothing
    found = coverage.blind_spots(spec_of(PAIRS), {}, ("symbolic",), claims=[claim({"a": [2]}, modes=("eager",))])
    assert found["contradicted"] == []
    lines = coverage.render_blind_spots(
        coverage.blind_spots(spec_of(PAIRS), {}, BOTH, claims=[claim(None, modes=("eager",))])
    )
    assert lines[-2].startswith("contradicted [eager] op: known entry 7 (broken) says every call with any values")
    assert lines[-1].endswith("; 1 contradicted claims, failing results from the given set")


def test_reference_decisions_with_values_claim_for_the_backends_that_differ():
    entry = dict(
        PAIRS,
        reference_decisions=[
            {"decision": "d", "evidence": "e", "differs": ["theano"]},  # no values: it names no call
            {"decision": "d", "evidence": "e", "differs": ["theano", "cntk"], "values": {"b": [True]}},
        ],
    )
    (only,) = bs.decision_claims(spec_of(entry), "cntk")
    assert (only.kind, only.op, only.modes, only.values) == ("decided", "op", BOTH, {"b": [True]})
    assert only.by == "reference decision 2 of op in the spec"
    assert bs.decision_claims(spec_of(entry), "tensorflow") == []


def test_known_entries_every_call_claims_for_each_op_and_mode_they_name():
    entries = known.numbered(
        [
            {
                "op": ["sum", "mean", "ones_like"],  # ones_like has no axis: no call of it holds one
                "backend": "cntk",
                "mode": "symbolic",
                "reason": "r",
                "every_call": {"axis": [0]},
            },
            {"op": "sum", "backend": "theano", "reason": "r", "every_call": "any"},
            {"op": "mean", "backend": "mxnet", "reason": "r", "every_call": [{"axis": [0]}, {"keepdims": [True]}]},
            {"op": "sum", "backend": "cntk", "reason": "r"},  # no claim
        ]
    )
    claims = bs.entry_claims(entries, "cntk", load())
    assert [(c.kind, c.op, c.modes, c.values, c.by) for c in claims] == [
        ("broken", "sum", ("symbolic",), {"axis": [0]}, "known entry 1"),
        ("broken", "mean", ("symbolic",), {"axis": [0]}, "known entry 1"),
    ]
    (every,) = bs.entry_claims(entries, "theano", load())
    assert (every.values, every.modes) == (None, BOTH)
    assert [c.values for c in bs.entry_claims(entries, "mxnet", load())] == [{"axis": [0]}, {"keepdims": [True]}]
    assert entries[0].to_dict()["every_call"] == {"axis": [0]}


@pytest.mark.parametrize(
    "every_call, problem",
    [
        ("all", "every_call must be 'any', a mapping"),
        ({}, "every_call must be 'any', a mapping"),
        ([], "every_call must be 'any', a mapping"),
        ([{"axis": [0]}, "x"], "every_call must be 'any', a mapping"),
        ([{"axis": [0]}, {"axis": [9]}], "every_call axis: 9 is not one of its documented values in cumsum"),
        ({"axis": []}, "must map a parameter name to a non-empty list"),
        ({"axes": [0]}, "every_call 'axes': no op of the entry documents it"),
        ({"axis": [0], "axes": [0]}, "no op of the entry documents them all"),
        ({"axis": [7]}, "every_call axis: 7 is not one of its documented values in cumsum"),
    ],
)
def test_every_call_is_held_to_the_ops_documented_values(every_call, problem):
    entry = {"op": "cumsum", "backend": "cntk", "reason": "r", "match": "x", "count": 1, "every_call": every_call}
    problems = known.validate([entry], load())
    assert len(problems) == 1 and problem in problems[0]
    assert known.validate([dict(entry, every_call={"axis": [0]})], load()) == []
    assert known.validate([dict(entry, every_call="any")], load()) == []
    assert known.validate([dict(entry, every_call=[{"axis": [0]}, {"axis": [1]}])], load()) == []


def test_a_reference_decisions_values_name_the_ops_parameters(tmp_path):
    text = open(load().path).read()
    bad = text.replace("        differs:", "        values: {no_such_parameter: [1]}\n        differs:", 1)
    path = tmp_path / "ops.yaml"
    path.write_text(bad)
    result = CliRunner().invoke(main, ["spec", "validate", str(path)])
    assert result.exit_code != 0 and "'no_such_parameter' is not a parameter of" in result.output


def run(*args):
    result = CliRunner().invoke(main, ["spec", "coverage", *args])
    return result.exit_code, result.output


def test_the_command_counts_broken_blind_spots_and_fails_on_a_contradicted_claim(tmp_path):
    failing = report_file(tmp_path, lambda c, m: "fail" if m == "symbolic" else "pass")
    known_file = tmp_path / "known.yaml"
    entry = "- {op: cumsum, backend: numpy, mode: symbolic, match: x, reason: r, count: 1, every_call: {axis: [0]}}\n"
    known_file.write_text(entry)
    code, out = run("--op", "cumsum", "--backend", "numpy", "--report", failing, "--known", str(known_file), "--json")
    found = json.loads(out)
    assert code == 1 and (found["real"], found["broken"], found["contradicted"]) == (2, 1, [])
    (broken,) = [s for s in found["blind_spots"] if s["kind"] == "broken"]
    assert broken["values"] == {"axis": 0} and broken["by"] == "known entry 1"
    # the same claim about eager, where every cumsum call passes: contradicted, and the command fails
    known_file.write_text(entry.replace("mode: symbolic", "mode: eager"))
    code, out = run("--op", "cumsum", "--backend", "numpy", "--report", failing, "--known", str(known_file))
    assert code == 1 and "contradicted [eager] cumsum: known entry 1 (broken)" in out
    passing = report_file(tmp_path, lambda c, m: "pass")
    code, out = run("--op", "cumsum", "--backend", "numpy", "--report", passing, "--known", str(known_file))
    assert code == 1 and "1 contradicted claims" in out.splitlines()[-1]
    known_file.write_text(entry)  # symbolic: every symbolic call passes too, so the claim is contradicted there
    code, out = run("--op", "cumsum", "--backend", "numpy", "--report", passing, "--known", str(known_file))
    assert code == 1 and "contradicted [symbolic]" in out


def test_the_shipped_known_file_leaves_no_real_blind_spot_and_no_contradicted_claim():
    """Issue #30's "0 real blind spots for every installed backend", on the recorded results of the last full run
    (every other result passes): each blind spot is refused, unsupported, decided or broken, and no passing result
    contradicts a claim."""
    from kbtool.runners import registry

    spec = load()
    entries = known.load(None, spec)
    for backend in registry.BUILTIN:
        failing = bs.known_failing(entries, backend)
        modes, _ = bs.backend_modes(backend)
        claims = bs.decision_claims(spec, backend) + bs.entry_claims(entries, backend, spec)
        found = coverage.blind_spots(spec, failing, modes, bs.variants_of(spec, backend), None, claims)
        real = [(s["op"], s["mode"], s["values"]) for s in found["blind_spots"] if s["kind"] == "real"]
        assert (backend, real, found["contradicted"]) == (backend, [], [])
