"""`kbtool bench`, stage by stage: families → peak → each backend's worker, one at a time → the JSON report.

Backends run one after another, one worker at a time, so that no measurement shares the cores with another
(check runs them side by side; bench never does); two releases of one backend (`--versions`) are timed in turns. Each backend's worker first measures the harness's own
per-call cost (and, on a device other than the CPU, that device's peak: peak.py), then times every op × size in each
mode it runs (kbtool/worker/timing.py), then measures its device's peak again."""

import contextlib
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from kbtool.bench import families as fam
from kbtool.errors import KbtoolError
from kbtool.vocabulary import MODES

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.runners.session import BackendSession, Cancel

Record = Dict[str, Any]  # a result or a backend's info, as JSON data
Progress = Callable[[str, Record], None]  # (backend, result) as each result is known


@dataclass
class Settings:
    sizes: List[str] = field(default_factory=lambda: [fam.DEFAULT_SIZE])
    modes: List[str] = field(default_factory=lambda: list(MODES))
    budget: float = 0.1  # seconds of samples per result
    min_sample: float = 0.01  # a sample lasts at least this long (calls per sample calibrated to it)
    min_samples: int = 5
    max_seconds: float = 5.0  # a result's time limit, warmup and samples together
    warmup: float = 0.02
    seed: int = 0
    device: str = "cpu"  # --device (runners.base.on_device)
    precision: str = "default"  # --precision

    def request_fields(self) -> Dict[str, Any]:
        return {
            "budget": self.budget,
            "min_sample": self.min_sample,
            "min_samples": self.min_samples,
            "max_seconds": self.max_seconds,
            "warmup": self.warmup,
        }

    def as_dict(self, ops: Iterable[str]) -> Dict[str, Any]:
        from kbtool.bench.stats import UNSTABLE_CV

        return {
            "sizes": list(self.sizes),
            "modes": list(self.modes),
            "budget_seconds": self.budget,
            "min_sample_seconds": self.min_sample,
            "min_samples": self.min_samples,
            "max_seconds": self.max_seconds,
            "unstable_cv": UNSTABLE_CV,
            "seed": self.seed,
            "ops": list(ops),
            # said only when not the default, so a CPU bench's JSON is as it always was
            **({"device": self.device} if self.device != "cpu" else {}),
            **({"precision": self.precision} if self.precision != "default" else {}),
        }


@dataclass
class Item:
    family: fam.Family
    size: str
    case: Any  # specs.cases.Case
    n: float


def plan_items(
    spec: Any, ops: Sequence[str], sizes: Iterable[str], seed: int = 0
) -> Tuple[List[Item], Dict[str, Record], Dict[str, str]]:
    """(items, families' descriptions, skipped {op: why}) for the ops (default: every benchable op)."""
    benchable = fam.benchable_ops(spec)
    for op in ops:
        if op not in spec.ops:
            raise KbtoolError(f"unknown op {op!r}: `kbtool spec list` lists the spec's ops")
        if op not in benchable:
            target = spec.ops[op].get("alias_of")
            raise KbtoolError(
                "{} cannot be benched: {}".format(
                    op,
                    f"it is an alias of {target} (bench that)"
                    if target
                    else spec.ops[op].get("not_checkable") or "it has no case",
                )
            )
    items: List[Item] = []
    described: Dict[str, Record] = {}
    skipped: Dict[str, str] = {}
    for op in list(dict.fromkeys(ops)) or benchable:
        try:
            family = fam.family_for(spec, op)
        except fam.FamilyError as exc:
            if ops:
                raise KbtoolError(str(exc))
            skipped[op] = str(exc)
            continue
        ns: Dict[str, float] = {}
        for size in sizes:
            case, n = fam.bench_case(spec, family, size, seed)
            items.append(Item(family, size, case, n))
            ns[size] = n
        described[op] = family.describe(ns)
    return items, described, skipped


class Timed:
    """One backend's worker for a bench, as a context: on entry it is started and its info and the harness's own
    per-call cost recorded (`ready` says whether it runs), and its device's peak on a device other than the CPU;
    then `measure` times one item in one mode, and `device_peak` measures the device's peak again. Its info goes to
    `infos` and each result to `results` as soon as known (an interrupted bench keeps what it measured). `cancel` (a
    session.Cancel, set by a signal) kills the worker at once."""

    def __init__(
        self,
        planned_backend: Any,
        settings: Settings,
        infos: List[Record],
        results: List[Record],
        progress: Optional[Progress] = None,
        cancel: Optional["Cancel"] = None,
    ) -> None:
        self.planned_backend, self.settings, self.infos, self.results = planned_backend, settings, infos, results
        self.progress, self.cancel = progress, cancel
        self.ready = False
        self.info: Record = {}
        self._session: Optional[BackendSession] = None

    def __enter__(self) -> "Timed":
        from kbtool.runners.messages import Request
        from kbtool.runners.registry import backend_info
        from kbtool.runners.session import BackendSession, Cancel
        from kbtool.settings import RunSettings

        # a first call and a compile come on top of the samples; past this the op is reported as timed out
        timeout = max(60.0, 12 * self.settings.max_seconds)
        opened = self._session = BackendSession(
            self.planned_backend.name,
            self.planned_backend.launch,
            settings=RunSettings(case_timeout=timeout),
            cancel=self.cancel or Cancel(),
        )
        session = opened.__enter__()
        try:
            worker = session.worker()
            info = self.info = backend_info(self.planned_backend.name, worker.hello)
            if self.planned_backend.launch.device:  # a backend with devices: the device it was timed on
                info["device"] = self.planned_backend.launch.device
            self.infos.append(info)
            self.ready = bool(worker.ready)
            if self.ready:
                overhead = session.request(Request("overhead", self.settings.request_fields()))
                if overhead.ok:
                    info["overhead"] = {k: overhead.header[k] for k in ("noop_call_s", "bare_loop_s", "harness_s")}
                self.device_peak()
        except BaseException:  # a signal or a failure while it starts: its worker is stopped all the same
            opened.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self._open().__exit__(*exc)

    def _open(self) -> "BackendSession":
        """The worker's session (entered: `with Timed(...)` first)."""
        if self._session is None:
            raise RuntimeError("a Timed measures inside its `with` only")
        return self._session

    def device_peak(self) -> None:
        """The peak of the device the worker computes on, into its info's `peak` (combined with the one measured
        before: the best of each, every sample kept), or why not into `peak_error`; nothing on the CPU (its rows are
        rated against this machine's peak), once the bench is cancelled, or after a measurement that failed."""
        from kbtool.bench import peak
        from kbtool.runners import messages as protocol
        from kbtool.runners.messages import Request

        device = self.planned_backend.launch.device
        session = self._open()
        if not (self.ready and peak.wants_device_peak(device)) or session.cancel.is_set() or "peak_error" in self.info:
            return  # (a device whose first measurement failed is not tried again)
        reply = session.request(Request("peak", peak.device_request(self.settings.precision, self.info.get("peak"))))
        if reply.cancelled:
            return
        if reply.header.get("status") != protocol.OK:
            error = reply.header.get("error") or {}
            why = "{}: {}".format(error.get("type"), error.get("message", "")) if error else reply.header.get("message")
            self.info.setdefault("peak_error", "{} ({})".format(reply.header.get("status"), why or "no message")[:500])
            return
        measured = peak.from_reply(reply.header, str(device))
        self.info["peak"] = peak.combine(self.info["peak"], measured) if self.info.get("peak") else measured

    def modes(self, item: Item) -> List[str]:
        """The modes in which both the item and the backend run (in the item's order)."""
        allowed = set(self.planned_backend.launch.modes)
        return [mode for mode in item.case.modes if mode in self.settings.modes and mode in allowed]

    def measure(self, item: Item, mode: str) -> bool:
        """Time `item` in `mode`: False when the bench was cancelled (nothing more is measured)."""
        from kbtool.runners.messages import Request

        session = self._open()
        if session.cancel.is_set():
            return False
        request = Request.from_header(item.case.request(mode), item.case.arrays)
        fields = dict(request.fields, **self.settings.request_fields())
        fields.pop("repeat", None)  # a seeded op's second draw is check's concern, not bench's
        started = time.monotonic()
        reply = session.request(Request("bench", fields, request.arrays))
        if reply.cancelled:
            return False
        result = result_of(self.planned_backend.name, item, mode, reply.header)
        if self.planned_backend.launch.device:  # where it ran (a backend with devices): which peak rates it
            result["device"] = self.planned_backend.launch.device
        result["wall_s"] = round(time.monotonic() - started, 4)  # what this result cost the bench
        self.results.append(result)
        if self.progress:
            self.progress(self.planned_backend.name, result)
        return True


def measure_backend(
    planned_backend: Any,
    items: Iterable[Item],
    settings: Settings,
    infos: List[Record],
    results: List[Record],
    progress: Optional[Progress] = None,
    cancel: Optional["Cancel"] = None,
) -> None:
    """One backend: its worker started once, the harness overhead (and its device's peak), then every item in each
    mode both the item and the backend run, then its device's peak again."""
    with Timed(planned_backend, settings, infos, results, progress, cancel) as timed:
        if not timed.ready:
            return
        for item in items:
            for mode in timed.modes(item):
                if not timed.measure(item, mode):
                    return
        timed.device_peak()


def measure_in_turns(
    planned_backends: Sequence[Any],
    items: Iterable[Item],
    settings: Settings,
    infos: List[Record],
    results: List[Record],
    progress: Optional[Progress] = None,
    cancel: Optional["Cancel"] = None,
) -> None:
    """Two releases of one backend (`bench --versions`), timed in turns: both workers started first, then each
    result on one and right after on the other, which goes first alternating from one result to the next (ABBA), so
    a machine that drifts (its clock, its load) drifts under both alike. Only one worker runs at a time; the other
    waits on its pipe."""
    with contextlib.ExitStack() as stack:
        timed = [
            stack.enter_context(Timed(planned_backend, settings, infos, results, progress, cancel))
            for planned_backend in planned_backends
        ]
        ready = [t for t in timed if t.ready]
        turn = 0
        for item in items:
            for mode in item.case.modes:
                takers = [t for t in ready if mode in t.modes(item)]
                if not takers:
                    continue
                for t in takers if turn % 2 == 0 else reversed(takers):
                    if not t.measure(item, mode):
                        return
                turn += 1
        for t in ready:
            t.device_peak()


def result_of(backend: str, item: Item, mode: str, header: Dict[str, Any]) -> Dict[str, Any]:
    """One result for the report from the worker's reply (timing fields summarized later)."""
    result: Dict[str, Any] = {
        "op": item.family.op,
        "size": item.size,
        "n": item.n,
        "backend": backend,
        "mode": mode,
        "inputs": [{"shape": [int(d) for d in a.shape], "dtype": str(a.dtype)} for a in item.case.arrays],
        "kwargs": _jsonable(item.case.kwargs),
    }
    from kbtool.runners import messages as protocol

    status = header.get("status")
    if status == protocol.OK:
        result.update(
            status="ok",
            message=header.get("message"),
            outputs=header.get("outputs", []),
            one_time=header["one_time"],
            loops=header["loops"],
            warmup_calls=header["warmup_calls"],
            samples_s=header["samples"],
        )
        if header.get("output_varies"):  # the worker saw another output shape after the samples: flagged
            result["output_varies"] = True
    elif status == protocol.RAISED:
        error = header.get("error", {})
        result.update(status="raised", message="{}: {}".format(error.get("type"), error.get("message", ""))[:500])
    elif status in (protocol.UNSUPPORTED, protocol.CRASH, protocol.TIMEOUT):
        result.update(status=status, message=str(header.get("message", ""))[:500])
    else:
        result.update(status="error", message="worker reply {}: {}".format(status, header.get("message", ""))[:500])
    return result


def _jsonable(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The case's kwargs as the report shows them: the literal values (tensor arguments by their index)."""
    out: Dict[str, Any] = {}
    for key, arg in kwargs.items():
        if isinstance(arg, dict) and "value" in arg:
            out[key] = arg["value"]
        elif isinstance(arg, dict) and "tuple" in arg:
            out[key] = list(arg["tuple"])
    return out


def finish(
    results: List[Record],
    families: Dict[Tuple[str, str], Tuple["fam.Family", Any]],
    peak: Optional[Dict[str, Any]],
    unstable_cv: Optional[float] = None,
    device_peaks: Optional[Dict[str, Dict[str, Any]]] = None,
) -> List[Record]:
    """Summaries, costs, rates and ratios of every ok result (in place); returns the scaling rows. `peak` is None
    when a signal stopped the bench before the peak was measured (and so before any result). A result that ran on
    a device other than the CPU is rated against its backend's device peak (`device_peaks`, by backend: none when
    it could not be measured), every other against this machine's `peak`; `peak_source` says which."""
    from kbtool.bench import cost, stats
    from kbtool.bench import peak as peaks

    for r in results:
        if r["status"] != "ok":
            continue
        r.update(stats.summarize(r["samples_s"], **({"unstable_cv": unstable_cv} if unstable_cv else {})))
        family, case = families[(r["op"], r["size"])]
        try:
            r["flops"] = cost.flops(family, case, r["outputs"])
            r["bytes"] = cost.bytes_moved(family, case, r["outputs"])
        except Exception as exc:  # a cost model that does not fit the output: said, never guessed
            r["flops"] = r["bytes"] = None
            r["message"] = f"cost model: {exc}"
        on_device = peaks.wants_device_peak(r.get("device"))
        against = (device_peaks or {}).get(r["backend"]) if on_device else peak
        r.update(cost.rates(r["flops"], r["bytes"], r["median_s"], against or {}))
        if r["peak_fraction"] is not None:
            r["peak_source"] = "device" if on_device else "machine"
    stats.add_ratios(results)
    return stats.scaling(results)


def machine() -> Dict[str, Any]:
    import os
    import platform

    import numpy as np

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            names = [line.split(":", 1)[1].strip() for line in fh if line.startswith("model name")]
        cpu = names[0] if names else cpu
    except OSError:
        pass
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        memory = 0.0
    from kbtool.runners.pool import default_jobs

    found: Dict[str, Any] = {
        "platform": platform.platform(),
        "cpu": cpu,
        "cores": default_jobs(),
        "memory_gb": round(memory, 1),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    blas = _blas()
    if blas:
        found["blas"] = blas
    return found


def _blas() -> Optional[str]:
    try:
        import numpy as np

        info = np.show_config(mode="dicts")
        blas = info.get("Build Dependencies", {}).get("blas", {})
        return "{} {}".format(blas.get("name", ""), blas.get("version", "")).strip() or None
    except Exception:
        return None


def planned_backends(names: Sequence[str], device: str = "cpu", precision: str = "default") -> List[Any]:
    from kbtool.errors import KbtoolError
    from kbtool.plan import resolve_backends
    from kbtool.runners import registry

    oracles = [name for name in names if name in registry.ORACLES]
    if oracles:
        raise KbtoolError(
            f"{oracles[0]} is a test oracle (Keras 2.3.1's own numpy_backend.py), not an engine: kbtool bench does not time "
            "it"
        )
    engines = [name for name in registry.BUILTIN if name not in registry.ORACLES]
    # one worker at a time (the bench never runs two together): on a GPU it gets the whole share of the memory.
    # No names: every engine, those not installed listed with the reason (as check does; NumPy's is always here)
    return resolve_backends(list(names), registry.launch_for, engines, device, precision, jobs=1)


def skipped_note(skipped: Dict[str, str]) -> Optional[str]:
    if not skipped:
        return None
    return "not benched: " + "; ".join(skipped[op] for op in sorted(skipped))
