"""The hooks of a `pytest --kbtool` session (registered only under --kbtool).

Collection adds the plan's items (items.py) to whatever pytest collects, never in place of it: the paths given, else
`testpaths`, else the current directory, as pytest chooses (so `--kbtool` in a project's `addopts` runs its own tests
and kbtool's). With --kbtool-only and no path argument, kbtool's items alone (the conformance run from any directory).

Each item records its result in user_properties (backend, op, case, mode, status, seconds; known, message, repro),
so --junitxml carries them and, under pytest-xdist, every result reaches the controller in its report. There, once
every planned result has come back (no -k/-m deselection, no -x stop), the known differences are applied to all of
them as `kbtool check` applies them: an entry that targets results but explains none is stale, listed in the summary,
and the session fails (exit 1), as check exits 1.
"""

import time
from typing import TYPE_CHECKING, Any, Dict, Generator, List, Optional, Set, Tuple

import pytest

from kbtool.pytest_plugin import items as items_mod
from kbtool.pytest_plugin import verdict
from kbtool.pytest_plugin.verdict import KbtoolFailure, WorkerUnavailable
from kbtool.reports.text import plural

if TYPE_CHECKING:
    from kbtool.pytest_plugin.items import KbtoolItem
    from kbtool.results import Result

Key = Tuple[str, str, str, str]  # (op, case id, backend, mode) of a result


class KbtoolHooks:
    def __init__(self, config: pytest.Config) -> None:
        from kbtool.pytest_plugin import options
        from kbtool.pytest_plugin.runner import ItemRunner

        started = time.monotonic()
        self.config = config
        self.selection = options.read(config)
        self.plan, self.entries = self.selection.plan, self.selection.entries
        self.targets = items_mod.plan_targets(self.plan)
        self.sole = verdict.sole_targets(self.plan, [t.key for t in self.targets], self.entries)
        self.xdist = config.pluginmanager.hasplugin("xdist")
        self.is_xdist_worker = hasattr(config, "workerinput")
        self.runner = ItemRunner(self.selection.settings)
        self.results: Dict[
            Key, Result
        ] = {}  # key -> Result rebuilt from each item's report (controller / single process)
        self.reported: Set[Key] = set()  # keys whose item reported (a result, or an error saying why it has none)
        self.explained: Set[Key] = set()  # keys whose result a known difference explains (xfail)
        self.stale: List[Any] = []  # the stale entries (dicts, as known.apply gives them)
        self.unjudged: Optional[str] = None
        self.nothing_checked = _nothing_checked(self.plan, config.getoption("kbtool_backend"))
        self.plan_seconds = time.monotonic() - started
        if self.is_xdist_worker and config.workerinput.get("kbtool_loadgroup"):  # type: ignore[attr-defined]  # xdist's
            config.option.loadgroup = True  # a worker reads --dist from its own arguments, not the controller's choice
        if config.getoption("kbtool_only") and config.args_source != pytest.Config.ArgsSource.ARGS:
            config.args = []  # asked for kbtool's items alone: not testpaths or the current directory

    # ---------------------------------------------------------------- collection
    def pytest_report_header(self, config: pytest.Config) -> List[str]:
        runnable = ", ".join(planned_backend.name for planned_backend in self.plan.runnable)
        return [
            f"kbtool: {plural(len(self.targets), 'result')} of {plural(len(self.plan.ops), 'op')} on {runnable} (seed {self.plan.seed}, grid {self.plan.grid}; planned in {self.plan_seconds:.1f} s)",
            f"kbtool: {self.selection.settings_line}",
        ]

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        """The session's own collection gets one more node, `kbtool`, collected as any other (so -k, -m, --lf and
        xdist see its items as they see tests)."""
        report = yield
        if isinstance(collector, pytest.Session) and report.passed:
            report.result.append(items_mod.KbtoolRoot.from_parent(collector, name="kbtool", nodeid="kbtool", run=self))
        return report

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist, on the controller: tell each worker whether items go by group (the default under --kbtool)."""
        node.workerinput["kbtool_loadgroup"] = self.config.getoption("dist", "no") == "loadgroup"

    # ---------------------------------------------------------------- one item
    def judge(self, item: "KbtoolItem") -> None:
        """Run an item's target and turn its result into pass / xfail (known) / failure."""
        target = item.target
        result = self.runner.result(target)
        variant_results = []
        if target.variants and result.status != "pass" and verdict.needs_variants(result, self.entries):
            variant_results = [self.runner.result(v) for v in target.variants]
        reason = verdict.known_reason(result, variant_results, self.entries, not self.plan.as_recorded)
        stale = self.sole.get(target.key) if result.status == "pass" else None
        item.user_properties.extend([("status", str(result.status)), ("seconds", result.seconds)])
        if result.status != "pass":
            item.user_properties.append(("message", result.message))
        if result.inherits:
            item.user_properties.append(("inherits", result.inherits))
        if reason is not None:
            item.user_properties.extend([("known", reason), ("verdict", "known")])
            pytest.xfail(f"known difference ({result.status}): {reason}")
        if stale is not None:
            item.user_properties.extend([("stale_entry", str(stale[0])), ("verdict", "stale")])
            raise KbtoolFailure(verdict.stale_text(*stale))
        if result.status != "pass":
            item.user_properties.extend([("repro", result.repro or ""), ("verdict", "divergence")])
            raise KbtoolFailure(verdict.failure_text(result))
        item.user_properties.append(("verdict", "pass"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.excinfo is not None and isinstance(call.excinfo.value, WorkerUnavailable) and call.when == "setup":
            report.longrepr = str(call.excinfo.value)  # the reason, not a traceback through kbtool
        return report

    # ---------------------------------------------------------------- every result (controller)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_xdist_worker:
            return  # the controller gathers the results of every worker from their reports
        props: Dict[str, Any] = dict(report.user_properties)
        if "mode" not in props:
            return
        key = (props["op"], props["case"], props["backend"], props["mode"])
        if report.when == "call" and "status" in props:
            from kbtool.results import Result

            self.results[key] = Result(
                op=key[0],
                case=key[1],
                backend=key[2],
                mode=key[3],
                status=props["status"],
                message=props.get("message", ""),
                inherits=props.get("inherits"),
            )
            if props.get("known") is not None:  # explained: counted as `known`, as the CLI counts it
                self.explained.add(key)
        if report.when == "call" or report.failed:
            self.reported.add(key)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.runner.stop(kill=exitstatus == pytest.ExitCode.INTERRUPTED)
        if self.nothing_checked and not self.is_xdist_worker and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # as check's exit 2: the reference against itself
        if self.is_xdist_worker or not self.plan.all_cases:
            return
        from kbtool import known
        from kbtool.plan import checkable_ops
        from kbtool.runners import envs

        planned = {t.key for t in self.targets}
        missing = planned - self.reported
        if missing:
            self.unjudged = f"{len(missing)} of the {len(planned)} planned results did not run"
            return
        applied = known.apply(
            list(self.results.values()),
            self.entries,
            whole_spec=self.plan.whole_spec,
            all_cases=self.plan.all_cases,
            planned_ops=self.plan.ops,
            spec_ops=checkable_ops(self.plan.spec),
            by_regex=not self.plan.as_recorded,
            versions=known.lookup(self.results.values(), None, envs.read_lock),  # (no worker's versions: the locks)
        )
        self.stale = applied.stale
        if self.stale and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_xdist_worker or self.config.option.collectonly:
            return
        write = terminalreporter.write_line
        from kbtool.reports.text import plural
        from kbtool.results import SEVERITY

        counts: Dict[str, int] = {}
        for key, result in self.results.items():  # the CLI's words: an explained result is `known`, whatever its status
            word = "known" if key in self.explained else str(result.status)
            counts[word] = counts.get(word, 0) + 1
        order = [str(word) for word in SEVERITY]
        terminalreporter.section("kbtool")
        write(
            "{}: {}".format(
                plural(len(self.results), "result"),
                ", ".join(
                    f"{counts[word]} {word}"
                    for word in sorted(counts, key=lambda w: order.index(w) if w in order else len(order))
                )
                or "none",
            )
        )
        from kbtool import known

        for entry in self.stale:
            written = {k: v for k, v in entry.items() if k != "note"}
            number = next((e.number for e in known.numbered(self.entries) if e.to_dict() == written), "?")
            write(
                "stale known difference (entry {}): {} {} on {}: {} ({})".format(
                    number, entry["op"], entry.get("case", "*"), entry["backend"], entry["reason"], entry["note"]
                ),
                red=True,
            )
        if self.unjudged:
            write(f"known differences not judged for staleness: {self.unjudged}")
        if self.nothing_checked:
            write(f"kbtool: {self.nothing_checked}", red=True)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.runner.close()


def _nothing_checked(plan: Any, named: List[str]) -> Optional[str]:
    """Why the session checks no Keras backend (only numpy, the reference, can run, and --kbtool-backend numpy alone
    did not ask for that self-test), as `kbtool check` refuses it; None otherwise. The items still run (the user's
    tests too) and the session fails."""
    from kbtool.errors import KbtoolError

    try:
        plan.refuse_checking_nothing(named, "--kbtool-backend")
    except KbtoolError as exc:
        return str(exc)
    return None
