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


def run_check(plan, known_entries=None, progress=None, jobs=None, case_timeout=None, oracle=None):
    """Run a plan and return the JSON report (a dict). `known_entries` defaults to the shipped file."""
    started = time.time()
    entries = known.load(spec=plan.spec) if known_entries is None else known_entries
    entries = known.alias_entries(plan.spec) + list(entries)
    infos, results = run.run_plan(plan, oracle=oracle, progress=progress, jobs=jobs, case_timeout=case_timeout)
    applied = known.apply(results, entries, whole_spec=plan.whole_spec, all_cases=plan.all_cases,
                          planned_ops=plan.ops, spec_ops=checkable_ops(plan.spec))
    return assemble(plan, infos, results, applied, time.time() - started)
