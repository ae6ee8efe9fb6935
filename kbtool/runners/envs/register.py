"""`kbtool env use`: an existing interpreter that holds the engine (a conda env, a GPU machine's system Python where
nothing can be installed) registered as a backend's env. kbtool checks that it imports the backend and records it
("external": true, "python": PATH) in a folder that holds only the record; it never installs into it, never deletes
it, and does not hold it to the recipe's lock (it is the user's); `env remove` drops the registration only."""

import datetime
import json
import os
import subprocess
from typing import Any, Callable, Dict, List, Optional

from kbtool import files
from kbtool.errors import KbtoolError
from kbtool.runners.base import WORKER_MAIN, Launch, Unavailable, registered_python
from kbtool.runners.envs import children, interpreters
from kbtool.runners.envs.record import MARKER, RECORD, delete, refuse_unless_kbtools

WORKER_FLOOR = (3, 6)  # the oldest Python the worker's code runs on (kbtool/worker/ is Python-3.6 syntax)

PROBE_TIMEOUT = 600.0  # seconds for a registered interpreter to import its backend (TensorFlow on a cold disk: ~1 min)


# Run by a candidate interpreter (`kbtool env use`), with the worker's folder first on sys.path as a worker has it:
# its Python, then the backend module imported as the worker imports it (shims first) and the versions the worker
# reports. Python 2 must parse it too, so that an old interpreter is told so instead of failing with a SyntaxError.
PROBE = r"""
import importlib, json, sys, traceback
args = json.loads(sys.argv[1])
sys.path.insert(0, args["worker_dir"])
out = {"python": sys.version.split()[0], "version_info": list(sys.version_info[:2]), "executable": sys.executable}
if tuple(sys.version_info[:2]) >= tuple(args["floor"]):
    try:
        import shims
        shims.apply(args["shims"])
        out["versions"] = {}
        for name in [args["module"]] + args["fallback_modules"] + args["version_of"]:
            out["importing"] = name
            module = importlib.import_module(name)
            if name in args["version_of"]:
                out["versions"][name] = str(getattr(module, "__version__", "unknown"))
        del out["importing"]
    except BaseException as exc:
        out["error"] = traceback.format_exception_only(type(exc), exc)[-1].strip()
        if type(exc).__name__ == "ModuleNotFoundError":
            out["missing"] = exc.name
sys.stdout.write("\nKBTOOL-PROBE " + json.dumps(out) + "\n")
"""


def use(
    recipe: Any, python: str, force: bool = False, log: Callable[[str], None] = lambda line: None
) -> Dict[str, Any]:
    """`kbtool env use`: register the existing interpreter `python` as the env `recipe` runs in, after checking that
    it runs (Python 3.6 or newer) and imports the recipe's module and the packages whose versions it reports; returns
    the record written. Nothing is written when a check fails. `force` replaces a registration or deletes the venv
    kbtool built for the env (never a folder kbtool did not make). A Python other than the recipe's is a warning
    (`log`): the import check decides, and every result says which Python ran."""
    path = _resolve_interpreter(python)
    env_dir = recipe.env_dir()
    owner = recipe.env_owner
    _may_register(recipe, env_dir, force)
    found = probe(recipe, path, env_dir)
    if tuple(found["version_info"]) < WORKER_FLOOR:
        raise KbtoolError(
            "{}: Python {}: kbtool's worker needs Python {}.{} or newer; nothing was registered".format(
                path, found["python"], *WORKER_FLOOR
            )
        )
    if found.get("error"):
        missing = found.get("missing")
        raise KbtoolError(
            "{}: {} cannot import {}: {}{}; nothing was registered".format(
                recipe.name,
                path,
                found.get("importing") or recipe.module,
                found["error"],
                f" (install {missing} into that interpreter, or name one that has it)" if missing else "",
            )
        )
    wrong = pins_problem(recipe, found)
    if wrong:  # the name says which packages the results are of: another release's would be filed under it
        raise KbtoolError(f"{recipe.name}: {path} {wrong}; nothing was registered")
    have = "{}.{}".format(*found["version_info"])
    if have != recipe.python_version:
        log(
            f"warning: {recipe.name}'s recipe builds its env on Python {recipe.python_version}; {path} is Python "
            f"{found['python']} (it imports {recipe.module}; every result says which Python ran)"
        )
    frozen = _external_freeze(path)
    if frozen is None:
        log(f"note: {path} has no working pip: the record keeps no `pip freeze`")
    record = {
        "backend": recipe.name,
        "env": owner,
        "external": True,
        "python": path,
        "python_version": found["python"],
        "executable": found.get("executable"),
        "module": recipe.module,
        "versions": found.get("versions", {}),
        "lock": None,  # the interpreter is the user's: its packages are recorded, not held to the recipe's lock
        "installed": frozen,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if os.path.lexists(env_dir):  # checked above: a registration, a venv kbtool built, or a link (force given)
        delete(env_dir, log)
    try:
        os.makedirs(env_dir, exist_ok=True)
        with open(os.path.join(env_dir, MARKER), "w") as fh:
            fh.write(f"made by kbtool env use {recipe.name} --python {path}\n")
        files.write_atomic(os.path.join(env_dir, RECORD), json.dumps(record, indent=2))
    except OSError as exc:
        raise KbtoolError(f"cannot write {exc.filename or env_dir}: {exc.strerror or exc}")
    return record


def _resolve_interpreter(python: str) -> str:
    """`python` as an absolute path (interpreters.resolve_path), a KbtoolError when there is none."""
    try:
        return interpreters.resolve_path(python)
    except Unavailable as exc:
        raise KbtoolError(str(exc))


def _may_register(recipe: Any, env_dir: str, force: bool) -> None:
    """Refuse (one line) unless the env's folder is free for a registration: absent or empty, or with `force` a
    registration, a venv kbtool built or a symlink; never a folder kbtool did not make."""
    name, owner = recipe.name, recipe.env_owner
    if not os.path.lexists(env_dir):
        return
    if not os.path.islink(env_dir) and not os.path.isdir(env_dir):
        raise KbtoolError(f"{env_dir}: not a directory, not an environment kbtool made; nothing was registered")
    refuse_unless_kbtools(recipe, env_dir)
    if force or (not os.path.islink(env_dir) and not os.listdir(env_dir)):
        return
    registered = registered_python(env_dir)
    if registered:
        raise KbtoolError(
            f"{owner} already uses {registered} (`kbtool env use`); --force replaces the registration, "
            f"`kbtool env remove {owner}` drops it"
        )
    if os.path.islink(env_dir):
        raise KbtoolError(f"{env_dir}: a symlink to {os.readlink(env_dir)}; --force removes the link (not its target)")
    raise KbtoolError(
        f"{owner} has an env kbtool built in {env_dir}; `kbtool env use {name} --python PATH --force` deletes it "
        "and registers PATH instead"
    )


def pins_problem(recipe: Any, found: Dict[str, Any]) -> Optional[str]:
    """Why what PROBE `found` is not the release `recipe` names (the versions it imports are not its pins), in words
    (`imports keras 2.3.1 (its name says 2.2.4)`); None for a release whose pins it imports, or any other recipe."""
    if recipe.release is None:
        return None
    wrong = recipe.release.mismatches(found.get("versions") or {})
    return f"imports {', '.join(wrong)}" if wrong else None


def probe(
    recipe: Any, path: str, env_dir: str, external: bool = True, outcome: str = "nothing was registered"
) -> Dict[str, Any]:
    """What PROBE finds in interpreter `path`, run in the environment a worker of `recipe` would get (`external`: a
    registered interpreter's, else a venv kbtool built); a KbtoolError ending in `outcome` when it does not run."""
    worker_dir = os.path.dirname(WORKER_MAIN)
    args = {
        "worker_dir": worker_dir,
        "floor": list(WORKER_FLOOR),
        "shims": list(recipe.shims),
        "module": recipe.module,
        "fallback_modules": list(recipe.fallback_modules),
        "version_of": list(dict.fromkeys(list(recipe.version_of) + ["numpy"])),  # the worker imports numpy
    }
    env = Launch(
        backend=recipe.name, python=path, module=recipe.module, env=recipe.worker_env(env_dir, external=external)
    ).environ()
    _starts(path, env, worker_dir)
    try:
        proc = children.wait(
            [path, "-c", PROBE, json.dumps(args)],
            f"{path} to import {recipe.module}",
            PROBE_TIMEOUT,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=worker_dir,
        )
    except subprocess.TimeoutExpired:
        raise KbtoolError(f"{path}: did not import {recipe.module} within {PROBE_TIMEOUT:g} s; {outcome}")
    except OSError as exc:
        raise KbtoolError(f"{path}: cannot run: {exc.strerror or exc}; {outcome}")
    lines = [line for line in proc.stdout.decode("utf-8", "replace").splitlines() if line.startswith("KBTOOL-PROBE ")]
    try:
        found = json.loads(lines[-1][len("KBTOOL-PROBE ") :]) if lines else None
    except ValueError:
        found = None
    if not isinstance(found, dict) or not isinstance(found.get("version_info"), list):
        said = [line for line in proc.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        raise KbtoolError(
            "{}: did not run as a Python interpreter (exit {}{}); {}".format(
                path, proc.returncode, ": " + said[-1].strip() if said else "", outcome
            )
        )
    return found


def _starts(path: str, env: Dict[str, str], cwd: str) -> None:
    """A KbtoolError (one line) unless `path` starts and exits within the probes' bound (interpreters.PROBE_SECONDS,
    as `env install --python`): an interpreter that hangs at start is told so then, not after PROBE_TIMEOUT."""
    try:
        children.wait(
            [path, "-c", "pass"],
            f"{path} to start",
            interpreters.PROBE_SECONDS,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired:
        raise KbtoolError(
            f"{path}: did not start within {interpreters.PROBE_SECONDS:g} s (killed); nothing was registered"
        )
    except OSError as exc:
        raise KbtoolError(f"{path}: cannot run: {exc.strerror or exc}; nothing was registered")


FREEZE_SECONDS = 120.0  # a registered interpreter's `pip freeze`


def _external_freeze(path: str) -> Optional[List[str]]:
    """A registered interpreter's `pip freeze`, or None when it has no working pip."""
    try:
        proc = children.wait(
            [path, "-m", "pip", "--disable-pip-version-check", "freeze"],
            f"{path} -m pip freeze",
            FREEZE_SECONDS,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=dict(os.environ, PIP_NO_INPUT="1"),
            cwd=os.path.dirname(WORKER_MAIN),
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return [line.strip() for line in proc.stdout.decode("utf-8", "replace").splitlines() if "==" in line]
