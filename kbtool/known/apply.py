"""Applying entries to a run's results: each result the first explaining entry names is marked known, a recorded
result that fails differently is `changed`, and each entry is counted and aged (stale, dead). It reads no file and
imports no backend code: the versions of the backends come from the caller (kbtool/known/versions.py)."""

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple, Union

from kbtool.known import fingerprint
from kbtool.known.entry import KnownEntry, entry_of, numbered, plain
from kbtool.known.globs import Key, ResultKey, backend_matches, backend_of, device_of, matches, result_key
from kbtool.known.globs import parts as result_parts
from kbtool.known.regexes import Number, Searches
from kbtool.known.versions import BackendVersions, Versions, as_lookup
from kbtool.results import Result, Status
from kbtool.runners import names
from kbtool.vocabulary import DEFAULT_DEVICE, DEFAULT_PRECISION

Change = Dict[str, Any]  # what makes a result `changed`: the entry, its reason, the status, both fingerprints


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
    # per entry (its `place`: file and number), the results it named
    named: Dict[Tuple[int, Number], List[Result]] = field(default_factory=dict)
    used: List[KnownEntry] = field(default_factory=list)  # the entries that targeted a result, in the files' order


@dataclass
class _Run:
    """One `apply`'s state: the results by key, which entry named each, the regex budget, the rows and stale
    entries so far (by the entry's index in the file), the releases failing otherwise than their base recorded."""

    results: Sequence[Result]
    versions: Versions
    by_regex: bool
    by_key: Dict[ResultKey, Result]
    named_by: Dict[int, KnownEntry] = field(default_factory=dict)  # id(result) -> the entry that named it
    searches: Searches = field(default_factory=Searches)
    rows: Dict[int, Dict[str, Any]] = field(default_factory=dict)
    stale: List[Tuple[int, Dict[str, Any]]] = field(default_factory=list)
    unlike_base: List[Tuple[int, Result, Change]] = field(default_factory=list)
    backends: Set[str] = field(default_factory=set)  # the backends that ran, and the bases of the releases among them


def apply(
    results: Sequence[Result],
    entries: Iterable[Union[KnownEntry, Mapping[str, Any]]],
    whole_spec: bool = True,
    all_cases: bool = True,
    planned_ops: Optional[Iterable[str]] = None,
    spec_ops: Optional[Iterable[str]] = None,
    by_regex: bool = False,
    versions: Union[Versions, BackendVersions, None] = None,
    precision: str = DEFAULT_PRECISION,
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

    `versions` (the caller's lookup, kbtool/known/versions.py, or by backend name the versions its worker reported:
    the report's backends[].versions) is what an entry's `versions` is compared with; a backend it has no versions
    for is in no range (the caller reads the locks of backends that reported nothing: `versions.lookup`). An entry
    with `versions` targets no result of a backend outside its range, so a run without such a release judges it as
    a run without its backend does: not stale. A base backend's recorded entry stands for its releases: a release's
    result that the entry did not record under the release's own name is looked up under the base's (explained
    while its fingerprint is the base's, `changed` when it fails differently and no other entry, before or after it
    in the file, explains it: a release's own difference, in an entry with `versions`, is not the base's change;
    passing on a release does not make the entry stale, which only the base's own results or the release's own
    recorded ones do).

    `precision` is the run's --precision: an entry with `precision` targets no result of a run at another one (a
    TF32 difference is about default precision; at highest, its calls pass and say nothing of it).

    Entries with `verified_by` are applied after the others: unrecorded, such an entry explains a result only where
    the variant of the same op, case, backend and mode (case id + the suffix) passed, or was explained by an entry
    without `verified_by` (its own, different cause: the difference the variant removes is then not the only one,
    and the other one is recorded on the variant's results). Recorded, it explains what it recorded (a variant that
    stops passing is a result of its own, unexplained).
    """
    listed = numbered(entries)
    run = _Run(results, as_lookup(versions), by_regex, {(r.op, r.case, r.backend, r.mode): r for r in results})
    run.backends = {name for r in results for name in (backend_of(r), names.base_of(backend_of(r)))}
    applied = Applied()
    order = [i for i, e in enumerate(listed) if not e.verified_by] + [i for i, e in enumerate(listed) if e.verified_by]
    for index in order:
        entry = listed[index]
        if entry.precision not in (None, precision):
            continue
        _apply_entry(run, applied, index, entry, judged(entry, whole_spec, all_cases, planned_ops, spec_ops))
    for index, result, change in run.unlike_base:  # changed, unless another entry explained it meanwhile
        if result.known is None and result.changed is None:
            result.changed = change
            result.status = Status.CHANGED
            run.rows[index]["changed"] = run.rows[index].get("changed", 0) + 1
    applied.counts = [run.rows[i] for i in sorted(run.rows)]
    applied.used = [listed[i] for i in sorted(run.rows)]
    applied.stale = [item for _, item in sorted(run.stale, key=lambda pair: pair[0])]
    run.searches.note_timeouts()
    return applied


def _apply_entry(run: _Run, applied: Applied, index: int, entry: KnownEntry, is_judged: bool) -> None:
    """Apply one entry (the `index`th of its file): mark what it explains, count it, age it."""
    targeted = [r for r in run.results if entry.targets(r, run.versions) and r.changed is None]
    exact = entry.recorded and not run.by_regex
    changed: List[Result] = []
    passing: List[Result] = []
    if exact:
        explained, changed, passing, unlike = _recorded(entry, targeted)
        run.unlike_base += [(index, result, change) for result, change in unlike]
    else:
        explained = _explained(run, entry, targeted)
    named = 0
    for result in explained:
        if result.known is None:
            result.known = entry.reason  # (an inherited one says so by the result's `inherits`)
            run.named_by[id(result)] = entry
            applied.named.setdefault(entry.place, []).append(result)
            named += 1
    if targeted:
        run.rows[index] = _row(entry, exact, len(targeted), len(explained), named, len(changed))
    note = _stale_note(entry, exact, targeted, explained, named, passing, is_judged, run)
    if note:
        run.stale.append((index, dict(entry.to_dict(), note=note)))


def _row(entry: KnownEntry, exact: bool, targeted: int, explained: int, named: int, changed: int) -> Dict[str, Any]:
    """The report's row for an entry that targeted results."""
    row: Dict[str, Any] = {
        "entry": entry.number,
        "op": plain(entry.op),
        "backend": plain(entry.backend),
        "reason": entry.reason,
        "targeted": targeted,
        "explained": explained,
        "named": named,
    }
    if entry.source is not None and not entry.from_spec:
        row["file"] = entry.source.path
    if entry.count is not None:
        row["count"] = entry.count
    if changed:
        row["changed"] = changed
    if not exact and not entry.from_spec:  # (a spec alias entry is exact by construction)
        row["unrecorded"] = True
    return row


def _explained(run: _Run, entry: KnownEntry, targeted: Sequence[Result]) -> List[Result]:
    """The targeted results an unrecorded entry explains by its status and regex (and its `verified_by`)."""
    explained: List[Result] = []
    for result in targeted:
        verdict = run.searches.judge(entry, result)
        if verdict is None:  # one timeout per entry: its regex searches no more messages
            break
        if verdict and _verified(entry, result, run.by_key, run.named_by):
            explained.append(result)
    return explained


def recorded_key(entry: KnownEntry, result: Any) -> Tuple[Optional[str], bool]:
    """(the key under which the entry recorded `result`, or None; whether that is the key of another run of the same
    call, which stands for it): the result's own key first; for a release, its base's key when the entry names the
    base (its record stands for its releases); for a result on a device, then the same keys on the CPU (a CPU record
    stands for every device: only a device result that fails otherwise needs a record of its own)."""
    recorded = entry.results or {}
    op, case, mode = result_parts(result, "op", "case", "mode")
    name, device = backend_of(result), device_of(result)
    candidates = [(name, device)]
    if names.is_release(name) and backend_matches(names.base_of(name), entry.backend):
        candidates.append((names.base_of(name), device))
    if device != DEFAULT_DEVICE:
        candidates += [(backend, DEFAULT_DEVICE) for backend, _ in list(candidates)]
    for number, (backend, on) in enumerate(candidates):
        key = result_key(Key(op, case, backend, mode, on))
        if key in recorded:
            return key, number > 0
    return None, False


def _recorded(
    entry: KnownEntry, targeted: Sequence[Result]
) -> Tuple[List[Result], List[Result], List[Result], List[Tuple[Result, Change]]]:
    """(explained, changed, passing now, unlike its base) among the targeted results an exact entry recorded. A
    release's result recorded under its base's key that passes is none of them (the release lacks the base's
    difference); one that fails otherwise is returned with what would make it `changed`, which `apply` does only
    when no other entry explains it."""
    recorded = entry.results or {}
    explained: List[Result] = []
    changed: List[Result] = []
    passing: List[Result] = []
    unlike: List[Tuple[Result, Change]] = []
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
        if fingerprint.holds_for(was, result):
            explained.append(result)
            continue
        change = {
            "entry": entry.number,
            "reason": entry.reason,
            "status": Status(result.status).value,
            "recorded": " or ".join(fingerprint.alternatives(was)),
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
    targeted: List[Result],
    explained: Sequence[Result],
    named: int,
    passing: Sequence[Result],
    is_judged: bool,
    run: _Run,
) -> Optional[str]:
    """Why the entry is stale in this run (None when it is not). A recorded entry none of whose recorded results
    ran is stale only where the run had the backend of one of them (a run of one keras3-* engine does not judge
    the entry of keras3-* that recorded the others' results: the case passes on the engine that ran)."""
    if exact:
        if passing:
            return "{} of its {} recorded results pass now ({}): record it again (kbtool known record)".format(
                len(passing), len(entry.results or {}), ", ".join(result_key(r) for r in passing[:3])
            )
        recorded_backends = {key.split(" ")[2] for key in entry.results or {}}
        if (
            is_judged
            and targeted
            and recorded_backends & run.backends
            and not any(recorded_key(entry, r)[0] is not None for r in targeted)
        ):
            return f"none of its {len(entry.results or {})} recorded results ran ({len(targeted)} results checked)"
        return None
    if not is_judged or not targeted:
        return None
    if not explained:
        return (
            f"did not reproduce in this run ({len(targeted)} results checked){run.searches.unsearched(entry, targeted)}"
        )
    if not named:
        return f"dead: the {len(explained)} results it explains were all explained by earlier entries"
    return None


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
