"""Fault audit of issue #33: `check --versions` and `bench --versions` install the releases they lack, never the base
env those are layered on (bisect's rule): a missing base env is refused in one line naming its install command,
before anything is installed. The index and the installs are fakes: nothing here installs an env."""

import pytest

from kbtool.runners import envs, releases

from .helpers import invoke_cli as invoke


@pytest.fixture
def bare_home(tmp_path, monkeypatch):
    """A kbtool home with no env installed, an index with four keras releases, and installs that must not happen."""
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(releases, "index_versions", lambda base, package, runner=None: ["2.2.4", "2.2.5", "2.3.1"])

    def no_install(*args, **kwargs):
        raise AssertionError("an env was installed")

    monkeypatch.setattr(envs, "install_all", no_install)
    return tmp_path / "home"


@pytest.mark.parametrize("command", ["check", "bench"])
def test_versions_refuses_to_build_a_missing_base_env(command, bare_home):
    result = invoke(command, "--op", "dot", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert lines[-1] == (
        "kbtool: error: tensorflow1[keras=2.2.4] is layered on the tensorflow1 env, which is not installed: "
        "`kbtool env install tensorflow1` installs it (--versions installs only the releases)"
    )
    assert "Traceback" not in result.stderr and not (bare_home / "envs" / "tensorflow1").exists()


def test_releases_already_installed_need_no_refusal(bare_home, monkeypatch):
    monkeypatch.setattr(releases, "is_installed", lambda name: True)
    releases.refuse_missing_base(["tensorflow1[keras=2.2.4]", "numpy", "tests.fixtures.tf32_backend"])
