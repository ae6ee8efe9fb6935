"""Known differences: recorded backend divergences, each with its reason, re-checked on every run.

An entry (specs/known_differences.yaml) targets results by op, case, backend, mode and status (each a glob or a
list of globs) and explains the targeted results whose message matches its regex. Here it is loaded and checked
(keys, types, regexes, and against the spec: the ops exist, the case globs name cases of those ops), applied
(the first entry that explains a result names it), counted, and aged: an entry that targets results in a run
that covers it, but explains none of them, no longer reproduces and is stale.

The spec's Keras 1.x aliases bring their own entries: a Keras 2 backend that lacks the old name is explained by
the rename, and such an entry goes stale like any other once the backend has the name.
"""
import fnmatch
import re
from dataclasses import dataclass, field
from typing import Dict, List

import yaml

from . import files, paths
from .errors import KbtoolError
from .results import Status

GLOB_KEYS = ("op", "case", "backend", "mode", "status")
KEYS = GLOB_KEYS + ("match", "reason")
REQUIRED = ("op", "backend", "reason")
# the backends that implement Keras 2 names only (the reference, numpy, answers the Keras 1.x names too);
# "*.*" is any custom backend module
KERAS2_BACKENDS = ["tensorflow", "theano", "cntk", "*.*"]


def load(path=None, spec=None):
    """The validated entries of a known-differences file (none when it does not exist)."""
    path = path or paths.known_differences_file()
    try:
        with open(path, encoding="utf-8") as fh:
            entries = yaml.safe_load(fh) or []
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise KbtoolError("cannot read {}: {}".format(path, exc.strerror))
    except UnicodeDecodeError as exc:
        raise KbtoolError("{}: not UTF-8 text ({})".format(path, exc.reason))
    except yaml.YAMLError as exc:
        raise files.yaml_error(path, exc)
    problems = validate(entries, spec)
    if problems:
        raise KbtoolError("{}: {}".format(path, problems[0]) + (
            " (and {} more problems)".format(len(problems) - 1) if len(problems) > 1 else ""))
    return entries


def validate(entries, spec=None):
    """Problems with the entries, as 'entry N (op): message' strings."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        return ["expected a list of entries (op, backend, reason, ...)"]
    problems = []
    for number, entry in enumerate(entries, 1):
        found = _entry_problems(number, entry)
        if spec is not None and not found:
            found = ["entry {} ({}): {}".format(number, entry["op"], p) for p in _spec_problems(entry, spec)]
        problems.extend(found)
    return problems


def _entry_problems(number, entry):
    """Problems of one entry on its own (keys, types, regex, status words)."""
    where = "entry {} ({})".format(number, entry.get("op", "?"))
    missing = [k for k in REQUIRED if k not in entry]
    if missing:
        return ["entry {} lacks {}".format(number, ", ".join(missing))]
    problems = []
    unknown = sorted(set(entry) - set(KEYS))
    if unknown:
        problems.append("{}: unknown key {} (keys are {})".format(where, ", ".join(unknown), ", ".join(KEYS)))
    for key in GLOB_KEYS:
        if not _is_globs(entry.get(key, "*")):
            problems.append("{}: {} must be a glob or a list of globs".format(where, key))
    if not isinstance(entry["reason"], str) or not entry["reason"].strip():
        problems.append("{}: reason must be a sentence".format(where))
    if "match" in entry:
        if not isinstance(entry["match"], str):
            problems.append("{}: match must be a regex (a string)".format(where))
        else:
            try:
                re.compile(entry["match"])
            except re.error as exc:
                problems.append("{}: match is not a valid regex: {}".format(where, exc))
    if _is_globs(entry.get("status", "*")):
        words = [s.value for s in Status if s != Status.PASS]
        if not any(fnmatch.fnmatchcase(w, p) for p in _globs(entry.get("status", "*")) for w in words):
            problems.append("{}: status {} names no result status ({})".format(
                where, entry["status"], ", ".join(words)))
    return problems


def _spec_problems(entry, spec):
    ops = [op for op in spec.ops if matches(op, entry["op"])]
    if not ops:
        yield "op {} names no op of the spec".format(entry["op"])
        return
    if "case" in entry:
        from .specs.cases import cases_for

        ids = {case.id for op in ops for case in cases_for(spec, op)}
        for pattern in _globs(entry["case"]):
            if not any(fnmatch.fnmatchcase(i, pattern) for i in ids):
                yield "case {!r} names no case of {}".format(pattern, ", ".join(ops[:5]))


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
    return any(fnmatch.fnmatchcase(value, p) for p in _globs(patterns))


def targets(entry, result):
    """Whether the entry is about this result (op, case, backend, mode), whatever its outcome."""
    return (matches(result.op, entry["op"]) and matches(result.case, entry.get("case", "*"))
            and matches(result.backend, entry["backend"]) and matches(result.mode, entry.get("mode", "*")))


def explains(entry, result):
    """Whether a targeted result is a non-passing one with the entry's status and message."""
    return (result.status != Status.PASS and matches(Status(result.status).value, entry.get("status", "*"))
            and (not entry.get("match") or re.search(entry["match"], result.message) is not None))


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
    for entry in entries:
        from_spec = entry.get("source") == "spec"
        number += 0 if from_spec else 1
        targeted = [r for r in results if targets(entry, r)]
        explained = [r for r in targeted if explains(entry, r)]
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
            applied.stale.append(dict(entry, note="did not reproduce in this run ({} results checked)".format(
                len(targeted))))
    return applied
