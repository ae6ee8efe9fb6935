"""A printed repro reproduces: run as printed (through the shell, from the directory the check ran in), it gives the
same status and the same exit code as the check that printed it, with --known, --spec, --keras-config (given, from
keras.json, or `defaults`) and --timeout. kbtool/repro.py builds every repro; the builder's flags are checked here
one by one too."""

import json
import os
import shlex
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from kbtool import paths
from kbtool.cli import main
from kbtool.repro import command
from kbtool.results import Result, Status
from kbtool.settings import RunSettings
from tests.helpers import HEADER

# abs returns float64 whatever floatx says: under the default float32 its dtype differs, under float64 it passes
F64_ABS = "from kbtool.reference import *\nimport numpy as _np\ndef abs(x):\n    return _np.abs(x).astype('float64')\n"
# abs is wrong for inputs of rank 3 or more (the shipped spec's abs cases are rank 1 and 2)
RANK3_ABS = textwrap.dedent(
    """
    from kbtool.reference import *
    from kbtool.reference import abs as _abs
    import numpy as _np
    def abs(x):
        out = _np.asarray(_abs(x))
        return out + 1 if out.ndim >= 3 else out
    """
)
SLOW_ABS = "from kbtool.reference import *\nimport time\nfrom kbtool.reference import abs as _abs\ndef abs(x):\n    time.sleep(2)\n    return _abs(x)\n"


@pytest.fixture
def here(tmp_path, monkeypatch, keras_home):
    """The directory the check runs in (and its repro: relative paths are relative to it), with a private kbtool home
    and an empty KERAS_HOME."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    return work


@pytest.fixture
def shim(tmp_path):
    """A folder holding a `kbtool` that is this checkout's, for PATH: the repro runs as printed, `kbtool` first."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "kbtool"
    script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m kbtool "$@"\n')
    script.chmod(0o755)
    return str(folder)


def first_check(*args):
    """`kbtool check ARGS --json`, in this process: (exit code, report)."""
    result = CliRunner().invoke(main, ["check", "--json", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def replay(repro, shim, env=None):
    """The repro run as printed by a shell, its JSON report asked for: (exit code, its one result's status and
    known reason)."""
    environ = dict(os.environ, PATH=shim + os.pathsep + os.environ["PATH"], **(env or {}))
    done = subprocess.run(["/bin/sh", "-c", repro + " --json"], env=environ, capture_output=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr.decode()[-2000:]
    results = json.loads(done.stdout)["results"]
    assert len(results) == 1, [r["case"] for r in results]
    return done.returncode, results[0]["status"], results[0].get("known")


def reproduces(report, code, shim, env=None, where=lambda r: True):
    """Each non-passing result's printed repro gives its status, known reason and the check's exit code."""
    failing = [r for r in report["results"] if r["status"] != "pass" and where(r)]
    assert failing
    for record in failing[:1]:
        assert replay(record["repro"], shim, env) == (code, record["status"], record.get("known"))
    return failing[0]["repro"]


def test_a_repro_of_a_run_with_known_carries_the_file_and_fails_again(here, shim):
    # the shipped file explains the numpy reference's grad case (no autodiff); an empty one leaves it unexplained
    (here / "mine.yaml").write_text("[]\n")
    code, report = first_check(
        "--op", "abs", "--backend", "numpy", "--case", "grad", "--no-shipped-known", "--known", "mine.yaml"
    )
    assert code == 1
    repro = reproduces(report, 1, shim)
    assert " --no-shipped-known --known mine.yaml" in repro  # relative to where the check ran, as given
    without = repro.replace(" --no-shipped-known --known mine.yaml", "")
    assert replay(without, shim)[0] == 0  # what the old repro did: explained by the shipped file, exit 0


def test_a_repro_of_a_result_my_known_file_explains_is_known_again(here, shim, custom_backend):
    name = custom_backend("mine", "f64abs", F64_ABS)
    (here / "mine.yaml").write_text(
        f"- {{op: abs, backend: {name}, case: basic, status: fail, reason: always float64, count: 1}}\n"
    )
    code, report = first_check(
        "--op", "abs", "--backend", name, "--case", "basic", "--mode", "eager", "--known", "mine.yaml"
    )
    assert code == 0 and all(r["known"] for r in report["results"])
    reproduces(report, 0, shim)


def test_a_repro_of_a_run_with_another_spec_carries_it(here, shim, custom_backend, tmp_path):
    name = custom_backend("mine", "rank3", RANK3_ABS)
    specs = tmp_path / "work" / "specs"
    specs.mkdir()
    (specs / "ops.yaml").write_text(
        HEADER
        + "  abs:\n    category: math\n    summary: x\n    documented_in: [ko-2.2]\n"
        + "    signature: [{name: x, kind: tensor}]\n    cases:\n      - {id: cube, inputs: [{shape: [2, 2, 2]}]}\n"
    )
    code, report = first_check("--op", "abs", "--backend", name, "--mode", "eager", "--spec", "specs/ops.yaml")
    assert code == 1 and report["spec"]["path"] == "specs/ops.yaml"  # no absolute path of this machine
    repro = reproduces(report, 1, shim)
    assert " --spec specs/ops.yaml" in repro


def test_a_repro_pins_the_keras_json_settings_the_run_had(here, shim, custom_backend, keras_home, tmp_path):
    name = custom_backend("mine", "f64abs", F64_ABS)
    keras_home.mkdir(exist_ok=True)
    (keras_home / "keras.json").write_text(json.dumps({"floatx": "float64"}))
    # keras.json's float64: abs passes; --keras-config defaults ignores it: float32, and abs's float64 fails
    code, report = first_check("--op", "abs", "--backend", name, "--case", "basic", "--keras-config", "defaults")
    assert code == 1
    repro = reproduces(report, 1, shim, where=lambda r: r["mode"] == "eager")
    assert "--keras-config defaults" in repro


def test_a_repro_names_keras_json_settings_so_another_keras_home_fails_the_same(here, shim, custom_backend, keras_home):
    f32 = "from kbtool.reference import *\nimport numpy as _np\ndef abs(x):\n    return _np.abs(x).astype('float32')\n"
    name = custom_backend("mine", "f32abs", f32)
    keras_home.mkdir(exist_ok=True)
    (keras_home / "keras.json").write_text(json.dumps({"floatx": "float64"}))
    code, report = first_check("--op", "abs", "--backend", name, "--case", "basic", "--mode", "eager")
    assert code == 1
    empty = here.parent / "other_keras_home"  # a shell without that keras.json: the repro says float64 itself
    repro = reproduces(report, 1, shim, env={"KERAS_HOME": str(empty)})
    assert "--keras-config floatx=float64" in repro


@pytest.mark.slow  # a case that sleeps past its timeout, twice
def test_a_repro_of_a_timeout_carries_the_timeout(here, shim, custom_backend):
    name = custom_backend("mine", "slow", SLOW_ABS)
    code, report = first_check("--op", "abs", "--backend", name, "--case", "basic", "--mode", "eager", "--timeout", "1")
    assert code == 1 and report["results"][0]["status"] == "timeout"
    assert reproduces(report, 1, shim).endswith(" --timeout 1")


def test_the_terminal_prints_the_same_repro_as_the_report(here):
    (here / "mine.yaml").write_text("[]\n")
    args = [
        "check",
        "--op",
        "abs",
        "--backend",
        "numpy",
        "--case",
        "grad",
        "--no-shipped-known",
        "--known",
        "mine.yaml",
    ]
    args += ["-o", "r.json"]
    result = CliRunner().invoke(main, args, env={"COLUMNS": "300"})
    assert result.exit_code == 1
    repro = json.loads((here / "r.json").read_text())["results"][0]["repro"]
    assert repro in result.output and "--known mine.yaml" in repro


# ------------------------------------------------------------------------------------------------ the builder


def failing(backend="numpy", **extra):
    return Result(op="abs", case="basic", backend=backend, mode="eager", status=Status.FAIL, message="x", **extra)


def test_the_builder_adds_each_verdict_changing_flag_only_when_it_is_not_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert command(failing()) == "kbtool check --op abs --case basic --backend numpy --mode eager --seed 0"
    flags = RunSettings(
        seed=7,
        spec_path="my specs/ops.yaml",
        known_paths=("k.yaml",),
        keras_defaults=True,
        precision="highest",
        repeat=3,
        case_timeout=2.5,
        strict=True,
        kbtool_home="/tmp/a home",
    )
    text = command(failing("keras3-jax", device="gpu"), settings=flags)
    assert text == (
        "KBTOOL_HOME='/tmp/a home' kbtool check --op abs --case basic --backend keras3-jax --mode eager --seed 7 "
        "--spec 'my specs/ops.yaml' --known k.yaml --keras-config defaults --device gpu --precision highest "
        "--repeat 3 --timeout 2.5 --strict"
    )
    assert "--precision" not in command(failing(), settings=flags)  # a backend without devices has no precision
    # KBTOOL_HOME only where the backend's env lives there: not numpy or a plain custom module (kbtool's own Python)
    assert command(failing("my.mod@theano"), settings=flags).startswith("KBTOOL_HOME=")
    assert not command(failing(), settings=flags).startswith("KBTOOL_HOME=")
    assert not command(failing("my.mod"), settings=flags).startswith("KBTOOL_HOME=")


def test_a_repro_leaves_out_the_shipped_files_and_shows_paths_from_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KBTOOL_HOME", raising=False)
    shipped = RunSettings(known_paths=(paths.known_differences_file(),)).resolved(paths.spec_file())
    assert (shipped.spec_path, shipped.kbtool_home) == (paths.spec_file(), None)
    line = command(failing("my.mod@theano"), settings=shipped)
    assert "--spec" not in line and "--known" not in line and not line.startswith("KBTOOL_HOME=")
    mine = RunSettings(known_paths=("/elsewhere/k.yaml",)).resolved(
        str(tmp_path / "s.yaml"), environ={"KBTOOL_HOME": str(tmp_path / "h")}
    )
    line = command(failing("my.mod@theano"), settings=mine)
    assert line.startswith("KBTOOL_HOME=h kbtool check ")
    assert line.endswith(" --spec s.yaml --known /elsewhere/k.yaml")
    given = RunSettings(spec_path="given.yaml").resolved(paths.spec_file())  # --spec wins over the loaded default
    assert given.spec_path == "given.yaml"
    assert paths.shown(str(tmp_path / "-odd.yaml")) == "./-odd.yaml"  # never read as a flag
