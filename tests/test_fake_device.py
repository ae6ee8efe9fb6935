"""Every device rule without a GPU: a custom module on kbtool's own Python that declares its devices
(`KBTOOL_DEVICES`, read without importing it) runs on them, and tests/fixtures/tf32_backend.py is such a module, a
fake GPU: the NumPy reference with TF32 dot and convolutions on KBTOOL_DEVICE=gpu at the default precision, softmax
biased on the GPU at every precision (a device difference that is not TF32) and softsign scaled everywhere.

Through it: a known difference recorded on the CPU explains the same failure on the GPU and `kbtool known record` of
the GPU's run writes nothing for it; the GPU's own (TF32) failures are unexplained until `known record` of the GPU's
run writes device keys for them alone; the non-TF32 difference stays unexplained; `--jobs 2` runs two workers on the
fake GPU with the results of one. The workers run on kbtool's own Python with NumPy: no backend env is needed."""

import json
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from kbtool import files
from kbtool.check.run import run_check
from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.execute import execute_plan
from kbtool.plan import Selection, Sources, make_plan
from kbtool.runners import base, custom
from kbtool.settings import RunSettings
from tests.fixtures import tf32_backend

FAKE = "tests.fixtures.tf32_backend"
# the reference differentiates symbolic graphs of placeholders only: a spec's grad case is `unsupported` on it (and
# so on the fake) in symbolic mode, on every device alike
GRAD_ENTRY = """- op: [{ops}]
  case: "grad*"
  backend: {fake}
  status: unsupported
  reason: the reference differentiates symbolic graphs of placeholders only
"""
TF32_ENTRY = """- op: [dot, softsign]
  backend: {fake}
  match: values differ
  reason: the fake GPU rounds dot's inputs to TF32; softsign is scaled on every device
"""
EVERYWHERE_ENTRY = """- op: softsign
  backend: {fake}
  match: values differ
  reason: the fake scales softsign on every device
"""


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private kbtool home (the last report, keras.json folders) for the checks of one test."""
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    return tmp_path


def check(tmp_path, name, *args, known_file=None):
    """`kbtool check` of the fake backend; (exit code, output, the JSON report)."""
    report = tmp_path / f"{name}.json"
    if known_file is None:
        known_file = tmp_path / "empty.yaml"
        known_file.write_text("[]\n")
    out = run("check", "--backend", FAKE, "--known", str(known_file), "-o", str(report), *args)
    return out.exit_code, out.output, json.loads(report.read_text())


def failing(report, op=None, status=None):
    """The results of `report` that do not pass (of `op`, with `status`, when given)."""
    return [
        r
        for r in report["results"]
        if r["status"] != "pass" and op in (None, r["op"]) and status in (None, r["status"])
    ]


def keys(text, number=None):
    """The recorded result keys of a known-differences file's text (of its entry `number` alone, from 1, if given)."""
    entries = files.parse_yaml("known.yaml", text)[1]
    chosen = entries if number is None else [entries[number - 1]]
    return sorted(key for entry in chosen for key in (entry.get("results") or {}))


# ---------------------------------------------------------------------------- declaring devices


@pytest.mark.parametrize(
    "source, devices",
    [
        ('KBTOOL_DEVICES = ("cpu", "gpu")\n', ("cpu", "gpu")),
        ("from typing import Tuple\nKBTOOL_DEVICES: Tuple[str, ...] = ['gpu', 'cpu', 'gpu']\n", ("gpu", "cpu")),
        ("X = 1\n", ()),
        ("def f():\n    return {'KBTOOL_DEVICES': 1}\n", ()),  # no assignment to the name: the CPU only
    ],
)
def test_a_declaration_is_read_from_the_source_without_importing_the_module(custom_backend, source, devices):
    # the module raises when imported: reading its declaration must not import it
    name = custom_backend("declares", "mod", "raise RuntimeError('imported')\n" + source)
    assert custom.declared_devices(name) == devices
    assert name not in sys.modules


@pytest.mark.parametrize(
    "source, problem",
    [
        ("DEVICES = ('cpu',)\nKBTOOL_DEVICES = DEVICES\n", "is not a literal tuple of device names"),
        ("KBTOOL_DEVICES = tuple(['cpu', 'gpu'])\n", "is not a literal tuple of device names"),
        ("KBTOOL_DEVICES = ()\n", "is not a literal tuple of device names"),
        ("KBTOOL_DEVICES = 'gpu'\n", "is not a literal tuple of device names"),
        ("KBTOOL_DEVICES = ('cpu', 'tpu')\n", "names 'tpu', no device kbtool knows"),
        (
            "import os\nif os.environ:\n    KBTOOL_DEVICES = ('gpu',)\n",
            "must be assigned once, at the module's top level",
        ),
        ("KBTOOL_DEVICES = ('cpu',)\nKBTOOL_DEVICES += ('gpu',)\n", "must be assigned once, at the module's top level"),
        ("KBTOOL_DEVICES = X = ('gpu',)\n", "must be assigned once, at the module's top level"),
    ],
)
def test_a_declaration_kbtool_cannot_read_is_a_one_line_error(custom_backend, source, problem):
    name = custom_backend("declares", "bad", source)
    with pytest.raises(KbtoolError) as caught:
        custom.declared_devices(name)
    message = str(caught.value)
    assert message.startswith(f"custom module {name} (") and problem in message and "\n" not in message
    assert "KBTOOL_DEVICES = ('cpu', 'gpu')" in message  # what to write instead


def test_the_declared_devices_are_honoured_and_an_undeclared_module_stays_on_the_cpu(home, custom_backend, spec):
    code, _, report = check(home, "gpu", "--op", "abs", "--device", "gpu", "--mode", "eager")
    assert code == 0 and report["backends"][0]["device"] == "gpu" and report["plan"]["device"] == "gpu"
    assert report["results"] and all(r["device"] == "gpu" for r in report["results"])
    _, _, on_cpu = check(home, "cpu", "--op", "abs", "--mode", "eager")
    assert on_cpu["backends"][0]["device"] == "cpu" and all(r["device"] == "cpu" for r in on_cpu["results"])
    # the same module without the declaration runs on the CPU only, and says so under --device gpu
    plain = custom_backend("undeclared", "ref", "from kbtool.reference import *  # noqa\n")
    out = run("check", "--backend", plain, "--op", "abs", "--device", "gpu")
    assert out.exit_code == 2 and len(out.output.strip().splitlines()) == 1
    assert "runs on the CPU only in kbtool unless it declares KBTOOL_DEVICES = ('cpu', 'gpu')" in out.output
    plan = make_plan(spec, Selection(ops=["abs"], backends=[plain]))
    assert plan.backends[0].launch.devices == {} and "KBTOOL_DEVICE" not in plan.backends[0].launch.env


def test_a_declaration_kbtool_cannot_read_stops_the_check_in_one_line(home, custom_backend):
    name = custom_backend("declares", "computed", "KBTOOL_DEVICES = tuple(['cpu', 'gpu'])\n")
    out = run("check", "--backend", name, "--op", "abs")
    assert out.exit_code == 2 and len(out.output.strip().splitlines()) == 1
    assert out.output.startswith(f"kbtool: error: custom module {name} (") and "not a literal tuple" in out.output


# ---------------------------------------------------------------------------- the fake GPU itself


def test_tf32_keeps_ten_mantissa_bits_rounding_to_nearest_even():
    one = np.float32(1.0)
    ulp = np.float32(2.0**-10)  # TF32's step at 1
    values = np.array([1 + 2.0**-11, 1 + 3 * 2.0**-11, 1 + 2.0**-11 + 2.0**-20, -(1 + 2.0**-12), np.inf], np.float32)
    rounded = tf32_backend.to_tf32(values)
    assert rounded.dtype == np.float32 and rounded.shape == values.shape
    # a tie goes to the even neighbour (1, then 1 + 2 ulp); above the tie, up; below, down; inf stays
    assert rounded.tolist() == [one, one + 2 * ulp, one + ulp, -one, np.inf]
    assert np.isnan(tf32_backend.to_tf32(np.array([np.nan], np.float32)))[0]
    assert tf32_backend.to_tf32(np.array([1 + 2.0**-11])).dtype == np.float64  # float64 is left alone
    assert tf32_backend.to_tf32(np.float32(1 + 2.0**-11)).shape == ()


# ---------------------------------------------------------------------------- known differences across devices


def test_a_cpu_record_explains_the_same_failure_on_the_gpu_and_no_device_key_is_written(home):
    known_file = home / "known.yaml"
    known_file.write_text((GRAD_ENTRY + EVERYWHERE_ENTRY).format(fake=FAKE, ops="softsign"))
    code, _, cpu = check(home, "cpu", "--op", "softsign", known_file=known_file)
    assert code == 0 and failing(cpu, "softsign")  # the regex explains the CPU's failures
    recorded = run("known", "record", str(home / "cpu.json"), "--known", str(known_file))
    assert recorded.exit_code == 0, recorded.output
    cpu_keys = keys(known_file.read_text())
    assert cpu_keys and len(cpu_keys) == len(failing(cpu)) and not any(k.endswith(" gpu") for k in cpu_keys)
    code, output, gpu = check(home, "gpu", "--op", "softsign", "--device", "gpu", known_file=known_file)
    assert code == 0, output
    assert failing(gpu, status="fail") and all(r["known"] for r in failing(gpu))  # by the CPU's keys
    before = known_file.read_text()
    again = run("known", "record", str(home / "gpu.json"), "--known", str(known_file))
    assert again.exit_code == 0 and again.output.endswith("already current\n"), again.output
    assert known_file.read_text() == before


def test_the_gpus_tf32_failures_are_unexplained_until_known_record_writes_device_keys_for_them_alone(home):
    known_file = home / "known.yaml"
    known_file.write_text((GRAD_ENTRY + TF32_ENTRY).format(fake=FAKE, ops="dot, softsign, softmax"))
    ops = ["--op", "dot", "--op", "softsign", "--op", "softmax"]
    code, _, cpu = check(home, "cpu", *ops, known_file=known_file)
    assert code == 0 and not failing(cpu, "dot", "fail") and not failing(cpu, "softmax", "fail")
    assert run("known", "record", str(home / "cpu.json"), "--known", str(known_file)).exit_code == 0
    cpu_keys = keys(known_file.read_text())
    assert {k.split(" ")[0] for k in keys(known_file.read_text(), 2)} == {"softsign"}  # dot passes on the CPU
    # on the GPU: softsign is explained by the CPU's record; dot's TF32 failures and softmax's bias are not
    code, _, gpu = check(home, "gpu", *ops, "--device", "gpu", known_file=known_file)
    assert code == 1
    unexplained = {r["op"] for r in failing(gpu) if not r.get("known")}
    assert unexplained == {"dot", "softmax"} and all(r["known"] for r in failing(gpu, "softsign"))
    recorded = run("known", "record", str(home / "gpu.json"), "--known", str(known_file))
    assert recorded.exit_code == 0, recorded.output
    gpu_keys = sorted(set(keys(known_file.read_text())) - set(cpu_keys))
    tf32 = sorted("{op} {case} {backend} {mode} gpu".format(**r) for r in failing(gpu, "dot", "fail"))
    assert gpu_keys == tf32  # a device key for each TF32 failure, none for softsign (the CPU's record holds)
    assert set(keys(known_file.read_text())) >= set(cpu_keys)  # the CPU's record is kept
    code, output, again = check(home, "gpu2", *ops, "--device", "gpu", known_file=known_file)
    # the non-TF32 device difference stays unexplained: no entry names softmax
    assert code == 1 and "softmax" in output
    assert {r["op"] for r in failing(again) if not r.get("known")} == {"softmax"}
    # on the CPU the device keys are not about its results: the file still judges a CPU run clean
    code, output, _ = check(home, "cpu2", *ops, known_file=known_file)
    assert code == 0, output


def test_the_non_tf32_difference_holds_at_the_highest_precision_where_tf32_is_gone(home):
    ops = ["--op", "dot", "--op", "conv2d", "--op", "softmax", "--mode", "eager"]
    _, _, default = check(home, "default", *ops, "--device", "gpu")
    _, _, highest = check(home, "highest", *ops, "--device", "gpu", "--precision", "highest")
    _, _, cpu = check(home, "cpu", *ops)
    assert failing(default, "dot") and failing(default, "conv2d") and failing(default, "softmax")
    assert not failing(highest, "dot") and not failing(highest, "conv2d")  # no TF32 at --precision highest
    assert len(failing(highest, "softmax")) == len(failing(default, "softmax")) > 0  # not TF32: it stays
    assert failing(cpu) == []  # on the CPU the fake is the reference (softsign, its everywhere difference, not run)


# ---------------------------------------------------------------------------- several workers on one device


def fake_gpu_run(spec, jobs):
    plan = make_plan(
        spec,
        Selection(ops=["dot", "softmax", "conv1d"], backends=[FAKE]),
        settings=RunSettings(device="gpu", jobs=jobs),
        sources=Sources(),
    )
    (planned,) = plan.backends
    infos, results = execute_plan(plan, min_join_seconds=0)  # every slot joins the one backend
    return planned.launch, infos[0], results


def test_jobs_2_runs_two_workers_on_the_fake_gpu_with_the_results_of_one(spec):
    one_launch, one_info, one = fake_gpu_run(spec, 1)
    two_launch, two_info, two = fake_gpu_run(spec, 2)
    assert "workers" not in one_info and two_info["workers"] == 2
    assert one_info["device"] == two_info["device"] == "gpu"
    # each worker's share of the device's memory: all of it (0.9) for one, half each for two
    assert one_launch.env[base.MEMORY_SHARE] == "0.900" and two_launch.env[base.MEMORY_SHARE] == "0.450"

    def key(r):
        return (r.op, r.case, r.backend, r.mode, r.status, r.message, r.device)

    assert [key(r) for r in one] == [key(r) for r in two] and len(one) > 40
    assert any(r.status == "fail" for r in two)  # TF32 and the bias happened on both workers' fake GPU


def test_a_check_with_jobs_2_on_the_fake_gpu_reports_two_workers_and_the_results_of_one(home):
    # conv1d's cases run under two sets of keras.json settings (channels_last, channels_first): two lanes, and a
    # second slot always takes the lane nobody serves, so --jobs 2 starts two workers on the one device
    code, _, one = check(home, "jobs1", "--op", "conv1d", "--device", "gpu", "--jobs", "1")
    code2, _, two = check(home, "jobs2", "--op", "conv1d", "--device", "gpu", "--jobs", "2")
    assert code == code2 == 1  # TF32 fails the convolutions on the fake GPU
    assert "workers" not in one["backends"][0] and two["backends"][0]["workers"] == 2
    assert two["backends"][0]["device"] == "gpu"

    def outcome(report):
        return [(r["case"], r["mode"], r["status"], r["message"], r["device"]) for r in report["results"]]

    assert outcome(one) == outcome(two) and len(outcome(one)) > 20


def test_run_check_keeps_the_fake_gpus_device_on_every_result(spec):
    plan = make_plan(
        spec,
        Selection(ops=["batch_dot"], backends=[FAKE], modes=["symbolic"]),
        settings=RunSettings(device="gpu", jobs=1),
    )
    report = run_check(plan, known_entries=[])
    assert report["results"] and all(r["device"] == "gpu" for r in report["results"])
    assert failing(report, "batch_dot")  # TF32 reaches the symbolic mode too (the inputs are rounded when fed)


def test_report_judge_highest_names_the_fake_gpus_tf32_differences_and_only_them(home):
    """The TF32 classification end to end: dot's and conv2d's GPU failures fit the TF32 bound and pass at
    --precision highest (tf32); softmax's bias stays at highest (no kind: `device only` in the devices table)."""
    ops = ["--op", "dot", "--op", "conv2d", "--op", "softmax", "--mode", "eager"]
    check(home, "default", *ops, "--device", "gpu")
    check(home, "highest", *ops, "--device", "gpu", "--precision", "highest")
    check(home, "cpu", *ops)
    empty = str(home / "empty.yaml")
    judged = run(
        "report",
        "judge",
        str(home / "default.json"),
        "--highest",
        str(home / "highest.json"),
        "--known",
        empty,
        "-o",
        str(home / "judged.json"),
    )
    assert judged.exit_code == 1
    report = json.loads((home / "judged.json").read_text())
    kinds = {(r["op"], (r.get("device_difference") or {}).get("kind")) for r in failing(report)}
    assert kinds == {("dot", "tf32"), ("conv2d", "tf32"), ("softmax", None)}
    compared = run(
        "report",
        "devices",
        str(home / "cpu.json"),
        str(home / "default.json"),
        "--highest",
        str(home / "highest.json"),
        "--json",
    )
    table = json.loads(compared.output)
    assert compared.exit_code == 1 and not table["ok"]
    assert {(c["op"], c["kind"]) for c in table["changes"]} == {
        ("dot", "tf32"),
        ("conv2d", "tf32"),
        ("softmax", "device only"),
    }
