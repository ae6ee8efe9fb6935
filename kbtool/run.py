"""Running a plan: every planned case on every runnable backend's worker, each judged against the reference.

One thread per backend drives that backend's worker process; the reference's outcome for a case is computed
once and shared. Produces the backends' info (what each worker said at start) and one Result per
op × case × backend × mode.

Nothing one backend does loses another's results: a reply the verdicts cannot read costs only its case (an
`error` result), and an exception anywhere in a backend's thread marks that backend broken with the reason and
keeps the results it had. A `Cancel` (set by the check command's signal handlers) stops every backend between
cases and kills every worker process group at once; the cases that did not run are simply absent.
"""
import json
import shlex
import threading
import time
from dataclasses import dataclass, field
from typing import List, Optional

from . import verdicts
from .reference.oracle import Oracle
from .results import BackendStatus, Result, Status, Verdict
from .runners.worker import protocol

CANCEL_GRACE = 1.0  # seconds the backends' threads get to wind down once a check is cancelled


class Cancel:
    """The stop switch of one check, shared by the main thread (signal handlers) and the backends' threads.

    `set(reason)` may be called from a signal handler: it marks the check cancelled and kills every registered
    worker client's process group; a client registered later is killed as it registers.
    """

    def __init__(self):
        self._event = threading.Event()
        self._lock = threading.RLock()  # re-entrant: a second signal may arrive inside the first handler
        self._clients = []
        self.reason = None  # what cancelled the check, e.g. "SIGINT"

    def is_set(self):
        return self._event.is_set()

    def set(self, reason="cancelled"):
        with self._lock:
            if self.reason is None:
                self.reason = reason
            self._event.set()
        self.kill_all()

    def kill_all(self):
        with self._lock:
            clients = list(self._clients)
        for client in clients:
            client.kill()

    def register(self, client):
        with self._lock:
            self._clients.append(client)
            cancelled = self._event.is_set()
        if cancelled:
            client.kill()


@dataclass
class BackendRun:
    """What one backend's thread has produced so far (read by the main thread, also after a cancel)."""

    name: str
    info: Optional[dict] = None
    results: List[Result] = field(default_factory=list)
    error: Optional[str] = None  # an exception that ended the thread: the backend is reported broken
    done: bool = False


def planned_results(plan):
    """How many results a plan sets out to produce: every case in each of its modes on every runnable backend."""
    return sum(len(case.modes) for _, case in plan.work) * len(plan.runnable)


def run_plan(plan, oracle=None, progress=None, jobs=None, case_timeout=None, cancel=None, grace=CANCEL_GRACE):
    """Returns (backend infos in plan order, results sorted by op, case, backend, mode).

    With `cancel` set during the run, returns within about `grace` seconds with the results that ran.
    """
    from .runners.registry import not_installed_info

    oracle = oracle or Oracle()
    cancel = cancel or Cancel()
    infos, results = {}, []
    for slot in plan.backends:
        if slot.launch is None:
            infos[slot.name] = not_installed_info(slot.name, slot.unavailable)
    runs = [BackendRun(slot.name) for slot in plan.runnable]
    gate = threading.BoundedSemaphore(jobs) if jobs else None
    threads = []
    for slot, backend_run in zip(plan.runnable, runs):
        thread = threading.Thread(target=_run_guarded, name="kbtool-{}".format(slot.name), daemon=True,
                                  args=(backend_run, slot.launch, plan.work, oracle, plan.seed, progress,
                                        case_timeout, cancel, gate))
        thread.start()
        threads.append(thread)
    deadline = None
    while True:  # join in short steps: the main thread's signal handlers run in between
        alive = [t for t in threads if t.is_alive()]
        if not alive:
            break
        if cancel.is_set():
            deadline = deadline or time.monotonic() + grace
            if time.monotonic() >= deadline:
                cancel.kill_all()
                break
        alive[0].join(0.05)
    for backend_run in runs:
        infos[backend_run.name] = _final_info(backend_run, cancel)
        results.extend(list(backend_run.results))
    order = {slot.name: i for i, slot in enumerate(plan.backends)}
    results.sort(key=lambda r: (r.op, r.case, order[r.backend], r.mode))
    return [infos[slot.name] for slot in plan.backends], results


def _run_guarded(backend_run, launch, work, oracle, seed, progress, case_timeout, cancel, gate):
    try:
        if gate is not None:
            while not gate.acquire(timeout=0.1):
                if cancel.is_set():
                    return
        try:
            run_backend(backend_run.name, launch, work, oracle, seed, progress, case_timeout, cancel=cancel,
                        into=backend_run)
        finally:
            if gate is not None:
                gate.release()
    except BaseException as exc:  # a bug in kbtool or a backend's thread: that backend alone pays
        backend_run.error = "{}: {}".format(type(exc).__name__, exc)
    finally:
        backend_run.done = True


def _final_info(backend_run, cancel):
    """The backend's info for the report: what its worker said, or why it has no (complete) result."""
    from .runners.registry import backend_info

    info = dict(backend_run.info) if backend_run.info else None
    if backend_run.error:
        info = info or backend_info(backend_run.name, {})
        info.update(status=BackendStatus.BROKEN.value,
                    reason="kbtool failed while running this backend ({} results kept): {}".format(
                        len(backend_run.results), backend_run.error))
    elif info is None or (cancel.is_set() and info.get("reason") == "cancelled"):
        info = backend_info(backend_run.name, {})
        if cancel.is_set():
            info["reason"] = "interrupted ({}) before its worker was ready".format(cancel.reason)
    return info


def run_backend(name, launch, work, oracle, seed, progress=None, case_timeout=None, cancel=None, into=None):
    """Every (entry, case) of `work` on one backend, in each of the case's modes, until `cancel` is set.

    Results go into `into` (a BackendRun) as they come, so that a cancelled check keeps them; returns (info,
    results)."""
    from .runners.client import WorkerClient
    from .runners.registry import backend_info

    into = into or BackendRun(name)
    cancel = cancel or Cancel()
    client = WorkerClient(launch, **({"case_timeout": case_timeout} if case_timeout is not None else {}))
    cancel.register(client)
    try:
        hello = client.start()
        into.info = info = backend_info(name, hello)
        if info["status"] != BackendStatus.AVAILABLE.value:
            return info, into.results
        for entry, case in work:
            if cancel.is_set():
                break
            expected = _expected(oracle, case, hello, name)
            for mode in case.modes:
                if cancel.is_set():
                    break
                result = run_case(client, name, entry, case, mode, expected, seed)
                if result is None:  # cancelled while it ran: it has no outcome
                    break
                into.results.append(result)
                if progress:
                    try:
                        progress(name, result)
                    except Exception:  # a progress line that cannot be shown costs nothing
                        pass
    finally:
        if into.info is not None:
            into.info["restarts"] = client.restarts
        client.stop()
    return into.info, into.results


def _expected(oracle, case, hello, name):
    """The reference's reply for `case`, or a `could not compute` marker that run_case turns into an error."""
    try:
        return oracle.expected(case, hello, name)
    except Exception as exc:
        return _NoReference(_why(exc))


class _NoReference:
    """The reference could not be computed for a case (a bug in kbtool's reference): each mode is an error."""

    def __init__(self, why):
        self.why = why


def run_case(client, backend, entry, case, mode, expected, seed):
    """One case in one mode on one worker, judged. None when the client was cancelled before it answered."""
    from .runners.client import CANCELLED

    started = time.monotonic()
    actual = client.request(case.request(mode), case.arrays)
    seconds = time.monotonic() - started
    if actual[0].get("status") == CANCELLED:
        return None
    if isinstance(expected, _NoReference):
        verdict = Verdict(Status.ERROR, "kbtool could not compute the reference: {}".format(expected.why))
    else:
        verdict = _judge(case, expected, actual, entry.get("shape_rules"))
    note = actual[0].get("note")
    result = Result(op=case.op, case=case.id, backend=backend, mode=mode, status=verdict.status,
                    message=str(verdict.message), seconds=round(seconds, 4),
                    details=verdict.details.as_dict() if verdict.details else None,
                    note=None if note is None else str(note))
    if case.shown and actual[0].get("status") == protocol.OK and verdict.status != Status.ERROR:
        try:
            result.doc_check = verdicts.doc_check(case.shown, verdicts.output_values(*actual))
        except Exception as exc:
            result.status, result.details = Status.ERROR, None
            result.message = "kbtool could not compare the reply with what the docs show: {}".format(_why(exc))
    try:
        json.dumps(result.as_dict())
    except (TypeError, ValueError) as exc:  # the report must be writable: keep the verdict, drop what is not
        result.details, result.doc_check = None, None
        result.message = "{} (details dropped: {})".format(result.message, _why(exc))
    if result.status != Status.PASS:
        result.repro = repro_command(result, seed)
    return result


def _judge(case, expected, actual, shape_rules):
    """verdicts.judge, except that a reply it cannot read (a datetime64, string or structured array, ...) is an
    `error` result of its own case instead of an exception that ends the run."""
    try:
        return verdicts.judge(case, expected, actual, shape_rules)
    except Exception as exc:
        return Verdict(Status.ERROR, "kbtool could not compare the reply: {}".format(_why(exc)))


def _why(exc):
    return "{}: {}".format(type(exc).__name__, str(exc)[:300])


def repro_command(result, seed):
    return "kbtool check --op {} --case {} --backend {} --mode {} --seed {}".format(
        shlex.quote(result.op), shlex.quote(result.case), shlex.quote(result.backend), result.mode, seed)
