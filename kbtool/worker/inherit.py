# py36-compatible
"""Which functions a custom module shares with the backend it is built on (`pkg.mod@tensorflow`: tf_keras.backend).

A known difference belongs to an implementation: a custom module whose function is the very same object as its base
backend's inherits that function's known differences. The worker compares the two after importing both and says
so in its hello; nothing here imports anything.
"""

import traceback


def public_functions(module):
    """{name: function} of a module's public callables, as the invoker would find them by name."""
    found = {}
    for name in dir(module):
        if name.startswith("_"):
            continue
        try:
            value = getattr(module, name)
        except Exception:  # a lazy attribute that fails to load is no function of the module
            continue
        if callable(value):
            found[name] = value
    return found


def resolved(modules):
    """{name: function} of what the invoker calls for each name: the first module of `modules` that has it callable
    (a base backend's public module first, then its fallback modules)."""
    found = {}
    for module in modules:
        for name, value in public_functions(module).items():
            found.setdefault(name, value)
    return found


def compare(custom, base_modules):
    """(shared, differ): the sorted public names whose function in `custom` (a module, or the modules the invoker
    looks in for it: the module, then its base's fallbacks) is the base's own object (`is`), and those that are not
    (the custom module redefines it, adds it, or lacks one the base has). A name in neither list is a function
    neither module has."""
    mine = resolved(custom if isinstance(custom, (list, tuple)) else [custom])
    base = resolved(base_modules)
    shared = sorted(name for name, value in mine.items() if name in base and base[name] is value)
    differ = sorted((set(mine) | set(base)) - set(shared))
    return shared, differ


def base_hello(custom, backend, module_names, import_module):
    """The hello's "base" field: the base backend, its modules and what `custom` shares with them, or why its
    modules could not be imported (then nothing is inherited). `import_module` is importlib.import_module."""
    hello = {"backend": backend, "modules": list(module_names)}
    try:
        modules = [import_module(name) for name in module_names]
    except BaseException as exc:  # SystemExit, a backend's own exceptions: the custom module still runs
        if isinstance(exc, KeyboardInterrupt):
            raise
        hello["error"] = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return hello
    hello["shared"], hello["differ"] = compare(custom, modules)
    return hello


def inherited(base, op):
    """The base backend's name when the custom module's `op` is the base's own function, or neither has one (it
    keeps the base's gap); None otherwise, or when `base` (a hello's "base" field) is missing or has an error."""
    if not isinstance(base, dict) or base.get("error") or not isinstance(base.get("backend"), str):
        return None
    shared, differ = base.get("shared"), base.get("differ")
    if not isinstance(shared, list) or not isinstance(differ, list) or op in differ:
        return None
    return base["backend"]
