"""The recipes of the built-in backends and what they ask of kbtool: locks, a shared env, modes a backend
cannot run, a fresh session per case. No backend environment is needed."""

import dataclasses
import io
import json
import re

import pytest
from click.testing import CliRunner
from rich.console import Console

from kbtool.check.run import run_check
from kbtool.cli import main
from kbtool.plan import Selection, Sources, make_plan
from kbtool.reports import junit, markdown, terminal
from kbtool.runners import envs, names
from kbtool.runners.envs import pip as env_pip
from kbtool.runners.registry import BUILTIN, RECIPES, launch_for
from kbtool.worker import shims

PIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!-]+\Z")


def test_the_fourteen_builtin_backends():
    assert BUILTIN == [
        "numpy",
        "tensorflow",
        "tensorflow1",
        "theano",
        "cntk",
        "mxnet",
        "plaidml",
        "keras3",
        "keras-numpy",
        "keras3-jax",
        "keras3-torch",
        "keras3-tensorflow",
        "keras3-numpy",
        "keras3-openvino",
    ]
    assert {r.name: r.python_version for r in RECIPES.values()} == {
        "tensorflow": "3.11",
        "tensorflow1": "3.7",
        "theano": "3.11",
        "cntk": "3.6",
        "mxnet": "3.7",
        "plaidml": "3.7",
        "keras3": "3.11",
        "keras-numpy": "3.7",
        "keras3-jax": "3.11",
        "keras3-torch": "3.11",
        "keras3-tensorflow": "3.11",
        "keras3-numpy": "3.11",
        "keras3-openvino": "3.11",
    }


# ------------------------------------------------------------------------------------------------ locks
@pytest.mark.parametrize("name", sorted({r.env_owner for r in RECIPES.values()}))
def test_every_env_has_a_lock_that_pins_every_package_its_recipe_names(name):
    recipe = RECIPES[name]
    locked = envs.read_lock(recipe)
    assert len(locked) >= 8 and all(PIN.match(line) for line in locked.values()), locked
    for requirement in recipe.packages:  # each of the recipe's own packages is in its lock, within its specifier
        package = re.split(r"[\[=<>!~]", requirement)[0]  # the name alone: no extras (jax[cpu]), no version
        line = locked[names.normalise(package)]
        if "==" in requirement and not requirement.endswith("*"):
            assert line.split("==")[1] == requirement.split("==")[1], (requirement, line)


def test_lock_drift_names_what_differs():
    recipe = dataclasses.replace(RECIPES["cntk"])
    lock = envs.read_lock(recipe)
    frozen = list(lock.values())
    frozen[frozen.index("cntk==2.7.post2")] = "cntk==2.7"  # the wheel's own metadata: the recipe maps it
    assert envs.lock_drift(recipe, frozen) == []
    changed = [("numpy==1.19.4" if line.startswith("numpy==") else line) for line in frozen] + ["rich==13.0.0"]
    changed.remove("six==1.17.0")
    assert envs.lock_drift(recipe, changed) == [
        "numpy==1.19.4 (locked numpy==1.19.5)",
        "missing (locked six==1.17.0)",
        "rich==13.0.0 (not in the lock)",
    ]


def test_keras3_lives_in_the_tensorflow_env_and_cannot_be_removed_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    keras3, tensorflow = RECIPES["keras3"], RECIPES["tensorflow"]
    assert keras3.env_dir() == tensorflow.env_dir() and envs.lock_path(keras3) == envs.lock_path(tensorflow)
    env_dir = tmp_path / "envs" / "tensorflow"
    env_dir.mkdir(parents=True)
    result = CliRunner().invoke(main, ["env", "remove", "keras3"])
    assert result.exit_code == 2 and env_dir.exists()
    assert result.stderr.strip() == (
        "kbtool: error: keras3 runs in the tensorflow env and has none of its own: "
        "`kbtool env remove tensorflow` removes that env (and keras3 with it)"
    )


def test_a_backend_in_a_shared_env_says_which_env_to_install(tmp_path, monkeypatch):
    from kbtool.runners.base import Unavailable

    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    with pytest.raises(Unavailable, match=r"run `kbtool env install keras3` \(it runs in the tensorflow env\)"):
        launch_for("keras3")


# ------------------------------------------------------------------------------------------------ keras-numpy
def installed_env(tmp_path, monkeypatch, name):
    """A KBTOOL_HOME whose env `name` has the record `kbtool env install` writes (no interpreter in it)."""
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    env_dir = tmp_path / "envs" / name
    env_dir.mkdir(parents=True)
    (env_dir / "kbtool-env.json").write_text(json.dumps({"backend": name, "env": name}))
    return env_dir


def test_keras_numpy_runs_keras_2_3_1s_numpy_backend_in_the_tensorflow1_env_eager_only(tmp_path, monkeypatch):
    recipe, tf1 = RECIPES["keras-numpy"], RECIPES["tensorflow1"]
    assert recipe.env_owner == "tensorflow1" and envs.lock_path(recipe) == envs.lock_path(tf1)
    assert recipe.packages == tf1.packages and "keras==2.3.1" in recipe.packages
    env_dir = installed_env(tmp_path, monkeypatch, "tensorflow1")
    launch = recipe.launch()
    assert (launch.backend, launch.module, launch.python) == (
        "keras-numpy",
        "keras.backend.numpy_backend",
        str(env_dir / "bin" / "python"),
    )
    # the shim stands in for keras/__init__.py (which imports TensorFlow); no KERAS_BACKEND, no TF settings
    assert launch.shims == ["keras_numpy_backend"] and "keras_numpy_backend" in shims.SHIMS
    assert "KERAS_BACKEND" not in launch.env and "TF_CPP_MIN_LOG_LEVEL" not in launch.env
    argv = launch.argv()
    assert argv[argv.index("--module") + 1] == "keras.backend.numpy_backend" and "--clear-session" not in argv
    assert launch.modes == ("eager",) and "no placeholder or function" in launch.unsupported_modes["symbolic"]


def test_keras_numpy_not_installed_says_to_install_the_tensorflow1_env(tmp_path, monkeypatch):
    from kbtool.runners.base import Unavailable

    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    with pytest.raises(
        Unavailable, match=r"^not installed: run `kbtool env install keras-numpy` \(it runs in the tensorflow1 env\)$"
    ):
        launch_for("keras-numpy")
    with pytest.raises(Unavailable, match=r"^not installed: run `kbtool env install tensorflow1`$"):
        launch_for("tensorflow1")


def test_keras_numpy_is_a_builtin_name_not_a_module(tmp_path, monkeypatch):
    from kbtool.known import known_backend
    from kbtool.runners import custom

    assert not custom.is_custom("keras-numpy") and known_backend("keras-numpy") and known_backend("keras-*")
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    result = CliRunner().invoke(main, ["backends", "--json"])
    infos = {i["name"]: i for i in json.loads(result.stdout)}
    assert result.exit_code == 0 and infos["keras-numpy"]["kind"] == "builtin"
    assert infos["keras-numpy"]["status"] == "not installed"
    result = CliRunner().invoke(main, ["check", "--op", "abs", "--backend", "keras-numpy"])
    assert result.exit_code == 2 and "backend keras-numpy: not installed: run `kbtool env install keras-numpy`" in (
        result.stderr
    )
    result = CliRunner().invoke(main, ["check", "--op", "abs", "--backend", "keras_numpy"])  # a module name
    assert result.exit_code == 2 and "did you mean keras-numpy?" in result.stderr


def test_the_plan_schedules_no_symbolic_result_for_keras_numpy(spec, tmp_path, monkeypatch):
    installed_env(tmp_path, monkeypatch, "tensorflow1")
    # the recipe's own launch (launch_for would also find the env's interpreter missing)
    launcher = lambda name: launch_for(name) if name == "numpy" else RECIPES[name].launch()  # noqa: E731
    plan = make_plan(
        spec,
        Selection(ops=["abs", "placeholder", "function"], backends=["numpy", "keras-numpy"]),
        sources=Sources(launcher=launcher),
    )
    assert {m for _, case in plan.work_for("keras-numpy") for m in case.modes} == {"eager"}
    assert {case.op for _, case in plan.work_for("keras-numpy")} == {"abs"}  # the others have symbolic cases only
    assert {m for _, case in plan.work_for("numpy") for m in case.modes} == {"eager", "symbolic"}
    assert "numpy_backend.py" in plan.unsupported_modes("keras-numpy")["symbolic"]
    assert plan.unsupported_modes("numpy") == {}


def test_plaidml_is_configured_by_kbtool_not_by_the_users_plaidml_setup(tmp_path):
    plaidml = RECIPES["plaidml"]
    plaidml.prepare(str(tmp_path))
    env = plaidml.env_vars(str(tmp_path))
    settings = json.loads((tmp_path / "kbtool-plaidml.json").read_text())
    assert env["PLAIDML_SETTINGS"] == str(tmp_path / "kbtool-plaidml.json")
    assert settings == {"PLAIDML_EXPERIMENTAL": True, "PLAIDML_DEVICE_IDS": ["llvm_cpu.0"]}
    assert "plaidml_install_backend" in plaidml.shims and "plaidml_install_backend" in shims.SHIMS


# ------------------------------------------------------------------------------------------------ modes
def eager_only(name):
    launch = launch_for("numpy")
    return dataclasses.replace(
        launch, backend=name, modes=("eager",), unsupported_modes={"symbolic": "this backend has no placeholders"}
    )


def test_a_mode_a_backend_cannot_run_is_said_once_not_failed_per_case(spec, no_known):
    plan = make_plan(
        spec,
        Selection(ops=["abs", "mean"], backends=["numpy"]),
        sources=Sources(launcher=eager_only, builtin=["numpy"]),
    )
    assert plan.unsupported_modes("numpy") == {"symbolic": "this backend has no placeholders"}
    report = run_check(plan)  # the shipped entries explain the reference's gradient cases
    (info,) = report["backends"]
    assert {r["mode"] for r in report["results"]} == {"eager"} and len(report["results"]) > 10
    assert info["unsupported_modes"] == {"symbolic": "this backend has no placeholders"}
    assert report["summary"]["ok"] is True
    line = "numpy: symbolic mode unsupported, none of its cases ran in it"
    console = Console(file=io.StringIO(), width=200)
    terminal.render(report, console)
    assert sum(line in row for row in console.file.getvalue().splitlines()) == 1
    assert markdown.render(report).count("symbolic mode unsupported") == 1
    xml = junit.render(report)
    assert xml.count('name="symbolic mode"') == 1 and xml.count("symbolic mode unsupported") == 1


def test_a_selection_of_modes_no_backend_can_run_checks_nothing(spec):
    from kbtool.errors import KbtoolError

    with pytest.raises(KbtoolError, match=r"^nothing to check: numpy cannot run symbolic mode \(numpy: this "):
        make_plan(
            spec,
            Selection(ops=["abs"], backends=["numpy"], modes=["symbolic"]),
            sources=Sources(launcher=eager_only, builtin=["numpy"]),
        )


# ------------------------------------------------------------------------------------------------ sessions
CLEARED = """from kbtool.reference import *
from kbtool.reference import abs as _abs

_fresh = [False]


def clear_session():
    _fresh[0] = True


def abs(x):
    if not _fresh[0]:
        raise RuntimeError("a case ran in the previous case's session")
    _fresh[0] = False
    return _abs(x)
"""


@pytest.mark.parametrize("clear", [True, False])
def test_a_recipe_can_ask_for_a_fresh_session_before_every_case(spec, custom_backend, clear):
    module = custom_backend(f"cleared_{clear}", "kb", CLEARED)

    def launcher(name):
        return dataclasses.replace(launch_for(name), clear_session=clear)

    report = run_check(
        make_plan(spec, Selection(ops=["abs"], backends=[module]), sources=Sources(launcher=launcher, builtin=[])),
        known_entries=[],
    )
    statuses = {r["status"] for r in report["results"] if not r["case"].startswith("grad")}  # (no autodiff)
    assert len(report["results"]) >= 6
    assert statuses == ({"pass"} if clear else {"error"})


def test_an_extra_index_is_used_only_when_its_host_answers():
    """pip retries an index it cannot reach for minutes per package (3 min for torch's env here): kbtool probes the
    host first and says in the log when it leaves the index out."""
    import dataclasses
    import socket

    from kbtool.runners.registry import RECIPES

    torch = RECIPES["keras3-torch"]
    assert torch.extra_index == "https://download.pytorch.org/whl/cpu"
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        answering = dataclasses.replace(torch, extra_index=f"http://127.0.0.1:{server.getsockname()[1]}/simple")
        lines = []
        assert env_pip.index_args(answering, lines.append) == ["--extra-index-url", answering.extra_index]
        assert lines == []
    silent = dataclasses.replace(torch, extra_index="https://no-such-host.invalid/simple")
    lines = []
    assert env_pip.index_args(silent, lines.append) == []
    assert len(lines) == 1 and "no-such-host.invalid/simple cannot be reached" in lines[0]
    assert env_pip.index_args(RECIPES["keras3-jax"], lines.append) == []
