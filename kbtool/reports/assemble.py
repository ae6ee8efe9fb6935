"""Report assembly: the versioned JSON report (the source of truth every view renders), its summary, the exit code.

The format is versioned by `schema_version` and described by report.schema.json beside this file.
"""
import datetime
import json
import os

from .. import __version__
from ..results import BackendStatus, Status

SCHEMA_VERSION = 1
SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report.schema.json")


def assemble(plan, infos, results, applied, wall_seconds, incomplete=None):
    """The report of one check: what was planned, what each backend said, every result, the known differences.

    `incomplete` ({signal, note, planned, ran}) marks a check that was interrupted: it is never ok."""
    report = {
        "schema_version": SCHEMA_VERSION,
        "kbtool": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "seed": plan.seed,
        "spec": {"path": plan.spec.path, "ops": len(plan.ops), "cases": len(plan.work)},
        "filters": list(plan.filters),
        "grid": plan.grid,
        # the settings every case was forced to (--keras-config), and each set of settings that ran
        "keras_config": {"override": dict(plan.keras_config or {}), "ran": _settings_that_ran(plan)},
        "backends": infos,
        "results": [r.as_dict() for r in results],
        "known_differences": applied.counts,
        "stale_known_differences": applied.stale,
        "wall_seconds": round(wall_seconds, 2),
    }
    if incomplete:
        report["incomplete"] = dict(incomplete)
    report["summary"] = summarize(report)
    return report


def _settings_that_ran(plan):
    ran = []
    for _, case in plan.work:
        if case.keras_config not in ran:
            ran.append(dict(case.keras_config))
    return ran


def summarize(report):
    """Counts per backend (a result explained by a known difference counts as `known`), and the verdict.

    A check is ok when it ran to the end (not `incomplete`), ran something, every result passed or is explained,
    no known difference is stale, and every backend it set out to run started.
    """
    per_backend = {b["name"]: dict.fromkeys([s.value for s in Status] + ["known"], 0) for b in report["backends"]}
    seconds = {}
    for record in report["results"]:
        counts = per_backend.setdefault(record["backend"], dict.fromkeys([s.value for s in Status] + ["known"], 0))
        counts["known" if record.get("known") else record["status"]] += 1
        seconds[record["backend"]] = seconds.get(record["backend"], 0.0) + record["seconds"]
    divergences = sum(1 for r in report["results"] if r["status"] != Status.PASS.value and not r.get("known"))
    unavailable = [b["name"] for b in report["backends"] if b["status"] != BackendStatus.AVAILABLE.value]
    could_not_start = [b["name"] for b in report["backends"] if b["status"] == BackendStatus.BROKEN.value]
    ok = (bool(report["results"]) and divergences == 0 and not report["stale_known_differences"]
          and not could_not_start and not report.get("incomplete"))
    return {"per_backend": per_backend, "case_seconds": {k: round(v, 2) for k, v in seconds.items()},
            "results": len(report["results"]), "divergences": divergences,
            "stale": len(report["stale_known_differences"]), "unavailable_backends": unavailable,
            "could_not_start": could_not_start, "ok": ok}


def exit_code(report):
    """0: every result passed or is explained; 1: a divergence, a stale known difference, a backend that
    could not start, an interrupted check, or nothing checked. (2, usage and configuration errors, never reaches a
    report; the check command exits 130/143 on SIGINT/SIGTERM.)"""
    return 0 if report["summary"]["ok"] else 1


def schema():
    with open(SCHEMA_FILE, encoding="utf-8") as fh:
        return json.load(fh)


def validate(report):
    """Problems of a report against the shipped schema, as 'path: message' strings (empty when valid)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    return ["{}: {}".format("/".join(str(p) for p in error.absolute_path) or "(top)", error.message)
            for error in sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))]
