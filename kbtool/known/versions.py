"""The versions of each backend's packages, as an entry's `versions: {PKG: PEP 440 specifiers}` is compared with.

The caller builds the lookup before `apply`, which reads no file: what each backend's worker reported (a report's
`backends[].versions`, `reported_versions`), and for a backend that reported nothing (a result judged outside a
check, or a backend that could not start) what its lock pins (`lookup` with the caller's lock reader, such as
kbtool.runners.envs.read_lock; a release's pins over its base's lock before its own lock exists).
"""

from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Tuple, Union

from kbtool.errors import KbtoolError
from kbtool.known.globs import backend_of
from kbtool.runners import names, registry

# an entry's `versions`: (package as the file spells it, PEP 440 specifier set), in the file's order
Ranges = Tuple[Tuple[str, str], ...]
# the versions each backend reported (its worker's hello: {package: version}), by backend name
BackendVersions = Mapping[str, Mapping[str, str]]
# a recipe's lock as {normalised package: "name==version"} (kbtool.runners.envs.read_lock)
LockReader = Callable[[Any], Mapping[str, str]]


class Versions:
    """{normalised package: version} of the backend each result ran on: what its worker reported, else (for a
    backend that reported nothing) what its lock pins, when the caller read the locks; else nothing, which no
    `versions` range is satisfied by."""

    def __init__(
        self, reported: Optional[BackendVersions] = None, locked: Optional[Mapping[str, Mapping[str, str]]] = None
    ) -> None:
        self.reported: Dict[str, Mapping[str, str]] = dict(reported or {})
        self.locked: Dict[str, Mapping[str, str]] = dict(locked or {})

    def of(self, result: Any) -> Dict[str, str]:
        """The versions of the backend `result` ran on (a derived backend's inherited function: its own worker's,
        else its base's)."""
        ran_on = result.get("backend") if isinstance(result, Mapping) else getattr(result, "backend", None)
        for name in (str(ran_on), backend_of(result)):
            if isinstance(self.reported.get(name), Mapping):
                return {names.normalise(str(k)): str(v) for k, v in self.reported[name].items()}
        return dict(self.locked.get(backend_of(result), {}))


def versions_of(result: Any, versions: "Union[Versions, BackendVersions, None]" = None) -> Dict[str, str]:
    """{normalised package: version} of the backend a result ran on, as `versions` (a lookup, or the reported
    versions by backend name) gives them."""
    return as_lookup(versions).of(result)


def as_lookup(versions: "Union[Versions, BackendVersions, None]") -> Versions:
    return versions if isinstance(versions, Versions) else Versions(versions)


def satisfies(have: Mapping[str, str], wanted: Ranges) -> bool:
    """Whether versions {normalised package: version} satisfy every (package, specifiers) pair: a package the backend
    did not report, or a version that is not PEP 440 ('unknown'), does not."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    for package, specifiers in wanted:
        version = have.get(names.normalise(package))
        if version is None:
            return False
        try:
            if not SpecifierSet(specifiers).contains(Version(version), prereleases=True):
                return False
        except (InvalidSpecifier, InvalidVersion):
            return False
    return True


def reported_versions(infos: Any) -> Dict[str, Dict[str, str]]:
    """{backend name: the versions its worker reported} from a report's `backends` (infos without versions, of a
    backend that did not start, are left out)."""
    out: Dict[str, Dict[str, str]] = {}
    for info in infos or []:
        if isinstance(info, Mapping) and isinstance(info.get("name"), str) and isinstance(info.get("versions"), dict):
            out[info["name"]] = {str(k): str(v) for k, v in info["versions"].items()}
    return out


def lookup(results: Iterable[Any], reported: Optional[BackendVersions], read_lock: LockReader) -> Versions:
    """The versions of the backends `results` ran on: what their workers `reported`, and for each backend that
    reported nothing, its lock (read once each, with `read_lock`)."""
    reported = dict(reported or {})
    unreported = []
    for result in results:
        ran_on = result.get("backend") if isinstance(result, Mapping) else getattr(result, "backend", None)
        if not any(isinstance(reported.get(name), Mapping) for name in (str(ran_on), backend_of(result))):
            unreported.append(backend_of(result))
    return Versions(reported, from_locks(unreported, read_lock))


def from_locks(names: Iterable[str], read_lock: LockReader) -> Dict[str, Dict[str, str]]:
    """{backend name: `locked_versions`} of each name, each lock read once."""
    return {name: locked_versions(name, read_lock) for name in dict.fromkeys(names)}


def locked_versions(name: str, read_lock: LockReader) -> Dict[str, str]:
    """{normalised package: version} of a built-in backend (or a release of one) as its lock pins them, for the
    packages its worker reports (a release's pins over its base's lock before its own lock exists); empty for any
    other backend. Used where no worker reported versions (a result judged outside a check)."""
    try:
        recipe = registry.recipe_of(name)
    except KbtoolError:
        return {}
    if recipe is None:
        return {}
    reported = {names.normalise(m) for m in list(recipe.version_of) + ["numpy"]}
    found: Dict[str, str] = {}
    for lock in filter(None, (getattr(recipe, "layered_on", None), recipe.name)):
        owner = registry.RECIPES.get(lock, recipe) if lock != recipe.name else recipe
        try:
            lock = read_lock(owner)
        except KbtoolError:  # an unreadable lock says no version (`kbtool env list` says why)
            lock = {}
        for package, line in lock.items():
            if package in reported:
                found[package] = line.split("==", 1)[1]
    release = getattr(recipe, "release", None)
    for package, version in getattr(release, "pins", ()):
        found[names.normalise(package)] = version
    return found
