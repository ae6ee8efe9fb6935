# py36-compatible
"""Timing inside the worker: `kbtool bench`'s measurements, with no inter-process traffic in the timed region.

A bench request is a run request (invoke.py's format) with cmd "bench" and the timing settings:

    {"cmd": "bench", "op": ..., "mode": ..., "args": [...], "kwargs": {...},
     "budget": 0.2, "min_sample": 0.01, "min_samples": 5, "max_seconds": 20, "warmup": 0.05}

The inputs are built on the backend first (eager: K.variable; symbolic: K.placeholder, fed NumPy arrays as
K.function is by Keras's fit), then each call is forced: eager `K.eval` of the op's result, symbolic the compiled
K.function's call. The reply separates what is paid once (building the inputs and graph, compiling K.function,
the first call) from the steady-state call: `loops` calls per sample, calibrated so a sample lasts at least
`min_sample` seconds (1, 2, 5, 10, 20, ... as timeit's autorange), a warmup, then samples until `budget`
seconds and `min_samples` samples (or `max_seconds`). Samples are seconds per call; the garbage collector is
off within a sample (as in timeit). Nothing is subtracted: an "overhead" request measures the harness itself.

Device synchronisation (the `kbtool_sync` hook): an engine that computes asynchronously (JAX dispatches and returns,
CUDA queues kernels) would otherwise be timed at dispatch. A backend module that defines a callable
`kbtool_sync(value)` has it called on every timed call's result, inside the timed region (the first call, the
calibration, the warmup and every sample): it must return only once `value` is computed (e.g. JAX's
`block_until_ready`, `torch.cuda.synchronize()`). A module without one is timed as its calls return.

The device's peak (a "peak" request, `kbtool bench --device gpu`): what the controller's kbtool/bench/peak.py
measures of this machine's CPU, measured here through the engine on its device, so that a row that ran on a GPU is
rated against that GPU:

    {"cmd": "peak", "matmul_n": 8192, "copy_mb": 512, "repeats": 5, "min_call": 0.01, "precision": "default",
     "matmul_n_from": 1024, "copy_mb_from": 64}

A float32 matmul of two n x n constants (K.dot) and a copy of a float32 array of MB megabytes (the module's
`kbtool_copy(x)` where it has one, else K.identity), each call synchronised inside its timed region
(`kbtool_sync`): `repeats` samples of the matmul, twice as many of the copy, each one call. The inputs are made on
the device and each call made once before its samples (the transfer, compilation and allocation stay outside them).
n doubles from `matmul_n_from` up to `matmul_n`, and MB from `copy_mb_from` up to `copy_mb`, until a call lasts
`min_call` seconds: a GPU gets the largest, a CPU no more than it needs (measured again, at the sizes it took). A module whose engine has a precision switch (`kbtool_precisions()`,
set by `kbtool_set_precision(name)`) has its matmul timed at each precision, the run's first, and the switch set back
to the run's. The reply holds the sizes and every sample (seconds per call); the controller makes the rates.
"""

import contextlib
import gc
import time

try:
    from . import invoke, protocol
except ImportError:  # run as a script inside a backend env
    import invoke
    import protocol

timer = time.perf_counter
MAX_SAMPLES = 1000
MAX_LOOPS = 10**7


def run_loops(call, loops):
    """Seconds for `loops` calls, the garbage collector off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        started = timer()
        for _ in range(loops):
            call()
        return timer() - started
    finally:
        if enabled:
            gc.enable()


def bare_loop(loops):
    """Seconds for `loops` iterations of an empty loop: what run_loops costs without any call."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        started = timer()
        for _ in range(loops):
            pass
        return timer() - started
    finally:
        if enabled:
            gc.enable()


def calibrate(call, min_sample):
    """(loops per sample, calls made meanwhile): the fewest of 1, 2, 5, 10, ... that last >= min_sample."""
    loops, made = 1, 0
    while True:
        for factor in (1, 2, 5):
            n = loops * factor
            seconds = run_loops(call, n)
            made += n
            if seconds >= min_sample or n >= MAX_LOOPS:
                return n, made
        loops *= 10


def measure(call, budget=0.2, min_sample=0.01, min_samples=5, max_seconds=20.0, warmup=0.05):
    """Calibrate, warm up, sample. Returns {"loops", "warmup_calls", "samples"} (samples: seconds per call).

    A call that alone fills a sample (and the warmup) needs neither: its calibration run, made after the first
    call, is its first sample, so an op of a minute costs two calls, not five."""
    started = timer()
    single = run_loops(call, 1)
    if single >= min_sample and single >= warmup:
        loops, warmup_calls, samples = 1, 0, [single]
    else:
        loops, warmup_calls = calibrate(call, min_sample)
        warmup_calls += 1
        samples = []
    while timer() - started < warmup and timer() - started < max_seconds and not samples:
        run_loops(call, loops)
        warmup_calls += loops
    sampling = timer()
    while len(samples) < MAX_SAMPLES and not (samples and timer() - started >= max_seconds):
        samples.append(run_loops(call, loops) / loops)
        spent = timer() - sampling
        if (spent >= budget and len(samples) >= min_samples) or timer() - started >= max_seconds:
            break
    return {"loops": loops, "warmup_calls": warmup_calls, "samples": samples}


def _settings(request):
    return {key: float(request[key]) for key in ("budget", "min_sample", "max_seconds", "warmup") if key in request}


def forced_call(K, fn, args, kwargs, builder):
    """A call of fn whose tensor results are evaluated (eager), as a caller reading the result would."""

    def call():
        leaves, _ = invoke.flatten_result(fn(*args, **kwargs))
        return invoke.evaluate_leaves(K, leaves, builder, "eager")

    return call


def synced(K, call):
    """`call`, followed inside the same timed call by the module's `kbtool_sync(result)` where it has one."""
    sync = getattr(K, "kbtool_sync", None)
    if not callable(sync):
        return call

    def synced_call():
        value = call()
        sync(value)
        return value

    return synced_call


def overhead(K, request):
    """The harness's own cost per call: a no-op through forced_call and run_loops, and a bare loop."""
    builder = invoke.Builder(K, [], "eager")
    noop = forced_call(K, lambda: None, [], {}, builder)
    settings = _settings(request)
    timed = measure(noop, min_samples=int(request.get("min_samples", 5)), **settings)
    loops = timed["loops"]
    bare = sorted(bare_loop(loops) / loops for _ in range(max(5, len(timed["samples"]) // 4)))
    noop_s = sorted(timed["samples"])[len(timed["samples"]) // 2]
    bare_s = bare[len(bare) // 2]
    return {"status": protocol.OK, "noop_call_s": noop_s, "bare_loop_s": bare_s, "harness_s": noop_s - bare_s}


def bench(K, request, arrays, modules, symbolic_context=None):
    """Time one case in one mode (see the module docstring); returns the reply header."""
    mode = request.get("mode", "eager")
    try:
        fn, _ = invoke.resolve_op(modules, request["op"])
    except invoke.Unsupported as exc:
        return {"status": protocol.UNSUPPORTED, "message": str(exc)}
    context = symbolic_context() if (mode == "symbolic" and symbolic_context) else contextlib.ExitStack()
    try:
        with context:
            call, one_time = _prepare(K, fn, request, arrays, mode)
            call = synced(K, call)
            started = timer()
            values = call()
            one_time["first_call_s"] = timer() - started
            one_time["total_s"] = sum(v for v in one_time.values() if v is not None)
            outputs = [] if request.get("then_only") else _describe(values)  # (a result with no value)
            limit = float(request.get("max_seconds", 20.0))
            if one_time["first_call_s"] >= limit:  # no time left for a steady state: said, not hidden
                timed = {
                    "loops": 1,
                    "warmup_calls": 0,
                    "samples": [one_time["first_call_s"]],
                    "message": "the first call took {:.1f} s, past the {:g} s limit: it is the only sample "
                    "(one-time costs included)".format(one_time["first_call_s"], limit),
                }
            else:
                timed = measure(call, min_samples=int(request.get("min_samples", 5)), **_settings(request))
                if not request.get("then_only"):
                    timed.update(_varies(call, outputs))
    except Exception as exc:  # the backend's own error is the finding
        return {"status": protocol.RAISED, "error": invoke.describe_exception(exc)}
    reply = {"status": protocol.OK, "outputs": outputs, "one_time": one_time}
    reply.update(timed)
    return reply


def _varies(call, outputs):
    """One more call, untimed: whether the samples timed the same work (the output's shapes and dtypes) as the
    first call; {} when they did, else output_varies and the message saying how."""
    try:
        later = _describe(call())
    except Exception as exc:
        later = "an error ({})".format(invoke.describe_exception(exc).get("type"))
    if later == outputs:
        return {}
    return {
        "output_varies": True,
        "message": "output shape varies between calls: {} at the first call, {} after the samples; the samples "
        "may time different work".format(_shapes(outputs), later if isinstance(later, str) else _shapes(later)),
    }


def _shapes(outputs):
    return ", ".join("{} {}".format(tuple(o["shape"]), o["dtype"]) for o in outputs) or "no array"


def _prepare(K, fn, request, arrays, mode):
    """(the steady-state call, {build_s, compile_s}) with the inputs built on the backend.

    An update op (request "observe") works on variables in both modes; its symbolic form runs as Keras applies
    updates, K.function([], [...], updates=[op]). An op whose own result has no value ("then_only", e.g.
    K.placeholder) is timed as the call alone."""
    started = timer()
    observe = bool(request.get("observe"))
    builder = invoke.Builder(K, arrays, mode, variables_only=observe)
    args = [builder.build(a) for a in request.get("args", [])]
    kwargs = {k: builder.build(v) for k, v in request.get("kwargs", {}).items()}
    if request.get("then_only"):
        return (lambda: fn(*args, **kwargs)), {"build_s": timer() - started, "compile_s": None}
    if mode == "eager":
        return forced_call(K, fn, args, kwargs, builder), {"build_s": timer() - started, "compile_s": None}
    result = fn(*args, **kwargs)
    if observe:
        build_s = timer() - started
        started = timer()
        # a dummy output: some backends refuse a function with no outputs (as invoke.evaluate does)
        function = K.function([], [K.sum(K.constant(0.0))], updates=[result])
        return (lambda: function([])), {"build_s": build_s, "compile_s": timer() - started}
    leaves, _ = invoke.flatten_result(result)
    tensors = [leaf for leaf in leaves if invoke.is_tensor_leaf(leaf)]
    build_s = timer() - started
    if not tensors:  # nothing to compile (a Python value): the call itself is what is timed
        return forced_call(K, fn, args, kwargs, builder), {"build_s": build_s, "compile_s": None}
    started = timer()
    function = K.function(builder.placeholders, tensors)
    compile_s = timer() - started
    feeds = builder.feeds
    return (lambda: function(feeds)), {"build_s": build_s, "compile_s": compile_s}


def _describe(values):
    import numpy as np

    outputs = []
    for value in values if isinstance(values, (list, tuple)) else [values]:
        if invoke.is_python_value(value):
            continue
        array = np.asarray(value.toarray() if hasattr(value, "toarray") else value)
        if array.dtype == object:
            continue
        outputs.append({"shape": [int(d) for d in array.shape], "dtype": str(array.dtype)})
    return outputs


def device_peak(K, request):
    """The peak of the device K computes on (see the module docstring): the reply header, every sample kept."""
    largest_n, first_n = int(request.get("matmul_n", 2048)), int(request.get("matmul_n_from", 1024))
    largest_mb, first_mb = int(request.get("copy_mb", 64)), int(request.get("copy_mb_from", 64))
    repeats = max(1, int(request.get("repeats", 5)))
    min_call = float(request.get("min_call", 0.01))
    run = str(request.get("precision", "default"))
    switch = getattr(K, "kbtool_set_precision", None)
    listed = getattr(K, "kbtool_precisions", None)
    precisions = list(listed()) if callable(listed) and callable(switch) else []
    matmul, n, call = {}, None, None
    try:
        try:
            for precision in [run] + [p for p in precisions if p != run]:
                if precisions:
                    switch(precision)
                if n is None:  # sized at the run's precision, then the same n at the others
                    n, call = _sized(lambda size: _matmul(K, size), doublings(first_n, largest_n), min_call)
                else:  # compiled again at this precision
                    call = _matmul(K, n)
                    call()
                matmul[precision] = [run_loops(call, 1) for _ in range(repeats)]
        finally:
            call = None  # the matmul's inputs freed before the copy's are made
            if precisions:
                switch(run)
        copy_mb, call = _sized(lambda size: _copy(K, size), doublings(first_mb, largest_mb), min_call)
        copies = [run_loops(call, 1) for _ in range(2 * repeats)]
    except Exception as exc:  # the engine's own error (out of memory, ...) is the answer: no peak
        return {"status": protocol.RAISED, "error": invoke.describe_exception(exc)}
    device = getattr(K, "kbtool_device", None)
    reply = {
        "status": protocol.OK,
        "device_name": device() if callable(device) else None,
        "precision": run,
        "matmul_n": n,
        "matmul_samples_s": matmul[run],
        "copy_mb": copy_mb,
        "copy_samples_s": copies,
    }
    if precisions:
        reply["matmul_precisions"] = matmul
    return reply


def doublings(start, largest):
    """start, 2 start, 4 start, ... up to largest (largest last; largest alone when it is below start)."""
    sizes = [min(start, largest)]
    while sizes[-1] < largest:
        sizes.append(min(2 * sizes[-1], largest))
    return sizes


def _sized(make, sizes, min_call):
    """(size, its call) for the first of `sizes` whose call lasts at least `min_call` seconds, else the last: a
    device's peak needs work enough to keep it busy, and a slow device (a CPU) no more than that. Each size's call
    is made once untimed first (compilation, allocation)."""
    for i, size in enumerate(sizes):
        call = make(size)
        call()
        if i == len(sizes) - 1 or run_loops(call, 1) >= min_call:
            return size, call
    raise ValueError("no size to measure")


def _matmul(K, n):
    """A synced K.dot of two n x n float32 constants made on the device (the transfer done here, untimed)."""
    import numpy as np

    rng = np.random.RandomState(0)  # (RandomState: a Python 3.6 env's NumPy may predate default_rng)
    builder = invoke.Builder(K, [rng.standard_normal((n, n)).astype("float32") for _ in range(2)], "eager")
    a, b = builder.build({"constant": 0}), builder.build({"constant": 1})
    return synced(K, lambda: K.dot(a, b))


def _copy(K, mb):
    """A synced copy of a float32 constant of `mb` MB on the device: the module's kbtool_copy, else K.identity (a
    copy on Keras 2's backends and the NumPy reference)."""
    import numpy as np

    source = invoke.Builder(K, [np.ones(mb * 2**20 // 4, dtype="float32")], "eager").build({"constant": 0})
    copy = getattr(K, "kbtool_copy", None) or K.identity
    return synced(K, lambda: copy(source))
