"""Report assembly: the versioned JSON report (the source of truth every view renders) of one check, built from
what it planned, ran and found (a CheckRun).

The format is versioned by `schema_version` and described by report.schema.json beside this file (report.py owns
it); the summary and the exit code are verdict.py's.
"""

import datetime
import hashlib
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Union,
    cast,
)

from kbtool import __version__, known, paths
from kbtool.known import layers
from kbtool.reports.report import Report

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.known import Applied, KnownEntry, KnownFiles
    from kbtool.results import Result

Record = Dict[str, Any]


class CheckRun(NamedTuple):
    """What one check planned, ran and found: all a report is assembled from.

    `incomplete` ({signal, note, planned, ran}) marks a check that was interrupted: it is never ok.
    `known_entries` (those applied, as loaded, from `known_files`) are referenced by id and hash (those that
    targeted a result; embedded too with `embed_known`) and the plan recorded so that `kbtool report merge` can
    judge shards together; `strict` (--strict) also fails on unsupported results and
    on results explained by unrecorded entries; `repeat` (--repeat N, how many runs of each case) is recorded in the
    plan when more than 1; `usage` is the pool's worker slots and the peak memory."""

    plan: Any
    infos: List[Record]
    results: Iterable["Result"]
    applied: "Applied"
    wall_seconds: float
    incomplete: Optional[Record] = None
    known_entries: Optional[Sequence[Union["KnownEntry", Mapping[str, Any]]]] = None
    known_files: Optional["KnownFiles"] = None
    embed_known: bool = False
    strict: bool = False
    usage: Optional[Record] = None
    repeat: int = 1


def assemble(run: CheckRun) -> Record:
    """The report of one check: what was planned, what each backend said, every result, the known differences."""
    plan = run.plan
    settings = plan.settings
    used = run.applied.used if run.known_entries is not None else None
    return Report(
        kbtool=__version__,
        created=now(),
        seed=plan.seed,
        spec=dict(
            # relative to the current directory when inside it: a published report names no machine's checkout
            {"path": paths.shown(plan.spec.path), "ops": len(plan.ops), "cases": len(plan.work)},
            **sha256_of(plan.spec.path),
        ),
        filters=list(plan.filters),
        grid=plan.grid,
        # the settings every case was forced to (--keras-config), and each set of settings that ran
        keras_config=dict(
            {"override": dict(plan.keras_config or {}), "ran": _settings_that_ran(plan)},
            **(settings.as_report() if settings else {}),
        ),
        # the user's configured Keras backend (KERAS_BACKEND or keras.json): first in every view
        active_backend=plan.active_backend,
        has_active_backend=True,
        backends=run.infos,
        results=list(run.results),
        known_differences=run.applied.counts,
        stale_known_differences=run.applied.stale,
        wall_seconds=round(run.wall_seconds, 2),
        resources=dict(run.usage) if run.usage else None,  # the pool's worker slots and the peak memory
        known_files=[layers.file_record(path, shipped) for path, shipped in run.known_files.files()]
        if run.known_files is not None
        else None,
        # entries read from files are referenced (embedded too when asked); entries given as such, from no file
        # (a test's, a bisect probe's), are embedded whole, as every report did before references
        known_refs=None if used is None or run.known_files is None else [layers.reference(e) for e in used],
        known_entries=_embedded(run, used),
        plan=plan_record(plan, run.repeat),
        incomplete=dict(run.incomplete) if run.incomplete else None,
        strict=run.strict,
    ).to_dict()


def _embedded(run: CheckRun, used: Optional[List["KnownEntry"]]) -> Optional[List["KnownEntry"]]:
    """The entries a report embeds: all it was given when they came from no file, the ones it applied with
    `embed_known`, else none (it references them)."""
    if run.known_entries is None:
        return None
    if run.known_files is None:
        return known.numbered(run.known_entries)
    return list(used or []) if run.embed_known else None


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def plan_record(plan: Any, repeat: int = 1) -> Record:
    """What the report needs to say of its plan for `report merge` to re-judge shards as one run (and --repeat N,
    when more than 1: how many runs of each case were compared)."""
    from kbtool import plan as plan_mod

    checkable_ops = cast(Callable[[Any], Iterable[str]], plan_mod.checkable_ops)
    shard = plan.shard
    record: Record = {
        "ops": list(plan.ops),
        "case_patterns": list(plan.case_patterns),
        "modes": list(plan.modes),
        "examples_only": bool(plan.examples_only),
        "whole_spec": bool(plan.whole_spec),
        "all_cases": bool(plan.all_cases),
        "counts_comparable": bool(plan.counts_comparable),
        "as_recorded": bool(plan.as_recorded),
        "last_failed": plan.last_failed,
        "shard": {"index": shard[0], "count": shard[1]} if shard else None,
        "checkable_ops": sorted(checkable_ops(plan.spec)),
    }
    # --device / --precision: said only when not the default, so a CPU run's record is as it always was
    for key, default in (("device", "cpu"), ("precision", "default")):
        value = getattr(plan, key, default)
        if value != default:
            record[key] = value
    if repeat > 1:
        record["repeat"] = repeat
    if getattr(plan, "self_test", False):  # only the reference ran, against itself: never a parity result
        record["self_test"] = True
    if getattr(plan, "named_backends", ()):  # --backend: said only when given (the views' filters name them)
        record["backends"] = list(plan.named_backends)
    return record


def sha256_of(path: Optional[str]) -> Dict[str, str]:
    """{"sha256": hex digest of the file's bytes}, or {} when it cannot be read."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as fh:
            return {"sha256": hashlib.sha256(fh.read()).hexdigest()}
    except (OSError, TypeError, ValueError):
        return {}


def _settings_that_ran(plan: Any) -> List[Record]:
    ran: List[Record] = []
    for _, case in plan.work:
        if case.keras_config not in ran:
            ran.append(dict(case.keras_config))
    return ran
