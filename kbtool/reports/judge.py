"""`kbtool report judge REPORT.json [--known FILE]`: a stored report's results judged again against a known-differences
file, as `check` judges its own. A report made elsewhere (a GPU machine, another team's CI) is gated and recorded
here; its verdicts (statuses, messages, fingerprints) are the report's own, only the known differences are applied
anew: the entries of FILE (default: the shipped file) with the spec's Keras 1.x alias entries."""

from typing import Any, Dict, Optional

from kbtool.errors import KbtoolError
from kbtool.reports import merge
from kbtool.reports.assemble import now
from kbtool.reports.report import Report
from kbtool.results import Status

Record = Dict[str, Any]


def judge(name: str, report: Record, known_path: Optional[str] = None, strict: bool = False) -> Record:
    """The report `report` (read from `name`) with its results judged against the known file at `known_path`."""
    from kbtool import __version__, known, paths
    from kbtool.reports.assemble import sha256_of
    from kbtool.runners import envs
    from kbtool.specs import loader

    if report.get("incomplete") is None and not report.get("results"):
        raise KbtoolError(f"{name}: the report holds no results to judge")
    spec = loader.load()
    read_from = known_path or paths.known_differences_file()
    entries = known.alias_entries(spec) + known.load(read_from, spec)
    results = merge.fresh_results([(name, report)])  # the verdicts' own statuses, no entry's mark
    plan = dict(report.get("plan") or {})
    applied = known.apply(
        results,
        entries,
        # an interrupted run judges no entry stale (as check); an unfiltered one judges them as its plan says
        whole_spec=bool(plan.get("whole_spec")) and not report.get("incomplete"),
        all_cases=bool(plan.get("all_cases")) and not report.get("incomplete"),
        planned_ops=plan.get("ops"),
        spec_ops=set(plan.get("checkable_ops") or plan.get("ops") or []),
        by_regex=not plan.get("as_recorded", True),
        versions=known.lookup(results, known.reported_versions(report["backends"]), envs.read_lock),
    )
    return Report(
        kbtool=__version__,
        created=now(),
        seed=report["seed"],
        spec=report["spec"],
        filters=report.get("filters", []),
        grid=report.get("grid"),
        keras_config=report.get("keras_config"),
        active_backend=report.get("active_backend"),
        has_active_backend="active_backend" in report,
        backends=report["backends"],
        results=results,
        known_differences=applied.counts,
        stale_known_differences=applied.stale,
        wall_seconds=report["wall_seconds"],
        resources=report.get("resources"),
        known_file=dict({"path": paths.shown(read_from)}, **sha256_of(read_from)),
        known_entries=entries,
        plan=plan or None,
        incomplete=report.get("incomplete"),
        judged_from=merge.part_record(name, report),
        strict=strict,
    ).to_dict()


def counts(report: Record) -> Dict[str, int]:
    """{pass, known, unexplained, changed} over a judged report's results (the command's last line)."""
    out = dict.fromkeys(("pass", "known", "unexplained", "changed"), 0)
    for result in report["results"]:
        if result["status"] == Status.PASS.value:
            out["pass"] += 1
        elif result.get("known"):
            out["known"] += 1
        else:
            out["unexplained"] += 1
            out["changed"] += result["status"] == Status.CHANGED.value
    return out
