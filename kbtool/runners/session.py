"""One owner of a backend's workers: `BackendSession`.

Every command that runs something on a backend (check's scheduler, the pytest plugin, explore, bench, `kbtool
backends`) goes through a session; no other module makes a worker (tests/test_layering.py holds it so). A session:
- starts a worker per set of keras.json settings when first needed (a worker reads its keras.json once, at start),
  for one share of the backend's cases (`Launch.for_worker`), and reuses it;
- reads its hello and checks that the backend applied the settings (`settings_mismatch`);
- runs a case in a mode, judged against the reference (`result`), and a backend's variants of it (`results`);
- sends raw requests (bench's timing, the harness overhead) through the same worker;
- survives a worker's crash or hang (the client restarts it, the case in flight is a crash/timeout result);
- is cancelled with its run (`Cancel`, set by a signal handler), and stops or kills every worker it started.
Workers also die with the controller however it ends (runners/worker/watchdog.py), and run in a scratch directory.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Protocol, Tuple

from kbtool import repro, verdicts
from kbtool.reference.oracle import Oracle
from kbtool.results import Result, Status, Verdict
from kbtool.runners import messages as protocol
from kbtool.runners.client import WorkerClient
from kbtool.runners.custom import inherited_from
from kbtool.runners.messages import Hello, Reply, Request
from kbtool.runners.registry import keras_name_of
from kbtool.settings import RunSettings
from kbtool.specs import call, keras3_map

if TYPE_CHECKING:
    from kbtool.runners.base import Launch
    from kbtool.specs.cases import Case

Settings = Mapping[str, Any]  # a worker's keras.json settings (floatx, epsilon, image_data_format)
SettingsKey = Tuple[Tuple[str, Any], ...]


class Cancel:
    """The stop switch of one run, shared by the main thread (signal handlers) and the threads driving workers.

    `set(reason)` may be called from a signal handler: it marks the run cancelled and kills every registered
    worker client's process group; a client registered later is killed as it registers. The mark is a plain flag,
    not a threading.Event: Event.set takes a lock that is not re-entrant, so a second signal arriving inside the
    first one's handler would wait on it for ever.
    """

    def __init__(self) -> None:
        self._cancelled = False
        self._lock = threading.RLock()  # re-entrant: a second signal may arrive inside the first handler
        self._clients: List[WorkerClient] = []
        self.reason: Optional[str] = None  # what cancelled the run, e.g. "SIGINT"

    def is_set(self) -> bool:
        return self._cancelled

    def set(self, reason: str = "cancelled") -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
            self._cancelled = True
        self.kill_all()

    def kill_all(self) -> None:
        with self._lock:
            clients = list(self._clients)
        for client in clients:
            client.kill()

    def register(self, client: WorkerClient) -> None:
        with self._lock:
            self._clients.append(client)
            cancelled = self._cancelled
        if cancelled:
            client.kill()

    def unregister(self, client: WorkerClient) -> None:
        with self._lock:
            if client in self._clients:
                self._clients.remove(client)


class Watch(Protocol):
    """What watches a session's worker processes (pool.MemoryWatch: their peak memory)."""

    def add(self, client: WorkerClient) -> None: ...

    def remove(self, client: WorkerClient) -> None: ...


@dataclass
class Worker:
    """A started worker: its client, its hello, and why its backend did not apply the settings asked (or None)."""

    client: WorkerClient
    hello: Hello
    mismatch: Optional[str] = None

    @property
    def ready(self) -> bool:
        return protocol.is_ready(self.hello)

    @property
    def why_not_ready(self) -> str:
        return str(self.hello.get("error") or "no reason given")


@dataclass
class Expected:
    """The reference's reply for a case, or why kbtool could not compute it (each mode is then an error)."""

    reply: Optional[Tuple[Dict[str, Any], List[Any]]] = None
    why_not: Optional[str] = None


@dataclass
class BackendSession:
    """The workers of one backend (one share of its cases), one per set of keras.json settings."""

    name: str
    launch: Launch
    # the run's settings: its case timeout (None: the backend's own), --repeat N (each case runs N times on its
    # worker; runs that disagree make the result `nondeterministic`), and what every repro carries
    settings: RunSettings = field(default_factory=RunSettings)
    oracle: Oracle = field(default_factory=Oracle)
    cancel: Cancel = field(default_factory=Cancel)
    share: int = 0  # which share of the backend's cases this session's workers take (Launch.for_worker)
    watch: Optional[Watch] = None
    _workers: Dict[SettingsKey, Worker] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _reproducible(self, result: Result, case: Case) -> None:
        """A non-passing result's repro command and the call it made (every view shows both)."""
        result.repro = repro.command(result, case, self.settings)
        result.call = call.of_case(case).as_dict()

    # -- workers ---------------------------------------------------------------------------------------
    def worker(self, settings: Optional[Settings] = None) -> Worker:
        """The worker for these keras.json settings (started on first use; a broken hello is kept, not retried)."""
        wanted = dict(settings or {})
        key: SettingsKey = tuple(sorted(wanted.items()))
        with self._lock:
            found = self._workers.get(key)
            if found is None:
                found = self._workers[key] = self._start(wanted)
        return found

    def _start(self, settings: Dict[str, Any]) -> Worker:
        given = self.settings.case_timeout
        timeout = given if given is not None else self.launch.case_timeout
        client = WorkerClient(
            self.launch.for_worker(self.share),
            keras_config=settings,
            **({"case_timeout": timeout} if timeout is not None else {}),
        )
        self.cancel.register(client)
        if self.watch is not None:
            self.watch.add(client)
        hello = client.start()
        ready = protocol.is_ready(hello)
        return Worker(client, hello, settings_mismatch(settings, hello.get("keras_config")) if ready else None)

    @property
    def workers(self) -> List[Worker]:
        with self._lock:
            return list(self._workers.values())

    @property
    def restarts(self) -> int:
        return sum(w.client.restarts for w in self.workers)

    def stop(self) -> None:
        """Ask every worker to exit (killed when it does not, or when the run was cancelled: `Cancel.set` kills
        every worker of every session sharing it, from any thread or a signal handler)."""
        with self._lock:
            workers, self._workers = list(self._workers.values()), {}
        for worker in workers:
            try:
                worker.client.stop()
            except Exception:  # one worker that cannot be stopped keeps no other alive
                worker.client.kill()
            self._forget(worker.client)

    def _forget(self, client: WorkerClient) -> None:
        self.cancel.unregister(client)
        if self.watch is not None:
            self.watch.remove(client)

    def __enter__(self) -> BackendSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- cases -----------------------------------------------------------------------------------------
    def expected(self, case: Case, hello: Optional[Hello] = None) -> Expected:
        """The reference's reply for `case` (computed once per case by the oracle)."""
        try:
            return Expected(reply=self.oracle.expected(case, hello, self.name, keras_name_of))
        except Exception as exc:
            return Expected(why_not=_why(exc))

    def result(
        self, entry: Mapping[str, Any], case: Case, mode: str, expected: Optional[Expected] = None
    ) -> Optional[Result]:
        """`case` in `mode` on the worker for the case's settings, judged against `expected` (default: the case's
        own reference). None when the run was cancelled before the worker answered."""
        worker = self.worker(case.keras_config)
        if not worker.ready:
            return self._could_not_start(case, mode, worker)
        if worker.mismatch:
            result = not_applied(self.name, case, mode, worker.mismatch, self.launch.device)
            self._reproducible(result, case)
            return result
        return self._judged(worker, entry, case, mode, expected or self.expected(case, worker.hello))

    def results(self, entry: Mapping[str, Any], case: Case) -> Iterator[Result]:
        """`case` and the backend's variants of it (judged against the case's reference), in each of their modes;
        ends early when the run is cancelled."""
        worker = self.worker(case.keras_config)
        expected = self.expected(case, worker.hello) if worker.ready else None
        for variant in [case, *self.variants(case)]:
            for mode in variant.modes:
                if self.cancel.is_set():
                    return
                result = self.result(entry, variant, mode, expected)
                if result is None:
                    return
                yield result

    def variants(self, case: Case) -> List[Case]:
        """The backend's variants of `case`; a custom module runs its base backend's only for an op it inherits
        (they tell the base's known differences apart, and only an inherited op's results can be explained so)."""
        found = list(self.launch.variants(case) or [])
        if found and self.launch.base_backend:
            worker = self.worker(case.keras_config)
            if not worker.ready or inherited_from(worker.hello, case.op) is None:
                return []
        return found

    def request(self, request: Request, settings: Optional[Settings] = None) -> Reply:
        """A raw request to the worker for `settings` (bench's timing, the overhead measurement)."""
        worker = self.worker(settings)
        if not worker.ready:
            return Reply.failure(protocol.UNAVAILABLE, f"worker could not start: {worker.why_not_ready}")
        return worker.client.request(request)

    def _could_not_start(self, case: Case, mode: str, worker: Worker) -> Result:
        result = Result(
            op=case.op,
            case=case.id,
            backend=self.name,
            mode=mode,
            status=Status.COULD_NOT_START,
            message=f"the worker could not start: {worker.why_not_ready}",
            keras_config=dict(case.keras_config),
            device=self.launch.device,
        )
        self._reproducible(result, case)
        return result

    def _judged(
        self, worker: Worker, entry: Mapping[str, Any], case: Case, mode: str, expected: Expected
    ) -> Optional[Result]:
        import time

        header = case.request(mode)
        request = Request.from_header(header, case.arrays)
        started = time.monotonic()
        actual = worker.client.request(request)
        seconds = time.monotonic() - started
        if actual.cancelled:
            return None
        again = self._repeated(worker, request, case, header, entry, actual)
        if again is None:
            return None
        if expected.reply is None:
            verdict = Verdict(Status.ERROR, f"kbtool could not compute the reference: {expected.why_not}")
        else:
            verdict = _judge(case, expected.reply, actual, entry.get("shape_rules"))
        if again:  # the runs disagree: whatever the first run's verdict, it was luck
            verdict = again[0]
        deviation = keras3_map.adapter_deviation(self.launch.module, case.op)
        if deviation:  # an adapter that runs other code than the map's row cannot pass, whatever it computed
            verdict = Verdict(Status.FAIL, f"the adapter's K.{case.op} is not the map's row: {deviation}")
        result = Result(
            op=case.op,
            case=case.id,
            backend=self.name,
            mode=mode,
            status=verdict.status,
            message=str(verdict.message),
            seconds=round(seconds, 4),
            details=verdict.details.as_dict() if verdict.details else None,
            note=actual.note,
            keras_config=dict(case.keras_config),
            captured=_captured(expected.reply, actual),
            inherits=inherited_from(worker.hello, case.op),
            device=self.launch.device,
            margin=verdict.margin,
        )
        if case.shown and actual.ok and verdict.status not in (Status.ERROR, Status.NONDETERMINISTIC):
            try:
                result.doc_check = verdicts.doc_check(case.shown, verdicts.output_values(*actual))
            except Exception as exc:
                result.status, result.details = Status.ERROR, None
                result.message = f"kbtool could not compare the reply with what the docs show: {_why(exc)}"
        try:
            json.dumps(result.as_dict())
        except (TypeError, ValueError) as exc:  # the report must be writable: keep the verdict, drop what is not
            result.details, result.doc_check = None, None
            result.message = f"{result.message} (details dropped: {_why(exc)})"
        if result.status != Status.PASS:
            self._reproducible(result, case)
        return result

    def _repeated(
        self,
        worker: Worker,
        request: Request,
        case: Case,
        header: Mapping[str, Any],
        entry: Mapping[str, Any],
        first: Reply,
    ) -> Optional[List[Verdict]]:
        """--repeat N: the request N - 1 more times on the same worker, each reply compared with the first bit for
        bit. [] when the runs agree (or the case is not repeated: a random op's draws, or a first run that crashed,
        hung or found no function), [a `nondeterministic` verdict] when they do not; None when cancelled."""
        repeat = self.settings.repeat
        if repeat <= 1 or first.status not in verdicts.repeats.REPEATABLE:
            return []
        if verdicts.is_random(case, header, entry):
            return []
        replies = [first]
        for _ in range(repeat - 1):
            if self.cancel.is_set():
                return None
            reply = worker.client.request(request)
            if reply.cancelled:
                return None
            replies.append(reply)
        try:
            verdict = verdicts.judge_runs([(r.header, r.arrays) for r in replies])
        except Exception as exc:  # a reply the comparison cannot read: the runs could not be told apart
            verdict = Verdict(Status.ERROR, f"kbtool could not compare the repeated runs: {_why(exc)}")
        return [] if verdict is None else [verdict]


def probe(name: str, cancel: Optional[Cancel] = None) -> Dict[str, Any]:
    """Start a worker for `name` and report what it says: status, versions, reason (`kbtool backends`)."""
    from kbtool.results import BackendStatus
    from kbtool.runners.base import Unavailable
    from kbtool.runners.registry import BrokenEnv, backend_info, is_builtin, launch_for, not_installed_info

    try:
        launch = launch_for(name)
    except BrokenEnv as exc:  # installed, but it cannot run: say what is wrong and how to mend it
        kind = "builtin" if is_builtin(name) else "custom"
        return {"name": name, "kind": kind, "status": BackendStatus.BROKEN.value, "reason": str(exc)}
    except Unavailable as exc:
        return not_installed_info(name, exc)
    with BackendSession(name, launch, cancel=cancel or Cancel()) as session:
        worker = session.worker()
        return backend_info(name, worker.hello)


def probe_all(extra: Tuple[str, ...] = (), cancel: Optional[Cancel] = None) -> List[Dict[str, Any]]:
    """Probe every built-in backend and the `extra` custom ones, in parallel (a cancel kills every probe)."""
    from concurrent.futures import ThreadPoolExecutor

    from kbtool.runners.registry import BUILTIN

    wanted = list(BUILTIN) + [n for n in dict.fromkeys(extra) if n not in BUILTIN]
    cancel = cancel or Cancel()
    with ThreadPoolExecutor(max_workers=len(wanted)) as pool:
        return list(pool.map(lambda name: probe(name, cancel), wanted))


def settings_mismatch(wanted: Settings, reported: object) -> Optional[str]:
    """Why a worker's backend did not honour its keras.json (None when it did, or cannot say)."""
    if not isinstance(reported, dict):
        return None
    wrong = []
    for key, value in sorted(wanted.items()):
        got = reported.get(key)
        if got is None:
            continue  # the module has no getter for it: nothing to compare
        same = (
            abs(float(got) - float(value)) <= 1e-12 * max(1.0, abs(float(value)))
            if key == "epsilon"
            else str(got) == str(value)
        )
        if not same:
            wrong.append(f"{key} is {got} where keras.json says {value}")
    return "; ".join(wrong) or None


def not_applied(name: str, case: Case, mode: str, mismatch: str, device: Optional[str] = None) -> Result:
    """The result of a case on a worker whose backend did not apply the keras.json settings asked (its repro is
    the session's to add)."""
    result = Result(
        op=case.op,
        case=case.id,
        backend=name,
        mode=mode,
        status=Status.ERROR,
        message=f"the backend did not apply its keras.json: {mismatch}",
        keras_config=dict(case.keras_config),
        device=device,
    )
    return result


def _captured(expected: Optional[Tuple[Dict[str, Any], List[Any]]], actual: Reply) -> Optional[Dict[str, str]]:
    """What the reference and the worker printed or warned for this case (the oracle and the client collect it,
    so that it reaches the report instead of the terminal), or None."""
    out = {}
    for side, header in (("reference", expected[0] if expected else None), ("backend", actual.header)):
        text = header.get("captured") if isinstance(header, dict) else None
        if text:
            out[side] = str(text)
    return out or None


def _judge(case: Case, expected: Tuple[Dict[str, Any], List[Any]], actual: Reply, shape_rules: Any) -> Verdict:
    """verdicts.judge, except that a reply it cannot read (a datetime64, string or structured array, ...) is an
    `error` result of its own case instead of an exception that ends the run."""
    try:
        return verdicts.judge(case, expected, actual, shape_rules)
    except Exception as exc:
        return Verdict(Status.ERROR, f"kbtool could not compare the reply: {_why(exc)}")


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"
