"""Blind spots (`kbtool spec coverage --backend B`): documented values and pairs exercised only by results that do not
pass on a backend (kbtool/specs/coverage.py, kbtool/reports/blind_spots.py). No backend is started."""

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.reports import blind_spots as bs
from kbtool.specs import coverage
from kbtool.specs.cases import case_ids
from kbtool.specs.loader import Spec, load
from tests.helpers import available, make_report, record

OP = {
    "signature": [{"name": "x", "kind": "tensor"}, {"name": "a", "default": 1, "domain": [1, 2]}],
    "cases": [
        {"id": "one", "inputs": [{"shape": [2]}]},
        {"id": "two", "inputs": [{"shape": [2]}], "kwargs": {"a": 2}},
        {"id": "two_grad", "inputs": [{"shape": [2]}], "kwargs": {"a": 2}, "grad": True},
        {"id": "bad", "inputs": [{"shape": [2]}], "kwargs": {"a": 2}, "raises": "ValueError"},
    ],
}


def spec_of(entry):
    return Spec("x.yaml", {"docs": {}, "domains": {}, "ops": {"op": entry}})


def spots(entry, failing, modes=("eager", "symbolic"), variants=lambda op, case: ()):
    return coverage.blind_spots(spec_of(entry), failing, modes, variants)


def test_a_value_only_failing_results_exercise_is_a_blind_spot_of_that_mode():
    found = spots(OP, {("op", "two", "eager"): "fail"})
    (spot,) = found["blind_spots"]
    assert spot == {
        "op": "op",
        "values": {"a": 2},
        "mode": "eager",  # symbolic: 'two' and 'two_grad' pass there
        "kind": "real",
        "cases": [{"case": "two", "status": "fail"}],  # 'bad' expects an error: it exercises no documented value
    }
    assert (found["real"], found["unsupported"], found["ops"]) == (
        1,
        0,
        {"op": {"real": 1, "refused": 0, "unsupported": 0, "decided": 0, "broken": 0}},
    )


def test_a_passing_result_of_the_same_mode_covers_the_value():
    assert spots(OP, {("op", "two", "symbolic"): "error"})["blind_spots"] == []  # two_grad passes in symbolic
    found = spots(OP, {("op", "two", "symbolic"): "error", ("op", "two_grad", "symbolic"): "fail"})
    assert [(s["mode"], [c["case"] for c in s["cases"]]) for s in found["blind_spots"]] == [
        ("symbolic", ["two", "two_grad"])
    ]


def test_unsupported_results_make_an_unsupported_blind_spot_raises_a_refused_one_and_any_other_a_real_one():
    both = {("op", "two", "symbolic"): "unsupported", ("op", "two_grad", "symbolic"): "unsupported"}
    assert [s["kind"] for s in spots(OP, both)["blind_spots"]] == ["unsupported"]
    both[("op", "two_grad", "symbolic")] = "error"  # the backend refuses every call with the value
    assert [s["kind"] for s in spots(OP, both)["blind_spots"]] == ["refused"]
    both[("op", "two_grad", "symbolic")] = "crash"  # its worker died: no value came back either
    assert [s["kind"] for s in spots(OP, both)["blind_spots"]] == ["refused"]
    both[("op", "two_grad", "symbolic")] = "fail"
    assert [s["kind"] for s in spots(OP, both)["blind_spots"]] == ["real"]


def test_a_mode_the_backend_cannot_run_is_unsupported_and_only_where_no_other_mode_passes():
    eager_only = spots(OP, {}, modes=("eager",))
    assert eager_only["blind_spots"] == []  # a=2 passes in eager ('two')
    grad_only = dict(OP, cases=[OP["cases"][0], OP["cases"][2]])
    (spot,) = spots(grad_only, {}, modes=("eager",))["blind_spots"]
    assert (spot["mode"], spot["kind"], spot["values"]) == ("symbolic", "unsupported", {"a": 2})
    assert spot["cases"] == [{"case": "two_grad", "status": "unsupported"}]


def test_a_passing_variant_of_a_failing_case_covers_it():
    failing = {("op", "two", "eager"): "fail"}
    variants = {"two": ["two.flipped"]}
    assert spots(OP, failing, variants=lambda op, case: variants.get(case, []))["blind_spots"] == []
    failing[("op", "two.flipped", "eager")] = "fail"
    assert len(spots(OP, failing, variants=lambda op, case: variants.get(case, []))["blind_spots"]) == 1


PAIRS = {
    "signature": [
        {"name": "x", "kind": "tensor"},
        {"name": "a", "default": 1, "domain": [1, 2]},
        {"name": "b", "default": False, "domain": [True, False]},
    ],
    "cases": [
        {"id": "c11", "inputs": [{"shape": [2]}], "kwargs": {"a": 1, "b": True}},
        {"id": "c22", "inputs": [{"shape": [2]}], "kwargs": {"a": 2, "b": False}},
        {"id": "c12", "inputs": [{"shape": [2]}], "kwargs": {"a": 1, "b": False}},
        {"id": "c21", "inputs": [{"shape": [2]}], "kwargs": {"a": 2, "b": True}},
    ],
    "examples": [{"id": "doc", "case": {"inputs": [{"shape": [2]}], "kwargs": {"a": 2, "b": True}}}],
}


def test_a_pair_is_a_blind_spot_though_each_of_its_values_passes_elsewhere_and_examples_carry_their_id():
    failing = {("op", "c21", m): "fail" for m in ("eager", "symbolic")}
    assert spots(PAIRS, failing)["blind_spots"] == []  # the documented example holds a=2 × b=true and passes
    failing.update({("op", "example:doc", m): "error" for m in ("eager", "symbolic")})
    found = spots(PAIRS, failing)["blind_spots"]
    assert [(s["mode"], s["values"]) for s in found] == [
        ("eager", {"a": 2, "b": True}),
        ("symbolic", {"a": 2, "b": True}),
    ]
    assert found[0]["cases"] == [{"case": "c21", "status": "fail"}, {"case": "example:doc", "status": "error"}]


def test_a_pair_whose_value_is_already_a_blind_spot_is_not_listed_again():
    failing = {("op", c, "eager"): "fail" for c in ("c22", "c21", "example:doc")}
    found = spots(PAIRS, failing)["blind_spots"]
    assert [s["values"] for s in found] == [{"a": 2}]


def test_the_known_file_source_reads_each_entrys_recorded_results_for_the_backend():
    entries = [
        SimpleNamespace(
            status=("unsupported",),
            results={"op two tensorflow eager": "unsupported NotImplementedError", "op one theano symbolic": "x"},
        ),
        SimpleNamespace(status=None, results={"op two tensorflow symbolic": {"status": "fail"}}),
        SimpleNamespace(status=("error", "fail"), results={"op one tensorflow eager": "values differ"}),
        SimpleNamespace(status=None),  # an entry of a file recorded before `results` existed
    ]
    assert bs.known_failing(entries, "tensorflow") == {
        ("op", "two", "eager"): "unsupported",
        ("op", "two", "symbolic"): "fail",
        ("op", "one", "eager"): "known",  # no status in its fingerprint and two in the entry
    }
    with pytest.raises(KbtoolError, match="not 'op case backend mode \\[device\\]'"):
        bs.known_failing([SimpleNamespace(results={"op two tensorflow": "fail"})], "tensorflow")
    with pytest.raises(KbtoolError, match="records no entry's results"):
        bs.known_failing([SimpleNamespace(status=None), SimpleNamespace(status=("fail",))], "tensorflow")
    assert bs.known_failing([], "tensorflow") == {}


def test_the_report_source_takes_the_backends_results_that_do_not_pass():
    report = make_report(
        [available("alpha")],
        [
            record("op", "one", "alpha", "pass"),
            record("op", "two", "alpha", "unsupported", mode="symbolic"),
            record("op", "two", "beta", "fail"),
        ],
    )
    assert bs.failing_results("alpha", report) == {("op", "two", "symbolic"): "unsupported"}
    with pytest.raises(KbtoolError, match="no results for backend 'gamma'"):
        bs.failing_results("gamma", report)


# ---------------------------------------------------------------- the command


def run(*args):
    result = CliRunner().invoke(main, ["spec", "coverage", *args])
    return result.exit_code, result.output


def report_file(tmp_path, status_of):
    """A report of numpy's results for every cumsum case in both modes, each with status_of(case, mode)."""
    results = [
        record("cumsum", case, "numpy", status_of(case, mode), mode=mode)
        for case in case_ids(load(), "cumsum")
        for mode in ("eager", "symbolic")
    ]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(make_report([available("numpy")], results)))
    return str(path)


def test_cli_exit_codes_follow_the_real_blind_spots(tmp_path):
    code, out = run("--op", "cumsum", "--backend", "numpy", "--report", report_file(tmp_path, lambda c, m: "pass"))
    assert code == 0 and out.splitlines()[-1].startswith(
        "numpy: 0 blind spots (0 real, 0 refused, 0 unsupported, 0 decided, 0 broken) in 0 ops"
    )
    failing = report_file(tmp_path, lambda c, m: "fail" if m == "symbolic" else "pass")
    code, out = run("--op", "cumsum", "--backend", "numpy", "--report", failing, "--json")
    found = json.loads(out)
    assert code == 1 and found["real"] == 3 and found["unsupported"] == 0  # axis: 3 documented values
    assert {s["mode"] for s in found["blind_spots"]} == {"symbolic"}
    assert all(c["status"] == "fail" for s in found["blind_spots"] for c in s["cases"])
    assert found["backend"] == "numpy" and found["source"] == "report " + failing
    code, out = run("--op", "cumsum", "--backend", "numpy", "--report", failing)
    assert code == 1 and out.splitlines()[0] == "cumsum: 3 real, 0 refused, 0 unsupported, 0 decided, 0 broken"
    assert out.splitlines()[1].startswith("real [symbolic] cumsum: axis=")
    unsupported = report_file(tmp_path, lambda c, m: "unsupported")
    code, out = run("--op", "cumsum", "--backend", "numpy", "--report", unsupported, "--json")
    assert code == 0 and (json.loads(out)["real"], json.loads(out)["unsupported"]) == (0, 6)


def test_cli_default_source_is_the_known_file(tmp_path):
    known = tmp_path / "known.yaml"
    known.write_text("[]\n")
    code, out = run("--op", "cumsum", "--backend", "tensorflow", "--no-shipped-known", "--known", str(known), "--json")
    found = json.loads(out)
    assert code == 0 and found["blind_spots"] == [] and found["source"] == "known file " + str(known)
    # entries that record no results cannot say what fails: bad input, not a green answer
    known.write_text("- {op: cumsum, case: axis1, backend: tensorflow, reason: r, count: 1}\n")
    code, out = run("--op", "cumsum", "--backend", "tensorflow", "--no-shipped-known", "--known", str(known))
    assert code == 2 and "records no entry's results" in out and len(out.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["--backend", "jax"], "unknown backend 'jax'"),
        (["--backend", "my_pkg.mod@nowhere"], "unknown backend 'my_pkg.mod@nowhere'"),
        (["--report", "r.json"], "--report and --known need --backend"),
        (["--backend", "numpy", "--report", "missing.json"], "missing.json"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    code, out = run("--op", "cumsum", *args)
    assert code == 2 and message in out and len(out.strip().splitlines()) == 1 and "Traceback" not in out


def test_cli_a_report_without_the_backend_is_bad_input(tmp_path):
    code, out = run("--op", "cumsum", "--backend", "theano", "--report", report_file(tmp_path, lambda c, m: "pass"))
    assert code == 2 and "no results for backend 'theano'" in out


def test_cli_without_a_backend_still_reports_unexercised_values():
    code, out = run("--op", "cumsum")
    assert code == 0 and "documented values: 3 of 3 exercised" in out


def test_the_rows_carry_the_case_ids_results_carry():
    spec = load()
    for op in ("conv2d_transpose", "random_normal", "dot", "resize_images"):
        rows, _ = coverage._case_rows(spec, op, coverage.domains.all_domains(spec, op))
        ids = [case_id for case_id, _, _ in rows]
        assert ids and set(ids) <= set(case_ids(spec, op)), op
    assert any(case_id.startswith("example:") for case_id, _, _ in coverage._case_rows(spec, "dot", {})[0])


def test_a_result_failing_its_static_shape_alone_covers_its_values():
    from kbtool.reports import blind_spots

    class Entry:
        status = "fail"
        results = {
            "op two numpy symbolic": "fail | static shape (None, 3) != predicted (2, 3) (shape rule 0): dim 0 is None",
            "op one numpy symbolic": "fail | values differ | 1/2 differ, max 1e0, first (0), mask 1 | (2) float32",
        }

    assert blind_spots.known_failing([Entry()], "numpy") == {("op", "one", "symbolic"): "fail"}
    report = {
        "results": [
            {
                "op": "op",
                "case": "two",
                "backend": "numpy",
                "mode": "eager",
                "status": "fail",
                "message": "static shape x",
            },
            {
                "op": "op",
                "case": "one",
                "backend": "numpy",
                "mode": "eager",
                "status": "fail",
                "message": "1 of 2 values",
            },
        ]
    }
    assert blind_spots.report_failing(report, "numpy") == {("op", "one", "eager"): "fail"}


def test_a_result_whose_values_or_statistics_agree_covers_its_values():
    """A shape or dtype difference with every value compared and agreeing (or a random op's statistics measured and
    agreeing) covers the values it exercised: a wrong value there changes the fingerprint (planted faults `masked`)."""
    from kbtool.reports import blind_spots

    dtype_only = (
        "fail | dtype float32 != reference float64; values agree | shape (2) | dtype float32!=float64 | values: agree"
    )
    two_outputs = (
        "fail | output 0: dtype; output 1: values differ | output 0: shape (2) | dtype float32!=float64 | values: agree"
        " | output 1: shape (2) | dtype float32 | values: 1/2 differ mask 00000001 1e0 @ (1)"
    )
    drawn = "fail | dtype float32 != reference float64 (statistics agree) | dtype float32!=float64"
    drawn_off = "fail | dtype float32 != reference float64 (statistics also differ: stddev) | dtype float32!=float64"

    class Entry:
        status = ["fail", "crash"]
        results = {
            "op a numpy eager": dtype_only,
            "op b numpy eager": two_outputs,
            "op c numpy eager": drawn,
            "op d numpy eager": drawn_off,
            "op e numpy eager": [dtype_only, "crash | the worker died"],  # one of its ways compares nothing
            "op f numpy eager": [dtype_only, dtype_only.replace("float64", "int64")],
        }

    assert blind_spots.known_failing([Entry()], "numpy") == {
        ("op", "b", "eager"): "fail",
        ("op", "d", "eager"): "fail",
        ("op", "e", "eager"): "fail",
    }
    assert blind_spots.values_agree(dtype_only) and not blind_spots.values_agree("error | TypeError: x")
    report = {
        "results": [
            {
                "op": "op",
                "case": case,
                "backend": "numpy",
                "mode": "eager",
                "status": "fail",
                "message": message,
                "details": details,
            }
            for case, message, details in (
                (
                    "a",
                    "dtype float32 != reference float64; values agree",
                    {"values": "agree", "actual_dtype": "float32", "expected_dtype": "float64"},
                ),
                (
                    "b",
                    "2 of 2 values differ (max abs diff 1, rtol 1e-05, atol 1e-06)",
                    {
                        "values": "differ",
                        "mismatched": 2,
                        "size": 2,
                        "max_abs_diff": 1.0,
                        "first_index": [0],
                        "mask": "00000003",
                    },
                ),
            )
        ]
    }
    assert blind_spots.report_failing(report, "numpy") == {("op", "b", "eager"): "fail"}
