"""An env's install record and its lock: what `kbtool env install` (or `env use`) wrote in the env's folder, the
lock it was installed from, and which folders are kbtool's to delete."""

import json
import os
import shutil
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Sequence

from kbtool.errors import KbtoolError
from kbtool.runners.names import check_version, normalise

if TYPE_CHECKING:
    from kbtool.runners.recipes.recipe import Recipe

RECORD = "kbtool-env.json"

# Written into an env's folder before anything else at install: the folder is kbtool's to delete (`env remove`,
# `env install --force`) even when the install stopped before its record was written.
MARKER = ".kbtool-env"

LOCKS_DIR = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), "locks"
)  # <env>.txt: every package of the env, pinned

RECORD_MAX_BYTES = 1 << 20  # a record is a few KB (the env's pip freeze)
LOCK_MAX_BYTES = 1 << 20  # and so is a lock


def lock_path(recipe: "Recipe") -> str:
    """A built-in env's lock ships with kbtool; a release's is generated at its first install, under kbtool's home."""
    if recipe.release is not None:
        from kbtool.runners.base import kbtool_home

        return os.path.join(kbtool_home(), "locks", recipe.release.folder + ".txt")
    return os.path.join(LOCKS_DIR, recipe.env_owner + ".txt")


def read_lock(recipe: "Recipe") -> Dict[str, str]:
    """The recipe's lock as {normalised name: "name==version"} (empty when it has none); a KbtoolError (one line)
    when it cannot be read, is not UTF-8, or pins a version no release has (over MAX_VERSION characters)."""
    path = lock_path(recipe)
    fix = f"`kbtool env install '{recipe.name}' --force` makes it again" if recipe.release else "reinstall kbtool"
    try:
        with open(path, "rb") as fh:
            raw = fh.read(LOCK_MAX_BYTES + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise KbtoolError(f"{path}: cannot read: {exc.strerror or exc}")
    if len(raw) > LOCK_MAX_BYTES:
        raise KbtoolError(f"{path}: larger than {LOCK_MAX_BYTES} bytes, not a lock kbtool wrote; {fix}")
    try:
        lines = [line.strip() for line in raw.decode("utf-8").splitlines()]
    except UnicodeDecodeError as exc:
        raise KbtoolError(f"{path}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); {fix}")
    locked = {}
    for number, line in enumerate(lines, 1):
        if line and not line.startswith("#"):
            check_version(line.partition("==")[2], f"{path}:{number}")
            locked[normalise(line.split("==", 1)[0])] = line
    return locked


def lock_drift(recipe: "Recipe", frozen: Sequence[str]) -> List[str]:
    """How an env's `pip freeze` differs from the recipe's lock, in words (empty when they agree or no lock)."""
    locked = read_lock(recipe)
    if not locked:
        return []
    frozen = [recipe.freeze_aliases.get(line, line) for line in frozen]
    have = {normalise(line.split("==", 1)[0]): line for line in frozen if "==" in line}
    drift = [
        "{} (locked {})".format(have.get(n, "missing"), line)
        for n, line in sorted(locked.items())
        if have.get(n) != line
    ]
    drift += [f"{line} (not in the lock)" for n, line in sorted(have.items()) if n not in locked]
    return drift


def read_record(path: str) -> Dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(RECORD_MAX_BYTES + 1)
        if len(raw) > RECORD_MAX_BYTES:
            raise KbtoolError(
                f"{path}: larger than {RECORD_MAX_BYTES} bytes, not a record kbtool wrote; `kbtool env install --force` "
                "rebuilds it"
            )
        record = json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise KbtoolError(f"{path}: cannot read: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        raise KbtoolError(
            f"{path}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); `kbtool env install --force` "
            "rebuilds it"
        )
    except json.JSONDecodeError as exc:
        raise KbtoolError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); `kbtool env install --force` rebuilds it"
        )
    except (ValueError, RecursionError) as exc:
        raise KbtoolError(f"{path}: not valid JSON ({type(exc).__name__}); `kbtool env install --force` rebuilds it")
    if not isinstance(record, dict):
        raise KbtoolError(
            f"{path}: must hold a JSON object, found {type(record).__name__}; `kbtool env install --force` rebuilds it"
        )
    return record


def made_by_kbtool(env_dir: str) -> bool:
    """Whether kbtool may delete `env_dir`: a symlink (only the link goes), an empty folder, or a folder holding
    kbtool's install record or the marker an install writes first."""
    if os.path.islink(env_dir):
        return True
    try:
        names = os.listdir(env_dir)
    except OSError:
        return False
    return not names or RECORD in names or MARKER in names


def refuse_unless_kbtools(recipe: "Recipe", env_dir: str) -> None:
    if os.path.isdir(env_dir) and not made_by_kbtool(env_dir):
        raise KbtoolError(
            f"{env_dir}: not an environment kbtool made (no {RECORD} or {MARKER} in it); not removed, delete it "
            "yourself if it is yours to lose"
        )


def delete(env_dir: str, log: Callable[[str], None] = lambda line: None) -> str:
    try:
        if os.path.islink(env_dir):
            target = os.readlink(env_dir)
            os.unlink(env_dir)
            done = f"removed the symlink {env_dir} (its target {target} was left alone)"
        else:
            shutil.rmtree(env_dir)
            done = f"removed {env_dir}"
    except OSError as exc:
        raise KbtoolError(f"cannot remove {exc.filename or env_dir}: {exc.strerror or exc}")
    log(done)
    return done


def size_mb(path: str) -> int:
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return round(total / 1e6)
