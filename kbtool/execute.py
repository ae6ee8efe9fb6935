"""Executing a plan: every planned case on every runnable backend, each judged against the reference.

`--jobs` worker slots (threads) serve the backends' lanes (pool.py: one lane per backend × keras.json settings);
a slot serves a lane through a `session.BackendSession`, the one owner of workers. The reference's outcome for a
case is computed once and shared. Produces the backends' info (what each worker said at start) and one Result per
op × case × backend × mode.

Nothing one backend does loses another's results: a reply the verdicts cannot read costs only its case (an
`error` result), and an exception anywhere in a backend's thread marks that backend broken with the reason and
keeps the results it had. A `Cancel` (set by the check command's signal handlers) stops every backend between
cases and kills every worker process group at once; the cases that did not run are simply absent.
"""

import collections
import threading
import time
from dataclasses import dataclass, field
from typing import List, Optional

from kbtool.reference.oracle import Oracle
from kbtool.results import BackendStatus, Result
from kbtool.runners import messages as protocol
from kbtool.runners.session import BackendSession, Cancel

CANCEL_GRACE = 1.0  # seconds the backends' threads get to wind down once a check is cancelled


@dataclass
class BackendResults:
    """What one backend's thread has produced so far (read by the main thread, also after a cancel)."""

    name: str
    info: Optional[dict] = None
    results: List[Result] = field(default_factory=list)
    error: Optional[str] = None  # an exception that ended the thread: the backend is reported broken
    done: bool = False
    restarts: int = 0  # worker restarts over all its workers (one per set of keras.json settings)


def planned_results(plan):
    """How many results a plan sets out to produce: every case in each of its modes on every runnable backend."""
    return sum(len(case.modes) for slot in plan.runnable for _, case in plan.work_for(slot.name))


def execute_plan(
    plan,
    oracle=None,
    progress=None,
    jobs=None,
    case_timeout=None,
    cancel=None,
    grace=CANCEL_GRACE,
    min_join_seconds=None,
    usage=None,
    repeat=1,
    flags=None,
):
    """Returns (backend infos in plan order, results sorted by op, case, backend, mode).

    Every backend's cases are served by one pool of `jobs` worker slots (kbtool/runners/pool.py; default one per core).
    With `cancel` set during the run, returns within about `grace` seconds with the results that ran. `usage`, a
    dict, receives the slots and the peak memory of the workers and of the controller. `repeat` (--repeat N): each
    case runs N times on its worker; runs that disagree make a `nondeterministic` result (session.py). `flags`
    (repro.RunFlags): what every repro carries (default: the plan's seed and `repeat`)."""
    from kbtool.runners.pool import BackendLoad, Lane, MemoryWatch, Pool, default_jobs
    from kbtool.runners.registry import not_installed_info

    oracle = oracle or Oracle()
    cancel = cancel or Cancel()
    jobs = jobs or default_jobs()
    infos, results = {}, []
    for slot in plan.backends:
        if slot.launch is None:
            infos[slot.name] = not_installed_info(slot.name, slot.unavailable, slot.status)
    lanes, loads, runs, launches = [], {}, {}, {}
    for slot in plan.runnable:
        launches[slot.name] = slot.launch
        runs[slot.name] = BackendResults(slot.name)
        cap = slot.launch.workers
        loads[slot.name] = BackendLoad(
            slot.name,
            cap=int(cap) if cap else None,
            case_seconds=slot.launch.case_seconds or BackendLoad.case_seconds,
        )
        groups = _by_settings(plan.work_for(slot.name))
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
        oracle=oracle,
        seed=plan.seed,
        progress=progress,
        case_timeout=case_timeout,
        cancel=cancel,
        watch=watch,
        repeat=repeat,
        flags=flags,
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
    for name, backend_results in runs.items():
        info = _final_info(backend_results, cancel)
        if loads[name].most_workers > 1:
            info["workers"] = loads[name].most_workers
        unsupported = plan.unsupported_modes(name)
        if unsupported:  # said once for the backend, where a result per case would say it 1000 times
            info["unsupported_modes"] = unsupported
        if launches[name].device:  # a backend with devices: the device its results ran on
            info["device"] = launches[name].device
        infos[name] = info
        results.extend(list(backend_results.results))
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
        backend_results = runs[lane.backend]
        try:
            with gate:
                hello = _serve_lane(pool, lane, index, from_end, launches[lane.backend], backend_results, context)
            if hello is not None and hello.get("status") != protocol.READY:
                pool.stop(lane.backend)  # its worker cannot start: no other worker of it will
        except BaseException as exc:  # a bug in kbtool or a backend's reply: that backend alone pays
            backend_results.error = backend_results.error or f"{type(exc).__name__}: {exc}"
            pool.stop(lane.backend)
        finally:
            pool.release(lane, index)
            if pool.idle(lane.backend):  # its last worker is gone and nothing of it is left: done
                _tell(context, lane.backend, "finished")


def _hello_only(lane, backend_results, launch, gate, context):
    """Start and stop a worker of a backend the plan gives nothing to run, for its versions in the report."""
    try:
        with gate:
            _serve_lane(None, lane, 0, False, launch, backend_results, context)
    except BaseException as exc:
        backend_results.error = f"{type(exc).__name__}: {exc}"
    _tell(context, lane.backend, "finished")


def _serve_lane(pool, lane, index, from_end, launch, into, context):
    """One worker with the lane's keras.json settings runs the lane's cases as the pool hands them out; returns its
    hello (None if cancelled first)."""
    from kbtool.runners.registry import backend_info

    cancel = context["cancel"]
    if cancel.is_set():
        return None
    session = BackendSession(
        lane.backend,
        launch,
        seed=context["seed"],
        case_timeout=context["case_timeout"],
        oracle=context["oracle"],
        cancel=cancel,
        share=index,
        watch=context["watch"],
        repeat=context["repeat"],
        flags=context["flags"],
    )
    try:
        _tell(context, lane.backend, "starting")  # a slot is its: no longer queued
        worker = session.worker(lane.settings)
        hello = worker.hello
        with _INFO_LOCK:
            failed = not worker.ready and not cancel.is_set()  # (a kill is no failure)
            if into.info is None or failed:
                # the first worker's hello, or the one that did not start (with other settings, or a later one)
                into.info = backend_info(lane.backend, hello)
                if worker.client.start_output:  # import chatter, or why the import failed: in the record
                    into.info["start_output"] = worker.client.start_output
        if not worker.ready:
            if not cancel.is_set():
                _tell(context, lane.backend, "failed")
            return hello
        _tell(context, lane.backend, "running")
        if pool is not None:
            pool.started(lane.backend, hello.get("import_seconds"))
        while not cancel.is_set():
            item = pool.take(lane, from_end) if pool is not None else None
            if item is None:
                break
            entry, case = item
            started = time.monotonic()
            ran = _serve_item(session, entry, case, context, into)
            if pool is not None and ran:
                pool.finished(lane.backend, time.monotonic() - started)
        return hello
    finally:
        with _INFO_LOCK:
            into.restarts += session.restarts
            if into.info is not None:
                into.info["restarts"] = into.restarts
        session.stop()


_INFO_LOCK = threading.Lock()


def _tell(context, backend, state):
    """Tell the progress display a backend's state (queued until `starting`: a slot is its; `running`: its worker
    is ready; `failed`: it could not start; `finished`: nothing of it is left), where the display listens."""
    listen = getattr(context["progress"], "state", None)
    if listen is not None:
        try:
            listen(backend, state)
        except Exception:  # a progress line that cannot be shown costs nothing
            pass


def _serve_item(session, entry, case, context, into):
    """A case and the backend's variants of it, in each of their modes; False when cancelled before the end."""
    progress = context["progress"]
    expected = sum(len(variant.modes) for variant in [case, *session.variants(case)])
    ran = 0
    for result in session.results(entry, case):
        ran += 1
        with _INFO_LOCK:
            into.results.append(result)
        if progress:
            try:
                progress(session.name, result)
            except Exception:  # a progress line that cannot be shown costs nothing
                pass
    return ran == expected and not session.cancel.is_set()


def _final_info(backend_results, cancel):
    """The backend's info for the report: what its worker said, or why it has no (complete) result."""
    from kbtool.runners.registry import backend_info

    info = dict(backend_results.info) if backend_results.info else None
    if backend_results.error:
        info = info or backend_info(backend_results.name, {})
        info.update(
            status=BackendStatus.BROKEN.value,
            reason=f"kbtool failed while running this backend ({len(backend_results.results)} results kept): {backend_results.error}",
        )
    elif info is None or (cancel.is_set() and info.get("reason") == "cancelled"):
        info = backend_info(backend_results.name, {})
        if cancel.is_set():
            info["reason"] = f"interrupted ({cancel.reason}) before its worker was ready"
    return info


def _by_settings(work):
    """Work grouped by keras.json settings, the default settings first, then in order of first appearance."""
    from kbtool.specs.domains import CONFIG_DEFAULTS

    groups = {}
    for entry, case in work:
        key = tuple(sorted(case.keras_config.items()))
        groups.setdefault(key, []).append((entry, case))
    default = tuple(sorted(CONFIG_DEFAULTS.items()))
    order = sorted(groups, key=lambda key: key != default)  # stable: the others keep their order
    return [(dict(key), groups[key]) for key in order]
