"""`pytest --kbtool` adds kbtool's items to a project's own tests, never in their place (#33): a user project with
`--kbtool` in `addopts` and `testpaths = tests` runs its tests and kbtool's items; --kbtool-only keeps kbtool's alone.

A real pytest process in a temporary project (its pytest.ini, its tests/), on the numpy backend (kbtool's own
Python: no backend env needed); marked slow, as every nested pytest session is.
"""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

INI = """[pytest]
addopts = --kbtool --kbtool-op abs --kbtool-backend numpy --kbtool-case basic
testpaths = tests
"""
MINE = """
def test_one():
    assert 1 + 1 == 2


def test_two():
    assert "kbtool" in "kbtool --kbtool"
"""
USERS = ["tests/test_mine.py::test_one PASSED", "tests/test_mine.py::test_two PASSED"]
KBTOOLS = ["kbtool::abs::basic[numpy-eager] PASSED", "kbtool::abs::basic[numpy-symbolic] PASSED"]


@pytest.fixture
def project(tmp_path):
    """A user's project: pytest.ini with --kbtool in addopts and testpaths = tests, two tests of its own."""
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mine.py").write_text(MINE)
    (tmp_path / "elsewhere_test.py").write_text("def test_outside():\n    assert False\n")  # not in testpaths
    return tmp_path


def pytest_in(project, *args):
    env = dict(
        os.environ,
        KBTOOL_HOME=str(project / "home"),  # no backend env: numpy runs on kbtool's own Python
        PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
    )
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", *args],
        cwd=str(project),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )


def passed_lines(proc):
    return [" ".join(line.split()[:2]) for line in proc.stdout.splitlines() if " PASSED" in line]


@pytest.mark.slow  # a nested pytest session
def test_kbtool_in_addopts_with_testpaths_runs_the_users_tests_and_kbtools_items(project):
    proc = pytest_in(project)
    assert proc.returncode == 0, proc.stdout
    assert sorted(passed_lines(proc)) == sorted(USERS + KBTOOLS), proc.stdout
    assert "4 passed" in proc.stdout and "test_outside" not in proc.stdout  # testpaths still rules the user's part


@pytest.mark.slow  # a nested pytest session
def test_kbtool_only_collects_kbtools_items_alone(project):
    proc = pytest_in(project, "--kbtool-only")
    assert proc.returncode == 0, proc.stdout
    assert sorted(passed_lines(proc)) == sorted(KBTOOLS), proc.stdout
