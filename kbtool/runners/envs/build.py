"""`kbtool env install`: a backend's env built from its recipe (a venv, pip, the lock), checked and recorded in
kbtool-env.json; a release's env layered on its base env (layered.py)."""

import datetime
import json
import os
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from kbtool import files
from kbtool.errors import KbtoolError
from kbtool.runners.base import Unavailable, registered_python
from kbtool.runners.envs import interpreters, layered, register, state
from kbtool.runners.envs.interpreters import Interpreter, NoInterpreter
from kbtool.runners.envs.pip import freeze, index_args, pip_environ, run
from kbtool.runners.envs.record import (
    MARKER,
    RECORD,
    delete,
    lock_drift,
    lock_path,
    made_by_kbtool,
    read_lock,
    refuse_unless_kbtools,
)

if TYPE_CHECKING:
    from kbtool.runners.recipes.recipe import Recipe


class MissingInterpreter(KbtoolError):
    """No Python of the recipe's version here (`env install --all` skips the env and says so; exit 0)."""

    def __init__(self, message: str, version: str) -> None:
        super().__init__(message)
        self.version = version


@dataclass
class _Build:
    """One install under way: what its steps share."""

    recipe: "Recipe"
    env_dir: str
    base: Optional[Dict[str, Any]]  # a release's base env (layered.base_of); None for a base env
    log: Callable[[str], None]
    terminal: Optional[IO[str]]
    pip: List[str]  # the env's pip, as a command line
    pip_env: Dict[str, str]
    use_lock: bool
    no_deps: bool
    lock_out: str = ""  # where a release's first install writes its lock (moved into place once it is recorded)

    def pip_install(self, args: List[str], terminal: bool = True) -> None:
        run(self.pip + ["install"] + args, self.log, self.pip_env, terminal=self.terminal if terminal else None)

    def freeze(self) -> List[str]:
        return freeze(self.pip, self.pip_env, self.env_dir)


# pip, not uv: measured on this machine (2 shared cores, pip and uv caches warm, the keras3-numpy lock into a fresh
# env): `kbtool env install` 15-22 s (72 s under load 8), `uv venv` + `uv pip install -r LOCK` 0.4-1.2 s, and uv
# also built the cntk (Python 3.6) and mxnet (3.7) envs from their locks. uv stays out because it ignores pip's
# configuration (pip.conf's index, find-links, constraints and certificates: what a user's machine or CI sets up)
# and is not a dependency of kbtool; an opt-in installer would have to translate that configuration first.
def install(
    recipe: "Recipe",
    log: Callable[[str], None] = print,
    force: bool = False,
    locked: bool = True,
    interpreter: Optional[Interpreter] = None,
    terminal: Optional[IO[str]] = None,
    no_deps: bool = False,
) -> Dict[str, Any]:
    """_install; an install that fails (or is interrupted) removes the env's folder when it made it: a new env, or
    one `force` deleted to rebuild (a half venv would otherwise stay, hundreds of MB that `env list` cannot read)."""
    env_dir = recipe.env_dir()
    new = not os.path.lexists(env_dir)
    try:
        return _install(recipe, log, force, locked, interpreter, terminal, no_deps)
    except BaseException:
        made = new or (force and not os.path.lexists(os.path.join(env_dir, RECORD)))
        if made and os.path.lexists(env_dir) and made_by_kbtool(env_dir):
            try:
                delete(env_dir, lambda done: log(f"the install failed: {done}"))
            except KbtoolError as exc:
                log(f"the install failed, and its half-made env stays: {exc}")
        raise


def _install(
    recipe: "Recipe",
    log: Callable[[str], None] = print,
    force: bool = False,
    locked: bool = True,
    interpreter: Optional[Interpreter] = None,
    terminal: Optional[IO[str]] = None,
    no_deps: bool = False,
) -> Dict[str, Any]:
    """Build the env for `recipe`; returns its record. Idempotent: pip skips what is installed.

    `no_deps` (a release only, `env install --no-deps`; kept in its lock for reinstalls): the pinned packages are
    installed alone over the base env, their own requirements unchecked (pip cannot resolve keras 2.2.0, which pins
    keras-applications 1.0.2, with TensorFlow 1.15, which needs 1.0.8); the requirements left unmet are recorded.

    With a lock (kbtool/runners/locks/<env>.txt) every package is installed at its locked version, and the env must
    then freeze to exactly the lock; `locked=False` resolves the recipe's packages afresh (how a lock is made).
    The venv is made from `interpreter` (`--python PATH`, checked by the caller), else from the Python
    interpreters.find finds (MissingInterpreter when there is none). With `terminal`, pip writes to it as it runs.

    A release's env is held to its name: its lock must pin what the name pins (checked before pip), and the env must
    then import those versions (else refused, a fresh env removed, the lock as it was). `force` over an existing env
    builds the new one aside and swaps it in only once it works (_install_aside)."""
    registered = registered_python(recipe.env_dir())
    if registered:
        raise KbtoolError(registered_line(recipe, registered))
    problems = recipe.system_check()
    if problems:
        raise KbtoolError("{}: {}".format(recipe.name, "; ".join(problems)))
    started = time.monotonic()
    base = layered.base_of(recipe) if recipe.layered_on else None
    lock = lock_path(recipe)
    if base is None and no_deps:
        raise KbtoolError(
            f"{recipe.name}: --no-deps is for a release (e.g. 'tensorflow1[keras=2.2.0]'), not a base env"
        )
    if base is not None:
        # a --no-deps release is rebuilt --no-deps, --force included: its lock says how it was installed
        no_deps = no_deps or (locked and layered.lock_says_no_deps(lock))
        if locked and not force:
            layered.check_lock(recipe, lock)  # before pip: a lock that lost a pin would install nothing of it
    interpreter = _interpreter_for(recipe, base, interpreter)
    log(interpreter.describe())
    env_dir = recipe.env_dir()
    # a release's --force resolves its lock again (the lock is kbtool's); a base env's ships with kbtool
    use_lock = locked and os.path.exists(lock) and not (force and base is not None)
    target = _Target(recipe, base, interpreter, log, terminal, use_lock, no_deps, started)
    if force and os.path.lexists(env_dir):
        return _install_aside(target, env_dir)
    fresh = not os.path.lexists(env_dir)
    _make_folder(recipe, env_dir)
    try:
        return target.build(env_dir)
    except KbtoolError:
        if fresh and base is not None:  # a release half built is not left: its next install starts clean
            delete(env_dir, log)
        raise


@dataclass
class _Target:
    """What one install builds, wherever it builds it (the env's folder, or aside from it under --force)."""

    recipe: "Recipe"
    base: Optional[Dict[str, Any]]
    interpreter: Interpreter
    log: Callable[[str], None]
    terminal: Optional[IO[str]]
    use_lock: bool
    no_deps: bool
    started: float

    def build(self, env_dir: str) -> Dict[str, Any]:
        """The env built in `env_dir` (a folder kbtool made), checked and recorded; a release's lock, when this
        install generates it, is moved into place only once the env is recorded."""
        recipe, log = self.recipe, self.log
        if not os.path.exists(os.path.join(env_dir, "bin", "python")):
            run([self.interpreter.path, "-m", "venv", env_dir], log)
        else:
            _say_other_base(env_dir, self.interpreter, recipe, log)
        if self.base is not None:
            layered.layer(env_dir, self.base, log)
        pip = [os.path.join(env_dir, "bin", "python"), "-m", "pip", "--disable-pip-version-check"]
        lock = lock_path(recipe)
        new_lock = f"{lock}.new-{os.getpid()}" if self.base is not None and not self.use_lock else None
        build = _Build(recipe, env_dir, self.base, log, self.terminal, pip, pip_environ(), self.use_lock, self.no_deps)
        build.lock_out = new_lock or lock
        try:
            _install_packages(build)
            recipe.prepare(env_dir)
            frozen, unmet = _settle(build)
            if self.base is not None:
                _check_imports(recipe, env_dir, frozen)
            record = _record(build, self.interpreter, frozen, unmet, self.started)
            try:  # atomic: an interrupted install never leaves a half-written record
                files.write_atomic(os.path.join(env_dir, RECORD), json.dumps(record, indent=2))
            except OSError as exc:
                raise KbtoolError(f"cannot write {os.path.join(env_dir, RECORD)}: {exc.strerror or exc}")
            if new_lock is not None and os.path.exists(new_lock):
                os.replace(new_lock, lock)
        finally:
            if new_lock is not None and os.path.exists(new_lock):  # the install failed: the lock as it was
                os.unlink(new_lock)
        return record


def _check_imports(recipe: "Recipe", env_dir: str, frozen: Sequence[str]) -> None:
    """A release's env must import what its name pins, as a worker imports it (register.PROBE): the name is what
    every result is filed under. Otherwise refused, and an earlier record of the env removed (it is not that
    release). An env that does not import at all (TensorFlow 1.15 refuses keras 2.2.0's keras-applications) is
    still that release when pip installed its pins (`frozen`, its `pip freeze`): it is recorded, and `check`
    reports it broken with the import's error."""
    found = register.probe(
        recipe, os.path.join(env_dir, "bin", "python"), env_dir, external=False, outcome="nothing was installed"
    )
    if found.get("error") and recipe.release is not None:
        installed = {line.split("==", 1)[0]: line.split("==", 1)[1] for line in frozen if "==" in line}
        mismatched = recipe.release.mismatches(installed)
        wrong = f"has {', '.join(mismatched)} installed" if mismatched else None
    else:
        wrong = register.pins_problem(recipe, found)
    if not wrong:
        return
    record = os.path.join(env_dir, RECORD)
    if os.path.exists(record):
        os.unlink(record)
    raise KbtoolError(
        f"{recipe.name}: its env {wrong}; it is not that release and was not recorded as it (`kbtool env install "
        f"'{recipe.name}' --force` rebuilds it)"
    )


def _install_aside(target: _Target, env_dir: str) -> Dict[str, Any]:
    """`--force` over an existing env: the new env is built in a folder beside it and swapped in only once it is
    built, checked and recorded; on any failure the env and its lock stay as they were. (kbtool runs pip and the
    worker as `python -m`, so the scripts' shebangs that name the folder it was built in do not matter.)"""
    recipe, log = target.recipe, target.log
    refuse_unless_kbtools(recipe, env_dir)
    parent, name = os.path.split(env_dir)
    try:
        aside = tempfile.mkdtemp(prefix=f".{name}.new-", dir=parent)
    except OSError as exc:
        raise KbtoolError(f"cannot write {parent}: {exc.strerror or exc}")
    log(f"--force: building it aside in {aside}; {env_dir} stays until the new env works")
    try:
        _make_folder(recipe, aside)
        record = target.build(aside)
    except BaseException as exc:
        shutil.rmtree(aside, ignore_errors=True)
        if isinstance(exc, KbtoolError):
            raise KbtoolError(f"{exc}; the env in {env_dir} and its lock were left as they were")
        raise
    _swap(env_dir, aside, log)
    return record


def _swap(env_dir: str, aside: str, log: Callable[[str], None]) -> None:
    """Put the env built `aside` in place of `env_dir` (a symlink there: only the link goes)."""
    old = f"{aside}.old"
    try:
        os.rename(env_dir, old)
        os.rename(aside, env_dir)
    except OSError as exc:
        raise KbtoolError(f"cannot move {aside} to {env_dir}: {exc.strerror or exc}")
    delete(old)
    log(f"replaced {env_dir} with the env built aside")


def _interpreter_for(recipe: "Recipe", base: Optional[Dict[str, Any]], given: Optional[Interpreter]) -> Interpreter:
    """The Python the env is made from: a release's base env's own (so the base's packages load in the release),
    else `given` (`--python PATH`), else the one interpreters.find finds."""
    if base is not None:
        return Interpreter(base["python"], base.get("python_version") or recipe.python_version, "its base env")
    if given is not None:
        return given
    try:
        return find_interpreter(recipe.python_version, recipe.name)
    except NoInterpreter as exc:
        raise MissingInterpreter(f"{recipe.name}: {exc}", recipe.python_version)
    except Unavailable as exc:  # KBTOOL_PYTHON_X_Y names no Python X.Y
        raise KbtoolError(f"{recipe.name}: {exc}")


def _make_folder(recipe: "Recipe", env_dir: str) -> None:
    """The env's folder, kbtool's (its marker written first). A folder kbtool did not make is refused."""
    if os.path.lexists(env_dir) and not made_by_kbtool(env_dir):
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


def _install_packages(build: _Build) -> None:
    """pip install: the lock (or the recipe's packages), after the bootstrap packages; nothing when an installed
    env already matches its lock."""
    recipe = build.recipe
    installed = os.path.exists(os.path.join(build.env_dir, RECORD))
    if build.use_lock and installed and not lock_drift(recipe, build.freeze()):
        build.log(f"already matches its lock {lock_path(recipe)}")  # nothing for pip to do (cntk would reinstall)
        return
    if recipe.bootstrap_packages:
        build.pip_install(recipe.bootstrap_packages)
    wanted = ["-r", lock_path(recipe)] if build.use_lock else recipe.packages
    if build.no_deps:  # over the base env as it is: only the pins (a lock: its lines, none of them resolved)
        pins = recipe.release.pins if recipe.release is not None else ()
        wanted = ["--no-deps"] + (wanted if build.use_lock else [f"{p}=={v}" for p, v in pins])
    try:
        build.pip_install(index_args(recipe, build.log) + wanted)
    except KbtoolError as exc:
        if build.base is not None and not build.no_deps and "conflicting dependencies" in str(exc):
            raise KbtoolError(
                f"{exc}; `kbtool env install {shlex.quote(recipe.name)} --no-deps` installs "
                f"{layered.pins_text(recipe)} alone over the base env, its own requirements unchecked"
            )
        raise


def _settle(build: _Build) -> Tuple[List[str], List[str]]:
    """(the env's `pip freeze`, the requirements --no-deps left unmet), once it is checked: against its lock, or
    for a release's first install against its pins (and then written as its lock)."""
    recipe = build.recipe
    frozen = build.freeze()
    drift = lock_drift(recipe, frozen) if build.use_lock else []
    if build.no_deps and not build.use_lock:  # the pins' own requirements come too, unresolved against the base's
        layered.follow_requirements(
            recipe, lambda args: build.pip_install(args, terminal=False), build.pip, build.pip_env
        )
        frozen = build.freeze()
    unmet = layered.unmet(build.pip, build.pip_env, build.env_dir) if build.no_deps else []
    for line in unmet:
        build.log(f"unmet (--no-deps): {line}")
    if build.base is not None and not build.use_lock:  # its first install: the env, once checked, is its lock
        layered.check_pins(recipe, frozen)
        layered.write_lock(recipe, frozen, build.lock_out or lock_path(recipe), no_deps=build.no_deps)
        build.use_lock = True
    if drift:
        raise KbtoolError(
            "{}: the env does not match its lock {} after install: {}{}; `kbtool env install --force "
            "{}` rebuilds it".format(
                recipe.name,
                lock_path(recipe),
                "; ".join(drift[:3]),
                " ..." if len(drift) > 3 else "",
                shlex.quote(recipe.name),
            )
        )
    return frozen, unmet


def _record(
    build: _Build, interpreter: Interpreter, frozen: List[str], unmet: List[str], started: float
) -> Dict[str, Any]:
    """The env's install record (kbtool-env.json)."""
    recipe = build.recipe
    record: Dict[str, Any] = {
        "backend": recipe.name,
        "env": recipe.env_owner,
        "python": interpreter.path,
        "python_version": interpreter.version,
        "python_source": interpreter.source,
        "packages": recipe.packages,
        "lock": os.path.basename(lock_path(recipe)) if build.use_lock else None,
        "installed": frozen,
        "install_seconds": round(time.monotonic() - started, 1),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    if build.base is not None and recipe.release is not None:
        record.update(
            lock=lock_path(recipe),
            release={"base": recipe.release.base, "pins": dict(recipe.release.pins)},
            layered_on={"env": recipe.layered_on, "path": build.base["env_dir"], "created": build.base.get("created")},
        )
        if build.no_deps:
            record.update(no_deps=True, unmet=unmet)
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


def install_all(
    recipes: Sequence["Recipe"],
    force: bool,
    out: Callable[[str], None],
    err: Callable[[str], None],
    skip_registered: bool = False,
    interpreter: Optional[Interpreter] = None,
    skip_missing: bool = False,
    terminal: Optional[IO[str]] = None,
    no_deps: bool = False,
) -> List[str]:
    """`kbtool env install`: each recipe's env built once, in order (`no_deps`: the releases named, see install). A
    recipe that runs in another's env (keras3 in tensorflow's) builds that env, and a later recipe of the same env is only told where it is. What happens goes to
    `out` (one line per env) and `err` (pip's progress, errors); one env failing never stops the others.
    An env registered by `kbtool env use` is a failure when named, passed over (said on `out`) with
    `skip_registered` (`--all`). `interpreter` (`--python PATH`) builds every env named. With `skip_missing`
    (`--all`) an env whose Python is nowhere here is skipped, not failed: said as it comes, then in one `skipped:`
    line per Python version at the end. Returns the names of the recipes whose env failed."""
    from kbtool.runners.recipes import RECIPES

    failed: List[str] = []
    skipped: Dict[str, List[str]] = {}  # Python version -> the recipes skipped for want of it
    done: Dict[str, str] = {}  # env -> what became of it, in words
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
        except KbtoolError as exc:
            done[owner.name] = _failed(exc, recipe, owner, skip_missing, skipped, out, err)
            if done[owner.name] == FAILED:
                failed.append(recipe.name)
            continue
        done[owner.name] = f"installed in {owner.env_dir()}"
        size = state.describe(owner).get("size_mb")
        out(f"{owner.name}: installed in {owner.env_dir()} ({record['install_seconds']} s, {size} MB)")
        if recipe is not owner:
            out(f"{recipe.name}: runs in the {owner.name} env")
    for version, names in skipped.items():
        out(f"skipped: {', '.join(names)} (no Python {version}; {interpreters.get_one(version)})")
    return failed


FAILED = "which failed to install"


def _failed(
    exc: KbtoolError,
    recipe: "Recipe",
    owner: "Recipe",
    skip_missing: bool,
    skipped: Dict[str, List[str]],
    out: Callable[[str], None],
    err: Callable[[str], None],
) -> str:
    """Say why `owner`'s env was not installed; what became of it, in words (FAILED, or skipped for want of its
    Python under `skip_missing`, noted in `skipped`)."""
    if not isinstance(exc, MissingInterpreter) or not skip_missing:
        err(f"kbtool: error: {exc}")
        return FAILED
    if exc.version not in skipped:  # every place looked and every way to get one, once per version
        err(f"kbtool: skipped: {exc}")
    skipped.setdefault(exc.version, []).append(owner.name)
    out(f"{owner.name}: skipped, no Python {exc.version} here")
    if recipe is not owner:
        skipped[exc.version].append(recipe.name)
    return f"which was skipped (no Python {exc.version})"


def _bases_first(recipes: Sequence["Recipe"]) -> List["Recipe"]:
    """`recipes` with the base env of each release before it where that base is not installed yet."""
    from kbtool.runners.recipes import RECIPES

    ordered: List[Recipe] = []
    for recipe in recipes:
        base = RECIPES.get(recipe.layered_on) if recipe.layered_on else None
        if base is not None and base not in ordered and not os.path.exists(os.path.join(base.env_dir(), RECORD)):
            ordered.append(base)
        if recipe not in ordered:
            ordered.append(recipe)
    return ordered
