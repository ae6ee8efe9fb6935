"""Provision backend environments from their recipes: venv + pip, recorded in kbtool-env.json."""

import datetime
import json
import os
import shutil
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from .. import files
from ..errors import KbtoolError
from .base import Unavailable, find_interpreter

RECORD = "kbtool-env.json"
# Written into an env's folder before anything else at install: the folder is kbtool's to delete (`env remove`,
# `env install --force`) even when the install stopped before its record was written.
MARKER = ".kbtool-env"
LOCKS_DIR = os.path.join(os.path.dirname(__file__), "locks")  # <env>.txt: every package of the env, pinned
RECORD_MAX_BYTES = 1 << 20  # a record is a few KB (the env's pip freeze)


def _run(argv, log, env=None, cwd=None):
    log("$ " + " ".join(argv))
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    output = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        lines = [line for line in output.strip().splitlines() if line.strip() and "is ignored" not in line]
        raise KbtoolError(
            "`{}` failed (exit {}): {}".format(
                " ".join(argv[:4]) + " ...", proc.returncode, lines[-1] if lines else "no output"
            )
        )
    return output


def lock_path(recipe):
    return os.path.join(LOCKS_DIR, recipe.env_owner + ".txt")


def read_lock(recipe):
    """The recipe's lock as {normalised name: "name==version"} (empty when it has none)."""
    try:
        with open(lock_path(recipe)) as fh:
            lines = [line.strip() for line in fh]
    except FileNotFoundError:
        return {}
    return {_normalise(line.split("==", 1)[0]): line for line in lines if line and not line.startswith("#")}


def _normalise(name):
    return name.lower().replace("_", "-").replace(".", "-")


def lock_drift(recipe, frozen):
    """How an env's `pip freeze` differs from the recipe's lock, in words (empty when they agree or no lock)."""
    locked = read_lock(recipe)
    if not locked:
        return []
    frozen = [recipe.freeze_aliases.get(line, line) for line in frozen]
    have = {_normalise(line.split("==", 1)[0]): line for line in frozen if "==" in line}
    drift = [
        "{} (locked {})".format(have.get(n, "missing"), line)
        for n, line in sorted(locked.items())
        if have.get(n) != line
    ]
    drift += [f"{line} (not in the lock)" for n, line in sorted(have.items()) if n not in locked]
    return drift


def install(recipe, log=print, force=False, locked=True):
    """Build the env for `recipe`; returns its record. Idempotent: pip skips what is installed.

    With a lock (kbtool/runners/locks/<env>.txt) every package is installed at its locked version, and the env must
    then freeze to exactly the lock; `locked=False` resolves the recipe's packages afresh (how a lock is made)."""
    problems = recipe.system_check()
    if problems:
        raise KbtoolError("{}: {}".format(recipe.name, "; ".join(problems)))
    started = time.monotonic()
    try:
        python = find_interpreter(recipe.python_version)
    except Unavailable as exc:
        raise KbtoolError(f"{recipe.name}: {exc}")
    env_dir = recipe.env_dir()
    if force and os.path.lexists(env_dir):
        _refuse_unless_kbtools(recipe, env_dir)
        _delete(env_dir, log)
    elif os.path.lexists(env_dir) and not _made_by_kbtool(env_dir):
        raise KbtoolError(
            f"{env_dir}: exists and is not an environment kbtool made (no {RECORD}); move it away, kbtool will not "
            "install into it"
        )
    try:
        os.makedirs(env_dir, exist_ok=True)
        with open(os.path.join(env_dir, MARKER), "w") as fh:
            fh.write(f"made by kbtool env install {recipe.name}\n")
    except OSError as exc:
        raise KbtoolError(f"cannot write {exc.filename or env_dir}: {exc.strerror or exc}")
    if not os.path.exists(os.path.join(env_dir, "bin", "python")):
        _run([python, "-m", "venv", env_dir], log)
    pip = [os.path.join(env_dir, "bin", "python"), "-m", "pip", "--disable-pip-version-check"]
    pip_env = dict(os.environ, PIP_NO_INPUT="1")
    use_lock = locked and os.path.exists(lock_path(recipe))
    installed = os.path.exists(os.path.join(env_dir, RECORD))
    if use_lock and installed and not lock_drift(recipe, _freeze(pip, pip_env, env_dir)):
        log(f"already matches its lock {lock_path(recipe)}")  # nothing for pip to do (cntk would reinstall)
    else:
        if recipe.bootstrap_packages:
            _run(pip + ["install", "-q"] + recipe.bootstrap_packages, log, pip_env)
        wanted = ["-r", lock_path(recipe)] if use_lock else recipe.packages
        _run(pip + ["install", "-q"] + recipe.pip_args + wanted, log, pip_env)
    recipe.prepare(env_dir)
    frozen = _freeze(pip, pip_env, env_dir)
    drift = lock_drift(recipe, frozen) if use_lock else []
    if drift:
        raise KbtoolError(
            "{}: the env does not match its lock {} after install: {}{}; `kbtool env install --force "
            "{}` rebuilds it".format(
                recipe.name, lock_path(recipe), "; ".join(drift[:3]), " ..." if len(drift) > 3 else "", recipe.name
            )
        )
    record = {
        "backend": recipe.name,
        "env": recipe.env_owner,
        "python": python,
        "packages": recipe.packages,
        "lock": os.path.basename(lock_path(recipe)) if use_lock else None,
        "installed": frozen,
        "install_seconds": round(time.monotonic() - started, 1),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    try:  # atomic: an interrupted install never leaves a half-written record
        files.write_atomic(os.path.join(env_dir, RECORD), json.dumps(record, indent=2))
    except OSError as exc:
        raise KbtoolError(f"cannot write {os.path.join(env_dir, RECORD)}: {exc.strerror or exc}")
    return record


def install_all(
    recipes: Sequence[Any], force: bool, out: Callable[[str], None], err: Callable[[str], None]
) -> List[str]:
    """`kbtool env install`: each recipe's env built once, in order. A recipe that runs in another's env (keras3 in
    tensorflow's) builds that env, and a later recipe of the same env is only told where it is. What happens goes to
    `out` (one line per env) and `err` (pip's progress, errors); one env failing never stops the others.
    Returns the names of the recipes whose env failed."""
    from .registry import RECIPES

    failed: List[str] = []
    done: Dict[str, str] = {}
    for recipe in recipes:
        owner = RECIPES.get(recipe.env_owner, recipe)
        if owner.name in done:
            out(f"{recipe.name}: runs in the {owner.name} env, {done[owner.name]}")
            continue
        err(
            "== {} (Python {}: {}{})".format(
                owner.name, owner.python_version, " ".join(owner.packages), ", locked" if read_lock(owner) else ""
            )
        )
        try:
            record = install(owner, log=lambda line: err("   " + line), force=force)
        except KbtoolError as exc:
            err(f"kbtool: error: {exc}")
            failed.append(recipe.name)
            done[owner.name] = "which failed to install"
            continue
        done[owner.name] = f"installed in {owner.env_dir()}"
        out(
            "{}: installed in {} ({} s, {} MB)".format(
                owner.name, owner.env_dir(), record["install_seconds"], describe(owner).get("size_mb")
            )
        )
        if recipe is not owner:
            out(f"{recipe.name}: runs in the {owner.name} env")
    return failed


def _freeze(pip, pip_env, env_dir):
    """The env's `pip freeze` (pip, setuptools and wheel aside), run in the env: pip also lists what the current
    directory holds; an old pip also echoes its options (-f DIR from PIP_FIND_LINKS)."""
    output = _run(pip + ["freeze"], lambda _: None, pip_env, cwd=env_dir)
    return [line.strip() for line in output.splitlines() if "==" in line]


def describe(recipe):
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
        record = _read_record(path)
    except KbtoolError as exc:
        info["problem"] = str(exc)
        return info
    info.update(installed=True, created=record.get("created"), size_mb=_size_mb(env_dir))
    missing = _missing_interpreter(recipe)
    if missing:
        info["problem"] = missing
    return info


def problem(recipe) -> Optional[str]:
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
        _read_record(path)
    except KbtoolError as exc:
        return str(exc)
    return _missing_interpreter(recipe)


def _missing_interpreter(recipe) -> Optional[str]:
    """A venv whose interpreter link dangles (the Python it was made from was removed, e.g. its pyenv version)."""
    python = recipe.env_python()
    if os.path.exists(python):
        return None
    where = python
    if os.path.islink(python):
        target = os.path.realpath(python)
        where = f"{target} (linked from {python})" if target != python else python
    return f"{recipe.env_owner} env is broken: interpreter {where} is missing; run `kbtool env install {recipe.env_owner} --force`"


def _read_record(path):
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


def remove(recipe):
    """Delete an env; returns what was done, in words. A symlinked env loses the link only, never the target."""
    env_dir = recipe.env_dir()
    if not os.path.lexists(env_dir):
        raise KbtoolError(f"{recipe.name} is not installed ({env_dir} does not exist)")
    if not os.path.islink(env_dir) and not os.path.isdir(env_dir):
        raise KbtoolError(f"{env_dir}: not a directory, not an environment kbtool made; not removed")
    _refuse_unless_kbtools(recipe, env_dir)
    return _delete(env_dir)


def _made_by_kbtool(env_dir: str) -> bool:
    """Whether kbtool may delete `env_dir`: a symlink (only the link goes), an empty folder, or a folder holding
    kbtool's install record or the marker an install writes first."""
    if os.path.islink(env_dir):
        return True
    try:
        names = os.listdir(env_dir)
    except OSError:
        return False
    return not names or RECORD in names or MARKER in names


def _refuse_unless_kbtools(recipe, env_dir: str) -> None:
    if os.path.isdir(env_dir) and not _made_by_kbtool(env_dir):
        raise KbtoolError(
            f"{env_dir}: not an environment kbtool made (no {RECORD} or {MARKER} in it); not removed, delete it "
            "yourself if it is yours to lose"
        )


def _delete(env_dir, log=lambda line: None):
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


def _size_mb(path):
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return round(total / 1e6)
