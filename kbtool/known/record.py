"""`kbtool known record REPORT.json [--known FILE]`: make a known-differences file exact from a run.

Each entry's explanation is taken by its status and regex, as an unrecorded entry explains (first entry first), over
the report's results; the entry then gets `results` (the key and fingerprint of every result it explained,
kbtool/known/fingerprint.py) and `count`. The file is edited as text, by the positions YAML gives, so comments, order and
layout stay: the change is there to review in the diff.

A report of part of the spec records what it ran: an entry keeps the results it recorded for the op and backend
pairs the report did not run at all, and gets the report's for the rest. The report must hold every case of the ops
it ran (no --case, --mode or --examples filter), under the default keras.json settings and grid; of an interrupted
run, the pairs it ran whole are recorded and the others named (whole_pairs).
An entry that explains none of the results it targets in the report (stale), or only results that earlier entries
took (dead), is refused: fix or delete it first. Nothing is written unless every entry records cleanly.
"""

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union

from kbtool.errors import KbtoolError
from kbtool.files import clip
from kbtool.known import fingerprint
from kbtool.known.apply import apply
from kbtool.known.entry import KnownEntry
from kbtool.known.globs import backend_matches, backend_of, device_of, result_key
from kbtool.known.versions import BackendVersions, Versions, as_lookup
from kbtool.results import Result, Status
from kbtool.runners import names
from kbtool.vocabulary import DEFAULT_DEVICE, DEFAULT_PRECISION

# (op, backend as globs.backend_of gives it, device): a run on one device keeps what was recorded on another
Pair = Tuple[str, str, str]


@dataclass
class Recorded:
    """What recording a file from a report gives: the new file's text and what changed."""

    text: str
    entries: int = 0
    results: int = 0
    changed_entries: List[Any] = field(default_factory=list)  # the numbers of entries whose record changed


def comparable_problem(report: Dict[str, Any]) -> Optional[str]:
    """Why a report's results cannot be recorded whole (None when they can); an interrupted run's whole pairs can
    be (settings_problem and whole_pairs)."""
    if report.get("incomplete"):
        return "the run was interrupted ({})".format(report["incomplete"].get("note", ""))
    return settings_problem(report)


def settings_problem(report: Dict[str, Any]) -> Optional[str]:
    """Why a report's results cannot be recorded, its being interrupted aside (None when they can)."""
    plan = report.get("plan") or {}
    if not plan.get("all_cases", False):
        return "the run did not hold every case of its ops (--case, --mode, --examples or --last-failed): record from a run of whole ops"
    override = (report.get("keras_config") or {}).get("override")
    if override:
        return "the run overrode keras.json settings ({}): record from a run under the defaults".format(
            ", ".join(f"{k}={v}" for k, v in sorted(override.items()))
        )
    if report.get("grid", "pairwise") != "pairwise":
        return "the run expanded the grids as {!r}, not the default 'pairwise'".format(report["grid"])
    if plan.get("as_recorded") is False:
        values = (report.get("keras_config") or {}).get("values") or {}
        return (
            "the run's keras.json settings are not the documented defaults ({}): record from a run under them "
            "(`kbtool check --keras-config defaults`)"
        ).format(", ".join(f"{k} {v}" for k, v in sorted(values.items())))
    return None


def whole_pairs(report: Any, spec: Any) -> Tuple[List[Result], List[str]]:
    """(the results to record, the op × backend pairs left out, as 'op on backend'): all of a report that ran to the
    end; of an interrupted one (issue #33), those of each pair it ran whole, every case of the op in every mode, as
    the spec makes them at the report's seed and grid. A pair it ran in part is left out (recording it would drop
    what the entries recorded for its cases that did not run). The report's spec must be `spec`'s file."""
    results: List[Result] = list(report.results)
    if not report.incomplete:
        return results, []
    sha = (report.spec or {}).get("sha256")
    if sha is None or sha != _sha256(spec.path):
        raise KbtoolError(
            f"the run was interrupted and ran another spec than {spec.path}: which pairs it ran whole cannot be told"
        )
    from kbtool.specs.cases import cases_for

    wanted: Dict[str, Set[Tuple[str, str]]] = {}
    for op in sorted({r.op for r in results}):
        if op in spec.ops:
            cases = cases_for(spec, op, report.seed, grid=report.grid or "pairwise")
            wanted[op] = {(case.id, mode) for case in cases for mode in case.modes}
    ran: Dict[Pair, Set[Tuple[str, str]]] = {}
    for r in results:
        ran.setdefault((r.op, backend_of(r), device_of(r)), set()).add((r.case, r.mode))
    whole = {pair for pair, done in ran.items() if pair[0] in wanted and wanted[pair[0]] <= done}
    skipped = sorted(
        "{} on {}{}".format(op, backend, "" if device == DEFAULT_DEVICE else f" ({device})")
        for op, backend, device in set(ran) - whole
    )
    if not whole:
        raise KbtoolError("the run was interrupted before any op × backend pair ran whole: nothing to record")
    return [r for r in results if (r.op, backend_of(r), device_of(r)) in whole], skipped


def _sha256(path: str) -> Optional[str]:
    import hashlib

    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def _fresh(results: Sequence[Result]) -> List[Result]:
    """The results as their verdicts gave them: no entry's mark (known, changed)."""
    from dataclasses import replace

    out = []
    for r in results:
        status = Status(r.changed["status"]) if r.changed else Status(r.status)
        out.append(replace(r, status=status, known=None, changed=None))
    return out


def _pair(key: str) -> Pair:
    """(op, backend, device) of a recorded result key ('op case backend mode [device]', validated on load)."""
    words = key.split(" ")
    return (words[0], words[2], words[4] if len(words) > 4 else DEFAULT_DEVICE)


def _stood_for(entry: KnownEntry, key: str, value: fingerprint.Recorded, kept: Dict[str, fingerprint.Recorded]) -> bool:
    """Whether another record of the entry stands for `key` (apply.recorded_key), so it is not written twice: a
    release's result that the entry records for the release's base, or a result on a device that it records on the
    CPU (for the backend or its base), in either case with a fingerprint that holds for it."""
    op, case, backend, mode, *device = key.split(" ")
    backends = [backend]
    if names.is_release(backend) and backend_matches(names.base_of(backend), entry.backend):
        backends.append(names.base_of(backend))
    others = [" ".join([op, case, b, mode, *device]) for b in backends[1:]]
    if device:  # the CPU's key has no device word
        others += [" ".join([op, case, b, mode]) for b in backends]
    return any(other in kept and _holds(kept[other], value) for other in others)


def _holds(recorded: fingerprint.Recorded, value: fingerprint.Recorded) -> bool:
    return fingerprint.holds(recorded, value) if isinstance(value, str) else recorded == value


def record(
    text: str,
    root: Any,
    entries: List[KnownEntry],
    results: Sequence[Result],
    versions: Union[Versions, BackendVersions, None] = None,
    precision: str = DEFAULT_PRECISION,
    layered: Optional[Sequence[KnownEntry]] = None,
) -> Recorded:
    """The file `text` (parsed as `root`, whose entries are `entries`) with every entry's record made from
    `results`; a one-line KbtoolError naming the entries that are stale or dead in them. `versions` (the caller's
    lookup, `versions.lookup` of what the report's workers reported with the locks of those that reported nothing;
    or by backend what its worker reported, `versions.reported_versions` of the report's backends) is what entries'
    `versions` ranges are compared with. `layered` is every entry the run applies (the earlier known files' too),
    `entries` among them: the earlier files' entries take their results first. A release's results are recorded under the release's name (`op case
    tensorflow1[keras=2.2.4] mode`), by the entry that explains them: one naming the base backend (with a
    `versions` range, or without one) or the release itself; not where the entry records the base's result with the
    same fingerprint, which stands for the release's. A device's results (`op case backend mode gpu`) likewise,
    except where the entry's CPU record of the same call holds for them: only what fails otherwise on the device is
    written. An entry about another --precision than the report's (`precision`) is left as it is."""
    fresh = _fresh(results)
    lookup = as_lookup(versions)
    applied = apply(
        fresh,
        entries if layered is None else layered,
        whole_spec=False,
        all_cases=False,
        by_regex=True,
        versions=lookup,
        precision=precision,
    )
    by_number: Dict[Any, List[Result]] = applied.named
    ran: Set[Pair] = {(r.op, backend_of(r), device_of(r)) for r in fresh}
    problems = []
    out = Recorded(text=text)
    new_records: Dict[int, Dict[str, fingerprint.Recorded]] = {}
    for entry in entries:
        if entry.from_spec or entry.precision not in (None, precision):
            continue
        targeted = [r for r in fresh if entry.targets(r, lookup)]
        named = by_number.get(entry.place, [])
        if targeted and not named:
            explained = [r for r in targeted if entry.judge(r) is True]
            problems.append(
                "entry {} ({}): {}".format(
                    entry.number,
                    clip(entry.op, 60),
                    "dead: the results it explains were all taken by earlier entries"
                    if explained
                    else f"stale: explains none of the {len(targeted)} results it targets",
                )
            )
            continue
        kept = {key: value for key, value in (entry.results or {}).items() if _pair(key) not in ran}
        kept.update((result_key(r), _kept_record(entry, r)) for r in named)
        kept = {key: value for key, value in kept.items() if not _stood_for(entry, key, value, kept)}
        new = dict(sorted(kept.items()))
        number = int(entry.number)
        new_records[number] = new
        if new != dict(entry.results or {}) or entry.count != len(new):
            out.changed_entries.append(number)
        out.entries += 1
        out.results += len(new)
    if problems:
        raise KbtoolError(
            "{}{}; nothing written".format(problems[0], f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
        )
    out.text = _rewrite(text, root, new_records)
    return out


def _rewrite(text: str, root: Any, records: Dict[int, Dict[str, fingerprint.Recorded]]) -> str:
    """`text` with each numbered entry's `count` and `results` replaced (or added as its last keys)."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits: List[Tuple[int, int, str]] = []  # (start, end, replacement) in characters, applied from the end
    for number, node in enumerate(root.value, 1):
        if number not in records:
            continue
        recorded = records[number]
        if node.flow_style:  # {op: ..., reason: ...}: written again whole, as a flow mapping (no comments inside)
            pairs = [
                (text[k.start_mark.index : k.end_mark.index], text[v.start_mark.index : v.end_mark.index])
                for k, v in node.value
                if getattr(k, "value", None) not in ("count", "results")
            ]
            pairs += [("count", str(len(recorded))), ("results", json.dumps(recorded))]
            mapping = "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
            edits.append((node.start_mark.index, node.end_mark.index, mapping))
            continue
        indent = " " * node.value[0][0].start_mark.column
        first, end = node.start_mark.line, _end_line(node.value[-1][1])
        drop: Set[int] = set()
        for key, value in node.value:
            if getattr(key, "value", None) in ("count", "results"):
                drop.update(range(key.start_mark.line, _end_line(value)))
        body = [line for i, line in enumerate(lines[first:end], first) if i not in drop]
        blanks = 0
        while body and not body[-1].strip():  # blank lines closing the entry stay after the new keys
            body.pop()
            blanks += 1
        if body and not body[-1].endswith("\n"):
            body[-1] += "\n"
        body += [f"{indent}count: {len(recorded)}\n"] + _results_lines(indent, recorded) + ["\n"] * blanks
        # the entry's first line starts with the sequence's '- ': keep what precedes the node on it
        edits.append((starts[first], starts[min(end, len(lines))], "".join(body)))
    for start, end, new in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _end_line(node: Any) -> int:
    """The line after the node's last line (a block scalar's end mark sits at the start of the next line; a block
    collection's, past the comments after it: its last value's is taken)."""
    if isinstance(node.value, list) and node.value and not getattr(node, "flow_style", False):
        last = node.value[-1]
        return _end_line(last[1] if isinstance(last, tuple) else last)
    mark = node.end_mark
    return int(mark.line if mark.column == 0 else mark.line + 1)


def _kept_record(entry: KnownEntry, result: Result) -> fingerprint.Recorded:
    """The result's new record: its fingerprint, or the entry's record of it where that holds it (a list of the ways
    it may fail, a fingerprint with ANY: written by hand, with the reason saying why the failure varies)."""
    now = fingerprint.of_result(result)
    was = (entry.results or {}).get(result_key(result))
    return was if was is not None and fingerprint.holds(was, now) else now


def _results_lines(indent: str, recorded: Dict[str, fingerprint.Recorded]) -> List[str]:
    if not recorded:
        return [f"{indent}results: {{}}\n"]
    return [f"{indent}results:\n"] + [
        f"{indent}  {json.dumps(key)}: {json.dumps(value)}\n" for key, value in recorded.items()
    ]
