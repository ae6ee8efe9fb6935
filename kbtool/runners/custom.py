"""Custom backends: any importable module with the Keras backend API, named as Keras 2 names it in keras.json.

`my_backend` or `my_package.my_module` runs on kbtool's own interpreter with the user's PYTHONPATH and the current
directory (where a script that sets KERAS_BACKEND=my_backend would find it); `my_package.my_module@tensorflow` runs
inside the managed environment of that backend.

A module on kbtool's own Python runs on the CPU only, unless it declares the devices it computes on with a literal
module-level assignment, `KBTOOL_DEVICES = ("cpu", "gpu")`: kbtool reads it from the source without importing the
module (the controller never imports a backend), and its worker then gets KBTOOL_DEVICE and KBTOOL_PRECISION as a
recipe's does (tests/fixtures/tf32_backend.py is such a module: a fake GPU). `mod@ENV` takes its env's devices.
"""

import ast
import difflib
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Optional, Sequence, Tuple, cast

from kbtool.errors import KbtoolError
from kbtool.runners import names
from kbtool.runners.base import Launch
from kbtool.vocabulary import DEVICES

if TYPE_CHECKING:
    from kbtool.runners.recipes.recipe import Recipe


def is_custom(name: str) -> bool:
    """Whether `name` is shaped as a custom module (`my_backend`, `my_package.my_module[@ENV]`)."""
    return names.is_custom(name)


def launch(name: str, recipes: Mapping[str, "Recipe"], builtin: Sequence[str] = ()) -> Launch:
    module, env_name = names.split_custom(name)
    if env_name and env_name not in recipes:
        raise KbtoolError(
            "unknown environment {!r} in {!r}; managed environments: {}".format(env_name, name, ", ".join(recipes))
        )
    if "." not in module and not env_name and not importable(module):
        # a plain name is a built-in's misspelling more often than a module: say both
        close = difflib.get_close_matches(module, list(builtin), n=1)
        raise KbtoolError(
            "unknown backend {!r}: not a built-in backend ({}) and no module {!r} is importable from "
            "here or PYTHONPATH{}".format(
                name, ", ".join(builtin), module, f"; did you mean {close[0]}?" if close else ""
            )
        )
    if not env_name:
        declared = declared_devices(module)
        return Launch(
            backend=name,
            python=sys.executable,
            module=module,
            version_of=[module, "numpy"],  # its own __version__ first ("unknown" without one): the views show it
            apply_keras_json=True,
            extra_pythonpath=[os.getcwd()],
            # kbtool cannot know where a module on its own Python computes unless it says so (KBTOOL_DEVICES):
            # without it, no devices (no KBTOOL_DEVICE); `mod@ENV` takes the devices of the env's recipe
            # (Launch.devices below), and its worker gets them
            devices={device: {} for device in declared},
            cpu_only="a custom module on kbtool's own Python runs on the CPU only in kbtool unless it declares "
            f"{DECLARATION} = {DEVICES!r} (or run it as MODULE@ENV in an environment whose backend has that device)",
        )
    base = recipes[env_name].launch()
    # the env's own backend is the module's base: a function the module shares with it inherits its known
    # differences (and its variants: BackendSession.variants runs them for such an op only)
    base.base_backend, base.base_modules = base.backend, [base.module] + list(base.fallback_modules)
    # a name the module lacks is looked up where its base looks (tf_keras.backend leaves out five documented
    # functions tf_keras.src.backend has): a module that re-exports its base gets what the base gets
    base.backend, base.module = name, module
    base.version_of = [module] + [v for v in base.version_of if v != module]  # its own version first
    base.extra_pythonpath = list(base.extra_pythonpath) + [os.getcwd()]
    base.apply_keras_json = True  # a custom module is not keras.backend: nothing else reads keras.json into it
    return base


DECLARATION = "KBTOOL_DEVICES"  # a custom module's literal module-level tuple of the devices it computes on


def declared_devices(module: str) -> Tuple[str, ...]:
    """The devices `module` declares (`KBTOOL_DEVICES = ("cpu", "gpu")` at its top level), read from its source with
    ast, never imported; () when it declares none or its source cannot be read (it runs on the CPU only). A
    declaration kbtool cannot read as a literal tuple of known devices is a KbtoolError, one line."""
    path = names.module_source(module)
    if path is None:
        return ()
    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return ()  # the worker's import says what is wrong with the module
    assignments = [node for node in ast.walk(tree) if DECLARATION in _assigned(node)]
    if not assignments:
        return ()
    node = assignments[0]
    given = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    alone = isinstance(node, ast.AnnAssign) or (isinstance(node, ast.Assign) and len(node.targets) == 1)
    if len(assignments) > 1 or node not in tree.body or not alone or not isinstance(_target(node), ast.Name):
        raise KbtoolError(_bad_declaration(module, path, node, "must be assigned once, at the module's top level"))
    try:
        value = ast.literal_eval(given) if given is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = None
    devices = tuple(value) if isinstance(value, (tuple, list)) else ()
    if not devices or not all(isinstance(d, str) for d in devices):
        raise KbtoolError(_bad_declaration(module, path, node, "is not a literal tuple of device names"))
    unknown = [d for d in devices if d not in DEVICES]
    if unknown:
        raise KbtoolError(_bad_declaration(module, path, node, f"names {unknown[0]!r}, no device kbtool knows"))
    return tuple(dict.fromkeys(devices))


def _target(node: ast.AST) -> Optional[ast.AST]:
    return node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)


def _assigned(node: ast.AST) -> List[str]:
    """The names a statement binds by assignment (`X = ...`, `X: T = ...`, `X += ...`, `X, Y = ...`)."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    else:
        return []
    return [sub.id for target in targets for sub in ast.walk(target) if isinstance(sub, ast.Name)]


def _bad_declaration(module: str, path: str, node: ast.AST, problem: str) -> str:
    return "custom module {} ({}:{}): {} {}; write {} = {!r} (a literal: kbtool reads it without importing the module)".format(
        module, path, getattr(node, "lineno", "?"), DECLARATION, problem, DECLARATION, DEVICES
    )


def inherited_from(hello: Mapping[str, Any], op: str) -> Optional[str]:
    """The base backend whose function a custom module's `op` is (by identity, as its worker's hello says; also when
    neither has one), or None: a built-in backend, a plain custom module, or one that redefines `op`."""
    from kbtool.worker import inherit

    inherited = cast(Callable[[Any, str], object], inherit.inherited)  # the worker (Python 3.6) is unannotated
    found = inherited(hello.get("base"), op)
    return found if isinstance(found, str) else None


importable = names.importable  # the one place a custom module's name is looked up on the path
