"""The one grammar of backend names: what a name says by its shape alone, without asking which backends exist.

Three shapes:

- a plain name: a built-in backend (`tensorflow1`, `keras3-jax`) or a custom module on kbtool's own Python
  (`my_backend`, `my_package.my_module`);
- a release `BASE[PKG=VERSION,...]` (`tensorflow1[keras=2.2.4]`): a built-in backend with packages pinned to other
  releases. Its one canonical spelling has the packages PEP 503-normalised and sorted and the versions PEP
  440-normalised (`tensorflow1[Keras=2.2.04]` and `tensorflow1[keras=2.2.4]` are one backend);
- a custom module run inside a managed env, `module.path@ENV` (`my_package.my_module@tensorflow`).

Everything that reads a name calls this module; whether a base or an env exists is the registry's question
(kbtool/runners/registry.py), and whether a pinned package is the env's is releases.py's. It imports nothing of
kbtool beyond the ground floor, so any layer may import it.
"""

import importlib.machinery
import importlib.util
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Collection, Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple

from kbtool.errors import KbtoolError
from kbtool.vocabulary import MODULE_PATH

RELEASE = re.compile(r"^(?P<base>[A-Za-z0-9_.-]+)\[(?P<pins>[^\[\]]*)\]$")
PIN = re.compile(r"^(?P<package>[A-Za-z0-9][A-Za-z0-9._-]*)=(?P<version>[0-9][A-Za-z0-9.+!-]*)$")
RANGE = re.compile(
    r"^(?P<package>[A-Za-z0-9][A-Za-z0-9._-]*)=(?P<lo>[0-9][A-Za-z0-9.+!-]*)\.\.(?P<hi>[0-9][A-Za-z0-9.+!-]*)$"
)
MAX_VERSION = 128  # characters: a PEP 440 release is far shorter, and the pin is part of a folder's name (255 at most)
MAX_NAME = 1000  # characters of a release name
REQUIREMENT_END = re.compile(r"[<>=!~;\[ ]")  # where a requirement's package name ends (`keras>=2`, `jax[cpu]`)


def normalise(package: str) -> str:
    """A package (or module) name as PEP 503 compares them: Keras, keras, tf_keras and tf-keras name two packages."""
    return re.sub(r"[-_.]+", "-", package.strip()).lower()


def normalise_version(version: str) -> str:
    """A version as PEP 440 spells it (`2.2.04` -> 2.2.4, `1.0.0-post1` -> 1.0.0.post1); one PEP 440 cannot read, as
    it is (pip then says what it makes of it)."""
    from packaging.version import InvalidVersion, Version

    try:
        return str(Version(version.strip()))
    except InvalidVersion:
        return version.strip()


def same_version(one: str, other: str) -> bool:
    """Whether two spellings name one release (PEP 440: `2.2.4` and `2.2.04`)."""
    return normalise_version(one) == normalise_version(other)


def requirement_name(requirement: str) -> str:
    """The normalised package a requirement or lock line names (`tf-keras==2.21.*` -> tf-keras)."""
    return normalise(REQUIREMENT_END.split(requirement, maxsplit=1)[0])


@dataclass(frozen=True)
class Release:
    """A base backend with packages pinned: ("tensorflow1", (("keras", "2.2.4"),)). Pins are sorted by package."""

    base: str
    pins: Tuple[Tuple[str, str], ...]

    @property
    def name(self) -> str:
        """The canonical spelling: `BASE[pkg=version,...]`, packages normalised and sorted."""
        return "{}[{}]".format(self.base, ",".join(f"{p}={v}" for p, v in self.pins))

    @property
    def folder(self) -> str:
        """Its env's folder under envs/releases/<base>/ (no brackets or '=' in paths pip and shells see)."""
        return os.path.join("releases", self.base, "+".join(f"{p}-{v}" for p, v in self.pins))

    def version_of(self, package: str) -> Optional[str]:
        return dict(self.pins).get(normalise(package))

    def describe_pins(self) -> str:
        """The pins in words: `keras 2.2.4, numpy 1.16.6`."""
        return ", ".join(f"{p} {v}" for p, v in self.pins)

    def mismatches(self, reported: Mapping[str, Any]) -> List[str]:
        """How `reported` (module or package -> version: a worker's hello, `env use`'s probe, a lock) differs from
        the pins, in words (`keras 2.3.1 (its name says 2.2.4)`); a pin whose package is not reported is not judged
        here (the install checked it)."""
        have = {normalise(str(k)): str(v) for k, v in reported.items()}
        return [
            f"{package} {have[package]} (its name says {version})"
            for package, version in self.pins
            if package in have and not same_version(have[package], version)
        ]


def is_release(name: object) -> bool:
    """Whether `name` has a release's shape (`BASE[...]`; parse_release says whether it is well formed)."""
    return isinstance(name, str) and name.endswith("]") and "[" in name


def shorten(text: str, most: int = 80) -> str:
    """`text` as an error quotes it: whole when short, else its start and its length (a 5 KB name is not echoed)."""
    return repr(text) if len(text) <= most else f"{text[:most]!r}... ({len(text)} characters)"


def check_version(version: str, where: str) -> str:
    """`version` when it is short enough to be a release; a KbtoolError naming `where` it was read, otherwise."""
    if len(version) > MAX_VERSION:
        raise KbtoolError(
            f"{where}: version {shorten(version, 40)} is longer than {MAX_VERSION} characters, not a release"
        )
    return version


def parse_release(name: str, bases: Optional[Collection[str]] = None) -> Release:
    """`BASE[PKG=VERSION,...]` as a Release, its pins normalised and sorted; a KbtoolError (one line) naming what is
    wrong. With `bases` (the built-in backends that have an env), a base outside them is refused too. A version
    over MAX_VERSION characters is refused (it names the env's folder)."""
    if len(name) > MAX_NAME:  # every message below quotes the name whole: say it short
        raise KbtoolError(
            f"{shorten(name)}: longer than {MAX_NAME} characters, not a release name (a version has at most "
            f"{MAX_VERSION})"
        )
    match = RELEASE.match(name.strip())
    if not match:
        raise KbtoolError(f"{name!r}: a release is written BACKEND[PACKAGE=VERSION], e.g. tensorflow1[keras=2.2.4]")
    base = match.group("base")
    if bases is not None and base not in bases:
        raise KbtoolError(
            "{!r}: {} is not a built-in backend with an env of its own; releases of {} can be asked".format(
                name, base, ", ".join(bases)
            )
        )
    pins: Dict[str, str] = {}
    for part in filter(None, (p.strip() for p in match.group("pins").split(","))):
        pin = PIN.match(part)
        if not pin:
            raise KbtoolError(f"{name!r}: {part!r} is not PACKAGE=VERSION (e.g. keras=2.2.4)")
        package = normalise(pin.group("package"))
        if package in pins:
            raise KbtoolError(f"{name!r}: {package} is pinned twice")
        pins[package] = normalise_version(check_version(pin.group("version"), shorten(name)))
    if not pins:
        raise KbtoolError(f"{name!r}: name at least one PACKAGE=VERSION in the brackets, e.g. {base}[keras=2.2.4]")
    return Release(base, tuple(sorted(pins.items())))


def read_release(name: str) -> Optional[Release]:
    """The Release a name spells, None when it is not a well-formed release name (a plain or custom name)."""
    if not is_release(name):
        return None
    try:
        return parse_release(name)
    except KbtoolError:
        return None


def canonical(name: str) -> str:
    """A backend name as kbtool writes it: a release's pins normalised and sorted (its packages are not checked);
    any other name, or a malformed release, as it is."""
    release = read_release(name)
    return release.name if release is not None else name


def canonical_names(given: Iterable[str]) -> Tuple[str, ...]:
    """Backend names as kbtool writes them (`canonical`), each once, in the order first given: every command that
    takes names (`--backend`, `env install/remove/use`) reads them through this, so that two spellings of one release
    run once, under one name."""
    return tuple(dict.fromkeys(canonical(name) for name in given))


def base_of(name: str) -> str:
    """The base backend a release name is a release of (`tensorflow1[keras=2.2.4]` -> tensorflow1); any other name
    is its own base."""
    return name.split("[", 1)[0] if is_release(name) else name


def pins_text(name: str) -> str:
    """The bracketed part of a release name (`[keras=2.2.4]`), empty for any other name."""
    return "[" + name.split("[", 1)[1] if is_release(name) else ""


class Custom(NamedTuple):
    """A custom module's name read apart: `my_package.my_module@tensorflow` -> (module, env "tensorflow")."""

    module: str
    env: str  # the managed env it runs in; "" for kbtool's own Python


def split_custom(name: str) -> Custom:
    """`module[@ENV]` read apart (any name: a plain name is a module without an env)."""
    module, _, env = name.partition("@")
    return Custom(module, env)


def is_custom(name: str) -> bool:
    """Whether `name` has a custom module's shape: a dotted module path, optionally `@ENV`."""
    return bool(MODULE_PATH.fullmatch(split_custom(name).module))


def env_name(name: str) -> str:
    """The name of the backend whose env `name` runs in by its shape: ENV of `module@ENV`, else the name itself."""
    return split_custom(name).env if "@" in name else name


def parse_range(text: str) -> Tuple[str, str, str]:
    """`PKG=LO..HI` (`--versions`) as (normalised package, lo, hi); a KbtoolError when it is not that shape (the
    order of LO and HI is releases.py's to check: it compares versions)."""
    match = RANGE.match(text.strip())
    if not match:
        raise KbtoolError(f"--versions {shorten(text)}: write PACKAGE=LOW..HIGH, e.g. keras=2.2.4..2.3.1")
    where = f"--versions {shorten(text.strip())}"
    return (
        normalise(match.group("package")),
        normalise_version(check_version(match.group("lo"), where)),
        normalise_version(check_version(match.group("hi"), where)),
    )


def importable(module: str) -> bool:
    """Whether a custom backend's `module` can be found on kbtool's path, PYTHONPATH or the current directory (without importing it)."""
    try:
        return _find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def module_source(module: str) -> Optional[str]:
    """The path of a custom backend's `module`'s Python source, found as `importable` finds it (the module itself
    is not imported; a parent package is, as find_spec does); None when it is not found or has no .py source (an
    extension module, a namespace package)."""
    try:
        spec = _find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) if spec is not None else None
    return origin if isinstance(origin, str) and origin.endswith(".py") and os.path.isfile(origin) else None


def _find_spec(module: str) -> Optional[importlib.machinery.ModuleSpec]:
    paths = [os.getcwd()] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    added = [p for p in paths if p not in sys.path]
    sys.path[:0] = added
    try:
        return importlib.util.find_spec(module)
    finally:
        for p in added:
            sys.path.remove(p)
