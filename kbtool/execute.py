"""Executing a plan: every planned case on every runnable backend, each judged against the reference.

`--jobs` worker slots (threads) serve the backends' lanes (runners/pool.py: one lane per backend × keras.json settings);
a slot serves a lane through a `session.BackendSession`, the one owner of workers. The reference's outcome for a
case is computed once and shared. Produces the backends' info (what each worker said at start) and one Result per
op × case × backend × mode.

Nothing one backend does loses another's results: a reply the verdicts cannot read costs only its case (an
`error` result), and an exception anywhere in a backend's thread marks that backend broken with the reason and
keeps the results it had. A `Cancel` (set by the check command's signal handlers) stops every backend between
cases and kills every worker process group at once; the cases that did not run are simply absent.
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from kbtool.reference.oracle import Oracle
from kbtool.results import BackendStatus, Result
from kbtool.runners import messages as protocol
from kbtool.runners.pool import BackendLoad, Lane, MemoryWatch, Pool, default_jobs
from kbtool.runners.registry import not_installed_info
from kbtool.runners.session import BackendSession, Cancel
from kbtool.settings import RunSettings

if TYPE_CHECKING:
    from kbtool.plan import Entry, Plan
    from kbtool.runners.base import Launch
    from kbtool.specs.cases import Case

CANCEL_GRACE = 1.0  # seconds the backends' threads get to wind down once a check is cancelled

Info = Dict[str, Any]  # what the report says of a backend (runners.registry.backend_info)
Progress = Callable[[str, Result], None]  # told each result; may also have state(backend, state)


@dataclass
class BackendResults:
    """What one backend's thread has produced so far (read by the main thread, also after a cancel)."""

    name: str
    info: Optional[Info] = None
    results: List[Result] = field(default_factory=list)
    error: Optional[str] = None  # an exception that ended the thread: the backend is reported broken
    done: bool = False
    restarts: int = 0  # worker restarts over all its workers (one per set of keras.json settings)


@dataclass
class _Run:
    """What every slot thread of one execution shares: the run's settings, the reference, the progress display, the
    stop switch, the memory watch, the pool and each backend's launch and results so far."""

    settings: RunSettings
    oracle: Oracle
    progress: Optional[Progress]
    cancel: Cancel
    watch: MemoryWatch
    pool: Pool
    runs: Dict[str, BackendResults]
    launches: Dict[str, Launch]
    gate: threading.BoundedSemaphore

    def tell(self, backend: str, state: str) -> None:
        """Tell the progress display a backend's state (queued until `starting`: a slot is its; `running`: its
        worker is ready; `failed`: it could not start; `finished`: nothing of it is left), where it listens."""
        listen = getattr(self.progress, "state", None)
        if listen is not None:
            try:
                listen(backend, state)
            except Exception:  # a progress line that cannot be shown costs nothing
                pass


def planned_results(plan: Plan) -> int:
    """How many results a plan sets out to produce: every case in each of its modes on every runnable backend."""
    return sum(len(case.modes) for planned_backend in plan.runnable for _, case in plan.work_for(planned_backend.name))


def execute_plan(
    plan: Plan,
    oracle: Optional[Oracle] = None,
    progress: Optional[Progress] = None,
    cancel: Optional[Cancel] = None,
    grace: float = CANCEL_GRACE,
    min_join_seconds: Optional[float] = None,
    usage: Optional[Dict[str, Any]] = None,
    settings: Optional[RunSettings] = None,
) -> Tuple[List[Info], List[Result]]:
    """Returns (backend infos in plan order, results sorted by op, case, backend, mode).

    Every backend's cases are served by one pool of `settings.jobs` worker slots (kbtool/runners/pool.py; default
    one per core). With `cancel` set during the run, returns within about `grace` seconds with the results that
    ran. `usage`, a dict, receives the slots and the peak memory of the workers and of the controller. `settings`
    (default: the plan's) carry the case timeout, --repeat N (each case runs N times on its worker; runs that
    disagree make a `nondeterministic` result: runners/session.py) and what every repro carries."""
    settings = settings or plan.run
    jobs = settings.jobs or default_jobs()
    run = _prepare(plan, settings, oracle or Oracle(), progress, cancel or Cancel(), min_join_seconds, jobs)
    threads = [
        threading.Thread(target=_serve_slot, name=f"kbtool-slot-{i}", daemon=True, args=(run,)) for i in range(jobs)
    ]
    threads += [
        threading.Thread(target=_hello_only, name=f"kbtool-hello-{lane.backend}", daemon=True, args=(run, lane))
        for lane in _empty_lanes(run.pool.lanes)
    ]
    with run.watch:
        _run_threads(threads, run.cancel, grace)
    infos: Dict[str, Info] = {}
    for planned_backend in plan.backends:
        if planned_backend.launch is None:
            infos[planned_backend.name] = not_installed_info(
                planned_backend.name, planned_backend.unavailable, planned_backend.status
            )
    results: List[Result] = []
    for name, backend_results in run.runs.items():
        infos[name] = _backend_info(plan, run, backend_results)
        results.extend(list(backend_results.results))
    if usage is not None:
        usage.update(jobs=jobs, **run.watch.summary())
    order = {planned_backend.name: i for i, planned_backend in enumerate(plan.backends)}
    results.sort(key=lambda r: (r.op, r.case, order[r.backend], r.mode))
    return [infos[planned_backend.name] for planned_backend in plan.backends], results


def _prepare(
    plan: Plan,
    settings: RunSettings,
    oracle: Oracle,
    progress: Optional[Progress],
    cancel: Cancel,
    min_join_seconds: Optional[float],
    jobs: int,
) -> _Run:
    """The shared state of one execution: a lane per runnable backend × keras.json settings, in one pool."""
    lanes: List[Lane] = []
    loads: Dict[str, BackendLoad] = {}
    runs: Dict[str, BackendResults] = {}
    launches: Dict[str, Launch] = {}
    for planned_backend in plan.runnable:
        launch = planned_backend.launch
        assert launch is not None  # runnable: it has a launch
        launches[planned_backend.name] = launch
        runs[planned_backend.name] = BackendResults(planned_backend.name)
        cap = launch.workers
        loads[planned_backend.name] = BackendLoad(
            planned_backend.name,
            cap=int(cap) if cap else None,
            case_seconds=launch.case_seconds or BackendLoad.case_seconds,
        )
        groups = _by_settings(plan.work_for(planned_backend.name))
        lanes.extend(
            Lane(planned_backend.name, group_settings, collections.deque(group)) for group_settings, group in groups
        )
        if not groups:  # nothing of the plan runs on it (its modes): it still says who it is
            lanes.append(Lane(planned_backend.name, {}, collections.deque()))
    pool = Pool(lanes, loads, min_join_seconds=min_join_seconds)
    gate = threading.BoundedSemaphore(jobs)
    return _Run(settings, oracle, progress, cancel, MemoryWatch(), pool, runs, launches, gate)


def _empty_lanes(lanes: List[Lane]) -> List[Lane]:
    """The lanes of backends with nothing to run: each still starts once, so the report has its versions (and
    knows it starts)."""
    return [
        lane
        for lane in lanes
        if not lane.items and not any(other.items for other in lanes if other.backend == lane.backend)
    ]


def _run_threads(threads: List[threading.Thread], cancel: Cancel, grace: float) -> None:
    """Start the threads and wait for them; once cancelled, for `grace` seconds at most (then every worker is
    killed)."""
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


def _backend_info(plan: Plan, run: _Run, backend_results: BackendResults) -> Info:
    """A runnable backend's info for the report, with its most workers, the modes it cannot run, its device."""
    name = backend_results.name
    info = _final_info(backend_results, run.cancel)
    if run.pool.loads[name].most_workers > 1:
        info["workers"] = run.pool.loads[name].most_workers
    unsupported = plan.unsupported_modes(name)
    if unsupported:  # said once for the backend, where a result per case would say it 1000 times
        info["unsupported_modes"] = unsupported
    if run.launches[name].device:  # a backend with devices: the device its results ran on
        info["device"] = run.launches[name].device
    return info


def _serve_slot(run: _Run) -> None:
    """One worker slot: serve the lane the pool picks until it is empty, then ask again, until nothing is left."""
    pool = run.pool
    while not run.cancel.is_set():
        picked = pool.pick()
        if picked is None:
            if not pool.has_work():
                return
            time.sleep(0.2)  # every lane has its workers; one may yet be worth joining as rates become known
            continue
        lane, index, from_end = picked
        backend_results = run.runs[lane.backend]
        try:
            with run.gate:
                hello = _serve_lane(run, lane, index, from_end, True)
            if hello is not None and hello.get("status") != protocol.READY:
                pool.stop(lane.backend)  # its worker cannot start: no other worker of it will
        except BaseException as exc:  # a bug in kbtool or a backend's reply: that backend alone pays
            backend_results.error = backend_results.error or f"{type(exc).__name__}: {exc}"
            pool.stop(lane.backend)
        finally:
            pool.release(lane, index)
            if pool.idle(lane.backend):  # its last worker is gone and nothing of it is left: done
                run.tell(lane.backend, "finished")


def _hello_only(run: _Run, lane: Lane) -> None:
    """Start and stop a worker of a backend the plan gives nothing to run, for its versions in the report."""
    try:
        with run.gate:
            _serve_lane(run, lane, 0, False, False)
    except BaseException as exc:
        run.runs[lane.backend].error = f"{type(exc).__name__}: {exc}"
    run.tell(lane.backend, "finished")


def _serve_lane(run: _Run, lane: Lane, index: int, from_end: bool, pooled: bool) -> Optional[Dict[str, Any]]:
    """One worker with the lane's keras.json settings runs the lane's cases as the pool hands them out (none when
    not `pooled`: a hello only); returns its hello (None if cancelled first)."""
    if run.cancel.is_set():
        return None
    into = run.runs[lane.backend]
    session = BackendSession(
        lane.backend,
        run.launches[lane.backend],
        settings=run.settings,
        oracle=run.oracle,
        cancel=run.cancel,
        share=index,
        watch=run.watch,
    )
    try:
        run.tell(lane.backend, "starting")  # a slot is its: no longer queued
        worker = session.worker(lane.settings)
        hello = worker.hello
        _keep_hello(run, into, worker.ready, hello, worker.client.start_output)
        if not worker.ready:
            if not run.cancel.is_set():
                run.tell(lane.backend, "failed")
            return hello
        run.tell(lane.backend, "running")
        if pooled:
            run.pool.started(lane.backend, hello.get("import_seconds"))
            _serve_items(run, session, lane, from_end, into)
        return hello
    finally:
        with _INFO_LOCK:
            into.restarts += session.restarts
            if into.info is not None:
                into.info["restarts"] = into.restarts
        session.stop()


def _keep_hello(
    run: _Run, into: BackendResults, ready: bool, hello: Dict[str, Any], start_output: Optional[str]
) -> None:
    """The backend's info from the first worker's hello, or from the one that did not start (with other settings,
    or a later one)."""
    from kbtool.runners.registry import backend_info

    with _INFO_LOCK:
        failed = not ready and not run.cancel.is_set()  # (a kill is no failure)
        if into.info is None or failed:
            into.info = backend_info(into.name, hello)
            if start_output:  # import chatter, or why the import failed: in the record
                into.info["start_output"] = start_output


def _serve_items(run: _Run, session: BackendSession, lane: Lane, from_end: bool, into: BackendResults) -> None:
    """The lane's cases, one after another, as the pool hands them out, until none is left or the run stops."""
    while not run.cancel.is_set():
        item = run.pool.take(lane, from_end)
        if item is None:
            break
        entry, case = item
        started = time.monotonic()
        ran = _serve_item(run, session, entry, case, into)
        if ran:
            run.pool.finished(lane.backend, time.monotonic() - started)


_INFO_LOCK = threading.Lock()


def _serve_item(run: _Run, session: BackendSession, entry: Entry, case: Case, into: BackendResults) -> bool:
    """A case and the backend's variants of it, in each of their modes; False when cancelled before the end."""
    expected = sum(len(variant.modes) for variant in [case, *session.variants(case)])
    ran = 0
    for result in session.results(entry, case):
        ran += 1
        with _INFO_LOCK:
            into.results.append(result)
        if run.progress:
            try:
                run.progress(session.name, result)
            except Exception:  # a progress line that cannot be shown costs nothing
                pass
    return ran == expected and not session.cancel.is_set()


def _final_info(backend_results: BackendResults, cancel: Cancel) -> Info:
    """The backend's info for the report: what its worker said, or why it has no (complete) result."""
    from kbtool.runners.registry import backend_info

    info = dict(backend_results.info) if backend_results.info else None
    if backend_results.error:
        info = info or backend_info(backend_results.name, {})
        info.update(
            status=BackendStatus.BROKEN.value,
            reason=f"kbtool failed while running this backend ({len(backend_results.results)} results kept): "
            f"{backend_results.error}",
        )
    elif info is None or (cancel.is_set() and info.get("reason") == "cancelled"):
        info = backend_info(backend_results.name, {})
        if cancel.is_set():
            info["reason"] = f"interrupted ({cancel.reason}) before its worker was ready"
    return info


def _by_settings(work: List[Tuple[Entry, Case]]) -> List[Tuple[Dict[str, Any], List[Tuple[Entry, Case]]]]:
    """Work grouped by keras.json settings, the default settings first, then in order of first appearance."""
    from kbtool.specs.domains import CONFIG_DEFAULTS

    groups: Dict[Tuple[Tuple[str, Any], ...], List[Tuple[Entry, Case]]] = {}
    for entry, case in work:
        key = tuple(sorted(case.keras_config.items()))
        groups.setdefault(key, []).append((entry, case))
    default = tuple(sorted(CONFIG_DEFAULTS.items()))
    order = sorted(groups, key=lambda key: key != default)  # stable: the others keep their order
    return [(dict(key), groups[key]) for key in order]
