"""The device axis (--device cpu|gpu, --precision): recipes declare devices, the controller sets KBTOOL_DEVICE and
KBTOOL_PRECISION in those backends' workers, a backend without the device asked is listed once and never run, every
result of a backend with devices carries its device, known differences and their recorded keys know devices, and a
worker that cannot open its device is a backend that could not start, never a case error. No backend env is needed:
the backends here are custom modules on kbtool's own Python."""

import dataclasses
import json
import os

import pytest
from click.testing import CliRunner

from kbtool import files, known, reports
from kbtool.check.run import run_check
from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.known import fingerprint
from kbtool.known import record as known_record
from kbtool.plan import Selection, Sources, make_plan, resolve_backends
from kbtool.reports import report as report_mod
from kbtool.reports.verdict import exit_code
from kbtool.results import BackendStatus, Result, Status
from kbtool.runners import base, custom, pool, registry
from kbtool.runners.base import DeviceUnsupported, Launch, on_device, share_memory
from kbtool.runners.recipes import Recipe
from kbtool.runners.recipes import keras3 as keras3_engines
from kbtool.settings import RunSettings

from .helpers import available, make_report, record

# a backend module that opens "its device" at import, as the keras3 adapter does: on the GPU there is none here
GPU_AT_IMPORT = """import os
if os.environ.get("KBTOOL_DEVICE") == "gpu":
    raise RuntimeError("KBTOOL_DEVICE=gpu but no GPU is visible to jax (devices: cpu)")
if os.environ.get("KBTOOL_DEVICE") != "cpu" or os.environ.get("KBTOOL_PRECISION") != "default":
    raise RuntimeError("no KBTOOL_DEVICE/KBTOOL_PRECISION from the controller: %r" % dict(os.environ))
from kbtool.reference import *  # noqa
"""


def with_devices(launch, **devices):
    """A custom module's launch declared able to run on `devices` (name -> extra variables)."""
    return dataclasses.replace(launch, devices=devices or {"cpu": {}, "gpu": {}})


def run(*args):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


# ---------------------------------------------------------------------------- recipes and launches


def test_the_keras_2_backends_declare_no_devices_and_say_why_on_a_gpu():
    keras2 = [name for name, recipe in registry.RECIPES.items() if recipe.module != keras3_engines.ADAPTER]
    assert keras2 == ["tensorflow", "tensorflow1", "theano", "cntk", "mxnet", "plaidml", "keras3", "keras-numpy"]
    for name in keras2:
        assert registry.RECIPES[name].devices == {}, name
    # the keras3-* engines each run on the CPU; those with a GPU build in kbtool's envs on a GPU too
    devices = {name: sorted(r.devices) for name, r in registry.RECIPES.items() if name not in keras2}
    assert devices == {
        "keras3-jax": ["cpu", "gpu"],
        "keras3-torch": ["cpu", "gpu"],
        "keras3-tensorflow": ["cpu", "gpu"],
        "keras3-numpy": ["cpu"],
        "keras3-openvino": ["cpu"],
    }
    with pytest.raises(DeviceUnsupported, match="CUDA_VISIBLE_DEVICES=-1"):
        on_device(Launch("tensorflow", "py", "m", cpu_only=registry.RECIPES["tensorflow"].cpu_only), "gpu")


def test_a_launch_without_devices_is_unchanged_on_the_cpu_and_unsupported_elsewhere():
    launch = Launch("numpy", "py", "kbtool.reference", env={"A": "1"}, workers=3)
    assert on_device(launch, "cpu", "highest") is launch  # no KBTOOL_DEVICE, no device on its results
    with pytest.raises(DeviceUnsupported, match=r"runs on the CPU only in kbtool .*--device gpu does not apply"):
        on_device(launch, "gpu")


def test_a_launch_with_devices_gets_the_variables_and_the_jobs_asked_on_the_gpu(monkeypatch):
    launch = Launch("eng", "py", "m", env={"A": "1"}, workers=4, devices={"cpu": {}, "gpu": {"NO_PREALLOC": "1"}})
    cpu = on_device(launch, "cpu", jobs=2)
    assert cpu.device == "cpu" and cpu.workers == 4  # on the CPU --jobs is the pool's, not the launch's
    assert cpu.env == {"A": "1", "KBTOOL_DEVICE": "cpu", "KBTOOL_PRECISION": "default"}
    gpu = on_device(launch, "gpu", "highest", jobs=3)
    assert gpu.device == "gpu" and gpu.workers == 3  # --jobs 3, within the backend's own cap of 4
    assert gpu.env == {"A": "1", "KBTOOL_DEVICE": "gpu", "KBTOOL_PRECISION": "highest", "NO_PREALLOC": "1"}
    assert on_device(launch, "gpu", jobs=8).workers == 4  # its own cap still holds
    assert on_device(dataclasses.replace(launch, workers=None), "gpu", jobs=8).workers == 8
    # without --jobs: one per core, at most DEFAULT_GPU_WORKERS
    monkeypatch.setattr(pool, "default_jobs", lambda: 16)
    assert on_device(dataclasses.replace(launch, workers=None), "gpu").workers == base.DEFAULT_GPU_WORKERS == 4
    monkeypatch.setattr(pool, "default_jobs", lambda: 2)
    assert on_device(dataclasses.replace(launch, workers=None), "gpu").workers == 2
    assert on_device(dataclasses.replace(launch, workers=1), "gpu").workers == 1
    assert launch.env == {"A": "1"} and launch.device is None  # the original is untouched
    with pytest.raises(DeviceUnsupported, match=r"has no gpu device in kbtool \(its devices: cpu\)"):
        on_device(dataclasses.replace(launch, devices={"cpu": {}}), "gpu")


def test_each_worker_on_a_gpu_gets_its_share_of_the_memory_counted_over_every_backend(monkeypatch):
    def engine(name, workers=None, devices=("cpu", "gpu")):
        return Launch(name, "py", "m", workers=workers, devices={d: {} for d in devices})

    share = base.MEMORY_SHARE
    on_gpu = [on_device(engine("a", workers=1), "gpu", jobs=8), on_device(engine("b"), "gpu", jobs=8)]
    shared = share_memory(on_gpu, jobs=8)
    # a: 1 worker, b: up to 8, but no more than the 8 slots are alive at once: 0.9 / 8, rounded down
    assert [launch.env[share] for launch in shared] == ["0.112", "0.112"]
    assert all(launch.env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == launch.env[share] for launch in shared)
    two = share_memory([on_device(engine("a"), "gpu", jobs=2)], jobs=2)
    assert two[0].env[share] == "0.450" and two[0].workers == 2
    three = share_memory([on_device(engine(n, workers=1), "gpu", jobs=8) for n in "abc"], jobs=8)
    assert {launch.env[share] for launch in three} == {"0.300"}  # 3 workers on the one device, whatever backend
    # on the CPU nothing is shared out, and a backend without devices is left as it is
    cpu = [on_device(engine("a"), "cpu", jobs=2), Launch("numpy", "py", "kbtool.reference")]
    assert share_memory(cpu, jobs=2) == cpu
    assert all(share not in launch.env for launch in cpu)
    # JAX refuses its old and new variables together: the caller's XLA_CLIENT_MEM_FRACTION is left to rule
    monkeypatch.setenv("XLA_CLIENT_MEM_FRACTION", "0.5")
    (own,) = share_memory([on_device(engine("a"), "gpu", jobs=2)], jobs=2)
    assert own.env[share] == "0.450" and "XLA_PYTHON_CLIENT_MEM_FRACTION" not in own.env


def test_keras3_jax_keeps_jaxs_compilation_cache_in_kbtools_home_on_the_gpu_only(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    jax = registry.RECIPES["keras3-jax"]
    env = jax.devices["gpu"](str(tmp_path / "envs" / "keras3-jax"))
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "cache" / "jax")
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"  # JAX's own default: 1 s
    assert env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] == "0"
    # on the CPU a cold cache nearly doubles the whole spec's time (kbtool/runners/recipes/keras3.py)
    assert not any(k.startswith("JAX_PERSISTENT") or k == "JAX_COMPILATION_CACHE_DIR" for k in jax.devices["cpu"]("e"))
    assert jax.devices["gpu"]("e")["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    # the other engines' workers (keras3-numpy convolves with jax.lax too) keep no JAX cache of kbtool's
    for name in ("keras3-numpy", "keras3-torch", "keras3-tensorflow"):
        recipe = registry.RECIPES[name]
        variables = [recipe.env_vars("e")] + [make("e") for make in recipe.devices.values()]
        assert not any("JAX_COMPILATION_CACHE_DIR" in v for v in variables), name


def test_a_recipe_hands_its_devices_to_its_launch(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    recipe = Recipe(
        name="eng", python_version="3.11", packages=[], module="m", devices={"gpu": lambda env_dir: {"D": env_dir}}
    )
    os.makedirs(recipe.env_dir())
    (tmp_path / "envs" / "eng" / "kbtool-env.json").write_text("{}")
    launch = recipe.launch()
    assert launch.devices == {"gpu": {"D": recipe.env_dir()}} and launch.device is None
    assert on_device(launch, "gpu").env["D"] == recipe.env_dir()
    # mod@ENV runs in that env: it takes the env's devices; a module on kbtool's own Python has none
    derived = custom.launch("pkg.mod@eng", {"eng": recipe})
    assert derived.devices == launch.devices
    assert custom.launch("json.decoder", {}).devices == {}


# ---------------------------------------------------------------------------- the plan


def test_a_backend_without_the_device_is_listed_not_run_even_when_named(spec, custom_backend):
    name = custom_backend("gpumod", "kb", GPU_AT_IMPORT)

    def launcher(n):
        launch = custom.launch(n, {})
        return with_devices(launch) if n == name else launch

    cpu_only = custom_backend("cpuonly", "kb", "from kbtool.reference import *  # noqa\n")
    slots = resolve_backends([name, cpu_only], launcher, [], "gpu")
    assert [s.launch is not None for s in slots] == [True, False]
    assert slots[1].status == BackendStatus.DEVICE_UNSUPPORTED.value
    assert "custom module on kbtool's own Python runs on the CPU only" in slots[1].unavailable
    with pytest.raises(KbtoolError, match=r"^nothing to check: no backend can run here on the gpu \(cpuonly.kb: "):
        make_plan(
            spec,
            Selection(ops=["abs"], backends=[cpu_only]),
            settings=RunSettings(device="gpu"),
            sources=Sources(launcher=launcher, builtin=[]),
        )


@pytest.mark.parametrize(
    "device, precision, message",
    [
        ("tpu", "default", "--device takes one of cpu, gpu (got 'tpu')"),
        ("gpu", "exact", "--precision takes one of default, highest (got 'exact')"),
    ],
)
def test_a_plan_refuses_an_unknown_device_or_precision(spec, device, precision, message):
    with pytest.raises(KbtoolError) as caught:
        make_plan(
            spec, Selection(ops=["abs"], backends=["numpy"]), settings=RunSettings(device=device, precision=precision)
        )
    assert str(caught.value) == message


def test_a_worker_that_cannot_open_its_device_is_a_backend_that_could_not_start(spec, custom_backend):
    name = custom_backend("gpumod", "kb", GPU_AT_IMPORT)
    other = custom_backend("cpuonly", "kb", "from kbtool.reference import *  # noqa\n")

    def launcher(n):
        launch = custom.launch(n, {})
        return with_devices(launch) if n == name else launch

    plan = make_plan(
        spec,
        Selection(ops=["abs"], backends=[name, other], modes=["eager"]),
        settings=RunSettings(device="gpu", jobs=2),
        sources=Sources(launcher=launcher, builtin=[]),
    )
    report = run_check(plan, known_entries=[])
    infos = {b["name"]: b for b in report["backends"]}
    assert infos[name]["status"] == BackendStatus.BROKEN.value
    assert "KBTOOL_DEVICE=gpu but no GPU is visible to jax" in infos[name]["reason"]
    assert infos[other]["status"] == BackendStatus.DEVICE_UNSUPPORTED.value
    assert infos[name]["device"] == "gpu"
    assert report["results"] == []  # no case ran, so none is an error: the backend could not start, said once
    assert report["plan"]["device"] == "gpu" and "--device gpu" in report["filters"]
    assert not report["summary"]["ok"] and exit_code(report) == 1
    assert report_mod.validate(report) == []
    junit = reports.render(report, "junit")
    assert f'name="kbtool.{name} (gpu)"' in junit and "cpuonly.kb" in junit


def test_on_the_cpu_the_same_module_runs_and_its_results_carry_the_device(spec, custom_backend):
    name = custom_backend("gpumod", "kb", GPU_AT_IMPORT)
    plan = make_plan(
        spec,
        Selection(ops=["abs"], backends=[name], modes=["eager"]),
        settings=RunSettings(jobs=1),
        sources=Sources(launcher=lambda n: with_devices(custom.launch(n, {})), builtin=[]),
    )
    report = run_check(plan, known_entries=[])
    assert report["backends"][0]["status"] == "available" and report["backends"][0]["device"] == "cpu"
    assert report["results"] and all(r["status"] == "pass" and r["device"] == "cpu" for r in report["results"])
    assert "device" not in report["plan"] and report["filters"] == ["--mode eager"]
    assert report_mod.validate(report) == []
    assert f"{name} (cpu)" not in reports.render(report, "markdown")


# ---------------------------------------------------------------------------- the command line


@pytest.mark.parametrize(
    "args, message",
    [
        (["check", "--device", "tpu"], "kbtool: error: --device takes one of cpu, gpu (got 'tpu')"),
        (["check", "--precision", "max"], "kbtool: error: --precision takes one of default, highest (got 'max')"),
        (["bench", "--device", "GPU"], "kbtool: error: --device takes one of cpu, gpu (got 'GPU')"),
    ],
)
def test_bad_device_or_precision_is_one_line_and_exit_2(args, message):
    code, output = run(*args)
    assert code == 2 and output.strip() == message


def test_check_on_a_gpu_with_only_cpu_backends_checks_nothing_and_exits_2():
    code, output = run("check", "--op", "abs", "--backend", "numpy", "--device", "gpu")
    assert code == 2
    assert output.strip().startswith("kbtool: error: nothing to check: no backend can run here on the gpu (numpy: ")
    assert len(output.strip().splitlines()) == 1


def test_the_pytest_plugin_refuses_a_bad_device_in_one_line(tmp_path):
    from kbtool.pytest_plugin import options as plugin_options

    values = {"kbtool_seed": "0", "kbtool_timeout": None, "kbtool_spec": None, "kbtool_known": None}
    values.update(kbtool_keras_config=[], kbtool_device="tpu", kbtool_precision=None, kbtool_repeat=None)

    class Config:
        invocation_params = type("P", (), {"dir": tmp_path})

        def getoption(self, name):
            return values.get(name, [])

    with pytest.raises(pytest.UsageError, match=r"^kbtool: --kbtool-device takes one of cpu, gpu \(got 'tpu'\)$"):
        plugin_options.read(Config())


# ---------------------------------------------------------------------------- known differences


def result(device=None, backend="keras3-jax", case="basic"):
    return Result(
        op="dot", case=case, backend=backend, mode="eager", status=Status.FAIL, message="differ", device=device
    )


def entry(**fields):
    return known.KnownEntry.from_dict(dict({"op": "dot", "backend": "keras3-jax", "reason": "TF32"}, **fields))


def test_an_entry_without_a_device_matches_every_device_and_one_with_it_only_those():
    anywhere, on_gpu, on_cpu = entry(), entry(device="gpu"), entry(device=["c*"])
    assert all(anywhere.targets(result(d)) for d in (None, "cpu", "gpu"))
    assert on_gpu.targets(result("gpu")) and not on_gpu.targets(result("cpu")) and not on_gpu.targets(result())
    assert on_cpu.targets(result()) and on_cpu.targets(result("cpu")) and not on_cpu.targets(result("gpu"))
    assert on_gpu.to_dict()["device"] == "gpu"


def test_a_result_key_names_the_device_only_when_it_is_not_the_cpu():
    assert known.result_key(result()) == "dot basic keras3-jax eager"
    assert known.result_key(result("cpu")) == "dot basic keras3-jax eager"
    assert known.result_key(result("gpu")) == "dot basic keras3-jax eager gpu"
    assert known.result_key(result("gpu").as_dict()) == "dot basic keras3-jax eager gpu"


def valid(**fields):
    return dict({"op": "dot", "case": "basic", "backend": "tensorflow", "reason": "TF32", "count": 1}, **fields)


@pytest.mark.parametrize(
    "fields, problem",
    [
        ({"device": "tpu"}, "entry 1 (dot): device tpu names no device kbtool knows (devices are cpu, gpu)"),
        ({"device": ["gpu", "npu*"]}, "entry 1 (dot): device npu* names no device kbtool knows (devices are cpu, gpu)"),
        ({"device": 3}, "entry 1 (dot): device must be a glob or a list of globs"),
        (
            {"results": {"dot basic tensorflow eager cpu": "x"}},
            "entry 1 (dot): results: 'dot basic tensorflow eager cpu' names device 'cpu': a key names gpu "
            "(a cpu result's key names no device)",
        ),
        (
            {"results": {"dot basic tensorflow eager tpu": "x"}},
            "entry 1 (dot): results: 'dot basic tensorflow eager tpu' names device 'tpu'",
        ),
        (
            {"device": "cpu", "results": {"dot basic tensorflow eager gpu": "x"}},
            "entry 1 (dot): results: 'dot basic tensorflow eager gpu' is not a result the entry targets",
        ),
    ],
)
def test_device_problems_are_clear(fields, problem):
    problems = known.validate([valid(**fields)])
    assert len(problems) == 1 and problems[0].startswith(problem), problems


def test_gpu_keys_and_device_entries_are_valid():
    assert known.validate([valid(device="gpu", results={"dot basic tensorflow eager gpu": "x"})]) == []
    assert known.validate([valid(results={"dot basic tensorflow eager": "x"})]) == []


def test_an_unknown_device_in_the_file_names_its_line(tmp_path):
    path = tmp_path / "known.yaml"
    path.write_text(
        "- op: abs\n  backend: tensorflow\n  match: differ\n  reason: fine\n  count: 1\n"
        "- op: abs\n  backend: tensorflow\n  match: differ\n  device: tpu\n  reason: TF32\n  count: 1\n"
    )
    with pytest.raises(KbtoolError) as caught:
        known.load(str(path))
    assert f"{path}:6" in str(caught.value) and "device tpu names no device kbtool knows" in str(caught.value)
    assert "\n" not in str(caught.value)


def gpu_result(message="differ", status=Status.FAIL, case="basic"):
    return dataclasses.replace(result("gpu", case=case), message=message, status=status)


CPU_RECORD = (
    "- op: dot\n  backend: keras3-jax\n  match: differ\n  reason: TF32\n  count: 1\n  results:\n"
    '    "dot basic keras3-jax eager": {}\n'
)


def recorded_from(results):
    text = CPU_RECORD.format(json.dumps(fingerprint.of_result(result("cpu"))))
    root, data = files.parse_yaml("k.yaml", text)
    done = known_record.record(text, root, known.numbered(data), results)
    return done, files.parse_yaml("k.yaml", done.text)[1][0]["results"]


def test_known_record_writes_a_gpu_key_only_where_the_gpu_fails_otherwise_than_the_cpu_record():
    cpu_fp = fingerprint.of_result(result("cpu"))
    # the GPU fails as the CPU did: the CPU's record stands for it, nothing is written for the GPU
    done, recorded = recorded_from([gpu_result()])
    assert recorded == {"dot basic keras3-jax eager": cpu_fp} and "count: 1" in done.text
    # the GPU fails otherwise: its own key, beside the CPU run's record of the same call
    other = gpu_result("values differ by 1e-3 (TF32)")
    done, recorded = recorded_from([other])
    assert recorded == {
        "dot basic keras3-jax eager": cpu_fp,
        "dot basic keras3-jax eager gpu": fingerprint.of_result(other),
    }
    assert "count: 2" in done.text
    entries = known.numbered(files.parse_yaml("k.yaml", done.text)[1])
    applied = known.apply([other, result("cpu")], entries)
    assert applied.named.get((0, 1)) and len(applied.named[(0, 1)]) == 2  # (layer, entry number)


def test_a_cpu_record_explains_the_same_failure_on_a_device_and_only_that():
    entries = known.numbered(
        files.parse_yaml("k.yaml", CPU_RECORD.format(json.dumps(fingerprint.of_result(result("cpu")))))[1]
    )
    same, other, passing = gpu_result(), gpu_result("values differ by 1e-3 (TF32)"), gpu_result("", Status.PASS)
    applied = known.apply([same, other, passing], entries)
    assert same.known == "TF32" and same.status == Status.FAIL  # carried over from the CPU record
    assert other.status == Status.CHANGED and other.known is None  # the device's own difference: unexplained
    assert other.changed["recorded"] == "fail | differ"
    assert passing.status == Status.PASS and applied.stale == []  # the device lacks the difference: not stale
    # an entry that holds on the CPU only does not carry over
    cpu_only = known.numbered([dict(entries[0].to_dict(), device="cpu")])
    again = gpu_result()
    known.apply([again], cpu_only)
    assert again.known is None


# ---------------------------------------------------------------------------- the report and its views


def gpu_report(device="gpu"):
    info = dict(available("keras3-jax"), device=device)
    results = [
        record("dot", "basic", "keras3-jax", "pass", device=device),
        record("dot", "big", "keras3-jax", "fail", device=device),
    ]
    return make_report([info], results)


def test_a_report_with_devices_is_valid_and_a_bad_device_is_not():
    assert report_mod.validate(gpu_report()) == []
    bad = gpu_report()
    bad["results"][0]["device"] = "tpu"
    bad["backends"][0]["device"] = "tpu"
    assert report_mod.validate(bad) == [
        "backends/0/device: 'tpu' is not one of ['cpu', 'gpu']",
        "results/0/device: 'tpu' is not one of ['cpu', 'gpu']",
    ]


def test_views_label_a_gpu_backend_and_leave_a_cpu_one_as_it_was():
    gpu, cpu = gpu_report("gpu"), gpu_report("cpu")
    for fmt in ("markdown", "html", "junit"):
        assert "keras3-jax (gpu)" in reports.render(gpu, fmt), fmt
        assert "keras3-jax (cpu)" not in reports.render(cpu, fmt), fmt
    assert "dot basic keras3-jax eager gpu" not in reports.render(gpu, "junit")
    assert 'name="big[eager] (gpu)"' in reports.render(gpu, "junit")
    assert '"labels"' not in reports.render(cpu, "html")  # a CPU page carries no labels of its own


def test_the_terminal_labels_a_gpu_backend(capsys):
    reports.render(gpu_report(), "terminal", verbosity=2)
    assert "keras3-jax (gpu)" in capsys.readouterr().out
    reports.render(gpu_report("cpu"), "terminal", verbosity=2)
    assert "(cpu)" not in capsys.readouterr().out


def test_a_gpu_results_repro_names_the_device():
    assert record("dot", "big", "keras3-jax", "fail", device="gpu")["repro"].endswith(" --device gpu")
    assert "--device" not in record("dot", "big", "keras3-jax", "fail", device="cpu")["repro"]


def test_a_repro_names_a_precision_that_is_not_the_default():
    from kbtool.repro import command

    failed = result("gpu")
    assert command(failed, settings=RunSettings(precision="highest")).endswith(" --device gpu --precision highest")
    assert "--precision" not in command(failed, settings=RunSettings(precision="default"))
