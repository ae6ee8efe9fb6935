"""Reliability of the `env` commands and bisect's installs (issue #32): every child an env command starts is waited on
for a bounded time with progress and killed with its group on SIGTERM/SIGINT (exit 130, one line); a failed install
removes what it made; the messages say what happened (a full disk, a missing `.pth`) with fix commands that name the
env, shell-quoted; bisect never builds a base env unasked, nor makes an -o folder. Fake interpreters (shell scripts)
stand in for real ones: nothing here installs an env."""

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.paths import CHECKOUT_ROOT
from kbtool.runners import releases
from kbtool.runners.envs import children, interpreters, layered, state
from kbtool.runners.recipes import RECIPES

RELEASE = "tensorflow1[keras=2.2.4]"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def script(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def invoke(*args):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()  # click >= 8.2 keeps stderr apart
    return runner.invoke(main, list(args))


# ---------------------------------------------------------------------------- 9: bounded waits, signals


def hanging_python(tmp_path, hang_on):
    """A fake Python 3.11 that answers the version probe and hangs (writing its pid first) on `hang_on`: "start"
    (every run), or "venv" (`-m venv DIR`)."""
    pid_file = tmp_path / "child.pid"
    hang = f"echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}; exec sleep 300\n"
    if hang_on == "start":
        body = hang
    else:
        body = f'if [ "$2" = venv ]; then mkdir -p "$3/bin"; {hang}fi\necho "3.11.9 CPython"\n'
    return script(tmp_path / "python3.11", body), pid_file


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie is gone too (reaped by init later)
        return fh.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.parametrize(
    "args, hang_on, said",
    [
        (["env", "use", "keras3-numpy", "--python"], "start", "env use interrupted; nothing was registered"),
        (["env", "install", "keras3-numpy", "--python"], "venv", "env install interrupted"),
    ],
)
def test_sigterm_during_an_env_command_exits_130_in_one_line_and_kills_its_child(tmp_path, home, args, hang_on, said):
    python, pid_file = hanging_python(tmp_path, hang_on)
    env = dict(os.environ, PYTHONPATH=CHECKOUT_ROOT, KBTOOL_HOME=str(home))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbtool", *args, python],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(tmp_path),
    )
    deadline = time.monotonic() + 60
    while not pid_file.exists():  # the child has started
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    child = int(pid_file.read_text())
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    lines = err.decode().strip().splitlines()
    assert proc.returncode == 130, err
    assert lines[-1].startswith("kbtool: SIGTERM: ") and said in lines[-1], err
    assert not any("Traceback" in line for line in lines)
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the probe child was left running"
    assert not (home / "envs" / "keras3-numpy").exists()  # install: the half env it made is removed


def test_env_use_gives_up_on_an_interpreter_that_hangs_at_start_within_the_probe_bound(tmp_path, home, monkeypatch):
    python, _ = hanging_python(tmp_path, "start")
    monkeypatch.setattr(interpreters, "PROBE_SECONDS", 1.0)  # as `env install --python` (30 s)
    monkeypatch.setattr(children, "PROGRESS_SECONDS", 0.2)
    started = time.monotonic()
    result = invoke("env", "use", "keras3-numpy", "--python", python)
    assert time.monotonic() - started < 20
    assert result.exit_code == 2
    assert f"kbtool: waiting for {python} to start (" in result.stderr  # progress while it waits
    assert result.stderr.strip().splitlines()[-1] == (
        f"kbtool: error: {python}: did not start within 1 s (killed); nothing was registered"
    )


# ---------------------------------------------------------------------------- 11: a failed install, bisect


def full_disk_python(tmp_path):
    """A fake Python 3.11 whose `-m venv DIR` makes a half venv and fails as a full disk makes venv fail."""
    return script(
        tmp_path / "python3.11",
        'if [ "$2" = venv ]; then mkdir -p "$3/bin" "$3/lib/python3.11/site-packages"\n'
        "  echo \"Error: [Errno 28] No space left on device: '$3/lib/python3.11/site-packages/pip'\"\n"
        "  echo \"Error: Command '['$3/bin/python3.11', '-m', 'ensurepip']' returned non-zero exit status 1.\"\n"
        "  exit 1\nfi\necho '3.11.9 CPython'\n",
    )


def test_a_failed_install_removes_the_env_it_made_and_says_the_disk_is_full(tmp_path, home):
    python = full_disk_python(tmp_path)
    result = invoke("env", "install", "keras3-numpy", "--python", python)
    env_dir = home / "envs" / "keras3-numpy"
    assert result.exit_code == 2
    assert not env_dir.exists(), "a half venv was left"
    assert f"the install failed: removed {env_dir}" in result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert error.endswith(f"no space left on device: {env_dir}/lib/python3.11/site-packages/pip"), error
    assert "ensurepip" not in error


def test_a_failed_reinstall_leaves_the_installed_env_alone(tmp_path, home):
    env_dir = home / "envs" / "keras3-numpy"
    (env_dir / "bin").mkdir(parents=True)
    (env_dir / "kbtool-env.json").write_text(json.dumps({"backend": "keras3-numpy", "installed": []}))
    script(env_dir / "bin" / "python", "echo 'pip: no' >&2; exit 1\n")  # its pip fails
    result = invoke("env", "install", "keras3-numpy", "--python", full_disk_python(tmp_path))
    assert result.exit_code == 2 and (env_dir / "kbtool-env.json").exists()


def test_env_list_shows_a_folder_it_does_not_understand(home):
    leftover = home / "envs" / "releases" / "tensorflow1" / "keras-2.2.4+local"
    (leftover / "bin").mkdir(parents=True)
    result = invoke("env", "list")
    assert f"kbtool: note: {leftover}: not an env kbtool can name" in result.stderr


def test_bisect_refuses_to_build_a_missing_base_env(home, monkeypatch):
    monkeypatch.setattr(releases, "index_versions", lambda base, package, runner=None: ["2.2.4", "2.2.5", "2.3.1"])

    def no_install(*args, **kwargs):
        raise AssertionError("bisect installed something")

    monkeypatch.setattr(releases, "install_releases", no_install)
    result = invoke("bisect", "--op", "batch_dot", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1")
    assert result.exit_code == 2, result.stderr
    error = result.stderr.strip().splitlines()[-1]
    assert "layered on the tensorflow1 env, which is not installed" in error
    assert "`kbtool env install tensorflow1` installs it" in error


def test_bisect_refuses_an_output_folder_that_does_not_exist_before_any_work(tmp_path, home, monkeypatch):
    def no_index(*args, **kwargs):
        raise AssertionError("bisect asked the index")

    monkeypatch.setattr(releases, "index_versions", no_index)
    out = tmp_path / "nonexistent" / "dir" / "x.json"
    result = invoke(
        "bisect", "--op", "batch_dot", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1", "-o", str(out)
    )
    assert result.exit_code == 2
    assert result.stderr.strip() == f"kbtool: error: -o {out}: no folder {out.parent}; create it first"
    assert not (tmp_path / "nonexistent").exists()


# ---------------------------------------------------------------------------- 12: messages that mislead


def release_env(home, installed, pth=True):
    """The tensorflow1 base env's record and a release env layered on it (records and folders only)."""
    base = RECIPES["tensorflow1"]
    os.makedirs(os.path.join(base.env_dir(), "lib", "python3.7", "site-packages"))
    with open(os.path.join(base.env_dir(), "kbtool-env.json"), "w") as fh:
        json.dump({"backend": "tensorflow1", "installed": ["keras==2.3.1", "numpy==1.18.5"]}, fh)
    recipe = releases.recipe_for(RELEASE)
    site = os.path.join(recipe.env_dir(), "lib", "python3.7", "site-packages")
    os.makedirs(os.path.join(site, "keras-2.2.4.dist-info"))
    if pth:
        with open(os.path.join(site, layered.PTH), "w") as fh:
            fh.write(os.path.join(base.env_dir(), "lib", "python3.7", "site-packages") + "\n")
    record = {"backend": RELEASE, "installed": installed}
    with open(os.path.join(recipe.env_dir(), "kbtool-env.json"), "w") as fh:
        json.dump(record, fh)
    return recipe, record


def test_a_deleted_pth_is_said_as_missing_not_as_a_changed_base(home):
    recipe, record = release_env(home, ["keras==2.2.4", "numpy==1.18.5"], pth=False)
    said = layered.base_problem(recipe, record)
    assert "changed" not in said
    assert f"its {layered.PTH}, which layers it on the tensorflow1 env, is missing" in said
    assert f"`kbtool env install '{RELEASE}' --force`" in said


def test_fix_commands_name_the_env_shell_quoted(home):
    recipe, _ = release_env(home, ["keras==2.2.4", "numpy==1.18.5"])
    said = state.problem(recipe)  # no bin/python in the release env: its interpreter is missing
    assert f"run `kbtool env install '{RELEASE}' --force`" in said
    with open(os.path.join(recipe.env_dir(), "kbtool-env.json"), "w") as fh:
        fh.write("[1]")
    assert f"`kbtool env install '{RELEASE}' --force` rebuilds it" in state.problem(recipe)
    os.unlink(os.path.join(RECIPES["tensorflow1"].env_dir(), "kbtool-env.json"))
    said = layered.base_problem(recipe, {"installed": []})
    assert "`kbtool env install tensorflow1` installs it" in said


def test_a_run_removes_stale_worker_folders_of_this_user_only(tmp_path):
    from kbtool.runners import client

    old = time.time() - client.STALE_SECONDS - 60
    stale = tmp_path / "kbtool-worker-abc"
    fresh = tmp_path / "kbtool-worker-new"
    other = tmp_path / "kbtool-keras-home-abc"
    target = tmp_path / "target"
    for folder in (stale, fresh, other, target):
        folder.mkdir()
    link = tmp_path / "kbtool-worker-link"
    link.symlink_to(target)
    for path in (stale, other, target):
        os.utime(path, (old, old))
    os.utime(link, (old, old), follow_symlinks=False)
    assert client.remove_stale_scratch(str(tmp_path)) == [str(stale)]
    assert not stale.exists() and fresh.exists() and other.exists() and link.is_symlink() and target.exists()


def test_a_check_says_progress_every_few_seconds_while_one_case_runs_long(monkeypatch):
    """`check --repeat 1000`: one case's result comes after a minute; a log still gets a line every few seconds."""
    from kbtool.check import run as check_run
    from kbtool.reports import progress

    stream, said = io.StringIO(), []

    def for_plan(cls, plan, **options):
        return cls({"numpy": 1}, stream=stream, live=False, **options)

    def one_long_case(plan, progress=None, cancel=None, embed_known=False):  # no result until the log has its line
        deadline = time.monotonic() + 30
        while "waiting for a result" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        said.append(stream.getvalue())
        return {"results": []}

    monkeypatch.setattr(check_run, "QUIET_SECONDS", 0.2)
    monkeypatch.setattr(progress.CheckProgress, "for_plan", classmethod(for_plan))
    monkeypatch.setattr(check_run, "run_check", one_long_case)
    check_run.run_interruptibly(None, SimpleNamespace(cancel=None, caught=[]))
    assert "  total        0/1 results · " in said[0] and " elapsed, waiting for a result" in said[0], said


def test_the_controller_removes_a_worker_folder_once_it_sees_the_worker_killed(tmp_path, monkeypatch):
    from kbtool.runners.client import WorkerClient
    from kbtool.runners.messages import Request
    from kbtool.runners.registry import launch_for

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    client = WorkerClient(launch_for("numpy"))
    try:
        assert client.start()["status"] == "ready"
        (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("kbtool-worker-")]
        os.kill(client.proc.pid, signal.SIGKILL)  # kill -9 of the worker
        client.proc.wait(timeout=30)
        header, _ = client.request(Request("run", {"op": "no_such_op", "args": []}))
        assert header["status"] == "unsupported" and not folder.exists()  # a fresh worker, in a fresh folder
    finally:
        client.stop()
        monkeypatch.setattr(tempfile, "tempdir", None)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("kbtool-worker-")]
