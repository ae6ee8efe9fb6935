"""Reliability (issue #32): a malformed or stale probe cache, a release folder that is a file, a lock that is not
UTF-8 or pins a version no release has, `known record` on a full disk, terminal escapes in bisect's output, and
`kbtool bench` in a home where no backend is installed. Each is one line, never a traceback."""

import errno
import json
import os
import sys

import pytest
from click.testing import CliRunner

from kbtool import files
from kbtool.bench import measure
from kbtool.bisect import search as bisect
from kbtool.bisect.search import Outcome
from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.paths import CHECKOUT_ROOT
from kbtool.runners import envs, names, probe_cache, releases
from kbtool.runners.base import Launch

RELEASE = "tensorflow1[keras=2.2.4]"
ESCAPES = "bad \x1b[31mred\x1b[0m value \x1b]0;title\x07 here"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PYTHONPATH", CHECKOUT_ROOT)
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras"))
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def invoke(*args):
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result


def kept(home):
    return json.loads((home / probe_cache.CACHE_FILE).read_text())


# ---------------------------------------------------------------------------- 7. the probe cache
CORRUPTIONS = {
    "probed_at": lambda e: e.update(probed_at="yesterday"),
    "module_file": lambda e: e["info"].update(module_file=["a", "b"]),
    "name": lambda e: e["info"].pop("name"),
    "versions": lambda e: e["info"].update(versions="numpy 2"),
}


@pytest.mark.parametrize("field", sorted(CORRUPTIONS))
def test_a_corrupt_cache_entry_is_probed_again(home, field):
    assert invoke("backends", "--json").exit_code == 0
    data = kept(home)
    CORRUPTIONS[field](data["backends"]["numpy"])
    (home / probe_cache.CACHE_FILE).write_text(json.dumps(data))
    result = invoke("backends", "--json")
    assert result.exit_code == 0, result.output
    (numpy,) = [info for info in json.loads(result.stdout) if info["name"] == "numpy"]
    assert numpy["status"] == "available" and numpy["cached"] is False
    assert probe_cache.invalid("numpy", kept(home)["backends"]["numpy"]) is None  # rewritten whole
    assert probe_cache.ProbeCache().invalid == {}


def test_a_corrupt_cache_that_cannot_be_rewritten_is_named_with_refresh(home, monkeypatch):
    assert invoke("backends", "--json").exit_code == 0
    data = kept(home)
    data["backends"]["numpy"]["probed_at"] = "yesterday"
    (home / probe_cache.CACHE_FILE).write_text(json.dumps(data))

    def full(path, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(files, "write_atomic", full)
    result = invoke("backends")
    assert result.exit_code == 0
    [line] = [line for line in result.stderr.splitlines() if "warning" in line]
    assert str(home / probe_cache.CACHE_FILE) in line and "--refresh" in line and "probed_at" in line


def _base_env(home):
    """The tensorflow1 env as far as a release's identity sees it: its record and a site-packages folder."""
    base = home / "envs" / "tensorflow1"
    site = base / "lib" / "python3.6" / "site-packages"
    site.mkdir(parents=True)
    (base / "kbtool-env.json").write_text('{"python_version": "3.6"}')
    return base, site


def test_a_release_entry_goes_stale_when_its_base_env_changes(home):
    base, site = _base_env(home)
    launch = Launch(backend=RELEASE, python=sys.executable, module="keras.backend")
    first = probe_cache.identity(RELEASE, launch)
    assert probe_cache.identity(RELEASE, launch) == first
    stat = os.stat(site)
    os.utime(site, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # pip installed into the base env
    second = probe_cache.identity(RELEASE, launch)
    assert second != first
    (base / "kbtool-env.json").write_text('{"python_version": "3.6", "created": "again"}')  # rebuilt
    assert probe_cache.identity(RELEASE, launch) != second


# ---------------------------------------------------------------------------- 10. more tracebacks
def test_a_release_base_folder_that_is_a_file_is_one_line(home):
    (home / "envs" / "releases").mkdir(parents=True)
    (home / "envs" / "releases" / "tensorflow1").write_text("x")
    listed = invoke("env", "list")
    assert listed.exit_code == 2
    [line] = listed.stderr.splitlines()
    assert line.startswith("kbtool: error: ") and "releases/tensorflow1: not a directory" in line
    assert releases.installed() == []
    shown = invoke("backends", "--json")
    assert shown.exit_code == 0
    assert "releases/tensorflow1: not a directory" in shown.stderr


def test_known_record_on_a_full_disk_is_one_line(custom_backend, tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    module = custom_backend("full", "scaled", "from kbtool.reference import *  # noqa\nabs = lambda x: x * 0 - 1\n")
    assert invoke("check", "--backend", module, "--op", "abs", "-o", str(tmp_path / "a.json")).exit_code == 1
    known_file = tmp_path / "known.yaml"
    before = (
        f'- op: abs\n  backend: {module}\n  status: [fail, error]\n  match: "."\n  reason: it is wrong on purpose\n'
    )
    known_file.write_text(before)

    def full(path, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(files, "write_atomic", full)
    result = invoke("known", "record", str(tmp_path / "a.json"), "--known", str(known_file))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"kbtool: error: {known_file}: cannot write: No space left on device; the file was left as it was"
    ]
    assert known_file.read_text() == before


def _release_env(home, lock: bytes):
    """An installed release env of tensorflow1 (by hand: its record, an interpreter) and its generated lock."""
    env = home / "envs" / "releases" / "tensorflow1" / "keras-2.2.4"
    (env / "bin").mkdir(parents=True)
    os.symlink(sys.executable, env / "bin" / "python")
    (env / "kbtool-env.json").write_text("{}")
    locks = home / "locks" / "releases" / "tensorflow1"
    locks.mkdir(parents=True)
    (locks / "keras-2.2.4.txt").write_bytes(lock)


@pytest.mark.parametrize(
    "lock, said",
    [
        (b"keras==2.2.4\n\xff\xfe\n", "not valid UTF-8 (byte 0xff at offset 13)"),
        (b"keras==2." + b"1" * 5000 + b"\n", "is longer than 128 characters, not a release"),
    ],
    ids=["not-utf8", "long-version"],
)
def test_a_release_lock_that_cannot_be_read_is_a_broken_env(home, lock, said):
    _release_env(home, lock)
    with pytest.raises(KbtoolError, match="keras-2.2.4.txt"):
        envs.read_lock(releases.recipe_for(RELEASE))
    listed = invoke("env", "list")
    assert listed.exit_code == 2
    [line] = listed.stderr.splitlines()
    assert line.startswith(f"kbtool: error: {RELEASE} env is broken: ") and said in line and len(line) < 400
    shown = invoke("backends", "--json", "--backend", RELEASE)
    (info,) = [i for i in json.loads(shown.stdout) if i["name"] == RELEASE]
    assert info["status"] == "broken" and said in info["reason"]


@pytest.mark.parametrize("length", [200, 5000])
def test_a_version_over_the_limit_in_a_release_name_is_one_short_line(home, length):
    name = "tensorflow1[keras=2." + "1" * length + "]"
    with pytest.raises(KbtoolError) as raised:
        names.parse_release(name)
    assert len(str(raised.value)) < 300
    result = invoke("env", "install", name)
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("kbtool: error: ") and len(line) < 300
    with pytest.raises(KbtoolError, match="longer than"):
        names.parse_range("keras=2.2.4.." + "3" * length)


# ---------------------------------------------------------------------------- 8. bisect's escapes
def test_bisect_prints_no_terminal_escapes_from_messages(capsys):
    before = Outcome("error", ESCAPES, "bad value")
    table = {f"1.{i}": {("dot", "c\x1b[1m", "eager"): before if i < 2 else Outcome("pass")} for i in range(4)}
    found = bisect.search(list(table), lambda vs: {v: table[v] for v in vs})
    text = "\n".join(bisect.render(found, "keras", [], 1.0))
    assert "\x1b" not in text and "\x07" not in text
    assert "bad red value" in " ".join(text.split()) and "dot c eager: changed in keras 1.2" in text
    from kbtool.bisect.command import _note

    _note(f"kbtool: keras 1.0 did not install ({ESCAPES})")
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "bad red value" in err


# ---------------------------------------------------------------------------- 13. bench with none installed
def test_bench_with_no_backend_installed_benches_numpy_as_check_does(home):
    planned = measure.planned_backends([])
    runnable = [p.name for p in planned if p.launch is not None]
    assert runnable == ["numpy"]
    assert all("not installed" in p.unavailable for p in planned if p.launch is None)
    with pytest.raises(KbtoolError, match="backend tensorflow: not installed"):
        measure.planned_backends(["tensorflow"])  # named, it must run
