"""`kbtool check`, stage by stage: plan → run (workers + reference + verdicts) → known differences → report.

plan.py            which ops, cases, modes and backends; what an unavailable backend means
run.py             each planned case on each backend's worker, judged by verdicts/ against reference/oracle.py
known.py           known differences: load, validate against the spec, apply, count, age
reports/assemble   the versioned JSON report, its summary and the exit code; every view renders it

`Interrupts` and `run_interruptibly` are how `kbtool check` runs one: SIGINT/SIGTERM stop it and the partial report
is still written and shown.
"""

import contextlib
import os
import signal
import threading
import time
from types import FrameType
from typing import Any, Callable, Dict, List, Optional

from . import known, paths, run
from .plan import checkable_ops
from .reports.assemble import assemble
from .run import Cancel


def known_entries_for(spec, known_path=None):
    """(entries, path) of a known-differences file (default: the shipped one) for a check of `spec`.

    A spec and the known-differences file beside it are a pair: checked against each other; the shipped entries
    run beside another spec are read but not judged by it (an entry for an op it lacks explains nothing)."""
    path = known_path or paths.known_differences_file()
    paired = os.path.dirname(os.path.realpath(spec.path)) == os.path.dirname(os.path.realpath(path))
    return known.load(path, spec=spec if paired else None), path


def run_check(
    plan,
    known_entries=None,
    progress=None,
    jobs=None,
    case_timeout=None,
    oracle=None,
    cancel=None,
    known_path=None,
    strict=False,
):
    """Run a plan and return the JSON report (a dict). `known_entries` defaults to the shipped file.

    `cancel` (a run.Cancel, set by a signal handler) ends the run early: the report then holds the results that
    ran and says so under `incomplete` (never ok; no known difference is judged stale on it)."""
    started = time.time()
    read_from = None  # the known-differences file the entries came from (the report records it)
    if known_entries is None:
        known_entries, read_from = known_entries_for(plan.spec, known_path)
    entries = known_entries
    entries = known.alias_entries(plan.spec) + list(entries)
    cancel = cancel or run.Cancel()
    usage = {}
    infos, results = run.run_plan(
        plan, oracle=oracle, progress=progress, jobs=jobs, case_timeout=case_timeout, cancel=cancel, usage=usage
    )
    incomplete = None
    if cancel.is_set():
        planned = run.planned_results(plan)
        incomplete = {
            "signal": cancel.reason,
            "planned": planned,
            "ran": len(results),
            "note": f"interrupted by {cancel.reason}: {len(results)} of the {planned} planned results ran; the others are absent",
        }
    applied = known.apply(
        results,
        entries,
        whole_spec=plan.whole_spec,
        all_cases=plan.all_cases and not incomplete,
        planned_ops=plan.ops,
        spec_ops=checkable_ops(plan.spec),
        counts_comparable=plan.counts_comparable and not incomplete,
    )
    return assemble(
        plan,
        infos,
        results,
        applied,
        time.time() - started,
        incomplete=incomplete,
        known_entries=entries,
        known_path=read_from,
        strict=strict,
        usage=usage,
    )


class Interrupts:
    """SIGINT/SIGTERM while a check runs (a context manager around the run and the writing of its report).

    The first signal stops the run: no new case starts and every worker's process group is killed (workers run in
    sessions of their own, so kbtool kills them), and the partial report is written and shown. A second exits at
    once. A signal the caller ignores (`nohup`, `cmd &`) stays ignored; handlers are installed from the main thread
    only, and the previous ones come back on exit, when every worker left is killed."""

    def __init__(self) -> None:
        self.cancel = Cancel()
        self.caught: List[int] = []
        self._previous: Dict[int, Any] = {}

    @property
    def signal_name(self) -> Optional[str]:
        """The first signal caught (e.g. "SIGINT"), or None."""
        return signal.Signals(self.caught[0]).name if self.caught else None

    def exit_code(self) -> Optional[int]:
        """128 + the first signal caught (130 SIGINT, 143 SIGTERM), or None when none was."""
        return 128 + self.caught[0] if self.caught else None

    @staticmethod
    def _say(line: str) -> None:
        """From a signal handler: no buffered stream (it may be mid-write), and never an exception."""
        try:
            os.write(2, line.encode())
        except OSError:
            pass

    def _on_signal(self, signum: int, frame: Optional[FrameType]) -> None:
        name = signal.Signals(signum).name
        if self.caught:
            self.cancel.kill_all()
            self._say("kbtool: {} again: exiting now\n{}".format(name, "\x1b[?25h" if os.isatty(2) else ""))  # cursor
            os._exit(128 + self.caught[0])
        self.caught.append(signum)
        self.cancel.set(name)
        self._say(f"kbtool: {name}: stopping; the partial report follows ({name} again to exit now)\n")

    def __enter__(self) -> "Interrupts":
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(signum) is not signal.SIG_IGN:  # keep what the caller chose
                    self._previous[signum] = signal.signal(signum, self._on_signal)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.cancel.kill_all()
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()


def run_interruptibly(
    plan: Any,
    interrupts: Interrupts,
    verbosity: int = 1,
    case_timeout: Optional[float] = None,
    jobs: Optional[int] = None,
    known_path: Optional[str] = None,
    strict: bool = False,
    echo: Callable[[str], None] = lambda line: None,
) -> dict:
    """Run a plan as `kbtool check` does: progress bars on a terminal and a few plain lines in a log (none with
    verbosity 0), closed before the summary prints (also when interrupted); `interrupts.cancel` stops the run.
    `echo` gets the line that says a signal stopped the run when the bars' last redraw erased the handler's."""
    from .reports import progress

    with progress.CheckProgress.for_plan(plan) if verbosity else contextlib.nullcontext() as show:
        report = run_check(
            plan,
            progress=show,
            case_timeout=case_timeout,
            cancel=interrupts.cancel,
            jobs=jobs,
            known_path=known_path,
            strict=strict,
        )
    if interrupts.caught and show is not None and show.live:
        echo(f"kbtool: {interrupts.signal_name}: stopped; the partial report follows")
    return report
