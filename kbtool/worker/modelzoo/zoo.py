# py36-compatible
"""The zoo: every model `kbtool models` runs, written against whichever Keras the engine has.

A builder takes `api` (api.keras: the Keras package; api.layers; api.K: the backend module, for Lambda layers; api.flavor:
"keras2" (Keras 2.2.x/2.3.x, graph), "tf_keras" or "keras3"; api.version) and returns an uncompiled model. It may
raise Unsupported(reason) where the engine's Keras lacks what the model needs (stated, never a failure)."""

from collections import OrderedDict


class Unsupported(Exception):
    """This engine's Keras cannot build the model; the message says why."""


class ModelDef(object):
    def __init__(
        self, name, build, inputs, targets, loss, about, family, trains=True, training_forward=False, batch_fixed=False
    ):
        self.name = name
        self.build = build  # api -> model
        self.inputs = inputs  # [{shape (batch first), dtype, dist, low, high}]
        self.targets = targets  # [spec] for the loss of the training step (same form)
        self.loss = loss  # a Keras loss name, e.g. "mse", "categorical_crossentropy"
        self.about = about  # one line: what the model exercises
        self.family = family  # "applications", "recurrent", "conv", "dense", "lambda", ...
        self.trains = trains  # False: forward only, whatever the engine (e.g. training-time randomness)
        self.training_forward = training_forward  # True: the forward pass runs in training mode (learning phase 1)
        self.batch_fixed = batch_fixed  # True: the model's batch size is part of it (stateful)


def _mlp(api):
    L = api.layers
    x = L.Input((8,), name="x")
    h = L.Dense(16, activation="relu", name="dense_1")(x)
    y = L.Dense(4, activation="softmax", name="dense_2")(h)
    return api.keras.models.Model(x, y, name="mlp")


def _small_cnn(api):
    L = api.layers
    x = L.Input((12, 12, 3), name="image")
    h = L.Conv2D(8, 3, activation="relu", name="conv")(x)
    h = L.MaxPooling2D(2, name="pool")(h)
    h = L.Flatten(name="flatten")(h)
    y = L.Dense(5, activation="softmax", name="dense")(h)
    return api.keras.models.Model(x, y, name="small_cnn")


MODELS = OrderedDict(
    (m.name, m)
    for m in [
        ModelDef(
            "mlp",
            _mlp,
            [{"shape": [3, 8]}],
            [{"shape": [3, 4], "dist": "uniform", "low": 0.0, "high": 1.0}],
            "mse",
            "two Dense layers, relu and softmax",
            "dense",
        ),
        ModelDef(
            "small_cnn",
            _small_cnn,
            [{"shape": [2, 12, 12, 3]}],
            [{"shape": [2, 5], "dist": "uniform", "low": 0.0, "high": 1.0}],
            "mse",
            "Conv2D, max pooling, Dense",
            "conv",
        ),
    ]
)
