# py36-compatible: runs inside a backend's worker (kbtool/worker/main.py's test-only seam, KBTOOL_PLANT)
"""Plants the faults of tests/faults/faults.yaml into a backend module, inside its worker.

The worker calls `plant(K)` right after importing the backend module when KBTOOL_PLANT names this file.
KBTOOL_PLANT_FAULTS holds a JSON list of faults, each {"id", "op", "when", "set", "out"}: K.<op> is replaced
by a wrapper that binds the call's arguments by name (defaults applied) and, when the Python expression `when`
holds for them, evaluates each `set` expression into its argument, calls the real function, and returns the
expression `out` (where `out` is the real result). Expressions see the arguments by name and `out`, `orig` (the
real function), `K`, `np`, `ops` (keras.ops on a Keras 3 engine, tensorflow on a Keras 2 one) and `value(v)`
(a Keras 3 variable's tensor, so that an op that takes no variable, jax's where, can take it; else v itself).
An expression that raises is a PlantError naming the fault: scripts/planted_faults.py then says the fault was not
planted, never that it was caught. Each planting writes KBTOOL_PLANT_MARK/<pid>.json (the ids planted) so the
caller knows the seam ran.
"""

import functools
import inspect
import json
import os

import numpy as np


class PlantError(Exception):
    """A fault's own expression failed: the fault is not planted, and the check's result says nothing about it."""


def _value(v):
    inner = getattr(v, "value", None)  # keras.Variable.value: its backend tensor
    return inner if inner is not None and not callable(inner) and hasattr(v, "assign") else v


def _eval(fault, what, expression, scope):
    try:
        return eval(expression, scope)
    except Exception as exc:
        raise PlantError("fault {} ({}: {}): {}: {}".format(fault["id"], what, expression, type(exc).__name__, exc))


def _ops(K):
    if getattr(K, "__name__", "") == "keras3_port":
        import keras

        return keras.ops
    try:
        import tensorflow

        return tensorflow
    except ImportError:
        return None


def _wrap(K, orig, fault, ops):
    signature = inspect.signature(orig)

    @functools.wraps(orig)
    def faulty(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        scope = dict(bound.arguments, K=K, np=np, ops=ops, orig=orig, value=_value)
        if not _eval(fault, "when", fault.get("when") or "True", scope):
            return orig(*args, **kwargs)
        for name, expression in sorted((fault.get("set") or {}).items()):
            bound.arguments[name] = _eval(fault, "set " + name, expression, scope)
        scope["out"] = orig(*bound.args, **bound.kwargs)
        return _eval(fault, "out", fault.get("out") or "out", scope)

    return faulty


def plant(K):
    faults = json.loads(os.environ.get("KBTOOL_PLANT_FAULTS") or "[]")
    ops = _ops(K)
    originals = {}
    for fault in faults:
        op = fault["op"]
        originals.setdefault(op, getattr(K, op))  # no such function: the worker does not start, the batch says so
        setattr(K, op, _wrap(K, originals[op], fault, ops))
    mark = os.environ.get("KBTOOL_PLANT_MARK")
    if mark:
        with open(os.path.join(mark, str(os.getpid()) + ".json"), "w") as f:
            json.dump([fault["id"] for fault in faults], f)
