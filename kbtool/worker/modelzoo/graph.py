# py36-compatible
"""A built model's graph the same way on every flavor: its nodes in topological order (the model's own
_nodes_by_depth, deepest first: Keras 2.2/2.3, tf_keras and Keras 3 all keep one), each node's layer, input tensors,
output tensors and the layers those inputs come from. Private attributes are read here only."""


def flat(value):
    """A nested list/tuple of tensors as a flat list (a single tensor: [it])."""
    if isinstance(value, (list, tuple)):
        found = []
        for item in value:
            found.extend(flat(item))
        return found
    return [value]


def nodes_in_order(model):
    by_depth = model._nodes_by_depth
    ordered = []
    for depth in sorted(by_depth, reverse=True):
        ordered.extend(by_depth[depth])
    return ordered


def node_layer(node):
    for attr in ("outbound_layer", "layer", "operation"):
        layer = getattr(node, attr, None)
        if layer is not None:
            return layer
    raise ValueError("a graph node without its layer: {!r}".format(node))


def is_input_layer(layer):
    return type(layer).__name__ == "InputLayer"


def node_inputs(node):
    """The Keras tensors a node's layer was called on, flat, in call order ([] for an input layer's node)."""
    if is_input_layer(node_layer(node)):
        return []
    keras_inputs = getattr(node, "keras_inputs", None)  # tf_keras: the flat Keras tensors of the call
    if keras_inputs is not None:
        return list(keras_inputs)
    return flat(node.input_tensors)


def node_outputs(node):
    outputs = getattr(node, "output_tensors", None)
    if outputs is None:
        outputs = node.outputs
    return flat(outputs)


def weight_name(variable):
    """A weight's full name (Keras 3's `path`, 'conv/kernel'; Keras 2's and tf_keras's name, 'conv/kernel:0')."""
    return str(getattr(variable, "path", None) or variable.name)


def source_layer(tensor):
    """The layer that made a Keras tensor (its _keras_history's first field on every flavor)."""
    return tensor._keras_history[0]


class LayerNodes(object):
    """One layer of the model and its nodes in the model, in topological order of its first node."""

    def __init__(self, layer):
        self.layer = layer
        self.nodes = []

    @property
    def name(self):
        return self.layer.name

    def inbound(self):
        names = []
        for node in self.nodes:
            for tensor in node_inputs(node):
                name = source_layer(tensor).name
                if name not in names:
                    names.append(name)
        return names


def layers_in_order(model):
    """[LayerNodes] of every layer with a node in the model, input layers included, topological order."""
    by_id = {}
    ordered = []
    for node in nodes_in_order(model):
        layer = node_layer(node)
        if id(layer) not in by_id:
            by_id[id(layer)] = LayerNodes(layer)
            ordered.append(by_id[id(layer)])
        by_id[id(layer)].nodes.append(node)
    return ordered


def find_layer(model, name):
    for entry in layers_in_order(model):
        if entry.name == name:
            return entry
    raise KeyError("the model has no layer named {!r}".format(name))


def weighted_layers(model):
    """The layers that hold weights, in model.layers order (a nested model's own layers in its place)."""
    for layer in model.layers:
        if hasattr(layer, "layers") and not hasattr(layer, "layer"):
            for inner in weighted_layers(layer):
                yield inner
        elif layer.weights:
            yield layer


def canonical(model):
    """[(key, layer, j)] of every weight, sorted by key 'LAYER/J' (its layer's name and its place in the layer's own
    weights; not the weight's own name, which keras-mxnet numbers: 'kernel1'): one order on every Keras, where model.weights and get_weights() order them
    differently (Keras 2.3.1's get_weights goes layer by layer, its model.weights and tf_keras's put every trainable
    weight first)."""
    found = []
    for layer in weighted_layers(model):
        for j in range(len(layer.weights)):
            found.append(("{}/{}".format(layer.name, j), layer, j))
    return sorted(found, key=lambda item: item[0])
