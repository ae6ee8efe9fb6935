"""Fault audit of issue #33: `kbtool known record` of an interrupted report records the op × backend pairs the run
ran whole (every case of the op in every mode) and names those it ran in part, whose records stay as they were."""

import gzip
import json
import shutil

import pytest

from kbtool import files, known, paths
from kbtool.errors import KbtoolError
from kbtool.known import record as record_mod
from kbtool.reports.report import Report
from kbtool.specs import loader

from .helpers import invoke_cli as invoke


@pytest.fixture(scope="module")
def whole_run(tmp_path_factory):
    """A real check of abs and dot on numpy (the reference's own worker: no env needed), as JSON."""
    out = tmp_path_factory.mktemp("run") / "r.json"
    result = invoke("check", "--backend", "numpy", "--op", "abs", "--op", "dot", "-q", "-o", str(out))
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(out.read_text())


def interrupted(report, drop_op="dot"):
    """`report` as a SIGTERM would have left it: half of `drop_op`'s results absent."""
    data = json.loads(json.dumps(report))
    mine = [r for r in data["results"] if r["op"] == drop_op]
    gone = {id(r) for r in mine[: len(mine) // 2]}
    data["results"] = [r for r in data["results"] if id(r) not in gone]
    data["incomplete"] = {"signal": "SIGTERM", "planned": len(report["results"]), "ran": len(data["results"])}
    data["incomplete"]["note"] = "interrupted by SIGTERM"
    data["summary"]["ok"] = False
    return data


def numpy_records(path, op):
    entries = known.numbered(files.parse_yaml(str(path), path.read_text())[1])
    return {k: v for e in entries for k, v in (e.results or {}).items() if k.startswith(op + " ") and " numpy " in k}


def test_an_interrupted_report_records_the_pairs_it_ran_whole(whole_run, tmp_path):
    report = tmp_path / "int.json"
    report.write_text(json.dumps(interrupted(whole_run)))
    mine = tmp_path / "k.yaml"
    shutil.copy(paths.known_differences_file(), mine)
    text = mine.read_text()
    # the abs record is planted out of date: recording the whole pair must rewrite it
    abs_before = numpy_records(mine, "abs")
    assert abs_before, "the shipped file records a numpy abs result"
    key = sorted(abs_before)[0]
    line = next(ln for ln in text.splitlines() if ln.strip().startswith(json.dumps(key) + ":"))
    planted = line.split(":")[0] + ': "unsupported | NotImplementedError: planted"'
    mine.write_text(text.replace(line, planted))
    assert numpy_records(mine, "abs")[key] != abs_before[key]
    dot_before = numpy_records(mine, "dot")
    result = invoke("known", "record", str(report), "--no-shipped-known", "--known", str(mine))
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip() == f"kbtool: note: {report} was interrupted; not recorded, ran in part: dot on numpy"
    assert numpy_records(mine, "dot") == dot_before  # the pair it ran in part keeps its records
    assert numpy_records(mine, "abs") == abs_before


def test_whole_pairs_names_what_ran_in_part_and_refuses_an_interrupted_run_of_another_spec(whole_run, tmp_path):
    spec = loader.load()
    data = interrupted(whole_run)
    results, skipped = record_mod.whole_pairs(Report.from_dict(data, "r"), spec)
    assert skipped == ["dot on numpy"] and {r.op for r in results} == {"abs"}
    kept, none = record_mod.whole_pairs(Report.from_dict(whole_run, "r"), spec)  # ran to the end: all of it
    assert none == [] and len(kept) == len(whole_run["results"])
    data["spec"]["sha256"] = "0" * 64
    with pytest.raises(KbtoolError, match="ran another spec"):
        record_mod.whole_pairs(Report.from_dict(data, "r"), spec)
    only_part = interrupted(dict(whole_run, results=[r for r in whole_run["results"] if r["op"] == "dot"]))
    with pytest.raises(KbtoolError, match="before any op × backend pair ran whole"):
        record_mod.whole_pairs(Report.from_dict(only_part, "r"), spec)


def test_a_gzipped_interrupted_report_is_read_too(whole_run, tmp_path):
    report = tmp_path / "int.json.gz"
    report.write_bytes(gzip.compress(json.dumps(interrupted(whole_run)).encode()))
    mine = tmp_path / "k.yaml"
    shutil.copy(paths.known_differences_file(), mine)
    result = invoke("known", "record", str(report), "--no-shipped-known", "--known", str(mine))
    assert result.exit_code == 0 and "ran in part: dot on numpy" in result.stderr
