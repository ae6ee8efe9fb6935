"""What an env is in, without starting it: installed or not, its size, and why it cannot run (a broken record, a
dangling interpreter, a release's base removed or changed); and `kbtool env remove`."""

import os
import shlex
from typing import TYPE_CHECKING, Any, Dict, Optional

from kbtool.errors import KbtoolError
from kbtool.runners.base import registered_python
from kbtool.runners.envs import layered
from kbtool.runners.envs.record import RECORD, delete, read_lock, read_record, refuse_unless_kbtools, size_mb

if TYPE_CHECKING:
    from kbtool.runners.recipes.recipe import Recipe


def describe(recipe: "Recipe") -> Dict[str, Any]:
    """Installed state of an env without starting it. A broken env (unreadable record, dangling symlink, a file
    where the folder should be) gets `problem`: one line naming the file, for the caller to report."""
    env_dir = recipe.env_dir()
    path = os.path.join(env_dir, RECORD)
    info = {
        "name": recipe.name,
        "path": env_dir,
        "python_version": recipe.python_version,
        "packages": recipe.packages,
        "installed": False,
    }
    if os.path.islink(env_dir):
        info["symlink_to"] = os.readlink(env_dir)
        if not os.path.exists(env_dir):
            info["problem"] = "{}: dangling symlink to {} (`kbtool env remove {}` removes the link)".format(
                env_dir, info["symlink_to"], recipe.name
            )
            return info
    if os.path.lexists(env_dir) and not os.path.isdir(env_dir):
        info["problem"] = f"{env_dir}: not a directory, not an environment kbtool made"
        return info
    if not os.path.lexists(path):
        return info
    try:
        record = read_record(path)
    except KbtoolError as exc:
        info["problem"] = _named(exc, recipe)
        return info
    if record.get("external") is True:  # only the record is kbtool's: nothing to measure
        info.update(
            installed=True,
            created=record.get("created"),
            external=True,
            python=record.get("python"),
            python_reports=record.get("python_version"),
            versions=record.get("versions"),
        )
    else:
        info.update(installed=True, created=record.get("created"), size_mb=size_mb(env_dir))
    missing = _missing_interpreter(recipe) or _layer_problem(recipe, record)
    if missing:
        info["problem"] = missing
    if recipe.release is not None:
        info.update(release=recipe.release.name, layered_on=recipe.layered_on, versions=dict(recipe.release.pins))
    return info


def problem(recipe: "Recipe") -> Optional[str]:
    """Why the installed env of `recipe` cannot run (one line), or None: it is fine or simply not installed. Cheap
    (no walk of the env): every command that starts a worker asks it first."""
    env_dir = recipe.env_dir()
    if os.path.islink(env_dir) and not os.path.exists(env_dir):
        return f"{env_dir}: dangling symlink to {os.readlink(env_dir)} (`kbtool env remove {recipe.env_owner}` removes the link)"
    if os.path.lexists(env_dir) and not os.path.isdir(env_dir):
        return f"{env_dir}: not a directory, not an environment kbtool made"
    path = os.path.join(env_dir, RECORD)
    if not os.path.lexists(path):
        return None
    try:
        record = read_record(path)
    except KbtoolError as exc:
        return _named(exc, recipe)
    return _missing_interpreter(recipe) or _layer_problem(recipe, record)


def _layer_problem(recipe: "Recipe", record: Dict[str, Any]) -> Optional[str]:
    """Why a release env cannot run though installed: its own lock under kbtool's home that cannot be read (not
    UTF-8, a version no release has), or its base removed or changed under it (layered.base_problem); None for any
    other env. An interpreter `kbtool env use` registered as a release is layered on nothing (its versions were
    checked against the pins when registered)."""
    if not recipe.layered_on:
        return None
    try:
        read_lock(recipe)
    except KbtoolError as exc:
        return f"{recipe.name} env is broken: {exc}"
    if record.get("external") is True:
        return None
    return layered.base_problem(recipe, record)


def _missing_interpreter(recipe: "Recipe") -> Optional[str]:
    """A venv whose interpreter link dangles (the Python it was made from was removed, e.g. its pyenv version)."""
    python = recipe.env_python()
    if os.path.exists(python):
        return None
    if registered_python(recipe.env_dir()):
        return (
            f"{recipe.env_owner} env is broken: its registered interpreter {python} is missing; `kbtool env use "
            f"{recipe.env_owner} --python PATH --force` registers another, `kbtool env remove {recipe.env_owner}` "
            "unregisters it"
        )
    where = python
    if os.path.islink(python):
        target = os.path.realpath(python)
        where = f"{target} (linked from {python})" if target != python else python
    return f"{recipe.env_owner} env is broken: interpreter {where} is missing; run `kbtool env install {shlex.quote(recipe.env_owner)} --force`"


def _named(exc: KbtoolError, recipe: "Recipe") -> str:
    """A broken record's error with the env its fix command rebuilds named (shell-quoted: a release's brackets)."""
    return str(exc).replace(
        "`kbtool env install --force`", f"`kbtool env install {shlex.quote(recipe.env_owner)} --force`"
    )


def remove(recipe: "Recipe") -> str:
    """Delete an env; returns what was done, in words. A symlinked env loses the link only, never the target."""
    env_dir = recipe.env_dir()
    if not os.path.lexists(env_dir):
        raise KbtoolError(f"{recipe.name} is not installed ({env_dir} does not exist)")
    if not os.path.islink(env_dir) and not os.path.isdir(env_dir):
        raise KbtoolError(f"{env_dir}: not a directory, not an environment kbtool made; not removed")
    refuse_unless_kbtools(recipe, env_dir)
    registered = None if os.path.islink(env_dir) else registered_python(env_dir)
    done = delete(env_dir)
    if registered:
        return f"unregistered {registered} from the {recipe.env_owner} env (the interpreter was left alone)"
    return done
