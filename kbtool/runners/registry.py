"""The backends kbtool knows, by name: numpy (reference), the built-in recipes, custom modules."""

from typing import Any, Dict, List, Mapping, Optional, Sequence

from kbtool.errors import KbtoolError
from kbtool.results import BackendStatus
from kbtool.runners import custom, envs, names, releases
from kbtool.runners.base import Launch, Unavailable
from kbtool.runners.recipes import ORACLE_NAMES, RECIPES, Recipe
from kbtool.runners.recipes.oracles import REFERENCE, reference_launch
from kbtool.worker import protocol

__all__ = ["RECIPES", "Recipe"]  # handed on: the table is recipes/'s

BUILTIN = [REFERENCE] + list(RECIPES)
ORACLES = list(ORACLE_NAMES)  # checked, never benched


class BrokenEnv(Unavailable):
    """The backend's env is installed but cannot run (its interpreter is gone, its record unreadable, ...)."""


def _checked_env(recipe: Recipe) -> None:
    """A BrokenEnv naming what is wrong with the env `recipe` runs in, before any worker is started in it."""
    problem = envs.problem(recipe)
    if problem:
        raise BrokenEnv(problem)


def keras_name(name: str) -> str:
    """What K.backend() answers on a built-in backend: the KERAS_BACKEND its recipe sets where that is a name (keras
    2.3.1 on TF1 is 'tensorflow'), else kbtool's name for it."""
    recipe = RECIPES.get(name)
    backend = recipe.keras_backend if recipe else None
    return backend if backend and "." not in backend else name


def keras_name_of(backend: str) -> Optional[str]:
    """What K.backend() answers on `backend`, as far as its name says: the env's Keras name for `module@ENV` and a
    built-in's (`keras_name`); None where only the worker knows (a custom module on kbtool's Python: what its
    worker reported at start)."""
    want = names.env_name(backend)
    return None if "." in want else keras_name(want)


def variant_suffixes(op: str) -> list[str]:
    """The case-id suffixes of the variants some built-in backend runs for `op`'s cases, as their recipes declare
    them (e.g. Theano's '.kernel_flipped'), sorted."""
    return sorted({suffix for r in RECIPES.values() for suffix, ops in r.variant_suffixes.items() if op in ops})


def system_packages(backends: Optional[Sequence[str]] = None) -> List[str]:
    """The Debian packages the named recipes (default: every recipe) need, with those of the env each runs in (the
    union of their apt_packages), sorted."""
    recipes = list(RECIPES.values()) if not backends else [RECIPES[n] for n in backends]
    recipes += [RECIPES[r.env_owner] for r in recipes if r.env_owner in RECIPES]
    return sorted({p for recipe in recipes for p in recipe.apt_packages})


def is_builtin(name: str) -> bool:
    """A built-in backend, or a release of one (`tensorflow1[keras=2.2.4]`)."""
    return name in BUILTIN or (names.is_release(name) and names.base_of(name) in RECIPES)


def recipe_of(name: str) -> Optional[Recipe]:
    """The recipe a built-in backend or a release of one runs by (None for numpy and custom modules); a KbtoolError
    for a release name that is not well formed."""
    if name in RECIPES:
        return RECIPES[name]
    if names.is_release(name):
        return releases.recipe_for(name)
    return None


def launch_for(name: str) -> Launch:
    """A Launch for `name`, or Unavailable with the reason."""
    if name == REFERENCE:
        return reference_launch()
    recipe = recipe_of(name)
    if recipe is not None:
        _checked_env(recipe)
        return recipe.launch()
    if custom.is_custom(name):
        env_name = names.split_custom(name).env
        if env_name in RECIPES:
            _checked_env(RECIPES[env_name])
        return custom.launch(name, RECIPES, BUILTIN)
    raise KbtoolError(
        "unknown backend {!r}; built-in backends are {}, or give a module name like my_backend or "
        "my_package.my_module[@ENV]".format(name, ", ".join(BUILTIN))
    )


def backend_info(name: str, hello: Mapping[str, Any]) -> Dict[str, Any]:
    """What the report says of a backend whose worker answered `hello` (ready or broken)."""
    info = {"name": name, "kind": "builtin" if is_builtin(name) else "custom", "python": hello.get("python")}
    if hello.get("status") == protocol.READY:
        info.update(
            status=BackendStatus.AVAILABLE.value,
            versions=hello.get("versions", {}),
            module=hello.get("module"),
            module_file=hello.get("module_file"),
            import_seconds=hello.get("import_seconds"),
        )
        base = hello.get("base")
        if isinstance(base, dict) and isinstance(base.get("backend"), str):  # a custom module run as mod@ENV
            said: Dict[str, Any] = {"backend": base["backend"], "shared": len(base.get("shared") or [])}
            if base.get("error"):  # its base could not be imported: nothing is inherited
                said["error"] = str(base["error"])
            info["base"] = said
    else:
        info.update(status=BackendStatus.BROKEN.value, reason=hello.get("error") or "the worker did not start")
    return info


def not_installed_info(name: str, reason: object, status: str = BackendStatus.NOT_INSTALLED.value) -> Dict[str, Any]:
    """What the report says of a backend that did not run: not installed (or `status`, e.g. device unsupported)."""
    return {"name": name, "kind": "builtin" if is_builtin(name) else "custom", "status": status, "reason": str(reason)}
