"""Release backends (`tensorflow1[keras=2.2.4]`): names, derived recipes, layered envs, locks under kbtool's home."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from kbtool.errors import KbtoolError
from kbtool.runners import envs, releases
from kbtool.runners.envs import build as env_build
from kbtool.runners.envs import layered
from kbtool.runners.registry import RECIPES, is_builtin, recipe_of

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_name_is_canonical_whatever_the_spelling():
    release = releases.parse(" tensorflow[TF_Keras=2.16.0] ")
    assert release == releases.Release("tensorflow", (("tf-keras", "2.16.0"),))
    assert release.name == "tensorflow[tf-keras=2.16.0]"
    two = releases.parse("tensorflow1[numpy=1.16.6,Keras=2.2.4]")
    assert two.name == "tensorflow1[keras=2.2.4,numpy=1.16.6]"  # sorted by package
    assert two.folder == os.path.join("releases", "tensorflow1", "keras-2.2.4+numpy-1.16.6")
    assert two.version_of("Keras") == "2.2.4" and two.version_of("theano") is None


@pytest.mark.parametrize(
    "name, said",
    [
        ("tensorflow1", r"BACKEND\[PACKAGE=VERSION\]"),
        ("tensorflow1[keras]", "is not PACKAGE=VERSION"),
        ("tensorflow1[keras==2.2.4]", "is not PACKAGE=VERSION"),
        ("tensorflow1[]", "name at least one"),
        ("tensorflw[keras=2.2.4]", "not a built-in backend with an env"),
        ("numpy[numpy=1.26.0]", "not a built-in backend with an env"),
        ("tensorflow1[keras=2.2.4,keras=2.2.5]", "pinned twice"),
        ("tensorflow1[theano=1.0.2]", "theano is not a package of the tensorflow1 env"),
    ],
)
def test_a_bad_name_says_what_is_wrong_in_one_line(name, said):
    with pytest.raises(KbtoolError, match=said) as caught:
        releases.parse(name)
    assert "\n" not in str(caught.value)


def test_a_release_may_pin_any_package_of_its_env_lock_included():
    assert {"tensorflow", "keras", "h5py", "protobuf", "numpy", "scipy"} <= set(
        releases.packages_of(RECIPES["tensorflow1"])
    )
    assert releases.parse("keras3[keras=3.10.0]").base == "keras3"  # keras3 shares tensorflow's env: its lock


def test_a_release_recipe_is_its_base_with_the_pins_and_its_own_env_and_lock(monkeypatch, tmp_path):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    recipe = releases.recipe_for("tensorflow1[keras=2.2.4]")
    base = RECIPES["tensorflow1"]
    assert recipe.name == "tensorflow1[keras=2.2.4]" and recipe.module == base.module
    assert recipe.packages == ["tensorflow==1.15.5", "keras==2.2.4", "h5py<3", "protobuf<3.21"]
    assert recipe.layered_on == "tensorflow1" and recipe.env_owner == recipe.name
    assert recipe.env_dir() == os.path.join(str(tmp_path), "envs", "releases", "tensorflow1", "keras-2.2.4")
    assert envs.lock_path(recipe) == os.path.join(str(tmp_path), "locks", "releases", "tensorflow1", "keras-2.2.4.txt")
    assert envs.lock_path(base) == os.path.join(envs.LOCKS_DIR, "tensorflow1.txt")  # the base's ships with kbtool
    # a shared-env backend's release gets an env of its own, layered on the env it shares
    keras3 = releases.recipe_for("keras3[keras=3.10.0]")
    assert keras3.layered_on == "tensorflow" and "keras==3.10.0" in keras3.packages
    assert keras3.env_dir().endswith(os.path.join("releases", "keras3", "keras-3.10.0"))


def test_a_coupled_package_follows_the_pinned_release_unless_pinned_itself():
    # tf-keras 2.14 runs on TF 2.14 but does not require it: the recipe couples them by major.minor
    assert releases.recipe_for("tensorflow[tf-keras=2.14.1]").packages == ["tensorflow==2.14.*", "tf-keras==2.14.1"]
    both = releases.recipe_for("tensorflow[tensorflow=2.16.2,tf-keras=2.16.0]")
    assert both.packages == ["tensorflow==2.16.2", "tf-keras==2.16.0"]


def test_release_names_are_built_in_backends_and_others_are_not():
    assert is_builtin("tensorflow1[keras=2.2.4]") and is_builtin("numpy") and not is_builtin("my.mod")
    assert not is_builtin("nope[keras=2.2.4]")
    assert recipe_of("numpy") is None and recipe_of("my.mod") is None
    assert recipe_of("theano").name == "theano"


def _index(versions):
    def runner(argv, **kwargs):
        out = "keras (9)\nAvailable versions: {}\n".format(", ".join(versions))
        return subprocess.CompletedProcess(argv, 0, out.encode(), b"")

    return runner


def test_a_range_names_every_release_of_the_index_in_version_order():
    index = _index(["2.10.0", "2.9.0", "2.3.1", "2.3.0rc1", "2.2.5", "2.2.4", "2.11.0"])
    found = releases.expand("tensorflow1", "keras=2.2.5..2.10.0", runner=index)
    assert [r.name for r in found] == [
        "tensorflow1[keras=2.2.5]",
        "tensorflow1[keras=2.3.1]",
        "tensorflow1[keras=2.9.0]",
        "tensorflow1[keras=2.10.0]",  # 2.10 after 2.9; the release candidate is left out
    ]


@pytest.mark.parametrize(
    "text, said",
    [
        ("keras=2.3.1..2.2.4", "write the older release first"),
        ("keras=2.2.4", "PACKAGE=LOW..HIGH"),
        ("keras=2.2.3..2.3.1", "the index has no keras 2.2.3"),
        ("theano=1.0.2..1.0.5", "theano is not a package of the tensorflow1 env"),
    ],
)
def test_a_bad_range_is_one_line(text, said):
    with pytest.raises(KbtoolError, match=said):
        releases.expand("tensorflow1", text, runner=_index(["2.2.4", "2.2.5", "2.3.1"]))


def test_an_index_that_has_no_release_is_said():
    def runner(argv, **kwargs):
        return subprocess.CompletedProcess(argv, 1, b"", b"ERROR: No matching distribution found for kerass\n")

    with pytest.raises(KbtoolError, match="no release of kerass.*No matching distribution"):
        releases.index_versions("tensorflow1", "kerass", runner=runner)


def test_installed_releases_are_read_back_from_their_folders(monkeypatch, tmp_path):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    root = tmp_path / "envs" / "releases"
    for folder in ["tensorflow1/keras-2.10.0", "tensorflow1/keras-2.2.4", "tensorflow/tf-keras-2.16.0", "nope/x-1"]:
        (root / folder).mkdir(parents=True)
    (root / "tensorflow1" / "junk").mkdir()  # not a release folder: passed over
    assert [r.name for r in releases.installed()] == [
        "tensorflow[tf-keras=2.16.0]",
        "tensorflow1[keras=2.2.4]",
        "tensorflow1[keras=2.10.0]",
    ]
    assert [r.name for r in releases.installed("tensorflow")] == ["tensorflow[tf-keras=2.16.0]"]


def test_the_first_install_must_give_what_the_recipe_asks():
    recipe = releases.recipe_for("tensorflow[tf-keras=2.16.0]")
    layered.check_pins(recipe, ["tensorflow==2.16.2", "tf_keras==2.16.0", "numpy==1.26.4"])
    with pytest.raises(KbtoolError, match=r"tensorflow 2.21.0 \(asked ==2.16.\*\); tf-keras is missing"):
        layered.check_pins(recipe, ["tensorflow==2.21.0"])


def _record(path, **fields):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, envs.RECORD), "w") as fh:
        json.dump(fields, fh)


def _release_env(recipe, base_dir, own):
    """A release venv as install leaves it: the `.pth` naming the base's site-packages, `own` packages installed."""
    site = os.path.join(recipe.env_dir(), "lib", "python3.7", "site-packages")
    base_site = os.path.join(base_dir, "lib", "python3.7", "site-packages")
    os.makedirs(base_site, exist_ok=True)
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, layered.PTH), "w") as fh:
        fh.write(base_site + "\n")
    for folder in own:
        os.makedirs(os.path.join(site, folder))
    return base_site


BASE_FROZEN = ["Keras==2.3.1", "numpy==1.18.5", "tensorflow==1.15.5"]
RELEASE_FROZEN = ["Keras==2.2.4", "numpy==1.18.5", "tensorflow==1.15.5"]


def test_a_release_whose_base_was_removed_or_changed_is_broken_and_says_how_to_mend_it(monkeypatch, tmp_path):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    recipe = releases.recipe_for("tensorflow1[keras=2.2.4]")
    base_dir = RECIPES["tensorflow1"].env_dir()
    record = {
        "layered_on": {"env": "tensorflow1", "path": base_dir, "created": "2026-01-01T00:00:00+00:00"},
        "installed": RELEASE_FROZEN,
    }
    assert "its base env tensorflow1 was removed" in layered.base_problem(recipe, record)
    base_site = _release_env(recipe, base_dir, ["Keras-2.2.4.dist-info", "pip-23.0.dist-info"])
    _record(base_dir, created="2026-01-01T00:00:00+00:00", installed=BASE_FROZEN)
    assert layered.base_problem(recipe, record) is None
    # reinstalled or rebuilt with the same packages (`kbtool env install --all` on a kept home): the same base
    _record(base_dir, created="2026-02-02T00:00:00+00:00", installed=list(reversed(BASE_FROZEN)))
    assert layered.base_problem(recipe, record) is None
    _record(base_dir, created="2026-02-02T00:00:00+00:00", installed=["Keras==2.3.1", "numpy==1.19.0"])
    said = layered.base_problem(recipe, record)
    assert "its base env tensorflow1 changed since it was layered on it" in said
    assert "(numpy 1.18.5 -> 1.19.0, tensorflow 1.15.5 -> gone)" in said
    assert "kbtool env install 'tensorflow1[keras=2.2.4]' --force" in said
    _record(base_dir, installed=BASE_FROZEN + ["scipy==1.7.3", "local @ file:///src/local"])  # no version: not read
    assert "(scipy absent -> 1.7.3)" in layered.base_problem(recipe, record)
    _record(base_dir, installed=["a==1", "b==1", "c==1", "d==1", "e==1"] + BASE_FROZEN)
    assert "(a absent -> 1, b absent -> 1, c absent -> 1 and 2 more)" in layered.base_problem(recipe, record)
    _record(base_dir, installed=BASE_FROZEN)
    os.rmdir(base_site)  # the base rebuilt from another Python: the site-packages the .pth names is gone
    assert f"no longer has {base_site}" in layered.base_problem(recipe, record)


def test_a_package_the_release_holds_itself_is_never_the_bases_change():
    release = {"keras": "2.2.4", "numpy": "1.18.5", "keras-applications": "1.0.2"}
    base = {"keras": "2.3.1", "numpy": "1.18.5", "keras-applications": "1.0.8"}
    assert layered.base_changes(base, release, {"keras", "keras-applications"}) == []
    assert layered.base_changes(base, release, {"keras"}) == ["keras-applications 1.0.2 -> 1.0.8"]


def test_the_release_venvs_own_packages_are_read_from_its_folders(monkeypatch, tmp_path):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    recipe = releases.recipe_for("tensorflow[tf-keras=2.16.0]")
    own = ["tf_keras-2.16.0.dist-info", "PyYAML-6.0.1-py3.7.egg-info", "Keras_Applications-1.0.2.dist-info", "x.py"]
    _release_env(recipe, str(tmp_path / "base"), own)
    assert layered._own(recipe.env_dir()) == {"tf-keras", "pyyaml", "keras-applications"}


def test_a_release_is_layered_only_on_an_env_kbtool_built(monkeypatch, tmp_path):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    recipe = releases.recipe_for("tensorflow1[keras=2.2.4]")
    with pytest.raises(KbtoolError, match="run `kbtool env install tensorflow1` first"):
        layered.base_of(recipe)
    _record(RECIPES["tensorflow1"].env_dir(), external=True, python="/usr/bin/python3")
    with pytest.raises(KbtoolError, match="layered only on an env kbtool built"):
        layered.base_of(recipe)


def test_a_missing_base_is_installed_before_its_releases(monkeypatch, tmp_path):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    one, two = releases.recipe_for("tensorflow1[keras=2.2.4]"), releases.recipe_for("tensorflow1[keras=2.2.5]")
    assert [r.name for r in env_build._bases_first([one, two])] == ["tensorflow1", one.name, two.name]
    _record(RECIPES["tensorflow1"].env_dir(), created="x")
    assert [r.name for r in env_build._bases_first([one])] == [one.name]


def test_env_install_refuses_an_unknown_name_and_a_bad_release_in_one_line(monkeypatch, tmp_path):
    env = dict(os.environ, KBTOOL_HOME=str(tmp_path), PYTHONPATH=REPO)
    for name, said in [("nope", "unknown environment nope"), ("tensorflow1[theano=1.0]", "not a package of")]:
        proc = subprocess.run(
            [sys.executable, "-m", "kbtool", "env", "install", name], capture_output=True, text=True, env=env
        )
        assert proc.returncode == 2 and said in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


TF1 = RECIPES["tensorflow1"].env_dir()  # the base env, where KBTOOL_HOME puts it (CI's own home included)


def _shared_base(home):
    """The tensorflow1 env in `home`, shared with the real one entry by entry, all but its install record (a copy,
    which the test may change): returns the copy's path."""
    base = home / "envs" / "tensorflow1"
    base.mkdir(parents=True)
    for entry in os.listdir(TF1):
        if entry != envs.RECORD:
            os.symlink(os.path.join(TF1, entry), str(base / entry))
    shutil.copy(os.path.join(TF1, envs.RECORD), str(base / envs.RECORD))
    return base / envs.RECORD


@pytest.mark.backends
@pytest.mark.skipif(not os.path.exists(os.path.join(TF1, envs.RECORD)), reason="the tensorflow1 env is not installed")
def test_releases_coexist_each_exact_to_its_lock_and_removing_one_leaves_the_others(tmp_path):
    home = tmp_path / "home"
    base_record = _shared_base(home)  # the base env, shared: only releases are made here
    env = dict(os.environ, KBTOOL_HOME=str(home), PYTHONPATH=REPO)

    def kbtool(*args):
        return subprocess.run([sys.executable, "-m", "kbtool", *args], capture_output=True, text=True, env=env)

    names = ["tensorflow1[keras=2.2.4]", "tensorflow1[keras=2.2.5]"]
    done = kbtool("env", "install", *names)
    assert done.returncode == 0, done.stderr
    for name, version in zip(names, ["2.2.4", "2.2.5"]):
        recipe = releases.recipe_for(name)
        lock = os.path.join(str(home), "locks", recipe.release.folder + ".txt")
        with open(lock) as fh:
            locked = sorted(line.strip() for line in fh if "==" in line)
        python = os.path.join(str(home), "envs", recipe.release.folder, "bin", "python")
        frozen = subprocess.run(
            [python, "-m", "pip", "freeze"], capture_output=True, text=True, env=envs.pip_environ()
        ).stdout.split()
        assert sorted(line for line in frozen if "==" in line) == locked  # exact to its lock
        assert f"Keras=={version}" in locked
        said = subprocess.run([python, "-c", "import keras; print(keras.__version__)"], capture_output=True, text=True)
        assert said.stdout.split()[-1] == version
    listed = kbtool("env", "list", "--json")
    assert set(names) <= {info["name"] for info in json.loads(listed.stdout)}
    assert kbtool("env", "remove", names[0]).returncode == 0
    listed = {info["name"]: info for info in json.loads(kbtool("env", "list", "--json").stdout)}
    assert names[0] not in listed and listed[names[1]]["installed"] and listed["tensorflow1"]["installed"]
    ran = kbtool("check", "--op", "batch_dot", "--case", "rank4_rank3", "--backend", names[1], "-q")
    assert ran.returncode in (0, 1) and "2 results" in ran.stdout + ran.stderr, ran.stdout + ran.stderr
    record = json.loads(base_record.read_text())  # `kbtool env install --all` again: the base reinstalled, as it was
    base_record.write_text(json.dumps(dict(record, created="2099-01-01T00:00:00+00:00")))
    ran = kbtool("check", "--op", "batch_dot", "--case", "rank4_rank3", "--backend", names[1], "-q")
    assert ran.returncode in (0, 1) and "2 results" in ran.stdout + ran.stderr, ran.stdout + ran.stderr
    numpy = next(line for line in record["installed"] if line.startswith("numpy=="))
    changed = [line if line != numpy else "numpy==0.0.1" for line in record["installed"]]
    base_record.write_text(json.dumps(dict(record, installed=changed)))  # the base's packages changed under it
    ran = kbtool("check", "--op", "batch_dot", "--backend", names[1])
    assert ran.returncode == 2 and "changed since it was layered on it" in ran.stderr, ran.stderr
    assert f"({numpy.replace('==', ' ')} -> 0.0.1); `kbtool env install '{names[1]}' --force`" in ran.stderr


def test_a_no_deps_release_brings_what_its_pins_require_and_records_what_stays_unmet(monkeypatch):
    recipe = releases.recipe_for("tensorflow1[keras=2.2.0]")
    checks = iter(
        [
            [  # after keras 2.2.0 alone: its own pins are unmet (TensorFlow's are not ours to follow)
                "keras 2.2.0 has requirement keras-applications==1.0.2, but you have keras-applications 1.0.8.",
                "keras 2.2.0 has requirement keras-preprocessing==1.0.1, but you have keras-preprocessing 1.1.2.",
                "tensorflow 1.15.5 has requirement numpy<1.19.0, but you have numpy 1.21.0.",
            ],
            ["keras-applications 1.0.2 has requirement h5py>=2.7, but you have h5py 2.6."],  # theirs, one round on
            ["tensorflow 1.15.5 has requirement keras-applications>=1.0.8, but you have keras-applications 1.0.2."],
        ]
    )
    monkeypatch.setattr(layered, "unmet", lambda pip, env, cwd: next(checks))
    installed = []
    layered.follow_requirements(recipe, installed.append, ["/e/bin/python", "-m", "pip"], {})
    assert installed == [
        ["--no-deps", "keras-applications==1.0.2", "keras-preprocessing==1.0.1"],
        ["--no-deps", "h5py>=2.7"],
    ]


def test_a_no_deps_lock_says_so_and_its_reinstalls_follow_it(tmp_path):
    recipe = releases.recipe_for("tensorflow1[keras=2.2.0]")
    path = str(tmp_path / "lock.txt")
    layered.write_lock(recipe, ["Keras==2.2.0", "Keras-Applications==1.0.2"], path, no_deps=True)
    assert layered.lock_says_no_deps(path)
    assert "# installed with --no-deps: keras 2.2.0 over the base env" in open(path).read()
    layered.write_lock(recipe, ["Keras==2.2.0"], path)
    assert not layered.lock_says_no_deps(path) and not layered.lock_says_no_deps(str(tmp_path / "none.txt"))


def test_no_deps_is_for_releases_only(monkeypatch, tmp_path):
    env = dict(os.environ, KBTOOL_HOME=str(tmp_path), PYTHONPATH=REPO)
    for args in (["theano", "--no-deps"], ["--all", "--no-deps"]):
        proc = subprocess.run(
            [sys.executable, "-m", "kbtool", "env", "install", *args], capture_output=True, text=True, env=env
        )
        assert proc.returncode == 2 and "--no-deps is for releases only" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.backends
@pytest.mark.skipif(not os.path.exists(os.path.join(TF1, envs.RECORD)), reason="the tensorflow1 env is not installed")
def test_keras_2_2_0_cannot_share_keras_applications_with_tensorflow_1_15_and_kbtool_says_so(tmp_path):
    home = tmp_path / "home"
    (home / "envs").mkdir(parents=True)
    os.symlink(TF1, str(home / "envs" / "tensorflow1"))
    env = dict(os.environ, KBTOOL_HOME=str(home), PYTHONPATH=REPO)

    def kbtool(*args):
        return subprocess.run([sys.executable, "-m", "kbtool", *args], capture_output=True, text=True, env=env)

    name = "tensorflow1[keras=2.2.0]"
    refused = kbtool("env", "install", name)
    assert refused.returncode == 2
    assert "conflicting dependencies: " in refused.stderr and "keras 2.2.0 depends on keras-" in refused.stderr
    assert f"`kbtool env install '{name}' --no-deps`" in refused.stderr
    forced = kbtool("env", "install", name, "--no-deps")
    assert forced.returncode == 0, forced.stderr
    record = json.load(open(os.path.join(str(home), "envs", releases.parse(name).folder, envs.RECORD)))
    assert record["no_deps"] is True
    assert any(
        line.startswith("tensorflow 1.15.5 has requirement keras-applications>=1.0.8") for line in record["unmet"]
    )
    ran = kbtool("check", "--op", "abs", "--backend", name, "--json")
    report = json.loads(ran.stdout)
    [info] = report["backends"]  # TensorFlow 1.15 imports keras_applications itself, and 1.0.2 refuses it
    assert info["status"] == "broken" and "import keras" in info["reason"]


def test_the_start_up_shims_put_back_what_old_theano_releases_import_from_the_standard_library():
    code = (
        "import collections, fractions\n"
        "from kbtool.worker import shims\n"
        "shims.apply(['collections_abc', 'fractions_gcd'])\n"
        "from collections import MutableSet, Iterable\n"  # theano 1.0.3 and older; keras 2.3.1
        "from fractions import gcd\n"  # theano 1.0.4 and older
        "print(gcd(12, 18), MutableSet.__module__)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["6", "collections.abc"]
    assert {"collections_abc", "fractions_gcd"} <= set(RECIPES["theano"].shims)
    assert releases.recipe_for("theano[theano=1.0.0]").shims == RECIPES["theano"].shims


THEANO = RECIPES["theano"].env_dir()


@pytest.mark.backends
@pytest.mark.skipif(not os.path.exists(os.path.join(THEANO, envs.RECORD)), reason="the theano env is not installed")
def test_theano_releases_back_to_1_0_0_run_on_python_3_11(tmp_path):
    """theano 1.0.0 imports collections.MutableSet, 1.0.4 fractions.gcd: both gone from Python 3.11."""
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "kbtool", "check", "--op", "abs", "--backend", "theano", "--versions"]
        + ["theano=1.0.0..1.0.5", "-o", str(out)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=REPO),
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    said = {info["name"]: info for info in report["backends"]}
    assert len(said) == 6 and all(info["status"] == "available" for info in said.values()), said
    assert said["theano[theano=1.0.0]"]["versions"]["theano"] == "1.0.0"


def test_the_bad_name_and_range_messages_say_all_a_user_needs_in_one_line():
    from kbtool.runners.registry import RECIPES as ALL

    with pytest.raises(KbtoolError) as info:
        releases.parse("nope[keras=2.2.4]")
    assert str(info.value) == (
        "'nope[keras=2.2.4]': nope is not a built-in backend with an env of its own; releases of "
        + ", ".join(ALL)
        + " can be asked"
    )
    with pytest.raises(KbtoolError) as info:
        releases.parse("theano[jax=0.4,torch=2.0]")
    assert str(info.value) == (
        "'theano[jax=0.4,torch=2.0]': jax, torch are not a package of the theano env; its packages: "
        + ", ".join(sorted(releases.packages_of(ALL["theano"])))
    )
    with pytest.raises(KbtoolError) as info:
        releases.parse("theano[jax=0.4]")
    assert " jax is not a package" in str(info.value)
    with pytest.raises(KbtoolError) as info:
        releases.expand("nope", "keras=2.2.4..2.3.1")
    assert str(info.value) == (
        "--versions applies to a built-in backend with an env ({}), not nope".format(", ".join(ALL))
    )
    many = [f"2.{minor}.0" for minor in range(10)]  # 2.0.0 ... 2.9.0
    with pytest.raises(KbtoolError) as info:
        releases.expand("tensorflow1", "keras=2.0.1..2.9.1", runner=_index(many))
    assert str(info.value) == (
        "--versions keras=2.0.1..2.9.1: the index has no keras 2.0.1 or 2.9.1 (its releases: ... "
        "2.2.0, 2.3.0, 2.4.0, 2.5.0, 2.6.0, 2.7.0, 2.8.0, 2.9.0)"
    )
    with pytest.raises(KbtoolError) as info:
        releases.expand("tensorflow1", "keras=2.0.1..2.2.0", runner=_index(many[:8]))
    assert str(info.value).endswith("the index has no keras 2.0.1 (its releases: " + ", ".join(many[:8]) + ")")
