#!/usr/bin/env python3
"""Smoke test of the model zoo (kbtool/worker/modelzoo/zoo.py) in backends' own envs, without kbtool's worker.

    PYTHONPATH=$PWD python3 scripts/zoo-smoke.py tensorflow1 theano keras3-jax [--models a,b] [--train] [--out F]

For each backend (its env's python, shims and variables, as `kbtool.runners.registry` launches it) and each model:
build, set the seeded weights, predict (training mode where the model says so), optionally one training step
(SGD, learning rate 1), and print ok / Unsupported(reason) / error, the seconds, the output's shape and sum. Then
compares, model by model, the get_weights() shapes and the (name, class) layer list across the backends that built
it: a backend whose list differs from the first one's is reported. The part run inside the env (`--inside`) is
Python 3.6-compatible and imports only the worker's modules."""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(os.path.dirname(HERE), "kbtool", "worker")


# ---- inside the env (Python 3.6+) -----------------------------------------------------------------------------------


def _keras_side(module):
    import importlib

    sys.path.insert(0, WORKER)
    K = importlib.import_module(module)
    from modelzoo import zoo

    return zoo, zoo.api_for(module, K)


def _clear(api):
    clear = getattr(api.keras.backend, "clear_session", None)
    if callable(clear):
        clear()


def _predict(api, model, definition, xs):
    import numpy as np

    batch = definition.inputs[0]["shape"][0]
    if definition.training_forward:
        if api.flavor == "keras2":
            K = api.keras.backend
            f = K.function(model.inputs + [K.learning_phase()], model.outputs)
            out = f(xs + [1])
        else:
            out = model(xs if len(xs) > 1 else xs[0], training=True)
    else:
        out = model.predict(xs if len(xs) > 1 else xs[0], batch_size=batch)
    out = out if isinstance(out, list) else [out]
    if api.flavor == "keras3":
        return [np.asarray(api.keras.ops.convert_to_numpy(o)) for o in out]
    return [np.asarray(o if isinstance(o, np.ndarray) else o.numpy()) for o in out]


def _train(api, model, definition, seed, xs):
    from modelzoo import seeded

    if not definition.trains:
        return "no (trains=False)"
    if api.backend in ("numpy", "openvino"):
        return "no (engine)"
    optimizers = api.keras.optimizers
    sgd = optimizers.SGD(lr=1.0) if api.flavor == "keras2" and api.version.startswith("2.2") else None
    sgd = sgd or optimizers.SGD(learning_rate=1.0)
    model.compile(optimizer=sgd, loss=definition.loss)
    ys = [seeded.target_value(seed, definition.name, i, s) for i, s in enumerate(definition.targets)]
    loss = model.train_on_batch(xs if len(xs) > 1 else xs[0], ys if len(ys) > 1 else ys[0])
    return float(loss if not isinstance(loss, list) else loss[0])


def _one(zoo, api, definition, seed, train):
    import numpy as np
    from modelzoo import seeded

    row = {"model": definition.name}
    _clear(api)
    t0 = time.time()
    try:
        model = definition.build(api)
    except zoo.Unsupported as exc:
        row.update(status="unsupported", error=str(exc), build=round(time.time() - t0, 2))
        return row
    t1 = time.time()
    names = [w.name for w in zoo.weights_in_order(model)]
    values = model.get_weights()
    shape_of = api.keras.backend.int_shape if api.flavor == "keras2" else (lambda w: tuple(w.shape))
    if [tuple(shape_of(w)) for w in zoo.weights_in_order(model)] != [v.shape for v in values]:
        raise AssertionError("weights_in_order differs from get_weights()")
    row["weights"] = [[n, list(v.shape)] for n, v in zip(names, values)]
    row["layers"] = [[layer.name, type(layer).__name__] for layer in model.layers]
    seeded_values = [
        seeded.weight_value(seed, definition.name, i, n, v.shape) for i, (n, v) in enumerate(zip(names, values))
    ]
    model.set_weights(zoo.engine_layout(api, model, seeded_values))
    xs = [seeded.input_value(seed, definition.name, i, s) for i, s in enumerate(definition.inputs)]
    t2 = time.time()
    outs = _predict(api, model, definition, xs)
    t3 = time.time()
    row.update(status="ok", build=round(t1 - t0, 2), set=round(t2 - t1, 2), predict=round(t3 - t2, 2))
    row["shape"] = [list(o.shape) for o in outs]
    row["sum"] = [float(np.sum(o.astype("float64"))) for o in outs]
    # a checksum that tells apart outputs with the same sum (softmax rows)
    row["check"] = [float(np.sum(o.astype("float64").ravel() * (1 + np.arange(o.size) % 7))) for o in outs]
    if train:
        row["train"] = _train(api, model, definition, seed, xs)
        row["train_s"] = round(time.time() - t3, 2)
    return row


def inside(module, shims, names, seed, train):
    sys.path.insert(0, WORKER)
    import shims as shim_module

    for name in shims:
        getattr(shim_module, name)()
    t0 = time.time()
    zoo, api = _keras_side(module)
    print(json.dumps({"import": round(time.time() - t0, 2), "flavor": api.flavor, "keras": api.version}), flush=True)
    for name in names or list(zoo.MODELS):
        try:
            row = _one(zoo, api, zoo.MODELS[name], seed, train)
        except Exception as exc:  # reported, and the next model runs
            lines = str(exc).strip().splitlines() or [""]
            row = {"model": name, "status": "error", "error": f"{type(exc).__name__}: {lines[0][:300]}"}
            if os.environ.get("ZOO_SMOKE_TRACEBACK"):
                import traceback

                traceback.print_exc()
        print(json.dumps(row), flush=True)


# ---- the controller's side ------------------------------------------------------------------------------------------


def _command(backend, names, seed, train):
    from kbtool.runners import registry

    launch = registry.launch_for(backend)
    env = dict(os.environ)
    env.update(launch.env)
    env.update(launch.per_worker_env(0))
    env.pop("PYTHONPATH", None)
    argv = [launch.python, os.path.abspath(__file__), "--inside", launch.module, ",".join(launch.shims)]
    argv += [",".join(names), str(seed), "1" if train else "0"]
    return argv, env


def run_backend(backend, names, seed, train, timeout):
    """Runs the zoo in the backend's env, printing each model's line as it comes."""
    argv, env = _command(backend, names, seed, train)
    rows = []
    t0 = time.time()
    print(f"== {backend}", flush=True)
    with open(os.devnull, "w") as quiet:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=quiet, text=True)
        for line in proc.stdout:
            if line.startswith("{"):
                rows.append(json.loads(line))
                print("  " + _line(rows[-1]), flush=True)
            if time.time() - t0 > timeout:
                proc.kill()
                print(f"  (stopped after {timeout} s)")
                break
        proc.wait()
    print(f"  {backend}: {time.time() - t0:.1f} s in all, exit {proc.returncode}", flush=True)
    return rows


def _line(row):
    if "import" in row:
        return "import {} s ({} flavor, Keras {})".format(row["import"], row["flavor"], row["keras"])
    if row["status"] != "ok":
        return "{:20} {}: {}".format(row["model"], row["status"], row.get("error", ""))
    train = " train={} ({} s)".format(row["train"], row["train_s"]) if "train" in row else ""
    return "{:20} ok build={} set={} predict={}{} shape={} sum={} check={}".format(
        row["model"],
        row["build"],
        row["set"],
        row["predict"],
        train,
        row["shape"],
        [f"{s:.6g}" for s in row["sum"]],
        [f"{s:.6g}" for s in row["check"]],
    )


def compare(results):
    """Per model, the backends whose weight shapes or layer list differ from the first backend's."""
    print("== architecture across backends")
    by_model = {}
    for backend, rows in results.items():
        for row in rows:
            if row.get("status") == "ok":
                by_model.setdefault(row["model"], []).append((backend, row))
    for model, built in by_model.items():
        base_backend, base = built[0]
        for backend, row in built[1:]:
            shapes = [s for _, s in row["weights"]] != [s for _, s in base["weights"]]
            layers = row["layers"] != base["layers"]
            if shapes or layers:
                what = "weights" if shapes else "layers"
                print(f"  {model}: {what} differs on {backend} from {base_backend}: {_diff(row[what], base[what])}")


def _diff(mine, theirs):
    extra = [x for x in mine if x not in theirs][:3]
    missing = [x for x in theirs if x not in mine][:3]
    return f"{len(mine)} vs {len(theirs)} items; extra {extra}, missing {missing}"


def main(argv):
    if argv[:1] == ["--inside"]:
        module, shims, names, seed, train = argv[1:6]
        return inside(
            module, [s for s in shims.split(",") if s], [n for n in names.split(",") if n], int(seed), train == "1"
        )
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backends", nargs="+")
    parser.add_argument("--models", default="")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", help="write every row as JSON here")
    args = parser.parse_args(argv)
    names = [n for n in args.models.split(",") if n]
    results = {b: run_backend(b, names, args.seed, args.train, args.timeout) for b in args.backends}
    compare(results)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
