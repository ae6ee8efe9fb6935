"""Per process (the pytest process, or each pytest-xdist worker): started backend workers, one reference, results.

A worker is started when an item first needs it and kept for the session, one per backend worker share and set of
keras.json settings, as a check's pool has one lane per set of settings (run._run_lane starts the same WorkerClient,
with the backend's own case timeout). Each result is computed once (run.run_case, judged against the reference of its case;
a variant against its case's) and kept: an item whose known difference needs its variant's result reuses it.
"""

import atexit

from .verdict import WorkerUnavailable


class Pool:
    def __init__(self, seed=0, case_timeout=None):
        from ..reference.oracle import Oracle

        self.seed, self.case_timeout = seed, case_timeout
        self.oracle = Oracle()
        self._workers = {}  # (backend, share, settings) -> (client, hello, why its settings are not the ones asked)
        self._results = {}  # Target.key -> Result
        atexit.register(self.stop, True)  # pytest killed mid-run: no worker outlives it

    def worker(self, target):
        """(client, hello, settings mismatch) of the worker that runs `target`; WorkerUnavailable when it cannot."""
        from .. import run
        from ..runners.client import WorkerClient
        from ..runners.worker import protocol

        settings = dict(target.base.keras_config or {})
        key = (target.backend, target.share, tuple(sorted(settings.items())))
        if key not in self._workers:
            timeout = self.case_timeout
            if timeout is None:
                timeout = getattr(target.launch, "case_timeout", None)  # the backend's own default, where it has one
            client = WorkerClient(
                target.launch, keras_config=settings, **({"case_timeout": timeout} if timeout is not None else {})
            )
            hello = client.start()
            ready = hello.get("status") == protocol.READY
            mismatch = run.settings_mismatch(settings, hello.get("keras_config")) if ready else None
            self._workers[key] = (client, hello, mismatch)
        client, hello, mismatch = self._workers[key]
        if hello.get("status") != protocol.READY:
            raise WorkerUnavailable(
                "{}: the worker could not start: {}".format(target.backend, hello.get("error") or "no reason given")
            )
        return client, hello, mismatch

    def result(self, target):
        """The judged Result of `target` (run once per process)."""
        from .. import run

        if target.key in self._results:
            return self._results[target.key]
        client, hello, mismatch = self.worker(target)
        if mismatch:
            result = run._not_applied(target.backend, target.case, target.mode, mismatch, self.seed)
        else:
            expected = run._expected(self.oracle, target.base, hello, target.backend)
            result = run.run_case(client, target.backend, target.entry, target.case, target.mode, expected, self.seed)
        if result is None:
            raise WorkerUnavailable(f"{target.backend}: the worker was killed before it answered")
        self._results[target.key] = result
        return result

    def close(self):
        """At the session's end: kill what is left and forget the exit hook."""
        self.stop(kill=True)
        atexit.unregister(self.stop)

    def stop(self, kill=False):
        """Stop every worker (kill: at once, without asking them to exit)."""
        workers, self._workers = list(self._workers.values()), {}
        for client, _, _ in workers:
            try:
                client.kill() if kill else client.stop()
            except Exception:  # one worker that cannot be stopped does not keep the others alive
                client.kill()
