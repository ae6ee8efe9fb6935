"""How an entry names results: its globs (one regex for a list of them), the backend a result shows, the key a
recorded result is named by. Backend names are read by kbtool.runners.names, the one grammar.
"""

import fnmatch
import functools
import re
from typing import Any, List, Mapping, NamedTuple, Optional, Set, Tuple, Union

from kbtool.runners import names
from kbtool.vocabulary import DEFAULT_DEVICE

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
    if names.is_release(name):
        return names.canonical(name) in literal or (
            globbed is not None and globbed.match(names.base_of(name)) is not None
        )
    return globbed is not None and globbed.match(name) is not None


@functools.lru_cache(maxsize=4096)
def _backend_patterns(patterns: Globs) -> "Tuple[Set[str], Optional[re.Pattern[str]]]":
    """(the release names among the patterns, canonical; one regex for the other globs)."""
    globs = globs_of(patterns)
    literal = {names.canonical(p) for p in globs if names.is_release(p)}
    return literal, glob_regex_of(tuple(p for p in globs if not names.is_release(p)))
