"""Fault audit of issue #33, second pass: a relative KBTOOL_HOME (`KBTOOL_HOME=.kbtool` in a CI workspace, cached
with the repository) is the folder it names from where kbtool started, so a backend's env interpreter is found by
its worker, which runs in a scratch folder of its own. Before: every installed backend was `broken — cannot start
the worker: No such file or directory: '.kbtool/envs/NAME/bin/python'`. Fast: no worker starts."""

import os

from kbtool.runners import base
from kbtool.runners.registry import RECIPES


def test_a_relative_home_is_made_absolute_from_where_kbtool_started(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KBTOOL_HOME", "rel dir/ü h")
    assert base.kbtool_home() == str(tmp_path / "rel dir" / "ü h")
    assert base.envs_dir() == str(tmp_path / "rel dir" / "ü h" / "envs")


def test_an_env_interpreter_under_a_relative_home_is_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KBTOOL_HOME", ".kbtool")
    python = RECIPES["keras3-torch"].env_python()
    assert os.path.isabs(python)
    assert python.startswith(str(tmp_path / ".kbtool" / "envs") + os.sep)
