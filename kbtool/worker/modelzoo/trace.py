# py36-compatible
"""The K.* calls one layer makes, replayed alone on given input values: the backend functions the engine's layers
look up at call time are wrapped so that every outermost call (one made while no other wrapped call runs) is
recorded with its arguments and its output; everything is restored afterwards.

- keras2 (graph): attributes of keras.backend; the layer is called on placeholders, the recorded symbolic tensors
  are then evaluated in one K.function fed with the input values;
- tf_keras (eager): attributes of tf_keras.src.backend (and of the worker's K, for Lambda layers); values directly;
- keras3 (eager): the keras.src.ops functions the layers call (recorded as "ops.<fn>") and the worker's K (Lambda).

The layer's own `call` is what runs (not __call__: Keras's machinery around it calls K.* functions too); its
keyword arguments are its graph node's, with `training` set to the model's forward mode where the call takes it."""

import importlib
import inspect
import types

import numpy as np

from . import api as apis
from . import definitions, graph, run


class Recorder(object):
    def __init__(self):
        self.calls = []  # (name, args, kwargs, output)
        self.depth = 0
        self.patched = []  # (module, name, original)

    def wrap(self, name, fn):
        recorder = self

        def recorded(*args, **kwargs):
            if recorder.depth:
                return fn(*args, **kwargs)
            recorder.depth += 1
            try:
                output = fn(*args, **kwargs)
            except Exception:
                recorder.raised(name, fn, args, kwargs)
                raise
            finally:
                recorder.depth -= 1
            recorder.returned(name, args, kwargs, output)
            return output

        return recorded

    def returned(self, name, args, kwargs, output):
        """An outermost call that returned: recorded."""
        self.calls.append((name, args, kwargs, output))

    def raised(self, name, fn, args, kwargs):
        """An outermost call that raised (raised.py's InFlight keeps it; a trace lets the exception go)."""

    def patch(self, module, prefix=""):
        for name in dir(module):
            if name.startswith("_"):
                continue
            try:
                fn = getattr(module, name)
            except Exception:
                continue
            if not callable(fn) or isinstance(fn, (type, types.ModuleType)):
                continue
            self.patched.append((module, name, fn))
            setattr(module, name, self.wrap(prefix + name, fn))

    def restore(self):
        for module, name, fn in reversed(self.patched):
            setattr(module, name, fn)
        self.patched = []


def targets(api):
    """[(module, prefix)] to wrap on this flavor."""
    found = []
    facing = apis.layer_facing_module(api)
    if facing is not None:
        found.append((facing, ""))
    else:
        found.append((importlib.import_module("keras.src.ops"), "ops."))
    if all(api.K is not module for module, _ in found):
        found.append((api.K, ""))
    return found


def call_kwargs(layer, kwargs, training):
    kwargs = dict(kwargs or {})
    try:
        takes = "training" in inspect.signature(layer.call).parameters
    except (TypeError, ValueError):
        takes = False
    if takes and kwargs.get("training") is None:
        kwargs["training"] = bool(training)
    return kwargs


def invoke(api, node, values):
    """Call the node's layer on `values` (its inputs in order), as its node called it; the placeholders fed (keras2)."""
    layer = graph.node_layer(node)
    keras_inputs = graph.node_inputs(node)
    if len(keras_inputs) != len(values):
        raise ValueError("layer {} takes {} inputs; {} were given".format(layer.name, len(keras_inputs), len(values)))
    if api.flavor == "keras2":
        kb = api.keras.backend
        fed = [kb.placeholder(shape=v.shape, dtype=str(v.dtype)) for v in values]
        args, kwargs = ([fed[0]] if len(fed) == 1 else [fed]), getattr(node, "arguments", None)
    elif api.flavor == "tf_keras":
        import tensorflow as tf

        fed = [tf.constant(v) for v in values]
        ids = [kt_id for kt_id, _ in node._keras_inputs_ids_and_indices]
        args, kwargs = node.map_arguments({i: [t] for i, t in zip(ids, fed)})
    else:
        fed = [api.keras.ops.convert_to_tensor(v) for v in values]
        args, kwargs = node.arguments.fill_in({id(kt): t for kt, t in zip(keras_inputs, fed)})
    return layer, list(args), call_kwargs(layer, kwargs, False), fed


def symbolic(api, value):
    kb = api.keras.backend
    for test in ("is_tensor", "is_variable"):
        try:
            if getattr(kb, test)(value):
                return True
        except Exception:
            pass
    return False


def walk(value, found):
    if isinstance(value, (list, tuple)):
        for item in value:
            walk(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            walk(item, found)
    else:
        found.append(value)


def keras2_values(api, calls, fed, values, training):
    """{id: value} of every symbolic tensor the calls took or made: one K.function fed with the input values; where
    that fails (a tensor it cannot fetch), each tensor alone, and one that cannot be evaluated stays a repr."""
    leaves = []
    for _, args, kwargs, output in calls:
        walk([args, kwargs, output], leaves)
    known = {id(p): v for p, v in zip(fed, values)}
    wanted = run.unique(x for x in leaves if id(x) not in known and symbolic(api, x))
    phase = [int(bool(training))]
    try:
        fn, takes_phase = run.keras2_function(api, fed, wanted, training)
        known.update(zip(map(id, wanted), fn(list(values) + (phase if takes_phase else []))))
    except Exception:
        for tensor in wanted:
            try:
                fn, takes_phase = run.keras2_function(api, fed, [tensor], training)
                known[id(tensor)] = fn(list(values) + (phase if takes_phase else []))[0]
            except Exception:
                pass
    return known


class Encoder(object):
    """Arguments and outputs as the wire carries them: arrays by index, tuples tagged, the rest JSON or repr."""

    def __init__(self, api, arrays, known):
        self.api, self.arrays, self.known = api, arrays, known

    def array_of(self, value):
        if id(value) in self.known:
            return np.asarray(self.known[id(value)])
        if isinstance(value, np.ndarray):
            return value
        if self.api.flavor == "keras2":
            # a variable the graph walk did not fetch (CNTK's Parameters are no K.is_tensor): its value, if it has one
            try:
                return np.asarray(self.api.keras.backend.get_value(value))
            except Exception:
                return None
        try:  # eager tensors and variables
            return run.to_numpy(self.api, getattr(value, "value", value) if self.api.flavor == "keras3" else value)
        except Exception:
            return None

    def encode(self, value):
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, tuple):
            return {"tuple": [self.encode(v) for v in value]}
        if isinstance(value, list):
            return [self.encode(v) for v in value]
        if isinstance(value, dict):
            return {"dict": {str(k): self.encode(v) for k, v in value.items()}}
        if not callable(value) or hasattr(value, "shape"):
            array = self.array_of(value)
            if array is not None and array.dtype != object:
                return {"array": self.arrays.add(array)}
        return {"repr": repr(value)[:200]}

    def output(self, value):
        """(index of the output array or None, [indices] where the output is a tuple/list of tensors)."""
        encoded = self.encode(value)
        if isinstance(encoded, dict) and "array" in encoded:
            return encoded["array"], None
        leaves = []
        flatten_encoded(encoded, leaves)
        indices = [i.get("array") if isinstance(i, dict) else None for i in leaves]
        if len(indices) > 1 and all(i is not None for i in indices):
            return indices[0], indices
        return None, None


def flatten_encoded(encoded, leaves):
    """The leaves of an encoded value, tuples and lists opened (K.rnn returns (last, outputs, [states]))."""
    items = encoded.get("tuple") if isinstance(encoded, dict) and "tuple" in encoded else encoded
    if isinstance(items, list):
        for item in items:
            flatten_encoded(item, leaves)
    else:
        leaves.append(items)


def trace(api, mdef, seed, layer_name, values, arrays):
    """The header's "calls": the layer's outermost K.* calls on `values`, in order; arrays filled in `arrays`."""
    run.fresh_session(api)
    model, _ = run.build(api, mdef, seed)
    node = graph.find_layer(model, layer_name).nodes[0]
    values = [np.asarray(v) for v in values]
    layer, args, kwargs, fed = invoke(api, node, values)
    if "training" in kwargs:
        kwargs["training"] = bool(mdef.training_forward)
    recorder = Recorder()
    try:
        for module, prefix in targets(api):
            recorder.patch(module, prefix)
        layer.call(*args, **kwargs)
    finally:
        recorder.restore()
    known = keras2_values(api, recorder.calls, fed, values, mdef.training_forward) if api.flavor == "keras2" else {}
    encoder = Encoder(api, arrays, known)
    calls = []
    for name, call_args, call_kw, output in recorder.calls:
        entry = {"fn": name, "args": [encoder.encode(a) for a in call_args], "kwargs": {}}
        entry["kwargs"] = {str(k): encoder.encode(v) for k, v in call_kw.items()}
        entry["output"], outputs = encoder.output(output)
        if outputs is not None:
            entry["outputs"] = outputs
        if name == "rnn":
            entry.update(definition(api, call_args, call_kw, known, fed, values, mdef, arrays))
        calls.append(entry)
    return calls


def definition(api, call_args, call_kw, known, fed, values, mdef, arrays):
    """{"expected": [array indices]}: what the call returns by its definition (definitions.py), or {"no_expected":
    why} where it cannot be computed on this engine."""
    try:
        if api.flavor == "keras2":
            found = definitions.graph_rnn(
                api, call_args, call_kw, known, fed, values, mdef.training_forward, run.keras2_function
            )
        elif api.flavor == "tf_keras":
            import tensorflow as tf

            found = definitions.eager_rnn(
                api, call_args, call_kw, lambda v: run.to_numpy(api, v), lambda v: tf.constant(v)
            )
        else:
            return {"no_expected": "Keras 3's layers do not call K.rnn"}
    except Exception as exc:
        return {"no_expected": "the definition's loop failed: {}: {}".format(type(exc).__name__, exc)[:300]}
    return {"expected": [arrays.add(np.asarray(v)) for v in found]}
