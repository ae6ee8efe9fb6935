"""A release's env layered on its base env (releases.py says why): the base it needs, the `.pth` that layers it, the
lock its first install generates, and what breaks it later (the base removed, or its packages changed)."""

import datetime
import glob
import json
import os
import re
import shlex
import subprocess
from typing import Any, Callable, Dict, List, Optional, Set

from kbtool import files
from kbtool.errors import KbtoolError
from kbtool.runners.envs import children
from kbtool.runners.envs.interpreters import PROBE_SECONDS
from kbtool.runners.envs.record import RECORD, read_record
from kbtool.runners.names import normalise, requirement_name, same_version

CHECK_SECONDS = 120.0  # `pip check` in a release env
PTH = "kbtool-base.pth"  # in the release venv's site-packages: the base env's site-packages, after its own
SITE = "import sysconfig, json; p = sysconfig.get_paths(); print(json.dumps(sorted({p['purelib'], p['platlib']})))"


def _base_recipe(recipe: Any) -> Any:
    from kbtool.runners.recipes import RECIPES

    return RECIPES[recipe.layered_on]


def base_of(recipe: Any) -> Dict[str, Any]:
    """The base env's record (python, python_version, created) and folder; a KbtoolError when it is not installed
    as a venv kbtool built (a release cannot be layered on an interpreter `kbtool env use` registered)."""
    base = _base_recipe(recipe)
    env_dir = base.env_dir()
    path = os.path.join(env_dir, RECORD)
    if not os.path.exists(path):
        raise KbtoolError(
            f"{recipe.name} is layered on the {base.name} env, which is not installed: run `kbtool env install "
            f"{base.name}` first"
        )
    record = read_record(path)
    if record.get("external"):
        raise KbtoolError(
            f"{recipe.name}: the {base.name} env is an interpreter registered by `kbtool env use`; a release is "
            f"layered only on an env kbtool built (`kbtool env remove {base.name}`, then `kbtool env install {base.name}`)"
        )
    python = os.path.join(env_dir, "bin", "python")
    return {
        "python": python,
        "python_version": record.get("python_version"),
        "created": record.get("created"),
        "env_dir": env_dir,
    }


def layer(env_dir: str, base: Dict[str, Any], log: Callable[[str], None]) -> None:
    """Write the `.pth` that puts the base env's site-packages after the release venv's own."""
    mine = _site_dirs(os.path.join(env_dir, "bin", "python"))
    theirs = _site_dirs(base["python"])
    text = "".join(f"{path}\n" for path in theirs)
    for site in mine:
        files.write_atomic(os.path.join(site, PTH), text)
    log(f"layered on {base['env_dir']}: its packages load after this env's own")


def _site_dirs(python: str) -> List[str]:
    try:
        proc = children.wait(
            [python, "-c", SITE], f"{python} to say its site-packages", PROBE_SECONDS, capture_output=True
        )
    except subprocess.TimeoutExpired:
        raise KbtoolError(f"{python}: did not say its site-packages within {PROBE_SECONDS:g} s (killed)")
    if proc.returncode != 0:
        raise KbtoolError(f"{python}: cannot tell its site-packages: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return list(json.loads(proc.stdout.decode()))


def check_pins(recipe: Any, frozen: List[str]) -> None:
    """The release's first install must give every pinned release, and every package its recipe asks, as asked."""
    from packaging.requirements import InvalidRequirement, Requirement

    have = {normalise(line.split("==", 1)[0]): line.split("==", 1)[1] for line in frozen if "==" in line}
    wrong = []
    for package in recipe.packages:
        try:
            requirement = Requirement(package)
        except InvalidRequirement:
            continue
        name = normalise(requirement.name)
        if name not in have:
            wrong.append(f"{name} is missing")
        elif not requirement.specifier.contains(have[name], prereleases=True):
            wrong.append(f"{name} {have[name]} (asked {requirement.specifier})")
    if wrong:
        raise KbtoolError(f"{recipe.name}: the env does not hold what its recipe asks: {'; '.join(wrong)}")


def check_lock(recipe: Any, path: str) -> None:
    """A release's lock must pin each package its name pins, at that version: a lock that lost its lines (edited,
    cut short) would install nothing of the release, and the base's packages would then run under its name.
    Refused before pip runs; no lock at all is a first install, which writes one."""
    if not os.path.exists(path):
        return
    try:
        with open(path) as fh:
            lines = [line.strip() for line in fh if "==" in line and not line.lstrip().startswith("#")]
    except (OSError, UnicodeDecodeError) as exc:
        raise KbtoolError(f"{recipe.name}: cannot read its lock {path}: {getattr(exc, 'strerror', None) or exc}")
    locked = {normalise(line.split("==", 1)[0]): line.split("==", 1)[1].strip() for line in lines}
    wrong = [
        f"{package} {'is missing' if package not in locked else locked[package]} (its name says {version})"
        for package, version in recipe.release.pins
        if package not in locked or not same_version(locked[package], version)
    ]
    if wrong:
        raise KbtoolError(
            f"{recipe.name}: its lock {path} does not pin what its name says: {'; '.join(wrong)}; nothing was "
            f"installed (`kbtool env install '{recipe.name}' --force` resolves it again)"
        )


NO_DEPS = "# kbtool: no-deps"  # a lock line: the release was installed with --no-deps (so are its reinstalls)


def lock_says_no_deps(path: str) -> bool:
    try:
        with open(path) as fh:
            return any(line.strip() == NO_DEPS for line in fh)
    except OSError:
        return False


def pins_text(recipe: Any) -> str:
    return " and ".join(f"{p} {v}" for p, v in recipe.release.pins)


def unmet(pip: List[str], pip_env: Dict[str, str], env_dir: str) -> List[str]:
    """`pip check`'s lines: the requirements the env leaves unmet (a --no-deps release has some by choice)."""
    try:
        proc = children.wait(pip + ["check"], "pip check", CHECK_SECONDS, capture_output=True, env=pip_env, cwd=env_dir)
    except subprocess.TimeoutExpired:
        raise KbtoolError(f"`pip check` did not finish within {CHECK_SECONDS:g} s (killed)")
    text = proc.stdout.decode("utf-8", "replace")
    return [line.strip() for line in text.splitlines() if line.strip() and "No broken requirements" not in line]


# pip check: "keras 2.2.0 has requirement keras-applications==1.0.2, but you have keras-applications 1.0.8."
_UNMET = re.compile(r"^(?P<who>\S+) \S+ has requirement (?P<wants>[^,]+), but you have ")
FOLLOW_ROUNDS = 3  # a requirement's requirement, and one more: old keras pins two packages that pin nothing


def follow_requirements(recipe: Any, install: Callable[[List[str]], Any], pip: List[str], env: Dict[str, str]) -> None:
    """A --no-deps release: install what the pinned packages (and what they brought) require but the env does not
    give them (keras 2.2.0 imports keras_applications' 1.0.2 API), --no-deps again, however the base's packages
    disagree (TensorFlow 1.15 wants keras-applications 1.0.8: `pip check` records that as unmet)."""
    ours = {p for p, _ in recipe.release.pins}
    for _ in range(FOLLOW_ROUNDS):
        wanted = []
        for line in unmet(pip, env, os.path.dirname(os.path.dirname(pip[0]))):
            match = _UNMET.match(line)
            if match and normalise(match.group("who")) in ours:
                wanted.append(match.group("wants").strip())
        if not wanted:
            return
        install(["--no-deps"] + wanted)
        ours |= {requirement_name(w) for w in wanted}


def write_lock(recipe: Any, frozen: List[str], path: str, no_deps: bool = False) -> None:
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    head = (
        f"# every package of the {recipe.name} env, pinned: generated by its first `kbtool env install` on {when}, "
        f"layered on the {recipe.layered_on} env; a reinstall installs exactly these\n"
    )
    if no_deps:
        head += (
            f"{NO_DEPS}\n# installed with --no-deps: {pins_text(recipe)} over the base env, requirements unchecked\n"
        )
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        files.write_atomic(path, head + "".join(f"{line}\n" for line in sorted(frozen, key=str.lower)))
    except OSError as exc:
        raise KbtoolError(f"cannot write {exc.filename or path}: {exc.strerror or exc}")


def base_problem(recipe: Any, record: Dict[str, Any]) -> Optional[str]:
    """Why a release env cannot run although it is installed: its base env was removed, or no longer gives what the
    release's install froze. A base reinstalled or rebuilt with the same packages (every `kbtool env install --all`
    reinstalls it) is the same base to its releases: what counts is the packages, not when the base was built."""
    base = _base_recipe(recipe)
    fix = f"`kbtool env install {shlex.quote(recipe.name)} --force` layers it again"
    path = os.path.join(base.env_dir(), RECORD)
    if not os.path.exists(path):
        return (
            f"{recipe.name} env is broken: its base env {base.name} was removed; `kbtool env install "
            f"{shlex.quote(base.name)}` installs it, then {fix}"
        )
    try:
        base_record = read_record(path)
    except KbtoolError as exc:
        return f"{recipe.name} env is broken: its base env {base.name}: {exc}"
    env_dir = recipe.env_dir()
    if not _own_sites(env_dir):  # without it the base's packages are not seen: not a change of the base
        return f"{recipe.name} env is broken: its {PTH}, which layers it on the {base.name} env, is missing; {fix}"
    gone = [site for site in _layered_sites(env_dir) if not os.path.isdir(site)]
    if gone:
        return f"{recipe.name} env is broken: its base env {base.name} no longer has {gone[0]}; {fix}"
    changed = base_changes(_frozen(base_record.get("installed")), _frozen(record.get("installed")), _own(env_dir))
    if changed:
        more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
        return (
            f"{recipe.name} env is broken: its base env {base.name} changed since it was layered on it "
            f"({', '.join(changed[:3])}{more}); {fix}"
        )
    return None


def base_changes(base: Dict[str, str], release: Dict[str, str], own: Set[str]) -> List[str]:
    """What the base env gives now that the release's install froze otherwise: each package the release does not
    hold in its own site-packages must be there, at the version frozen (`name was -> now`)."""
    said = []
    for name in sorted(set(base) | set(release)):
        if name in own or base.get(name) == release.get(name):
            continue
        said.append(f"{name} {release.get(name, 'absent')} -> {base.get(name, 'gone')}")
    return said


def _frozen(lines: Any) -> Dict[str, str]:
    pairs = (line.split("==", 1) for line in lines or [] if isinstance(line, str) and "==" in line)
    return {normalise(name): version.strip() for name, version in pairs}


def _own_sites(env_dir: str) -> List[str]:
    """The release venv's own site-packages folders: those that hold the `.pth` layering it."""
    return sorted(os.path.dirname(p) for p in glob.glob(os.path.join(env_dir, "lib*", "python*", "*-packages", PTH)))


def _layered_sites(env_dir: str) -> List[str]:
    """The base env's site-packages folders the release's `.pth` files name."""
    sites: List[str] = []
    for own in _own_sites(env_dir):
        try:
            with open(os.path.join(own, PTH)) as fh:
                sites += [line.strip() for line in fh if line.strip() and line.strip() not in sites]
        except OSError:
            continue
    return sites


def _own(env_dir: str) -> Set[str]:
    """The packages installed in the release venv itself (its `*.dist-info` / `*.egg-info` folders), normalised."""
    names = set()
    for site in _own_sites(env_dir):
        for entry in os.listdir(site):
            if entry.endswith((".dist-info", ".egg-info")):
                names.add(normalise(entry.rsplit(".", 1)[0].split("-", 1)[0]))
    return names
