"""A built-in backend at other releases of its packages: `tensorflow1[keras=2.2.4]`, `tensorflow[tf-keras=2.16.0]`.

A release backend is its base recipe with some packages pinned to other releases. Its env is a venv of its own, made
from the base env's interpreter and layered on the base env: a `.pth` file puts the base env's site-packages after
its own, so pip installs only what the release changes (keras 2.2.4: one 300 KB wheel; tf-keras 2.16: TensorFlow 2.16
and the dependencies that differ) and the release's own packages shadow the base's. Its lock is generated at its
first install (the env's `pip freeze`, checked against the pins and the recipe) and kept under kbtool's home; a
reinstall installs exactly that lock. The name carries the pins, so reports and known differences tell releases
apart. `--versions PKG=LO..HI` (check, bisect, bench) names every release of PKG the index has in that range.
"""

import dataclasses
import os
import shlex
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from kbtool.errors import KbtoolError
from kbtool.runners import envs, names, recipes
from kbtool.runners.base import envs_dir
from kbtool.runners.names import Release as Release
from kbtool.runners.names import is_release as is_release
from kbtool.runners.names import normalise as normalise
from kbtool.runners.names import requirement_name as requirement_name
from kbtool.runners.recipes import Recipe


def parse(name: str) -> Release:
    """`BASE[PKG=VERSION,...]` as a Release; a KbtoolError (one line) naming what is wrong. The base must be a
    built-in backend with an env, each package one its recipe installs (a package of its recipe or lock)."""
    release = names.parse_release(name, bases=list(recipes.RECIPES))
    releasable = packages_of(recipes.RECIPES[release.base])
    unknown = [p for p, _ in release.pins if p not in releasable]
    if unknown:
        raise KbtoolError(
            "{!r}: {} {} not a package of the {} env; its packages: {}".format(
                name,
                ", ".join(unknown),
                "is" if len(unknown) == 1 else "are",
                release.base,
                ", ".join(sorted(releasable)),
            )
        )
    return release


def packages_of(recipe: Recipe) -> List[str]:
    """The packages a release of `recipe` may pin: those its env's recipe names, and those its lock pins."""
    owner = recipes.RECIPES.get(recipe.env_owner, recipe)
    named = [requirement_name(p) for p in owner.packages]
    return sorted(set(named) | set(envs.read_lock(owner)))


def recipe(release: Release) -> Recipe:
    """The Recipe of `release`: its base's (module, variants, known settings), with the pinned packages."""
    base = recipes.RECIPES[release.base]
    owner = recipes.RECIPES.get(base.env_owner, base)
    pins = dict(release.pins)
    wanted: Dict[str, str] = {}
    for package in owner.packages:
        name = requirement_name(package)
        wanted[name] = f"{name}=={pins[name]}" if name in pins else package
    for package, version in pins.items():
        wanted.setdefault(package, f"{package}=={version}")
        for follower in owner.release_couples.get(package, ()):  # tf-keras 2.16 goes with tensorflow 2.16.*
            if follower not in pins:
                wanted[follower] = "{}=={}.*".format(follower, ".".join(version.split(".")[:2]))
    return dataclasses.replace(
        base,
        name=release.name,
        packages=list(wanted.values()),
        env_name=None,
        python_version=owner.python_version,
        bootstrap_packages=list(owner.bootstrap_packages),
        apt_packages=sorted(set(base.apt_packages) | set(owner.apt_packages)),
        release=release,
        layered_on=owner.name,
    )


def recipe_for(name: str) -> Recipe:
    """A built-in backend's recipe by name, a release's included; a KbtoolError for any other name."""
    if name in recipes.RECIPES:
        return recipes.RECIPES[name]
    return recipe(parse(name))


def installed(base: Optional[str] = None) -> List[Release]:
    """The releases whose env folder exists under kbtool's home (of `base`, or of every backend), sorted by base
    then version. A folder kbtool cannot read back as a release is passed over, and so is one it cannot list (a
    file where a base's folder should be: `problems` says it)."""
    root = os.path.join(envs_dir(), "releases")
    found: List[Release] = []
    for name in _listed(root):
        if name not in recipes.RECIPES or (base and name != base):
            continue
        for folder in _listed(os.path.join(root, name)):
            pins = []
            for part in folder.split("+"):
                package, _, version = part.rpartition("-")
                if package and version:
                    pins.append((package, version))
            if pins:
                release = Release(name, tuple(sorted(pins)))
                if release.folder == os.path.join("releases", name, folder):
                    found.append(release)
    return sorted(found, key=lambda r: (r.base, [(p, version_key(v)) for p, v in r.pins]))


def _listed(folder: str) -> List[str]:
    """The names in `folder`, sorted; none when it is missing or cannot be listed (`problems` says why)."""
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def problems() -> List[str]:
    """Why releases under kbtool's home cannot be listed, one line each: envs/releases, or a base's folder in it,
    that is a file or cannot be read. `kbtool env list` and `kbtool backends` say them (no traceback)."""
    root = os.path.join(envs_dir(), "releases")
    said = []
    folders = [root] + [os.path.join(root, name) for name in _listed(root) if name in recipes.RECIPES]
    for folder in folders:
        if not os.path.lexists(folder):
            continue
        try:
            os.listdir(folder)
        except OSError as exc:
            what = "not a directory" if os.path.exists(folder) and not os.path.isdir(folder) else exc.strerror
            said.append(
                f"{folder}: {what}; kbtool keeps release envs in folders there: move it away "
                "(its releases are not listed meanwhile)"
            )
    return said


def version_key(version: str) -> Any:
    from packaging.version import InvalidVersion, Version

    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def parse_range(text: str) -> Tuple[str, str, str]:
    """`PKG=LO..HI` as (package, lo, hi); a KbtoolError when it is not that, or LO is newer than HI."""
    package, lo, hi = names.parse_range(text)
    if version_key(lo) > version_key(hi):
        raise KbtoolError(f"--versions {text!r}: {lo} is newer than {hi}; write the older release first")
    return package, lo, hi


def index_versions(base: str, package: str, runner: Any = None) -> List[str]:
    """The releases of `package` the package index offers to the base env's Python (pip's own configuration: index,
    find-links), oldest first; pre-releases left out. Asked with `pip index versions` in the base env, else in an
    interpreter of its Python version."""
    owner = recipes.RECIPES.get(recipes.RECIPES[base].env_owner, recipes.RECIPES[base])
    python = owner.env_python()
    if not os.path.exists(python):
        python = envs.find_interpreter(owner.python_version, owner.name).path
    argv = [python, "-m", "pip", "--disable-pip-version-check", "index", "versions", package]
    run = runner or subprocess.run
    try:
        proc = run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=envs.pip_environ(), timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KbtoolError(f"cannot ask the package index for {package}'s releases: {exc}")
    text = proc.stdout.decode("utf-8", "replace")
    line = next((ln for ln in text.splitlines() if ln.startswith("Available versions:")), None)
    if proc.returncode != 0 or line is None:
        said = [ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip() and "ignored" not in ln]
        raise KbtoolError(
            "the package index has no release of {} for Python {}{}".format(
                package, owner.python_version, f" ({said[-1].strip()})" if said else ""
            )
        )
    versions = [v.strip() for v in line.split(":", 1)[1].split(",") if v.strip()]
    from packaging.version import InvalidVersion, Version

    final = []
    for version in versions:
        try:
            if not Version(version).is_prerelease:
                final.append(version)
        except InvalidVersion:
            continue
    return sorted(final, key=version_key)


def expand(base: str, text: str, runner: Any = None) -> List[Release]:
    """The releases of `base` that `--versions PKG=LO..HI` names: every release of PKG on the index from LO to HI,
    both included, oldest first. LO and HI must be releases the index has (a typo is said, not widened)."""
    package, lo, hi = parse_range(text)
    if base not in recipes.RECIPES:
        raise KbtoolError(
            f"--versions applies to a built-in backend with an env ({', '.join(recipes.RECIPES)}), not {base}"
        )
    parse(f"{base}[{package}={lo}]")  # the package must be one of the env's
    versions = [names.normalise_version(v) for v in index_versions(base, package, runner=runner)]  # as names are
    missing = [v for v in (lo, hi) if v not in versions]
    if missing:
        near = ", ".join(versions[-8:])
        raise KbtoolError(
            "--versions {}: the index has no {} {} (its releases: {}{})".format(
                text, package, " or ".join(missing), "... " if len(versions) > 8 else "", near
            )
        )
    chosen = [v for v in versions if version_key(lo) <= version_key(v) <= version_key(hi)]
    return [Release(base, ((package, v),)) for v in chosen]


def refuse_missing_base(backends: Sequence[str]) -> None:
    """--versions (check, bench) installs the releases it lacks, never the env they are layered on unasked (minutes
    and gigabytes, as bisect's rule): a one-line KbtoolError naming the install command when a release among
    `backends` must be installed and its base env is not installed."""
    for name in backends:
        if not is_release(name) or is_installed(name):
            continue
        base = recipe_for(name).layered_on
        if base and not is_installed(base):
            raise KbtoolError(
                f"{name} is layered on the {base} env, which is not installed: `kbtool env install {shlex.quote(base)}` "
                "installs it (--versions installs only the releases)"
            )


def base_name(name: str) -> str:
    """The base backend of a release name (the name itself for any other backend): names.base_of."""
    return names.base_of(name)


def sorted_by_release(backends: Sequence[str]) -> List[str]:
    """Backend names with each base's releases in version order after it."""

    def key(name: str) -> Any:
        if not is_release(name):
            return (name, 0, [])
        release = parse(name)
        return (release.base, 1, [(p, version_key(v)) for p, v in release.pins])

    return sorted(backends, key=key)


# --- the sweep's backends, and the one loop that installs releases (check's sweep, bisect, bench --versions) -------


def expand_backends(backends: Sequence[str], text: str, runner: Any = None) -> List[str]:
    """`kbtool check --versions PKG=LO..HI`: `backends` with each built-in backend whose env has the package of
    `text` replaced, where it stands, by its releases in that range (expand: every release the package index has
    from LO to HI, oldest first); a backend without PKG (another engine, a custom module, a release already pinned)
    stays as named; duplicates said once. A KbtoolError (one line) when none has it, or when the range is malformed
    or not on the index."""
    package, _, _ = parse_range(text)
    expanded: List[str] = []
    swept = []
    for name in backends:
        if name in recipes.RECIPES and package in packages_of(recipes.RECIPES[name]):
            swept.append(name)
            expanded.extend(r.name for r in expand(name, text, runner=runner))
        else:
            expanded.append(name)
    if not swept:
        raise KbtoolError(
            "--versions {}: no backend named has {} in its env ({}); name a built-in backend that installs it, "
            "e.g. --backend tensorflow1 --versions keras=2.2.4..2.3.1".format(
                text.strip(), package, ", ".join(backends)
            )
        )
    return list(dict.fromkeys(expanded))


def is_installed(name: str) -> bool:
    """Whether the env of backend `name` (a built-in backend or a release of one) has its install record."""
    return os.path.exists(os.path.join(recipe_for(name).env_dir(), envs.RECORD))


@dataclass(frozen=True)
class Installed:
    """What came of installing one release: its time, the error (None: installed), every line the install said,
    and the envs that failed (the release's, or its base env's)."""

    name: str
    seconds: float
    error: Optional[str] = None
    said: Tuple[str, ...] = ()
    failed: Tuple[str, ...] = ()


def _quiet(*args: Any) -> None:
    """Says nothing."""


def install_releases(
    backends: Sequence[str],
    started: Callable[[int, int, str], None] = _quiet,
    finished: Callable[[Installed], None] = _quiet,
    out: Callable[[str], None] = _quiet,
    err: Callable[[str], None] = _quiet,
    install: Optional[Callable[[Recipe], Optional[str]]] = None,
) -> List[Installed]:
    """The one loop that installs releases: each release among `backends` whose env is not installed yet, in order,
    one at a time (envs.install_all; its base env first where that is missing), timed. `started(i, n, name)` before
    each and `finished(outcome)` after it say what the command says; `out` and `err` get what the install says as it
    comes (every line is kept in the outcome too). One that fails never stops the others. `install(recipe)` (tests)
    installs one release instead and returns its error, None when it worked."""
    missing = [n for n in backends if is_release(n) and not is_installed(n)]
    outcomes: List[Installed] = []
    for i, name in enumerate(missing, 1):
        started(i, len(missing), name)
        said: List[str] = []
        start = time.monotonic()
        failed: List[str] = []
        try:
            recipe = recipe_for(name)
            if install is not None:
                error = install(recipe)
                failed = [name] if error is not None else []
            else:
                failed = envs.install_all([recipe], False, out=_keep(said, out), err=_keep(said, err))
                error = _error_of(said) if failed else None
        except KbtoolError as exc:
            error, failed = str(exc), [name]
        outcome = Installed(name, time.monotonic() - start, error, tuple(said), tuple(failed))
        finished(outcome)
        outcomes.append(outcome)
    return outcomes


def _keep(said: List[str], also: Callable[[str], None]) -> Callable[[str], None]:
    def say(line: str) -> None:
        said.append(line)
        also(line)

    return say


def _error_of(said: Sequence[str]) -> str:
    """The error a failed install said last (its `kbtool: error:` line), else its last line."""
    errors = [line[len("kbtool: error: ") :] for line in said if line.startswith("kbtool: error: ")]
    return errors[-1] if errors else (said[-1].strip() if said else "the install failed")


def install_missing(
    backends: Sequence[str],
    say: Callable[[str], None],
    install: Optional[Callable[[Recipe], Optional[str]]] = None,
) -> Dict[str, str]:
    """`kbtool check --versions`: install each release of `backends` that is not installed yet, in order; returns
    {name: why} for those that failed (a backend that did not run, never the end of the check). `say` gets a
    progress line per release ("installing 2 of 5 releases: ...") and what came of it, with its time; pip's own
    progress is kept, not said."""

    def started(i: int, n: int, name: str) -> None:
        say(f"kbtool: installing {i} of {n} releases: {name}")

    def finished(outcome: Installed) -> None:
        if outcome.error is None:
            say(f"kbtool: installed {outcome.name} in {outcome.seconds:.1f} s")
        else:
            say(f"kbtool: {outcome.name} could not be installed ({outcome.seconds:.1f} s): {outcome.error}")

    outcomes = install_releases(backends, started, finished, install=install)
    return {o.name: f"could not be installed: {o.error}" for o in outcomes if o.error is not None}
