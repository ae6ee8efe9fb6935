# py36-compatible
"""Start-up shims applied before a backend is imported, named by the backend's recipe."""

import sys


def collections_abc():
    # keras 2.3.1 and theano 1.0.5 import ABCs from `collections`, removed in Python 3.10.
    import collections
    import collections.abc

    for name in ("Iterable", "Mapping", "Sequence", "Callable", "MutableMapping"):
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))


def theano_no_c_scan():
    # Theano's C scan extension does not build on Python 3.11; the pure-Python scan works.
    sys.modules["theano.scan_module.scan_perform_ext"] = None


def plaidml_install_backend():
    # plaidml-keras plugs its backend into keras 2.2.4 by patching keras's backend loader before keras is imported.
    import plaidml.keras

    plaidml.keras.install_backend()


SHIMS = {
    "collections_abc": collections_abc,
    "theano_no_c_scan": theano_no_c_scan,
    "plaidml_install_backend": plaidml_install_backend,
}


def apply(names):
    for name in names:
        SHIMS[name]()
