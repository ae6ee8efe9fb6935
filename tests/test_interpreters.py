"""Finding a Python X.Y (kbtool/runners/envs/interpreters.py) and `kbtool env install` on a machine that lacks some:
fake interpreters (shell scripts printing a version) stand in for pyenv's, uv's and conda's Pythons and PATH's, in a
temporary home; `--python PATH` validation; `env install --all` skips what has no Python and says so (exit 0); pip's
output goes live to a terminal and is captured otherwise. No network, no backend."""

import io
import json
import os
import stat
import sys

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.runners import envs, registry
from kbtool.runners import recipes as recipes_table
from kbtool.runners.envs import build as env_build
from kbtool.runners.envs import interpreters
from kbtool.runners.envs import pip as env_pip
from kbtool.runners.envs.interpreters import Interpreter, NoInterpreter, WrongInterpreter
from kbtool.runners.recipes import Recipe


def _script(path, body):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def fake_python(path, says="3.6.15 CPython"):
    """A file that answers kbtool's version check as an interpreter of that version would."""
    return _script(path, f'echo "{says}"')


class Machine:
    """A home folder with pyenv, uv and conda roots and a PATH, all empty until a test puts interpreters in."""

    def __init__(self, root):
        self.root = root
        self.home = root / "home"
        self.bin = root / "bin"
        self.home.mkdir()
        self.bin.mkdir()
        self.environ = {"HOME": str(self.home), "PATH": str(self.bin)}

    def pyenv(self, release, says=None):
        return fake_python(
            self.home / ".pyenv" / "versions" / release / "bin" / f"python{release[:3]}", says or f"{release} CPython"
        )

    def uv(self, release):
        folder = self.home / ".local" / "share" / "uv" / "python" / f"cpython-{release}-linux-x86_64-gnu"
        return fake_python(folder / "bin" / f"python{release[:3]}", f"{release} CPython")

    def conda(self, env, release):
        return fake_python(
            self.home / "miniconda3" / "envs" / env / "bin" / f"python{release[:3]}", f"{release} CPython"
        )

    def on_path(self, release, folder="bin"):
        return fake_python(self.root / folder / f"python{release[:3]}", f"{release} CPython")


@pytest.fixture
def machine(tmp_path):
    return Machine(tmp_path)


def test_each_source_is_tried_in_the_documented_order(machine):
    env = machine.environ
    wanted = {
        "PATH": machine.on_path("3.6.1"),
        "conda": machine.conda("py36", "3.6.2"),
        "uv": machine.uv("3.6.3"),
        "pyenv": machine.pyenv("3.6.4"),
        "KBTOOL_PYTHON_3_6": fake_python(machine.root / "mine" / "python", "3.6.5 CPython"),
    }
    env["KBTOOL_PYTHON_3_6"] = wanted["KBTOOL_PYTHON_3_6"]
    for source in ["KBTOOL_PYTHON_3_6", "pyenv", "uv", "conda", "PATH"]:
        found = interpreters.find("3.6", environ=env)
        assert (found.source, found.path) == (source, wanted[source])
        assert found.version == "3.6." + str(5 - ["KBTOOL_PYTHON_3_6", "pyenv", "uv", "conda", "PATH"].index(source))
        if source == "KBTOOL_PYTHON_3_6":
            del env["KBTOOL_PYTHON_3_6"]
        else:
            os.remove(wanted[source])  # the next source is reached only when this one has none


def test_an_explicit_python_comes_first_and_is_refused_rather_than_passed_over(machine):
    env = machine.environ
    machine.pyenv("3.6.15")
    mine = fake_python(machine.root / "mine" / "python", "3.6.8 CPython")
    assert interpreters.find("3.6", python=mine, environ=env) == Interpreter(mine, "3.6.8", "--python")
    other = fake_python(machine.root / "other" / "python", "3.7.16 CPython")
    with pytest.raises(WrongInterpreter) as caught:
        interpreters.find("3.6", python=other, environ=env, backend="cntk")
    assert str(caught.value) == f"--python {other} is Python 3.7.16; cntk needs Python 3.6"
    env["KBTOOL_PYTHON_3_6"] = other  # a variable naming the wrong Python is a mistake to say, not to skip
    with pytest.raises(WrongInterpreter, match=r"^KBTOOL_PYTHON_3_6=.* is Python 3\.7\.16; the env needs Python 3\.6$"):
        interpreters.find("3.6", environ=env)


def test_what_does_not_run_as_cpython_of_that_version_is_passed_over(machine):
    env = machine.environ
    machine.pyenv("3.6.99", says="3.7.16 CPython")  # a folder named 3.6 holding something else
    _script(machine.home / ".pyenv" / "versions" / "3.6.98" / "bin" / "python3.6", "exit 1")  # a broken build
    machine.uv("3.6.0")
    os.remove(machine.uv("3.6.0"))
    fake_python(machine.bin / "python3.6", "3.6.15 PyPy")  # not CPython
    good = machine.conda("old", "3.6.12")
    assert interpreters.find("3.6", environ=env) == Interpreter(good, "3.6.12", "conda")


def test_pyenv_newest_release_first_and_uv_and_conda_asked_through_their_tools(machine):
    env = machine.environ
    machine.pyenv("3.7.9")
    newest = machine.pyenv("3.7.17")
    assert interpreters.find("3.7", environ=env).path == newest  # 3.7.17 before 3.7.9 (not string order)
    os.remove(newest)
    os.remove(machine.home / ".pyenv" / "versions" / "3.7.9" / "bin" / "python3.7")
    managed = fake_python(machine.root / "uvhome" / "cpython-3.7.9" / "bin" / "python3.7", "3.7.9 CPython")
    # `uv python find 3.7` answers only uv's own Pythons: kbtool asks with UV_PYTHON_PREFERENCE=only-managed
    _script(
        machine.bin / "uv",
        f'[ "$1 $2 $3" = "python find 3.7" ] && [ "$UV_PYTHON_PREFERENCE" = only-managed ] && echo {managed}',
    )
    assert interpreters.find("3.7", environ=env) == Interpreter(managed, "3.7.9", "uv")
    os.remove(machine.bin / "uv")
    prefix = machine.root / "elsewhere" / "envs" / "py37"
    in_conda = fake_python(prefix / "bin" / "python3.7", "3.7.12 CPython")
    _script(machine.bin / "conda", "echo '" + json.dumps({"envs": [str(machine.root / "nothing"), str(prefix)]}) + "'")
    assert interpreters.find("3.7", environ=env) == Interpreter(in_conda, "3.7.12", "conda")


def test_none_found_names_every_place_looked_and_every_way_to_get_one(machine):
    with pytest.raises(NoInterpreter) as caught:
        interpreters.find("3.6", environ=machine.environ, backend="cntk")
    lines = str(caught.value).splitlines()
    home = str(machine.home)
    assert lines[0] == caught.value.line and lines[0].startswith("no working Python 3.6 interpreter; looked at: ")
    for place in [
        "KBTOOL_PYTHON_3_6 (not set)",
        f"{home}/.pyenv/versions/3.6.*",
        f"uv (not on PATH) and {home}/.local/share/uv/python/cpython-3.6.*",
        f"conda (not on PATH) and {home}/miniconda3/envs/*, {home}/anaconda3/envs/*, {home}/miniforge3/envs/*",
        "python3.6 in each folder of PATH",
    ]:
        assert place in lines[0]
    ways = "\n".join(lines[1:])
    assert "pyenv install 3.6.15" in ways and "uv has no Python 3.6" in ways
    assert "conda create -n py36 python=3.6" in ways and "kbtool env install cntk --python PATH" in ways
    assert "export KBTOOL_PYTHON_3_6=PATH" in ways
    assert "uv python install 3.7   (found among uv's Pythons)" in interpreters.ways("3.7")


def test_backends_says_which_python_a_backend_lacks_and_how_to_get_one(machine, tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbhome"))
    for name, value in machine.environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("PYENV_ROOT", raising=False)
    monkeypatch.delenv("KBTOOL_PYTHON_3_6", raising=False)
    monkeypatch.setattr(registry, "BUILTIN", ["numpy", "cntk"])
    result = CliRunner().invoke(main, ["backends", "--json"])
    (cntk,) = [b for b in json.loads(result.output) if b["name"] == "cntk"]
    assert cntk["status"] == "not installed"
    assert cntk["reason"].startswith("not installed; needs Python 3.6, none found: `pyenv install 3.6.15`")
    assert "`conda create -n py36 python=3.6`, then `kbtool env install cntk`" in cntk["reason"]
    assert "--python PATH" in cntk["reason"] and "\n" not in cntk["reason"]
    machine.pyenv("3.6.15")  # once there is one, the usual line
    result = CliRunner().invoke(main, ["backends", "--json"])
    (cntk,) = [b for b in json.loads(result.output) if b["name"] == "cntk"]
    assert cntk["reason"] == "not installed: run `kbtool env install cntk`"


# ---------------------------------------------------------------------------- env install --python / --all
@pytest.fixture
def bare(machine, tmp_path, monkeypatch):
    """A machine with no Python but kbtool's own (3.11): no pyenv, uv or conda, an empty PATH."""
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbhome"))
    for name, value in machine.environ.items():
        monkeypatch.setenv(name, value)
    for name in ("PYENV_ROOT", "KBTOOL_PYTHON_3_6", "KBTOOL_PYTHON_3_7", "CONDA_EXE", "UV_PYTHON_INSTALL_DIR"):
        monkeypatch.delenv(name, raising=False)
    return machine


def run(*args):
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "args, said",
    [
        (["cntk", "--python", "{py37}"], "kbtool: error: --python {py37} is Python 3.7.16; cntk needs Python 3.6"),
        (["cntk", "--python", "{root}/none"], "kbtool: error: --python {root}/none: does not exist"),
        (["cntk", "--python", "{root}"], "kbtool: error: --python {root}: not an executable file"),
        (["cntk", "--python", "{text}"], "kbtool: error: --python {text}: not an executable file"),
        (
            ["cntk", "--python", "{broken}"],
            "kbtool: error: --python {broken}: did not run as a Python interpreter (exit 3",
        ),
        (["--all", "--python", "{py37}"], "kbtool: error: --python names one interpreter: name the backends it builds"),
        (["cntk", "mxnet", "--python", "{py37}"], "backends need different Pythons (cntk 3.6, mxnet 3.7)"),
        (
            ["keras-numpy", "mxnet", "--python", "{py36}"],
            "--python {py36} is Python 3.6.15; keras-numpy and mxnet needs",
        ),
    ],
    ids=["other version", "missing", "folder", "not executable", "not python", "--all", "two versions", "shared env"],
)
def test_env_install_python_is_checked_before_anything_is_written(bare, tmp_path, args, said):
    names = {
        "root": str(tmp_path),
        "py37": fake_python(tmp_path / "py37" / "python", "3.7.16 CPython"),
        "py36": fake_python(tmp_path / "py36" / "python", "3.6.15 CPython"),
        "broken": _script(tmp_path / "broken" / "python", "echo nope >&2; exit 3"),
        "text": str(tmp_path / "notes.txt"),
    }
    (tmp_path / "notes.txt").write_text("not a program")
    code, out = run("env", "install", *[a.format(**names) for a in args])
    assert code == 2 and len(out.strip().splitlines()) == 1, out
    assert said.format(**names) in out
    assert not (tmp_path / "kbhome" / "envs").exists()


def _fake_pip(monkeypatch, commands):
    """env install without venv or pip: each command is recorded, the env freezes empty."""

    def fake_run(argv, log, env=None, cwd=None, terminal=None):
        commands.append((list(argv), terminal))
        if argv[1:3] == ["-m", "venv"]:
            os.makedirs(os.path.join(argv[3], "bin"), exist_ok=True)
            open(os.path.join(argv[3], "bin", "python"), "w").close()
        return ""

    monkeypatch.setattr(env_build, "run", fake_run)
    monkeypatch.setattr(env_build, "freeze", lambda pip, pip_env, env_dir: [])


@pytest.fixture
def recipes(monkeypatch):
    """Three backends: `new` on kbtool's own Python, `old` on Python 3.6 and `rider`, which runs in old's env."""
    own = "{}.{}".format(*sys.version_info[:2])
    table = {
        "new": Recipe(name="new", python_version=own, packages=["new==1"], module="new"),
        "old": Recipe(name="old", python_version="3.6", packages=["old==1"], module="old"),
        "rider": Recipe(name="rider", python_version="3.6", packages=[], module="rider", env_name="old"),
    }
    monkeypatch.setattr(registry, "RECIPES", table)
    monkeypatch.setattr(recipes_table, "RECIPES", table)  # the one install_all reads
    return table


def test_env_install_all_installs_what_it_can_and_skips_what_has_no_python_with_exit_0(bare, recipes, monkeypatch):
    commands = []
    _fake_pip(monkeypatch, commands)
    code, out = run("env", "install", "--all")
    assert code == 0, out
    assert f"new: installed in {recipes['new'].env_dir()}" in out
    assert "old: skipped, no Python 3.6 here" in out
    assert "rider: runs in the old env, which was skipped (no Python 3.6)" in out
    assert "kbtool: skipped: old: no working Python 3.6 interpreter; looked at: KBTOOL_PYTHON_3_6 (not set)" in out
    assert "pyenv install 3.6.15" in out  # the ways, said once
    summary = [line for line in out.splitlines() if line.startswith("skipped: ")]
    assert summary == [
        "skipped: old, rider (no Python 3.6; get one with `pyenv install 3.6.15` or `conda create -n py36 "
        "python=3.6` (then `kbtool env install NAME`), or name one: `kbtool env install NAME --python PATH` or "
        "KBTOOL_PYTHON_3_6=PATH)"
    ]
    assert [argv[1:3] for argv, _ in commands][0] == ["-m", "venv"] and len(commands) == 2  # new's venv and pip only
    record = json.loads(open(os.path.join(recipes["new"].env_dir(), envs.RECORD)).read())
    assert record["python_source"] == "kbtool's own Python" and record["python"] == sys.executable
    assert not os.path.exists(recipes["old"].env_dir())
    # named, the same missing Python is a failure: the user asked for that env
    code, out = run("env", "install", "old")
    assert code == 2 and "kbtool: error: old: no working Python 3.6 interpreter; looked at:" in out
    assert "skipped" not in out


def test_env_install_all_fails_on_a_real_install_failure_even_when_others_are_skipped(bare, recipes, monkeypatch):
    commands = []
    _fake_pip(monkeypatch, commands)
    recipes["new"].system_check = lambda: ["libfoo is missing (apt-get install libfoo)"]
    code, out = run("env", "install", "--all")
    assert code == 2
    assert "kbtool: error: new: libfoo is missing" in out and "skipped: old, rider (no Python 3.6;" in out


def test_env_install_python_builds_the_env_from_it_and_records_where_it_came_from(bare, recipes, tmp_path, monkeypatch):
    commands = []
    _fake_pip(monkeypatch, commands)
    py36 = fake_python(tmp_path / "py36" / "bin" / "python3.6")
    code, out = run("env", "install", "rider", "--python", py36)
    assert code == 0, out
    assert commands[0][0] == [py36, "-m", "venv", recipes["old"].env_dir()]
    assert f"Python 3.6.15 from --python: {py36}" in out
    record = json.loads(open(os.path.join(recipes["old"].env_dir(), envs.RECORD)).read())
    assert (record["python"], record["python_version"], record["python_source"]) == (py36, "3.6.15", "--python")


# ---------------------------------------------------------------------------- pip's output: live on a terminal
class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty

    def fileno(self):
        return 2


def test_pip_output_goes_live_only_to_a_terminal():
    assert envs.live_terminal(_Stream(True), {"TERM": "xterm"}) is not None
    assert envs.live_terminal(_Stream(True), {}) is not None
    assert envs.live_terminal(_Stream(True), {"TERM": "dumb"}) is None
    assert envs.live_terminal(_Stream(False), {"TERM": "xterm"}) is None  # a pipe, a log file, CI
    assert envs.live_terminal(io.StringIO(), {}) is None  # no file descriptor at all


def test_on_a_terminal_pip_writes_to_it_as_it_runs_and_a_failure_points_there():
    import pty

    master, slave = pty.openpty()
    terminal = os.fdopen(slave, "w")
    try:
        assert envs.live_terminal(terminal, {"TERM": "xterm"}) is terminal
        said = []
        code = "import sys; print('Collecting keras'); sys.stdout.flush(); print('Downloading x.whl')"
        assert env_pip.run([sys.executable, "-c", code], said.append, terminal=terminal) == ""
        seen = os.read(master, 4096).decode()
        assert "Collecting keras" in seen and "Downloading x.whl" in seen and said == [f"$ {sys.executable} -c {code}"]
        with pytest.raises(KbtoolError, match=r"failed \(exit 3\): its output is above$"):
            env_pip.run([sys.executable, "-c", "import sys; sys.exit(3)"], said.append, terminal=terminal)
    finally:
        terminal.close()
        os.close(master)


def test_off_a_terminal_pip_output_is_captured_and_its_last_line_said_on_failure():
    said = []
    assert env_pip.run([sys.executable, "-c", "print('Collecting keras')"], said.append) == "Collecting keras\n"
    with pytest.raises(KbtoolError) as caught:
        env_pip.run([sys.executable, "-c", "print('one'); print('ERROR: no wheel'); raise SystemExit(1)"], said.append)
    assert str(caught.value).endswith("failed (exit 1): ERROR: no wheel")


@pytest.mark.parametrize("tty", [False, True], ids=["log", "terminal"])
def test_pip_talks_in_full_to_a_terminal_or_to_the_capture_a_failure_is_read_from(bare, recipes, monkeypatch, tty):
    # never -q: a quiet pip leaves "The conflict is caused by:" out, and a failure could then only say
    # "ResolutionImpossible"
    commands = []
    _fake_pip(monkeypatch, commands)
    terminal = _Stream(True) if tty else None
    envs.install(recipes["new"], log=lambda line: None, terminal=terminal)
    (pip,) = [argv for argv, _ in commands if "install" in argv]
    assert "-q" not in pip
    assert all(given is terminal for argv, given in commands if "install" in argv)


def test_a_dependency_conflict_is_said_as_pip_explains_it():
    output = (
        "ERROR: Cannot install keras==2.2.0 and tensorflow==1.15.5 because these package versions have conflicting "
        "dependencies.\n\nThe conflict is caused by:\n    keras 2.2.0 depends on keras-applications==1.0.2\n"
        "    tensorflow 1.15.5 depends on keras-applications>=1.0.8\n\nTo fix this you could try to:\n"
        "1. loosen the range\nERROR: ResolutionImpossible: for help visit https://pip.pypa.io\n"
    )
    with pytest.raises(KbtoolError) as caught:
        env_pip.run([sys.executable, "-c", f"import sys; sys.stdout.write({output!r}); raise SystemExit(1)"], print)
    assert str(caught.value).endswith(
        "failed (exit 1): conflicting dependencies: keras 2.2.0 depends on keras-applications==1.0.2; "
        "tensorflow 1.15.5 depends on keras-applications>=1.0.8"
    )
    assert envs.conflict(["ERROR: no wheel"]) is None


def test_env_install_help_documents_its_exit_codes_and_the_python_option():
    code, out = run("env", "install", "--help")
    assert code == 0
    assert "Exit codes:" in out and "0  every env asked is installed" in out and "`skipped:` line" in out
    assert "2  an env failed to install" in out and "--python PATH" in out and "Examples:" in out
