"""How an entry names results: its globs (one regex for a list of them), the backend a result shows, the key a
recorded result is named by, and the part of the backend-name grammar known needs.

The grammar (a release `BASE[PKG=VERSION,...]`, a custom module `pkg.mod@ENV`, PEP 503 package names) is read here
alone in this package, in `_release_base`, `_canonical_release`, `_is_release`, `_is_custom` and
`normalise_package`, until kbtool.runners.names holds the one grammar: then these call it.
"""

import fnmatch
import functools
import re
from typing import Any, List, Mapping, NamedTuple, Optional, Set, Tuple, Union

from kbtool.vocabulary import DEFAULT_DEVICE, MODULE_PATH

Globs = Union[str, Tuple[str, ...]]  # one glob, or a list of globs any of which may match
ResultKey = Tuple[str, str, str, str]  # (op, case, backend, mode): a result among one run's
MAX_PATTERN_CHARS = 1000  # a glob or regex (the shipped file's longest: 214)


def is_globs(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value))


def globs_of(patterns: Any) -> List[str]:
    return [patterns] if isinstance(patterns, str) else list(patterns)


def matches(value: str, patterns: Union[Globs, List[str]]) -> bool:
    """A glob, or a list of globs any of which may match."""
    compiled = glob_regex(patterns)
    return compiled is not None and compiled.match(value) is not None


def glob_regex(patterns: Union[Globs, List[str]]) -> "Optional[re.Pattern[str]]":
    """One regex for a glob or a list of globs (fnmatch's translation, as alternatives): a result is then matched
    in one search, however many globs an entry lists (10,000 globs × 7,500 results took 20 s one by one)."""
    return glob_regex_of(patterns if isinstance(patterns, (str, tuple)) else tuple(patterns))


@functools.lru_cache(maxsize=4096)
def glob_regex_of(patterns: Globs) -> "Optional[re.Pattern[str]]":
    globs = globs_of(patterns)
    return re.compile("|".join(fnmatch.translate(p) for p in globs)) if globs else None


def backend_of(result: Any) -> str:
    """The backend whose behaviour a result shows: a derived backend's inherited function is its base's."""
    inherits = getattr(result, "inherits", None) if not isinstance(result, Mapping) else result.get("inherits")
    return str(inherits or (result["backend"] if isinstance(result, Mapping) else result.backend))


def device_of(result: Any) -> str:
    """The device a result ran on: its `device`, else the CPU (a backend without devices runs there)."""
    device = result.get("device") if isinstance(result, Mapping) else getattr(result, "device", None)
    return str(device or DEFAULT_DEVICE)


def parts(result: Any, *keys: str) -> List[str]:
    return [str(result[k] if isinstance(result, Mapping) else getattr(result, k)) for k in keys]


def result_key(result: Any) -> str:
    """'op case backend mode [device]': how a recorded entry names a result (the backend as `backend_of` gives
    it; the device only when it is not the CPU, so every key recorded before devices existed still names its
    result)."""
    op, case, mode = parts(result, "op", "case", "mode")
    key = f"{op} {case} {backend_of(result)} {mode}"
    device = device_of(result)
    return key if device == DEFAULT_DEVICE else f"{key} {device}"


class Key(NamedTuple):
    """A recorded result key's parts, with the names `KnownEntry.targets` reads."""

    op: str
    case: str
    backend: str
    mode: str
    device: str


def backend_matches(name: str, patterns: Union[Globs, List[str]]) -> bool:
    """Whether backend `name` is one the entry's backend globs name. A release (`tensorflow1[keras=2.2.4]`) is named
    by its exact name (pins in any order, package names as PEP 503 compares them) or by any glob that matches its
    base backend's name: brackets in a backend are a release's, never an fnmatch character class."""
    literal, globbed = _backend_patterns(patterns if isinstance(patterns, (str, tuple)) else tuple(patterns))
    if _is_release(name):
        return _canonical_release(name) in literal or (
            globbed is not None and globbed.match(_release_base(name)) is not None
        )
    return globbed is not None and globbed.match(name) is not None


@functools.lru_cache(maxsize=4096)
def _backend_patterns(patterns: Globs) -> "Tuple[Set[str], Optional[re.Pattern[str]]]":
    """(the release names among the patterns, canonical; one regex for the other globs)."""
    globs = globs_of(patterns)
    literal = {_canonical_release(p) for p in globs if _is_release(p)}
    return literal, glob_regex_of(tuple(p for p in globs if not _is_release(p)))


# the backend-name grammar (kbtool.runners.names will hold it: these then call it)

RELEASE_NAME = re.compile(r"(?P<base>[^\[\]]+)\[(?P<pins>[^\[\]]*)\]\Z")


def _is_release(name: str) -> bool:
    return "[" in name  # (a backend pattern with a bracket is a release name: validation refuses any other)


def _release_base(name: str) -> str:
    """The base backend of a release (`tensorflow1` of `tensorflow1[keras=2.2.4]`); any other name itself."""
    return name.split("[", 1)[0]


def _is_custom(name: str) -> bool:
    """Whether `name` is spelled as a custom module (`pkg.mod`, `mod`, with or without `@ENV`)."""
    return MODULE_PATH.fullmatch(name.split("@", 1)[0]) is not None


def _canonical_release(name: str) -> str:
    """A release name as kbtool writes it (runners/releases.py: pins sorted, packages normalised), without asking
    whether its packages exist; the name itself when it is not BASE[PKG=VERSION,...]."""
    found = RELEASE_NAME.match(name.strip())
    if not found:
        return name
    pins = []
    for part in filter(None, (p.strip() for p in found["pins"].split(","))):
        package, equals, version = part.partition("=")
        if not equals:
            return name
        pins.append((normalise_package(package), version.strip()))
    return "{}[{}]".format(found["base"].strip(), ",".join(f"{p}={v}" for p, v in sorted(pins)))


def normalise_package(package: str) -> str:
    """A package (or module) name as PEP 503 compares them: tf_keras, TF-Keras and tf-keras are one."""
    return re.sub(r"[-_.]+", "-", package.strip()).lower()
