"""Device differences named (kbtool/reports/device_differences.py): a device result is classified tf32 when it is a
matmul or convolution that differs in its values only, its error fits the TF32 bound (2^-10 + k(n) eps32) x M, and
the same call passes at --precision highest; `kbtool report judge --highest` does it. A report of another spec (the
H100 reports of main 2938746, trimmed in tests/fixtures/gpu_h100/) is judged by the entries it carries, whose records
are of the first fingerprint format, with the known file's device entries. No backend runs."""

import gzip
import json
import os

import pytest
from click.testing import CliRunner

from kbtool import known, paths
from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.known import fingerprint
from kbtool.reports import device_differences as dd
from kbtool.reports.load import read_report
from kbtool.results import Result, Status
from tests.helpers import record

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "gpu_h100")
GPU = os.path.join(FIXTURES, "gpu-default.json.gz")
HIGHEST = [os.path.join(FIXTURES, name) for name in ("jaxgpu-highest.json.gz", "torchgpu-highest.json.gz")]


def judge(*args):
    extra = ["--no-shipped-known"] if "--known" in args else []  # the given file instead of the shipped one
    result = CliRunner().invoke(main, ["report", "judge", *args, *extra])
    return result.exit_code, result.stderr


def shipped_without_device_entries(tmp_path):
    """The shipped known file with its device entries left out (the file before they were recorded)."""
    text = open(paths.known_differences_file(), encoding="utf-8").read()
    kept = [block for block in text.split("\n- ") if "\n  device: gpu\n" not in block]
    path = tmp_path / "known.yaml"
    path.write_text("\n- ".join(kept))
    assert len(known.load(str(path))) == len(known.load(paths.known_differences_file())) - 2
    return str(path)


def test_the_h100_report_leaves_only_its_device_differences_unexplained_each_classified(tmp_path):
    out = tmp_path / "judged.json"
    code, err = judge(
        GPU,
        *[a for h in HIGHEST for a in ("--highest", h)],
        "--known",
        str(shipped_without_device_entries(tmp_path)),
        "-o",
        str(out),
    )
    judged = read_report(str(out))
    unexplained = [r for r in judged["results"] if r["status"] != "pass" and not r.get("known")]
    # the trimmed report holds all 45 results the GPU computes otherwise than the CPU, and 69 others the CPU's
    # records (of the first fingerprint format, in the entries the report carries) explain
    assert len(judged["results"]) == 114 and len(unexplained) == 45
    assert {r["device"] for r in unexplained} == {"gpu"}
    kinds = [r["device_difference"]["kind"] for r in unexplained]
    # the torch highest run stopped before 4 of the calls: they fit the bound, unconfirmed
    assert kinds.count("tf32") == 41 and kinds.count("tf32-unconfirmed") == 4
    for r in unexplained:
        found = r["device_difference"]
        assert "tf32" in json.dumps(r) and found["default"]["max_abs_diff"] <= found["bound"]
        assert (found["highest"] is None) == (found["kind"] == "tf32-unconfirmed")
    assert code == 1 and "45 unexplained (0 changed), 41 classified tf32, 4 classified tf32-unconfirmed" in err
    assert "entries it carries" in judged["known_file"]["path"]


def test_the_shipped_device_entries_explain_them(tmp_path):
    out = tmp_path / "judged.json"
    judge(GPU, "--highest", HIGHEST[1], "-o", str(out))
    judged = read_report(str(out))
    assert [r for r in judged["results"] if r["status"] != "pass" and not r.get("known")] == []
    assert {r["known"][:5] for r in judged["results"] if r.get("device_difference")} == {"TF32:"}


def test_without_highest_nothing_is_classified(tmp_path):
    out = tmp_path / "judged.json"
    judge(GPU, "-o", str(out))
    assert not any(r.get("device_difference") for r in read_report(str(out))["results"])


def test_highest_takes_only_a_highest_precision_report(tmp_path):
    code, err = judge(GPU, "--highest", GPU)
    assert code == 2 and "takes a report of a --precision highest run; this one ran at default" in err


class Magnitudes:
    def __init__(self, largest=10.0, n=16):
        self.found = dd.Magnitude(largest=largest, n=n)

    def __call__(self, op, case):
        return self.found


def gpu_result(op="conv2d", error=0.002, shape=(2, 3), dtype="float32", status=Status.FAIL, device="gpu"):
    details = {
        "expected_shape": list(shape),
        "actual_shape": list(shape),
        "expected_dtype": "float32",
        "actual_dtype": dtype,
        "max_abs_diff": error,
    }
    return Result(op, "case", "keras3-torch", "eager", status, "values differ", details=details, device=device)


PASSED = {"status": "pass", "margin": 0.1}


@pytest.mark.parametrize(
    "result, highest, largest, kind",
    [
        (gpu_result(), PASSED, 10.0, "tf32"),
        (gpu_result(), None, 10.0, "tf32-unconfirmed"),
        # beyond (2^-10 + k eps32) M: not TF32's rounding
        (gpu_result(error=0.02), PASSED, 10.0, None),
        (gpu_result(), PASSED, 1.0, None),
        # it does not vanish at highest precision
        (gpu_result(), {"status": "fail"}, 10.0, None),
        # not a matmul or convolution, not a values-only difference, on the CPU, not a failure
        (gpu_result(op="softmax"), PASSED, 10.0, None),
        (gpu_result(dtype="float16"), PASSED, 10.0, None),
        (gpu_result(device="cpu"), PASSED, 10.0, None),
        (gpu_result(status=Status.ERROR), PASSED, 10.0, None),
    ],
)
def test_tf32_classification(result, highest, largest, kind):
    found = dd.tf32_difference(result, highest, Magnitudes(largest=largest))
    assert (found or {}).get("kind") == kind
    if found:
        assert found["bound"] == pytest.approx((2**-10 + (4 + 16**0.5) * 2**-23) * largest, rel=1e-2)


def test_a_device_difference_that_is_not_tf32_stays_unexplained(tmp_path):
    data = json.load(gzip.open(GPU))
    target = next(r for r in data["results"] if r["op"] == "conv3d" and r["case"] == "dilated")
    target["details"]["max_abs_diff"] = 1.0  # far beyond the TF32 bound of its magnitude
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "judged.json"
    judge(str(path), "--highest", HIGHEST[1], "--known", shipped_without_device_entries(tmp_path), "-o", str(out))
    same = [r for r in read_report(str(out))["results"] if r["op"] == "conv3d" and r["case"] == "dilated"]
    assert [r.get("device_difference") for r in same if r["mode"] == target["mode"]] == [None]
    assert all(not r.get("known") for r in same)


def test_the_magnitude_is_the_references_for_the_case():
    found = dd.MagnitudeLookup()("dot", "rank3_rank3")
    assert found is not None and found.n >= 1 and found.largest > 0
    assert dd.MagnitudeLookup()("dot", "no_such_case") is None and dd.MagnitudeLookup()("no_such_op", "x") is None


def test_a_first_format_record_holds_for_the_same_result():
    result = record("abs", "float64", "keras3-jax", "fail", message="dtype float32 != reference float64 (values agree)")
    result["details"] = {"expected_dtype": "float64", "actual_dtype": "float32"}
    first = "fail | dtype float32 != reference float64 (values agree) | ? float32 != float64"
    assert fingerprint.of_first_format("fail", result["message"], result["details"]) == first
    assert fingerprint.holds_for(first, result) and fingerprint.holds_for(fingerprint.of_result(result), result)
    other = dict(result, details={"expected_dtype": "float64", "actual_dtype": "int32"})
    assert not fingerprint.holds_for(first, other)


def entry(**extra):
    base = {"op": "conv2d", "backend": "keras3-torch", "device": "gpu", "status": "fail", "reason": "TF32 here"}
    return known.numbered([dict(base, **extra)])


def test_an_entry_about_one_precision_targets_no_result_of_another():
    result = gpu_result()
    applied = known.apply([result], entry(precision="default"), precision="highest")
    assert result.known is None and applied.counts == []
    applied = known.apply([result], entry(precision="default"), precision="default")
    assert result.known == "TF32 here"


def test_precision_must_be_a_known_one():
    problems = known.validate([dict(entry()[0].to_dict(), precision="tf32", count=0)])
    assert any("precision must be one of default, highest, not 'tf32'" in p for p in problems)
    with pytest.raises(KbtoolError):
        dd.highest_results([("r.json", {"plan": {}, "results": []})])


CPU = os.path.join(FIXTURES, "cpu.json.gz")


def devices(*args):
    result = CliRunner().invoke(main, ["report", "devices", *args])
    return result.exit_code, result.stdout, result.stderr


def test_report_devices_names_what_the_gpu_computes_otherwise(tmp_path):
    code, out, err = devices(CPU, GPU, *[a for h in HIGHEST for a in ("--highest", h)], "--json")
    comparison = json.loads(out)
    assert code == 0 and comparison["ok"] and comparison["compared"] == 114
    assert {k: n for k, n in comparison["counts"].items() if n} == {
        "tf32": 41,
        "tf32-unconfirmed": 4,
        "passes on device": 9,
    }
    first = next(c for c in comparison["changes"] if c["kind"] == "tf32")
    assert first["cpu"]["status"] == "pass" and first["device"]["max_abs_diff"] <= first["device_difference"]["bound"]
    # the views: one line per change, then the counts; a Markdown table
    code, out, _ = devices(CPU, GPU)
    assert out.splitlines()[-1].endswith("54 differ (45 tf32-unconfirmed, 9 passes on device); ok")
    md = tmp_path / "devices.md"
    assert devices(CPU, GPU, "-o", str(md))[0] == 0
    assert md.read_text().count("| tf32-unconfirmed |") == 45


def test_a_device_failure_no_kind_names_exits_1(tmp_path):
    data = json.load(gzip.open(GPU))
    target = next(r for r in data["results"] if r["op"] == "conv3d" and r["case"] == "dilated")
    target["details"]["max_abs_diff"] = 1.0
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(data))
    code, out, _ = devices(CPU, str(path), "--highest", HIGHEST[1])
    assert code == 1 and "conv3d dilated on keras3-torch (" in out and ": device only;" in out
    assert out.splitlines()[-1].endswith("not ok: a device difference no kind names")


@pytest.mark.parametrize(
    "args, message",
    [
        ((GPU, GPU), "the first report must be the CPU's run"),
        ((CPU, CPU), "the second report must be a device's run"),
        ((CPU, GPU, "-o", "out.html"), "the comparison is written as .json or .md"),
    ],
)
def test_report_devices_refuses_in_one_line(args, message):
    code, _, err = devices(*args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_report_devices_never_writes_over_a_report_it_compares(tmp_path):
    cpu = tmp_path / "cpu.json"
    cpu.write_bytes(gzip.decompress(open(CPU, "rb").read()))
    before = cpu.read_bytes()
    code, _, err = devices(str(cpu), GPU, "-o", str(cpu))
    assert code == 2 and "is also an input of this command" in err and cpu.read_bytes() == before
