"""Fault audit of issue #33, second pass: `pytest --kbtool` is the same gate as `kbtool check`.

- With no Keras backend installed, `kbtool check` refuses to check numpy (its reference) against itself (exit 2);
  `pytest --kbtool` ran those self-test items, skipped every backend and exited 0 ("2 passed, 13 skipped"): now the
  items still run (the user's tests too) but the session fails (exit 1) with check's line in kbtool's summary,
  unless --kbtool-backend numpy alone asks for the self-test.
- `--kbtool-only` without `--kbtool` was silently ignored: the user's own tests ran, green, and kbtool checked
  nothing. Now a usage error naming the flag it needs.

Nested pytest sessions in a temporary project on an empty kbtool home (numpy runs on kbtool's own Python).
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def project(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mine.py").write_text("def test_mine():\n    assert True\n")
    return tmp_path


def pytest_in(project, *args):
    env = dict(
        os.environ,
        KBTOOL_HOME=str(project / "home"),  # no backend installed
        PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
    )
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=str(project),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )


SELECT = ("--kbtool-op", "abs", "--kbtool-case", "basic")


@pytest.mark.slow  # a nested pytest session
def test_no_backend_installed_is_not_green(project):
    proc = pytest_in(project, "--kbtool", *SELECT)
    assert proc.returncode == 1, proc.stdout
    lines = proc.stdout.splitlines()
    line = next(x for x in lines if x.startswith("kbtool: nothing to check: no Keras backend is installed"))
    assert line.endswith("--kbtool-backend numpy runs a self-test)")
    assert "3 passed" in proc.stdout and " skipped" in proc.stdout  # the user's test, the two self-test items


@pytest.mark.slow  # a nested pytest session
def test_the_self_test_asked_for_still_runs(project):
    proc = pytest_in(project, "--kbtool", "--kbtool-only", "--kbtool-backend", "numpy", *SELECT)
    assert proc.returncode == 0, proc.stdout
    assert "2 passed" in proc.stdout


@pytest.mark.slow  # a nested pytest session
def test_kbtool_only_without_kbtool_is_refused(project):
    proc = pytest_in(project, "--kbtool-only", "--kbtool-backend", "numpy", *SELECT)
    assert proc.returncode == 4, proc.stdout
    assert "ERROR: kbtool: --kbtool-only needs --kbtool" in proc.stdout
    assert "passed" not in proc.stdout


@pytest.mark.slow  # a nested pytest session
def test_without_kbtool_flags_the_plugin_stays_inert(project):
    proc = pytest_in(project)
    assert proc.returncode == 0, proc.stdout
    assert "1 passed" in proc.stdout
