"""`kbtool report judge REPORT.json [--known FILE]`: a stored report (JSON or gzipped) judged again against a known
file, as check judges its own results; a CPU record carries over to a device's same failure. No backend runs."""

import gzip
import json

from click.testing import CliRunner

from kbtool.cli import main
from kbtool.known import fingerprint
from kbtool.reports.load import read_report
from tests.helpers import available, make_report, record

WRONG = "2 of 6 values differ (max abs diff 0.5, rtol 1e-05, atol 1e-06); first at (0, 0): 1.5 vs reference 1.0"
OTHER = "6 of 6 values differ (max abs diff 3, rtol 1e-05, atol 1e-06); first at (0, 0): 4.0 vs reference 1.0"


def report_file(tmp_path, results, name="r.json", zipped=False):
    data = json.dumps(make_report([available("keras3-jax")], results)).encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if zipped else data)
    return str(path)


def known_file(tmp_path):
    fp = fingerprint.of_result(record("dot", "float64", "keras3-jax", "fail", message=WRONG))
    path = tmp_path / "known.yaml"
    path.write_text(
        "- op: dot\n  case: float64\n  backend: keras3-jax\n  status: fail\n  reason: planted here\n  count: 1\n"
        f'  results:\n    "dot float64 keras3-jax eager": {json.dumps(fp)}\n'
    )
    return str(path)


def judge(*args):
    # the planted file alone: the shipped file records some of the same results (a second record would collide)
    extra = ["--no-shipped-known"] if "--known" in args else []
    result = CliRunner().invoke(main, ["report", "judge", *args, *extra])
    return result.exit_code, result.stdout, result.stderr


def test_a_stored_report_is_judged_against_the_known_file_it_is_given(tmp_path):
    results = [
        record("dot", "size_one", "keras3-jax", "pass"),
        record("dot", "float64", "keras3-jax", "fail", message=WRONG),
    ]
    path, known = report_file(tmp_path, results), known_file(tmp_path)
    code, out, err = judge(path, "--known", known, "-o", str(tmp_path / "j.json"))
    judged = read_report(str(tmp_path / "j.json"))
    assert code == 0 and judged["summary"]["ok"]
    assert [r.get("known") for r in judged["results"]] == [None, "planted here"]
    assert judged["judged_from"]["file"] == path and judged["known_files"][-1]["path"].endswith("known.yaml")
    assert err.strip().endswith(f"judged {path}: 2 results, 1 pass, 1 known, 0 unexplained (0 changed); ok")
    # without the known file's entry the failure is unexplained: exit 1, the JSON on stdout
    empty = tmp_path / "empty.yaml"
    empty.write_text("[]\n")
    code, out, err = judge(path, "--known", str(empty))
    assert code == 1 and json.loads(out)["summary"]["ok"] is False and "1 unexplained" in err


def test_a_failure_that_differs_from_its_record_is_changed(tmp_path):
    path = report_file(tmp_path, [record("dot", "float64", "keras3-jax", "error", message="ValueError: boom")])
    code, out, err = judge(path, "--known", known_file(tmp_path))
    (result,) = json.loads(out)["results"]
    assert code == 1 and result["status"] == "changed" and result["changed"]["entry"] == 1
    assert "1 unexplained (1 changed)" in err


def test_a_gzipped_gpu_report_inherits_the_cpu_record(tmp_path):
    same = record("dot", "float64", "keras3-jax", "fail", message=WRONG, device="gpu")
    other = record("dot", "rank3_rank3", "keras3-jax", "fail", message=OTHER, device="gpu")
    path = report_file(tmp_path, [same], name="gpu.json.gz", zipped=True)
    code, out, _ = judge(path, "--known", known_file(tmp_path))
    assert code == 0 and json.loads(out)["results"][0]["known"] == "planted here"
    path = report_file(tmp_path, [same, other], name="gpu2.json.gz", zipped=True)
    code, out, _ = judge(path, "--known", known_file(tmp_path))
    assert code == 1 and [r.get("known") for r in json.loads(out)["results"]] == ["planted here", None]


def test_a_report_that_cannot_be_read_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(b"\x1f\x8b not gzip at all")
    code, out, err = judge(str(bad))
    assert code == 2 and "not a readable gzip file" in err and len(err.strip().splitlines()) == 1
    code, out, err = judge(str(tmp_path / "missing.json"))
    assert code == 2 and "cannot read report" in err and len(err.strip().splitlines()) == 1
