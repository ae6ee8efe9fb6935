"""Per process (the pytest process, or each pytest-xdist worker): the items' backend sessions and their results.

A backend worker is started when an item first needs it and kept for the pytest session: one `BackendSession`
(kbtool/runners/session.py, the one owner of workers) per backend worker share, holding a worker per set of keras.json
settings, as a check's pool has one lane per set of settings. Each result is computed once (judged against the
reference of its case; a variant against its case's) and kept: an item whose known difference needs its variant's
result reuses it.
"""

from __future__ import annotations

import atexit
from typing import TYPE_CHECKING, Any, Dict, Tuple

from kbtool.pytest_plugin.verdict import WorkerUnavailable
from kbtool.results import Result
from kbtool.runners.session import BackendSession, Cancel, Worker
from kbtool.settings import DEFAULTS, RunSettings

if TYPE_CHECKING:
    from kbtool.pytest_plugin.items import Target


class ItemRunner:
    def __init__(self, settings: RunSettings = DEFAULTS) -> None:
        from kbtool.reference.oracle import Oracle

        self.settings = settings  # the run's: seed, case timeout, --repeat, what every repro carries
        self.oracle = Oracle()
        self.cancel = Cancel()
        self._sessions: Dict[Tuple[str, int], BackendSession] = {}
        self._results: Dict[Any, Result] = {}  # Target.key -> Result
        atexit.register(self.stop, True)  # pytest killed mid-run: no worker outlives it

    def session(self, target: Target) -> BackendSession:
        key = (target.backend, target.share)
        if key not in self._sessions:  # target.launch is already this share's launch
            self._sessions[key] = BackendSession(
                target.backend,
                target.launch,
                settings=self.settings,
                oracle=self.oracle,
                cancel=self.cancel,
            )
        return self._sessions[key]

    def worker(self, target: Target) -> Worker:
        """The worker that runs `target`; WorkerUnavailable when it cannot start."""
        worker = self.session(target).worker(target.base.keras_config)
        if not worker.ready:
            raise WorkerUnavailable(f"{target.backend}: the worker could not start: {worker.why_not_ready}")
        return worker

    def result(self, target: Target) -> Result:
        """The judged Result of `target` (run once per process)."""
        if target.key in self._results:
            return self._results[target.key]
        worker = self.worker(target)
        session = self.session(target)
        expected = session.expected(target.base, worker.hello)  # a variant is judged against its case's reference
        result = session.result(target.entry, target.case, target.mode, expected)
        if result is None:
            raise WorkerUnavailable(f"{target.backend}: the worker was killed before it answered")
        self._results[target.key] = result
        return result

    def close(self) -> None:
        """At the session's end: kill what is left and forget the exit hook."""
        self.stop(kill=True)
        atexit.unregister(self.stop)

    def stop(self, kill: bool = False) -> None:
        """Stop every worker (kill: at once, without asking them to exit)."""
        sessions, self._sessions = list(self._sessions.values()), {}
        if kill:
            self.cancel.set("the pytest session ended")
        for session in sessions:
            session.stop()
