# py36-compatible
"""Start-up shims applied before a backend is imported, named by the backend's recipe."""

import sys


def collections_abc():
    # keras 2.3.1 and theano 1.0.5 import ABCs from `collections` (theano 1.0.3 and older MutableSet too), removed
    # in Python 3.10: every ABC is put back where they looked.
    import collections
    import collections.abc

    for name in collections.abc.__all__:
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))


def fractions_gcd():
    # theano 1.0.4 and older (its releases, `theano[theano=1.0.4]`) import `gcd` from `fractions`, removed in Python
    # 3.9; math.gcd is the same function for the integers Theano gives it.
    import fractions
    import math

    if not hasattr(fractions, "gcd"):
        fractions.gcd = math.gcd


def theano_no_c_scan():
    # Theano's C scan extension does not build on Python 3.11; the pure-Python scan works.
    sys.modules["theano.scan_module.scan_perform_ext"] = None


def plaidml_install_backend():
    # plaidml-keras plugs its backend into keras 2.2.4 by patching keras's backend loader before keras is imported.
    import plaidml.keras

    plaidml.keras.install_backend()


def keras_numpy_backend():
    # keras 2.3.1's own NumPy oracle, keras/backend/numpy_backend.py, imported without keras/__init__.py,
    # keras/backend/__init__.py and keras/utils/__init__.py: each of those loads the configured backend (TensorFlow).
    # Empty packages stand in for them (their __path__ is the real folder, so the submodules are keras's own files);
    # numpy_backend.py needs keras.backend.common, keras.utils.generic_utils and keras.utils.to_categorical only.
    import importlib
    import importlib.util
    import os
    import re
    import types

    found = importlib.util.find_spec("keras")  # finds the package without running its __init__.py
    if found is None or not found.submodule_search_locations:
        raise ImportError("No module named 'keras'")
    root = list(found.submodule_search_locations)[0]
    for name in ("keras", "keras.backend", "keras.utils"):
        package = types.ModuleType(name)
        package.__path__ = [os.path.join(root, *name.split(".")[1:])]
        package.__file__ = os.path.join(package.__path__[0], "__init__.py")
        sys.modules[name] = package
        if "." in name:
            setattr(sys.modules["keras"], name.split(".")[1], package)
    with open(sys.modules["keras"].__file__) as f:  # the version keras/__init__.py declares
        version = re.search(r"^__version__ = ['\"]([^'\"]+)['\"]", f.read(), re.M)
    sys.modules["keras"].__version__ = version.group(1) if version else "unknown"
    common = importlib.import_module("keras.backend.common")
    # keras.json, as keras/backend/load_backend.py applies it: before numpy_backend.py is imported, whose
    # zeros/ones take floatx() as a default argument
    import json

    try:
        with open(os.path.join(os.environ.get("KERAS_HOME", ""), "keras.json")) as f:
            config = json.load(f)
    except (OSError, ValueError):
        config = {}
    if isinstance(config, dict):
        for key in ("floatx", "epsilon", "image_data_format"):
            if key in config:
                getattr(common, "set_" + key)(config[key])
    sys.modules["keras.utils"].to_categorical = importlib.import_module("keras.utils.np_utils").to_categorical
    importlib.import_module("keras.utils.generic_utils")


SHIMS = {
    "collections_abc": collections_abc,
    "theano_no_c_scan": theano_no_c_scan,
    "fractions_gcd": fractions_gcd,
    "plaidml_install_backend": plaidml_install_backend,
    "keras_numpy_backend": keras_numpy_backend,
}


def apply(names):
    for name in names:
        SHIMS[name]()
