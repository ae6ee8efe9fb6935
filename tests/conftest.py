import os
import sys
import tempfile

import pytest

# A check applies the user's keras.json (kbtool/keras_settings.py): the suite runs with an empty KERAS_HOME and no
# KERAS_BACKEND unless a test sets its own, so the machine's ~/.keras/keras.json never changes a result.
os.environ["KERAS_HOME"] = tempfile.mkdtemp(prefix="kbtool-tests-keras-home-")
os.environ.pop("KERAS_BACKEND", None)
# Views wrap at COLUMNS when it is set (a log keeps whole lines otherwise); pytest-xdist's workers inherit
# COLUMNS=80, a plain run none: the suite runs without it, and a test that wants a width sets its own.
os.environ.pop("COLUMNS", None)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Workers on kbtool's own Python (numpy, custom modules written by the tests, which import kbtool.reference) import
# the kbtool under test, whether or not the caller exported PYTHONPATH=$PWD or installed kbtool.
if ROOT not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
# The Keras doc pages ("Keras backends", five versions) are not the project's to ship: the spec (specs/ops.yaml) holds
# what a check takes from them, and the tests that compare the spec with the pages themselves need KBTOOL_DOCS (default:
# ../shared/seeds beside the checkout, when it is there); without them those tests skip.
DOCS = os.environ.get("KBTOOL_DOCS") or os.path.join(os.path.dirname(ROOT), "shared", "seeds")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A test that runs pytest inside pytest (the `pytester` fixture) is `slow` whether or not it says so: marked
    before `-m` selects."""
    for item in items:
        if "pytester" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def docs_dir():
    """The folder of the Keras doc pages (KBTOOL_DOCS); the test skips when they are absent and KBTOOL_DOCS is unset."""
    if not os.path.isdir(DOCS) and not os.environ.get("KBTOOL_DOCS"):
        pytest.skip(f"needs the Keras doc pages: set KBTOOL_DOCS to their folder (no {DOCS})")
    return DOCS


@pytest.fixture(scope="session")
def shipped_spec():
    """The shipped spec (specs/ops.yaml), loaded once for the session: tests read it and never change it."""
    from kbtool.specs import loader

    return loader.load()


@pytest.fixture(scope="session")
def spec(shipped_spec):
    """The shipped spec under the name most modules use (a module with a spec of its own overrides it)."""
    return shipped_spec


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    """An isolated KERAS_HOME with no KERAS_BACKEND override."""
    home = tmp_path / "keras_home"
    monkeypatch.setenv("KERAS_HOME", str(home))
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    return home


@pytest.fixture
def custom_backend(tmp_path, monkeypatch):
    """Write a module into a fresh directory on sys.path and PYTHONPATH; returns a writer."""
    pkg_dir = tmp_path / "custom_backends"
    pkg_dir.mkdir()
    monkeypatch.syspath_prepend(str(pkg_dir))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pkg_dir), os.environ.get("PYTHONPATH", "")]))

    def write(package, module, source):
        d = pkg_dir / package
        d.mkdir(exist_ok=True)
        (d / "__init__.py").write_text("")
        (d / (module + ".py")).write_text(source)
        sys.modules.pop(package, None)
        sys.modules.pop(package + "." + module, None)
        return f"{package}.{module}"

    return write


@pytest.fixture
def no_known(tmp_path, monkeypatch):
    """An empty known-differences file (its path) and a private kbtool home: a check judges every result as is."""
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    path = tmp_path / "known.yaml"
    path.write_text("[]\n")
    return str(path)
