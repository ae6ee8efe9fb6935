"""`kbtool report merge`: one report from the reports of shards (`check --shard K/N`) or of backends run on
different machines, judged as one run.

The parts must come from the same spec (its SHA-256), seed, grid, keras.json override and known-difference entries,
and hold no result twice; each difference is refused in one line naming the two files. The merged report is the
union of their results, sorted as a check sorts them, re-judged by the known differences the parts applied: those
they embed (`check --embed-known`, or an older kbtool's reports), else each entry they reference found by its hash in
the known files at hand (--known, the shipped file, the files the parts name where they are at hand unchanged): staleness and growth are judged only when the parts together are the whole plan, i.e. for every
backend that ran, either one unsharded report or shards 1..N of one N, all with the same selection. Its
`wall_seconds` is the longest part's (the parts ran side by side); `merged_from` lists each part's own.
"""

import os
import re
from dataclasses import fields
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, cast

from kbtool import __version__, known
from kbtool.errors import KbtoolError
from kbtool.known import KnownEntry, layers
from kbtool.reports.assemble import now
from kbtool.reports.report import Report
from kbtool.results import DID_NOT_RUN, BackendStatus, Result, Status

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.known import KnownFiles

Record = Dict[str, Any]
Part = Tuple[str, Record]  # (the file's name as the user gave it, its report)

REQUIRED = ("plan",)  # what a report needs for merge (kbtool check writes it), and known_refs or known_entries
SELECTION = ("ops", "case_patterns", "modes", "examples_only", "last_failed")  # what a part's plan selected
# the note known.apply appends when a regex timed out: dropped before re-judging, which appends it again
TIMEOUT_NOTE = re.compile(
    r"(?:^|; )known-difference entry [^;]*?: its match regex timed out after .*?"
    r"later messages not searched\)"
)


def distinct_files(names: Sequence[str]) -> List[str]:
    """The files to merge, each once: a file given twice (by the same or another path, a symlink) is a KbtoolError."""
    seen: Dict[str, str] = {}
    for name in names:
        real = os.path.realpath(name)
        if real in seen:
            raise KbtoolError("{} is given twice{}".format(name, "" if seen[real] == name else f" (as {seen[real]})"))
        seen[real] = name
    return list(names)


def merge(
    parts: List[Part], allow_incomplete: bool = False, strict: bool = False, known_files: Optional["KnownFiles"] = None
) -> Record:
    """The merged report of `parts`, a list of (name, report) (names as the user gave the files); the entries they
    reference are looked for in `known_files` (default: the shipped file) too."""
    from kbtool.runners import envs

    if not parts:
        raise KbtoolError("nothing to merge: name the reports")
    for name, report in parts:
        _mergeable(name, report, allow_incomplete)
    first_name, first = parts[0]
    for name, report in parts[1:]:
        _same_run(first_name, first, name, report)
    results = fresh_results(parts)
    infos = _backends(parts)
    plan = _plan(parts, infos)
    order = {info["name"]: i for i, info in enumerate(infos)}
    results.sort(key=lambda r: (r.op, r.case, order.get(r.backend, len(order)), r.mode))
    entries = _entries(parts, known_files)
    applied = known.apply(
        results,
        entries,
        whole_spec=plan["whole_spec"],
        all_cases=plan["all_cases"],
        planned_ops=plan["ops"],
        spec_ops=set(plan.get("checkable_ops") or plan["ops"]),
        by_regex=not plan["as_recorded"],
        versions=known.lookup(results, known.reported_versions(infos), envs.read_lock),
        precision=str(plan.get("precision", "default")),
    )
    return Report(
        kbtool=__version__,
        created=now(),
        seed=first["seed"],
        spec=dict(first["spec"], ops=len(plan["ops"]), cases=_cases(parts)),
        filters=_filters(parts),
        grid=first.get("grid"),
        keras_config=dict(first["keras_config"], ran=_union_of(p["keras_config"]["ran"] for _, p in parts))
        if "keras_config" in first
        else None,
        active_backend=first.get("active_backend"),
        has_active_backend="active_backend" in first,
        backends=infos,
        results=results,
        known_differences=applied.counts,
        stale_known_differences=applied.stale,
        wall_seconds=max(p["wall_seconds"] for _, p in parts),
        resources=first.get("resources"),
        known_file=first.get("known_file"),
        known_files=first.get("known_files"),
        known_refs=None if "known_refs" not in first else [layers.reference(e) for e in applied.used],
        known_entries=entries if "known_refs" not in first else _embedded(parts, applied.used),
        plan=plan,
        incomplete=_incomplete(parts, len(results)),
        merged_from=[part_record(name, report) for name, report in parts],
        strict=strict,
    ).to_dict()


def _incomplete(parts: List[Part], ran: int) -> Optional[Record]:
    """The merged report's `incomplete` when a part was interrupted (None when none was)."""
    interrupted = [(name, report) for name, report in parts if report.get("incomplete")]
    if not interrupted:
        return None
    return {
        "signal": interrupted[0][1]["incomplete"]["signal"],
        "planned": sum(
            p["incomplete"].get("planned", len(p["results"])) if p.get("incomplete") else len(p["results"])
            for _, p in parts
        ),
        "ran": ran,
        "note": "merged from {} reports, {} of them interrupted: {}".format(
            len(parts),
            len(interrupted),
            "; ".join("{} ({})".format(name, r["incomplete"]["note"]) for name, r in interrupted),
        ),
    }


def _entries(parts: List[Part], known_files: Optional["KnownFiles"]) -> List[KnownEntry]:
    """The entries the merged report is judged by: an older kbtool's parts' embedded ones (all alike, `_same_run`),
    else the union of what each part references, in the order the files apply them."""
    first_name, first = parts[0]
    if "known_refs" not in first:
        entries = report_entries(first_name, first)
        for name, report in parts[1:]:
            report_entries(name, report)
        return entries
    pool: List[KnownEntry] = []
    if any(report.get("known_entries") is None for _, report in parts):  # some entry is to be found in files
        from kbtool.specs import loader

        pool = layers.load_layers(known_files or layers.SHIPPED) + known.alias_entries(loader.load())
        pool += [e for name, report in parts for e in layers.at_hand(name, report)]
    found = [e for name, report in parts for e in layers.resolve(name, report, pool)]
    return layers.in_order(found)


def _embedded(parts: List[Part], used: List[KnownEntry]) -> Optional[List[KnownEntry]]:
    """The merged report embeds the entries it applied where every part embedded its own."""
    return list(used) if all(report.get("known_entries") is not None for _, report in parts) else None


def report_entries(name: str, report: Record) -> List[KnownEntry]:
    """The part's known entries, held to the known file's rules; where the known file it names is at hand with the
    recorded SHA-256, they must be that file's entries (an edited report cannot explain its own failures)."""
    from kbtool import known
    from kbtool.reports.assemble import sha256_of

    entries = known.from_report(report["known_entries"], name)
    recorded = report.get("known_file") or {}
    path, digest = recorded.get("path"), recorded.get("sha256")
    if path and not os.path.isabs(path) and not os.path.exists(path):  # relative to where the check ran: try
        path = os.path.join(os.path.dirname(os.path.abspath(name)), path)  # beside the report too
    if path and digest and sha256_of(path).get("sha256") == digest:
        try:
            written = known.load(path)
        except KbtoolError:
            written = None
        own = [e for e in entries if not e.from_spec]
        if written is not None and own != written:
            where = next((i for i, (x, y) in enumerate(zip(own, written)) if x != y), min(len(own), len(written)))
            raise KbtoolError(
                f"{name}: its known_entries are not those of the known file it names ({path}, same SHA-256): they "
                f"differ at entry {where + 1}; the report was edited, so its verdict cannot be trusted: run its check again"
            )
    return entries


def _mergeable(name: str, report: Record, allow_incomplete: bool) -> None:
    missing = [key for key in REQUIRED if key not in report]
    missing += [] if "known_refs" in report or "known_entries" in report else ["known_entries"]
    missing += [] if report["spec"].get("sha256") else ["spec.sha256"]
    if missing:
        raise KbtoolError(
            "{}: cannot be merged: it lacks {} (written by an older kbtool); run its check again".format(
                name, ", ".join(missing)
            )
        )
    if report.get("incomplete") and not allow_incomplete:
        raise KbtoolError(
            "{}: the check was interrupted ({}); merge it anyway with --allow-incomplete".format(
                name, report["incomplete"].get("note", report["incomplete"].get("signal"))
            )
        )


def _same_run(name_a: str, a: Record, name_b: str, b: Record) -> None:
    """Refuse two parts that are not parts of one run, naming both files and what differs."""
    checks: List[Tuple[str, Any, Any, Callable[[Any], str]]] = [
        ("different specs", a["spec"]["sha256"], b["spec"]["sha256"], lambda v: "sha256 " + v[:12]),
        ("different seeds", a["seed"], b["seed"], str),
        ("different grids", a.get("grid", "pairwise"), b.get("grid", "pairwise"), str),
        (
            "different --keras-config",
            _override(a),
            _override(b),
            lambda v: ", ".join(f"{k}={v[k]}" for k in sorted(v)) or "none",
        ),
        # --device / --precision (recorded in the plan only when not the default)
        ("different devices", _plan_value(a, "device", "cpu"), _plan_value(b, "device", "cpu"), str),
        (
            "different precisions",
            _plan_value(a, "precision", "default"),
            _plan_value(b, "precision", "default"),
            str,
        ),
    ]
    for what, x, y, show in checks:
        if x != y:
            raise KbtoolError(
                f"{name_a} and {name_b} come from {what} ({show(x)} vs {show(y)}); only parts of one run merge"
            )
    if ("known_refs" in a) != ("known_refs" in b):
        raise KbtoolError(
            f"{name_a} and {name_b} come from different kbtool versions (one references its known entries, the other "
            "embeds them all); run both checks with one kbtool"
        )
    if "known_refs" in a:
        files_a, files_b = _known_files(a), _known_files(b)
        if _layers(a) != _layers(b):  # the same bytes in the same order: each machine installs them at its own path
            raise KbtoolError(
                f"{name_a} and {name_b} applied different known files ({', '.join(files_a) or 'none'} vs "
                f"{', '.join(files_b) or 'none'}); run both with the same files"
            )
        return
    if a["known_entries"] != b["known_entries"]:
        entries_a, entries_b = a["known_entries"], b["known_entries"]
        where = next(
            (i for i, (x, y) in enumerate(zip(entries_a, entries_b)) if x != y), min(len(entries_a), len(entries_b))
        )
        raise KbtoolError(
            f"{name_a} and {name_b} applied different known differences ({len(entries_a)} vs {len(entries_b)} entries, the first difference at "
            f"entry {where + 1}); run both with the same file"
        )


def _layers(report: Record) -> List[Tuple[Any, bool]]:
    """The known files a report applied, by content and layer (the shipped one or a user's): their paths differ
    from machine to machine (site-packages, a job's workspace)."""
    return [(f.get("sha256"), bool(f.get("shipped"))) for f in report.get("known_files") or []]


def _known_files(report: Record) -> List[str]:
    """The known files a report applied, as 'PATH (sha256 …)' (a file is the same file by its bytes)."""
    return [f"{f.get('path')} ({str(f.get('sha256', 'unread'))[:12]})" for f in report.get("known_files") or []]


def _plan_value(report: Record, key: str, default: str) -> Any:
    return (report.get("plan") or {}).get(key, default)


def _override(report: Record) -> Dict[str, Any]:
    return dict((report.get("keras_config") or {}).get("override") or {})


def fresh_results(parts: List[Part]) -> List[Result]:
    """Every part's results as Result objects (not yet judged by the known differences); a result held by two
    parts is refused."""
    names = {f.name for f in fields(Result)}
    held: Dict[Tuple[str, str, str, str], str] = {}
    results: List[Result] = []
    for name, report in parts:
        for record in report["results"]:
            key = (record["op"], record["case"], record["backend"], record["mode"])
            if key in held:
                raise KbtoolError(
                    "{} and {} both hold {} {} on {} ({}): the reports overlap; merge the shards of "
                    "one run, or runs of different backends".format(held[key], name, *key)
                )
            held[key] = name
            result = Result(**{k: v for k, v in record.items() if k in names})
            result.status, result.known = Status(result.status), None
            if result.changed:  # judged again below: the verdict's own status, before an entry named it changed
                result.status, result.changed = Status(result.changed["status"]), None
            if result.note:
                result.note = TIMEOUT_NOTE.sub("", result.note) or None
            results.append(result)
    return results


def _backends(parts: List[Part]) -> List[Record]:
    """One info per backend, in the order the parts name them: a backend that ran in any part is described by
    those parts (one that could not start in one of them is broken), and the same backend at different versions
    is refused."""
    ran: Dict[str, List[Tuple[str, Record]]] = {}
    idle: Dict[str, Record] = {}
    seen: List[str] = []
    for name, report in parts:
        for info in report["backends"]:
            if info["name"] not in seen:
                seen.append(info["name"])
            if info["status"] in DID_NOT_RUN:
                idle.setdefault(info["name"], info)
            else:
                ran.setdefault(info["name"], []).append((name, info))
    merged = []
    for backend in seen:
        if backend not in ran:
            merged.append(idle[backend])
            continue
        runs = ran[backend]
        versions = [(name, info) for name, info in runs if info.get("versions")]
        for name, info in versions[1:]:
            if info["versions"] != versions[0][1]["versions"]:
                raise KbtoolError(
                    f"{versions[0][0]} and {name} ran {backend} at different versions ({_versions(versions[0][1])} vs {_versions(info)}); merge runs of one "
                    "installation"
                )
        broken = [info for _, info in runs if info["status"] == BackendStatus.BROKEN.value]
        info = dict(broken[0] if broken else runs[0][1])
        restarts = [i["restarts"] for _, i in runs if isinstance(i.get("restarts"), int)]
        if restarts:
            info["restarts"] = sum(restarts)
        merged.append(info)
    return merged


def _versions(info: Record) -> str:
    return ", ".join(f"{k} {v}" for k, v in info["versions"].items())


def _plan(parts: List[Part], infos: List[Record]) -> Record:
    """The merged plan, and whether the parts together are the whole of it (then staleness and growth are
    judged as on one run)."""
    from kbtool import plan as plan_mod

    unfiltered = cast(Callable[..., bool], plan_mod.unfiltered)

    plans = [report["plan"] for _, report in parts]
    first = plans[0]
    same_selection = all(all(p.get(k) == first.get(k) for k in SELECTION) for p in plans)
    ops = _union_of(p["ops"] for p in plans)
    checkable = first.get("checkable_ops")
    covered = (
        same_selection
        and not any(r.get("incomplete") for _, r in parts)
        and all(_covered(backend, parts) for backend in (i["name"] for i in infos if i["status"] not in DID_NOT_RUN))
    )
    override = _override(parts[0][1])
    all_cases = (
        covered
        and not first.get("last_failed")
        and unfiltered(first["case_patterns"], first["modes"], first["examples_only"], override)
    )
    whole_spec = set(ops) >= set(checkable) if checkable is not None else all(p["whole_spec"] for p in plans)
    grid = parts[0][1].get("grid", "pairwise")
    plan = {
        "ops": ops,
        "case_patterns": first["case_patterns"] if same_selection else _union_of(p["case_patterns"] for p in plans),
        "modes": first["modes"] if same_selection else _union_of(p["modes"] for p in plans),
        "examples_only": all(p["examples_only"] for p in plans),
        "whole_spec": whole_spec,
        "all_cases": all_cases,
        "counts_comparable": all_cases and whole_spec and grid == "pairwise" and not override,
        "as_recorded": all(p.get("as_recorded", True) for p in plans),
        "last_failed": any(p.get("last_failed") for p in plans),
        "shard": None,
    }
    if checkable is not None:
        plan["checkable_ops"] = checkable
    if all(p.get("backends") for p in plans):  # --backend in every part: the backends they named together
        plan["backends"] = _union_of(p["backends"] for p in plans)
    if all(p.get("self_test") for p in plans):  # numpy alone in every part: still only the reference, a self-test
        plan["self_test"] = True
    repeats = {p.get("repeat", 1) for p in plans}
    if max(repeats) > 1:  # --repeat N: the parts' own (the most runs, where parts differ)
        plan["repeat"] = max(repeats)
    return plan


def _covered(backend: str, parts: List[Part]) -> bool:
    """Whether the parts that ran `backend` are the whole plan for it: one unsharded part, or shards 1..N."""
    shards = [
        report["plan"].get("shard")
        for _, report in parts
        if any(i["name"] == backend and i["status"] not in DID_NOT_RUN for i in report["backends"])
    ]
    if shards == [None]:
        return True
    if not shards or None in shards:
        return False
    count = shards[0]["count"]
    return all(s["count"] == count for s in shards) and sorted(s["index"] for s in shards) == list(range(1, count + 1))


def _cases(parts: List[Part]) -> int:
    """Planned cases of the merged run: an unsharded part's, or the sum over the distinct shards of one N."""
    per_shard: Dict[Optional[Tuple[int, int]], int] = {}
    for _, report in parts:
        shard = report["plan"].get("shard")
        key = None if shard is None else (shard["count"], shard["index"])
        per_shard[key] = max(per_shard.get(key, 0), report["spec"]["cases"])
    totals = [per_shard.get(None, 0)]
    for count in {key[0] for key in per_shard if key is not None}:
        totals.append(sum(n for key, n in per_shard.items() if key is not None and key[0] == count))
    return max(totals)


def _filters(parts: List[Part]) -> List[str]:
    """The parts' filters; where the shards of every backend are complete, without each shard's '--shard K/N'."""
    words = _union_of(report.get("filters", []) for _, report in parts)
    backends = {i["name"] for _, r in parts for i in r["backends"] if i["status"] not in DID_NOT_RUN}
    if all(_covered(b, parts) for b in backends):
        words = [w for w in words if not w.startswith("--shard ")]
    return words


def _union_of(lists: Iterable[Iterable[Any]]) -> List[Any]:
    """Items of several lists, each once, in order of first appearance (items may be dicts)."""
    out = []
    for items in lists:
        for item in items:
            if item not in out:
                out.append(item)
    return out


def part_record(name: str, report: Record) -> Record:
    return {
        "file": name,
        "created": report["created"],
        "kbtool": report["kbtool"],
        "shard": (report.get("plan") or {}).get("shard"),
        "backends": [i["name"] for i in report["backends"] if i["status"] not in DID_NOT_RUN],
        "wall_seconds": report["wall_seconds"],
    }
