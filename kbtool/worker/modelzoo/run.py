# py36-compatible
"""One zoo model on this worker's engine: built, given the seeded weights, run forward on the seeded inputs with
every layer's outputs kept (topological order), on keras2 through one K.function over all of them with the learning
phase fed, on tf_keras and Keras 3 through one functional Model over all of them called with training=..."""

import time

import numpy as np

from . import graph, seeded
from .layout import LAYOUT_NOTE, cheap_draws, flip, flipped_kernels


class Arrays(object):
    """The reply's arrays: add() appends one and returns its index."""

    def __init__(self):
        self.items = []

    def add(self, value):
        self.items.append(np.asarray(value))
        return len(self.items) - 1


def to_numpy(api, value):
    if api.flavor == "keras3":
        return np.asarray(api.keras.ops.convert_to_numpy(value))
    if hasattr(value, "numpy"):
        return np.asarray(value.numpy())
    return np.asarray(value)


def build(api, mdef, seed):
    """The model with its seeded weights; (model, [(key, shape)] in canonical order). Each weight is drawn from its
    own stream, keyed by its canonical key (so one layer more or less on some Keras changes nothing else), and set
    layer by layer. Shapes are read from get_weights()'s values (a Theano variable's own shape is symbolic)."""
    with cheap_draws(api):
        model = mdef.build(api)
    flipped = flipped_kernels(api, model)
    current = {}
    for layer in graph.weighted_layers(model):
        current[id(layer)] = [np.asarray(v) for v in layer.get_weights()]
    wanted = {key: list(values) for key, values in current.items()}
    described = []
    for key, layer, j in graph.canonical(model):
        old = current[id(layer)][j]
        shape = tuple(int(d) for d in old.shape)
        value = seeded.weight_value(seed, mdef.name, key, graph.weight_name(layer.weights[j]), shape, str(old.dtype))
        if id(layer.weights[j]) in flipped:
            value = np.ascontiguousarray(flip(value))
        wanted[id(layer)][j] = value
        described.append((key, shape))
    pairs = [(w, v) for layer in graph.weighted_layers(model) for w, v in zip(layer.weights, wanted[id(layer)])]
    set_values(api, pairs)
    return model, described


def set_values(api, pairs):
    """Every (variable, value) at once: on TF1 each session run of a layer's set_weights serialises the grown graph
    again (NASNetMobile: minutes layer by layer); Keras 3's variables are assigned one by one (eager)."""
    if api.flavor == "keras3":
        for variable, value in pairs:
            variable.assign(value)
    else:
        api.keras.backend.batch_set_value(pairs)


def inputs_of(mdef, seed):
    return [seeded.input_value(seed, mdef.name, i, spec) for i, spec in enumerate(mdef.inputs)]


def fresh_session(api):
    """A new graph/name scope per request, where the Keras has one (the names in the zoo are given, but an
    application's automatic names would count on)."""
    clear = getattr(api.keras.backend, "clear_session", None)
    if callable(clear):
        try:
            clear()
        except Exception:  # the reference has nothing to clear: nothing is lost
            pass


def unique(tensors):
    seen, kept = set(), []
    for tensor in tensors:
        if id(tensor) not in seen:
            seen.add(id(tensor))
            kept.append(tensor)
    return kept


class PhasedFunction(object):
    """keras-mxnet's K.function run in the phase it is given as its last input value. Its K.learning_phase() is a
    plain int, 1 (train) unless set (keras/backend/mxnet_backend.py: _LEARNING_PHASE = 1), and the phase is read when
    the function runs: KerasSymbol.symbol picks the tensor's train graph while learning_phase() is 1, its test graph
    otherwise, and Function.__call__ takes a trailing number as the executor's is_train (MXNet's own BatchNorm and
    Dropout follow it). Called without it, every forward pass would run in training mode."""

    def __init__(self, kb, inputs, outputs):
        self.kb = kb
        self.fn = kb.function(list(inputs), list(outputs))

    def __call__(self, values):
        values = list(values)
        phase = int(values[-1])
        before = self.kb.learning_phase()
        self.kb.set_learning_phase(phase)
        try:
            return self.fn(values[:-1] + [phase])
        finally:
            self.kb.set_learning_phase(before)


def keras2_function(api, inputs, outputs, phase):
    """A K.function of `inputs` (+ the learning phase where it is a placeholder, or where the engine reads a plain
    int phase when the function runs: keras-mxnet) and whether it takes the phase (as a last value)."""
    kb = api.keras.backend
    if api.engine == "mxnet":
        return PhasedFunction(kb, inputs, outputs), True
    learning_phase = kb.learning_phase()
    takes_phase = not isinstance(learning_phase, int)
    return kb.function(list(inputs) + ([learning_phase] if takes_phase else []), list(outputs)), takes_phase


def evaluate(api, model, tensors, values, training):
    """{id(tensor): value} of Keras tensors of the model computed from the model's input values."""
    if not tensors:
        return {}
    if api.flavor == "keras2":
        fn, takes_phase = keras2_function(api, model.inputs, tensors, training)
        computed = fn(list(values) + ([int(bool(training))] if takes_phase else []))
    else:
        probe = api.keras.models.Model(model.inputs, list(tensors))
        feed = list(values) if len(values) > 1 else values[0]
        computed = probe(feed, training=bool(training))
        if len(tensors) == 1 and not isinstance(computed, (list, tuple)):
            computed = [computed]
        if api.flavor == "keras3" and api.engine == "openvino":
            return dict(zip(map(id, tensors), openvino_values(api, computed)))
    return {id(t): to_numpy(api, v) for t, v in zip(tensors, computed)}


def openvino_values(api, computed):
    """OpenVINO's outputs are lazy graph nodes, and converting each alone compiles the graph up to it (hundreds of
    compiles for an application): one model of all of them is compiled once instead, with the f32 precision hint
    Keras's own convert_to_numpy gives (the CPU plugin's default may compute in bf16). Where that is not possible
    (a boolean output, a constant), each is converted as Keras converts it."""
    try:
        import openvino as ov

        outputs = [t.output for t in computed]
        if any(o.get_element_type() == ov.Type.boolean for o in outputs):
            raise TypeError("a boolean output")
        compiled = ov.compile_model(
            ov.Model(results=outputs, parameters=[]), "CPU", {"INFERENCE_PRECISION_HINT": "f32"}
        )
        results = compiled({})
        return [np.array(results[i]) for i in range(len(outputs))]
    except Exception:
        return [to_numpy(api, v) for v in computed]


def forward(api, model, values, training, arrays):
    """The layers' entries of the reply header (name, class, inbound, output array indices), in topological order,
    and the model's output indices."""
    layers = graph.layers_in_order(model)
    given = {id(t): v for t, v in zip(model.inputs, values)}
    wanted = unique(
        t for entry in layers for node in entry.nodes for t in graph.node_outputs(node) if id(t) not in given
    )
    computed = evaluate(api, model, wanted, values, training)
    computed.update(given)
    index_of = {}
    entries = []
    for entry in layers:
        indices = []
        for node in entry.nodes:
            for tensor in graph.node_outputs(node):
                if id(tensor) not in index_of:
                    index_of[id(tensor)] = arrays.add(computed[id(tensor)])
                indices.append(index_of[id(tensor)])
        entries.append(
            {"name": entry.name, "class": type(entry.layer).__name__, "inbound": entry.inbound(), "outputs": indices}
        )
    outputs = [index_of[id(t)] for t in graph.flat(model.outputs)]
    return entries, outputs


def run(api, mdef, seed, train, arrays):
    """The model's header fields (without status) for a `model` request; arrays filled in `arrays`."""
    from . import train as training

    seconds = {}
    t0 = time.time()
    fresh_session(api)
    model, described = build(api, mdef, seed)
    seconds["build"] = round(time.time() - t0, 6)
    t0 = time.time()
    layers, outputs = forward(api, model, inputs_of(mdef, seed), mdef.training_forward, arrays)
    seconds["forward"] = round(time.time() - t0, 6)
    t0 = time.time()
    step = training.step(api, mdef, model, seed, arrays) if train else {"note": "no training step was asked for"}
    seconds["train"] = round(time.time() - t0, 6)
    return {
        "model": mdef.name,
        "flavor": api.flavor,
        "keras": api.version,
        "engine": api.engine,
        "layers": layers,
        "outputs": outputs,
        "weights": [[name, list(shape)] for name, shape in described],
        "layout": LAYOUT_NOTE if flipped_kernels(api, model) else "",
        "train": step,
        "seconds": seconds,
    }
