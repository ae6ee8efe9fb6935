"""Report assembly: the versioned JSON report (the source of truth every view renders), its summary, the exit code.

The format is versioned by `schema_version` and described by report.schema.json beside this file.
"""

import datetime
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union, cast

from kbtool import __version__, known, paths
from kbtool.reports.report import SCHEMA_FILE as SCHEMA_FILE  # their old home, re-exported
from kbtool.reports.report import SCHEMA_VERSION as SCHEMA_VERSION
from kbtool.reports.report import Report
from kbtool.reports.report import schema as schema
from kbtool.reports.report import validate as validate
from kbtool.reports.text import plural
from kbtool.results import OPTIONAL_STATUSES, BackendStatus, Status

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.known import Applied, KnownEntry
    from kbtool.results import Result

Record = Dict[str, Any]


def assemble(
    plan: Any,
    infos: List[Record],
    results: Iterable["Result"],
    applied: "Applied",
    wall_seconds: float,
    incomplete: Optional[Record] = None,
    known_entries: Optional[Sequence[Union["KnownEntry", Mapping[str, Any]]]] = None,
    known_path: Optional[str] = None,
    strict: bool = False,
    usage: Optional[Record] = None,
    repeat: int = 1,
) -> Record:
    """The report of one check: what was planned, what each backend said, every result, the known differences.

    `incomplete` ({signal, note, planned, ran}) marks a check that was interrupted: it is never ok.
    `known_entries` (those applied, as loaded) and the plan are recorded so that `kbtool report merge` can judge
    shards together with no file at hand; `strict` (--strict) also fails on unsupported results and
    on results explained by unrecorded entries; `repeat` (--repeat N, how many runs of each case) is recorded in the
    plan when more than 1."""
    settings = plan.settings
    return Report(
        kbtool=__version__,
        created=now(),
        seed=plan.seed,
        spec=dict(
            # relative to the current directory when inside it: a published report names no machine's checkout
            {"path": paths.shown(plan.spec.path), "ops": len(plan.ops), "cases": len(plan.work)},
            **_sha256_of(plan.spec.path),
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
        backends=infos,
        results=list(results),
        known_differences=applied.counts,
        stale_known_differences=applied.stale,
        wall_seconds=round(wall_seconds, 2),
        resources=dict(usage) if usage else None,  # the pool's worker slots and the peak memory (kbtool/pool.py)
        known_file=dict({"path": paths.shown(known_path)}, **_sha256_of(known_path)) if known_path else None,
        known_entries=None if known_entries is None else known.numbered(known_entries),
        plan=plan_record(plan, repeat),
        incomplete=dict(incomplete) if incomplete else None,
        strict=strict,
    ).to_dict()


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
    if getattr(plan, "named_backends", ()):  # --backend: said only when given (the views' filters name them)
        record["backends"] = list(plan.named_backends)
    return record


def _sha256_of(path: Optional[str]) -> Dict[str, str]:
    """{"sha256": hex digest of the file's bytes}, or {} when it cannot be read."""
    import hashlib

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


def summarize(report: Record, strict: Optional[bool] = None) -> Record:
    """Counts per backend (a result explained by a known difference counts as `known`), and the verdict.

    A check is ok when it ran to the end (not `incomplete`), ran something, every result passed or is explained,
    no known difference is stale, and every backend it set out to run started; under `strict` (--strict; None:
    as the report's summary says) also no result is `unsupported`, explained or not, and no known difference grew.
    """
    if strict is None:
        strict = bool((report.get("summary") or {}).get("strict"))
    words = [s.value for s in Status if s.value not in OPTIONAL_STATUSES] + ["known"]
    # a count only --repeat can make is written where a result has it (a report without is as it always was)
    words += [w for w in OPTIONAL_STATUSES if any(r["status"] == w for r in report["results"])]
    per_backend = {b["name"]: dict.fromkeys(words, 0) for b in report["backends"]}
    seconds: Dict[str, float] = {}
    for record in report["results"]:
        backend = record["backend"]
        counts = per_backend.get(backend)
        if counts is None:
            counts = per_backend[backend] = dict.fromkeys(words, 0)
        counts["known" if record.get("known") else record["status"]] += 1
        seconds[backend] = seconds.get(backend, 0.0) + record["seconds"]
    divergences = sum(1 for r in report["results"] if r["status"] != Status.PASS.value and not r.get("known"))
    unavailable = [b["name"] for b in report["backends"] if b["status"] != BackendStatus.AVAILABLE.value]
    could_not_start = [b["name"] for b in report["backends"] if b["status"] == BackendStatus.BROKEN.value]
    ok = (
        bool(report["results"])
        and divergences == 0
        and not report["stale_known_differences"]
        and not could_not_start
        and not report.get("incomplete")
    )
    from kbtool.reports.summary import pass_as_is_record

    summary: Record = {
        "per_backend": per_backend,
        "pass_as_is": pass_as_is_record(per_backend),
        "case_seconds": {k: round(v, 2) for k, v in seconds.items()},
        "results": len(report["results"]),
        "divergences": divergences,
        "stale": len(report["stale_known_differences"]),
        "unavailable_backends": unavailable,
        "could_not_start": could_not_start,
        "ok": ok,
    }
    if strict:
        failures = strict_failures(report)
        summary.update(strict=True, strict_failures=failures, ok=ok and not any(failures.values()))
    return summary


def strict_failures(report: Record) -> Dict[str, int]:
    """What --strict also fails on: results that are `unsupported` (explained or not), and results explained by
    an entry that was never recorded (`kbtool known record`: then it explains by status and regex alone)."""
    return {
        "unsupported": sum(1 for r in report["results"] if r["status"] == Status.UNSUPPORTED.value),
        "unrecorded": sum(r["named"] for r in report.get("known_differences", []) if r.get("unrecorded")),
    }


def verdict_reasons(report: Record) -> List[str]:
    """Why a report is not ok, in words (empty when it is ok): for every view's verdict line."""
    summary = report["summary"]
    reasons = []
    if report.get("incomplete"):
        reasons.append("incomplete ({})".format(report["incomplete"]["note"]))
    if summary["divergences"]:
        reasons.append(plural(summary["divergences"], "divergence"))
    if summary["stale"]:
        reasons.append(plural(summary["stale"], "stale known difference"))
    if summary.get("could_not_start"):
        reasons.append("could not start: {}".format(", ".join(summary["could_not_start"])))
    if not report["results"]:
        reasons.append("nothing was checked")
    reasons.extend(strict_reasons(report))
    return reasons


def strict_reasons(report: Record) -> List[str]:
    """The --strict part of verdict_reasons: e.g. ['--strict: 3 unsupported results']."""
    failures = (report["summary"].get("strict_failures") or {}) if report["summary"].get("strict") else {}
    words = {
        "unsupported": lambda n: plural(n, "unsupported result"),
        "unrecorded": lambda n: plural(n, "result") + " explained by unrecorded known differences",
    }
    return ["--strict: " + words[key](n) for key, n in failures.items() if n and key in words]


def exit_code(report: Record) -> int:
    """0: every result passed or is explained; 1: a divergence, a stale known difference, a backend that
    could not start, an interrupted check, or nothing checked. (2, usage and configuration errors, never reaches a
    report; the check command exits 130/143 on SIGINT/SIGTERM.)"""
    return 0 if report["summary"]["ok"] else 1
