# py36-compatible
"""A custom backend module run on an engine's whole models (`kbtool models --backend mod@env`): each public function
of the module that is not the base backend's own object is put into the module the engine's layers look their
backend functions up in at call time (keras2: keras.backend; tf_keras: tf_keras.src.backend), before the model is
built. Keras 3's layers call keras.src.ops, never a backend module: nothing there can be substituted."""

import importlib
import types

from . import api as apis
from . import zoo

MARK = "_kbtool_substituted"  # on the layer-facing module: what this worker already put there


def public_functions(module):
    found = {}
    for name in dir(module):
        if name.startswith("_"):
            continue
        try:
            value = getattr(module, name)
        except Exception:  # a lazy attribute that fails to load is no function of the module
            continue
        if callable(value) and not isinstance(value, type) and not isinstance(value, types.ModuleType):
            found[name] = value
    return found


def substitute(api, K, base_modules):
    """The sorted names of K's functions now in the layer-facing module (once per worker: later calls answer the
    same); zoo.Unsupported on Keras 3."""
    facing = apis.layer_facing_module(api)
    if facing is None:
        raise zoo.Unsupported(
            "a custom module cannot be substituted on Keras 3: its layers call keras.src.ops functions, not a "
            "backend module's, so no K.* function of the module would be used"
        )
    if facing is K:
        return []
    done = getattr(facing, MARK, None)
    if done is not None:
        return list(done)
    base = {}
    for name in base_modules:
        for fn_name, fn in public_functions(importlib.import_module(name)).items():
            base.setdefault(fn_name, fn)
    # the module's own references to the layer-facing module (`import keras.backend as base`) keep seeing the
    # engine's functions: else a function that wraps its base would call itself
    original = types.ModuleType(facing.__name__)
    original.__dict__.update(facing.__dict__)
    for name, value in list(vars(K).items()):
        if value is facing:
            setattr(K, name, original)
    names = []
    for name, fn in sorted(public_functions(K).items()):
        if name in base and base[name] is not fn and getattr(facing, name, None) is not fn:
            setattr(facing, name, fn)
            names.append(name)
    setattr(facing, MARK, tuple(names))
    return names
