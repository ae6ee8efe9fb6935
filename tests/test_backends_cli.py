"""`kbtool backends`: a header and a row per backend as each answers, the active backend marked, answers kept in
KBTOOL_HOME/probes.json and reused while the env is unchanged (never once it is removed or changed), --refresh,
and lines that fit 80 columns."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.paths import CHECKOUT_ROOT
from kbtool.runners import probe_cache, registry

from .helpers import register_ext


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTHONPATH", CHECKOUT_ROOT)  # a registered interpreter finds kbtool.reference
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))  # no keras.json: the default backend, tensorflow
    return tmp_path / "home"


@pytest.fixture
def ext(home, monkeypatch):
    """A built-in backend `ext` run on kbtool's own Python, registered with `kbtool env use`."""
    recipe = register_ext(monkeypatch)
    result = CliRunner().invoke(main, ["env", "use", "ext", "--python", sys.executable])
    assert result.exit_code == 0, result.output
    return recipe


def backends(*args):
    result = CliRunner().invoke(main, ["backends", "--json", *args])
    assert result.exit_code == 0, result.output
    return {info["name"]: info for info in json.loads(result.stdout)}


def kept(home):
    with open(os.path.join(str(home), probe_cache.CACHE_FILE)) as fh:
        return json.load(fh)["backends"]


def test_a_second_call_reuses_the_kept_answer_and_refresh_asks_again(home, ext):
    first = backends()
    assert first["numpy"]["status"] == first["ext"]["status"] == "available"
    assert first["numpy"]["cached"] is False and first["ext"]["cached"] is False
    assert sorted(kept(home)) == ["ext", "numpy"]
    second = backends()
    assert second["numpy"]["cached"] is True and second["ext"]["cached"] is True
    assert second["ext"]["versions"] == first["ext"]["versions"] and second["ext"]["python"] == first["ext"]["python"]
    refreshed = backends("--refresh")
    assert refreshed["numpy"]["cached"] is False and refreshed["ext"]["cached"] is False
    assert backends()["ext"]["cached"] is True  # what --refresh learnt is kept


def test_a_removed_env_is_never_claimed_available(home, ext):
    assert backends()["ext"]["status"] == "available"
    assert backends()["ext"]["cached"] is True
    assert CliRunner().invoke(main, ["env", "remove", "ext"]).exit_code == 0
    after = backends()
    assert after["ext"]["status"] == "not installed" and after["ext"]["cached"] is False
    assert "ext" not in kept(home)  # dropped: a reinstall is probed again


def test_a_changed_env_is_probed_again(home, ext):
    backends()
    record = os.path.join(ext.env_dir(), "kbtool-env.json")
    data = json.loads(open(record).read())
    data["created"] = "another install"  # what `env install --force` or `env use --force` rewrites
    with open(record, "w") as fh:
        json.dump(data, fh)
    assert backends()["ext"]["cached"] is False
    assert backends()["ext"]["cached"] is True


def test_an_edited_custom_module_is_probed_again(home, custom_backend):
    module = custom_backend("probed", "kb", "from kbtool.reference import *\n")
    assert backends("--backend", module)[module]["cached"] is False
    assert backends("--backend", module)[module]["cached"] is True
    path = kept(home)[module]["info"]["module_file"]
    stat = os.stat(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert backends("--backend", module)[module]["cached"] is False


def test_a_backend_that_could_not_start_is_not_kept(home, custom_backend):
    module = custom_backend("failing", "kb", "raise ImportError('no engine here')\n")
    first = backends("--backend", module)
    assert first[module]["status"] == "broken" and first[module]["cached"] is False
    assert module not in kept(home)
    assert backends("--backend", module)[module]["cached"] is False  # asked again: it may work now


def test_an_identity_that_does_not_match_is_not_used(home, tmp_path):
    cache = probe_cache.ProbeCache(str(tmp_path / "probes.json"))
    info = {"name": "numpy", "status": "available", "versions": {"numpy": "0"}}
    cache.put("numpy", "key-1", info)
    assert cache.get("numpy", "key-1")["versions"] == {"numpy": "0"}
    assert cache.get("numpy", "key-2") is None
    cache.clock = lambda: 1e12  # far beyond MAX_AGE
    assert cache.get("numpy", "key-1") is None
    assert cache.save() is None
    again = probe_cache.ProbeCache(str(tmp_path / "probes.json"))
    assert again.get("numpy", "key-1") is not None


def test_the_active_backend_is_marked(home, monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "numpy")
    result = CliRunner().invoke(main, ["backends"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "* = the active backend, numpy (KERAS_BACKEND)"
    assert lines[1].split() == ["backend", "status", "python", "versions,", "or", "why", "not"]
    assert lines[2].startswith("* numpy ") and "available" in lines[2]
    assert not any(line.startswith("*") for line in lines[3:])
    assert backends()["numpy"]["active"] is True
    monkeypatch.setenv("KERAS_BACKEND", "my_module")
    result = CliRunner().invoke(main, ["backends"])
    assert result.stdout.splitlines()[0] == "active backend: my_module (KERAS_BACKEND), not among these"


def test_backends_at_80_columns_in_a_real_process(home):
    env = dict(os.environ, COLUMNS="80", PYTHONPATH=CHECKOUT_ROOT)
    ran = subprocess.run(
        [sys.executable, "-m", "kbtool", "backends"], capture_output=True, text=True, env=env, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, max(lines, key=len)
    names = [line[2:].split()[0] for line in lines[2:] if line[2:3].strip()]
    assert names == registry.BUILTIN  # every name whole, in order
    assert "numpy" in lines[2] and "available" in lines[2]


def test_installed_releases_are_counted_per_base_not_probed(home):
    for folder in ["tensorflow1/keras-2.2.4", "tensorflow1/keras-2.2.5", "theano/theano-1.0.0"]:
        (home / "envs" / "releases" / folder).mkdir(parents=True)
    result = CliRunner().invoke(main, ["backends"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == (
        "installed releases, not probed: tensorflow1 ×2, theano ×1 (`kbtool env list` names them; --backend NAME "
        "probes one)"
    )
    asked = CliRunner().invoke(main, ["backends", "--backend", "theano[theano=1.0.0]"], env={"COLUMNS": "200"})
    assert "theano[theano=1.0.0]" in asked.output  # probed (its row), so no longer counted
    assert asked.output.splitlines()[-1].startswith("installed releases, not probed: tensorflow1 ×2 (")
