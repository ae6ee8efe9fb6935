"""The `kbtool env` commands (install, use, list, system-packages, remove) and `kbtool backends`. Each backend's
environment is built by envs/; `backends` says each one's status, interpreter and versions from the session's
probes, kept by probe_cache."""

import json
import os
import sys
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple

import click

from kbtool.errors import KbtoolError
from kbtool.options import complete_backend, complete_environment

if TYPE_CHECKING:
    from kbtool.runners.envs.interpreters import Interpreter
    from kbtool.runners.recipes.recipe import Recipe


# ---------------------------------------------------------------------------- env
@click.group()
def env() -> None:
    """Manage the backends' environments (one venv each).

    Each backend runs in its own venv, built from its recipe and its lock.

    \b
    Examples:
      kbtool env list
      kbtool env install theano
      kbtool env install --all
    """


def _recipes(names: Tuple[str, ...], all_: bool) -> List["Recipe"]:
    """The recipes NAMES (or --all) name: built-in backends, or releases of one, each once whatever its spelling
    (`tensorflow1[Keras=2.2.04]` is `tensorflow1[keras=2.2.4]`); an unknown name is refused."""
    from kbtool.runners import names as names_mod
    from kbtool.runners import releases
    from kbtool.runners.registry import RECIPES

    if all_:
        return list(RECIPES.values())
    if not names:
        raise KbtoolError("name one or more of {} (or --all)".format(", ".join(RECIPES)))
    names = names_mod.canonical_names(names)
    unknown = [n for n in names if n not in RECIPES and not releases.is_release(n)]
    if unknown:
        raise KbtoolError(
            "unknown environment {}; managed environments: {} (or a release of one, e.g. "
            "'tensorflow1[keras=2.2.4]')".format(", ".join(unknown), ", ".join(RECIPES))
        )
    return [releases.recipe_for(n) for n in names]


@contextmanager
def interruptible(command: str, nothing: str) -> Iterator[None]:
    """SIGINT or SIGTERM during the block (an `env` command): the child being waited on (envs/children.py) is killed
    with its group, and kbtool ends with one line ("kbtool: SIGTERM: COMMAND interrupted; NOTHING") and exit 130."""
    from kbtool.interrupts import Interrupted, Interrupts
    from kbtool.runners.envs.children import Children

    try:
        with Interrupts(Children(), what=None, raise_in_main=True):  # type: ignore[arg-type]
            yield
    except Interrupted as stop:
        click.echo(f"kbtool: {stop.name}: {command} interrupted; {nothing}", err=True)
        sys.exit(130)
    except KeyboardInterrupt:  # a Ctrl-C before the handlers were in place
        click.echo(f"kbtool: SIGINT: {command} interrupted; {nothing}", err=True)
        sys.exit(130)


@env.command("install")
@click.argument("names", nargs=-1, shell_complete=complete_environment)
@click.option(
    "--all", "all_", is_flag=True, help="Install every managed backend (skipping those whose Python is missing)."
)
@click.option(
    "--force", is_flag=True, help="Rebuild the environment (built aside; the old one stays unless the rebuild works)."
)
@click.option(
    "--python",
    "python",
    metavar="PATH",
    help="Build the env from this interpreter (it must be the backend's Python version, e.g. 3.6 for cntk); "
    "default: the first found in KBTOOL_PYTHON_X_Y, pyenv, uv, conda, then PATH.",
)
@click.option(
    "--no-deps",
    "no_deps",
    is_flag=True,
    help="For a release whose requirements pip cannot resolve with its base env: install its pinned packages "
    "alone over the base env (requirements unchecked; the unmet ones are recorded, and reinstalls do the same).",
)
def env_install(names: Tuple[str, ...], all_: bool, force: bool, python: Optional[str], no_deps: bool) -> None:
    """Create or update backend environments.

    Each env gets exactly the versions its lock pins. Each env is a venv made from a Python of its recipe's version: `--python PATH`, else KBTOOL_PYTHON_3_6-style
    variables, kbtool's own Python, pyenv's versions, uv's Pythons, conda envs, then pythonX.Y on PATH. On a
    terminal pip's own output shows while it runs; otherwise only a failing command's last line is said.
    A release of a backend (`'tensorflow1[keras=2.2.4]'`) gets its own env layered on the base env, with a
    lock its first install writes under kbtool's home (docs/concepts/releases.md).

    \b
    Exit codes:
      0  every env asked is installed; with --all, also when the only ones
         left out lack their Python (each named on a `skipped:` line with
         the ways to get one) or use an interpreter from `kbtool env use`
      2  an env failed to install, a named backend's Python is missing,
         or bad input (unknown name, --python not that backend's Python)
      130  interrupted

    \b
    Examples:
      kbtool env install tensorflow theano
      kbtool env install --all
      kbtool env install tensorflow --force
      kbtool env install cntk --python ~/.pyenv/versions/3.6.15/bin/python
      kbtool env install 'tensorflow1[keras=2.2.4]' 'tensorflow1[keras=2.2.5]'
      kbtool env install 'tensorflow1[keras=2.2.0]' --no-deps
    """
    from kbtool.runners import envs

    recipes = _recipes(names, all_)
    if no_deps and (all_ or any(r.release is None for r in recipes)):
        raise KbtoolError("--no-deps is for releases only, e.g. 'tensorflow1[keras=2.2.0]'; name releases, not --all")
    with interruptible("env install", "an env it was making is removed, the envs it had installed stay"):
        interpreter = _interpreter(recipes, python, all_) if python else None
        failed = envs.install_all(
            recipes,
            force,
            out=click.echo,
            err=lambda line: click.echo(line, err=True),
            skip_registered=all_,
            interpreter=interpreter,
            skip_missing=all_,
            terminal=envs.live_terminal(sys.stderr),
            no_deps=no_deps,
        )
    if failed:
        sys.exit(2)


def _interpreter(recipes: List["Recipe"], python: str, all_: bool) -> "Interpreter":
    """`env install --python PATH`: the interpreter, checked to be the Python version every named backend needs."""
    from kbtool.runners.envs import interpreters
    from kbtool.runners.registry import RECIPES

    if all_:
        raise KbtoolError("--python names one interpreter: name the backends it builds, not --all")
    owners = [RECIPES.get(r.env_owner, r) for r in recipes]
    versions = sorted({o.python_version for o in owners})
    if len(versions) > 1:
        raise KbtoolError(
            "--python names one interpreter, and these backends need different Pythons ({}): install them "
            "one Python version at a time".format(
                ", ".join(f"{r.name} {o.python_version}" for r, o in zip(recipes, owners))
            )
        )
    try:
        return interpreters.find(versions[0], python=python, backend=" and ".join(r.name for r in recipes))
    except interpreters.WrongInterpreter as exc:
        raise KbtoolError(str(exc))


@env.command("use")
@click.argument("name", shell_complete=complete_environment)
@click.option(
    "--python",
    "python",
    required=True,
    metavar="PATH",
    help="An interpreter that already has the backend's packages (a conda env, a GPU machine's Python).",
)
@click.option("--force", is_flag=True, help="Replace a registration, or delete the venv kbtool built for NAME.")
def env_use(name: str, python: str, force: bool) -> None:
    """Run backend NAME on an interpreter you already have.

    No venv is built for NAME. The interpreter must import the backend (checked now; its versions are
    recorded). kbtool installs nothing into it; `kbtool env remove NAME` drops the registration and leaves the
    interpreter alone.

    \b
    Examples:
      kbtool env use keras3-jax --python /opt/conda/envs/jax/bin/python
      kbtool env use keras3-torch --python /usr/bin/python3 --force
    """
    from kbtool.runners import envs

    (recipe,) = _recipes((name,), False)
    with interruptible("env use", "nothing was registered"):
        record = envs.use(recipe, python, force=force, log=lambda line: click.echo(f"kbtool: {line}", err=True))
    versions = ", ".join(f"{k} {v}" for k, v in record["versions"].items())
    shared = "" if recipe.env_owner == recipe.name else f" (the {recipe.env_owner} env, which {recipe.name} runs in)"
    click.echo(f"{recipe.name}: uses {record['python']} (Python {record['python_version']}: {versions}){shared}")


@env.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the environments as JSON: one object each.")
def env_list(as_json: bool) -> None:
    """List the environments and whether they are installed.

    Exit code 2 when one is broken (the reason follows the list).

    \b
    Examples:
      kbtool env list
      kbtool env list --json
    """
    from kbtool.runners import envs, releases
    from kbtool.runners.registry import RECIPES

    recipes = list(RECIPES.values()) + [releases.recipe(r) for r in releases.installed()]
    infos = [envs.describe(r) for r in recipes]
    if as_json:
        click.echo(json.dumps(infos, indent=2))
    else:
        width = max(len(info["name"]) for info in infos)  # the names line up, keras3-tensorflow's too
        for info in infos:
            if info.get("problem"):
                state = "broken (see the error below)"
            elif info.get("external"):
                state = "uses {} (Python {})".format(info["python"], info.get("python_reports"))
            elif info["installed"]:
                state = "installed {} ({} MB)".format(info["created"], info["size_mb"])
            else:
                state = "not installed"
            link = " -> {}".format(info["symlink_to"]) if info.get("symlink_to") else ""
            click.echo("{:<{w}} {:<40} {}{}".format(info["name"], state, info["path"], link, w=width))
    for leftover in _leftovers([r.env_dir() for r in recipes] + [info["path"] for info in infos]):
        click.echo(
            f"kbtool: note: {leftover}: not an env kbtool can name (a leftover; delete it if not yours)", err=True
        )
    problems = [info["problem"] for info in infos if info.get("problem")] + releases.problems()
    for problem in problems:  # every environment is listed first; then one line per broken one
        click.echo(f"kbtool: error: {problem}", err=True)
    if problems:
        sys.exit(2)


def _leftovers(known: List[str]) -> List[str]:
    """The folders under kbtool's envs that are no env it names (a half install, a release folder it cannot read
    back): `env list` says them rather than hide them."""
    from kbtool.runners.base import envs_dir

    root, seen = envs_dir(), {os.path.abspath(path) for path in known}
    releases_root = os.path.join(root, "releases")
    found = [os.path.join(root, name) for name in _folders(root) if name != "releases"]
    for base in _folders(releases_root):
        found += [os.path.join(releases_root, base, name) for name in _folders(os.path.join(releases_root, base))]
    return [path for path in found if os.path.abspath(path) not in seen]


def _folders(path: str) -> List[str]:
    try:
        return sorted(n for n in os.listdir(path) if os.path.isdir(os.path.join(path, n)))
    except OSError:
        return []


@env.command("system-packages")
@click.argument("names", nargs=-1, shell_complete=complete_environment)
@click.option("--json", "as_json", is_flag=True, help="A JSON list.")
def env_system_packages(names: Tuple[str, ...], as_json: bool) -> None:
    """Print the Debian packages the backends need.

    One per line, from the recipes: those of NAMES, or of every backend. Nothing is printed when they need none.

    \b
    Examples:
      kbtool env system-packages
      kbtool env system-packages --json
      sudo apt-get install -y $(kbtool env system-packages theano)
    """
    from kbtool.runners.registry import system_packages

    packages = system_packages([r.name for r in _recipes(names, False)] if names else None)
    if as_json:
        click.echo(json.dumps(packages))
        return
    for package in packages:
        click.echo(package)


@env.command("remove")
@click.argument("names", nargs=-1, required=True, shell_complete=complete_environment)
def env_remove(names: Tuple[str, ...]) -> None:
    """Delete backend environments.

    A symlinked environment loses the link only, never what it points to. A registered interpreter
    (`kbtool env use`) is dropped and left alone.

    \b
    Examples:
      kbtool env remove theano
      kbtool env remove cntk mxnet
      kbtool env remove 'tensorflow1[keras=2.2.4]'
    """
    from kbtool.reports.text import plural
    from kbtool.runners import envs, releases

    failed = []
    for recipe in _recipes(names, False):
        if recipe.env_owner != recipe.name:  # removing it would remove the env it shares
            click.echo(
                f"kbtool: error: {recipe.name} runs in the {recipe.env_owner} env and has none of its own: `kbtool env remove {recipe.env_owner}` removes "
                f"that env (and {recipe.name} with it)",
                err=True,
            )
            failed.append(recipe.name)
            continue
        try:
            click.echo(envs.remove(recipe))
        except KbtoolError as exc:  # the others are still removed
            click.echo(f"kbtool: error: {exc}", err=True)
            failed.append(recipe.name)
            continue
        layered = [r.name for r in releases.installed(recipe.name)] if recipe.release is None else []
        if layered:
            click.echo(
                "note: {} layered on it and will not run until it is reinstalled: {}".format(
                    plural(len(layered), "release env is", "release envs are"), ", ".join(layered)
                )
            )
    if failed:
        sys.exit(2)


# ---------------------------------------------------------------------------- backends
@click.command()
@click.option(
    "--json", "as_json", is_flag=True, help="Print a JSON list: each backend's status, versions, reason and `cached`."
)
@click.option(
    "--backend",
    "names",
    multiple=True,
    help="Also probe a custom backend module (repeatable).",
    shell_complete=complete_backend,
)
@click.option("--refresh", is_flag=True, help="Start every backend's worker again instead of reusing kept answers.")
def backends(as_json: bool, names: Tuple[str, ...], refresh: bool) -> None:
    """Show each backend's status, interpreter and versions.

    Says why a backend is unavailable; * marks the active backend (keras.json's, or KERAS_BACKEND's). Three names
    contain numpy: numpy is kbtool's NumPy reference itself, keras-numpy Keras 2.3.1's numpy_backend (an oracle),
    keras3-numpy Keras 3's NumPy engine.

    An available backend's answer is kept (KBTOOL_HOME/probes.json) and reused while its env, interpreter and
    packages are unchanged, so a second call answers within a second; --refresh starts each worker again.
    Installed releases (`tensorflow1[keras=2.2.4]`) are counted per base, not probed: --backend NAME probes one.

    \b
    Examples:
      kbtool backends
      kbtool backends --refresh --json
      kbtool backends --backend my_package.my_module
      kbtool backends --backend 'tensorflow1[keras=2.2.4]'
    """
    from kbtool.interrupts import Interrupted, Interrupts
    from kbtool.runners import releases
    from kbtool.runners.base import envs_dir
    from kbtool.runners.names import canonical_names
    from kbtool.runners.probe_cache import ProbeCache, probe_all, wanted_backends
    from kbtool.runners.session import Cancel, probe

    envs_dir()  # a KBTOOL_HOME or envs folder that is not a folder: one line, before any worker starts
    cache = ProbeCache()
    active, active_from = _active_backend()
    wanted = wanted_backends(canonical_names(names))
    cancel = Cancel()
    status = _StatusLine(live=not as_json and sys.stderr.isatty() and os.environ.get("TERM") != "dumb")
    try:
        with Interrupts(cancel, "no backend is reported", raise_in_main=True):
            pending = probe_all(wanted, cache, cancel, probe, refresh=refresh)
            infos = _gather(pending, wanted, active, active_from, as_json, status)
    except Interrupted as stop:
        if status.shown:
            status("")
        sys.exit(128 + stop.signum)
    problem = cache.save()
    if problem:
        click.echo(f"kbtool: warning: {problem} (answers were not kept for next time){_invalid_note(cache)}", err=True)
    for line in releases.problems():  # a release folder kbtool cannot list: said, the backends still shown
        click.echo(f"kbtool: warning: {line}", err=True)
    if as_json:
        click.echo(json.dumps(infos, indent=2))
        return
    kept = sum(1 for info in infos if info.get("cached"))
    if kept:
        click.echo(f"{kept} of {len(infos)} answers kept from earlier runs (envs unchanged); --refresh asks again")
    said = _releases_line(wanted)
    if said:
        click.echo(said)


def _invalid_note(cache: Any) -> str:
    """What a cache file that could not be rewritten still holds that was ignored (a malformed entry), and the way
    out; empty when it held none."""
    if not cache.invalid:
        return ""
    name, why = next(iter(sorted(cache.invalid.items())))
    more = f" and {len(cache.invalid) - 1} more" if len(cache.invalid) > 1 else ""
    return (
        f"; its invalid entries ({name}: {why}{more}) were ignored: `kbtool backends --refresh` rewrites {cache.path}"
    )


class _StatusLine:
    """The one line on a live stderr that says which workers are still starting (rewritten in place)."""

    def __init__(self, live: bool) -> None:
        self.live = live
        self.shown = False

    def __call__(self, text: str) -> None:
        if self.live:
            sys.stderr.write("\r\x1b[K" + text[: _width() - 1])
            sys.stderr.flush()
            self.shown = bool(text)


def _gather(
    pending: List[Tuple[str, Any]],
    wanted: List[str],
    active: Optional[str],
    active_from: str,
    as_json: bool,
    status: _StatusLine,
) -> List[Dict[str, Any]]:
    """Each backend's answer in order as its probe finishes, its row printed then (unless --json)."""
    started = time.monotonic()
    name_w = max([len("backend")] + [len(n) for n in wanted])
    if not as_json:
        click.echo(_backends_legend(active, active_from, wanted))
        click.echo("  {:<{w}} {:<13} {:<8} {}".format("backend", "status", "python", "versions, or why not", w=name_w))
    infos, told = [], False
    for index, (name, future) in enumerate(pending):
        while True:
            try:
                info: Dict[str, Any] = future.result(timeout=0.25)
                break
            except TimeoutError:
                waiting = [n for n, f in pending[index:] if not f.done()]
                if not status.live and not told and not as_json:
                    told = True
                    click.echo(f"kbtool: starting {len(waiting)} backends' workers (up to ~20 s)...", err=True)
                status(
                    "starting {} of {} workers ({}) {:.0f} s".format(
                        len(waiting), len(wanted), ", ".join(waiting), time.monotonic() - started
                    )
                )
        info["active"] = name == active
        infos.append(info)
        if not as_json:
            status("")
            for line in _backend_rows(info, name_w):
                click.echo(line)
    status("")
    return infos


def _releases_line(wanted: List[str]) -> Optional[str]:
    """The installed releases `kbtool backends` did not probe, counted per base (a worker each would take minutes)."""
    import collections
    import textwrap

    from kbtool.runners import releases

    counts = collections.Counter(r.base for r in releases.installed() if r.name not in wanted)
    if not counts:
        return None
    text = "installed releases, not probed: {} (`kbtool env list` names them; --backend NAME probes one)".format(
        ", ".join(f"{base} ×{count}" for base, count in counts.items())
    )
    return textwrap.fill(text, width=max(40, _width() - 1), break_on_hyphens=False, subsequent_indent="  ")


def _width() -> int:
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def _active_backend() -> Tuple[Optional[str], str]:
    """(the active backend's name, where it is set) from keras.json or KERAS_BACKEND; (None, why) when unreadable."""
    from kbtool.config import keras_json as config

    try:
        setting = config.effective()["backend"]
    except KbtoolError as exc:
        return None, f"keras.json cannot be read: {exc}"
    source = "KERAS_BACKEND" if setting.source.startswith("environment") else "keras.json"
    if not setting.source.startswith(("environment", "file")):
        source = "the documented default: no keras.json"
    return str(setting.value), source


def _backends_legend(active: Optional[str], active_from: str, wanted: List[str]) -> str:
    if active is None:
        return f"active backend unknown ({active_from})"[: _width()]
    if active in wanted:
        return f"* = the active backend, {active} ({active_from})"
    return f"active backend: {active} ({active_from}), not among these"


def _backend_rows(info: Dict[str, Any], name_w: int) -> List[str]:
    """A backend's row, its detail wrapped under its own column so that no line is wider than the terminal."""
    import textwrap

    detail = ", ".join(f"{k} {v}" for k, v in (info.get("versions") or {}).items()) or info.get("reason", "")
    head = "{} {:<{w}} {:<13} {:<8} ".format(
        "*" if info.get("active") else " ", info["name"], info["status"], info.get("python") or "-", w=name_w
    )
    room = max(20, _width() - len(head))
    lines = textwrap.wrap(detail, room, break_on_hyphens=bool(info.get("versions"))) or [""]
    return [(head + lines[0]).rstrip()] + [" " * len(head) + line for line in lines[1:]]
