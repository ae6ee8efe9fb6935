"""Faults in keras.json and in kbtool's own state: every bad state is one line on stderr naming the file and the
problem (never a traceback), exit 2 (`config validate`: 1, the problem in its own format), and no lost update or
lost file, also under concurrent and killed writers.

Table-driven: each keras.json state, command-line value and environment state is one row per command.
"""

import errno
import fcntl
import json
import multiprocessing
import os
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest
from click.testing import CliRunner

import kbtool
from kbtool.cli import main
from kbtool.config import keras_json as config
from kbtool.runners.registry import RECIPES

REPO = os.path.dirname(os.path.dirname(os.path.abspath(kbtool.__file__)))  # the kbtool under test


def invoke(*args):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()  # click >= 8.2 keeps stderr apart
    return runner.invoke(main, list(args))


def assert_no_traceback(result):
    uncaught = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not uncaught, f"TRACEBACK: {type(result.exception).__name__}: {result.exception}"
    assert "Traceback" not in result.stderr + result.stdout, "TRACEBACK in output"


def assert_one_line(result, code, names, needle=None, validate=False):
    """Exit `code`, stderr exactly one line naming `names`: `kbtool: error: ...`, or a validate problem."""
    assert_no_traceback(result)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    if validate:
        assert lines[0].startswith(names), lines[0]
    else:
        assert lines[0].startswith("kbtool: error: "), lines[0]
    assert names in lines[0], (names, lines[0])
    if needle:
        assert needle in lines[0], (needle, lines[0])
    assert result.exit_code == code, (result.exit_code, result.stderr)


def temp_files(folder):
    return sorted(name for name in os.listdir(folder) if name.endswith(".tmp"))


# ---------------------------------------------------------------------------- keras.json states
SHOW, SHOW_JSON, GET, VALIDATE = (
    ("config", "show"),
    ("config", "show", "--json"),
    ("config", "get", "floatx"),
    ("config", "validate"),
)
SET, FORCE = ("config", "set", "floatx", "float64"), ("config", "set", "floatx", "float64", "--force")
FORCE_HINT = "--force"

# Content kbtool cannot use as keras.json: show/get exit 2, validate 1, set 2 (file untouched), set --force 0
# (the file backed up as it was).
CORRUPT = [
    ("not_utf8", b"\xff\xfe{}", "not valid UTF-8"),
    ("latin1", '{"floatx": "caf\xe9"}'.encode("latin-1"), "not valid UTF-8"),
    ("empty", b"", "not valid JSON"),
    ("utf8_bom", "\ufeff{}".encode("utf-8"), "not valid JSON"),
    ("truncated", b'{"floatx": "float32",', "not valid JSON"),
    ("control_char", b'{"floatx": "float\x0132"}', "not valid JSON"),
    ("nested_100000", b"[" * 100000, "nested too deeply"),
    ("nested_150_levels", b'{"a": ' * 150 + b"1" + b"}" * 150, "nested deeper than"),
    ("infinity", b'{"epsilon": Infinity}', "Infinity is not a finite JSON number"),
    ("minus_infinity", b'{"epsilon": -Infinity}', "-Infinity is not a finite JSON number"),
    ("nan", b'{"epsilon": NaN}', "NaN is not a finite JSON number"),
    ("nan_in_unknown_key", b'{"mine": [1, NaN]}', "NaN is not a finite JSON number"),
    ("overflowing_float", b'{"epsilon": 1e400}', "1e400 is not a finite JSON number"),
    ("int_of_5000_digits", b'{"epsilon": ' + b"1" * 5000 + b"}", "not valid JSON"),
    ("list", b"[]", "must hold a JSON object"),
    ("string", b'"floatx"', "must hold a JSON object"),
    ("null", b"null", "must hold a JSON object"),
    ("one_mib", b'{"k": "' + b"x" * (1 << 20) + b'"}', "larger than"),
]
# Valid JSON with bad values: readable (show/get/set 0), validate 1 naming the key.
BAD_VALUES = [
    ("dim_ordering_list", {"image_dim_ordering": [1]}, "image_dim_ordering must be 'tf' or 'th'"),
    ("dim_ordering_object", {"image_dim_ordering": {"tf": 1}}, "image_dim_ordering must be"),
    ("floatx_object", {"floatx": {"a": 1}}, "floatx must be one of"),
    ("data_format_list", {"image_data_format": ["channels_last"]}, "image_data_format must be one of"),
    ("backend_list", {"backend": ["tensorflow"]}, "backend must be a string"),
    ("backend_trailing_newline", {"backend": "nosuchpkg.mod\n"}, "dotted module path"),
    ("epsilon_400_digit_int", {"epsilon": 10**400}, "epsilon must be a positive float (and finite)"),
    ("epsilon_string", {"epsilon": "1e-7"}, "epsilon must be a positive float (and finite)"),
    ("floatx_lone_surrogate", {"floatx": "\ud800"}, "floatx must be one of"),
]


def _write(keras_home, content):
    keras_home.mkdir(exist_ok=True)
    path = keras_home / "keras.json"
    path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode("utf-8"))
    return path


@pytest.mark.parametrize("command", [SHOW, SHOW_JSON, GET, VALIDATE, SET, FORCE], ids=" ".join)
@pytest.mark.parametrize("name,content,needle", CORRUPT, ids=[row[0] for row in CORRUPT])
def test_corrupt_keras_json(keras_home, name, content, needle, command):
    path = _write(keras_home, content)
    result = invoke(*command)
    if command == FORCE:
        assert_no_traceback(result)
        assert result.exit_code == 0, result.stderr
        assert json.loads(path.read_text())["floatx"] == "float64"
        backups = [p for p in keras_home.iterdir() if p.name.startswith("keras.json.bak-")]
        assert len(backups) == 1 and backups[0].read_bytes() == content and "backed up to" in result.stderr
        return
    if command == VALIDATE:
        assert_one_line(result, 1, str(path), needle, validate=True)
    else:
        assert_one_line(result, 2, str(path), needle)
        if command == SET:
            assert FORCE_HINT in result.stderr
    assert path.read_bytes() == content  # never overwritten without --force


@pytest.mark.parametrize("command", [SHOW, SHOW_JSON, GET, VALIDATE, SET, FORCE], ids=" ".join)
@pytest.mark.parametrize("name,content,needle", BAD_VALUES, ids=[row[0] for row in BAD_VALUES])
def test_bad_values_in_keras_json(keras_home, name, content, needle, command):
    path = _write(keras_home, content)
    result = invoke(*command)
    if command == VALIDATE:
        assert_one_line(result, 1, str(path), needle, validate=True)
        return
    assert_no_traceback(result)
    assert result.exit_code == 0, result.stderr
    if command in (SET, FORCE):
        data = json.loads(path.read_text())
        assert data["floatx"] == "float64"
        assert {k: v for k, v in data.items() if k != "floatx"} == {k: v for k, v in content.items() if k != "floatx"}
    if command == SHOW_JSON:
        json.loads(result.stdout)


# Where keras.json is, rather than what it holds. Each: (setup(tmp_path, monkeypatch) -> name the message gives,
# {command: expected exit code}); every non-zero exit is one line naming that file.
def _keras_json_is_a_directory(tmp_path, monkeypatch):
    home = tmp_path / "kh"
    (home / "keras.json").mkdir(parents=True)
    monkeypatch.setenv("KERAS_HOME", str(home))
    return str(home / "keras.json")


def _keras_json_is_a_fifo(tmp_path, monkeypatch):
    home = tmp_path / "kh"
    home.mkdir()
    os.mkfifo(str(home / "keras.json"))
    monkeypatch.setenv("KERAS_HOME", str(home))
    return str(home / "keras.json")


def _keras_home_is_a_file(tmp_path, monkeypatch):
    (tmp_path / "kh").write_text("not a folder")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh"))
    return str(tmp_path / "kh")


def _keras_home_under_a_file(tmp_path, monkeypatch):
    (tmp_path / "kh").write_text("not a folder")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh" / "sub"))
    return str(tmp_path / "kh")


def _keras_home_on_proc(tmp_path, monkeypatch):
    home = f"/proc/kbtool-test-{os.getpid()}"
    monkeypatch.setenv("KERAS_HOME", home)
    return home


def _lock_is_a_directory(tmp_path, monkeypatch):
    home = tmp_path / "kh"
    (home / "keras.json.lock").mkdir(parents=True)
    monkeypatch.setenv("KERAS_HOME", str(home))
    return str(home / "keras.json")


PLACES = [
    ("keras_json_is_a_directory", _keras_json_is_a_directory, {SHOW: 2, GET: 2, VALIDATE: 1, SET: 2, FORCE: 2}),
    ("keras_json_is_a_fifo", _keras_json_is_a_fifo, {SHOW: 2, VALIDATE: 1, SET: 2, FORCE: 2}),
    ("keras_home_is_a_file", _keras_home_is_a_file, {SHOW: 2, VALIDATE: 1, SET: 2, FORCE: 2}),
    ("keras_home_under_a_file", _keras_home_under_a_file, {SHOW: 2, VALIDATE: 1, SET: 2, FORCE: 2}),
    ("keras_home_on_proc", _keras_home_on_proc, {SHOW: 0, VALIDATE: 0, SET: 2, FORCE: 2}),
    ("lock_is_a_directory", _lock_is_a_directory, {SHOW: 0, SET: 2, FORCE: 2}),
]
PLACE_ROWS = [(name, setup, command, code) for name, setup, codes in PLACES for command, code in codes.items()]


@pytest.mark.parametrize(
    "name,setup,command,code", PLACE_ROWS, ids=["{}-{}".format(row[0], " ".join(row[2])) for row in PLACE_ROWS]
)
def test_where_keras_json_lives(tmp_path, monkeypatch, name, setup, command, code):
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    named = setup(tmp_path, monkeypatch)
    unblock = None
    if name == "keras_json_is_a_fifo":  # a reader that blocks on the FIFO is released after 5 s, and fails

        def release():
            try:
                fd = os.open(named, os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, b"{}")
                os.close(fd)
            except OSError:
                pass

        unblock = threading.Timer(5, release)
        unblock.start()
    started = time.monotonic()
    result = invoke(*command)
    if unblock:
        unblock.cancel()
    assert time.monotonic() - started < 4, "HANG: {} blocked".format(" ".join(command))
    if code == 0:
        assert_no_traceback(result)
        assert result.exit_code == 0, result.stderr
    else:
        assert_one_line(result, code, named, validate=command == VALIDATE)


# Values on the command line and custom backend modules: refused in one line (2), nothing written.
NOT_FINITE = ["inf", "-inf", "Infinity", "nan", "NaN", "1e400"]
MODULES = [
    ("system_exit_0", "raise SystemExit(0)\n", "does not import: SystemExit: 0"),
    ("system_exit_none", "import sys\nsys.exit()\n", "does not import: SystemExit"),
    ("system_exit_text", "raise SystemExit('bye')\n", "does not import: SystemExit: bye"),
    ("generator_exit", "raise GeneratorExit()\n", "does not import: GeneratorExit"),
    ("two_line_message", "raise RuntimeError('first\\nsecond')\n", "does not import: RuntimeError: first second"),
    ("syntax_error", "def (:\n", "does not import: SyntaxError"),
    ("getattr_raises", "def __getattr__(name):\n    raise SystemExit(3)\n", "raised SystemExit: 3"),
]


@pytest.mark.parametrize("value", NOT_FINITE)
def test_set_refuses_non_finite_epsilon(keras_home, value):
    result = invoke("config", "set", "epsilon", value)
    assert_one_line(result, 2, "epsilon", "epsilon must be a positive float (and finite)")
    assert not (keras_home / "keras.json").exists()


@pytest.mark.parametrize("name,source,needle", MODULES, ids=[row[0] for row in MODULES])
def test_custom_backend_that_fails_at_import(keras_home, custom_backend, name, source, needle):
    module = custom_backend("faultpkg_" + name, "kb", source)
    result = invoke("config", "set", "backend", module)
    assert_one_line(result, 2, module, needle)
    assert not (keras_home / "keras.json").exists()


def test_keras_backend_that_exits_at_import_is_a_validate_problem(keras_home, monkeypatch, custom_backend):
    module = custom_backend("faultpkg_env", "kb", "raise SystemExit(0)\n")
    monkeypatch.setenv("KERAS_BACKEND", module)
    result = invoke(*VALIDATE)
    assert_one_line(result, 1, "KERAS_BACKEND", "does not import: SystemExit: 0", validate=True)


def test_keyboard_interrupt_at_import_is_left_to_click(keras_home, custom_backend):
    """An import that raises KeyboardInterrupt looks like the user's Ctrl-C: an interruption (click's 'Aborted!',
    exit 1, or kbtool's own 130), never a success and never 'does not import'."""
    module = custom_backend("faultpkg_ctrl_c", "kb", "raise KeyboardInterrupt\n")
    result = invoke("config", "set", "backend", module)
    assert result.exit_code in (1, 130) and "does not import" not in result.stderr
    assert not (keras_home / "keras.json").exists()


def test_get_prints_a_lone_surrogate_escaped(keras_home):
    _write(keras_home, {"mine": "\ud800"})
    result = invoke("config", "get", "mine")
    assert_no_traceback(result)
    assert result.exit_code == 0 and result.stdout == '"\\ud800"\n'


# ---------------------------------------------------------------------------- writes: mode, symlink, failures
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600])
def test_set_keeps_the_files_mode(keras_home, mode):
    path = _write(keras_home, {"floatx": "float32"})
    os.chmod(str(path), mode)
    assert invoke(*SET).exit_code == 0
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == mode
    assert json.loads(path.read_text()) == {"floatx": "float64"}


def test_set_writes_through_a_symlinked_keras_json(keras_home, tmp_path):
    target = tmp_path / "dotfiles" / "keras.json"
    target.parent.mkdir()
    target.write_text(json.dumps({"floatx": "float32", "mine": 1}))
    keras_home.mkdir()
    link = keras_home / "keras.json"
    link.symlink_to(target)
    assert invoke(*SET).exit_code == 0
    assert link.is_symlink() and os.readlink(str(link)) == str(target)
    assert json.loads(target.read_text()) == {"floatx": "float64", "mine": 1}


def test_force_on_a_symlinked_corrupt_file_keeps_the_link(keras_home, tmp_path):
    target = tmp_path / "dotfiles" / "keras.json"
    target.parent.mkdir()
    target.write_bytes(b"\xff{")
    keras_home.mkdir()
    link = keras_home / "keras.json"
    link.symlink_to(target)
    result = invoke(*FORCE)
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and json.loads(target.read_text())["floatx"] == "float64"
    backups = [p for p in target.parent.iterdir() if p.name.startswith("keras.json.bak-")]
    assert len(backups) == 1 and backups[0].read_bytes() == b"\xff{"


def test_set_through_a_dangling_symlink_creates_its_target(keras_home, tmp_path):
    target = tmp_path / "dotfiles" / "keras.json"
    keras_home.mkdir()
    link = keras_home / "keras.json"
    link.symlink_to(target)
    assert invoke(*SHOW).exit_code == 0  # missing target: the documented defaults
    assert invoke(*SET).exit_code == 0
    assert link.is_symlink() and json.loads(target.read_text())["floatx"] == "float64"


def _fail(err):
    def fail(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    return fail


@pytest.mark.parametrize("function,err", [("replace", errno.ENOSPC), ("fsync", errno.EIO), ("chmod", errno.EPERM)])
def test_a_failed_write_leaves_the_file_and_no_temporary(keras_home, monkeypatch, function, err):
    path = _write(keras_home, {"floatx": "float32", "mine": [1, 2]})
    before = path.read_bytes()
    with monkeypatch.context() as patch:
        patch.setattr(os, function, _fail(err))
        result = invoke(*SET)
    assert_one_line(result, 2, str(path), os.strerror(err))
    assert path.read_bytes() == before
    assert temp_files(str(keras_home)) == []


def test_a_failed_serialisation_leaves_the_file_and_no_temporary(keras_home, monkeypatch):
    path = _write(keras_home, {"floatx": "float32"})
    before = path.read_bytes()

    def dumps(*args, **kwargs):
        raise ValueError("boom")

    with monkeypatch.context() as patch, pytest.raises(ValueError):
        patch.setattr(config.json, "dumps", dumps)
        config.set_value("floatx", "float64")
    assert path.read_bytes() == before and temp_files(str(keras_home)) == []


KILLED_WRITER = """
import os, sys, time
marker = sys.argv[1]
def stall(fd):
    open(marker, "w").close()
    time.sleep(60)
os.fsync = stall
from kbtool.cli import main
main(["config", "set", "floatx", "float64"], prog_name="kbtool")
"""


def test_a_killed_writer_leaves_keras_json_whole_and_its_temporary_is_never_read(keras_home, tmp_path):
    path = _write(keras_home, {"floatx": "float16", "mine": 1})
    before = path.read_bytes()
    marker = tmp_path / "writing"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(marker)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 10
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert marker.exists(), proc.stderr.read() if proc.poll() is not None else "writer never wrote"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    leftovers = temp_files(str(keras_home))
    assert len(leftovers) == 1 and path.read_bytes() == before  # killed mid-write: the old file, whole
    assert not leftovers[0].startswith("keras.json")  # a hidden name nothing reads as keras.json
    assert invoke("config", "get", "floatx").stdout == "float16\n"
    result = invoke("config", "set", "epsilon", "1e-5")
    assert result.exit_code == 0 and "temporary file" in result.stderr
    assert temp_files(str(keras_home)) == []  # the next writer, holding the lock, cleans up
    assert json.loads(path.read_text()) == {"floatx": "float16", "mine": 1, "epsilon": 1e-05}


def test_a_lock_held_elsewhere_gives_up_in_one_line(keras_home, monkeypatch):
    path = _write(keras_home, {"floatx": "float32"})
    monkeypatch.setattr(config, "LOCK_TIMEOUT", 0.2)
    with open(str(path) + ".lock", "a") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        result = invoke(*SET)
    assert_one_line(result, 2, str(path), "keras.json.lock")
    assert json.loads(path.read_text()) == {"floatx": "float32"}


# ---------------------------------------------------------------------------- concurrency
KEYS = {
    "backend": ["tensorflow", "theano", "cntk", "tensorflow", "theano"],
    "floatx": ["float16", "float64", "float32", "float16", "float64"],
    "epsilon": ["1e-3", "1e-4", "1e-5", "1e-6", "1e-8"],
    "image_data_format": ["channels_first", "channels_last", "channels_first", "channels_last", "channels_first"],
}


def _cli_child(keras_home, args, log, go):
    """One `kbtool config ...` in a forked process: its exit status is the CLI's, its output goes to `log`."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = sys.stderr = os.fdopen(fd, "w", buffering=1)  # past pytest's capture, tracebacks included
    os.environ["KERAS_HOME"] = keras_home
    os.environ.pop("KERAS_BACKEND", None)
    go.wait(10)
    main(list(args), prog_name="kbtool")


def _run_together(tmp_path, commands):
    ctx = multiprocessing.get_context("fork")
    go = ctx.Event()
    procs = []
    for i, args in enumerate(commands):
        log = str(tmp_path / f"child-{i}.log")
        proc = ctx.Process(target=_cli_child, args=(str(tmp_path / "kh"), args, log, go))
        proc.start()
        procs.append((proc, log))
    go.set()
    outcomes = []
    for proc, log in procs:
        proc.join(30)
        with open(log) as fh:
            outcomes.append((proc.exitcode, fh.read()))
    return outcomes


@pytest.mark.parametrize("trial", range(5))
def test_twenty_concurrent_sets_lose_no_key(tmp_path, trial):
    """5 processes per key on 4 keys at once, from a file that holds none of them: every key ends up written."""
    path = _write(tmp_path / "kh", {"mine": [1, 2]})
    commands = [("config", "set", key, values[i]) for i in range(5) for key, values in KEYS.items()]
    outcomes = _run_together(tmp_path, commands)
    assert not [out for _, out in outcomes if "Traceback" in out], "TRACEBACK in a concurrent set"
    assert [code for code, _ in outcomes] == [0] * 20, outcomes
    data = json.loads(path.read_text())
    assert sorted(data) == sorted(list(KEYS) + ["mine"]), f"LOST UPDATE: {data}"
    assert data["mine"] == [1, 2]
    for key, values in KEYS.items():
        assert data[key] in [config.parse_value(key, v) for v in values]
    assert temp_files(str(tmp_path / "kh")) == []


def test_concurrent_force_backs_up_only_the_corrupt_file(tmp_path):
    """8 `set --force` at once on a corrupt file: one backup, holding the corrupt bytes; no valid file backed up."""
    path = _write(tmp_path / "kh", b"{corrupt")
    commands = [("config", "set", key, values[i], "--force") for i in range(2) for key, values in KEYS.items()]
    outcomes = _run_together(tmp_path, commands)
    assert not [out for _, out in outcomes if "Traceback" in out], "TRACEBACK in a concurrent set --force"
    assert [code for code, _ in outcomes] == [0] * 8, outcomes
    backups = [p for p in (tmp_path / "kh").iterdir() if p.name.startswith("keras.json.bak-")]
    assert [p.read_bytes() for p in backups] == [b"{corrupt"], (
        f"VALID FILE BACKED UP: {[p.read_bytes()[:40] for p in backups]}"
    )
    assert sorted(json.loads(path.read_text())) == sorted(KEYS)


# ---------------------------------------------------------------------------- kbtool's own state (KBTOOL_HOME, envs)
ENV_NAMES = list(RECIPES)  # `kbtool env list` lists every built-in recipe, in the registry's order


def _home_is_a_file(tmp_path):
    (tmp_path / "kbhome").write_text("x")
    return str(tmp_path / "kbhome")


def _home_under_a_file(tmp_path):
    (tmp_path / "kbhome").write_text("x")
    return str(tmp_path / "kbhome")


def _home_dangling_symlink(tmp_path):
    (tmp_path / "kbhome").symlink_to(tmp_path / "nowhere")
    return str(tmp_path / "kbhome")


def _envs_is_a_file(tmp_path):
    (tmp_path / "kbhome").mkdir()
    (tmp_path / "kbhome" / "envs").write_text("x")
    return str(tmp_path / "kbhome" / "envs")


HOMES = [
    ("kbtool_home_is_a_file", _home_is_a_file, ""),
    ("kbtool_home_under_a_file", _home_under_a_file, "sub"),
    ("kbtool_home_dangling_symlink", _home_dangling_symlink, ""),
    ("envs_is_a_file", _envs_is_a_file, ""),
]
HOME_COMMANDS = [
    ("env", "list"),
    ("env", "list", "--json"),
    ("env", "remove", "theano"),
    ("backends",),
    ("check", "--op", "dot", "--backend", "tensorflow"),
]


@pytest.mark.parametrize("command", HOME_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("name,setup,sub", HOMES, ids=[row[0] for row in HOMES])
def test_bad_kbtool_home(tmp_path, monkeypatch, name, setup, sub, command):
    named = setup(tmp_path)
    monkeypatch.setenv("KBTOOL_HOME", os.path.join(str(tmp_path / "kbhome"), sub) if sub else str(tmp_path / "kbhome"))
    result = invoke(*command)
    assert_one_line(result, 2, named)


def _record(content):
    def setup(env_dir, tmp_path):
        env_dir.mkdir(parents=True)
        (env_dir / "kbtool-env.json").write_bytes(content)
        return str(env_dir / "kbtool-env.json")

    return setup


def _record_is_a_directory(env_dir, tmp_path):
    (env_dir / "kbtool-env.json").mkdir(parents=True)
    return str(env_dir / "kbtool-env.json")


def _dangling_link(env_dir, tmp_path):
    env_dir.parent.mkdir(parents=True)
    env_dir.symlink_to(tmp_path / "gone")
    return str(env_dir)


def _env_is_a_file(env_dir, tmp_path):
    env_dir.parent.mkdir(parents=True)
    env_dir.write_text("x")
    return str(env_dir)


# Broken env states: `env list` lists all three and names the broken one on stderr (exit 2); `env remove`
# clears it (exit 0) or refuses in one line (exit 2).
BROKEN_ENVS = [
    ("record_open_brace", _record(b"{"), 0),
    ("record_list", _record(b"[]"), 0),
    ("record_not_utf8", _record(b"\xff\xfe"), 0),
    ("record_empty", _record(b""), 0),
    ("record_nested_100000", _record(b"[" * 100000), 0),
    ("record_is_a_directory", _record_is_a_directory, 0),
    ("env_dangling_symlink", _dangling_link, 0),
    ("env_is_a_file", _env_is_a_file, 2),
]


@pytest.mark.parametrize("command", ["list", "list --json", "remove"])
@pytest.mark.parametrize("name,setup,remove_code", BROKEN_ENVS, ids=[row[0] for row in BROKEN_ENVS])
def test_broken_env(tmp_path, monkeypatch, name, setup, remove_code, command):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbhome"))
    env_dir = tmp_path / "kbhome" / "envs" / "theano"
    named = setup(env_dir, tmp_path)
    result = invoke("env", *command.split(), *(["theano"] if command == "remove" else []))
    if command == "remove":
        if remove_code:
            assert_one_line(result, 2, named)
            assert os.path.lexists(str(env_dir))
        else:
            assert_no_traceback(result)
            assert result.exit_code == 0 and not os.path.lexists(str(env_dir))
            assert result.stderr == ""
        return
    assert_one_line(result, 2, named)
    if command == "list --json":
        infos = json.loads(result.stdout)
        assert [i["name"] for i in infos] == ENV_NAMES
        assert [bool(i.get("problem")) for i in infos] == [name == "theano" for name in ENV_NAMES]
    else:
        rows = result.stdout.splitlines()
        assert [row.split()[0] for row in rows] == ENV_NAMES and "broken" in rows[ENV_NAMES.index("theano")]


def test_symlinked_env_is_listed_and_removed_as_a_link_only(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbhome"))
    target = tmp_path / "elsewhere" / "theano"
    (target / "lib").mkdir(parents=True)
    (target / "lib" / "keep.txt").write_text("mine")
    (target / "bin").mkdir()
    (target / "bin" / "python").symlink_to(sys.executable)  # an env with its interpreter
    (target / "kbtool-env.json").write_text(json.dumps({"backend": "theano", "created": "2020-01-01"}))
    link = tmp_path / "kbhome" / "envs" / "theano"
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    result = invoke("env", "list")
    assert_no_traceback(result)
    assert result.exit_code == 0 and f"-> {target}" in result.stdout and "installed 2020" in result.stdout
    result = invoke("env", "remove", "theano")
    assert_no_traceback(result)
    assert result.exit_code == 0 and "symlink" in result.stdout and str(target) in result.stdout
    assert not os.path.lexists(str(link))
    assert (target / "lib" / "keep.txt").read_text() == "mine" and (target / "kbtool-env.json").exists()


def test_env_remove_goes_on_after_a_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "kbhome"))
    envs = tmp_path / "kbhome" / "envs"
    envs.mkdir(parents=True)
    (envs / "theano").write_text("x")
    (envs / "cntk").mkdir()
    result = invoke("env", "remove", "theano", "cntk")
    assert_one_line(result, 2, str(envs / "theano"))
    assert not (envs / "cntk").exists() and (envs / "theano").exists()


def test_keras_json_is_read_by_the_shared_hostile_file_reader(tmp_path):
    """config.read_file reads through files.read_bytes: a special file is refused before a byte is read, in one
    line naming what it is; a missing file is None."""
    from kbtool.errors import KbtoolError

    fifo = tmp_path / "fifo.json"
    os.mkfifo(str(fifo))
    folder = tmp_path / "folder.json"
    folder.mkdir()
    for path, kind in ((str(fifo), "a FIFO"), (str(folder), "a directory"), ("/dev/zero", "a character device")):
        with pytest.raises(KbtoolError) as info:
            config.read_file(path)
        assert str(info.value) == f"{path}: cannot read: not a regular file ({kind})"
    assert config.read_file(str(tmp_path / "absent.json")) is None
