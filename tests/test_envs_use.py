"""`kbtool env use NAME --python PATH`: an existing interpreter registered as a backend's env (kbtool's own Python
stands in for a conda env or a GPU machine's Python), checked by importing the backend, never installed into or
deleted."""

import json
import os
import sys

import numpy
import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.paths import CHECKOUT_ROOT
from kbtool.runners import envs, registry
from kbtool.runners.envs import register as env_register
from kbtool.runners.recipes import Recipe

from .helpers import register_ext

PYTHON = os.path.abspath(sys.executable)


def run(*args):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", CHECKOUT_ROOT)  # the registered interpreter finds kbtool.reference
    return tmp_path


@pytest.fixture
def ext(home, monkeypatch):
    """A built-in backend `ext` whose module kbtool's own Python imports (its recipe says Python 3.6)."""
    recipe = register_ext(monkeypatch)
    return recipe


def test_an_interpreter_without_the_backend_is_refused_in_one_line_naming_the_missing_package(home):
    code, out = run("env", "use", "tensorflow", "--python", sys.executable)
    assert code == 2 and len(out.strip().splitlines()) == 1
    assert f"tensorflow: {PYTHON} cannot import tf_keras.backend" in out
    assert "No module named 'tf_keras'" in out and "install tf_keras" in out and "nothing was registered" in out
    assert not (home / "envs" / "tensorflow").exists()


def test_an_importing_interpreter_is_registered_with_its_versions_and_warned_of_its_other_python(home, ext):
    code, out = run("env", "use", "ext", "--python", sys.executable)
    assert code == 0, out
    minor = "{}.{}".format(*sys.version_info[:2])
    assert "warning: ext's recipe builds its env on Python 3.6" in out and f"is Python {minor}" in out
    assert f"ext: uses {PYTHON} (Python {sys.version.split()[0]}: numpy {numpy.__version__})" in out
    env_dir = home / "envs" / "ext"
    assert sorted(os.listdir(env_dir)) == [envs.MARKER, envs.RECORD]  # the record only: no venv
    record = json.loads((env_dir / envs.RECORD).read_text())
    assert record["external"] is True and record["python"] == PYTHON and record["lock"] is None
    assert record["versions"] == {"numpy": numpy.__version__}
    assert f"numpy=={numpy.__version__}" in record["installed"]  # its pip freeze, kept, not held to a lock
    # the worker runs on it, with the user's site-packages (it is the user's interpreter)
    launch = registry.launch_for("ext")
    assert launch.python == PYTHON and "PYTHONNOUSERSITE" not in launch.env
    assert envs.problem(ext) is None


def test_list_backends_and_remove_see_a_registered_interpreter_as_such(home, ext):
    assert run("env", "use", "ext", "--python", sys.executable)[0] == 0
    code, out = run("env", "list", "--json")
    (info,) = [i for i in json.loads(out) if i["name"] == "ext"]
    assert code == 0 and info["external"] is True and info["python"] == PYTHON and info["installed"] is True
    assert "size_mb" not in info  # the interpreter is not kbtool's to measure
    code, out = run("env", "list")
    assert code == 0 and f"uses {PYTHON} (Python {sys.version.split()[0]})" in out
    code, out = run("backends", "--json")
    (backend,) = [b for b in json.loads(out) if b["name"] == "ext"]
    assert backend["status"] == "available" and backend["versions"] == {"numpy": numpy.__version__}
    assert backend["python"] == sys.version.split()[0]
    code, out = run("env", "remove", "ext")
    assert code == 0 and f"unregistered {PYTHON} from the ext env (the interpreter was left alone)" in out
    assert not (home / "envs" / "ext").exists() and os.path.exists(PYTHON)


def test_install_refuses_a_registered_name_and_says_how_to_unregister(home, ext):
    assert run("env", "use", "ext", "--python", sys.executable)[0] == 0
    for args in (["ext"], ["ext", "--force"]):
        code, out = run("env", "install", *args)
        assert code == 2 and f"ext uses the interpreter {PYTHON} registered by `kbtool env use`" in out
        assert "`kbtool env remove ext` unregisters it" in out
    lines = []
    failed = envs.install_all([ext], False, out=lines.append, err=lines.append, skip_registered=True)  # --all
    assert failed == [] and lines == [f"ext: uses the registered interpreter {PYTHON}, not installed"]
    assert json.loads((home / "envs" / "ext" / envs.RECORD).read_text())["external"] is True


def test_force_replaces_a_registration_or_a_kbtool_venv_but_never_a_folder_kbtool_did_not_make(home, ext):
    env_dir = home / "envs" / "ext"
    env_dir.mkdir(parents=True)
    (env_dir / envs.RECORD).write_text(json.dumps({"backend": "ext", "env": "ext"}))  # a venv kbtool built
    (env_dir / "bin").mkdir()
    code, out = run("env", "use", "ext", "--python", sys.executable)
    assert code == 2 and "ext has an env kbtool built in" in out and "--force" in out
    assert (env_dir / "bin").is_dir()
    assert run("env", "use", "ext", "--python", sys.executable, "--force")[0] == 0
    assert not (env_dir / "bin").exists() and json.loads((env_dir / envs.RECORD).read_text())["external"] is True
    code, out = run("env", "use", "ext", "--python", sys.executable)
    assert code == 2 and f"ext already uses {PYTHON}" in out and "--force replaces the registration" in out
    assert run("env", "use", "ext", "--python", sys.executable, "--force")[0] == 0
    envs.remove(ext)
    env_dir.mkdir()
    (env_dir / "mine.txt").write_text("keep")
    code, out = run("env", "use", "ext", "--python", sys.executable, "--force")
    assert code == 2 and "not an environment kbtool made" in out
    assert os.listdir(env_dir) == ["mine.txt"]


def test_what_is_not_a_working_interpreter_is_refused_and_nothing_is_written(home, ext, tmp_path, monkeypatch):
    code, out = run("env", "use", "ext", "--python", str(tmp_path / "nope" / "python"))
    assert code == 2 and "nope/python: does not exist" in out
    code, out = run("env", "use", "ext", "--python", "no-such-python-here")
    assert code == 2 and "no-such-python-here: no such interpreter on PATH" in out
    fake = tmp_path / "fake-python"
    fake.write_text("#!/bin/sh\necho 'this is not python' >&2\nexit 3\n")
    fake.chmod(0o755)
    code, out = run("env", "use", "ext", "--python", str(fake))
    assert code == 2 and "did not run as a Python interpreter (exit 3: this is not python)" in out
    monkeypatch.setattr(env_register, "WORKER_FLOOR", (99, 0))  # an interpreter older than the worker can run on
    code, out = run("env", "use", "ext", "--python", sys.executable)
    assert code == 2 and "kbtool's worker needs Python 99.0 or newer" in out
    code, out = run("env", "use", "ext")
    assert code == 2 and "--python" in out
    assert not (home / "envs").exists()


def test_a_registered_interpreter_that_is_gone_makes_the_env_broken_with_how_to_fix_it(home, ext):
    env_dir = home / "envs" / "ext"
    env_dir.mkdir(parents=True)
    gone = str(home / "conda" / "bin" / "python")
    (env_dir / envs.RECORD).write_text(json.dumps({"backend": "ext", "env": "ext", "external": True, "python": gone}))
    code, out = run("env", "list")
    assert code == 2 and f"its registered interpreter {gone} is missing" in out
    assert "`kbtool env use ext --python PATH --force` registers another" in out
    code, out = run("check", "--op", "abs", "--backend", "ext", "-q")
    assert code == 2 and f"its registered interpreter {gone} is missing" in out and "Traceback" not in out


def test_a_backend_that_shares_an_env_registers_that_env(home, ext, monkeypatch):
    shared = Recipe(name="ext-shared", python_version="3.6", packages=[], module="kbtool.reference", env_name="ext")
    monkeypatch.setitem(registry.RECIPES, "ext-shared", shared)
    code, out = run("env", "use", "ext-shared", "--python", sys.executable)
    assert code == 0 and f"ext-shared: uses {PYTHON}" in out and "(the ext env, which ext-shared runs in)" in out
    record = json.loads((home / "envs" / "ext" / envs.RECORD).read_text())
    assert (record["backend"], record["env"]) == ("ext-shared", "ext")
    assert registry.launch_for("ext").python == registry.launch_for("ext-shared").python == PYTHON
    code, out = run("env", "remove", "ext-shared")
    assert code == 2 and "`kbtool env remove ext` removes that env" in out
    assert run("env", "remove", "ext")[0] == 0 and not (home / "envs" / "ext").exists()
