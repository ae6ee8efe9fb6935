"""Known differences: recorded backend divergences, each with its reason, re-checked on every run.

An entry (specs/known_differences.yaml) targets results by op, case, backend, mode and status (each a glob or a
list of globs) and explains the targeted results whose message matches its regex. Here it is loaded and checked
(keys, types, regexes, and against the spec: the ops exist, the case globs name cases of those ops), applied
(the first entry that explains a result names it), counted, and aged: an entry that targets results in a run
that covers it, but explains none of them, no longer reproduces and is stale.

Entries are precise enough to gate on, or the file is refused: each lists its ops by name (no glob), narrows them
by a case glob other than '*' or a message regex, and names backends kbtool knows. `kbtool known record REPORT`
then makes them exact: it writes, per entry, `results` (the key and fingerprint, kbtool/known/fingerprint.py, of every
result it explained in that run) and `count`. A recorded entry explains those results alone, each only while its
fingerprint holds: a new failure never hides under an old reason, and a known failure that fails differently is
`changed` (unexplained) in any run, however filtered. An entry with `verified_by` (a variant's case-id suffix such
as Theano's '.kernel_flipped') explains, unrecorded, a result only where that variant of the same call passed, or
is explained by an entry without `verified_by` (a second cause of its own). Derived backends (a custom module
`pkg.mod@ENV`) inherit the entries of their base backend for the functions they share with it (`Result.inherits`).
A base backend's entries apply to its releases (`tensorflow1[keras=2.2.4]`, runners/releases.py: a glob is matched
against the base name, a bracketed name is a release named exactly), and `versions: {PKG: PEP 440 specifiers}` narrows
an entry to the backends whose reported versions (else their lock's) are in range.

The spec's Keras 1.x aliases bring their own entries: a Keras 2 backend that lacks the old name is explained by
the rename, and such an entry goes stale like any other once the backend has the name.

The file may be hostile: it is read within kbtool/files.py's limits (a regular file, 20 MB, bounded YAML), every
problem is one line quoting at most ~100 characters of it, and regexes run on the `regex` engine with a time
limit (1 s a search, 5 s for all the searches of one run): a search that times out does not match, and the result
says so in its note. A report's embedded entries (for `kbtool report merge`) are held to the same rules and limits.
"""

import fnmatch
import functools
import re
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
    cast,
)

import regex

from kbtool import files, paths
from kbtool.errors import KbtoolError
from kbtool.results import Result, Status
from kbtool.runners import names
from kbtool.vocabulary import DEFAULT_DEVICE, DEVICES

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.specs.loader import Spec

Globs = Union[str, Tuple[str, ...]]  # one glob, or a list of globs any of which may match
Number = Union[int, str]  # an entry's number in its file, or "spec alias" for the spec's own entries
ResultKey = Tuple[str, str, str, str]

# the helpers of files.py and paths.py, typed for this module (they are not annotated), looked up at each call


def _clip(value: Any, limit: Optional[int] = None) -> str:
    clip = cast(Callable[..., str], files.clip)
    return clip(value) if limit is None else clip(value, limit)


def _quote(value: Any) -> str:
    return cast(Callable[[Any], str], files.quote)(value)


def _one_line(text: Any) -> str:
    return cast(Callable[[Any], str], files.one_line)(text)


def _read_text(path: str, missing_ok: bool = False) -> Optional[str]:
    return cast(Callable[..., Optional[str]], files.read_text)(path, missing_ok=missing_ok)


def _parse_yaml(path: str, text: str) -> Tuple[Any, Any]:
    return cast(Callable[[str, str], Tuple[Any, Any]], files.parse_yaml)(path, text)


def _known_file() -> str:
    return paths.known_differences_file()


GLOB_KEYS = ("op", "case", "backend", "mode", "device", "status")
KEYS = GLOB_KEYS + ("versions", "match", "reason", "count", "verified_by", "results")
ENTRY_FIELDS = (
    "op",
    "case",
    "backend",
    "mode",
    "device",
    "status",
    "versions",
    "match",
    "reason",
    "count",
    "verified_by",
    "source",
    "results",
)
REQUIRED = ("op", "backend", "reason")  # `count` is required too, but checked after the rest (a clearer first problem)
OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # an entry lists its ops by name: no glob may stand for them
GLOB_CHARS = re.compile(r"[*?\[]")
# the backends that implement Keras 2 names only (the reference, numpy, answers the Keras 1.x names too);
# "*.*" is any custom backend module
KERAS2_BACKENDS = ["tensorflow", "tensorflow1", "theano", "cntk", "mxnet", "plaidml", "keras3", "keras3-*", "*.*"]
# the forms earlier kbtools wrote alias entries in: a report they wrote still loads (before the keras3-* backends)
EARLIER_KERAS2_BACKENDS = [["tensorflow", "tensorflow1", "theano", "cntk", "mxnet", "plaidml", "keras3", "*.*"]]
REGEX_TIMEOUT = 1.0  # seconds one `match` search may take; past it the message does not match
# seconds the searches that time out may cost one `apply` together: once spent, every later search gets
# REGEX_LATE_TIMEOUT, so hostile entries (a report's, for `report merge`) cannot each spend REGEX_TIMEOUT. Only
# timed-out searches count: a plain one (the shipped file's take 0.02 s over the published run) never does, so a
# loaded machine never loses a legitimate match to the budget
REGEX_BUDGET = 5.0
REGEX_LATE_TIMEOUT = 0.01  # a search's limit once the budget is spent (a plain search takes microseconds)
MAX_PATTERN_CHARS = 1000  # a glob or regex (the shipped file's longest: 214)
MAX_GLOBS = 10000  # globs in one file, lists counted item by item (the shipped file: 623)


def _frozen_globs(value: Any) -> Optional[Globs]:
    return None if value is None else value if isinstance(value, str) else tuple(value)


def _plain(value: Optional[Globs]) -> Any:
    return list(value) if isinstance(value, tuple) else value


# an entry's `versions`: (package as the file spells it, PEP 440 specifier set), in the file's order
Versions = Tuple[Tuple[str, str], ...]
# the versions each backend reported (its worker's hello: {package: version}), by backend name
BackendVersions = Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class KnownEntry:
    """One validated entry: built once from the file's (or a report's) validated dict, then asked whether it
    targets or explains a result; nothing else reads entries by key. Absent optional keys are None; `number` is
    the entry's number in its file (counted from 1, as problems name it), or 'spec alias'."""

    op: Globs
    backend: Globs
    reason: str
    case: Optional[Globs] = None
    mode: Optional[Globs] = None
    # the devices its results ran on (--device; a glob or a list); None: any device, as before devices existed
    device: Optional[Globs] = None
    status: Optional[Globs] = None
    # the releases of its backends' packages it is about ({package: PEP 440 specifiers}); None: every release
    versions: Optional[Versions] = None
    match: Optional[str] = None
    count: Optional[int] = None
    verified_by: Optional[str] = None
    source: Optional[str] = None
    # the machine part `kbtool known record` writes: {result key: fingerprint} of every result the entry explained
    # in the recorded run (None: never recorded, the entry explains by status and regex alone)
    results: Optional[Mapping[str, str]] = field(default=None, compare=False, repr=False)
    number: Number = field(default=0, compare=False)
    keys: Tuple[str, ...] = field(default=(), compare=False, repr=False)  # the dict's key order, kept for to_dict

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any], number: Number = 0) -> "KnownEntry":
        """From a dict that passed `validate` (or an alias entry of the spec)."""
        return cls(
            op=_frozen_globs(entry["op"]) or "",
            backend=_frozen_globs(entry["backend"]) or "",
            reason=entry["reason"],
            case=_frozen_globs(entry.get("case")),
            mode=_frozen_globs(entry.get("mode")),
            device=_frozen_globs(entry.get("device")),
            status=_frozen_globs(entry.get("status")),
            versions=tuple((str(k), str(v)) for k, v in entry["versions"].items())
            if isinstance(entry.get("versions"), dict)
            else None,
            match=entry.get("match"),
            count=entry.get("count"),
            verified_by=entry.get("verified_by"),
            source=entry.get("source"),
            results=dict(entry["results"]) if isinstance(entry.get("results"), dict) else None,
            number=number,
            keys=tuple(str(key) for key in entry),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The entry as the file (or the report's known_entries) spells it: keys in the file's order."""
        out: Dict[str, Any] = {}
        order = self.keys + tuple(k for k in ENTRY_FIELDS if k not in self.keys)
        for key in order:
            value = getattr(self, key) if key in ENTRY_FIELDS else None
            if value is not None:
                out[key] = dict(value) if key in ("results", "versions") else _plain(value)
        return out

    @property
    def from_spec(self) -> bool:
        return self.source == "spec"

    @property
    def recorded(self) -> bool:
        """Whether `kbtool known record` recorded the results the entry explains (then it explains those alone)."""
        return self.results is not None

    def targets(self, result: Any, versions: Optional[BackendVersions] = None) -> bool:
        """Whether the entry is about this result (op, case, backend, mode, device, and the backend's versions),
        whatever its outcome. `result` is a Result or anything with op, case, backend and mode (and device: the CPU
        when it has none). A derived backend's result of a function it shares with its base backend (`inherits`) is
        the base's result: the base's entries are about it. A base backend's entries are about its releases too
        (`backend_matches`); an entry with `versions` only about results of a backend whose versions (`versions`,
        by backend name, as the workers reported them; else the backend's lock, `locked_versions`) satisfy them."""
        return self.names(result) and self.in_range(result, versions)

    def names(self, result: Any) -> bool:
        """The globs alone (op, case, backend, mode, device): whether the entry names this result, whatever the
        versions of its backend."""
        return (
            matches(result.op, self.op)
            and matches(result.case, "*" if self.case is None else self.case)
            and backend_matches(backend_of(result), self.backend)
            and matches(result.mode, "*" if self.mode is None else self.mode)
            and (self.device is None or matches(device_of(result), self.device))
        )

    def in_range(self, result: Any, versions: Optional[BackendVersions] = None) -> bool:
        """Whether the versions of the result's backend satisfy the entry's `versions` (always, without them)."""
        if not self.versions:
            return True
        return satisfies(versions_of(result, versions), self.versions)

    def explains(self, result: Result) -> bool:
        """Whether the entry targets the result and the result is a non-passing one with the entry's status and
        message (a regex search that times out does not match)."""
        return self.targets(result) and self.judge(result) is True

    def judge(self, result: Result, timeout: Optional[float] = None) -> Optional[bool]:
        """The status and match condition alone: True, False, or None when the regex timed out on the message."""
        status = Status(result.status)
        if status == Status.PASS or not matches(status.value, "*" if self.status is None else self.status):
            return False
        return True if not self.match else search(self.match, result.message, timeout)


def backend_of(result: Any) -> str:
    """The backend whose behaviour a result shows: a derived backend's inherited function is its base's."""
    inherits = getattr(result, "inherits", None) if not isinstance(result, Mapping) else result.get("inherits")
    return str(inherits or (result["backend"] if isinstance(result, Mapping) else result.backend))


def backend_matches(name: str, patterns: Union[Globs, List[str]]) -> bool:
    """Whether backend `name` is one the entry's backend globs name. A release (`tensorflow1[keras=2.2.4]`) is named
    by its exact name (pins in any order, package names as PEP 503 compares them) or by any glob that matches its
    base backend's name: brackets in a backend are a release's, never an fnmatch character class."""
    literal, globbed = _backend_patterns(patterns if isinstance(patterns, (str, tuple)) else tuple(patterns))
    if _is_release(name):
        base = names.base_of(name)
        return names.canonical(name) in literal or (globbed is not None and globbed.match(base) is not None)
    return globbed is not None and globbed.match(name) is not None


@functools.lru_cache(maxsize=4096)
def _backend_patterns(patterns: Globs) -> "Tuple[Set[str], Optional[re.Pattern[str]]]":
    """(the release names among the patterns, canonical; one regex for the other globs)."""
    globs = _globs(patterns)
    literal = {names.canonical(p) for p in globs if _is_release(p)}
    return literal, _glob_regex_of(tuple(p for p in globs if not _is_release(p)))


def _is_release(name: str) -> bool:
    return "[" in name  # (a backend pattern with a bracket is a release name: validation refuses any other)


normalise_package = names.normalise  # a package (or module) name as PEP 503 compares them (runners/names.py)


def versions_of(result: Any, versions: Optional[BackendVersions] = None) -> Dict[str, str]:
    """{normalised package: version} of the backend a result ran on: what its worker reported (`versions`, by
    backend name: the report's backends[].versions), else what its lock pins (`locked_versions`)."""
    ran_on = result.get("backend") if isinstance(result, Mapping) else getattr(result, "backend", None)
    for name in (str(ran_on), backend_of(result)):
        if versions is not None and isinstance(versions.get(name), Mapping):
            return {normalise_package(str(k)): str(v) for k, v in versions[name].items()}
    if isinstance(versions, _Resolved):
        return versions.locked(backend_of(result))
    return locked_versions(backend_of(result))


def reported_versions(infos: Any) -> Dict[str, Dict[str, str]]:
    """{backend name: the versions its worker reported} from a report's `backends` (infos without versions, of a
    backend that did not start, are left out)."""
    out: Dict[str, Dict[str, str]] = {}
    for info in infos or []:
        if isinstance(info, Mapping) and isinstance(info.get("name"), str) and isinstance(info.get("versions"), dict):
            out[info["name"]] = {str(k): str(v) for k, v in info["versions"].items()}
    return out


def locked_versions(name: str) -> Dict[str, str]:
    """{normalised package: version} of a built-in backend (or a release of one) as its lock pins them, for the
    packages its worker reports (a release's pins over its base's lock before its own lock exists); empty for any
    other backend. Used where no worker reported versions (a result judged outside a check)."""
    from kbtool.runners import envs, registry

    try:
        recipe = registry.recipe_of(name)
    except KbtoolError:
        return {}
    if recipe is None:
        return {}
    reported = {normalise_package(m) for m in list(recipe.version_of) + ["numpy"]}
    found: Dict[str, str] = {}
    for lock in filter(None, (getattr(recipe, "layered_on", None), recipe.name)):
        owner = registry.RECIPES.get(lock, recipe) if lock != recipe.name else recipe
        read_lock = cast(Callable[[Any], Dict[str, str]], envs.read_lock)
        for package, line in read_lock(owner).items():
            if package in reported:
                found[package] = line.split("==", 1)[1]
    release = getattr(recipe, "release", None)
    for package, version in getattr(release, "pins", ()):
        found[normalise_package(package)] = version
    return found


def satisfies(have: Mapping[str, str], wanted: Versions) -> bool:
    """Whether versions {normalised package: version} satisfy every (package, specifiers) pair: a package the backend
    did not report, or a version that is not PEP 440 ('unknown'), does not."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    for package, specifiers in wanted:
        version = have.get(normalise_package(package))
        if version is None:
            return False
        try:
            if not SpecifierSet(specifiers).contains(Version(version), prereleases=True):
                return False
        except (InvalidSpecifier, InvalidVersion):
            return False
    return True


def device_of(result: Any) -> str:
    """The device a result ran on: its `device`, else the CPU (a backend without devices runs there)."""
    device = result.get("device") if isinstance(result, Mapping) else getattr(result, "device", None)
    return str(device or DEFAULT_DEVICE)


def _parts(result: Any, *keys: str) -> List[str]:
    return [str(result[k] if isinstance(result, Mapping) else getattr(result, k)) for k in keys]


def result_key(result: Any) -> str:
    """'op case backend mode [device]': how a recorded entry names a result (the backend as `backend_of` gives
    it; the device only when it is not the CPU, so every key recorded before devices existed still names its
    result)."""
    get = result.get if isinstance(result, Mapping) else lambda key: getattr(result, key)
    key = "{} {} {} {}".format(get("op"), get("case"), backend_of(result), get("mode"))
    device = device_of(result)
    return key if device == DEFAULT_DEVICE else f"{key} {device}"


def numbered(entries: Iterable[Union["KnownEntry", Mapping[str, Any]]]) -> List[KnownEntry]:
    """Entries as KnownEntry, numbered as in their file (the spec's alias entries are 'spec alias' and are not
    counted): the one place entries are numbered. Dicts must have passed `validate`."""
    out, number = [], 0
    for entry in entries:
        from_spec = (entry.source if isinstance(entry, KnownEntry) else entry.get("source")) == "spec"
        number += 0 if from_spec else 1
        label: Number = "spec alias" if from_spec else number
        if isinstance(entry, KnownEntry):
            out.append(entry if entry.number == label else _renumbered(entry, label))
        else:
            out.append(KnownEntry.from_dict(entry, label))
    return out


def _renumbered(entry: KnownEntry, number: Number) -> KnownEntry:
    from dataclasses import replace

    return replace(entry, number=number)


def load(path: Optional[str] = None, spec: Optional["Spec"] = None) -> List[KnownEntry]:
    """The validated entries of a known-differences file (none when it does not exist)."""
    path = path or _known_file()
    text = _read_text(path, missing_ok=True)  # a one-line KbtoolError when it cannot be read
    if text is None:
        return []
    root, entries = _parse_yaml(path, text)  # a one-line KbtoolError (FileProblem) for bad YAML or data
    entries = [] if entries is None else entries
    problems = _numbered_problems(entries, spec)
    if problems:
        number, first = problems[0]
        raise KbtoolError(
            _one_line(
                f"{_position(path, root, number)}: {first}"
                + (f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else "")
            )
        )
    return numbered(entries)


def from_report(dicts: Any, where: str) -> List[KnownEntry]:
    """The known_entries a report recorded, held to the same rules and limits as a file users write (and the
    spec's alias entries to the exact form kbtool writes them in); a one-line KbtoolError naming `where`."""
    if not isinstance(dicts, list) or not all(isinstance(e, dict) for e in dicts):
        raise KbtoolError(f"{where}: known_entries must be a list of entries")
    own = [e for e in dicts if e.get("source") != "spec"]
    problems = _numbered_problems(own)
    for entry in (e for e in dicts if e.get("source") == "spec"):
        if not _alias_form(entry):
            problems.append((None, "a spec alias entry kbtool did not write: " + _clip(entry, 100)))
    if problems:
        raise KbtoolError(
            _one_line(
                "{}: known_entries: {}{}".format(
                    where, problems[0][1], f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
                )
            )
        )
    return numbered(dicts)


ALIAS_REASON = re.compile(r"Keras 1\.x name, renamed to [A-Za-z_][A-Za-z0-9_]* in Keras 2\Z")


def _alias_form(entry: Mapping[str, Any]) -> bool:
    """Whether a report's 'source: spec' entry is one alias_entries writes (anything else would be a way around
    the file's rules)."""
    return (
        set(entry) == {"op", "backend", "status", "reason", "source"}
        and isinstance(entry["op"], str)
        and OP_NAME.match(entry["op"]) is not None
        and (entry["backend"] == KERAS2_BACKENDS or entry["backend"] in EARLIER_KERAS2_BACKENDS)
        and entry["status"] == Status.UNSUPPORTED.value
        and isinstance(entry["reason"], str)
        and ALIAS_REASON.match(entry["reason"]) is not None
    )


def _position(path: str, root: Any, number: Optional[int]) -> str:
    """file:line of entry `number` (counted from 1), or the file alone for a problem of the whole file."""
    nodes = getattr(root, "value", None)
    if number is None or not isinstance(nodes, list) or not 0 < number <= len(nodes):
        return path
    return f"{path}:{nodes[number - 1].start_mark.line + 1}"


def validate(entries: Any, spec: Optional["Spec"] = None) -> List[str]:
    """Problems with the entries, as 'entry N (op): message' strings."""
    return [problem for _, problem in _numbered_problems(entries, spec)]


def _numbered_problems(entries: Any, spec: Optional["Spec"] = None) -> List[Tuple[Optional[int], str]]:
    """(entry number or None for the whole file, 'entry N (op): message') for every problem, in order."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return [(None, "expected a list of entries (op, backend, reason, count, ...)")]
    globs = sum(len(_globs(e[key])) for e in entries for key in GLOB_KEYS if _is_globs(e.get(key)))
    if globs > MAX_GLOBS:  # each is matched against every op and case id of the spec: bounded work
        return [(None, f"{globs} globs in {len(entries)} entries; kbtool checks at most {MAX_GLOBS} in one file")]
    problems: List[Tuple[Optional[int], str]] = []
    recorded_by: Dict[str, int] = {}  # result key -> the entry that recorded it first
    for number, entry in enumerate(entries, 1):
        found = _entry_problems(number, entry)
        if spec is not None and not found:
            found = [f"{_where(number, entry)}: {p}" for p in _spec_problems(entry, spec)]
        if not found and isinstance(entry.get("results"), dict):
            twice = [key for key in entry["results"] if key in recorded_by]
            if twice:
                found = [
                    f"{_where(number, entry)}: result {_quote(twice[0])} is recorded by entry {recorded_by[twice[0]]} too (a result is explained by one entry)"
                ]
            for key in entry["results"]:
                recorded_by.setdefault(key, number)
        problems.extend((number, problem) for problem in found)
    return problems


def _entry_problems(number: int, entry: Dict[Any, Any]) -> List[str]:
    """Problems of one entry on its own (keys, types, regex, status words, the rules that keep it precise)."""
    where = _where(number, entry)
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        return ["entry {} lacks {}".format(number, ", ".join(missing))]
    problems = []
    unknown = sorted(str(key) for key in set(entry) - set(KEYS))  # YAML keys need not be strings
    if unknown:
        problems.append("{}: unknown key {} (keys are {})".format(where, _clip(", ".join(unknown)), ", ".join(KEYS)))
    for key in GLOB_KEYS:
        if not _is_globs(entry.get(key, "*")):
            problems.append(f"{where}: {key} must be a glob or a list of globs")
        elif any(len(p) > MAX_PATTERN_CHARS for p in _globs(entry.get(key, "*"))):
            problems.append(f"{where}: {key} has a glob longer than {MAX_PATTERN_CHARS} characters")
    if not isinstance(entry["reason"], str) or not entry["reason"].strip():
        problems.append(f"{where}: reason must be a sentence")
    if "match" in entry:
        problem = regex_problem(entry["match"])
        if problem:
            problems.append(f"{where}: {problem}")
    if _is_globs(entry.get("status", "*")):
        words = [s.value for s in Status if s not in (Status.PASS, Status.CHANGED)]  # a verdict's own status
        if not any(fnmatch.fnmatchcase(w, p) for p in _globs(entry.get("status", "*")) for w in words):
            problems.append(
                "{}: status {} names no result status ({})".format(where, _clip(entry["status"]), ", ".join(words))
            )
    if _is_globs(entry.get("device", "*")):
        globs = _globs(entry.get("device", "*"))
        unknown_devices = [p for p in globs if not any(fnmatch.fnmatchcase(d, p) for d in DEVICES)]
        if unknown_devices:
            problems.append(
                "{}: device {} names no device kbtool knows (devices are {})".format(
                    where, _clip(unknown_devices[0], 60), ", ".join(DEVICES)
                )
            )
    problems.extend(f"{where}: {p}" for p in _precision_problems(entry))
    if "versions" in entry:
        problems.extend(f"{where}: {p}" for p in _versions_problems(entry))
    if "results" in entry:
        problems.extend(f"{where}: {p}" for p in _results_problems(entry))
    return problems


# the device is said only when it is not the CPU (result_key)
RESULT_KEY = re.compile(
    r"(?P<op>[A-Za-z_][A-Za-z0-9_]*) (?P<case>\S+) (?P<backend>\S+) (?P<mode>eager|symbolic)(?: (?P<device>\S+))?\Z"
)


def _results_problems(entry: Dict[Any, Any]) -> Iterator[str]:
    """The recorded results: 'op case backend mode' -> fingerprint, each a result the entry targets, and `count`
    (when given) says how many."""
    recorded = entry["results"]
    if not isinstance(recorded, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in recorded.items()
    ):
        yield "results must map 'op case backend mode' to a fingerprint (both strings; kbtool known record writes them)"
        return
    typed = _is_globs(entry["op"]) and _is_globs(entry["backend"]) and _is_globs(entry.get("case", "*"))
    scope = KnownEntry.from_dict(dict(entry, reason="", results=None, versions=None)) if typed else None
    for key, value in recorded.items():
        parts = RESULT_KEY.match(key) if len(key) <= MAX_PATTERN_CHARS else None
        if parts is None:
            yield f"results: {_quote(key)} is not 'op case backend mode' (a gpu result's: 'op case backend mode gpu')"
            return
        if parts["device"] is not None and (parts["device"] not in DEVICES or parts["device"] == DEFAULT_DEVICE):
            yield "results: {} names device {}: a key names {} (a {} result's key names no device)".format(
                _quote(key),
                _quote(parts["device"]),
                " or ".join(d for d in DEVICES if d != DEFAULT_DEVICE),
                DEFAULT_DEVICE,
            )
            return
        if len(value) > MAX_PATTERN_CHARS:
            yield f"results: the fingerprint of {_quote(key)} is longer than {MAX_PATTERN_CHARS} characters"
            return
        found = _Key(parts["op"], parts["case"], parts["backend"], parts["mode"], parts["device"] or DEFAULT_DEVICE)
        if scope is not None and not scope.names(found):
            yield f"results: {_quote(key)} is not a result the entry targets (its op, case, backend, mode and device)"
            return
    count = entry.get("count")
    if isinstance(count, int) and not isinstance(count, bool) and count != len(recorded):
        yield f"count is {count} but {len(recorded)} results are recorded"


class _Key(NamedTuple):
    """A recorded result key's parts, with the names `KnownEntry.targets` reads."""

    op: str
    case: str
    backend: str
    mode: str
    device: str


def _precision_problems(entry: Dict[Any, Any]) -> Iterator[str]:
    """The rules that keep an entry from absorbing results it was not written for: it names its ops, narrows
    them by case or message, names backends kbtool knows, and records how many results it explained."""
    if entry["op"] == [] or entry["backend"] == []:
        yield "{} is an empty list".format("op" if entry["op"] == [] else "backend")
    if _is_globs(entry["op"]):
        for name in _globs(entry["op"]):
            if len(name) <= MAX_PATTERN_CHARS and not OP_NAME.match(name):
                yield f"op {_quote(name)} is not an op name (an entry lists the ops it is about; no glob such as '*')"
    if _is_globs(entry["backend"]):
        for pattern in _globs(entry["backend"]):
            if len(pattern) <= MAX_PATTERN_CHARS and not known_backend(pattern):
                problem = release_problem(pattern) if _is_release(pattern) else None
                yield (
                    f"backend {_quote(pattern)} is not a release kbtool can name (brackets name a release, they are "
                    f"no glob): {problem}"
                    if problem
                    else "backend {} names no backend kbtool knows ({}, or a custom module spelled out, such as "
                    "my_package.my_module@theano)".format(_quote(pattern), ", ".join(_builtin()))
                )
    well_typed = _is_globs(entry.get("case", "*")) and isinstance(entry.get("match", ""), str)
    if well_typed and not _narrows(entry):  # (a mistyped case or match is reported as such)
        yield "narrows nothing: give a case glob other than '*' or a match regex"
    if "count" in entry and (
        isinstance(entry["count"], bool) or not isinstance(entry["count"], int) or entry["count"] < 0
    ):
        yield "count must be a whole number >= 0, not {}".format(_quote(entry["count"]))
    if "verified_by" in entry and not (
        isinstance(entry["verified_by"], str) and VARIANT_SUFFIX.match(entry["verified_by"])
    ):
        yield "verified_by must be a variant's case-id suffix such as .kernel_flipped, not {}".format(
            _quote(entry["verified_by"])
        )


VARIANT_SUFFIX = re.compile(r"\.[A-Za-z0-9_]+\Z")


def _narrows(entry: Dict[Any, Any]) -> bool:
    """A case glob that is not every case, or a non-empty message regex."""
    case = entry.get("case")
    by_case = _is_globs(case) and bool(_globs(case)) and not any(set(p) <= {"*"} for p in _globs(case))
    return by_case or (isinstance(entry.get("match"), str) and entry["match"] != "")


def _builtin() -> List[str]:
    from kbtool.runners.registry import BUILTIN

    return list(BUILTIN)


def known_backend(pattern: str) -> bool:
    """Whether a backend glob names a backend kbtool knows: it matches a built-in name, it is a release of one
    spelled out (`tensorflow1[keras=2.2.4]`, matched literally), or it is a custom module's name spelled out (my_package.my_module, or my_package.my_module@ENV with a managed ENV); custom names cannot be
    globbed, since no list of them exists to check a glob against."""
    from kbtool.runners import custom
    from kbtool.runners.registry import RECIPES

    if _is_release(pattern):  # a release, named exactly: its base has an env, the packages are the env's
        return release_problem(pattern) is None
    if any(fnmatch.fnmatchcase(name, pattern) for name in _builtin()):
        return True
    is_custom = cast(Callable[[str], bool], custom.is_custom)
    importable = cast(Callable[[str], bool], custom.importable)
    if GLOB_CHARS.search(pattern) or not is_custom(pattern):
        return False
    module, env = names.split_custom(pattern)
    at = "@" in pattern
    if not at and "." not in module:  # a plain module name (as keras.json may give) only where it imports: a
        return importable(module)  # misspelt built-in ('tensorflw', 'tf') is refused, not taken for one
    return "." in module and (not at or env in RECIPES)


def release_problem(name: str) -> Optional[str]:
    """Why `name` is not a release kbtool can name (runners/releases.parse's one line), None when it is one."""
    from kbtool.runners import releases

    try:
        releases.parse(name)
    except KbtoolError as exc:
        said = str(exc)
        return said[len(repr(name)) + 2 :] if said.startswith(repr(name) + ": ") else said
    return None


def _versions_problems(entry: Dict[Any, Any]) -> Iterator[str]:
    """`versions`: {package: PEP 440 specifiers}, each package one the entry's built-in backends report (a package
    no backend reports would keep the entry from ever applying)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    wanted = entry["versions"]
    if not isinstance(wanted, dict) or not wanted:
        yield "versions must map a package to PEP 440 specifiers, e.g. {keras: '>=2.2.5'}"
        return
    for package, specifiers in wanted.items():
        if not isinstance(package, str) or not PACKAGE.match(package):
            yield f"versions: {_quote(package)} is not a package name"
            return
        if not isinstance(specifiers, str) or not specifiers.strip() or len(specifiers) > MAX_PATTERN_CHARS:
            yield f"versions: {package}: {_quote(specifiers)} is not a version specifier (PEP 440, e.g. '>=2.2.5')"
            return
        try:
            SpecifierSet(specifiers)
        except InvalidSpecifier:
            yield f"versions: {package}: {_quote(specifiers)} is not a version specifier (PEP 440, e.g. '>=2.2.5')"
            return
    reports = _reported_packages(entry["backend"]) if _is_globs(entry["backend"]) else None
    if reports is not None:
        lacking = [p for p in wanted if normalise_package(p) not in reports]
        if lacking:
            yield "versions: no backend of the entry reports {} (they report {}): the entry would never apply".format(
                ", ".join(lacking), ", ".join(sorted(reports))
            )


PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")


def _reported_packages(patterns: Globs) -> Optional[Set[str]]:
    """The packages (normalised) whose versions the workers of the backends `patterns` names report; None when a
    pattern names a custom module (its versions are not known before it runs)."""
    from kbtool.runners import registry

    found: Set[str] = set()
    for pattern in _globs(patterns):
        if _is_release(pattern):
            names = [pattern]
        else:
            names = [name for name in _builtin() if fnmatch.fnmatchcase(name, pattern)]
            if not names:
                return None
        for name in names:
            try:
                recipe = registry.recipe_of(name)
            except KbtoolError:
                continue
            modules = list(recipe.version_of) if recipe is not None else []
            found.update(normalise_package(m) for m in modules + ["numpy"])
    return found


def _where(number: int, entry: Dict[Any, Any]) -> str:
    return "entry {} ({})".format(number, _clip(entry.get("op", "?"), 60))


def regex_problem(pattern: Any) -> Optional[str]:
    """Why `pattern` cannot be a `match` (None when it can): a string that compiles in Python's `re` (what the
    file's authors read) and in the `regex` engine that searches with a time limit."""
    if not isinstance(pattern, str):
        return "match must be a regex (a string)"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"match is longer than {MAX_PATTERN_CHARS} characters"
    for engine in (re, regex):
        try:
            engine.compile(pattern)
        except (engine.error, ValueError, OverflowError, RecursionError, MemoryError) as exc:
            return f"match is not a valid regex: {_clip(exc)}"
    return None


def search(pattern: str, text: str, timeout: Optional[float] = None) -> Optional[bool]:
    """Whether `pattern` matches anywhere in `text`: True, False, or None when the search timed out."""
    try:
        limit = REGEX_TIMEOUT if timeout is None else timeout
        if limit <= 0:
            return None
        return _compiled(pattern).search(text, timeout=limit) is not None
    except TimeoutError:
        return None


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    return regex.compile(pattern)  # regex.search() itself costs ~10x more per call than a compiled pattern's


def _spec_problems(entry: Dict[Any, Any], spec: "Spec") -> Iterator[str]:
    names = _globs(entry["op"])
    for name in names:
        if name not in spec.ops:
            yield f"op {_clip(name)} names no op of the spec"
    ops = [name for name in names if name in spec.ops]
    if not ops:
        return
    suffix = entry.get("verified_by")
    if suffix is not None:
        lacking = [op for op in ops if suffix not in variant_suffixes(op)]
        if lacking:
            yield "verified_by {}: no backend runs that variant of {}".format(_quote(suffix), ", ".join(lacking[:5]))
    if "case" in entry:
        from kbtool.specs import cases

        case_ids = cast(Callable[[Any, str], List[str]], cases.case_ids)
        ids: Set[str] = set()
        for op in ops:
            own = case_ids(spec, op)
            ids.update(own)
            ids.update(case_id + variant for variant in variant_suffixes(op) for case_id in own)
        for pattern in _globs(entry["case"]):
            compiled = _glob_regex(pattern)
            if compiled is None or not any(map(compiled.match, ids)):
                yield "case {} names no case of {}".format(_quote(pattern), ", ".join(ops[:5]))


def variant_suffixes(op: str) -> List[str]:
    """The case-id suffixes of the variants some built-in backend runs for `op`'s cases (e.g. Theano's
    '.kernel_flipped'): an entry may name those results by case glob and use them as `verified_by`."""
    from kbtool.runners import registry

    return registry.variant_suffixes(op)


def alias_entries(spec: "Spec") -> List[KnownEntry]:
    """One entry per Keras 1.x alias in the spec: Keras 2 backends do not have the old name."""
    return [
        KnownEntry(
            op=name,
            backend=tuple(KERAS2_BACKENDS),
            status=Status.UNSUPPORTED.value,
            reason="Keras 1.x name, renamed to {} in Keras 2".format(entry["alias_of"]),
            source="spec",
            number="spec alias",
        )
        for name, entry in sorted(spec.ops.items())
        if entry.get("alias_of")
    ]


def _is_globs(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value))


def _globs(patterns: Any) -> List[str]:
    return [patterns] if isinstance(patterns, str) else list(patterns)


def matches(value: str, patterns: Union[Globs, List[str]]) -> bool:
    """A glob, or a list of globs any of which may match."""
    compiled = _glob_regex(patterns)
    return compiled is not None and compiled.match(value) is not None


def _glob_regex(patterns: Union[Globs, List[str]]) -> "Optional[re.Pattern[str]]":
    """One regex for a glob or a list of globs (fnmatch's translation, as alternatives): a result is then matched
    in one search, however many globs an entry lists (10,000 globs × 7,500 results took 20 s one by one)."""
    return _glob_regex_of(patterns if isinstance(patterns, (str, tuple)) else tuple(patterns))


@functools.lru_cache(maxsize=4096)
def _glob_regex_of(patterns: Globs) -> "Optional[re.Pattern[str]]":
    globs = _globs(patterns)
    return re.compile("|".join(fnmatch.translate(p) for p in globs)) if globs else None


def entry_of(entry: Union[KnownEntry, Mapping[str, Any]]) -> KnownEntry:
    """A KnownEntry, from a validated dict where need be."""
    return entry if isinstance(entry, KnownEntry) else KnownEntry.from_dict(entry)


def targets(entry: Union[KnownEntry, Mapping[str, Any]], result: Any) -> bool:
    """Whether the entry is about this result (op, case, backend, mode), whatever its outcome."""
    return entry_of(entry).targets(result)


def explains(entry: Union[KnownEntry, Mapping[str, Any]], result: Result) -> bool:
    """Whether a (targeted) result is a non-passing one with the entry's status and message: the condition alone,
    as KnownEntry.judge (KnownEntry.explains also asks whether the entry targets the result)."""
    return entry_of(entry).judge(result) is True


def covers(
    entry: Union[KnownEntry, Mapping[str, Any]], planned_ops: Optional[Iterable[str]], spec_ops: Optional[Iterable[str]]
) -> bool:
    """Whether every spec op that the entry's op globs match was planned (unknown: assume so)."""
    if planned_ops is None or spec_ops is None:
        return True
    named = [op for op in spec_ops if matches(op, entry_of(entry).op)]
    return set(named) <= set(planned_ops)


_covers = covers  # its old name


def judged(
    entry: KnownEntry,
    whole_spec: bool,
    all_cases: bool,
    planned_ops: Optional[Iterable[str]] = None,
    spec_ops: Optional[Iterable[str]] = None,
) -> bool:
    """Whether a run judges the entry's staleness and growth: it ran every case of every op the entry names."""
    return all_cases and (whole_spec or (entry.op != "*" and covers(entry, planned_ops, spec_ops)))


@dataclass
class Applied:
    """What applying the entries to a run found: per entry, how many results it targeted and explained (report
    rows), and the stale entries (each as the file spells it, with a note)."""

    counts: List[Dict[str, Any]] = field(default_factory=list)
    stale: List[Dict[str, Any]] = field(default_factory=list)
    named: Dict[Number, List[Result]] = field(default_factory=dict)  # per entry number, the results it named


def apply(
    results: Sequence[Result],
    entries: Iterable[Union[KnownEntry, Mapping[str, Any]]],
    whole_spec: bool = True,
    all_cases: bool = True,
    planned_ops: Optional[Iterable[str]] = None,
    spec_ops: Optional[Iterable[str]] = None,
    by_regex: bool = False,
    versions: Optional[BackendVersions] = None,
) -> Applied:
    """Mark each result that an entry explains (`result.known` = the first such entry's reason).

    A recorded entry (one with `results`, written by `kbtool known record`) explains exactly the results it
    recorded, and each only while its fingerprint is the one recorded: a recorded result that fails differently
    becomes `changed` (status CHANGED, `result.changed` = the entry, the verdict's own status, the recorded and the
    new fingerprint), which is unexplained; a recorded result that passes now makes the entry stale. Both are judged
    in every run, whatever its filters. A result the entry did not record is not its to explain, whatever its regex.

    An entry that was never recorded (or every entry, with `by_regex`: what `known record` itself applies) explains
    the targeted results with its status and `match`. Such an entry is stale when it explains none of the results
    it targets, and dead when every result it explains was taken by an earlier entry; both are judged only where
    the run covers what the entry explains: every case of the ops it names (no --case, --mode or --examples
    filter), every op its globs match in the spec (when `planned_ops` and `spec_ops` say which), and the whole spec
    for an entry for every op ("*").

    `versions` (by backend name, the versions its worker reported: the report's backends[].versions) is what an
    entry's `versions` is compared with; a backend absent from it is taken at its lock (`locked_versions`). An entry
    with `versions` targets no result of a backend outside its range, so a run without such a release judges it as
    a run without its backend does: not stale. A base backend's recorded entry stands for its releases: a release's
    result that the entry did not record under the release's own name is looked up under the base's (explained
    while its fingerprint is the base's, `changed` when it fails differently and no other entry, before or after it
    in the file, explains it: a release's own difference, in an entry with `versions`, is not the base's change;
    passing on a release does not make the entry stale, which only the base's own results or the release's own
    recorded ones do).

    Entries with `verified_by` are applied after the others: unrecorded, such an entry explains a result only where
    the variant of the same op, case, backend and mode (case id + the suffix) passed, or was explained by an entry
    without `verified_by` (its own, different cause: the difference the variant removes is then not the only one,
    and the other one is recorded on the variant's results). Recorded, it explains what it recorded (a variant that
    stops passing is a result of its own, unexplained).
    """
    entries = numbered(entries)
    resolved = resolved_versions(versions)
    applied = Applied()
    named_by: Dict[int, KnownEntry] = {}  # id(result) -> the entry that named it
    by_key: Dict[ResultKey, Result] = {(r.op, r.case, r.backend, r.mode): r for r in results}
    search = _Searches()
    rows: Dict[int, Dict[str, Any]] = {}
    stale: List[Tuple[int, Dict[str, Any]]] = []
    unlike_base: List[Tuple[int, Result, Dict[str, Any]]] = []  # a release failing otherwise than its base recorded
    order = [i for i, e in enumerate(entries) if not e.verified_by] + [
        i for i, e in enumerate(entries) if e.verified_by
    ]
    for index in order:
        entry = entries[index]
        targeted = [r for r in results if entry.targets(r, resolved) and r.changed is None]
        exact = entry.recorded and not by_regex
        if exact:
            explained, changed, passing, unlike = _recorded(entry, targeted)
            unlike_base += [(index, result, change) for result, change in unlike]
        else:
            explained, changed, passing = search.explained(entry, targeted, by_key, named_by), [], []
        named = 0
        for result in explained:
            if result.known is None:
                result.known = entry.reason  # (an inherited one says so by the result's `inherits`)
                named_by[id(result)] = entry
                applied.named.setdefault(entry.number, []).append(result)
                named += 1
        is_judged = judged(entry, whole_spec, all_cases, planned_ops, spec_ops)
        if targeted:
            row: Dict[str, Any] = {
                "entry": entry.number,
                "op": _plain(entry.op),
                "backend": _plain(entry.backend),
                "reason": entry.reason,
                "targeted": len(targeted),
                "explained": len(explained),
                "named": named,
            }
            if entry.count is not None:
                row["count"] = entry.count
            if changed:
                row["changed"] = len(changed)
            if not exact and not entry.from_spec:  # (a spec alias entry is exact by construction)
                row["unrecorded"] = True
            rows[index] = row
        note = _stale_note(entry, exact, targeted, explained, named, changed, passing, is_judged, search)
        if note:
            stale.append((index, dict(entry.to_dict(), note=note)))
    for index, result, change in unlike_base:  # changed, unless another entry explained it meanwhile
        if result.known is None and result.changed is None:
            result.changed = change
            result.status = Status.CHANGED
            rows[index]["changed"] = rows[index].get("changed", 0) + 1
    applied.counts = [rows[i] for i in sorted(rows)]
    applied.stale = [item for _, item in sorted(stale, key=lambda pair: pair[0])]
    search.note_timeouts()
    return applied


def resolved_versions(reported: Optional[BackendVersions]) -> BackendVersions:
    """`reported` (by backend name) with each other backend's lock read once, for many `targets` calls."""
    return _Resolved(reported)


class _Resolved(dict):  # type: ignore[type-arg]
    """The versions the workers of one `apply`'s backends reported, and each other backend's lock, read once."""

    def __init__(self, reported: Optional[BackendVersions]) -> None:
        super().__init__(reported or {})
        self._locked: Dict[str, Dict[str, str]] = {}

    def locked(self, name: str) -> Dict[str, str]:
        if name not in self._locked:
            self._locked[name] = locked_versions(name)
        return self._locked[name]


def recorded_key(entry: KnownEntry, result: Any) -> Tuple[Optional[str], bool]:
    """(the key under which the entry recorded `result`, or None; whether that is its base backend's key): a
    release's own key first, else its base's, when the entry names the base (its record stands for its releases)."""
    recorded = entry.results or {}
    key = result_key(result)
    if key in recorded:
        return key, False
    name = backend_of(result)
    if _is_release(name):
        base = names.base_of(name)
        if backend_matches(base, entry.backend):
            op, case, mode = _parts(result, "op", "case", "mode")
            base_key = result_key(_Key(op, case, base, mode, device_of(result)))
            if base_key in recorded:
                return base_key, True
    return None, False


def _recorded(
    entry: KnownEntry, targeted: Sequence[Result]
) -> Tuple[List[Result], List[Result], List[Result], List[Tuple[Result, Dict[str, Any]]]]:
    """(explained, changed, passing now, unlike its base) among the targeted results an exact entry recorded. A
    release's result recorded under its base's key that passes is none of them (the release lacks the base's
    difference); one that fails otherwise is returned with what would make it `changed`, which `apply` does only
    when no other entry explains it."""
    from kbtool.known import fingerprint

    recorded = entry.results or {}
    explained, changed, passing, unlike = [], [], [], []
    for result in targeted:
        key, of_base = recorded_key(entry, result)
        if key is None:
            continue
        was = recorded[key]
        if Status(result.status) == Status.PASS:
            if not of_base:
                passing.append(result)
            continue
        now = fingerprint.of_result(result)
        if now == was:
            explained.append(result)
            continue
        change = {
            "entry": entry.number,
            "reason": entry.reason,
            "status": Status(result.status).value,
            "recorded": was,
            "now": now,
        }
        if of_base:
            unlike.append((result, change))
        else:
            result.changed = change
            result.status = Status.CHANGED
            changed.append(result)
    return explained, changed, passing, unlike


def _stale_note(
    entry: KnownEntry,
    exact: bool,
    targeted: Sequence[Result],
    explained: Sequence[Result],
    named: int,
    changed: Sequence[Result],
    passing: Sequence[Result],
    is_judged: bool,
    search: "_Searches",
) -> Optional[str]:
    """Why the entry is stale in this run (None when it is not)."""
    if exact:
        if passing:
            return "{} of its {} recorded results pass now ({}): record it again (kbtool known record)".format(
                len(passing), len(entry.results or {}), ", ".join(result_key(r) for r in passing[:3])
            )
        if is_judged and targeted and not any(recorded_key(entry, r)[0] is not None for r in targeted):
            return f"none of its {len(entry.results or {})} recorded results ran ({len(targeted)} results checked)"
        return None
    if not is_judged or not targeted:
        return None
    if not explained:
        return f"did not reproduce in this run ({len(targeted)} results checked){search.unsearched(entry, targeted)}"
    if not named:
        return f"dead: the {len(explained)} results it explains were all explained by earlier entries"
    return None


class _Searches:
    """The regex searches of one `apply`, within its time budget: only searches that time out spend it (5 s in
    all, then each later search gets REGEX_LATE_TIMEOUT), and each timeout is noted on its result at the end."""

    def __init__(self) -> None:
        self.spent = 0.0
        self.timeouts: List[Tuple[Result, Number, str]] = []
        self.timed_out: Dict[Number, Tuple[Result, str]] = {}

    def explained(
        self,
        entry: KnownEntry,
        targeted: Sequence[Result],
        by_key: Mapping[ResultKey, Result],
        named_by: Mapping[int, KnownEntry],
    ) -> List[Result]:
        explained: List[Result] = []
        for result in targeted:
            limit = REGEX_TIMEOUT if self.spent < REGEX_BUDGET else REGEX_LATE_TIMEOUT
            verdict = entry.judge(result, limit)
            if verdict is None:  # one timeout per entry: its regex searches no more messages
                self.spent += limit
                self.timed_out[entry.number] = (result, _after(limit))
                self.timeouts.append((result, entry.number, _after(limit)))
                break
            if verdict and _verified(entry, result, by_key, named_by):
                explained.append(result)
        return explained

    def unsearched(self, entry: KnownEntry, targeted: Sequence[Result]) -> str:
        if entry.number not in self.timed_out:
            return ""
        result, after = self.timed_out[entry.number]
        return (
            f"; its match regex timed out after {after}, so {len(targeted) - targeted.index(result)} were not searched"
        )

    def note_timeouts(self) -> None:
        for result, entry_number, after in self.timeouts:
            note = (
                f"known-difference entry {entry_number}: its match regex timed out after {after} on this "
                "message (taken as no match; later messages not searched)"
            )
            result.note = note if not result.note else f"{result.note}; {note}"


def _after(limit: float) -> str:
    """How long a search that timed out had: REGEX_TIMEOUT, or REGEX_LATE_TIMEOUT once the run's searches had lost
    REGEX_BUDGET to timeouts."""
    if limit >= REGEX_TIMEOUT:
        return f"{REGEX_TIMEOUT:g} s"
    return f"{limit:g} s, when timed-out searches had already cost the run {REGEX_BUDGET:g} s"


def _verified(
    entry: KnownEntry, result: Result, by_key: Mapping[ResultKey, Result], named_by: Mapping[int, KnownEntry]
) -> bool:
    """For a `verified_by` entry: the variant result of the same call passed, or another cause explains it."""
    suffix = entry.verified_by
    if not suffix:
        return True
    variant = by_key.get((result.op, result.case + suffix, result.backend, result.mode))
    if variant is None:
        return False
    if Status(variant.status) == Status.PASS:
        return True
    other = named_by.get(id(variant))
    return other is not None and not other.verified_by
