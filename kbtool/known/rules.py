"""The rules an entry is held to (a file users write, or a report's embedded entries): its keys and types, its
regex, its status and device words, the rules that keep it precise (ops by name, narrowed by case or message,
backends kbtool knows), its `versions` and `results`, and, given the spec, that its ops and case globs exist.

A backend is checked against the registry's built-in names and the name grammar (kbtool/known/globs.py); known
imports no backend code.
"""

import fnmatch
import re
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, Optional, Set, Tuple, cast

from kbtool.errors import KbtoolError
from kbtool.files import clip, quote
from kbtool.known.entry import EARLIER_KERAS2_BACKENDS, KERAS2_BACKENDS, KnownEntry
from kbtool.known.globs import MAX_PATTERN_CHARS, Globs, Key, glob_regex, globs_of, is_globs
from kbtool.known.regexes import regex_problem
from kbtool.results import Status
from kbtool.runners import names, registry
from kbtool.vocabulary import DEFAULT_DEVICE, DEVICES, PRECISIONS

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.specs.loader import Spec

GLOB_KEYS = ("op", "case", "backend", "mode", "device", "status")
KEYS = GLOB_KEYS + (
    "precision",
    "versions",
    "match",
    "reason",
    "count",
    "verified_by",
    "every_call",
    "overrides",
    "results",
)
ENTRY_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*-[0-9a-f]{8}\Z")  # KnownEntry.id: its first op, a hash of its scope
EVERY_CALL_ANY = "any"
REQUIRED = ("op", "backend", "reason")  # `count` is required too, but checked after the rest (a clearer first problem)
OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # an entry lists its ops by name: no glob may stand for them
GLOB_CHARS = re.compile(r"[*?\[]")
MAX_GLOBS = 10000  # globs in one file, lists counted item by item (the shipped file: 623)
VARIANT_SUFFIX = re.compile(r"\.[A-Za-z0-9_]+\Z")
PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
ALIAS_REASON = re.compile(r"Keras 1\.x name, renamed to [A-Za-z_][A-Za-z0-9_]* in Keras 2\Z")
# the device is said only when it is not the CPU (result_key)
RESULT_KEY = re.compile(
    r"(?P<op>[A-Za-z_][A-Za-z0-9_]*) (?P<case>\S+) (?P<backend>\S+) (?P<mode>eager|symbolic)(?: (?P<device>\S+))?\Z"
)

Problem = Tuple[Optional[int], str]  # (entry number, or None for the whole file; the problem in words)


def validate(entries: Any, spec: Optional["Spec"] = None) -> List[str]:
    """Problems with the entries, as 'entry N (op): message' strings."""
    return [problem for _, problem in numbered_problems(entries, spec)]


def numbered_problems(entries: Any, spec: Optional["Spec"] = None) -> List[Problem]:
    """(entry number or None for the whole file, 'entry N (op): message') for every problem, in order."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return [(None, "expected a list of entries (op, backend, reason, count, ...)")]
    globs = sum(len(globs_of(e[key])) for e in entries for key in GLOB_KEYS if is_globs(e.get(key)))
    if globs > MAX_GLOBS:  # each is matched against every op and case id of the spec: bounded work
        return [(None, f"{globs} globs in {len(entries)} entries; kbtool checks at most {MAX_GLOBS} in one file")]
    problems: List[Problem] = []
    recorded_by: Dict[str, int] = {}  # result key -> the entry that recorded it first
    for number, entry in enumerate(entries, 1):
        found = _entry_problems(number, entry)
        if spec is not None and not found:
            found = [f"{_where(number, entry)}: {p}" for p in _spec_problems(entry, spec)]
        if not found and isinstance(entry.get("results"), dict):
            twice = [key for key in entry["results"] if key in recorded_by]
            if twice:
                found = [
                    f"{_where(number, entry)}: result {quote(twice[0])} is recorded by entry {recorded_by[twice[0]]} too (a result is explained by one entry)"
                ]
            for key in entry["results"]:
                recorded_by.setdefault(key, number)
        problems.extend((number, problem) for problem in found)
    return problems


def alias_problems(dicts: List[Dict[Any, Any]]) -> List[Problem]:
    """The problems of a report's embedded entries: its own held to a file's rules, the spec's alias entries to
    the exact form kbtool writes them in."""
    problems = numbered_problems([e for e in dicts if e.get("source") != "spec"])
    for entry in (e for e in dicts if e.get("source") == "spec"):
        if not _alias_form(entry):
            problems.append((None, "a spec alias entry kbtool did not write: " + clip(entry, 100)))
    return problems


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


def _entry_problems(number: int, entry: Dict[Any, Any]) -> List[str]:
    """Problems of one entry on its own (keys, types, regex, status words, the rules that keep it precise)."""
    where = _where(number, entry)
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        return ["entry {} lacks {}".format(number, ", ".join(missing))]
    problems = []
    unknown = sorted(str(key) for key in set(entry) - set(KEYS))  # YAML keys need not be strings
    if unknown:
        problems.append("{}: unknown key {} (keys are {})".format(where, clip(", ".join(unknown)), ", ".join(KEYS)))
    for key in GLOB_KEYS:
        if not is_globs(entry.get(key, "*")):
            problems.append(f"{where}: {key} must be a glob or a list of globs")
        elif any(len(p) > MAX_PATTERN_CHARS for p in globs_of(entry.get(key, "*"))):
            problems.append(f"{where}: {key} has a glob longer than {MAX_PATTERN_CHARS} characters")
    if not isinstance(entry["reason"], str) or not entry["reason"].strip():
        problems.append(f"{where}: reason must be a sentence")
    if "precision" in entry and entry["precision"] not in PRECISIONS:
        problems.append(
            "{}: precision must be one of {}, not {}".format(
                where, ", ".join(PRECISIONS), clip(repr(entry["precision"]))
            )
        )
    if "match" in entry:
        problem = regex_problem(entry["match"])
        if problem:
            problems.append(f"{where}: {problem}")
    problems.extend(f"{where}: {p}" for p in _word_problems(entry))
    problems.extend(f"{where}: {p}" for p in _precision_problems(entry))
    if "versions" in entry:
        problems.extend(f"{where}: {p}" for p in _versions_problems(entry))
    if "results" in entry:
        problems.extend(f"{where}: {p}" for p in _results_problems(entry))
    if "every_call" in entry:
        problems.extend(f"{where}: {p}" for p in _every_call_problems(entry["every_call"]))
    if "overrides" in entry:
        problems.extend(f"{where}: {p}" for p in _overrides_problems(entry["overrides"]))
    return problems


def _overrides_problems(value: Any) -> Iterator[str]:
    """`overrides`: the id of an entry of an earlier file (as `kbtool known list` shows it), or a list of them."""
    ids = [value] if isinstance(value, str) else value if isinstance(value, list) and value else None
    if ids is None or not all(isinstance(i, str) and ENTRY_ID.match(i) for i in ids):
        yield f"overrides must be the id of an entry of an earlier known file, such as dot-3fa9c1d2 (kbtool known list shows them), or a list of ids; not {clip(value, 60)}"


def _every_call_problems(every_call: Any) -> Iterator[str]:
    """`every_call` is "any", a non-empty mapping of dimension names to non-empty lists of values, or a non-empty
    list of such mappings (the calls each names, together)."""
    sets = every_call if isinstance(every_call, list) and every_call else [every_call]
    if every_call == EVERY_CALL_ANY:
        return
    for one in sets:
        if not isinstance(one, dict) or not one:
            yield (
                f"every_call must be {EVERY_CALL_ANY!r}, a mapping of parameters to lists of their documented values, "
                "or a list of such mappings"
            )
            return
        for name, values in one.items():
            if not isinstance(name, str) or not isinstance(values, list) or not values:
                yield f"every_call {quote(str(name))}: must map a parameter name to a non-empty list of values"


def _word_problems(entry: Dict[Any, Any]) -> Iterator[str]:
    """A status glob that names no result status, a device glob that names no device."""
    if is_globs(entry.get("status", "*")):
        words = [s.value for s in Status if s not in (Status.PASS, Status.CHANGED)]  # a verdict's own status
        if not any(fnmatch.fnmatchcase(w, p) for p in globs_of(entry.get("status", "*")) for w in words):
            yield "status {} names no result status ({})".format(clip(entry["status"]), ", ".join(words))
    if is_globs(entry.get("device", "*")):
        globs = globs_of(entry.get("device", "*"))
        unknown_devices = [p for p in globs if not any(fnmatch.fnmatchcase(d, p) for d in DEVICES)]
        if unknown_devices:
            yield "device {} names no device kbtool knows (devices are {})".format(
                clip(unknown_devices[0], 60), ", ".join(DEVICES)
            )


def _results_problems(entry: Dict[Any, Any]) -> Iterator[str]:
    """The recorded results: 'op case backend mode' -> fingerprint, each a result the entry targets, and `count`
    (when given) says how many."""
    recorded = entry["results"]
    if not isinstance(recorded, dict) or not all(isinstance(k, str) and _is_record(v) for k, v in recorded.items()):
        yield (
            "results must map 'op case backend mode' to a fingerprint (both strings; kbtool known record writes them),"
            " or to a list of the fingerprints it may have"
        )
        return
    typed = is_globs(entry["op"]) and is_globs(entry["backend"]) and is_globs(entry.get("case", "*"))
    scope = KnownEntry.from_dict(dict(entry, reason="", results=None, versions=None)) if typed else None
    for key, value in recorded.items():
        problem = _result_key_problem(key, value, scope)
        if problem:
            yield problem
            return
    count = entry.get("count")
    if isinstance(count, int) and not isinstance(count, bool) and count != len(recorded):
        yield f"count is {count} but {len(recorded)} results are recorded"


def _is_record(value: Any) -> bool:
    """A recorded fingerprint: a string, or a non-empty list of distinct strings (fingerprint.holds)."""
    if isinstance(value, str):
        return True
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(v, str) for v in value)
        and len(set(value)) == len(value)
    )


def _result_key_problem(key: str, value: Any, scope: Optional[KnownEntry]) -> Optional[str]:
    """Why one recorded result (key and fingerprint) is not one the entry may record (None when it is)."""
    parts = RESULT_KEY.match(key) if len(key) <= MAX_PATTERN_CHARS else None
    if parts is None:
        return f"results: {quote(key)} is not 'op case backend mode' (a gpu result's: 'op case backend mode gpu')"
    if parts["device"] is not None and (parts["device"] not in DEVICES or parts["device"] == DEFAULT_DEVICE):
        return "results: {} names device {}: a key names {} (a {} result's key names no device)".format(
            quote(key),
            quote(parts["device"]),
            " or ".join(d for d in DEVICES if d != DEFAULT_DEVICE),
            DEFAULT_DEVICE,
        )
    if any(len(v) > MAX_PATTERN_CHARS for v in ([value] if isinstance(value, str) else value)):
        return f"results: the fingerprint of {quote(key)} is longer than {MAX_PATTERN_CHARS} characters"
    found = Key(parts["op"], parts["case"], parts["backend"], parts["mode"], parts["device"] or DEFAULT_DEVICE)
    if scope is not None and not scope.names(found):
        return f"results: {quote(key)} is not a result the entry targets (its op, case, backend, mode and device)"
    return None


def _precision_problems(entry: Dict[Any, Any]) -> Iterator[str]:
    """The rules that keep an entry from absorbing results it was not written for: it names its ops, narrows
    them by case or message, names backends kbtool knows, and records how many results it explained."""
    if entry["op"] == [] or entry["backend"] == []:
        yield "{} is an empty list".format("op" if entry["op"] == [] else "backend")
    if is_globs(entry["op"]):
        for name in globs_of(entry["op"]):
            if len(name) <= MAX_PATTERN_CHARS and not OP_NAME.match(name):
                yield f"op {quote(name)} is not an op name (an entry lists the ops it is about; no glob such as '*')"
    if is_globs(entry["backend"]):
        for pattern in globs_of(entry["backend"]):
            if len(pattern) <= MAX_PATTERN_CHARS and not known_backend(pattern):
                yield _backend_problem(pattern)
    well_typed = is_globs(entry.get("case", "*")) and isinstance(entry.get("match", ""), str)
    if well_typed and not _narrows(entry):  # (a mistyped case or match is reported as such)
        yield "narrows nothing: give a case glob other than '*' or a match regex"
    if "count" in entry and (
        isinstance(entry["count"], bool) or not isinstance(entry["count"], int) or entry["count"] < 0
    ):
        yield "count must be a whole number >= 0, not {}".format(quote(entry["count"]))
    if "verified_by" in entry and not (
        isinstance(entry["verified_by"], str) and VARIANT_SUFFIX.match(entry["verified_by"])
    ):
        yield "verified_by must be a variant's case-id suffix such as .kernel_flipped, not {}".format(
            quote(entry["verified_by"])
        )


def _backend_problem(pattern: str) -> str:
    """Why a backend glob kbtool does not know is refused, in words."""
    problem = release_problem(pattern) if names.is_release(pattern) else None
    if problem:
        return (
            f"backend {quote(pattern)} is not a release kbtool can name (brackets name a release, they are "
            f"no glob): {problem}"
        )
    return (
        "backend {} names no backend kbtool knows ({}, or a custom module spelled out, such as "
        "my_package.my_module@theano)".format(quote(pattern), ", ".join(_builtin()))
    )


def _narrows(entry: Dict[Any, Any]) -> bool:
    """A case glob that is not every case, or a non-empty message regex."""
    case = entry.get("case")
    by_case = is_globs(case) and bool(globs_of(case)) and not any(set(p) <= {"*"} for p in globs_of(case))
    return by_case or (isinstance(entry.get("match"), str) and entry["match"] != "")


def _builtin() -> List[str]:
    return list(registry.BUILTIN)


def known_backend(pattern: str) -> bool:
    """Whether a backend glob names a backend kbtool knows: it matches a built-in name, it is a release of one
    spelled out (`tensorflow1[keras=2.2.4]`, matched literally), or it is a custom module's name spelled out
    (my_package.my_module, or my_package.my_module@ENV with a managed ENV); custom names cannot be globbed, since no
    list of them exists to check a glob against."""
    if names.is_release(pattern):  # a release, named exactly: its base has an env, the packages are the env's
        return release_problem(pattern) is None
    if any(fnmatch.fnmatchcase(name, pattern) for name in _builtin()):
        return True
    if GLOB_CHARS.search(pattern) or not names.is_custom(pattern):
        return False
    module, env = names.split_custom(pattern)
    at = "@" in pattern
    if not at and "." not in module:  # a plain module name (as keras.json may give) only where it imports: a
        return names.importable(module)  # misspelt built-in ('tensorflw', 'tf') is refused, not taken for one
    return "." in module and (not at or env in registry.RECIPES)


def release_problem(name: str) -> Optional[str]:
    """Why `name` is not a release kbtool can name (the registry's one line, without the name), None when it is."""
    try:
        recipe = registry.recipe_of(name)
    except KbtoolError as exc:
        said = str(exc)
        return said[len(repr(name)) + 2 :] if said.startswith(repr(name) + ": ") else said
    if recipe is None:  # not BASE[...]: the registry takes it for no release at all
        return "a release is written BACKEND[PACKAGE=VERSION], e.g. tensorflow1[keras=2.2.4]"
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
            yield f"versions: {quote(package)} is not a package name"
            return
        if not isinstance(specifiers, str) or not specifiers.strip() or len(specifiers) > MAX_PATTERN_CHARS:
            yield f"versions: {package}: {quote(specifiers)} is not a version specifier (PEP 440, e.g. '>=2.2.5')"
            return
        try:
            SpecifierSet(specifiers)
        except InvalidSpecifier:
            yield f"versions: {package}: {quote(specifiers)} is not a version specifier (PEP 440, e.g. '>=2.2.5')"
            return
    reports = _reported_packages(entry["backend"]) if is_globs(entry["backend"]) else None
    if reports is not None:
        lacking = [p for p in wanted if names.normalise(p) not in reports]
        if lacking:
            yield "versions: no backend of the entry reports {} (they report {}): the entry would never apply".format(
                ", ".join(lacking), ", ".join(sorted(reports))
            )


def _reported_packages(patterns: Globs) -> Optional[Set[str]]:
    """The packages (normalised) whose versions the workers of the backends `patterns` names report; None when a
    pattern names a custom module (its versions are not known before it runs)."""
    found: Set[str] = set()
    for pattern in globs_of(patterns):
        if names.is_release(pattern):
            backends = [pattern]
        else:
            backends = [name for name in _builtin() if fnmatch.fnmatchcase(name, pattern)]
            if not backends:
                return None
        for name in backends:
            try:
                recipe = registry.recipe_of(name)
            except KbtoolError:
                continue
            modules = list(recipe.version_of) if recipe is not None else []
            found.update(names.normalise(m) for m in modules + ["numpy"])
    return found


def _where(number: int, entry: Dict[Any, Any]) -> str:
    return "entry {} ({})".format(number, clip(entry.get("op", "?"), 60))


def _spec_problems(entry: Dict[Any, Any], spec: "Spec") -> Iterator[str]:
    """The entry against the spec: its ops exist, its `verified_by` is a variant some backend runs of them, its
    case globs name cases (or variants) of them."""
    names = globs_of(entry["op"])
    for name in names:
        if name not in spec.ops:
            yield f"op {clip(name)} names no op of the spec"
    ops = [name for name in names if name in spec.ops]
    if not ops:
        return
    suffix = entry.get("verified_by")
    if suffix is not None:
        lacking = [op for op in ops if suffix not in variant_suffixes(op)]
        if lacking:
            yield "verified_by {}: no backend runs that variant of {}".format(quote(suffix), ", ".join(lacking[:5]))
    every_call = entry.get("every_call")
    for one in every_call if isinstance(every_call, list) else [every_call] if isinstance(every_call, dict) else []:
        yield from _every_call_spec_problems(one, spec, ops)
    if "case" in entry:
        ids = _case_ids(spec, ops)
        for pattern in globs_of(entry["case"]):
            compiled = glob_regex(pattern)
            if compiled is None or not any(map(compiled.match, ids)):
                yield "case {} names no case of {}".format(quote(pattern), ", ".join(ops[:5]))


def _every_call_spec_problems(every_call: Dict[Any, Any], spec: "Spec", ops: List[str]) -> Iterator[str]:
    """The `every_call` mapping names calls of the entry's ops: some op documents each of its dimensions (the
    claim is about the ops that document them all), and each value is documented there."""
    from kbtool.specs import domains

    dims = {op: domains.all_domains(spec, op) for op in ops}
    claimed = [op for op in ops if all(name in dims[op] for name in every_call)]
    if not claimed:
        yield "every_call {}: no op of the entry documents {}".format(
            ", ".join(quote(str(n)) for n in every_call), "them all" if len(every_call) > 1 else "it"
        )
        return
    for name, values in every_call.items():
        for value in values:
            if not any(_documents(spec, op, dims[op], name, value) for op in claimed):
                yield "every_call {}: {} is not one of its documented values in {} ({})".format(
                    name,
                    clip(value, 40),
                    ", ".join(claimed[:3]),
                    clip(", ".join(map(domains.label, dims[claimed[0]][name])), 80),
                )


def _documents(spec: "Spec", op: str, dims: Mapping[str, List[Any]], name: str, value: Any) -> bool:
    from kbtool.specs import domains

    as_tuple = any(p["name"] == name and p.get("tuple") for p in spec.ops[op].get("signature", []))
    return domains.normal(value, as_tuple) in [domains.normal(v, as_tuple) for v in dims[name]]


def _case_ids(spec: "Spec", ops: List[str]) -> Set[str]:
    """The case ids of `ops` in the spec, and of the variants backends run of them."""
    from kbtool.specs import cases

    case_ids = cast(Callable[[Any, str], List[str]], cases.case_ids)  # (not annotated yet)
    ids: Set[str] = set()
    for op in ops:
        own = case_ids(spec, op)
        ids.update(own)
        ids.update(case_id + variant for variant in variant_suffixes(op) for case_id in own)
    return ids


def variant_suffixes(op: str) -> List[str]:
    """The case-id suffixes of the variants some built-in backend runs for `op`'s cases (e.g. Theano's
    '.kernel_flipped'): an entry may name those results by case glob and use them as `verified_by`."""
    return registry.variant_suffixes(op)
