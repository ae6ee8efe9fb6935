"""`kbtool check`, stage by stage: plan → run (workers + reference + verdicts) → known differences → report.

plan.py            which ops, cases, modes and backends; what an unavailable backend means
execute.py         each planned case through a backend session (session.py), judged by verdicts/ against the reference
known/             known differences: load, validate against the spec, apply, count, age
reports/assemble   the versioned JSON report, its summary and the exit code; every view renders it

`run_interruptibly` is how `kbtool check` runs one under `interrupts.Interrupts`: SIGINT/SIGTERM stop it and the
partial report is still written and shown.
"""

import contextlib
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Union

from kbtool import execute, known
from kbtool.interrupts import Interrupts
from kbtool.plan import Plan, checkable_ops
from kbtool.reports.assemble import CheckRun, assemble
from kbtool.runners import envs
from kbtool.runners.session import Cancel

if TYPE_CHECKING:
    from kbtool.known import KnownEntry, KnownFiles
    from kbtool.reference.oracle import Oracle
    from kbtool.settings import RunSettings
    from kbtool.specs.loader import Spec

Report = Dict[str, Any]  # the JSON report of a check (reports/report.schema.json)


QUIET_SECONDS = 5.0  # a plain progress line at least this often, results or not (--repeat 1000: a minute a case)


def known_entries_for(spec: "Spec", known_files: Optional["KnownFiles"] = None) -> List["KnownEntry"]:
    """The entries of the known files a check of `spec` applies (default: the shipped one), layered in order
    (kbtool/known/layers.py).

    A spec and a known-differences file beside it are a pair: checked against each other; the shipped entries
    run beside another spec are read but not judged by it (an entry for an op it lacks explains nothing)."""
    return known.load_layers(known_files or known.SHIPPED, spec)


def known_files_of(settings: "RunSettings") -> "KnownFiles":
    """The known files a run's settings name (--known, --no-shipped-known)."""
    return known.KnownFiles(tuple(settings.known_paths), settings.shipped_known)


def run_check(
    plan: Plan,
    known_entries: Optional[Sequence[Union["KnownEntry", Dict[str, Any]]]] = None,
    progress: Optional[execute.Progress] = None,
    oracle: Optional["Oracle"] = None,
    cancel: Optional[Cancel] = None,
    embed_known: bool = False,
) -> Report:
    """Run a plan under its settings (`plan.run`: the case timeout, --jobs, --repeat, --strict, --known) and return
    the JSON report (a dict). `known_entries` defaults to the entries of the settings' known files (the shipped one,
    then each --known); the report references those it applied, and embeds them with `embed_known`.

    `cancel` (a session.Cancel, set by a signal handler) ends the run early: the report then holds the results that
    ran and says so under `incomplete` (never ok; no known difference is judged stale on it). With --repeat N each
    case runs N times on its worker: runs that disagree give a `nondeterministic` result."""
    started = time.time()
    settings = plan.run
    read_from = None  # the known-differences files the entries came from (the report records them)
    if known_entries is None:
        read_from = known_files_of(settings)
        known_entries = known_entries_for(plan.spec, read_from)
    entries = known.alias_entries(plan.spec) + list(known_entries)
    cancel = cancel or Cancel()
    usage: Dict[str, Any] = {}
    infos, results = execute.execute_plan(
        plan,
        oracle=oracle,
        progress=progress,
        cancel=cancel,
        usage=usage,
        settings=settings.resolved(getattr(plan.spec, "path", None)),  # what every repro carries
    )
    incomplete = _incomplete(plan, cancel, len(results))
    applied = known.apply(
        results,
        entries,
        whole_spec=plan.whole_spec,
        all_cases=plan.all_cases and not incomplete,
        planned_ops=plan.ops,
        spec_ops=checkable_ops(plan.spec),
        by_regex=not plan.as_recorded,  # other settings: the recorded fingerprints do not apply
        # what an entry's `versions` is compared with: what the workers reported, else (not started) the lock
        versions=known.lookup(results, known.reported_versions(infos), envs.read_lock),
        precision=plan.precision,
    )
    return assemble(
        CheckRun(
            plan,
            infos,
            results,
            applied,
            time.time() - started,
            incomplete=incomplete,
            known_entries=entries,
            known_files=read_from,
            embed_known=embed_known,
            strict=settings.strict,
            usage=usage,
            repeat=settings.repeat,
        )
    )


def _incomplete(plan: Plan, cancel: Cancel, ran: int) -> Optional[Dict[str, Any]]:
    """What the report says of a run a signal cut short (None when it ran to its end)."""
    if not cancel.is_set():
        return None
    planned = execute.planned_results(plan)
    return {
        "signal": cancel.reason,
        "planned": planned,
        "ran": ran,
        "note": f"interrupted by {cancel.reason}: {ran} of the {planned} planned results ran; the others are absent",
    }


def run_interruptibly(
    plan: Plan,
    interrupts: Interrupts,
    verbosity: int = 1,
    echo: Callable[[str], None] = lambda line: None,
    embed_known: bool = False,
) -> Report:
    """Run a plan as `kbtool check` does: progress bars on a terminal and a few plain lines in a log (none with
    verbosity 0), closed before the summary prints (also when interrupted); `interrupts.cancel` stops the run.
    `echo` gets the line that says a signal stopped the run when the bars' last redraw erased the handler's."""
    from kbtool.reports import progress

    with progress.CheckProgress.for_plan(plan, quiet=QUIET_SECONDS) if verbosity else contextlib.nullcontext() as show:
        report = run_check(plan, progress=show, cancel=interrupts.cancel, embed_known=embed_known)
    if interrupts.caught and show is not None and show.live:
        echo(f"kbtool: {interrupts.name}: stopped; the partial report follows")
    return report
