"""Running `kbtool models`: which engines run (every installed Keras engine, the oracle, a custom module inside an
engine's env), one worker per engine through a BackendSession, `--jobs` engines at a time, each model one request
(wire.run_model); then the runs judged (compare.judge), each inconsistency localised (localise.localise, which
traces layers on live workers through `Tracers`), and the changes between releases of one engine (--versions).

Engines:
- numpy is THE ORACLE: Keras 2.3.1 with kbtool's NumPy reference as its backend module (oracles.reference_keras_launch);
  it always computes on the CPU, whatever --device says;
- keras-numpy cannot run models (Keras 2.3.1's numpy_backend.py has no placeholder or function: Keras refuses to
  load it as a backend): reported `unsupported` with that reason;
- `module@ENV` runs in ENV's engine with the module's functions substituted where its layers call them; on a Keras 3
  engine it is `unsupported` (Keras 3's layers call keras.ops, not a backend module), and a module without an env
  has no Keras to run on (kbtool's own Python);
- every other name is launched as check launches it (registry.launch_for, runners.base.on_device)."""

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from kbtool.errors import KbtoolError
from kbtool.models.records import EngineRun, Localisation, ModelResult, TracedCall
from kbtool.reports.report import one_line
from kbtool.runners import names as runner_names
from kbtool.runners.base import Launch, Unavailable
from kbtool.runners.session import BackendSession, Cancel
from kbtool.settings import RunSettings
from kbtool.vocabulary import DEFAULT_DEVICE, DEFAULT_PRECISION

ORACLE = "numpy"
KERAS_NUMPY = "keras-numpy"
KERAS_NUMPY_REASON = (
    "Keras 2.3.1's numpy_backend.py has no placeholder or function, and Keras refuses to load it as a backend: "
    "it cannot build or run a model (numpy, kbtool's reference as a Keras backend, is the oracle instead)"
)
KERAS3_CUSTOM_REASON = (
    "Keras 3's layers call keras.ops, not a backend module: a module's functions cannot be substituted in its models"
)
DEFAULT_TIMEOUT = 900.0  # seconds one model may take on an engine (Theano compiles an application for minutes)

Runs = Dict[str, Dict[str, EngineRun]]  # engine -> model -> its run
Tracer = Callable[[str, str, str, Sequence[Any]], List[TracedCall]]  # (engine, model, layer, inputs) -> its calls
Say = Callable[[str], None]


@dataclasses.dataclass
class Engine:
    """One engine of the run: a launch to run it, or why it does not run (its report status and reason)."""

    name: str
    launch: Optional[Launch] = None
    status: str = "available"  # "available" when it has a launch; else not installed/broken/device unsupported/...
    reason: str = ""
    oracle: bool = False


# ---------------------------------------------------------------------------------------------- which engines


def unsupported_reason(name: str) -> Optional[str]:
    """Why `name` cannot run Keras models at all (None: it can, as far as its name says)."""
    from kbtool.runners.registry import is_builtin

    if name == KERAS_NUMPY:
        return KERAS_NUMPY_REASON
    if is_builtin(name) or name == ORACLE:
        return None
    env = runner_names.split_custom(name).env
    if env.startswith("keras3") or env == KERAS_NUMPY:
        return KERAS3_CUSTOM_REASON if env.startswith("keras3") else KERAS_NUMPY_REASON
    return None


def oracle_engine(named: bool) -> Engine:
    """The oracle's engine: Keras 2.3.1 on kbtool's reference (part of the theano env), on the CPU."""
    try:
        from kbtool.runners.recipes.oracles import reference_keras_launch

        launch = reference_keras_launch()
    except (ImportError, AttributeError) as exc:  # a kbtool without the reference as a Keras backend
        reason = f"this kbtool cannot run the reference as a Keras backend ({one_line(exc)})"
        return Engine(ORACLE, status="unsupported", reason=reason, oracle=True)
    except Unavailable as exc:
        if named:
            raise KbtoolError(f"backend {ORACLE}: {exc}")
        return Engine(ORACLE, status="not installed", reason=str(exc), oracle=True)
    return Engine(ORACLE, launch=launch, oracle=True)


def with_compile_cache(launch: Any) -> Any:
    """JAX's persistent compilation cache for a models run on the CPU too (check keeps it to the GPU: there its many
    small computations lose more writing entries than they gain): a model's forward pass and training step are a
    few large computations, which a warm cache serves again (ResNet50 on keras3-jax: build, forward and training
    step 18.4, 7.1 and 21.9 s cold, 2.3, 1.7 and 5.3 s warm; an entry is keyed by its computation, jax version and
    device, so it returns what compiling would)."""
    from kbtool.runners.recipes.keras3 import jax_cache

    if not launch.backend.split("[")[0].split("@")[-1].startswith("keras3-jax"):
        return launch
    return dataclasses.replace(launch, env=dict(jax_cache(""), **launch.env))


def plan_engines(
    names: Sequence[str],
    device: str = DEFAULT_DEVICE,
    precision: str = DEFAULT_PRECISION,
    jobs: Optional[int] = None,
    not_run: Optional[Mapping[str, str]] = None,
) -> List[Engine]:
    """The engines of the run, in the order asked (default: every built-in backend, those not installed listed with
    why). A name that is not a backend, or a named engine that is not installed, is a KbtoolError (one line)."""
    from kbtool.plan import resolve_backends
    from kbtool.runners.registry import BUILTIN, is_builtin, launch_for

    asked = runner_names.canonical_names(names) if names else tuple(BUILTIN)
    for name in asked:
        if not is_builtin(name) and "@" not in name:  # a module on kbtool's own Python has no Keras to run models
            raise KbtoolError(
                f"unknown backend {name!r}: kbtool models runs the engines {', '.join(BUILTIN)}, "
                "or a custom module inside one's env as module@ENV (e.g. my_backend@tensorflow)"
            )
    engines: Dict[str, Engine] = {}
    regular: List[str] = []
    for name in asked:
        why = unsupported_reason(name)
        if why is not None:
            engines[name] = Engine(name, status="unsupported", reason=why)
        elif name == ORACLE:
            engines[name] = oracle_engine(bool(names))
        else:
            regular.append(name)
    if regular:
        planned = resolve_backends(regular if names else (), launch_for, regular, device, precision, not_run, jobs)
        for p in planned:
            launch = with_compile_cache(p.launch) if p.launch else None
            engines[p.name] = Engine(p.name, launch, "available" if p.launch else p.status, p.unavailable or "")
    return [engines[name] for name in asked if name in engines]


# ---------------------------------------------------------------------------------------------- running


@dataclasses.dataclass
class EngineOutcome:
    """What one engine's worker did: its runs and its line in the report."""

    runs: Dict[str, EngineRun]
    info: Dict[str, Any]


def _session(engine: Engine, seed: int, timeout: float, cancel: Cancel) -> BackendSession:
    assert engine.launch is not None
    return BackendSession(
        engine.name, engine.launch, settings=RunSettings(seed=seed, case_timeout=timeout), cancel=cancel
    )


def run_engine(
    engine: Engine,
    models: Sequence[str],
    seed: int,
    train: bool,
    timeout: float,
    cancel: Cancel,
    progress: Any = None,
) -> EngineOutcome:
    """Every model on one engine's worker, one request each; a model that raises, crashes or hangs costs only
    itself (the client restarts the worker)."""
    from kbtool.models import wire
    from kbtool.reports.progress import FAILED, FINISHED, RUNNING, STARTING

    started = time.monotonic()
    info: Dict[str, Any] = {"name": engine.name, "status": "available", "oracle": engine.oracle}
    runs: Dict[str, EngineRun] = {}
    tell = progress.state if progress is not None else (lambda *a: None)
    with _session(engine, seed, timeout, cancel) as session:
        tell(engine.name, STARTING)
        worker = session.worker()
        if not worker.ready:
            tell(engine.name, FAILED)
            reason = one_line(f"the worker could not start: {worker.why_not_ready}")
            info.update(status="broken", reason=reason, seconds=round(time.monotonic() - started, 3))
            return EngineOutcome({m: EngineRun(engine.name, m, "could_not_start", reason) for m in models}, info)
        tell(engine.name, RUNNING)
        info.update(versions=worker.hello.get("versions") or {}, python=worker.hello.get("python"))
        if engine.launch is not None and engine.launch.device:
            info["device"] = engine.launch.device
        for model in models:
            if cancel.is_set():
                break
            if progress is not None:
                progress.model(engine.name, model)
            run = _one_model(worker.client, engine.name, model, seed, train, timeout, wire.run_model)
            runs[model] = run
            if progress is not None:
                progress(engine.name, run)
        tell(engine.name, FINISHED)
    info.update(
        seconds=round(time.monotonic() - started, 3),
        model_seconds=round(sum(r.seconds for r in runs.values()), 3),
        models=sum(1 for r in runs.values() if r.status == "ok"),
    )
    return EngineOutcome(runs, info)


def _one_model(
    client: Any, engine: str, model: str, seed: int, train: bool, timeout: float, run_model: Callable[..., EngineRun]
) -> EngineRun:
    began = time.monotonic()
    try:
        run = run_model(client, model, seed, train, timeout)
    except Exception as exc:  # the decoding of one model's answer failed: that model's error, not the run's
        run = EngineRun(engine, model, "error", one_line(f"{type(exc).__name__}: {exc}"))
    run.engine = engine  # the wire does not know kbtool's name for the engine
    if not run.seconds:
        run.seconds = round(time.monotonic() - began, 3)
    return run


# seconds each engine took over the whole zoo with its training steps, measured here (2 cores, two engines at a
# time, the compile caches warm): only the order engines start in comes from it
ZOO_SECONDS = {
    "plaidml": 337.0,
    "tensorflow1": 256.0,
    "mxnet": 242.0,
    "theano": 204.0,
    "keras3-jax": 200.0,
    "keras3-openvino": 300.0,
    "tensorflow": 55.0,
    "keras3": 41.0,
    "keras3-tensorflow": 41.0,
    "keras3-torch": 40.0,
    "keras3-numpy": 20.0,
    "cntk": 9.0,
}


def run_all(
    engines: Sequence[Engine],
    models: Sequence[str],
    seed: int,
    train: bool,
    timeout: float,
    jobs: int,
    cancel: Cancel,
    progress: Any = None,
) -> Tuple[Runs, List[Dict[str, Any]]]:
    """Every runnable engine, `jobs` at a time, the oracle first; (runs, the report's engine lines in plan order)."""
    runnable = [e for e in engines if e.launch is not None]
    # the oracle's worker starts first (every comparison needs it), then the longest engines, so that the short ones
    # fill the slots at the end instead of waiting on a long one started last
    runnable.sort(key=lambda e: (not e.oracle, -ZOO_SECONDS.get(e.name.split("[")[0].split("@")[-1], 60.0)))
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {e.name: pool.submit(run_engine, e, models, seed, train, timeout, cancel, progress) for e in runnable}
        outcomes = {name: future.result() for name, future in futures.items()}
    runs: Runs = {name: outcome.runs for name, outcome in outcomes.items()}
    infos = []
    for engine in engines:
        if engine.name in outcomes:
            infos.append(outcomes[engine.name].info)
        else:
            infos.append(
                {"name": engine.name, "status": engine.status, "reason": engine.reason, "oracle": engine.oracle}
            )
    return runs, infos


# ---------------------------------------------------------------------------------------------- localising


class Tracers:
    """Live workers to trace a layer's K.* calls on (localise.localise calls this as `trace(engine, model, layer,
    inputs)`): started when first asked, kept until `release`d (the oracle's until `close`)."""

    def __init__(self, engines: Sequence[Engine], seed: int, timeout: float, cancel: Cancel) -> None:
        self.engines = {e.name: e for e in engines if e.launch is not None}
        self.seed, self.timeout, self.cancel = seed, timeout, cancel
        self.sessions: Dict[str, BackendSession] = {}

    def __call__(self, engine: str, model: str, layer: str, inputs: Sequence[Any]) -> List[TracedCall]:
        from kbtool.models import wire

        if engine not in self.engines:
            raise KbtoolError(f"no worker to trace on: {engine} did not run")
        session = self.sessions.get(engine)
        if session is None:
            session = self.sessions[engine] = _session(self.engines[engine], self.seed, self.timeout, self.cancel)
        worker = session.worker()
        if not worker.ready:
            raise KbtoolError(f"{engine}'s worker could not start: {worker.why_not_ready}")
        return list(wire.trace_layer(worker.client, model, self.seed, layer, list(inputs), self.timeout))

    def release(self, engine: str) -> None:
        session = self.sessions.get(engine)
        if session is not None and not self.engines[engine].oracle:
            session.stop()
            del self.sessions[engine]

    def close(self) -> None:
        for session in self.sessions.values():
            session.stop()
        self.sessions.clear()


def judge(runs: Runs, models: Sequence[str]) -> List[ModelResult]:
    """Every engine's run of each model judged against the oracle compare.py chooses for it (the reference's run,
    else the majority's); the oracle's own run is not judged."""
    from kbtool.models import compare

    results: List[ModelResult] = []
    for model in models:
        of_model = {engine: by_model[model] for engine, by_model in runs.items() if model in by_model}
        if of_model:
            results += compare.compare_model(of_model, ORACLE)[1]
    return results


def localise_all(
    results: List[ModelResult],
    runs: Runs,
    trace: Tracer,
    cases: Optional[List[Any]] = None,
    say: Optional[Say] = None,
    cancel: Optional[Cancel] = None,
) -> None:
    """Each unexplained inconsistency whose divergent layer compare named, narrowed to the K.* call (the layer traced
    on its engine with the engine's own inputs to it, localise.localise replaying each call on the reference, then
    the cause at op level); a finding a known difference explains becomes `known`. With `cases` a list, the spec case
    of each unexplained call is appended to it (--emit-cases); without, no case id is claimed. A layer that cannot
    be traced says why in the localisation (the finding stays unexplained)."""
    from kbtool.models import localise
    from kbtool.specs import loader

    # a layer to trace (compare named it, no call yet: K.gradients, named by compare, has no layer call to trace)
    todo = [r for r in results if r.verdict == "unexplained" and r.localisation is not None and not r.localisation.call]
    raised = [r for r in results if r.verdict == "error" and r.localisation is not None and r.localisation.call]
    if not todo and not raised:
        return
    spec = loader.load()
    for result in raised:  # no layer to trace: the call that raised is replayed at op level
        if cancel is not None and cancel.is_set():
            return
        assert result.localisation is not None
        if say:
            say(f"kbtool: replaying {result.model} on {result.engine}: K.{result.localisation.call} raised")
        where, emitted = localise.localise_error(result, spec)
        _claim(result, where, emitted, cases)
    for engine in dict.fromkeys(r.engine for r in todo):
        for result in [r for r in todo if r.engine == engine]:
            if cancel is not None and cancel.is_set():
                return
            layer = result.localisation.layer if result.localisation else ""
            if say:
                say(f"kbtool: localising {result.model} on {engine}: layer {layer}")
            try:
                calls = trace(engine, result.model, layer, layer_inputs(runs[engine][result.model], layer))
                where, emitted = localise.localise(result, calls, spec)
            except Exception as exc:  # one finding that cannot be localised keeps the others'
                if result.localisation is not None:
                    why = one_line(f"could not trace the layer: {type(exc).__name__}: {exc}")
                    result.localisation = dataclasses.replace(result.localisation, why_not=why)
                continue
            _claim(result, where, emitted, cases)
        release = getattr(trace, "release", None)
        if release is not None:
            release(engine)


def _claim(result: ModelResult, where: Localisation, emitted: Optional[Any], cases: Optional[List[Any]]) -> None:
    """A localisation's outcome on its result: its case kept for --emit-cases (no case id claimed without a file),
    the result known when op level explains it."""
    if emitted is not None and cases is not None:
        cases.append(emitted)
    elif cases is None and where.case_id:
        where = dataclasses.replace(where, case_id=None)  # no file was asked: no case was written
    result.localisation = where
    if where.verdict == "known":
        result.verdict = "known"


def layer_inputs(run: EngineRun, layer: str) -> List[Any]:
    """The values `layer` took in the engine's own forward pass: its inbound layers' outputs, in inbound order."""
    outputs = {out.name: out for out in run.layers}
    if layer not in outputs:
        raise KbtoolError(f"{run.engine} has no layer {layer!r} in its run of {run.model}")
    return [array for name in outputs[layer].inbound for array in outputs[name].arrays]


# ---------------------------------------------------------------------------------------------- releases


def release_changes(runs: Runs, results: Sequence[ModelResult], engines: Sequence[str]) -> List[Dict[str, Any]]:
    """LEMON's finding: a model whose verdict or outputs change from one release of an engine to the next (releases
    in the order asked: --versions gives them in version order)."""
    verdicts = {(r.engine, r.model): r.verdict for r in results}
    by_base: Dict[str, List[str]] = {}
    for name in engines:
        if runner_names.is_release(name) and name in runs:
            by_base.setdefault(runner_names.base_of(name), []).append(name)
    changes: List[Dict[str, Any]] = []
    for base, releases in by_base.items():
        for old, new in zip(releases, releases[1:]):
            for model, before in runs[old].items():
                after = runs[new].get(model)
                if after is None:
                    continue
                what, biggest = [], None
                if verdicts.get((old, model)) != verdicts.get((new, model)):
                    what.append(f"verdict {verdicts.get((old, model))} -> {verdicts.get((new, model))}")
                if before.status == after.status == "ok" and len(before.outputs) == len(after.outputs):
                    biggest = _max_abs(before.outputs, after.outputs)
                    if biggest is None or biggest > 1e-5:
                        what.append("outputs differ" + (f" (max abs {biggest:.3g})" if biggest is not None else ""))
                elif before.status != after.status:
                    what.append(f"run {before.status} -> {after.status}")
                if what:
                    change: Dict[str, Any] = {
                        "model": model,
                        "base": base,
                        "from": old,
                        "to": new,
                        "what": "; ".join(what),
                    }
                    if biggest is not None:
                        change["max_abs"] = float(biggest)
                    changes.append(change)
    return changes


def _max_abs(one: Sequence[Any], other: Sequence[Any]) -> Optional[float]:
    """The largest absolute difference between two lists of outputs, equal values (infinities, NaN in the same
    place) counting 0 and a NaN against a number infinity (None: their shapes differ)."""
    import numpy as np

    biggest = 0.0
    for a, b in zip(one, other):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return None
        if a.size:
            with np.errstate(invalid="ignore"):
                diff = np.where((a == b) | (np.isnan(a) & np.isnan(b)), 0.0, np.abs(a - b))
            biggest = max(biggest, float(np.max(np.where(np.isnan(diff), np.inf, diff))))
    return biggest
