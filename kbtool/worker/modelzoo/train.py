# py36-compatible
"""One training step of a zoo model: compiled with SGD (learning rate 1.0, no momentum) and the model's loss,
train_on_batch once on the seeded inputs and targets; each trainable weight's gradient is its value before minus
after (lr 1.0), the loss what train_on_batch returned. Where the engine does not train, a note says why."""

import numpy as np

from . import graph, seeded
from .layout import flip, flipped_kernels

# Keras 3 engines whose trainer has no train_on_batch (keras/src/backend/<engine>/trainer.py raises
# NotImplementedError): not tried, said
NO_TRAINER = {
    "numpy": "Keras 3's numpy backend does not train (keras/src/backend/numpy/trainer.py: train_on_batch raises "
    "NotImplementedError)",
    "openvino": "Keras 3's openvino backend does not train (keras/src/backend/openvino/trainer.py: train_on_batch "
    "raises NotImplementedError)",
}


def is_reference(api):
    """The reference oracle (Keras 2.3.1 with KERAS_BACKEND=kbtool.reference...): it differentiates placeholders
    only, so its training step is tried and, where it fails, the failure is the note."""
    return api.flavor == "keras2" and "reference" in api.engine


def sgd(api):
    optimizers = api.keras.optimizers
    if api.flavor == "keras2":
        return optimizers.SGD(lr=1.0, momentum=0.0)  # Keras 2.2.4 knows only `lr`
    return optimizers.SGD(learning_rate=1.0, momentum=0.0)


def values_of(api, variables):
    if api.flavor == "keras2":
        return [np.asarray(v) for v in api.keras.backend.batch_get_value(list(variables))]
    if api.flavor == "tf_keras":
        return [np.array(v.numpy()) for v in variables]
    return [np.array(api.keras.ops.convert_to_numpy(v.value)) for v in variables]  # Keras 3: .value, a property


def one_step(api, mdef, model, seed):
    """(loss, [gradient]) of one train_on_batch."""
    inputs = [seeded.input_value(seed, mdef.name, i, spec) for i, spec in enumerate(mdef.inputs)]
    targets = [seeded.target_value(seed, mdef.name, i, spec) for i, spec in enumerate(mdef.targets)]
    model.compile(optimizer=sgd(api), loss=mdef.loss)
    trainable_ids = {id(w) for w in model.trainable_weights}
    keyed = [(key, layer.weights[j]) for key, layer, j in graph.canonical(model)]
    keyed = [(key, w) for key, w in keyed if id(w) in trainable_ids]  # the canonical order, as build's weights
    trainable = [w for _, w in keyed]
    before = values_of(api, trainable)
    loss = model.train_on_batch(inputs if len(inputs) > 1 else inputs[0], targets if len(targets) > 1 else targets[0])
    after = values_of(api, trainable)
    loss = np.asarray(loss, dtype="float64").ravel()[0]
    flipped = flipped_kernels(api, model)  # a flipped kernel's gradient is the flip of the unflipped one's
    gradients = [flip(b - a) if id(w) in flipped else b - a for w, b, a in zip(trainable, before, after)]
    return loss, gradients, [key for key, _ in keyed]


def step(api, mdef, model, seed, arrays):
    """The header's "train" field: {"loss": index, "gradients": [index...], "trainable": [names]} or {"note"}."""
    if not mdef.trains:
        return {"note": "the model does not train anywhere (mdef.trains is False: {})".format(mdef.about)}
    if api.flavor == "keras3" and api.engine in NO_TRAINER:
        return {"note": NO_TRAINER[api.engine]}
    try:
        loss, gradients, names = one_step(api, mdef, model, seed)
    except Exception as exc:
        if not is_reference(api):
            # the forward pass stands on its own: the step's failure is what this engine's training came to
            return {
                "note": "the training step raised {}: {}".format(type(exc).__name__, " ".join(str(exc).split())[:300]),
                "raised": True,
            }
        return {
            "note": "the reference does not train: {}: {}".format(
                type(exc).__name__, str(exc).splitlines()[0][:300] if str(exc) else ""
            )
        }
    return {"loss": arrays.add(loss), "gradients": [arrays.add(g) for g in gradients], "trainable": names}
