"""`kbtool report render | merge | diff`, and `kbtool check --shard / --status / --last-failed / --strict`.

Fast tests run the numpy backend (or a custom module on kbtool's Python) and synthetic reports; the last test
shards two ops over every installed backend (marked `backends`).
"""

import json
import os
import shutil

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.reports import merge as merge_mod
from kbtool.reports import report as report_mod
from kbtool.reports import verdict, view
from kbtool.reports.diff import diff

from .helpers import synthetic

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS = ["abs", "mean", "softmax", "conv2d", "reshape", "exp"]
FORMATS = ("json", "md", "html", "xml")


class Ran:
    def __init__(self, code, stdout, stderr):
        self.code, self.stdout, self.stderr = code, stdout, stderr


def kbtool(*args, home):
    """The CLI in this process (the spec loads once) with KBTOOL_HOME in `home` (where last-report.json goes)."""
    env = {"PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    if home is not None:  # None: the caller's home, where the backends' environments are
        env["KBTOOL_HOME"] = str(home)
    result = CliRunner().invoke(main, [str(a) for a in args], env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


def check(known_file, *args, home):
    """`kbtool check ARGS --no-shipped-known --known KNOWN_FILE` (the file's entries alone)."""
    return kbtool("check", *args, "--no-shipped-known", "--known", known_file, home=home)


def key(record):
    return record["op"], record["case"], record["backend"], record["mode"]


def verdicts(report):
    """Each result's op, case, backend, mode → (status, known): what a merge must reproduce."""
    return [(key(r), r["status"], r.get("known")) for r in report["results"]]


def read(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def small_known(tmp_path_factory):
    """A known-differences file of one entry (the reference has no autodiff): a check reads it in milliseconds,
    where the shipped file is validated against the whole spec first (seconds)."""
    path = tmp_path_factory.mktemp("known") / "known.yaml"
    path.write_text(
        "- op: [abs, mean, exp]\n  backend: numpy\n  case: grad*\n  status: unsupported\n"
        "  reason: the reference has no autodiff\n  count: 3\n"
    )
    return str(path)


# ---------------------------------------------------------------------------- synthetic reports


ROWS = [
    ("abs", "a", "numpy", "eager", "pass", 0.1),
    ("abs", "a", "numpy", "symbolic", "pass", 0.1),
    ("abs", "b", "numpy", "eager", "unsupported", 0.1, "no autodiff"),
    ("mean", "a", "numpy", "eager", "pass", 0.2),
    ("mean", "b", "numpy", "eager", "pass", 0.2),
]
ENTRIES = [
    {"op": ["abs"], "backend": "numpy", "case": "b", "status": "unsupported", "reason": "no autodiff", "count": 1},
    {"op": ["mean"], "backend": "numpy", "case": "b", "status": "fail", "reason": "gone", "count": 1},
]


def write(tmp_path, name, report):
    path = tmp_path / name
    path.write_text(json.dumps(report, indent=2))
    return str(path)


# ---------------------------------------------------------------------------- real numpy runs


@pytest.fixture(scope="module")
def numpy_runs(tmp_path_factory):
    """OPS on numpy with a known-differences file of two entries (one explains the gradient cases, one is stale):
    the unsharded run (-o in every format) and its three shards, each with its exit code and stderr."""
    folder = tmp_path_factory.mktemp("numpy_runs")
    known_file = folder / "known.yaml"
    known_file.write_text(
        "- op: [abs, mean, softmax, conv2d, reshape, exp]\n  backend: numpy\n  case: grad*\n  status: unsupported\n"
        "  reason: the reference has no autodiff\n  count: 5\n"
        "- op: [mean]\n  backend: numpy\n  case: axis*\n  match: never seen\n  reason: a stale entry\n  count: 1\n"
    )
    common = sum([["--op", op] for op in OPS], []) + [
        "--backend",
        "numpy",
        "--no-shipped-known",
        "--known",
        str(known_file),
    ]
    whole = kbtool("check", *common, *sum([["-o", folder / ("whole." + ext)] for ext in FORMATS], []), home=folder)
    shards = [
        kbtool("check", *common, "--shard", f"{k}/3", "-o", folder / f"shard{k}.json", home=folder) for k in (1, 2, 3)
    ]
    return folder, whole, shards


def test_the_unsharded_numpy_run_judges_its_known_differences(numpy_runs):
    folder, whole, _ = numpy_runs
    report = read(folder / "whole.json")
    assert whole.code == 1  # the stale entry
    assert [e["reason"] for e in report["stale_known_differences"]] == ["a stale entry"]
    assert sum(1 for r in report["results"] if r.get("known")) >= 5
    assert report["plan"]["all_cases"] and report["plan"]["shard"] is None
    (known_file,) = report["known_files"]
    assert known_file["path"] == str(folder / "known.yaml") and len(known_file["sha256"]) == 64
    assert len(report["spec"]["sha256"]) == 64
    assert [(ref["file"], ref["entry"]) for ref in report["known_refs"]][-2:] == [
        (known_file["path"], 1),
        (known_file["path"], 2),
    ]
    assert "known_entries" not in report  # referenced, not embedded (check --embed-known embeds them)


def test_each_shard_says_its_share_and_judges_no_staleness(numpy_runs):
    folder, whole, shards = numpy_runs
    total = read(folder / "whole.json")["spec"]["cases"]
    counts = []
    for k, ran in enumerate(shards, 1):
        report = read(folder / f"shard{k}.json")
        assert "kbtool: shard {}/3: {} of {} cases, about".format(k, report["spec"]["cases"], total) in ran.stderr
        assert report["plan"]["shard"] == {"index": k, "count": 3} and not report["plan"]["all_cases"]
        assert report["stale_known_differences"] == [] and ran.code == 0
        assert f"--shard {k}/3" in report["filters"]
        counts.append(report["spec"]["cases"])
    assert sum(counts) == total and max(counts) - min(counts) <= total // 3


def test_three_numpy_shards_merge_into_the_unsharded_run(numpy_runs, tmp_path):
    folder, whole, _ = numpy_runs
    parts = [folder / f"shard{k}.json" for k in (3, 1, 2)]  # any order
    ran = kbtool("report", "merge", *parts, "-o", tmp_path / "all.json", "-o", tmp_path / "all.md", home=tmp_path)
    merged, unsharded = read(tmp_path / "all.json"), read(folder / "whole.json")
    assert verdicts(merged) == verdicts(unsharded)
    assert merged["stale_known_differences"] == unsharded["stale_known_differences"]
    assert merged["known_differences"] == unsharded["known_differences"]
    assert merged["summary"]["per_backend"] == unsharded["summary"]["per_backend"]
    assert merged["plan"] == unsharded["plan"] and merged["filters"] == unsharded["filters"] == []
    assert merged["spec"]["cases"] == unsharded["spec"]["cases"]
    assert ran.code == whole.code == 1 and "merged 3 reports" in ran.stderr
    assert merged["wall_seconds"] == max(p["wall_seconds"] for p in merged["merged_from"])
    assert [p["shard"]["index"] for p in merged["merged_from"]] == [3, 1, 2]
    assert report_mod.validate(merged) == []


def test_two_of_three_shards_merge_without_judging_staleness(numpy_runs, tmp_path):
    folder, _, _ = numpy_runs
    ran = kbtool("report", "merge", folder / "shard1.json", folder / "shard2.json", home=tmp_path)
    merged = json.loads(ran.stdout)  # no -o: the JSON on stdout
    assert ran.code == 0 and merged["stale_known_differences"] == [] and not merged["plan"]["all_cases"]
    assert merged["filters"] == ["--shard 1/3", "--shard 2/3"]


@pytest.mark.parametrize("ext", FORMATS)
def test_render_reproduces_the_files_check_wrote(numpy_runs, tmp_path, ext):
    folder, _, _ = numpy_runs
    target = tmp_path / ("again." + ext)
    ran = kbtool("report", "render", folder / "whole.json", "-o", target, home=tmp_path)
    assert ran.code == 0, ran.stderr
    assert target.read_bytes() == (folder / ("whole." + ext)).read_bytes()


def test_render_of_a_merge_reproduces_its_files(numpy_runs, tmp_path):
    folder, _, _ = numpy_runs
    kbtool(
        "report",
        "merge",
        *[folder / f"shard{k}.json" for k in (1, 2, 3)],
        "-o",
        tmp_path / "m.json",
        "-o",
        tmp_path / "m.html",
        home=tmp_path,
    )
    kbtool("report", "render", tmp_path / "m.json", "-o", tmp_path / "r.json", "-o", tmp_path / "r.html", home=tmp_path)
    for ext in ("json", "html"):
        assert (tmp_path / ("r." + ext)).read_bytes() == (tmp_path / ("m." + ext)).read_bytes()


def test_diff_of_a_run_with_itself_is_empty(numpy_runs, tmp_path):
    folder, _, _ = numpy_runs
    ran = kbtool("report", "diff", folder / "whole.json", folder / "whole.json", home=tmp_path)
    assert ran.code == 0 and "no difference" in ran.stdout
    ran = kbtool("report", "diff", folder / "whole.json", folder / "whole.json", "--json", home=tmp_path)
    found = json.loads(ran.stdout)
    assert ran.code == 0 and found["worse"] is False and found["results"] == [] and found["backends"] == []


def test_merge_refuses_overlapping_shards_and_a_file_given_twice(numpy_runs, tmp_path):
    folder, _, _ = numpy_runs
    copy = tmp_path / "copy.json"
    shutil.copy(folder / "shard1.json", copy)
    ran = kbtool("report", "merge", folder / "shard1.json", copy, home=tmp_path)
    assert ran.code == 2 and f"shard1.json and {copy} both hold" in ran.stderr and "overlap" in ran.stderr
    ran = kbtool("report", "merge", folder / "shard1.json", folder / "shard1.json", home=tmp_path)
    assert ran.code == 2 and "given twice" in ran.stderr


@pytest.mark.parametrize(
    "field, value, says",
    [
        ("seed", 7, "different seeds (0 vs 7)"),
        ("spec", None, "different specs"),
        ("grid", "full", "different grids (pairwise vs full)"),
        ("keras_config", None, "different --keras-config (none vs floatx=float64)"),
        ("known_files", None, "applied different known files"),
        ("device", "gpu", "different devices (cpu vs gpu)"),
        ("precision", "highest", "different precisions (default vs highest)"),
    ],
)
def test_merge_refuses_reports_of_different_runs(numpy_runs, tmp_path, field, value, says):
    folder, _, _ = numpy_runs
    other = read(folder / "shard2.json")
    if field == "spec":
        other["spec"]["sha256"] = "0" * 64
    elif field == "keras_config":
        other["keras_config"]["override"] = {"floatx": "float64"}
    elif field == "known_files":
        other["known_files"][0]["sha256"] = "0" * 64
    elif field in ("device", "precision"):  # --device gpu, --precision highest: said in the plan
        other["plan"][field] = value
    else:
        other[field] = value
    path = write(tmp_path, "other.json", other)
    ran = kbtool("report", "merge", folder / "shard1.json", path, home=tmp_path)
    assert ran.code == 2 and ran.stderr.count("\n") == 1, ran.stderr
    assert f"shard1.json and {path} come from {says}" in ran.stderr or (
        field == "known_files" and says in ran.stderr and "other.json" in ran.stderr
    )


def test_merge_refuses_an_interrupted_report_unless_allowed(numpy_runs, tmp_path):
    folder, _, _ = numpy_runs
    cut = read(folder / "shard2.json")
    cut["incomplete"] = {"signal": "SIGINT", "note": "interrupted by SIGINT", "planned": 99, "ran": 3}
    path = write(tmp_path, "cut.json", cut)
    ran = kbtool("report", "merge", folder / "shard1.json", path, home=tmp_path)
    assert ran.code == 2 and "interrupted" in ran.stderr and "--allow-incomplete" in ran.stderr
    ran = kbtool("report", "merge", folder / "shard1.json", path, "--allow-incomplete", home=tmp_path)
    merged = json.loads(ran.stdout)
    assert ran.code == 1 and "cut.json" in merged["incomplete"]["note"] and not merged["summary"]["ok"]


def test_merge_refuses_a_report_without_what_merge_needs(numpy_runs, tmp_path):
    folder, _, _ = numpy_runs
    old = read(folder / "shard2.json")
    del old["plan"], old["known_refs"]
    path = write(tmp_path, "old.json", old)
    ran = kbtool("report", "merge", folder / "shard1.json", path, home=tmp_path)
    assert ran.code == 2 and "lacks plan, known_entries" in ran.stderr


# ---------------------------------------------------------------------------- merge: synthetic


def test_merge_of_backends_run_apart_judges_as_one_run():
    rows_tf = [(op, case, "tensorflow", mode, "pass", s) for op, case, _, mode, _, s in ROWS[:2]]
    numpy_part = synthetic(ROWS, entries=ENTRIES)
    tf_part = synthetic(rows_tf, entries=ENTRIES, ops=["abs", "mean"])
    together = synthetic(ROWS + rows_tf, entries=ENTRIES, backends=["numpy", "tensorflow"])
    merged = merge_mod.merge([("numpy.json", numpy_part), ("tf.json", tf_part)])
    assert verdicts(merged) == verdicts(together)
    assert merged["stale_known_differences"] == together["stale_known_differences"] != []
    assert [b["name"] for b in merged["backends"]] == ["numpy", "tensorflow"] and merged["plan"]["all_cases"]


def test_merge_judges_a_changed_result_again_from_its_own_status():
    recorded = {"abs b numpy eager": "unsupported | an older message"}  # the run recorded another message
    entries = [dict(ENTRIES[0], results=recorded)]
    parts = [
        synthetic(ROWS[:3], entries=entries, shard=(1, 2), ops=["abs", "mean"]),
        synthetic(ROWS[3:], entries=entries, shard=(2, 2), ops=["abs", "mean"]),
    ]
    assert [r["status"] for r in parts[0]["results"]][2] == "changed"
    merged = merge_mod.merge([("1.json", parts[0]), ("2.json", parts[1])])
    (changed,) = [r for r in merged["results"] if r.get("changed")]
    assert changed["status"] == "changed" and changed["changed"]["status"] == "unsupported"
    assert changed["changed"]["now"] == "unsupported | no autodiff"
    assert (
        merged["summary"]["divergences"] == 1 and not merged["summary"]["ok"] and not merged["stale_known_differences"]
    )
    fixed = [dict(ENTRIES[0], results={"abs b numpy eager": "unsupported | no autodiff"})]
    parts = [synthetic(ROWS[:3], entries=fixed, shard=(1, 2), ops=["abs", "mean"]), parts[1]]
    parts[1]["known_entries"] = parts[0]["known_entries"]
    assert merge_mod.merge([("1.json", parts[0]), ("2.json", parts[1])])["summary"]["ok"]


def test_merge_refuses_the_same_backend_at_two_versions():
    a = synthetic(ROWS[:2], versions={"numpy": {"numpy": "1.0"}}, shard=(1, 2), ops=["abs", "mean"])
    b = synthetic(ROWS[3:], versions={"numpy": {"numpy": "2.0"}}, shard=(2, 2), ops=["abs", "mean"])
    with pytest.raises(KbtoolError, match="a.json and b.json ran numpy at different versions"):
        merge_mod.merge([("a.json", a), ("b.json", b)])


def test_merge_drops_and_reapplies_known_difference_notes():
    part = synthetic(ROWS, entries=ENTRIES)
    part["results"][2]["known"] = "a stale verdict from elsewhere"
    part["results"][2]["note"] = (
        "from tf_keras.src.backend; known-difference entry 3: its match regex timed out "
        "after 1 s on this message (taken as no match; later messages not searched)"
    )
    merged = merge_mod.merge([("p.json", part)])
    assert merged["results"][2]["known"] == "no autodiff"
    assert merged["results"][2]["note"] == "from tf_keras.src.backend"


# ---------------------------------------------------------------------------- diff


def test_diff_names_a_regression_and_exits_1(tmp_path):
    old = synthetic(ROWS, entries=ENTRIES)
    rows = list(ROWS)
    rows[0] = ("abs", "a", "numpy", "eager", "fail", 0.1, "values differ: max abs diff 1")
    new = synthetic(rows, entries=ENTRIES)
    ran = kbtool("report", "diff", write(tmp_path, "old.json", old), write(tmp_path, "new.json", new), home=tmp_path)
    assert ran.code == 1
    assert "abs on numpy: 1 new failure" in ran.stdout and "a (eager): pass → fail: values differ" in ran.stdout
    assert ran.stdout.strip().splitlines()[-1].startswith("worse: 1 new failure")
    back = kbtool("report", "diff", tmp_path / "new.json", tmp_path / "old.json", home=tmp_path)
    assert back.code == 0 and "1 fixed" in back.stdout and "not worse" in back.stdout


def test_diff_kinds_of_change():
    old = synthetic(ROWS + [("exp", "gone", "numpy", "eager", "pass", 0.1)], entries=ENTRIES[:1])
    rows = [r for r in ROWS if r[1] != "b" or r[0] != "abs"] + [
        ("abs", "b", "numpy", "eager", "error", 0.1, "raised"),  # known (unsupported, explained) → error
        ("sum", "new", "numpy", "eager", "pass", 0.1),
    ]
    new = synthetic(rows, entries=ENTRIES[:1], versions={"numpy": {"numpy": "2.0"}})
    found = diff(old, new, full=True)
    kinds = {(r["op"], r["case"], r["mode"]): (r["kind"], r["old"], r["new"]) for r in found["results"]}
    assert kinds == {
        ("abs", "b", "eager"): ("new_failure", "known", "error"),
        ("sum", "new", "eager"): ("new", None, "pass"),
        ("exp", "gone", "eager"): ("no_longer_run", "pass", None),
    }
    assert found["worse"] and found["counts"]["no_longer_run"] == 1
    assert found["backends"] == [
        {
            "backend": "numpy",
            "old_status": "available",
            "new_status": "available",
            "versions": {"numpy": ["1.0", "2.0"]},
            "worse": False,
        }
    ]
    assert found["known_counts"][0]["old"] == 1 and found["known_counts"][0]["new"] == 0
    assert found["new_stale"] and found["new_stale"][0]["reason"] == "no autodiff"


def test_diff_a_backend_that_no_longer_starts_is_worse():
    old = synthetic(ROWS)
    new = synthetic(ROWS)
    new["backends"][0].update(status="broken", reason="ImportError: no module")
    found = diff(old, new)
    assert found["worse"] and found["results"] == [] and found["backends"][0]["new_status"] == "broken"


def test_diff_a_changed_status_that_is_not_worse():
    old = synthetic(ROWS)
    rows = list(ROWS)
    rows[2] = ("abs", "b", "numpy", "eager", "fail", 0.1, "other")  # unsupported → fail: both unexplained
    found = diff(old, synthetic(rows))
    assert [(r["kind"], r["old"], r["new"]) for r in found["results"]] == [("changed", "unsupported", "fail")]
    assert not found["worse"]


# ---------------------------------------------------------------------------- render, load errors


def test_render_json_is_the_identity_even_for_awkward_text(tmp_path):
    report = synthetic(ROWS[:2] + [("abs", "b", "numpy", "eager", "fail", 0.1, "é \udcff \x1b[31m <b>|")])
    from kbtool import reports

    source = tmp_path / "r.json"
    reports.write(report, str(source))
    ran = kbtool("report", "render", source, "-o", tmp_path / "again.json", home=tmp_path)
    assert ran.code == 0 and (tmp_path / "again.json").read_bytes() == source.read_bytes()
    ran = kbtool("report", "render", source, "--format", "json", home=tmp_path)
    assert ran.stdout == source.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "content, says",
    [
        (None, "cannot read report"),
        ("{not json", "not JSON"),
        ('{"a": 1}', "not a kbtool report"),
        ('{"schema_version": 9, "results": []}', "schema_version 9 is newer than this kbtool reads (1)"),
        ('{"schema_version": 1, "results": [{}]}', "report"),
    ],
)
def test_an_unreadable_report_is_one_line(tmp_path, content, says):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    for args in (["render", path], ["diff", path, path], ["merge", path]):
        ran = kbtool("report", *args, home=tmp_path)
        assert ran.code == 2 and says in ran.stderr and ran.stderr.count("\n") == 1, ran.stderr


# ---------------------------------------------------------------------------- --status


def test_filtered_keeps_the_summary_and_picks_results():
    report = synthetic(ROWS + [("exp", "x", "numpy", "eager", "fail", 0.1, "differs")], entries=ENTRIES[:1])
    assert view.filtered(report, ()) is report
    cases = lambda *s: [(r["op"], r["case"]) for r in view.filtered(report, s)["results"]]  # noqa: E731
    assert cases("fail") == [("exp", "x")]
    assert cases("known") == [("abs", "b")] and cases("unsupported") == []  # explained: `known`, not its status
    assert cases("unexplained") == [("exp", "x")]
    assert len(cases("pass", "fail")) == 5
    shown = view.filtered(report, ("fail",))
    assert shown["summary"] is report["summary"] and len(report["results"]) == 6
    with pytest.raises(KbtoolError, match="unknown --status nope"):
        view.filtered(report, ("nope",))


def test_render_status_filters_the_terminal_only(tmp_path):
    report = synthetic(ROWS + [("exp", "x", "numpy", "eager", "fail", 0.1, "differs")], entries=ENTRIES[:1])
    path = write(tmp_path, "r.json", report)
    ran = kbtool("report", "render", path, "--status", "fail", home=tmp_path)
    assert ran.code == 0 and "exp" in ran.stdout and "mean" not in ran.stdout
    assert "showing 1 of 6 results" in ran.stderr
    ran = kbtool("report", "render", path, "--status", "fail", "-o", tmp_path / "r.md", home=tmp_path)
    assert ran.code == 2 and "terminal view only" in ran.stderr


def test_render_quiet_and_verbose_as_check_has_them(tmp_path):
    report = synthetic(ROWS + [("exp", "x", "numpy", "eager", "fail", 0.1, "differs")], entries=ENTRIES[:1])
    path = write(tmp_path, "r.json", report)
    quiet = kbtool("report", "render", path, "-q", home=tmp_path)
    default = kbtool("report", "render", path, home=tmp_path)
    verbose = kbtool("report", "render", path, "-v", home=tmp_path)
    assert len(quiet.stdout.splitlines()) == 1 and quiet.stdout == default.stdout.splitlines(True)[-1]
    # -v: everything (the header line wraps between items at 80 columns)
    assert "created " in " ".join(verbose.stdout.splitlines()[:3]) and "created " not in default.stdout
    assert len(default.stdout.splitlines()) > 1
    ran = kbtool("report", "render", path, "-q", "-v", home=tmp_path)
    assert ran.code == 2 and "not both" in ran.stderr


def test_check_status_and_json_are_refused_together(tmp_path, small_known):
    ran = check(small_known, "--op", "abs", "--backend", "numpy", "--json", "--status", "fail", home=tmp_path)
    assert ran.code == 2 and "--status filters the terminal view" in ran.stderr


def test_check_status_shows_only_those_results_and_keeps_the_exit_code(tmp_path, small_known):
    ran = check(small_known, "--op", "abs", "--op", "mean", "--backend", "numpy", "--status", "known", home=tmp_path)
    assert ran.code == 0 and "showing 2 of" in ran.stderr
    saved = read(tmp_path / "last-report.json")
    assert len(saved["results"]) > 2  # the report itself is whole


# ---------------------------------------------------------------------------- --strict


def test_strict_fails_on_explained_unsupported_results(tmp_path, small_known):
    plain = check(small_known, "--op", "abs", "--backend", "numpy", home=tmp_path)
    strict = check(
        small_known, "--op", "abs", "--backend", "numpy", "--strict", "-o", tmp_path / "s.json", home=tmp_path
    )
    assert plain.code == 0 and strict.code == 1
    report = read(tmp_path / "s.json")
    assert report["summary"]["strict"] is True and report["summary"]["strict_failures"] == {
        "unsupported": 1,
        "unrecorded": 1,  # the file's entry was never recorded
    }
    assert "--strict: 1 unsupported result" in strict.stdout
    assert verdict.verdict_reasons(report) == [
        "--strict: 1 unsupported result",
        "--strict: 1 result explained by unrecorded known differences",
    ]


def test_strict_fails_on_results_explained_by_unrecorded_entries():
    unrecorded = synthetic(ROWS, entries=ENTRIES[:1], strict=True)
    assert unrecorded["summary"]["strict_failures"] == {"unsupported": 1, "unrecorded": 1}
    assert "--strict: 1 result explained by unrecorded known differences" in verdict.verdict_reasons(unrecorded)
    assert synthetic(ROWS, entries=ENTRIES[:1])["summary"]["ok"]  # without --strict: an unrecorded entry explains
    exact = [dict(ENTRIES[0], results={"abs b numpy eager": "unsupported | no autodiff"})]
    assert synthetic(ROWS, entries=exact, strict=True)["summary"]["strict_failures"]["unrecorded"] == 0
    clean = synthetic([r for r in ROWS if r[4] == "pass"], strict=True)
    assert clean["summary"]["ok"] and clean["summary"]["strict"] and verdict.verdict_reasons(clean) == []


# ---------------------------------------------------------------------------- --last-failed

BROKEN_ABS = """
import numpy as np
from kbtool.reference import *  # noqa
from kbtool.reference import abs as _abs
from kbtool.reference.core import op


@op
def abs(x):
    out = _abs(x)
    return out + 1 if np.asarray(x).dtype == np.float64 else out
"""
FIXED_ABS = "from kbtool.reference import *  # noqa\n"


def test_last_failed_reruns_only_what_failed(tmp_path, custom_backend, small_known):
    module = custom_backend("lfpkg", "planted", BROKEN_ABS)
    ran = check(small_known, "--op", "abs", "--op", "exp", "--backend", module, "--backend", "numpy", home=tmp_path)
    first = read(tmp_path / "last-report.json")
    failed = sorted(key(r) for r in first["results"] if r["status"] != "pass" and not r.get("known"))
    assert ran.code == 1 and all(k[2] == module for k in failed)  # abs on float64, and no autodiff (grad cases)
    assert ("abs", "float64", module, "eager") in failed and ("exp", "grad", module, "symbolic") in failed

    again = check(small_known, "--last-failed", "-o", tmp_path / "again.json", home=tmp_path)
    rerun = read(tmp_path / "again.json")
    assert again.code == 1 and sorted(key(r) for r in rerun["results"]) == failed
    assert rerun["plan"]["last_failed"] and "--last-failed" in rerun["filters"] and not rerun["plan"]["all_cases"]

    custom_backend("lfpkg", "planted", FIXED_ABS)  # abs fixed; the gradients stay unsupported
    check(small_known, "--last-failed", home=tmp_path)
    fixed = read(tmp_path / "last-report.json")
    assert sorted(key(r) for r in fixed["results"]) == failed
    assert {r["case"] for r in fixed["results"] if r["status"] != "pass"} == {"grad"}

    check(small_known, "--last-failed", home=tmp_path)  # now only the gradient cases
    assert {r["case"] for r in read(tmp_path / "last-report.json")["results"]} == {"grad"}

    check(small_known, "--op", "exp", "--backend", "numpy", home=tmp_path)
    everything = check(small_known, "--last-failed", "--op", "exp", "--backend", "numpy", home=tmp_path)
    assert "last run had no failures; running everything" in everything.stderr and everything.code == 0
    assert len(read(tmp_path / "last-report.json")["results"]) > 2


def test_last_failed_outside_the_selection_runs_the_selection(tmp_path, custom_backend, small_known):
    module = custom_backend("lfpkg2", "planted", BROKEN_ABS)
    check(small_known, "--op", "abs", "--backend", module, home=tmp_path)
    ran = check(small_known, "--last-failed", "--op", "exp", "--backend", "numpy", home=tmp_path)
    assert ran.code == 0 and "outside this selection" in ran.stderr
    assert {r["op"] for r in read(tmp_path / "last-report.json")["results"]} == {"exp"}


def test_last_failed_with_no_last_run_runs_everything_selected(tmp_path, small_known):
    ran = check(small_known, "--last-failed", "--op", "exp", "--backend", "numpy", home=tmp_path)
    assert ran.code == 0 and "no last run recorded; running everything" in ran.stderr


def test_last_failed_reruns_every_op_of_a_backend_that_could_not_start():
    from kbtool.plan import failures_of

    report = synthetic(ROWS, ops=["abs", "mean", "exp"])
    report["backends"].append({"name": "theano", "status": "broken", "reason": "died"})
    report["results"].append(dict(report["results"][0], op="conv2d", backend="tensorflow", case="a.kernel_flipped"))
    report["results"][-1].update(status="fail", repro="x")
    selection = failures_of(report)
    assert selection == {
        "numpy": {("abs", "b", "eager")},  # unsupported and not explained
        "theano": {("abs", None, None), ("mean", None, None), ("exp", None, None)},
        "tensorflow": {("conv2d", "a", "eager")},
    }  # a variant reruns with its case
    assert list(selection)[:2] == ["numpy", "theano"]  # the report's backend order


def test_last_failed_plan_runs_each_backend_only_its_failures():
    from kbtool import execute
    from kbtool.plan import Selection, make_plan
    from kbtool.specs import loader

    spec = loader.load()
    failed = {"numpy": {("abs", "float64", "eager"), ("exp", "basic", "symbolic")}}
    plan = make_plan(spec, Selection(backends=["numpy"], last_failed=failed))
    assert sorted((c.op, c.id, tuple(c.modes)) for _, c in plan.work_for("numpy")) == [
        ("abs", "float64", ("eager",)),
        ("exp", "basic", ("symbolic",)),
    ]
    assert plan.ops == ["abs", "exp"] and plan.last_failed and plan.filters == ["--last-failed"]
    assert not plan.all_cases and execute.planned_results(plan) == 2
    sharded = make_plan(spec, Selection(backends=["numpy"], last_failed=failed, shard=(2, 2)))
    assert len(sharded.work) == 1 and sharded.filters == ["--last-failed", "--shard 2/2"]
    every = make_plan(spec, Selection(ops=["abs"], backends=["numpy"], last_failed={"numpy": {("abs", None, None)}}))
    assert execute.planned_results(every) == sum(
        len(c.modes) for _, c in make_plan(spec, Selection(ops=["abs"], backends=["numpy"])).work
    )
    with pytest.raises(KbtoolError, match="nope"):
        make_plan(spec, Selection(ops=["nope"], backends=["numpy"], last_failed=failed))


def test_every_check_keeps_its_report_and_a_failure_to_keep_it_only_warns(tmp_path, small_known):
    ran = check(small_known, "--op", "exp", "--backend", "numpy", "--json", home=tmp_path)
    assert ran.code == 0 and read(tmp_path / "last-report.json") == json.loads(ran.stdout)
    blocked = tmp_path / "blocked"
    (blocked / "last-report.json").mkdir(parents=True)
    ran = check(small_known, "--op", "exp", "--backend", "numpy", home=blocked)
    assert ran.code == 0 and "warning: could not save the report for --last-failed" in ran.stderr


def test_a_corrupt_last_report_is_one_line(tmp_path, small_known, monkeypatch):
    from kbtool.reports import load

    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    here = load.last_report_path(load.run_keys()[-1])  # the last report of this directory
    os.makedirs(os.path.dirname(here))
    with open(here, "w") as fh:
        fh.write("{oops")
    ran = check(small_known, "--last-failed", "--op", "exp", "--backend", "numpy", home=tmp_path)
    assert ran.code == 2 and "not JSON" in ran.stderr and "to start afresh" in ran.stderr


# ---------------------------------------------------------------------------- real backends


@pytest.mark.backends
def test_two_shards_on_every_installed_backend_merge_into_the_unsharded_run(tmp_path):
    """conv2d (Theano's .kernel_flipped variants and the verified_by entries that need them) and mean, on every
    installed backend: --shard 1/2 and --shard 2/2 merged give the unsharded run's verdicts and stale list."""
    common = ["--op", "conv2d", "--op", "mean"]
    whole = kbtool("check", *common, "-o", tmp_path / "whole.json", home=None)
    for k in (1, 2):
        kbtool("check", *common, "--shard", f"{k}/2", "-o", tmp_path / f"s{k}.json", home=None)
    merged = kbtool(
        "report", "merge", tmp_path / "s1.json", tmp_path / "s2.json", "-o", tmp_path / "all.json", home=tmp_path
    )
    unsharded, together = read(tmp_path / "whole.json"), read(tmp_path / "all.json")
    assert len({b["name"] for b in unsharded["backends"] if b["status"] == "available"}) >= 2
    assert any(r["case"].endswith(".kernel_flipped") for r in together["results"]) or not any(
        b["name"] == "theano" and b["status"] == "available" for b in unsharded["backends"]
    )
    assert verdicts(together) == verdicts(unsharded)
    assert together["stale_known_differences"] == unsharded["stale_known_differences"]
    assert together["known_differences"] == unsharded["known_differences"]
    assert merged.code == whole.code, (merged.stderr, whole.stderr)
