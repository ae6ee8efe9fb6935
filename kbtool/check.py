"""`kbtool check`, stage by stage: plan → run (workers + reference + verdicts) → known differences → report.

    plan.py            which ops, cases, modes and backends; what an unavailable backend means
    run.py             each planned case on each backend's worker, judged by verdicts/ against reference/oracle.py
    known.py           known differences: load, validate against the spec, apply, count, age
    reports/assemble   the versioned JSON report, its summary and the exit code; every view renders it
"""
import time

from . import known, run
from .plan import checkable_ops
from .reports.assemble import assemble


def run_check(plan, known_entries=None, progress=None, jobs=None, case_timeout=None, oracle=None, cancel=None):
    """Run a plan and return the JSON report (a dict). `known_entries` defaults to the shipped file.

    `cancel` (a run.Cancel, set by a signal handler) ends the run early: the report then holds the results that
    ran and says so under `incomplete` (never ok; no known difference is judged stale on it)."""
    started = time.time()
    entries = known.load(spec=plan.spec) if known_entries is None else known_entries
    entries = known.alias_entries(plan.spec) + list(entries)
    cancel = cancel or run.Cancel()
    infos, results = run.run_plan(plan, oracle=oracle, progress=progress, jobs=jobs, case_timeout=case_timeout,
                                  cancel=cancel)
    incomplete = None
    if cancel.is_set():
        planned = run.planned_results(plan)
        incomplete = {"signal": cancel.reason, "planned": planned, "ran": len(results),
                      "note": "interrupted by {}: {} of the {} planned results ran; the others are absent".format(
                          cancel.reason, len(results), planned)}
    applied = known.apply(results, entries, whole_spec=plan.whole_spec, all_cases=plan.all_cases and not incomplete,
                          planned_ops=plan.ops, spec_ops=checkable_ops(plan.spec))
    return assemble(plan, infos, results, applied, time.time() - started, incomplete=incomplete)
