"""Running a plan: every planned case on every runnable backend's worker, each judged against the reference.

One thread per backend drives that backend's worker process; the reference's outcome for a case is computed
once and shared. Produces the backends' info (what each worker said at start) and one Result per
op × case × backend × mode.

Nothing one backend does loses another's results: a reply the verdicts cannot read costs only its case (an
`error` result), and an exception anywhere in a backend's thread marks that backend broken with the reason and
keeps the results it had. A `Cancel` (set by the check command's signal handlers) stops every backend between
cases and kills every worker process group at once; the cases that did not run are simply absent.
"""

import collections
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
    restarts: int = 0  # worker restarts over all its workers (one per set of keras.json settings)


def planned_results(plan):
    """How many results a plan sets out to produce: every case in each of its modes on every runnable backend."""
    return sum(len(case.modes) for slot in plan.runnable for _, case in _work_for(plan, slot.name))


def run_plan(
    plan,
    oracle=None,
    progress=None,
    jobs=None,
    case_timeout=None,
    cancel=None,
    grace=CANCEL_GRACE,
    min_join_seconds=None,
    usage=None,
):
    """Returns (backend infos in plan order, results sorted by op, case, backend, mode).

    Every backend's cases are served by one pool of `jobs` worker slots (kbtool/pool.py; default one per core).
    With `cancel` set during the run, returns within about `grace` seconds with the results that ran. `usage`, a
    dict, receives the slots and the peak memory of the workers and of the controller."""
    from .pool import BackendLoad, Lane, MemoryWatch, Pool, default_jobs
    from .runners.registry import not_installed_info

    oracle = oracle or Oracle()
    cancel = cancel or Cancel()
    jobs = jobs or default_jobs()
    infos, results = {}, []
    for slot in plan.backends:
        if slot.launch is None:
            infos[slot.name] = not_installed_info(slot.name, slot.unavailable)
    lanes, loads, runs, launches = [], {}, {}, {}
    for slot in plan.runnable:
        launches[slot.name] = slot.launch
        runs[slot.name] = BackendRun(slot.name)
        cap = getattr(slot.launch, "workers", None)
        loads[slot.name] = BackendLoad(
            slot.name,
            cap=int(cap) if cap else None,
            case_seconds=getattr(slot.launch, "case_seconds", None) or BackendLoad.case_seconds,
        )
        groups = _by_settings(_work_for(plan, slot.name))
        lanes.extend(Lane(slot.name, settings, collections.deque(group)) for settings, group in groups)
        if not groups:  # nothing of the plan runs on it (its modes): it still says who it is
            lanes.append(Lane(slot.name, {}, collections.deque()))
    pool = Pool(lanes, loads, min_join_seconds=min_join_seconds)
    # a backend with nothing to run still starts once, so the report has its versions (and knows it starts)
    empty = [
        lane
        for lane in lanes
        if not lane.items and not any(other.items for other in lanes if other.backend == lane.backend)
    ]
    gate = threading.BoundedSemaphore(jobs)
    watch = MemoryWatch()
    context = dict(
        oracle=oracle, seed=plan.seed, progress=progress, case_timeout=case_timeout, cancel=cancel, watch=watch
    )
    threads = [
        threading.Thread(
            target=_serve_slot, name=f"kbtool-slot-{i}", daemon=True, args=(pool, runs, launches, gate, context)
        )
        for i in range(jobs)
    ]
    threads += [
        threading.Thread(
            target=_hello_only,
            name=f"kbtool-hello-{lane.backend}",
            daemon=True,
            args=(lane, runs[lane.backend], launches[lane.backend], gate, context),
        )
        for lane in empty
    ]
    with watch:
        for thread in threads:
            thread.start()
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
    for name, backend_run in runs.items():
        info = _final_info(backend_run, cancel)
        if loads[name].most_workers > 1:
            info["workers"] = loads[name].most_workers
        unsupported = plan.unsupported_modes(name) if hasattr(plan, "unsupported_modes") else {}
        if unsupported:  # said once for the backend, where a result per case would say it 1000 times
            info["unsupported_modes"] = unsupported
        infos[name] = info
        results.extend(list(backend_run.results))
    if usage is not None:
        usage.update(jobs=jobs, **watch.summary())
    order = {slot.name: i for i, slot in enumerate(plan.backends)}
    results.sort(key=lambda r: (r.op, r.case, order[r.backend], r.mode))
    return [infos[slot.name] for slot in plan.backends], results


def _serve_slot(pool, runs, launches, gate, context):
    """One worker slot: serve the lane the pool picks until it is empty, then ask again, until nothing is left."""
    cancel = context["cancel"]
    while not cancel.is_set():
        picked = pool.pick()
        if picked is None:
            if not pool.has_work():
                return
            time.sleep(0.2)  # every lane has its workers; one may yet be worth joining as rates become known
            continue
        lane, index, from_end = picked
        backend_run = runs[lane.backend]
        try:
            with gate:
                hello = _run_lane(pool, lane, index, from_end, launches[lane.backend], backend_run, context)
            if hello is not None and hello.get("status") != protocol.READY:
                pool.stop(lane.backend)  # its worker cannot start: no other worker of it will
        except BaseException as exc:  # a bug in kbtool or a backend's reply: that backend alone pays
            backend_run.error = backend_run.error or f"{type(exc).__name__}: {exc}"
            pool.stop(lane.backend)
        finally:
            pool.release(lane, index)


def _hello_only(lane, backend_run, launch, gate, context):
    """Start and stop a worker of a backend the plan gives nothing to run, for its versions in the report."""
    try:
        with gate:
            _run_lane(None, lane, 0, False, launch, backend_run, context)
    except BaseException as exc:
        backend_run.error = f"{type(exc).__name__}: {exc}"


def _run_lane(pool, lane, index, from_end, launch, into, context):
    """One worker with the lane's keras.json settings runs the lane's cases as the pool hands them out; returns its
    hello (None if cancelled first)."""
    from .runners.client import WorkerClient
    from .runners.registry import backend_info

    cancel = context["cancel"]
    case_timeout = context["case_timeout"]
    if case_timeout is None:
        case_timeout = getattr(launch, "case_timeout", None)  # the backend's own default, where it has one
    if cancel.is_set():
        return None
    worker_launch = launch.for_worker(index) if hasattr(launch, "for_worker") else launch
    client = WorkerClient(
        worker_launch,
        keras_config=lane.settings,
        **({"case_timeout": case_timeout} if case_timeout is not None else {}),
    )
    cancel.register(client)
    context["watch"].add(client)
    try:
        hello = client.start()
        with _INFO_LOCK:
            failed = hello.get("status") != protocol.READY and not cancel.is_set()  # (a kill is no failure)
            if into.info is None or failed:
                # the first worker's hello, or the one that did not start (with other settings, or a later one)
                into.info = backend_info(lane.backend, hello)
                if client.start_output:  # import chatter, or why the import failed: in the record, not the terminal
                    into.info["start_output"] = client.start_output
        if hello.get("status") != protocol.READY:
            return hello
        if pool is not None:
            pool.started(lane.backend, hello.get("import_seconds"))
        mismatch = settings_mismatch(lane.settings, hello.get("keras_config"))
        while not cancel.is_set():
            item = pool.take(lane, from_end) if pool is not None else None
            if item is None:
                break
            entry, case = item
            started = time.monotonic()
            ran = _run_item(client, lane.backend, launch, entry, case, mismatch, context, into)
            if pool is not None and ran:
                pool.finished(lane.backend, time.monotonic() - started)
        return hello
    finally:
        with _INFO_LOCK:
            into.restarts += client.restarts
            if into.info is not None:
                into.info["restarts"] = into.restarts
        context["watch"].remove(client)
        client.stop()


_INFO_LOCK = threading.Lock()


def _run_item(client, name, launch, entry, case, mismatch, context, into):
    """A case and the backend's variants of it, in each of their modes; False when cancelled before the end."""
    cancel, progress, seed = context["cancel"], context["progress"], context["seed"]
    expected = _expected(context["oracle"], case, client.hello, name)
    for variant in [case] + list(launch.variants(case) or []):
        for mode in variant.modes:
            if cancel.is_set():
                return False
            if mismatch:
                result = _not_applied(name, variant, mode, mismatch, seed)
            else:
                result = run_case(client, name, entry, variant, mode, expected, seed)
            if result is None:  # cancelled while it ran: it has no outcome
                return False
            with _INFO_LOCK:
                into.results.append(result)
            if progress:
                try:
                    progress(name, result)
                except Exception:  # a progress line that cannot be shown costs nothing
                    pass
    return True


def _work_for(plan, backend):
    """The work one backend runs (plan.work_for: all of it, or what failed on it last time under --last-failed)."""
    return plan.work_for(backend) if hasattr(plan, "work_for") else plan.work


def _final_info(backend_run, cancel):
    """The backend's info for the report: what its worker said, or why it has no (complete) result."""
    from .runners.registry import backend_info

    info = dict(backend_run.info) if backend_run.info else None
    if backend_run.error:
        info = info or backend_info(backend_run.name, {})
        info.update(
            status=BackendStatus.BROKEN.value,
            reason=f"kbtool failed while running this backend ({len(backend_run.results)} results kept): {backend_run.error}",
        )
    elif info is None or (cancel.is_set() and info.get("reason") == "cancelled"):
        info = backend_info(backend_run.name, {})
        if cancel.is_set():
            info["reason"] = f"interrupted ({cancel.reason}) before its worker was ready"
    return info


def _by_settings(work):
    """Work grouped by keras.json settings, the default settings first, then in order of first appearance."""
    from .specs.domains import CONFIG_DEFAULTS

    groups = {}
    for entry, case in work:
        key = tuple(sorted(case.keras_config.items()))
        groups.setdefault(key, []).append((entry, case))
    default = tuple(sorted(CONFIG_DEFAULTS.items()))
    order = sorted(groups, key=lambda key: key != default)  # stable: the others keep their order
    return [(dict(key), groups[key]) for key in order]


def settings_mismatch(wanted, reported):
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


def _not_applied(name, case, mode, mismatch, seed):
    result = Result(
        op=case.op,
        case=case.id,
        backend=name,
        mode=mode,
        status=Status.ERROR,
        message=f"the backend did not apply its keras.json: {mismatch}",
        keras_config=dict(case.keras_config),
    )
    result.repro = repro_command(result, seed, case)
    return result


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
        verdict = Verdict(Status.ERROR, f"kbtool could not compute the reference: {expected.why}")
    else:
        verdict = _judge(case, expected, actual, entry.get("shape_rules"))
    note = actual[0].get("note")
    result = Result(
        op=case.op,
        case=case.id,
        backend=backend,
        mode=mode,
        status=verdict.status,
        message=str(verdict.message),
        seconds=round(seconds, 4),
        details=verdict.details.as_dict() if verdict.details else None,
        note=None if note is None else str(note),
        keras_config=dict(case.keras_config),
        captured=_captured(expected, actual),
    )
    if case.shown and actual[0].get("status") == protocol.OK and verdict.status != Status.ERROR:
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
        result.repro = repro_command(result, seed, case)
    return result


def _captured(expected, actual):
    """What the reference and the worker printed or warned for this case (the oracle and the client collect it,
    so that it reaches the report instead of the terminal), or None."""
    out = {}
    for side, reply in (("reference", expected), ("backend", actual)):
        text = reply[0].get("captured") if isinstance(reply, tuple) and isinstance(reply[0], dict) else None
        if text:
            out[side] = str(text)
    return out or None


def _judge(case, expected, actual, shape_rules):
    """verdicts.judge, except that a reply it cannot read (a datetime64, string or structured array, ...) is an
    `error` result of its own case instead of an exception that ends the run."""
    try:
        return verdicts.judge(case, expected, actual, shape_rules)
    except Exception as exc:
        return Verdict(Status.ERROR, f"kbtool could not compare the reply: {_why(exc)}")


def _why(exc):
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def repro_command(result, seed, case=None):
    """The command that runs this result again (a variant runs with its case; --keras-config when not default)."""
    case_id = case.variant_of if case is not None and case.variant_of else result.case
    command = f"kbtool check --op {shlex.quote(result.op)} --case {shlex.quote(case_id)} --backend {shlex.quote(result.backend)} --mode {result.mode} --seed {seed}"
    override = case.keras_override if case is not None else {}
    for key in sorted(override or {}):
        command += f" --keras-config {key}={override[key]}"
    if case is not None and case.id.startswith("grid.") and case.grid == "full":
        command += " --grid full"
    return command
