"""A release's name always means its packages (issue #32): every install of a release, and every interpreter `env
use` registers as one, is held to the versions its name pins; a check refuses a release whose worker imports other
versions; two spellings of one release are one backend; `env install --force` builds aside and keeps a working env
when the rebuild fails.

No real env is installed: FAKE_PYTHON stands in for the interpreters (venv, pip install/freeze/check, the import
probe), keeping each env's packages in a JSON file in it; a release's env sees its base's packages under its own,
as the `.pth` layering gives them.
"""

import json
import os
import stat
import sys

import numpy
import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.options import CheckOptions
from kbtool.runners import envs, names, releases
from kbtool.runners.recipes import RECIPES, Recipe

R = "tensorflow1[keras=2.2.4]"
BASE_PACKAGES = {
    "Keras": "2.3.1",
    "tensorflow": "1.15.5",
    "numpy": "1.18.5",
    "h5py": "2.10.0",
    "protobuf": "3.20.3",
}

# The interpreter of every fake env. Its state: <env>/fake-state.json {"own": {name: version}, "base": {...}}.
# FAKE_PIP_SKIPS (comma-separated packages) are never installed; FAKE_IMPORTS (JSON {module: version}) is what the
# import probe reports over the packages (a module shadowed by another copy on the path).
FAKE_PYTHON = r"""#!{python}
import json, os, re, shutil, sys

ENV = os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0])))
STATE = os.path.join(ENV, "fake-state.json")
SITE = os.path.join(ENV, "lib", "python3.7", "site-packages")


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def load():
    with open(STATE) as fh:
        return json.load(fh)


def packages():
    state = load()
    merged = dict((norm(k), (k, v)) for k, v in state["base"].items())
    merged.update((norm(k), (k, v)) for k, v in state["own"].items())
    return merged


args = sys.argv[1:]
if args[:2] == ["-m", "venv"]:
    target = args[2]
    os.makedirs(os.path.join(target, "bin"), exist_ok=True)
    os.makedirs(os.path.join(target, "lib", "python3.7", "site-packages"), exist_ok=True)
    shutil.copy(sys.argv[0], os.path.join(target, "bin", "python"))
    with open(os.path.join(target, "fake-state.json"), "w") as fh:
        json.dump({"own": {}, "base": dict(packages().values())}, fh)
elif args[:1] == ["-c"] and "KBTOOL-PROBE" in args[1]:
    asked = json.loads(args[2])
    have = dict((k, v) for k, (_, v) in packages().items())
    have.update(json.loads(os.environ.get("FAKE_IMPORTS") or "{}"))
    versions = dict((m, have.get(norm(m), "unknown")) for m in asked["version_of"])
    out = {"python": "3.7.17", "version_info": [3, 7], "executable": sys.argv[0], "versions": versions}
    sys.stdout.write("\nKBTOOL-PROBE " + json.dumps(out) + "\n")
elif args[:1] == ["-c"]:
    print(json.dumps([SITE]))
elif args[:2] == ["-m", "pip"]:
    words = [w for w in args[2:] if not w.startswith("--disable")]
    if words[0] == "freeze":
        for name, version in sorted(packages().values()):
            print(name + "==" + version)
    elif words[0] == "install":
        skips = [norm(p) for p in os.environ.get("FAKE_PIP_SKIPS", "").split(",") if p]
        wanted, rest = [], words[1:]
        while rest:
            word = rest.pop(0)
            if word == "-r":
                with open(rest.pop(0)) as fh:
                    wanted += [line.strip() for line in fh if "==" in line and not line.startswith("#")]
            elif word == "--extra-index-url":
                rest.pop(0)
            elif not word.startswith("-"):
                wanted.append(word)
        state = load()
        for requirement in wanted:
            name, _, version = requirement.partition("==")
            if "==" not in requirement or version.endswith("*") or norm(name) in skips:
                continue  # a range: the base's release meets it
            state["own"][name] = version
        with open(STATE, "w") as fh:
            json.dump(state, fh)
    elif os.environ.get("FAKE_PIP_FAILS") and words[0] == "check":
        sys.exit(1)
else:
    sys.exit("fake python: " + " ".join(args))
"""


def _fake_python(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(FAKE_PYTHON.replace("{python}", sys.executable))
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A scratch KBTOOL_HOME with a fake tensorflow1 env (keras 2.3.1) that releases layer on."""
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    for name in ("FAKE_PIP_SKIPS", "FAKE_IMPORTS", "FAKE_PIP_FAILS"):
        monkeypatch.delenv(name, raising=False)
    base = RECIPES["tensorflow1"].env_dir()
    _fake_python(os.path.join(base, "bin", "python"))
    os.makedirs(os.path.join(base, "lib", "python3.7", "site-packages"))
    with open(os.path.join(base, "fake-state.json"), "w") as fh:
        json.dump({"own": BASE_PACKAGES, "base": {}}, fh)
    installed = [f"{k}=={v}" for k, v in BASE_PACKAGES.items()]
    record = {
        "backend": "tensorflow1",
        "python_version": "3.7",
        "created": "2026-01-01T00:00:00",
        "installed": installed,
    }
    with open(os.path.join(base, envs.RECORD), "w") as fh:
        json.dump(record, fh)
    return tmp_path


def kbtool(*args):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _imports(name, module):
    """The version the release env's interpreter reports for `module` (what its worker would say)."""
    with open(os.path.join(releases.recipe_for(name).env_dir(), "fake-state.json")) as fh:
        state = json.load(fh)
    found = {names.normalise(k): v for k, v in dict(state["base"], **state["own"]).items()}
    return found[names.normalise(module)]


def _lock(name):
    return envs.lock_path(releases.recipe_for(name))


# --- 1. a release never runs its base's packages under its name ----------------------------------------------------


def test_a_lock_that_lost_its_pins_is_refused_before_pip_and_leaves_nothing(home):
    code, _, err = kbtool("env", "install", R)
    assert code == 0, err
    assert _imports(R, "keras") == "2.2.4"
    lock = _lock(R)
    with open(lock) as fh:
        head = fh.readline()
    with open(lock, "w") as fh:  # the audit's `head -1 LOCK`: the lock lost its package lines
        fh.write(head)
    assert kbtool("env", "remove", R)[0] == 0
    code, out, err = kbtool("env", "install", R)
    said = [line for line in err.splitlines() if line.startswith("kbtool: error:")]
    assert code == 2 and len(said) == 1 and "Traceback" not in err
    assert f"its lock {lock} does not pin what its name says: keras is missing (its name says 2.2.4)" in said[0]
    assert "nothing was installed" in said[0] and "pip" not in err.replace("pip skips", "")
    assert not os.path.exists(releases.recipe_for(R).env_dir())  # not registered, nothing half left
    assert "installed" not in out


def test_a_release_env_that_imports_other_versions_is_refused_and_not_left(home, monkeypatch):
    monkeypatch.setenv("FAKE_IMPORTS", json.dumps({"keras": "2.3.1"}))  # pip says 2.2.4; the import finds 2.3.1
    code, _, err = kbtool("env", "install", R)
    said = [line for line in err.splitlines() if line.startswith("kbtool: error:")]
    assert code == 2 and len(said) == 1
    assert f"{R}: its env imports keras 2.3.1 (its name says 2.2.4); it is not that release" in said[0]
    assert not os.path.exists(releases.recipe_for(R).env_dir()) and not os.path.exists(_lock(R))
    assert not [f for f in os.listdir(os.path.dirname(_lock(R))) if ".new-" in f]


def test_a_reinstall_from_a_lock_checks_the_imports_too_and_unrecords_the_env(home, monkeypatch):
    assert kbtool("env", "install", R)[0] == 0
    record = os.path.join(releases.recipe_for(R).env_dir(), envs.RECORD)
    monkeypatch.setenv("FAKE_IMPORTS", json.dumps({"keras": "2.3.1"}))
    code, _, err = kbtool("env", "install", R)
    assert code == 2 and "its env imports keras 2.3.1 (its name says 2.2.4)" in err
    assert not os.path.exists(record)  # no longer recorded as that release: a check says it is not installed


def test_a_worker_that_reports_other_versions_than_the_pins_is_broken_not_run_under_the_name():
    from kbtool.runners.base import Launch
    from kbtool.runners.client import not_its_pins

    launch = Launch(backend=R, python="python", module="keras.backend", pins={"keras": "2.2.4"})
    ready = {"status": "ready", "python": "3.7.17", "versions": {"tensorflow": "1.15.5", "keras": "2.3.1"}}
    hello = not_its_pins(launch, ready)
    assert hello["status"] == "broken"
    assert hello["error"].startswith(f"{R}: its env imports keras 2.3.1 (its name says 2.2.4); not run under its name")
    fine = dict(ready, versions={"keras": "2.2.4", "tensorflow": "1.15.5"})
    assert not_its_pins(launch, fine) is fine
    assert not_its_pins(Launch(backend="tensorflow1", python="p", module="m"), ready) is ready


@pytest.fixture
def extb(tmp_path, monkeypatch):
    """A built-in backend `extb` whose module kbtool's own Python imports (its env pins numpy), for releases whose
    interpreter is kbtool's own: `extb[numpy=<this numpy>]` imports what it pins, `extb[numpy=0.0.1]` does not."""
    from kbtool.paths import CHECKOUT_ROOT
    from kbtool.runners import registry

    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", CHECKOUT_ROOT)
    recipe = Recipe(name="extb", python_version="3.11", packages=["numpy==1.0"], module="kbtool.reference")
    recipe.version_of = ["numpy"]
    monkeypatch.setitem(registry.RECIPES, "extb", recipe)
    monkeypatch.setattr(registry, "BUILTIN", registry.BUILTIN + ["extb"])
    return recipe


def _registered(name):
    """`name`'s env as `kbtool env use` records it, on kbtool's own Python (written directly: as an older kbtool,
    which never checked the pins, left it), with a base env `extb` recorded as installed."""
    env_dir = releases.recipe_for(name).env_dir()
    os.makedirs(env_dir)
    base = RECIPES["extb"].env_dir()
    os.makedirs(base, exist_ok=True)
    with open(os.path.join(base, envs.RECORD), "w") as fh:
        json.dump({"backend": "extb", "installed": []}, fh)
    with open(os.path.join(env_dir, envs.RECORD), "w") as fh:
        json.dump({"backend": name, "external": True, "python": os.path.abspath(sys.executable)}, fh)


def test_a_check_of_a_release_whose_worker_imports_other_versions_reports_it_broken(extb):
    _registered("extb[numpy=0.0.1]")
    code, out, err = kbtool("check", "--op", "dot", "--backend", "extb[numpy=0.0.1]", "--json")
    assert out, err
    report = json.loads(out)
    (info,) = [b for b in report["backends"] if b["name"] == "extb[numpy=0.0.1]"]
    assert info["status"] == "broken", info
    assert f"imports numpy {numpy.__version__} (its name says 0.0.1)" in info["reason"]
    assert not [r for r in report["results"] if r["backend"] == "extb[numpy=0.0.1]" and r["status"] == "pass"]


# --- 2. `env use` holds an interpreter to the pins; a release has one name ---------------------------------------


def test_env_use_refuses_an_interpreter_that_imports_other_versions_than_the_pins(extb):
    code, out, err = kbtool("env", "use", "extb[numpy=0.0.1]", "--python", sys.executable)
    said = [line for line in (out + err).splitlines() if line.strip()]
    assert code == 2 and len(said) == 1, said
    assert f"imports numpy {numpy.__version__} (its name says 0.0.1); nothing was registered" in said[0]
    assert not os.path.exists(releases.recipe_for("extb[numpy=0.0.1]").env_dir())
    mine = f"extb[NumPy={numpy.__version__}]"  # its pins imported: registered, under its one name
    code, out, err = kbtool("env", "use", mine, "--python", sys.executable)
    assert code == 0, out + err
    assert out.startswith(f"extb[numpy={numpy.__version__}]: uses ")


def test_a_registered_release_is_layered_on_nothing(extb):
    name = f"extb[numpy={numpy.__version__}]"
    assert kbtool("env", "use", name, "--python", sys.executable)[0] == 0
    assert envs.problem(releases.recipe_for(name)) is None  # no base env to have changed under it


def test_release_names_are_canonical_at_every_entry_point():
    assert names.canonical("tensorflow1[Keras=2.2.04]") == R
    assert names.parse_range("Keras=2.2.04..2.3.01") == ("keras", "2.2.4", "2.3.1")
    opts = CheckOptions(backend_names=("tensorflow1[Keras=2.2.04]", R, "numpy"))
    assert opts.backend_names == (R, "numpy")
    assert names.canonical_names(
        ["tensorflow1[keras=2.2.4,numpy=1.16.6]", "tensorflow1[NUMPY=1.16.6,keras=2.2.4]"]
    ) == ("tensorflow1[keras=2.2.4,numpy=1.16.6]",)


def test_two_spellings_of_one_release_run_once_under_one_name(extb):
    name = f"extb[numpy={numpy.__version__}]"
    _registered(name)
    other = f"extb[NumPy={numpy.__version__}]"
    code, out, err = kbtool("check", "--op", "dot", "--backend", other, "--backend", name, "--json")
    report = json.loads(out)
    assert [b["name"] for b in report["backends"] if b["name"].startswith("extb")] == [name]
    assert {r["backend"] for r in report["results"]} <= {name, "numpy"}


def test_env_install_and_remove_take_any_spelling_once(home):
    code, out, err = kbtool("env", "install", "tensorflow1[Keras=2.2.04]", R)
    assert code == 0, err
    assert out.count(f"{R}: installed in") == 1 and "runs in the" not in out
    assert os.listdir(os.path.dirname(releases.recipe_for(R).env_dir())) == ["keras-2.2.4"]  # one env, one name
    code, out, _ = kbtool("env", "remove", "tensorflow1[KERAS=2.2.4]")
    assert code == 0 and not os.path.exists(releases.recipe_for(R).env_dir())


# --- 5. --force builds aside: a failed rebuild keeps the working env and its lock --------------------------------


def _tree(path):
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)


def test_a_forced_rebuild_of_a_no_deps_release_stays_no_deps_and_swaps_in(home):
    name = "tensorflow1[keras=2.2.0]"
    assert kbtool("env", "install", name, "--no-deps")[0] == 0
    lock = _lock(name)
    code, out, err = kbtool("env", "install", name, "--force")
    assert code == 0, err
    assert "--no-deps" in err and "building it aside" in err and "replaced" in err
    assert "# kbtool: no-deps" in open(lock).read()
    env_dir = releases.recipe_for(name).env_dir()
    assert _imports(name, "keras") == "2.2.0" and os.path.exists(os.path.join(env_dir, envs.RECORD))
    assert not [f for f in os.listdir(os.path.dirname(env_dir)) if f.startswith(".")]  # nothing left aside


def test_a_failed_forced_rebuild_keeps_the_working_env_and_its_lock(home, monkeypatch):
    name = "tensorflow1[keras=2.2.0]"
    assert kbtool("env", "install", name, "--no-deps")[0] == 0
    env_dir, lock = releases.recipe_for(name).env_dir(), _lock(name)
    before, locked = _tree(env_dir), open(lock).read()
    record = open(os.path.join(env_dir, envs.RECORD)).read()
    monkeypatch.setenv("FAKE_PIP_SKIPS", "keras")  # the rebuild cannot get keras 2.2.0
    code, out, err = kbtool("env", "install", name, "--force")
    said = [line for line in err.splitlines() if line.startswith("kbtool: error:")]
    assert code == 2 and len(said) == 1
    assert f"the env in {env_dir} and its lock were left as they were" in said[0]
    assert _tree(env_dir) == before and open(lock).read() == locked
    assert open(os.path.join(env_dir, envs.RECORD)).read() == record
    assert not [f for f in os.listdir(os.path.dirname(env_dir)) if f.startswith(".")]  # the aside build is gone
    assert not [f for f in os.listdir(os.path.dirname(lock)) if ".new-" in f]
