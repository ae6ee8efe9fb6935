"""Custom backends: any importable module with the Keras backend API, named as Keras 2 names it in keras.json.

`my_backend` or `my_package.my_module` runs on kbtool's own interpreter with the user's PYTHONPATH and the current
directory (where a script that sets KERAS_BACKEND=my_backend would find it); `my_package.my_module@tensorflow` runs
inside the managed environment of that backend.
"""

import difflib
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, cast

from kbtool.errors import KbtoolError
from kbtool.runners import names
from kbtool.runners.base import Launch

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
        return Launch(
            backend=name,
            python=sys.executable,
            module=module,
            version_of=[module, "numpy"],  # its own __version__ first ("unknown" without one): the views show it
            apply_keras_json=True,
            extra_pythonpath=[os.getcwd()],
            # kbtool cannot know where a module on its own Python computes: it has no devices (no KBTOOL_DEVICE);
            # `mod@ENV` takes the devices of the env's recipe (Launch.devices below), and its worker gets them
            cpu_only="a custom module on kbtool's own Python runs on the CPU only in kbtool (for another device run "
            "it as MODULE@ENV in an environment whose backend has that device)",
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


def inherited_from(hello: Mapping[str, Any], op: str) -> Optional[str]:
    """The base backend whose function a custom module's `op` is (by identity, as its worker's hello says; also when
    neither has one), or None: a built-in backend, a plain custom module, or one that redefines `op`."""
    from kbtool.worker import inherit

    inherited = cast(Callable[[Any, str], object], inherit.inherited)  # the worker (Python 3.6) is unannotated
    found = inherited(hello.get("base"), op)
    return found if isinstance(found, str) else None


importable = names.importable  # the one place a custom module's name is looked up on the path
