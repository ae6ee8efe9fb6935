"""Faults outside `check`: every command as hard to break as `check`.

Table-driven, one row per fault and command: a custom backend module that exits, crashes or hangs while `config`
imports it; an env whose interpreter link dangles; a KBTOOL_HOME that cannot be written; `explore --save` into a
spec it cannot write; `env remove` of a folder kbtool did not make; completion on a hostile `--spec`; a backend
that returns inf or NaN; values too long to quote. Each is one line (never a traceback), the right exit code, and
nothing of the user's lost. Fast: the numpy reference and custom modules on kbtool's own Python only.
"""

import dataclasses
import errno
import json
import os
import re
import subprocess
import sys
import threading
import time
import types

import numpy as np
import pytest
from click.testing import CliRunner

import kbtool
from kbtool import files, options
from kbtool.cli import main
from kbtool.runners import base, envs
from kbtool.runners.envs.interpreters import Interpreter
from kbtool.runners.registry import RECIPES
from kbtool.verdicts import values

REPO = os.path.dirname(os.path.dirname(os.path.abspath(kbtool.__file__)))


def invoke(*args, env=None):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()  # click >= 8.2 keeps stderr apart
    return runner.invoke(main, list(args), env=env)


def assert_no_traceback(result):
    uncaught = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not uncaught, f"TRACEBACK: {type(result.exception).__name__}: {result.exception}"
    # a Python traceback starts a line (a backend's message quoted in a JSON report may hold the word)
    assert not re.search(r"(?m)^Traceback \(most recent call last\):", result.stderr + result.stdout), "TRACEBACK"


def assert_one_error(result, code, *needles):
    assert_no_traceback(result)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbtool: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert result.exit_code == code, (result.exit_code, result.stderr)


# ---------------------------------------------------------------------------- 1. config imports a module
# (name, module source, what the one line says): the process importing it is a child, so kbtool lives on
IMPORT_FAULTS = [
    ("os_exit_0", "import os\nos._exit(0)\n", "exited (exit code 0) before the import finished"),
    ("os_exit_3", "import os\nos._exit(3)\n", "exited (exit code 3) before the import finished"),
    ("segfault", "import ctypes\nctypes.string_at(0)\n", "was killed by SIGSEGV"),
    ("sigkill", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "was killed by SIGKILL"),
    ("hang", "import time\ntime.sleep(600)\n", "did not finish importing within 1 s"),
    ("hang_in_c", "import threading\nthreading.Event().wait()\n", "did not finish importing within 1 s"),
]
IMPORT_COMMANDS = ["set", "validate keras.json", "validate KERAS_BACKEND"]


def _config_command(command, module, keras_home, monkeypatch):
    if command == "set":
        return ["config", "set", "backend", module, "--timeout", "1"]
    if command == "validate keras.json":
        keras_home.mkdir(exist_ok=True)
        (keras_home / "keras.json").write_text(json.dumps({"backend": module}))
    else:
        monkeypatch.setenv("KERAS_BACKEND", module)
    return ["config", "validate", "--timeout", "1"]


@pytest.mark.parametrize("command", IMPORT_COMMANDS)
@pytest.mark.parametrize("name,source,needle", IMPORT_FAULTS, ids=[row[0] for row in IMPORT_FAULTS])
def test_a_module_that_kills_or_hangs_its_import(
    keras_home, custom_backend, monkeypatch, name, source, needle, command
):
    module = custom_backend("fbk_" + name, "kb", source)
    before = (keras_home / "keras.json").read_bytes() if (keras_home / "keras.json").exists() else None
    args = _config_command(command, module, keras_home, monkeypatch)
    before = (keras_home / "keras.json").read_bytes() if (keras_home / "keras.json").exists() else None
    started = time.monotonic()
    result = invoke(*args)
    assert time.monotonic() - started < 30
    assert_one_error(result, 2, module, needle)
    after = (keras_home / "keras.json").read_bytes() if (keras_home / "keras.json").exists() else None
    assert after == before  # nothing written (set) or changed (validate)


def test_a_module_whose_child_keeps_running_does_not_hold_the_check(keras_home, custom_backend):
    """A module that starts a long-lived process (which inherits the answer pipe) is judged when it is imported."""
    source = "import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    module = custom_backend("fbk_daemon", "kb", source)
    started = time.monotonic()
    result = invoke("config", "set", "backend", module)
    assert time.monotonic() - started < 20
    assert_one_error(result, 2, module, "lacks placeholder, variable, function")


def test_a_working_module_is_set_and_validates(keras_home, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    module = "tests.fixtures.planted_backend"
    result = invoke("config", "set", "backend", module)
    assert_no_traceback(result)
    assert result.exit_code == 0, result.stderr
    assert json.loads((keras_home / "keras.json").read_text())["backend"] == module
    result = invoke("config", "validate")
    assert result.exit_code == 0 and "valid" in result.stdout, result.stderr


def test_the_import_runs_in_a_child_not_in_kbtool(keras_home, custom_backend):
    module = custom_backend("fbk_marker", "kb", "import os\nos.environ['KBTOOL_IMPORTED_HERE'] = '1'\n")
    invoke("config", "set", "backend", module)
    assert "KBTOOL_IMPORTED_HERE" not in os.environ and module not in sys.modules


# ---------------------------------------------------------------------------- 2. an env whose interpreter is gone
@pytest.fixture
def dangling_env(tmp_path, monkeypatch):
    """A copy of an env's layout under a temporary KBTOOL_HOME: a real venv, its record, and bin/python pointing to
    a Python that was removed (as when its pyenv version is uninstalled)."""
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbhome"))
    env_dir = tmp_path / "kbhome" / "envs" / "theano"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    python.unlink()
    python.symlink_to(tmp_path / "pyenv" / "versions" / "3.6.15" / "bin" / "python3.6")
    (env_dir / envs.RECORD).write_text(json.dumps({"backend": "theano", "created": "2026-01-01T00:00:00+00:00"}))
    return str(tmp_path / "pyenv" / "versions" / "3.6.15" / "bin" / "python3.6")


BROKEN_MESSAGE = ("theano env is broken: interpreter", "is missing; run `kbtool env install theano --force`")
DANGLING_COMMANDS = [
    (("env", "list"), 2),
    (("check", "--op", "abs", "--backend", "theano"), 2),
    (("check", "--op", "abs", "--backend", "tests.fixtures.planted_backend@theano"), 2),
    (("explore", "--op", "abs", "--backend", "theano", "--max-examples", "1"), 2),
    (("bench", "--op", "abs", "--backend", "theano"), 2),
]


@pytest.mark.parametrize("command,code", DANGLING_COMMANDS, ids=[" ".join(row[0][:4]) for row in DANGLING_COMMANDS])
def test_an_env_whose_interpreter_is_gone(dangling_env, command, code):
    result = invoke(*command)
    assert_one_error(result, code, dangling_env, *BROKEN_MESSAGE)
    if command == ("env", "list"):
        row = [line for line in result.stdout.splitlines() if line.startswith("theano ")]
        assert "broken" in row[0] and "installed" not in row[0]


def test_backends_reports_an_env_whose_interpreter_is_gone_as_broken(dangling_env):
    result = invoke("backends", "--json")
    assert_no_traceback(result)
    (theano,) = [info for info in json.loads(result.stdout) if info["name"] == "theano"]
    assert theano["status"] == "broken" and dangling_env in theano["reason"]
    assert all(part in theano["reason"] for part in BROKEN_MESSAGE)


def test_env_list_json_names_the_missing_interpreter(dangling_env):
    result = invoke("env", "list", "--json")
    (theano,) = [info for info in json.loads(result.stdout) if info["name"] == "theano"]
    assert dangling_env in theano["problem"] and result.exit_code == 2


# ---------------------------------------------------------------------------- 3. a KBTOOL_HOME kbtool cannot write
UNWRITABLE = "/sys/kbtool-test-home"  # /sys refuses a new folder to every user, root included (EPERM)


@pytest.fixture
def unwritable_home(monkeypatch):
    with pytest.raises(OSError):
        os.makedirs(UNWRITABLE)
    monkeypatch.setenv("KBTOOL_HOME", UNWRITABLE)
    monkeypatch.setattr(base, "_FALLBACK_HOME", None, raising=False)
    return UNWRITABLE


@pytest.mark.parametrize(
    "command",
    [
        ("check", "--op", "abs", "--backend", "numpy", "-q"),
        ("explore", "--op", "abs", "--backend", "numpy", "--replay", '{"id": "r", "inputs": [{"value": [1.5]}]}'),
        ("bench", "--op", "abs", "--backend", "numpy", "--size", "small", "--budget", "0.01", "--min-samples", "2"),
    ],
    ids=["check", "explore", "bench"],
)
def test_an_unwritable_home_is_said_and_the_command_goes_on(unwritable_home, command):
    result = invoke(*command)
    assert_no_traceback(result)
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if UNWRITABLE in line or "cannot write" in line]
    assert warnings and all(line.startswith("kbtool: ") for line in warnings), result.stderr
    assert "broken" not in result.stdout


def test_backends_with_an_unwritable_home(unwritable_home):
    result = invoke("backends", "--json")
    assert_no_traceback(result)
    (numpy_info,) = [info for info in json.loads(result.stdout) if info["name"] == "numpy"]
    assert numpy_info["status"] == "available", numpy_info


def test_a_full_home_gives_the_workers_a_temporary_keras_home(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbhome"))
    monkeypatch.setattr(base, "_FALLBACK_HOME", None, raising=False)
    real = files.write_atomic

    def full(path, text):
        if str(tmp_path) in os.path.realpath(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
        return real(path, text)

    monkeypatch.setattr(files, "write_atomic", full)
    home = base.keras_home_for({"floatx": "float64"})
    assert not home.startswith(str(tmp_path))
    assert json.loads(open(os.path.join(home, "keras.json")).read())["floatx"] == "float64"
    assert base.keras_home_for({"floatx": "float64"}) == home  # said once, the same folder after
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "No space left on device" in err[0] and err[0].startswith("kbtool: warning: ")


# ---------------------------------------------------------------------------- 4. explore --save cannot write
def _read_only(monkeypatch, where):
    from kbtool.explore import save

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), kwargs.get("dir") or args[0])

    if where == "folder":  # the first write into the folder: the temporary copy the new text is validated from
        monkeypatch.setattr(save, "tempfile", types.SimpleNamespace(mkstemp=refuse))
    else:
        monkeypatch.setattr(save, "files", types.SimpleNamespace(**dict(vars(files), write_atomic=refuse)))


SOFTMAX_BUG = {"id": "found", "inputs": [{"value": [[[[1.0, 2.0]]], [[[0.5, 0.25]]]]}], "kwargs": {"axis": 0}}


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("where", ["folder", "file"])
def test_explore_save_that_cannot_write_still_prints_the_finding(tmp_path, monkeypatch, where, as_json):
    spec_file = tmp_path / "ops.yaml"
    spec_file.write_bytes(open(os.path.join(REPO, "specs", "ops.yaml"), "rb").read())
    before = spec_file.read_bytes()
    _read_only(monkeypatch, where)
    args = ["explore", "--op", "softmax", "--backend", "tests.fixtures.planted_backend", "--spec", str(spec_file)]
    args += ["--replay", json.dumps(SOFTMAX_BUG), "--save"] + (["--json"] if as_json else [])
    result = invoke(*args, env={"KBTOOL_HOME": str(tmp_path / "home"), "PYTHONPATH": REPO})
    assert_no_traceback(result)
    assert result.exit_code == 1  # as for a finding
    if as_json:
        document = json.loads(result.stdout)
        assert document["saved"] == [] and "unexplained" in result.stdout and "replay" in result.stdout
    else:
        assert "softmax" in result.stdout and "--replay" in result.stdout
    errors = result.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith("kbtool: error: not saved: cannot write " + str(spec_file))
    assert os.strerror(errno.EROFS) in errors[0]
    assert spec_file.read_bytes() == before


# ---------------------------------------------------------------------------- 5. env remove deletes only kbtool's
def _user_folder(env_dir):
    (env_dir / "thesis").mkdir(parents=True)
    (env_dir / "thesis" / "chapter1.tex").write_text("mine")


def _kbtool_record(env_dir):
    (env_dir / "lib").mkdir(parents=True)
    (env_dir / envs.RECORD).write_text("{}")


def _install_marker_only(env_dir):  # an install stopped before its record
    (env_dir / "lib").mkdir(parents=True)
    (env_dir / envs.MARKER).write_text("made by kbtool")


def _empty_folder(env_dir):
    env_dir.mkdir(parents=True)


REMOVALS = [
    ("user_folder", _user_folder, 2),
    ("record", _kbtool_record, 0),
    ("install_marker", _install_marker_only, 0),
    ("empty_folder", _empty_folder, 0),
]


@pytest.mark.parametrize("name,setup,code", REMOVALS, ids=[row[0] for row in REMOVALS])
def test_env_remove_deletes_only_what_kbtool_made(tmp_path, monkeypatch, name, setup, code):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbhome"))
    env_dir = tmp_path / "kbhome" / "envs" / "theano"
    setup(env_dir)
    result = invoke("env", "remove", "theano")
    if code:
        assert_one_error(result, 2, str(env_dir), "not an environment kbtool made", "not removed")
        assert (env_dir / "thesis" / "chapter1.tex").read_text() == "mine"
    else:
        assert_no_traceback(result)
        assert result.exit_code == 0 and not env_dir.exists()


@pytest.mark.parametrize("force", [False, True], ids=["install", "install --force"])
def test_env_install_never_takes_over_a_folder_kbtool_did_not_make(tmp_path, monkeypatch, force):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbhome"))
    env_dir = tmp_path / "kbhome" / "envs" / "theano"
    _user_folder(env_dir)
    monkeypatch.setattr(
        envs, "find_interpreter", lambda version, backend=None: Interpreter(sys.executable, "3", "test")
    )
    recipe = dataclasses.replace(RECIPES["theano"], system_check=list)
    with pytest.raises(kbtool.errors.KbtoolError) as caught:
        envs.install(recipe, log=lambda line: None, force=force)
    assert str(env_dir) in str(caught.value) and "\n" not in str(caught.value)
    assert sorted(os.listdir(env_dir)) == ["thesis"] and (env_dir / "thesis" / "chapter1.tex").read_text() == "mine"


# ---------------------------------------------------------------------------- 6. completion on a hostile --spec
def _fifo(tmp_path):
    path = tmp_path / "spec.fifo"
    os.mkfifo(str(path))
    return str(path)


def _huge(tmp_path):
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as fh:
        fh.write(b"ops:\n  abs:\n")
        fh.truncate(files.MAX_FILE_BYTES + 1)
    return str(path)


def _not_utf8(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("ops:\n  caf\xe9:\n".encode("latin-1"))
    return str(path)


HOSTILE_SPECS = [
    ("dev_zero", lambda tmp_path: "/dev/zero"),
    ("dev_urandom", lambda tmp_path: "/dev/urandom"),
    ("fifo", _fifo),
    ("larger_than_the_limit", _huge),
    ("directory", lambda tmp_path: str(tmp_path)),
    ("missing", lambda tmp_path: str(tmp_path / "none.yaml")),
    ("not_utf8", _not_utf8),
    ("nul_in_path", lambda tmp_path: "spec\0.yaml"),
]


class _Ctx:
    def __init__(self, spec_path):
        self.params, self.parent = {"spec_path": spec_path}, None


@pytest.mark.parametrize("name,make", HOSTILE_SPECS, ids=[row[0] for row in HOSTILE_SPECS])
def test_completion_on_a_hostile_spec_offers_nothing_at_once(tmp_path, name, make):
    path = make(tmp_path)
    got = []
    worker = threading.Thread(target=lambda: got.append(options.complete_op(_Ctx(path), None, "")), daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "completion hangs"
    assert got == [[]] and time.monotonic() - started < 5


def test_completion_through_the_shell_protocol_on_dev_zero():
    env = dict(
        os.environ, _KBTOOL_COMPLETE="bash_complete", COMP_WORDS="kbtool spec show --spec /dev/zero ", COMP_CWORD="5"
    )
    env["PYTHONPATH"] = REPO
    proc = subprocess.run([sys.executable, "-m", "kbtool"], env=env, capture_output=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == b"" and b"Traceback" not in proc.stderr


# ---------------------------------------------------------------------------- 7. inf and NaN from a backend
NON_FINITE = [
    # (reference, backend's, what the message says)
    ([1.0, 1.5], [1.0, np.inf], "max abs diff inf", "1 of them non-finite"),
    ([2.0, 1.5], [3.0, np.inf], "max abs diff inf", "the first inf where the reference is 1.5 at (1,)"),
    ([1.0, 1.5], [1.0, np.nan], "max abs diff nan", "1 of them non-finite"),
    ([1.0, -np.inf], [1.0, np.inf], "max abs diff inf", "first at (1,): inf vs reference -inf"),
    ([1.0, np.inf], [1.0, 1e308], "max abs diff inf", "1 of them non-finite"),
]


@pytest.mark.parametrize("exp,act,diff,needle", NON_FINITE)
def test_a_non_finite_value_is_a_failure_said_as_such(exp, act, diff, needle):
    verdict = values.compare_value(np.array(exp), np.array(act), {})
    assert not verdict.passed and diff in verdict.message and needle in verdict.message, verdict.message
    details = verdict.details.as_dict()
    assert "max_abs_diff" not in details and "max_rel_diff" not in details  # never the largest finite one (0)
    json.dumps(details, allow_nan=False)  # the report stays JSON


INF_BACKEND = """
import numpy as np
from kbtool.reference import *  # noqa
from kbtool.reference import abs as _abs
from kbtool.reference.core import op


@op
def abs(x):
    out = np.array(_abs(x), dtype=np.asarray(x).dtype)
    out.flat[out.size - 1] = {value}
    return out
"""


@pytest.mark.parametrize("value,diff", [("np.inf", "max abs diff inf"), ("np.nan", "max abs diff nan")])
def test_check_on_a_backend_that_returns_non_finite_values(tmp_path, monkeypatch, value, diff):
    (tmp_path / "fbk_nonfinite.py").write_text(INF_BACKEND.format(value=value))
    monkeypatch.chdir(tmp_path)
    env = {"KBTOOL_HOME": str(tmp_path / "home"), "PYTHONPATH": os.pathsep.join([REPO, str(tmp_path)])}
    result = invoke("check", "--op", "abs", "--backend", "fbk_nonfinite", "--json", env=env)
    assert_no_traceback(result)
    assert result.exit_code == 1, result.stderr
    results = json.loads(result.stdout)["results"]
    failed = [r for r in results if r["status"] == "fail"]
    assert failed and all(diff in r["message"] and "non-finite" in r["message"] for r in failed)
    assert "max abs diff 0," not in result.stdout


# ---------------------------------------------------------------------------- 8. precise one-line messages
def _keras_json(keras_home, text):
    keras_home.mkdir()
    (keras_home / "keras.json").write_text(text)


DIGITS = "1" + "0" * 400
MESSAGES = [
    ("epsilon_400_digits", f'{{"epsilon": {DIGITS}}}', ("config", "validate"), 1, "got an integer of 401 digits"),
    ("floatx_400_digits", f'{{"floatx": {DIGITS}}}', ("config", "validate"), 1, "got an integer of 401 digits"),
    ("set_epsilon_400_digits", None, ("config", "set", "epsilon", "9" * 400), 2, "a number past the float range"),
    ("set_long_floatx", None, ("config", "set", "floatx", "x" * 5000), 2, "(5002 characters)"),
    (
        "check_known_dev_null",
        None,
        ("check", "--op", "abs", "--backend", "numpy", "--known", "/dev/null"),
        2,
        "cannot read /dev/null: not a regular file (a character device)",
    ),
    (
        "explore_known_dev_null",
        None,
        ("explore", "--op", "abs", "--backend", "numpy", "--known", "/dev/null"),
        2,
        "cannot read /dev/null: not a regular file (a character device)",
    ),
]


@pytest.mark.parametrize("name,content,command,code,needle", MESSAGES, ids=[row[0] for row in MESSAGES])
def test_precise_one_line_messages(keras_home, tmp_path, monkeypatch, name, content, command, code, needle):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbhome"))
    if content is not None:
        _keras_json(keras_home, content)
    result = invoke(*command)
    assert_no_traceback(result)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and needle in lines[0] and len(lines[0]) < 300, result.stderr
    assert "no such file" not in lines[0] and result.exit_code == code


@pytest.mark.parametrize(
    "what,named", [("bench report", "a bench report file"), ("report ", "a report file"), ("", "such a file")]
)
def test_a_file_past_the_limit_is_named_for_what_it_is(tmp_path, what, named):
    path = tmp_path / "big.json"
    path.write_text("{}" * 1000)
    with pytest.raises(files.FileProblem) as caught:
        files.read_text(str(path), what, max_bytes=1024)
    assert str(caught.value) == f"{path}: larger than 1 KB, the most kbtool reads from {named}"
    assert "YAML" not in str(caught.value)
    with pytest.raises(kbtool.errors.KbtoolError) as caught:
        files.read_text(str(tmp_path / "none.json"), what)
    assert f"cannot read {what.strip()}{' ' if what.strip() else ''}{tmp_path / 'none.json'}" in str(caught.value)
