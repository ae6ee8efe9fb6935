"""`kbtool report diff BASELINE RUN` as a CI gate (#33): by default only what the run ran is judged (the results both
reports hold, the backends the run names, the results only the run has), --full compares everything, two reports
that share nothing are never green, and the output keeps to the terminal's width (details in -o diff.md/json).

Synthetic reports (tests/helpers.synthetic, as `kbtool check` assembles them); no backend runs.
"""

import json
import os

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.reports.diff import diff, render_text

from .helpers import synthetic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the baseline: a whole run of two ops on two backends (`abs b` on numpy explained by the entry below)
BASELINE = [
    ("abs", "a", "numpy", "eager", "pass", 0.1),
    ("abs", "b", "numpy", "eager", "unsupported", 0.1, "no autodiff"),
    ("abs", "c", "numpy", "eager", "fail", 0.1, "unexplained before"),
    ("mean", "a", "numpy", "eager", "pass", 0.1),
    ("abs", "a", "other", "eager", "pass", 0.1),
    ("mean", "a", "other", "eager", "pass", 0.1),
]
ENTRY = {"op": ["abs"], "backend": "numpy", "case": "b", "status": "unsupported", "reason": "no autodiff", "count": 1}
PARTIAL = BASELINE[:3]  # the same abs results on numpy alone: a partial run, nothing changed


def report(rows, **kwargs):
    return synthetic(rows, entries=[ENTRY], **kwargs)


def replaced(rows, index, row):
    rows = list(rows)
    rows[index] = row
    return rows


def cli(tmp_path, old, new, *args, columns=80):
    """`kbtool report diff` on two reports written to tmp_path, with COLUMNS set."""
    paths = []
    for name, data in (("baseline.json", old), ("run.json", new)):
        (tmp_path / name).write_text(json.dumps(data))
        paths.append(str(tmp_path / name))
    env = {"COLUMNS": str(columns), "KBTOOL_HOME": str(tmp_path / "home"), "PYTHONPATH": ROOT}
    result = CliRunner().invoke(main, ["report", "diff", *paths, *map(str, args)], env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


# ---------------------------------------------------------------------------- what is compared


def test_a_partial_run_that_changed_nothing_is_not_worse_and_says_what_the_baseline_has_beyond_it(tmp_path):
    ran = cli(tmp_path, report(BASELINE), report(PARTIAL))
    assert ran.exit_code == 0, ran.output
    lines = ran.stdout.splitlines()
    assert lines == [
        "compared 3 results both ran; 3 more in the baseline, 0 more in the run",
        "not worse: no difference in the 3 results both ran",
    ]
    found = diff(report(BASELINE), report(PARTIAL))
    assert found["scope"] == {"full": False, "compared": 3, "baseline_only": 3, "run_only": 0}
    assert found["verdict"] == "not worse" and found["backends"] == [] and found["known_counts"] == []


def test_full_compares_everything_and_a_result_no_longer_run_is_worse(tmp_path):
    ran = cli(tmp_path, report(BASELINE), report(PARTIAL), "--full")
    assert ran.exit_code == 1
    assert "no longer run on other: 2 results of 2 ops: abs, mean" in ran.stdout
    assert "backend other: available → absent (no longer starts)" in ran.stdout
    assert ran.stdout.splitlines()[-2:] == [
        "compared all: 3 both ran, 3 only in the baseline, 0 only in the run",
        "worse: 3 no longer run",
    ]


@pytest.mark.parametrize(
    "index, row, kind",
    [
        (0, ("abs", "a", "numpy", "eager", "fail", 0.1, "values differ"), "pass → fail"),
        (1, ("abs", "b", "numpy", "eager", "error", 0.1, "raised"), "known → error"),  # known → unexplained
    ],
)
def test_a_shared_result_that_got_worse_fails_the_gate(tmp_path, index, row, kind):
    ran = cli(tmp_path, report(BASELINE), report(replaced(PARTIAL, index, row)))
    assert ran.exit_code == 1 and kind in ran.stdout
    assert ran.stdout.splitlines()[-1] == "worse: 1 new failure"


def test_a_shared_result_unexplained_before_and_after_is_a_change_not_worse(tmp_path):
    run = replaced(PARTIAL, 2, ("abs", "c", "numpy", "eager", "error", 0.1, "unexplained still"))
    ran = cli(tmp_path, report(BASELINE), report(run))
    assert ran.exit_code == 0 and "fail → error" in ran.stdout
    assert ran.stdout.splitlines()[-1] == "not worse: 1 changed"


def test_a_fixed_result_is_not_worse(tmp_path):
    ran = cli(tmp_path, report(BASELINE), report(replaced(PARTIAL, 2, ("abs", "c", "numpy", "eager", "pass", 0.1))))
    assert ran.exit_code == 0 and ran.stdout.splitlines()[-1] == "not worse: 1 fixed"


def test_a_result_only_in_the_run_fails_the_gate_when_unexplained_and_is_new_otherwise(tmp_path):
    passing = PARTIAL + [("abs", "new", "numpy", "eager", "pass", 0.1)]
    ran = cli(tmp_path, report(BASELINE), report(passing))
    assert ran.exit_code == 0 and ran.stdout.splitlines()[-2:] == [
        "compared 3 results both ran; 3 more in the baseline, 1 more in the run",
        "not worse: 1 new",
    ]
    failing = PARTIAL + [("abs", "new", "numpy", "eager", "fail", 0.1, "values differ")]
    ran = cli(tmp_path, report(BASELINE), report(failing))
    assert ran.exit_code == 1 and "- → fail" in ran.stdout and ran.stdout.splitlines()[-1] == "worse: 1 new failure"


def test_a_shared_backend_that_no_longer_starts_is_worse_and_one_only_in_the_baseline_is_not(tmp_path):
    run = report(PARTIAL)
    run["backends"][0].update(status="broken", reason="ImportError: no module")
    found = diff(report(BASELINE), run)
    assert found["worse"] and [c["backend"] for c in found["backends"]] == ["numpy"]  # not `other`
    assert found["backends"][0]["worse"]


def test_known_counts_are_compared_over_the_shared_results_only():
    # the baseline's stored count spans `abs b` only; a run that left it out changes no count
    assert diff(report(BASELINE), report([PARTIAL[0]]))["known_counts"] == []
    run = replaced(PARTIAL, 1, ("abs", "b", "numpy", "eager", "pass", 0.1))  # known → pass
    counts = diff(report(BASELINE), report(run))["known_counts"]
    assert [(c["reason"], c["old"], c["new"]) for c in counts] == [("no autodiff", 1, 0)]


def test_a_run_that_shares_nothing_with_the_baseline_is_one_line_and_exit_1(tmp_path):
    elsewhere = report([("abs", "a", "third", "eager", "pass", 0.1)])
    ran = cli(tmp_path, report(BASELINE), elsewhere)
    assert ran.exit_code == 1
    assert ran.stdout == "nothing compared: the run (1 result) shares none with the baseline (6)\n"
    for args in ((), ("--full",)):
        found = json.loads(cli(tmp_path, report(BASELINE), elsewhere, "--json", *args).stdout)
        assert found["verdict"] == "nothing compared" and found["worse"] and found["scope"]["compared"] == 0
    empty = synthetic([])
    assert diff(empty, empty)["verdict"] == "nothing compared"  # two empty reports: nothing was compared either


# ---------------------------------------------------------------------------- width, files


def many_changes():
    """A baseline and a run with long messages, long ids, many ops and a known entry naming many ops."""
    ops = [f"op{i:02d}" for i in range(40)]
    base = [(op, "a" * 90, "numpy", "eager", "pass", 0.1) for op in ops]
    base += [(op, "b", "numpy", "eager", "pass", 0.1) for op in ops]
    base += [(op, "b", "far", "eager", "pass", 0.1) for op in ops]
    run = [(op, "a" * 90, "numpy", "eager", "fail", 0.1, "values differ: " + "x " * 200) for op in ops]
    run += [(op, "b", "numpy", "eager", "error", 0.1, "ValueError " * 30) for op in ops]
    entry = {"op": ops, "backend": "numpy", "case": "b", "status": "error", "reason": "because " * 40, "count": 40}
    return synthetic(base, entries=[]), synthetic(run, entries=[entry])


@pytest.mark.parametrize("args", [(), ("--full",)])
def test_no_line_is_wider_than_the_terminal_and_long_lists_are_summarised(tmp_path, args):
    old, new = many_changes()
    ran = cli(tmp_path, old, new, *args)
    lines = ran.stdout.splitlines()
    assert ran.exit_code == 1 and max(len(line) for line in lines) <= 80, max(lines, key=len)
    assert "... 20 more op × backend pairs changed (-o diff.md lists them)" in lines
    assert lines[-1].startswith("worse: 40 new failures, 40 changed")
    assert len(lines) < 200  # 40 pairs of 2 long results each, and 40 pairs no longer run under --full
    narrow = render_text(diff(old, new), width=50)
    assert max(len(line) for line in narrow.splitlines()) <= 50


def test_o_writes_every_change_as_markdown_and_json(tmp_path):
    old, new = many_changes()
    md, js = tmp_path / "diff.md", tmp_path / "diff.json"
    ran = cli(tmp_path, old, new, "-o", md, "-o", js)
    assert ran.exit_code == 1 and f"wrote {md}" in ran.stderr
    text = md.read_text(encoding="utf-8")
    assert "**worse: 40 new failures, 40 changed**" in text and text.count("| new failure | op") == 40
    assert "values differ: " + "x " * 199 in text  # the whole message
    found = json.loads(js.read_text(encoding="utf-8"))
    assert found["verdict"] == "worse" and found["counts"]["new_failure"] == 40 and len(found["results"]) == 80


def test_o_of_another_extension_is_one_line_and_exit_2(tmp_path):
    ran = cli(tmp_path, report(BASELINE), report(PARTIAL), "-o", tmp_path / "diff.html")
    assert ran.exit_code == 2 and "written as .json or .md" in ran.stderr and ran.stderr.count("\n") == 1
