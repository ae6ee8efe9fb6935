# py36-compatible
"""Worker process: imports one backend module, then answers requests on stdin/stdout.

Started by the controller as `python main.py --module keras.backend ...` inside the backend's
environment. The protocol runs on a private copy of stdout; fd 1 itself is pointed at stderr
so that whatever the backend prints cannot corrupt the stream.
"""

import argparse
import importlib
import os
import sys
import time
import traceback

import inherit
import protocol
import shims
import watchdog


def parse_args(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--module", required=True, help="backend module, e.g. keras.backend")
    parser.add_argument("--fallback-module", action="append", default=[])
    parser.add_argument(
        "--base-backend", help="a custom module's base backend (`mod@tensorflow`): hello says what it inherits"
    )
    parser.add_argument("--base-module", action="append", default=[], help="the base backend's modules, in order")
    parser.add_argument("--shim", action="append", default=[])
    parser.add_argument("--version-of", action="append", default=[], help="distribution modules to report")
    parser.add_argument("--graph", choices=["none", "tensorflow"], default="none")
    parser.add_argument(
        "--clear-session",
        action="store_true",
        help="K.clear_session() before each request (a TF1 graph would otherwise grow with every case)",
    )
    parser.add_argument(
        "--apply-keras-json",
        action="store_true",
        help="set the module's floatx/epsilon/image_data_format from $KERAS_HOME/keras.json",
    )
    return parser.parse_args(argv)


CONFIG_KEYS = ("floatx", "epsilon", "image_data_format")


def keras_json():
    """The settings of $KERAS_HOME/keras.json (the controller writes one per set of settings), or {}."""
    import json

    path = os.path.join(os.environ.get("KERAS_HOME", ""), "keras.json")
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return {k: data[k] for k in CONFIG_KEYS if k in data} if isinstance(data, dict) else {}


def apply_settings(K, wanted):
    for key in CONFIG_KEYS:
        setter = getattr(K, "set_" + key, None)
        if key in wanted and callable(setter):
            setter(wanted[key])


def settings_in_effect(K):
    """What the backend module says its settings are, after import: did it honour keras.json?"""
    found = {}
    for key in CONFIG_KEYS:
        getter = getattr(K, key, None)
        try:
            found[key] = getter() if callable(getter) else None
        except Exception:
            found[key] = None
    if found.get("epsilon") is not None:
        found["epsilon"] = float(found["epsilon"])
    if found.get("floatx") is not None:
        found["floatx"] = str(found["floatx"])
    return found


def versions(names):
    found = {}
    for name in names:
        try:
            found[name] = getattr(importlib.import_module(name), "__version__", "unknown")
        except Exception as exc:
            found[name] = "unavailable ({})".format(type(exc).__name__)
    return found


def plant_faults(K):
    """Test-only seam (tests/faults/, scripts/planted_faults.py): KBTOOL_PLANT names a Python file whose
    `plant(K)` may replace K's functions with faulty ones, to prove that a check catches the fault. Unset: nothing."""
    path = os.environ.get("KBTOOL_PLANT")
    if path:
        namespace = {"__name__": "kbtool_plant", "__file__": path}
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), namespace)
        namespace["plant"](K)


def graph_context(kind):
    if kind == "tensorflow":
        import tensorflow as tf

        return lambda: tf.Graph().as_default()
    return None


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    watchdog.guard()  # before any import of the backend: this worker dies with its controller
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    stdin = sys.stdin.buffer
    started = time.time()
    try:
        shims.apply(args.shim)
        K = importlib.import_module(args.module)
        fallbacks = [importlib.import_module(m) for m in args.fallback_module]
        if args.apply_keras_json:
            apply_settings(K, keras_json())
        plant_faults(K)
        symbolic_context = graph_context(args.graph)
        import invoke
        import timing
    except BaseException as exc:
        lines = traceback.format_exception_only(type(exc), exc)
        protocol.write_message(
            proto_out, {"status": protocol.BROKEN, "error": lines[-1].strip(), "python": sys.version.split()[0]}
        )
        return 3
    import numpy

    backend_name = K.backend() if callable(getattr(K, "backend", None)) else args.module
    hello = {
        "status": protocol.READY,
        "backend": backend_name,
        "module": args.module,
        "module_file": getattr(K, "__file__", None),
        "python": sys.version.split()[0],
        "numpy": numpy.__version__,
        "versions": versions(args.version_of),
        "import_seconds": round(time.time() - started, 3),
        "keras_json": keras_json(),
        "keras_config": settings_in_effect(K),
    }
    if args.base_backend:  # after the custom module: a base that cannot be imported only means nothing is inherited
        hello["base"] = inherit.base_hello(
            [K] + fallbacks, args.base_backend, args.base_module, importlib.import_module
        )
    protocol.write_message(proto_out, hello)
    modules = [K] + fallbacks
    while True:
        try:
            request, arrays = protocol.read_message(stdin)
        except EOFError:
            return 0
        cmd = request.get("cmd", "run")
        if cmd == "exit":
            return 0
        if cmd == "ping":
            protocol.write_message(proto_out, {"status": "pong"})
            continue
        t0 = time.time()
        if args.clear_session:
            K.clear_session()
        if callable(getattr(K, "kbtool_reset", None)):
            # a module's own fresh start per case (keras3_port: Keras 3's global state, its gradient tape and its
            # random seed, so an unseeded draw is the same in every run)
            K.kbtool_reset()
        if cmd == "overhead":
            protocol.write_message(proto_out, timing.overhead(K, request))
            continue
        if cmd == "peak":
            protocol.write_message(proto_out, timing.device_peak(K, request))
            continue
        if cmd == "bench":
            protocol.write_message(proto_out, timing.bench(K, request, arrays, modules, symbolic_context))
            continue
        if cmd in ("model", "model_trace"):  # `kbtool models`: a zoo model, or one layer's K.* calls (own seconds)
            from modelzoo import serve

            header, out_arrays = serve.serve(K, request, arrays, args.base_module if args.base_backend else ())
            protocol.write_message(proto_out, header, out_arrays)
            continue
        header, out_arrays = invoke.evaluate(K, request, arrays, modules, symbolic_context)
        header["seconds"] = round(time.time() - t0, 6)
        protocol.write_message(proto_out, header, out_arrays)


if __name__ == "__main__":
    sys.exit(main())
