"""The verdict of a report: its summary (counts per backend, ok or not) computed from its results, the reasons in
words when it is not ok, and the exit code. Computed, never read from a file: the report's format (report.py) asks
this module for the summary it writes, and every view asks it for the verdict line's reasons."""

from typing import Any, Dict, List, Optional

from kbtool.reports.summary import count_word, pass_as_is_record
from kbtool.reports.text import plural
from kbtool.results import OPTIONAL_STATUSES, BackendStatus, Status

Record = Dict[str, Any]


def summarize(report: Record, strict: Optional[bool] = None) -> Record:
    """Counts per backend (a result explained by a known difference counts as `known`, but a `not_reached` one as
    `not_reached` whether explained or not: it says nothing of the op; summary.not_reached_explained says how many of
    those a known difference explains, which do not fail the gate), and the verdict.

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
    explained_not_reached: Dict[str, int] = {}  # not reached, counted so, but explained: they do not fail the gate
    for record in report["results"]:
        backend = record["backend"]
        counts = per_backend.get(backend)
        if counts is None:
            counts = per_backend[backend] = dict.fromkeys(words, 0)
        counts[count_word(record)] += 1
        if record.get("known") and record["status"] == Status.NOT_REACHED.value:
            explained_not_reached[backend] = explained_not_reached.get(backend, 0) + 1
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
    if explained_not_reached:
        summary["not_reached_explained"] = explained_not_reached
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
        not_reached = sum(
            1 for r in report["results"] if r["status"] == Status.NOT_REACHED.value and not r.get("known")
        )
        reasons.append(
            plural(summary["divergences"], "divergence") + (f" ({not_reached} not reached)" if not_reached else "")
        )
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
