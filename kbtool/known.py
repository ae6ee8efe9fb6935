"""Known differences: recorded backend divergences, each with its reason, re-checked on every run.

An entry (specs/known_differences.yaml) targets results by op, case, backend, mode and status (each a glob or a
list of globs) and explains the targeted results whose message matches its regex. Here it is loaded and checked
(keys, types, regexes, and against the spec: the ops exist, the case globs name cases of those ops), applied
(the first entry that explains a result names it), counted, and aged: an entry that targets results in a run
that covers it, but explains none of them, no longer reproduces and is stale.

Entries are precise enough to gate on, or the file is refused: each lists its ops by name (no glob), narrows them
by a case glob other than '*' or a message regex, names backends kbtool knows, and records `count`, how many
results it explained in the last full default run; explaining more than that on a comparable run is reported as
growth (`grown`), so a new failure cannot hide under an old reason unreviewed. An entry with `verified_by` (a
variant's case-id suffix such as Theano's '.kernel_flipped') explains a result only where that variant of the same
call passed, or is explained by an entry without `verified_by` (a second cause of its own).

The spec's Keras 1.x aliases bring their own entries: a Keras 2 backend that lacks the old name is explained by
the rename, and such an entry goes stale like any other once the backend has the name.

The file may be hostile: it is read within kbtool/files.py's limits (a regular file, 20 MB, bounded YAML), every
problem is one line quoting at most ~100 characters of it, and regexes run on the `regex` engine with a time
limit: a search that times out does not match, and the result says so in its note.
"""

import fnmatch
import functools
import re
from dataclasses import dataclass, field
from typing import Dict, List

import regex

from . import files, paths
from .errors import KbtoolError
from .results import Status

GLOB_KEYS = ("op", "case", "backend", "mode", "status")
KEYS = GLOB_KEYS + ("match", "reason", "count", "verified_by")
REQUIRED = ("op", "backend", "reason")  # `count` is required too, but checked after the rest (a clearer first problem)
OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # an entry lists its ops by name: no glob may stand for them
GLOB_CHARS = re.compile(r"[*?\[]")
# the backends that implement Keras 2 names only (the reference, numpy, answers the Keras 1.x names too);
# "*.*" is any custom backend module
KERAS2_BACKENDS = ["tensorflow", "tensorflow1", "theano", "cntk", "mxnet", "plaidml", "keras3", "*.*"]
REGEX_TIMEOUT = 1.0  # seconds one `match` search may take; past it the message does not match
MAX_PATTERN_CHARS = 1000  # a glob or regex (the shipped file's longest: 214)
MAX_GLOBS = 10000  # globs in one file, lists counted item by item (the shipped file: 623)


def load(path=None, spec=None):
    """The validated entries of a known-differences file (none when it does not exist)."""
    path = path or paths.known_differences_file()
    text = files.read_text(path, missing_ok=True)  # a one-line KbtoolError when it cannot be read
    if text is None:
        return []
    root, entries = files.parse_yaml(path, text)  # a one-line KbtoolError (FileProblem) for bad YAML or data
    entries = [] if entries is None else entries
    problems = _numbered_problems(entries, spec)
    if problems:
        number, first = problems[0]
        raise KbtoolError(
            files.one_line(
                f"{_position(path, root, number)}: {first}"
                + (f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else "")
            )
        )
    return entries


def _position(path, root, number):
    """file:line of entry `number` (counted from 1), or the file alone for a problem of the whole file."""
    nodes = getattr(root, "value", None)
    if number is None or not isinstance(nodes, list) or not 0 < number <= len(nodes):
        return path
    return f"{path}:{nodes[number - 1].start_mark.line + 1}"


def validate(entries, spec=None):
    """Problems with the entries, as 'entry N (op): message' strings."""
    return [problem for _, problem in _numbered_problems(entries, spec)]


def _numbered_problems(entries, spec=None):
    """(entry number or None for the whole file, 'entry N (op): message') for every problem, in order."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return [(None, "expected a list of entries (op, backend, reason, count, ...)")]
    globs = sum(len(_globs(e[key])) for e in entries for key in GLOB_KEYS if _is_globs(e.get(key)))
    if globs > MAX_GLOBS:  # each is matched against every op and case id of the spec: bounded work
        return [(None, f"{globs} globs in {len(entries)} entries; kbtool checks at most {MAX_GLOBS} in one file")]
    problems = []
    for number, entry in enumerate(entries, 1):
        found = _entry_problems(number, entry)
        if spec is not None and not found:
            found = [f"{_where(number, entry)}: {p}" for p in _spec_problems(entry, spec)]
        problems.extend((number, problem) for problem in found)
    return problems


def _entry_problems(number, entry):
    """Problems of one entry on its own (keys, types, regex, status words, the rules that keep it precise)."""
    where = _where(number, entry)
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        return ["entry {} lacks {}".format(number, ", ".join(missing))]
    problems = []
    unknown = sorted(str(key) for key in set(entry) - set(KEYS))  # YAML keys need not be strings
    if unknown:
        problems.append(
            "{}: unknown key {} (keys are {})".format(where, files.clip(", ".join(unknown)), ", ".join(KEYS))
        )
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
        words = [s.value for s in Status if s != Status.PASS]
        if not any(fnmatch.fnmatchcase(w, p) for p in _globs(entry.get("status", "*")) for w in words):
            problems.append(
                "{}: status {} names no result status ({})".format(where, files.clip(entry["status"]), ", ".join(words))
            )
    problems.extend(f"{where}: {p}" for p in _precision_problems(entry))
    return problems


def _precision_problems(entry):
    """The rules that keep an entry from absorbing results it was not written for: it names its ops, narrows
    them by case or message, names backends kbtool knows, and records how many results it explained."""
    if entry["op"] == [] or entry["backend"] == []:
        yield "{} is an empty list".format("op" if entry["op"] == [] else "backend")
    if _is_globs(entry["op"]):
        for name in _globs(entry["op"]):
            if len(name) <= MAX_PATTERN_CHARS and not OP_NAME.match(name):
                yield f"op {files.quote(name)} is not an op name (an entry lists the ops it is about; no glob such as '*')"
    if _is_globs(entry["backend"]):
        for pattern in _globs(entry["backend"]):
            if len(pattern) <= MAX_PATTERN_CHARS and not known_backend(pattern):
                yield (
                    "backend {} names no backend kbtool knows ({}, or a custom module spelled out, such as "
                    "my_package.my_module@theano)".format(files.quote(pattern), ", ".join(_builtin()))
                )
    well_typed = _is_globs(entry.get("case", "*")) and isinstance(entry.get("match", ""), str)
    if well_typed and not _narrows(entry):  # (a mistyped case or match is reported as such)
        yield "narrows nothing: give a case glob other than '*' or a match regex"
    if "count" not in entry:
        yield (
            "lacks count (how many results it explained in the last full run; "
            "scripts/record-known-counts.py REPORT.json writes it)"
        )
    elif isinstance(entry["count"], bool) or not isinstance(entry["count"], int) or entry["count"] < 0:
        yield "count must be a whole number >= 0, not {}".format(files.quote(entry["count"]))
    if "verified_by" in entry and not (
        isinstance(entry["verified_by"], str) and VARIANT_SUFFIX.match(entry["verified_by"])
    ):
        yield "verified_by must be a variant's case-id suffix such as .kernel_flipped, not {}".format(
            files.quote(entry["verified_by"])
        )


VARIANT_SUFFIX = re.compile(r"\.[A-Za-z0-9_]+\Z")


def _narrows(entry):
    """A case glob that is not every case, or a non-empty message regex."""
    case = entry.get("case")
    by_case = _is_globs(case) and bool(_globs(case)) and not any(set(p) <= {"*"} for p in _globs(case))
    return by_case or (isinstance(entry.get("match"), str) and entry["match"] != "")


def _builtin():
    from .runners.registry import BUILTIN

    return BUILTIN


def known_backend(pattern):
    """Whether a backend glob names a backend kbtool knows: it matches a built-in name, or it is a custom module's
    name spelled out (my_package.my_module, or my_package.my_module@ENV with a managed ENV); custom names cannot be
    globbed, since no list of them exists to check a glob against."""
    from .runners import custom
    from .runners.registry import RECIPES

    if any(fnmatch.fnmatchcase(name, pattern) for name in _builtin()):
        return True
    if GLOB_CHARS.search(pattern) or not custom.is_custom(pattern):
        return False
    module, at, env = pattern.partition("@")
    if not at and "." not in module:  # a plain module name (as keras.json may give) only where it imports: a
        return custom.importable(module)  # misspelt built-in ('tensorflw', 'tf') is refused, not taken for one
    return "." in module and (not at or env in RECIPES)


def _where(number, entry):
    return "entry {} ({})".format(number, files.clip(entry.get("op", "?"), 60))


def regex_problem(pattern):
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
            return f"match is not a valid regex: {files.clip(exc)}"
    return None


def search(pattern, text):
    """Whether `pattern` matches anywhere in `text`: True, False, or None when the search timed out."""
    try:
        return _compiled(pattern).search(text, timeout=REGEX_TIMEOUT) is not None
    except TimeoutError:
        return None


@functools.lru_cache(maxsize=512)
def _compiled(pattern):
    return regex.compile(pattern)  # regex.search() itself costs ~10x more per call than a compiled pattern's


def _spec_problems(entry, spec):
    names = _globs(entry["op"])
    for name in names:
        if name not in spec.ops:
            yield f"op {files.clip(name)} names no op of the spec"
    ops = [name for name in names if name in spec.ops]
    if not ops:
        return
    suffix = entry.get("verified_by")
    if suffix is not None:
        lacking = [op for op in ops if suffix not in variant_suffixes(op)]
        if lacking:
            yield "verified_by {}: no backend runs that variant of {}".format(
                files.quote(suffix), ", ".join(lacking[:5])
            )
    if "case" in entry:
        from .specs.cases import case_ids

        ids = set()
        for op in ops:
            own = case_ids(spec, op)
            ids.update(own)
            ids.update(case_id + variant for variant in variant_suffixes(op) for case_id in own)
        for pattern in _globs(entry["case"]):
            if not any(map(_glob_regex(pattern).match, ids)):
                yield "case {} names no case of {}".format(files.quote(pattern), ", ".join(ops[:5]))


def variant_suffixes(op: str) -> List[str]:
    """The case-id suffixes of the variants some built-in backend runs for `op`'s cases (e.g. Theano's
    '.kernel_flipped'): an entry may name those results by case glob and use them as `verified_by`."""
    from .runners import registry

    return registry.variant_suffixes(op)


def alias_entries(spec):
    """One entry per Keras 1.x alias in the spec: Keras 2 backends do not have the old name."""
    return [
        {
            "op": name,
            "backend": KERAS2_BACKENDS,
            "status": Status.UNSUPPORTED.value,
            "reason": "Keras 1.x name, renamed to {} in Keras 2".format(entry["alias_of"]),
            "source": "spec",
        }
        for name, entry in sorted(spec.ops.items())
        if entry.get("alias_of")
    ]


def _is_globs(value):
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _globs(patterns):
    return [patterns] if isinstance(patterns, str) else patterns


def matches(value, patterns):
    """A glob, or a list of globs any of which may match."""
    compiled = _glob_regex(patterns)
    return compiled is not None and compiled.match(value) is not None


_GLOB_REGEXES = {}  # a glob (by value) or a list of globs (by identity, kept alive here: entries are never
# changed once loaded) → one compiled regex


def _glob_regex(patterns):
    """One regex for a glob or a list of globs (fnmatch's translation, as alternatives): a result is then matched
    in one search, however many globs an entry lists (10,000 globs × 7,500 results took 20 s one by one)."""
    key = patterns if isinstance(patterns, str) else id(patterns)
    hit = _GLOB_REGEXES.get(key)
    if hit is not None and (isinstance(patterns, str) or hit[0] is patterns):
        return hit[1]
    globs = _globs(patterns)
    compiled = re.compile("|".join(fnmatch.translate(p) for p in globs)) if globs else None
    if len(_GLOB_REGEXES) >= 4096:
        _GLOB_REGEXES.clear()
    _GLOB_REGEXES[key] = (patterns, compiled)
    return compiled


def targets(entry, result):
    """Whether the entry is about this result (op, case, backend, mode), whatever its outcome."""
    return (
        matches(result.op, entry["op"])
        and matches(result.case, entry.get("case", "*"))
        and matches(result.backend, entry["backend"])
        and matches(result.mode, entry.get("mode", "*"))
    )


def explains(entry, result):
    """Whether a targeted result is a non-passing one with the entry's status and message (a regex search that
    times out does not match)."""
    return _explains(entry, result) is True


def _explains(entry, result):
    """True, False, or None when the entry's regex timed out on the result's message."""
    if result.status == Status.PASS or not matches(Status(result.status).value, entry.get("status", "*")):
        return False
    return True if not entry.get("match") else search(entry["match"], result.message)


def _covers(entry, planned_ops, spec_ops):
    """Whether every spec op that the entry's op globs match was planned (unknown: assume so)."""
    if planned_ops is None or spec_ops is None:
        return True
    named = [op for op in spec_ops if matches(op, entry["op"])]
    return set(named) <= set(planned_ops)


@dataclass
class Applied:
    """What applying the entries to a run found: per entry, how many results it targeted and explained."""

    counts: List[Dict] = field(default_factory=list)
    stale: List[Dict] = field(default_factory=list)


def apply(results, entries, whole_spec=True, all_cases=True, planned_ops=None, spec_ops=None, counts_comparable=None):
    """Mark each result that an entry explains (`result.known` = the first such entry's reason).

    Staleness and growth are judged only where the run covers what an entry explains: every case of the ops it
    names (no --case, --mode or --examples filter), every op its globs match in the spec (when `planned_ops` and
    `spec_ops` say which), and the whole spec for an entry for every op ("*"). Growth (an entry explaining more
    results than its recorded `count`) also needs `counts_comparable` (plan.counts_comparable: a default run, no
    --keras-config or other grid); None means whole_spec and all_cases.

    Entries with `verified_by` are applied after the others: such an entry explains a result only where the
    variant of the same op, case, backend and mode (case id + the suffix) passed, or was explained by an entry
    without `verified_by` (its own, different cause: the difference the variant removes is then not the only one,
    and the other one is recorded on the variant's results).
    """
    applied = Applied()
    comparable = (whole_spec and all_cases) if counts_comparable is None else counts_comparable
    numbers, number = (
        [],
        0,
    )  # entries of the file, counted as `validate` counts them; the spec's alias entries have none
    for entry in entries:
        from_spec = entry.get("source") == "spec"
        number += 0 if from_spec else 1
        numbers.append("spec alias" if from_spec else number)
    named_by = {}  # id(result) -> the entry that named it
    by_key = {(r.op, r.case, r.backend, r.mode): r for r in results}
    timeouts = []  # (result, entry number): noted once every entry has searched the messages
    rows = {}
    order = [i for i, e in enumerate(entries) if not e.get("verified_by")] + [
        i for i, e in enumerate(entries) if e.get("verified_by")
    ]
    for index in order:
        entry, entry_number = entries[index], numbers[index]
        targeted = [r for r in results if targets(entry, r)]
        explained, timed_out = [], None
        for result in targeted:
            if timed_out is not None:  # one timeout per entry: its regex searches no more messages
                continue
            verdict = _explains(entry, result)
            if verdict is None:
                timed_out = result
                timeouts.append((result, entry_number))
            elif verdict and _verified(entry, result, by_key, named_by):
                explained.append(result)
        named = 0
        for result in explained:
            if result.known is None:
                result.known = entry["reason"]
                named_by[id(result)] = entry
                named += 1
        judged = all_cases and (whole_spec or (entry["op"] != "*" and _covers(entry, planned_ops, spec_ops)))
        stale = bool(targeted) and not explained and judged
        if targeted:
            row = {
                "entry": entry_number,
                "op": entry["op"],
                "backend": entry["backend"],
                "reason": entry["reason"],
                "targeted": len(targeted),
                "explained": len(explained),
                "named": named,
            }
            if isinstance(entry.get("count"), int) and not isinstance(entry.get("count"), bool):
                row["count"] = entry["count"]
                if judged and comparable and len(explained) > entry["count"]:
                    row.update(grown=True, grown_by=len(explained) - entry["count"])
            rows[index] = row
        if stale:
            applied.stale.append(
                (
                    index,
                    dict(
                        entry,
                        note="did not reproduce in this run ({} results checked){}".format(
                            len(targeted),
                            f"; its match regex timed out after {REGEX_TIMEOUT:g} s, so {len(targeted) - targeted.index(timed_out)} were not searched"
                            if timed_out is not None
                            else "",
                        ),
                    ),
                )
            )
    applied.counts = [rows[i] for i in sorted(rows)]
    applied.stale = [item for _, item in sorted(applied.stale, key=lambda pair: pair[0])]
    for result, entry_number in timeouts:
        note = (
            f"known-difference entry {entry_number}: its match regex timed out after {REGEX_TIMEOUT:g} s on this message (taken as "
            "no match; later messages not searched)"
        )
        result.note = note if not result.note else f"{result.note}; {note}"
    return applied


def _verified(entry, result, by_key, named_by):
    """For a `verified_by` entry: the variant result of the same call passed, or another cause explains it."""
    suffix = entry.get("verified_by")
    if not suffix:
        return True
    variant = by_key.get((result.op, result.case + suffix, result.backend, result.mode))
    if variant is None:
        return False
    if Status(variant.status) == Status.PASS:
        return True
    other = named_by.get(id(variant))
    return other is not None and not other.get("verified_by")


def grown(report_counts):
    """The rows of a report's known_differences whose entry explained more results than recorded."""
    return [row for row in report_counts if row.get("grown")]
