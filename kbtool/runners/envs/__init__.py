"""Provision backend environments from their recipes: venv + pip, recorded in kbtool-env.json.

An env can also be an interpreter that already holds the engine (a conda env, a GPU machine's system Python where
nothing can be installed): `kbtool env use NAME --python PATH` checks that it imports the backend and records it
("external": true, "python": PATH) in a folder that holds only the record. kbtool never installs into it, never
deletes it, and does not hold it to the recipe's lock (it is the user's); `env remove` drops the registration only."""

import datetime
import json
import os
import shlex
import shutil
import subprocess
import time
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Sequence

from kbtool import files
from kbtool.errors import KbtoolError
from kbtool.runners.base import WORKER_MAIN, Launch, Unavailable, registered_python
from kbtool.runners.envs import interpreters, layered
from kbtool.runners.envs.interpreters import Interpreter, NoInterpreter
from kbtool.runners.names import normalise

RECORD = "kbtool-env.json"
# Written into an env's folder before anything else at install: the folder is kbtool's to delete (`env remove`,
# `env install --force`) even when the install stopped before its record was written.
MARKER = ".kbtool-env"
LOCKS_DIR = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), "locks"
)  # <env>.txt: every package of the env, pinned
RECORD_MAX_BYTES = 1 << 20  # a record is a few KB (the env's pip freeze)
WORKER_FLOOR = (3, 6)  # the oldest Python the worker's code runs on (kbtool/worker/ is Python-3.6 syntax)
PROBE_TIMEOUT = 600.0  # seconds for a registered interpreter to import its backend (TensorFlow on a cold disk: ~1 min)


class MissingInterpreter(KbtoolError):
    """No Python of the recipe's version here (`env install --all` skips the env and says so; exit 0)."""

    def __init__(self, message: str, version: str) -> None:
        super().__init__(message)
        self.version = version


def live_terminal(stream: Any, environ: Optional[Mapping[str, str]] = None) -> Optional[IO[str]]:
    """`stream` when pip's own output should go straight to it while it runs (a terminal: pip then draws its
    progress bars), else None: pip's output is captured and only its last line is said when it fails (a log, CI)."""
    env = os.environ if environ is None else environ
    try:
        tty = bool(stream.isatty()) and stream.fileno() >= 0
    except (AttributeError, OSError, ValueError):  # a StringIO, a closed or detached stream
        return None
    return stream if tty and env.get("TERM") != "dumb" else None


def _run(argv, log, env=None, cwd=None, terminal: Optional[IO[str]] = None):
    """Run `argv`; its output is returned (and only its last line said when it fails), or with `terminal` written
    to that terminal as it comes (nothing returned)."""
    log("$ " + " ".join(argv))
    if terminal is not None:
        terminal.flush()
        proc = subprocess.run(argv, stdout=terminal.fileno(), stderr=terminal.fileno(), env=env, cwd=cwd)
        if proc.returncode != 0:
            raise KbtoolError(f"`{_command(argv)}` failed (exit {proc.returncode}): its output is above")
        return ""
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    output = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        lines = [line for line in output.strip().splitlines() if line.strip() and "is ignored" not in line]
        raise KbtoolError(
            "`{}` failed (exit {}): {}".format(
                _command(argv), proc.returncode, conflict(lines) or (lines[-1] if lines else "no output")
            )
        )
    return output


def _command(argv: Sequence[str]) -> str:
    """A failed command as a message names it: `pip install` for the env's pip (its path is in the log above, and a
    report that quotes the reason should not carry this machine's paths), else its first words."""
    if list(argv[1:3]) == ["-m", "pip"]:
        words = [w for w in argv[3:] if not w.startswith("--disable")]
        return "pip " + (words[0] if words else "")
    return " ".join(argv[:4]) + " ..."


def conflict(lines: List[str]) -> Optional[str]:
    """pip's own account of a dependency conflict, on one line ("keras 2.2.0 depends on keras-applications==1.0.2;
    tensorflow 1.15.5 depends on keras-applications>=1.0.8"), or None when pip did not give one."""
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "The conflict is caused by:") + 1
    except StopIteration:
        return None
    causes = []
    for line in lines[start:]:
        if not line.startswith((" ", "\t")):
            break
        causes.append(line.strip())
    return "conflicting dependencies: " + "; ".join(causes) if causes else None


def lock_path(recipe):
    """A built-in env's lock ships with kbtool; a release's is generated at its first install, under kbtool's home."""
    if recipe.release is not None:
        from kbtool.runners.base import kbtool_home

        return os.path.join(kbtool_home(), "locks", recipe.release.folder + ".txt")
    return os.path.join(LOCKS_DIR, recipe.env_owner + ".txt")


def read_lock(recipe):
    """The recipe's lock as {normalised name: "name==version"} (empty when it has none)."""
    try:
        with open(lock_path(recipe)) as fh:
            lines = [line.strip() for line in fh]
    except FileNotFoundError:
        return {}
    return {normalise(line.split("==", 1)[0]): line for line in lines if line and not line.startswith("#")}


def lock_drift(recipe, frozen):
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


# pip, not uv: measured on this machine (2 shared cores, pip and uv caches warm, the keras3-numpy lock into a fresh
# env): `kbtool env install` 15-22 s (72 s under load 8), `uv venv` + `uv pip install -r LOCK` 0.4-1.2 s, and uv
# also built the cntk (Python 3.6) and mxnet (3.7) envs from their locks. uv stays out because it ignores pip's
# configuration (pip.conf's index, find-links, constraints and certificates: what a user's machine or CI sets up)
# and is not a dependency of kbtool; an opt-in installer would have to translate that configuration first.
def install(
    recipe,
    log=print,
    force=False,
    locked=True,
    interpreter: Optional[Interpreter] = None,
    terminal: Optional[IO[str]] = None,
    no_deps: bool = False,
):
    """Build the env for `recipe`; returns its record. Idempotent: pip skips what is installed.

    `no_deps` (a release only, `env install --no-deps`; kept in its lock for reinstalls): the pinned packages are
    installed alone over the base env, their own requirements unchecked (pip cannot resolve keras 2.2.0, which pins
    keras-applications 1.0.2, with TensorFlow 1.15, which needs 1.0.8); the requirements left unmet are recorded.

    With a lock (kbtool/runners/locks/<env>.txt) every package is installed at its locked version, and the env must
    then freeze to exactly the lock; `locked=False` resolves the recipe's packages afresh (how a lock is made).
    The venv is made from `interpreter` (`--python PATH`, checked by the caller), else from the Python
    interpreters.find finds (MissingInterpreter when there is none). With `terminal`, pip writes to it as it runs."""
    registered = registered_python(recipe.env_dir())
    if registered:
        raise KbtoolError(registered_line(recipe, registered))
    problems = recipe.system_check()
    if problems:
        raise KbtoolError("{}: {}".format(recipe.name, "; ".join(problems)))
    started = time.monotonic()
    base = layered.base_of(recipe) if recipe.layered_on else None
    if base is not None:  # a release: the base env's own interpreter, so the base's packages load in the release
        interpreter = Interpreter(base["python"], base.get("python_version") or recipe.python_version, "its base env")
    elif interpreter is None:
        try:
            interpreter = find_interpreter(recipe.python_version, recipe.name)
        except NoInterpreter as exc:
            raise MissingInterpreter(f"{recipe.name}: {exc}", recipe.python_version)
        except Unavailable as exc:  # KBTOOL_PYTHON_X_Y names no Python X.Y
            raise KbtoolError(f"{recipe.name}: {exc}")
    python = interpreter.path
    log(interpreter.describe())
    env_dir = recipe.env_dir()
    if force and os.path.lexists(env_dir):
        _refuse_unless_kbtools(recipe, env_dir)
        _delete(env_dir, log)
    if force and base is not None and os.path.exists(lock_path(recipe)):  # a release's lock is kbtool's: made again
        os.unlink(lock_path(recipe))
        log(f"removed its generated lock {lock_path(recipe)}: resolved again")
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
    else:
        _say_other_base(env_dir, interpreter, recipe, log)
    if base is not None:
        layered.layer(env_dir, base, log)
    pip = [os.path.join(env_dir, "bin", "python"), "-m", "pip", "--disable-pip-version-check"]
    pip_env = pip_environ()
    use_lock = locked and os.path.exists(lock_path(recipe))
    if base is not None:
        no_deps = no_deps or (use_lock and layered.lock_says_no_deps(lock_path(recipe)))
    elif no_deps:
        raise KbtoolError(
            f"{recipe.name}: --no-deps is for a release (e.g. 'tensorflow1[keras=2.2.0]'), not a base env"
        )
    installed = os.path.exists(os.path.join(env_dir, RECORD))
    if use_lock and installed and not lock_drift(recipe, _freeze(pip, pip_env, env_dir)):
        log(f"already matches its lock {lock_path(recipe)}")  # nothing for pip to do (cntk would reinstall)
    else:
        if recipe.bootstrap_packages:
            _run(pip + ["install"] + recipe.bootstrap_packages, log, pip_env, terminal=terminal)
        wanted = ["-r", lock_path(recipe)] if use_lock else recipe.packages
        if no_deps:  # over the base env as it is: only the pins (a lock: its lines, none of them resolved)
            wanted = ["--no-deps"] + (wanted if use_lock else [f"{p}=={v}" for p, v in recipe.release.pins])
        try:
            _run(pip + ["install"] + _index_args(recipe, log) + wanted, log, pip_env, terminal=terminal)
        except KbtoolError as exc:
            if base is not None and not no_deps and "conflicting dependencies" in str(exc):
                raise KbtoolError(
                    f"{exc}; `kbtool env install {shlex.quote(recipe.name)} --no-deps` installs "
                    f"{layered.pins_text(recipe)} alone over the base env, its own requirements unchecked"
                )
            raise
    recipe.prepare(env_dir)
    frozen = _freeze(pip, pip_env, env_dir)
    drift = lock_drift(recipe, frozen) if use_lock else []
    if no_deps and not use_lock:  # the pins' own requirements come too, unresolved against the base's
        layered.follow_requirements(recipe, lambda args: _run(pip + ["install"] + args, log, pip_env), pip, pip_env)
        frozen = _freeze(pip, pip_env, env_dir)
    unmet = layered.unmet(pip, pip_env, env_dir) if no_deps else []
    for line in unmet:
        log(f"unmet (--no-deps): {line}")
    if base is not None and not use_lock:  # its first install: the env, once checked, is the release's lock
        layered.check_pins(recipe, frozen)
        layered.write_lock(recipe, frozen, lock_path(recipe), no_deps=no_deps)
        use_lock = True
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
        "python_version": interpreter.version,
        "python_source": interpreter.source,
        "packages": recipe.packages,
        "lock": os.path.basename(lock_path(recipe)) if use_lock else None,
        "installed": frozen,
        "install_seconds": round(time.monotonic() - started, 1),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if base is not None:
        record.update(
            lock=lock_path(recipe),
            release={"base": recipe.release.base, "pins": dict(recipe.release.pins)},
            layered_on={"env": recipe.layered_on, "path": base["env_dir"], "created": base.get("created")},
        )
        if no_deps:
            record.update(no_deps=True, unmet=unmet)
    try:  # atomic: an interrupted install never leaves a half-written record
        files.write_atomic(os.path.join(env_dir, RECORD), json.dumps(record, indent=2))
    except OSError as exc:
        raise KbtoolError(f"cannot write {os.path.join(env_dir, RECORD)}: {exc.strerror or exc}")
    return record


def find_interpreter(version: str, backend: Optional[str] = None) -> Interpreter:
    """The Python `version` an env is built from (interpreters.find: its sources and order)."""
    return interpreters.find(version, backend=backend)


def _say_other_base(env_dir: str, interpreter: Interpreter, recipe: Any, log: Callable[[str], None]) -> None:
    """Log when the existing venv was made from another interpreter than `interpreter` (pip then installs into the
    venv as it is; `--force` rebuilds it from `interpreter`)."""
    try:
        with open(os.path.join(env_dir, "pyvenv.cfg")) as fh:
            cfg = {key.strip(): value.strip() for key, value in (line.split("=", 1) for line in fh if "=" in line)}
    except (OSError, UnicodeDecodeError):
        return
    home = cfg.get("home", "")
    if home and os.path.realpath(home) != os.path.realpath(os.path.dirname(interpreter.path)):
        log(
            f"note: the env exists, made from the Python in {home}; pip installs into it as it is (`kbtool env "
            f"install {recipe.name} --force` rebuilds it from {interpreter.path})"
        )


def registered_line(recipe: Any, python: str) -> str:
    """Why `kbtool env install` leaves a registered env alone, and how to unregister it."""
    owner = recipe.env_owner
    return (
        f"{owner} uses the interpreter {python} registered by `kbtool env use`: kbtool installs nothing into it; "
        f"`kbtool env remove {owner}` unregisters it (the interpreter stays), then `kbtool env install {recipe.name}` "
        "builds a venv"
    )


def pip_environ() -> Dict[str, str]:
    """The environment pip runs in inside an env: the caller's, without PYTHONPATH (a checkout on it would be
    installed as far as `pip freeze` can tell, and the env would drift from its lock) and never prompting."""
    env = dict(os.environ, PIP_NO_INPUT="1")
    env.pop("PYTHONPATH", None)
    return env


def _index_args(recipe, log) -> List[str]:
    """`--extra-index-url` for the recipe's extra index when its host answers within a few seconds; else nothing,
    said in the log (the packages must then come from the configured index or find-links)."""
    if not recipe.extra_index:
        return []
    import socket
    import urllib.parse

    url = urllib.parse.urlsplit(recipe.extra_index)
    try:
        port = url.port or (80 if url.scheme == "http" else 443)
        socket.create_connection((url.hostname or "", port), timeout=EXTRA_INDEX_PROBE_SECONDS).close()
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or exc
        log(f"{recipe.extra_index} cannot be reached ({why}): pip uses the configured indexes only")
        return []
    return ["--extra-index-url", recipe.extra_index]


EXTRA_INDEX_PROBE_SECONDS = 5.0


def install_all(
    recipes: Sequence[Any],
    force: bool,
    out: Callable[[str], None],
    err: Callable[[str], None],
    skip_registered: bool = False,
    interpreter: Optional[Interpreter] = None,
    skip_missing: bool = False,
    terminal: Optional[IO[str]] = None,
    no_deps: bool = False,
) -> List[str]:
    """`kbtool env install`: each recipe's env built once, in order (`no_deps`: the releases named, see install). A recipe that runs in another's env (keras3 in
    tensorflow's) builds that env, and a later recipe of the same env is only told where it is. What happens goes to
    `out` (one line per env) and `err` (pip's progress, errors); one env failing never stops the others.
    An env registered by `kbtool env use` is a failure when named, passed over (said on `out`) with
    `skip_registered` (`--all`). `interpreter` (`--python PATH`) builds every env named. With `skip_missing`
    (`--all`) an env whose Python is nowhere here is skipped, not failed: said as it comes, then in one `skipped:`
    line per Python version at the end. Returns the names of the recipes whose env failed."""
    from kbtool.runners.registry import RECIPES

    failed: List[str] = []
    skipped: Dict[str, List[str]] = {}  # Python version -> the recipes skipped for want of it
    done: Dict[str, str] = {}
    for recipe in _bases_first(recipes):
        owner = RECIPES.get(recipe.env_owner, recipe)
        if owner.name in done:
            out(f"{recipe.name}: runs in the {owner.name} env, {done[owner.name]}")
            if owner.python_version in skipped and owner.name in skipped[owner.python_version]:
                skipped[owner.python_version].append(recipe.name)
            continue
        registered = registered_python(owner.env_dir())
        if registered and skip_registered:
            done[owner.name] = f"which uses the registered interpreter {registered}"
            out(f"{recipe.name}: uses the registered interpreter {registered}, not installed")
            continue
        err(
            "== {} (Python {}: {}{})".format(
                owner.name, owner.python_version, " ".join(owner.packages), ", locked" if read_lock(owner) else ""
            )
        )
        try:
            record = install(
                owner,
                log=lambda line: err("   " + line),
                force=force,
                interpreter=interpreter,
                terminal=terminal,
                no_deps=no_deps and owner.release is not None,
            )
        except MissingInterpreter as exc:
            if not skip_missing:
                err(f"kbtool: error: {exc}")
                failed.append(recipe.name)
                done[owner.name] = "which failed to install"
                continue
            if exc.version not in skipped:  # every place looked and every way to get one, once per version
                err(f"kbtool: skipped: {exc}")
            skipped.setdefault(exc.version, []).append(owner.name)
            done[owner.name] = f"which was skipped (no Python {exc.version})"
            out(f"{owner.name}: skipped, no Python {exc.version} here")
            if recipe is not owner:
                skipped[exc.version].append(recipe.name)
            continue
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
    for version, names in skipped.items():
        out(f"skipped: {', '.join(names)} (no Python {version}; {interpreters.get_one(version)})")
    return failed


def _bases_first(recipes: Sequence[Any]) -> List[Any]:
    """`recipes` with the base env of each release before it where that base is not installed yet."""
    from kbtool.runners.registry import RECIPES

    ordered: List[Any] = []
    for recipe in recipes:
        base = RECIPES.get(recipe.layered_on) if recipe.layered_on else None
        if base is not None and base not in ordered and not os.path.exists(os.path.join(base.env_dir(), RECORD)):
            ordered.append(base)
        if recipe not in ordered:
            ordered.append(recipe)
    return ordered


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
    found = _probe(recipe, path, env_dir)
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
        _delete(env_dir, log)
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
    _refuse_unless_kbtools(recipe, env_dir)
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


def _probe(recipe: Any, path: str, env_dir: str) -> Dict[str, Any]:
    """What PROBE finds in interpreter `path`, run in the environment a worker of `recipe` would get."""
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
        backend=recipe.name, python=path, module=recipe.module, env=recipe.worker_env(env_dir, external=True)
    ).environ()
    try:
        proc = subprocess.run(
            [path, "-c", PROBE, json.dumps(args)],
            capture_output=True,
            env=env,
            cwd=worker_dir,
            timeout=PROBE_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise KbtoolError(f"{path}: did not import {recipe.module} within {PROBE_TIMEOUT:g} s; nothing was registered")
    except OSError as exc:
        raise KbtoolError(f"{path}: cannot run: {exc.strerror or exc}; nothing was registered")
    lines = [line for line in proc.stdout.decode("utf-8", "replace").splitlines() if line.startswith("KBTOOL-PROBE ")]
    try:
        found = json.loads(lines[-1][len("KBTOOL-PROBE ") :]) if lines else None
    except ValueError:
        found = None
    if not isinstance(found, dict) or not isinstance(found.get("version_info"), list):
        said = [line for line in proc.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        raise KbtoolError(
            "{}: did not run as a Python interpreter (exit {}{}); nothing was registered".format(
                path, proc.returncode, ": " + said[-1].strip() if said else ""
            )
        )
    return found


def _external_freeze(path: str) -> Optional[List[str]]:
    """A registered interpreter's `pip freeze`, or None when it has no working pip."""
    try:
        proc = subprocess.run(
            [path, "-m", "pip", "--disable-pip-version-check", "freeze"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=dict(os.environ, PIP_NO_INPUT="1"),
            cwd=os.path.dirname(WORKER_MAIN),
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return [line.strip() for line in proc.stdout.decode("utf-8", "replace").splitlines() if "==" in line]


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
        info.update(installed=True, created=record.get("created"), size_mb=_size_mb(env_dir))
    missing = _missing_interpreter(recipe) or (layered.base_problem(recipe, record) if recipe.layered_on else None)
    if missing:
        info["problem"] = missing
    if recipe.release is not None:
        info.update(release=recipe.release.name, layered_on=recipe.layered_on, versions=dict(recipe.release.pins))
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
        record = _read_record(path)
    except KbtoolError as exc:
        return str(exc)
    return _missing_interpreter(recipe) or (layered.base_problem(recipe, record) if recipe.layered_on else None)


def _missing_interpreter(recipe) -> Optional[str]:
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
    registered = None if os.path.islink(env_dir) else registered_python(env_dir)
    done = _delete(env_dir)
    if registered:
        return f"unregistered {registered} from the {recipe.env_owner} env (the interpreter was left alone)"
    return done


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
