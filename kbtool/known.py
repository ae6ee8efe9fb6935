"""Known differences: recorded backend divergences, each with its reason, re-checked on every run.

An entry (specs/known_differences.yaml) targets results by op, case, backend, mode and status (each a glob or a
list of globs) and explains the targeted results whose message matches its regex. Here it is loaded and checked
(keys, types, regexes, and against the spec: the ops exist, the case globs name cases of those ops), applied
(the first entry that explains a result names it), counted, and aged: an entry that targets results in a run
that covers it, but explains none of them, no longer reproduces and is stale.

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
KEYS = GLOB_KEYS + ("match", "reason")
REQUIRED = ("op", "backend", "reason")
# the backends that implement Keras 2 names only (the reference, numpy, answers the Keras 1.x names too);
# "*.*" is any custom backend module
KERAS2_BACKENDS = ["tensorflow", "theano", "cntk", "*.*"]
REGEX_TIMEOUT = 1.0  # seconds one `match` search may take; past it the message does not match
MAX_PATTERN_CHARS = 1000  # a glob or regex (the shipped file's longest: 214)
MAX_GLOBS = 10000  # globs in one file, lists counted item by item (the shipped file: 623)


def load(path=None, spec=None):
    """The validated entries of a known-differences file (none when it does not exist)."""
    path = path or paths.known_differences_file()
    text = files.read_text(path, missing_ok=True)  # a one-line KbtoolError when it cannot be read
    if text is None:
        return []
    _, entries = files.parse_yaml(path, text)  # a one-line KbtoolError (FileProblem) for bad YAML or data
    entries = [] if entries is None else entries
    problems = validate(entries, spec)
    if problems:
        raise KbtoolError(files.one_line("{}: {}".format(path, problems[0]) + (
            " (and {} more problems)".format(len(problems) - 1) if len(problems) > 1 else "")))
    return entries


def validate(entries, spec=None):
    """Problems with the entries, as 'entry N (op): message' strings."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return ["expected a list of entries (op, backend, reason, ...)"]
    globs = sum(len(_globs(e[key])) for e in entries for key in GLOB_KEYS if _is_globs(e.get(key)))
    if globs > MAX_GLOBS:  # each is matched against every op and case id of the spec: bounded work
        return ["{} globs in {} entries; kbtool checks at most {} in one file".format(globs, len(entries), MAX_GLOBS)]
    problems = []
    for number, entry in enumerate(entries, 1):
        found = _entry_problems(number, entry)
        if spec is not None and not found:
            found = ["{}: {}".format(_where(number, entry), p) for p in _spec_problems(entry, spec)]
        problems.extend(found)
    return problems


def _entry_problems(number, entry):
    """Problems of one entry on its own (keys, types, regex, status words)."""
    where = _where(number, entry)
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        return ["entry {} lacks {}".format(number, ", ".join(missing))]
    problems = []
    unknown = sorted(str(key) for key in set(entry) - set(KEYS))  # YAML keys need not be strings
    if unknown:
        problems.append("{}: unknown key {} (keys are {})".format(where, files.clip(", ".join(unknown)),
                                                                  ", ".join(KEYS)))
    for key in GLOB_KEYS:
        if not _is_globs(entry.get(key, "*")):
            problems.append("{}: {} must be a glob or a list of globs".format(where, key))
        elif any(len(p) > MAX_PATTERN_CHARS for p in _globs(entry.get(key, "*"))):
            problems.append("{}: {} has a glob longer than {} characters".format(where, key, MAX_PATTERN_CHARS))
    if not isinstance(entry["reason"], str) or not entry["reason"].strip():
        problems.append("{}: reason must be a sentence".format(where))
    if "match" in entry:
        problem = regex_problem(entry["match"])
        if problem:
            problems.append("{}: {}".format(where, problem))
    if _is_globs(entry.get("status", "*")):
        words = [s.value for s in Status if s != Status.PASS]
        if not any(fnmatch.fnmatchcase(w, p) for p in _globs(entry.get("status", "*")) for w in words):
            problems.append("{}: status {} names no result status ({})".format(
                where, files.clip(entry["status"]), ", ".join(words)))
    return problems


def _where(number, entry):
    return "entry {} ({})".format(number, files.clip(entry.get("op", "?"), 60))


def regex_problem(pattern):
    """Why `pattern` cannot be a `match` (None when it can): a string that compiles in Python's `re` (what the
    file's authors read) and in the `regex` engine that searches with a time limit."""
    if not isinstance(pattern, str):
        return "match must be a regex (a string)"
    if len(pattern) > MAX_PATTERN_CHARS:
        return "match is longer than {} characters".format(MAX_PATTERN_CHARS)
    for engine in (re, regex):
        try:
            engine.compile(pattern)
        except (engine.error, ValueError, OverflowError, RecursionError, MemoryError) as exc:
            return "match is not a valid regex: {}".format(files.clip(exc))
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
    ops = [op for op in spec.ops if matches(op, entry["op"])]
    if not ops:
        yield "op {} names no op of the spec".format(files.clip(entry["op"]))
        return
    if "case" in entry:
        from .specs.cases import case_ids

        ids = {case_id for op in ops for case_id in case_ids(spec, op)}
        for pattern in _globs(entry["case"]):
            if not any(map(_glob_regex(pattern).match, ids)):
                yield "case {} names no case of {}".format(files.quote(pattern), ", ".join(ops[:5]))


def alias_entries(spec):
    """One entry per Keras 1.x alias in the spec: Keras 2 backends do not have the old name."""
    return [{"op": name, "backend": KERAS2_BACKENDS, "status": Status.UNSUPPORTED.value,
             "reason": "Keras 1.x name, renamed to {} in Keras 2".format(entry["alias_of"]), "source": "spec"}
            for name, entry in sorted(spec.ops.items()) if entry.get("alias_of")]


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
    return (matches(result.op, entry["op"]) and matches(result.case, entry.get("case", "*"))
            and matches(result.backend, entry["backend"]) and matches(result.mode, entry.get("mode", "*")))


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


def apply(results, entries, whole_spec=True, all_cases=True, planned_ops=None, spec_ops=None):
    """Mark each result that an entry explains (`result.known` = the first such entry's reason).

    Staleness is judged only where the run covers what an entry explains: every case of the ops it names
    (no --case, --mode or --examples filter), every op its globs match in the spec (when `planned_ops` and
    `spec_ops` say which), and the whole spec for an entry for every op ("*").
    """
    applied = Applied()
    number = 0  # entries of the file, counted as `validate` counts them; the spec's alias entries have none
    timeouts = []  # (result, entry number): noted once every entry has searched the messages
    for entry in entries:
        from_spec = entry.get("source") == "spec"
        number += 0 if from_spec else 1
        targeted = [r for r in results if targets(entry, r)]
        explained, timed_out = [], None
        for result in targeted:
            if timed_out is not None:  # one timeout per entry: its regex searches no more messages
                continue
            verdict = _explains(entry, result)
            if verdict is None:
                timed_out = result
                timeouts.append((result, "spec alias" if from_spec else number))
            elif verdict:
                explained.append(result)
        named = 0
        for result in explained:
            if result.known is None:
                result.known = entry["reason"]
                named += 1
        judged = all_cases and (whole_spec or (entry["op"] != "*" and _covers(entry, planned_ops, spec_ops)))
        stale = bool(targeted) and not explained and judged
        if targeted:
            applied.counts.append({"entry": "spec alias" if from_spec else number,
                                   "op": entry["op"], "backend": entry["backend"], "reason": entry["reason"],
                                   "targeted": len(targeted), "explained": len(explained), "named": named})
        if stale:
            applied.stale.append(dict(entry, note="did not reproduce in this run ({} results checked){}".format(
                len(targeted), "; its match regex timed out after {:g} s, so {} were not searched".format(
                    REGEX_TIMEOUT, len(targeted) - targeted.index(timed_out)) if timed_out is not None else "")))
    for result, entry_number in timeouts:
        note = "known-difference entry {}: its match regex timed out after {:g} s on this message (taken as " \
               "no match; later messages not searched)".format(entry_number, REGEX_TIMEOUT)
        result.note = note if not result.note else "{}; {}".format(result.note, note)
    return applied
