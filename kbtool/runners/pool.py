"""One shared pool of (backend, case) work: `jobs` worker slots serve every backend's cases, so every core stays busy.

Each backend's planned work is split into lanes, one per set of keras.json settings (a worker runs under one set).
A free slot takes the lane with the most estimated work left per worker on it: an unstarted lane first, longest
first; when every lane has a worker, it joins the lane whose remaining work, shared with one more worker, still
outweighs starting a worker (a backend's long tail, such as Theano's, is then worked from both ends by two workers).
A slot serves its lane until the lane is empty, then picks again. At most `jobs` workers are alive at once, which
bounds memory; a backend may cap its own workers (Launch.workers). On a GPU (--device gpu) the workers of every
backend share the device: a backend gets up to --jobs workers there (without --jobs, DEFAULT_GPU_WORKERS; set by
runners.base.on_device), and each worker a share of the device's memory, with no preallocation
(runners.base.share_memory), so no worker keeps another from opening the device.

The estimate of a lane is (cases left) x (that backend's seconds per case): measured as its cases finish, before
that the recipe's `case_seconds` hint. Scheduling changes who runs a case and when, never what is run or judged:
results are sorted by the caller, so the report does not depend on it.
"""

from __future__ import annotations

import collections
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Deque, Dict, List, Optional, Set, Tuple

if TYPE_CHECKING:
    from kbtool.runners.client import WorkerClient
    from kbtool.specs.cases import Case

Item = Tuple[Dict[str, Any], "Case"]  # (spec entry, case): one piece of a lane's work
Pick = Tuple["Lane", int, bool]  # (lane, worker index, from the end)

DEFAULT_CASE_SECONDS = 0.05  # a backend's seconds per case before any of its cases has finished
DEFAULT_START_SECONDS = 5.0  # a worker's start-up before one of the backend's workers has said how long it took
RATE_AFTER = 5  # cases a backend finishes before its measured rate replaces its hint


def default_jobs() -> int:
    """Worker slots when --jobs is not given: one per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass
class Lane:
    """The cases of one backend under one set of keras.json settings, taken by the workers that serve it."""

    backend: str
    settings: Dict[str, Any]
    items: Deque[Item] = field(default_factory=collections.deque)
    active: int = 0  # workers serving it now

    def take(self, from_end: bool) -> Optional[Item]:
        """The next (entry, case), from the front or the back (a second worker starts at the back, so each worker
        keeps meeting the same cases run after run: Theano's per-worker compile caches stay warm)."""
        if not self.items:
            return None
        return self.items.pop() if from_end else self.items.popleft()


@dataclass
class BackendLoad:
    """What the pool knows of one backend: its lanes, its workers, how fast its cases go."""

    name: str
    cap: Optional[int] = None  # at most this many workers at once (None: as many as there are slots)
    case_seconds: float = DEFAULT_CASE_SECONDS
    start_seconds: float = DEFAULT_START_SECONDS
    done: int = 0
    busy_seconds: float = 0.0
    workers: int = 0  # alive now
    most_workers: int = 0
    indices: Set[int] = field(default_factory=set)  # worker indices in use (a worker's index picks its environment)
    stopped: bool = False  # could not start or failed: its remaining cases are dropped

    def rate(self) -> float:
        return self.busy_seconds / self.done if self.done >= RATE_AFTER else self.case_seconds


class Pool:
    """The scheduler's state, shared by the slot threads under one lock."""

    def __init__(
        self, lanes: List[Lane], loads: Dict[str, BackendLoad], min_join_seconds: Optional[float] = None
    ) -> None:
        self.lanes = lanes
        self.loads = loads
        self.lock = threading.Lock()
        # joining a lane pays off when the work a newcomer would take exceeds its start-up (None: the backend's)
        self.min_join_seconds = min_join_seconds

    def estimate(self, lane: Lane) -> float:
        return len(lane.items) * self.loads[lane.backend].rate()

    def pick(self) -> Optional[Pick]:
        """(lane, worker index, from_end) for a free slot, or None when nothing is left worth a worker."""
        with self.lock:
            best: Optional[Lane] = None
            best_score: Optional[Tuple[int, float, int]] = None
            for order, lane in enumerate(self.lanes):
                load = self.loads[lane.backend]
                if not lane.items or load.stopped or (load.cap is not None and load.workers >= load.cap):
                    continue
                left = self.estimate(lane)
                if lane.active:
                    if len(lane.items) <= lane.active:  # a newcomer would find no case of its own
                        continue
                    share = left / (lane.active + 1)
                    threshold = load.start_seconds if self.min_join_seconds is None else self.min_join_seconds
                    if share <= threshold:
                        continue
                    score = (0, share, -order)  # an unstarted lane always goes first
                else:
                    score = (1, left, -order)
                if best_score is None or score > best_score:
                    best, best_score = lane, score
            if best is None:
                return None
            load = self.loads[best.backend]
            index = min(i for i in range(len(load.indices) + 1) if i not in load.indices)
            load.indices.add(index)
            load.workers += 1
            load.most_workers = max(load.most_workers, load.workers)
            best.active += 1
            return best, index, index % 2 == 1

    def has_work(self) -> bool:
        with self.lock:
            return any(lane.items for lane in self.lanes)

    def release(self, lane: Lane, index: int) -> None:
        with self.lock:
            load = self.loads[lane.backend]
            load.indices.discard(index)
            load.workers -= 1
            lane.active -= 1

    def idle(self, backend: str) -> bool:
        """True when none of the backend's lanes has a case left and none of its workers is alive (it is done)."""
        with self.lock:
            lanes = [lane for lane in self.lanes if lane.backend == backend]
            return not any(lane.items for lane in lanes) and self.loads[backend].workers == 0

    def take(self, lane: Lane, from_end: bool) -> Optional[Item]:
        with self.lock:
            return None if self.loads[lane.backend].stopped else lane.take(from_end)

    def finished(self, backend: str, seconds: float) -> None:
        with self.lock:
            load = self.loads[backend]
            load.done += 1
            load.busy_seconds += seconds

    def started(self, backend: str, seconds: Optional[float]) -> None:
        with self.lock:
            if seconds is not None:
                self.loads[backend].start_seconds = float(seconds)

    def stop(self, backend: str) -> None:
        """Drop a backend's remaining cases (its worker could not start, or kbtool failed while running it)."""
        with self.lock:
            self.loads[backend].stopped = True
            for lane in self.lanes:
                if lane.backend == backend:
                    lane.items.clear()


class MemoryWatch:
    """The peak resident memory of the workers alive together (sampled), and of the controller itself."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.clients: Set[WorkerClient] = set()  # runners.client.WorkerClient: its process changes when it restarts
        self.peak_workers_kb = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kbtool-memory", daemon=True)

    def __enter__(self) -> MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(1.0)

    def add(self, client: WorkerClient) -> None:
        with self._lock:
            self.clients.add(client)

    def remove(self, client: WorkerClient) -> None:
        self._sample()  # a worker that lived less than one interval is still counted
        with self._lock:
            self.clients.discard(client)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _sample(self) -> None:
        with self._lock:
            procs = [getattr(c, "proc", None) for c in self.clients]
        total = sum(rss_kb(p.pid) for p in procs if p is not None and p.poll() is None)
        self.peak_workers_kb = max(self.peak_workers_kb, total)

    def summary(self) -> Dict[str, float]:
        import resource

        controller_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux
        return {
            "peak_workers_rss_mb": round(self.peak_workers_kb / 1024.0, 1),
            "peak_controller_rss_mb": round(controller_kb / 1024.0, 1),
        }


def rss_kb(pid: int) -> int:
    """Resident memory of a process in kB (0 when it is gone or unreadable)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0
