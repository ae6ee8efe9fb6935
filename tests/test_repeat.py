"""`--repeat N` (issue #21): each case runs N times on its worker; runs that disagree bit for bit, or where one raises
and another returns, give `nondeterministic`, never a pass or a fail by luck. Random ops are never repeated.

Custom backend modules run on kbtool's own Python (the `custom_backend` fixture puts them on PYTHONPATH)."""

import io
import json

import numpy as np
import pytest
from click.testing import CliRunner
from rich.console import Console

from kbtool import known
from kbtool.check.run import run_check
from kbtool.cli import main
from kbtool.known import fingerprint
from kbtool.plan import Selection, make_plan
from kbtool.reports import html, junit, markdown, terminal
from kbtool.reports.report import validate
from kbtool.reports.verdict import exit_code
from kbtool.results import SEVERITY, SYMBOLS, Status
from kbtool.settings import RunSettings
from kbtool.specs import loader
from kbtool.verdicts import is_random, judge_runs
from kbtool.worker import protocol

SPEC = loader.load()
# abs's eager cases: NOISY's noise shows in the float ones (special_values: on its zeros and subnormals), not the ints
NOISY_CASES = ("basic", "float64", "special_values")
INT_CASES = ("int32", "int32_min")

# abs, off by as many units in the last place as it has been called in its process: within any tolerance (a worker
# runs a few dozen calls), never the same twice (a random offset per element would repeat itself on a case of few
# finite values now and then); every finite value: NaN and inf stay as they are, as abs leaves them
NOISY = """
import numpy as np
from kbtool.reference import *  # noqa: F403
from kbtool.reference import abs as _abs
from kbtool.reference.core import op

_calls = [0]


@op
def abs(x):
    out = np.asarray(_abs(x))
    if out.dtype.kind != "f":
        return out
    _calls[0] += 1
    finite = np.isfinite(out)
    steps = np.full(out.shape, _calls[0], dtype=out.dtype)
    units = np.spacing(np.where(finite, np.maximum(np.abs(out), 1), 1).astype(out.dtype))
    return np.where(finite, out + steps * units, out).astype(out.dtype)
"""
# abs that raises on every other call
FLAKY = """
from kbtool.reference import *  # noqa: F403
from kbtool.reference import abs as _abs
from kbtool.reference.core import op

_calls = [0]


@op
def abs(x):
    _calls[0] += 1
    if _calls[0] % 2 == 0:
        raise RuntimeError("every other call")
    return _abs(x)
"""
PLAIN = "from kbtool.reference import *  # noqa: F403\n"


def invoke(*args):
    return CliRunner().invoke(main, list(args))


def reply(*values, status=protocol.OK, error=None):
    """A worker reply (header, arrays) returning `values` (arrays by index, other values inline)."""
    outputs, arrays = [], []
    for value in values:
        if isinstance(value, np.ndarray):
            outputs.append({"kind": "array", "index": len(arrays), "shape": list(value.shape)})
            arrays.append(value)
        else:
            outputs.append({"kind": "value", "value": value})
    header = {"status": status, "outputs": outputs}
    if error:
        header = {"status": protocol.RAISED, "error": {"type": error, "message": "no"}}
    return header, arrays


# ------------------------------------------------------------------------------------------- the verdict


def test_the_status_word_its_rank_and_symbol():
    assert Status.NONDETERMINISTIC.value == "nondeterministic" and str(Status.NONDETERMINISTIC) == "nondeterministic"
    ranks = [str(s) for s in SEVERITY]
    assert ranks.index("changed") < ranks.index("nondeterministic") < ranks.index("fail")
    assert SYMBOLS["nondeterministic"] == "≠"


def test_runs_that_agree_bit_for_bit_have_no_verdict_of_their_own():
    x = np.array([1.0, np.nan, -0.5], dtype="float32")
    assert judge_runs([reply(x, 3), reply(x.copy(), 3), reply(x.copy(), 3)]) is None
    assert judge_runs([reply(x)]) is None  # one run: nothing to compare
    same_error = reply(error="ValueError")
    assert judge_runs([same_error, reply(error="ValueError")]) is None


def test_values_that_differ_between_runs_are_nondeterministic_with_counts_and_the_largest_difference():
    x = np.array([1.0, 2.0, 3.0], dtype="float64")
    verdict = judge_runs([reply(x), reply(x), reply(x + [0, 1e-9, 0]), reply(x + [2e-9, 0, 0])])
    assert verdict.status == Status.NONDETERMINISTIC
    details = verdict.details.as_dict()
    assert details["runs"] == 4 and details["disagreed"] == 2
    assert details["max_abs_diff"] == pytest.approx(2e-9, rel=1e-3)
    assert verdict.message.startswith("2 of 3 repeated runs disagree with the first (4 runs): run 3 1 of 3 values")


@pytest.mark.parametrize(
    "other, words",
    [
        (reply(error="RuntimeError"), "run 2 raised RuntimeError where the first returned"),
        (reply(np.zeros((3, 1), "float32")), "shape (3, 1) where the first had (3,)"),
        (reply(np.zeros(3, "float64")), "dtype float64 where the first had float32"),
        (reply(np.zeros(3, "float32"), 1), "returned 2 outputs where the first returned 1"),
        (reply([0.0, 0.0, 0.0]), "returned list where the first returned ndarray"),
    ],
)
def test_any_other_outcome_is_a_disagreement(other, words):
    verdict = judge_runs([reply(np.zeros(3, "float32")), other])
    assert verdict.status == Status.NONDETERMINISTIC and words in verdict.message
    assert verdict.details.disagreed == 1 and verdict.details.runs == 2


def test_random_ops_are_never_repeated():
    stats_case = next(
        c for e, c in make_plan(SPEC, Selection(ops=["random_uniform"], backends=["numpy"])).work if c.stats
    )
    assert is_random(stats_case, stats_case.request("eager"), SPEC.op("random_uniform"))
    abs_case = make_plan(SPEC, Selection(ops=["abs"], backends=["numpy"])).work[0][1]
    assert not is_random(abs_case, abs_case.request("eager"), SPEC.op("abs"))


def test_the_fingerprint_keeps_the_words_not_the_numbers():
    a = "2 of 2 repeated runs disagree with the first (3 runs): run 2 5 of 12 values differ from the first run's"
    b = "2 of 2 repeated runs disagree with the first (3 runs): run 3 7 of 12 values differ from the first run's"
    one = fingerprint.of("nondeterministic", a, {"runs": 3, "disagreed": 2, "max_abs_diff": 1e-7})
    other = fingerprint.of("nondeterministic", b, {"runs": 3, "disagreed": 2, "max_abs_diff": 3e-9})
    assert one == other and "all of the repeated runs disagree" in one
    some = fingerprint.of("nondeterministic", a, {"runs": 3, "disagreed": 1})
    assert some != one and "some of the repeated runs disagree" in some


# ------------------------------------------------------------------------------------------- a check


def _check(module, repeat, known_entries=(), ops=("abs",)):
    plan = make_plan(SPEC, Selection(ops=list(ops), backends=[module], modes=["eager"]), RunSettings(repeat=repeat))
    return run_check(plan, known_entries=list(known_entries))


def test_noise_on_every_call_is_nondeterministic_under_repeat_and_passes_by_luck_without(custom_backend, tmp_path):
    module = custom_backend("noisy_rep", "kb", NOISY)
    once = _check(module, 1)
    assert {r["case"]: r["status"] for r in once["results"]} == dict.fromkeys(NOISY_CASES + INT_CASES, "pass")
    assert exit_code(once) == 0 and "repeat" not in once["plan"]
    # one run reads as before --repeat existed: no count, column or legend entry of the new status anywhere
    assert "nondeterministic" not in json.dumps(once) and "nondet" not in markdown.render(once)
    console = Console(file=io.StringIO(), width=200)
    terminal.render(once, console, verbosity=2)
    assert "nondet" not in console.file.getvalue()

    report = _check(module, 3)
    assert validate(report) == []
    by_case = {r["case"]: r for r in report["results"]}
    assert {by_case[case]["status"] for case in INT_CASES} == {"pass"}  # integers carry no noise: the same bits
    for case in NOISY_CASES:
        result = by_case[case]
        assert result["status"] == "nondeterministic" and result["repro"].endswith(" --repeat 3")
        assert result["details"]["runs"] == 3 and result["details"]["disagreed"] == 2
        assert 0 < result["details"]["max_abs_diff"] < 1e-5
    assert exit_code(report) == 1 and report["summary"]["divergences"] == 3
    assert report["plan"]["repeat"] == 3
    assert report["summary"]["per_backend"][module]["nondeterministic"] == 3

    # every view says so
    console = Console(file=io.StringIO(), width=120)
    terminal.render(report, console)
    shown = console.file.getvalue()
    assert "≠ nondeterministic" in shown and "nondet." in shown
    assert "≠ nondeterministic" in markdown.render(report) and "nondet." in markdown.render(report)
    assert 's-nondeterministic">≠' in html.render(report)
    xml = junit.render(report)
    assert xml.count('<failure message="nondeterministic: ') == 3 and "<error" not in xml


def test_a_run_that_raises_where_another_returns_is_nondeterministic(custom_backend):
    module = custom_backend("flaky_rep", "kb", FLAKY)
    report = _check(module, 2)
    statuses = {r["status"] for r in report["results"]}
    assert statuses == {"nondeterministic"}, report["results"]
    assert all("raised RuntimeError where the first returned" in r["message"] for r in report["results"])


def test_a_deterministic_backend_stays_pass_and_random_ops_are_not_repeated(custom_backend):
    module = custom_backend("plain_rep", "kb", PLAIN)
    report = _check(module, 3, ops=("abs", "random_uniform"))
    assert report["results"] and {r["status"] for r in report["results"]} == {"pass"}
    assert exit_code(report) == 0 and report["plan"]["repeat"] == 3


def test_a_known_difference_with_status_nondeterministic_explains_it_and_its_record_holds(custom_backend):
    module = custom_backend("noisy_known", "kb", NOISY)
    entry = {
        "op": "abs",
        "case": list(NOISY_CASES),
        "backend": module,
        "status": "nondeterministic",
        "reason": "adds noise on every call",
    }
    assert known.validate([entry]) == []  # a status an entry may name
    report = _check(module, 3, [entry])
    assert exit_code(report) == 0
    explained = [r for r in report["results"] if r.get("known")]
    assert len(explained) == 3 and all(r["status"] == "nondeterministic" for r in explained)
    assert report["summary"]["per_backend"][module]["known"] == 3

    # recorded (as `kbtool known record` writes it), the entry explains the next run too: its noise is other numbers
    recorded = dict(entry, count=3, results={known.result_key(r): fingerprint.of_result(r) for r in explained})
    again = _check(module, 3, [recorded])
    assert exit_code(again) == 0, [r for r in again["results"] if r["status"] != "pass"]
    assert [r["status"] for r in again["results"] if r.get("known")] == ["nondeterministic"] * 3


# ------------------------------------------------------------------------------------------- the flag


@pytest.mark.parametrize("value", ["0", "x", "-1", "1.5", "1001"])
def test_a_bad_repeat_is_one_line_and_exit_2(value):
    result = invoke("check", "--op", "abs", "--backend", "numpy", "--repeat", value)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [f"kbtool: error: --repeat takes a whole number of runs, from 1 to 1000 (got '{value}')"]


def test_the_cli_runs_repeat_and_help_says_random_ops_are_not_repeated(custom_backend, no_known, tmp_path):
    module = custom_backend("noisy_cli", "kb", NOISY)
    target = tmp_path / "r.json"
    args = ["check", "--op", "abs", "--backend", module, "--mode", "eager", "--known", no_known, "-o", str(target)]
    result = invoke(*args, "--repeat", "3")
    assert result.exit_code == 1, result.output
    report = json.loads(target.read_text())
    assert report["plan"]["repeat"] == 3 and validate(report) == []
    assert sorted(r["status"] for r in report["results"]) == ["nondeterministic"] * 3 + ["pass"] * 2
    assert invoke(*args, "--repeat", "1").exit_code == 0
    assert "repeat" not in json.loads(target.read_text())["plan"]
    help_text = " ".join(invoke("check", "--help").output.split())
    assert "--repeat N" in help_text and "Random ops are not repeated" in help_text
    assert "--repeat N" in " ".join(invoke("explore", "--help").output.split())


def test_report_merge_and_diff_keep_nondeterministic_results(custom_backend):
    from kbtool.reports import diff, merge

    module = custom_backend("noisy_merge", "kb", NOISY)
    report = _check(module, 3)
    merged = merge.merge([("a.json", report)])
    assert validate(merged) == [] and merged["plan"]["repeat"] == 3
    assert [r["status"] for r in merged["results"]] == [r["status"] for r in report["results"]]
    assert merged["summary"]["per_backend"][module]["nondeterministic"] == 3 and exit_code(merged) == 1
    once = _check(module, 1)
    changes = diff.diff(once, report)  # pass (by luck) → nondeterministic: a new failure, worse
    assert changes["worse"] and changes["counts"]["new_failure"] == 3
    assert {(row["case"], row["kind"]) for row in changes["results"]} == {(case, "new_failure") for case in NOISY_CASES}
