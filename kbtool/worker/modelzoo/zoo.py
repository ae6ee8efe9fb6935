# py36-compatible
"""The zoo: every model `kbtool models` runs, written against whichever Keras the engine has.

A builder takes `api` (api.keras: the Keras package; api.layers; api.K: the backend module, for Lambda layers; api.flavor:
"keras2" (Keras 2.2.x/2.3.x, graph), "tf_keras" or "keras3"; api.version; api.engine: what computes, K.backend()) and returns an
uncompiled model. It raises Unsupported(reason) where the engine's Keras lacks what the model needs (stated, never a
failure, never skipped silently). Every layer a builder writes is named (layers are matched across engines by name);
every model has the same layers and the same get_weights() shapes, in the same order, on every engine, except where
its `about` says an engine's Keras builds it otherwise (an application's own code). The models written layer by
layer are in builders.py.

Sizes are the smallest that still exercise the model (batch 2, a few units, an application at its minimum input
and 10 classes): the whole zoo runs on 14 engines, Theano compiling each graph, on 2 cores."""

import importlib
import re
from collections import OrderedDict

from . import builders as B
from .builders import Unsupported


class ModelDef(object):
    def __init__(
        self, name, build, inputs, targets, loss, about, family, trains=True, training_forward=False, batch_fixed=False
    ):
        self.name = name
        self.build = build  # api -> model
        self.inputs = inputs  # [{shape (batch first), dtype, dist, low, high, zero_tail}]
        self.targets = targets  # [spec] for the loss of the training step (same form)
        self.loss = loss  # a Keras loss name, e.g. "mse", "categorical_crossentropy"
        self.about = about  # one line: what the model exercises
        self.family = family  # "applications", "recurrent", "conv", "dense", "lambda", ...
        self.trains = trains  # False: forward only, whatever the engine (e.g. training-time randomness)
        self.training_forward = training_forward  # True: the forward pass runs in training mode (learning phase 1)
        self.batch_fixed = batch_fixed  # True: the model's batch size is part of it (stateful)


# ---- keras.applications, weights=None, the smallest input each allows, 10 classes -----------------------------------

# Keras 2.2.4 and 2.3.1 build the applications with keras_applications 1.0.8 (the version every keras2 env holds);
# it is called directly, with the engine's Keras modules, as keras.applications' own wrapper does, so that Keras 2.2.4
# (which exports no keras.applications.resnet) builds the same ResNet50 as Keras 2.3.1's keras.applications.resnet.
APPLICATIONS = {  # name -> (keras_applications module, function, input side, extra arguments)
    "mobilenet": ("mobilenet", "MobileNet", 32, {"alpha": 0.25, "dropout": 0.0}),
    "resnet50": ("resnet", "ResNet50", 32, {}),
    "densenet121": ("densenet", "DenseNet121", 32, {}),
    "xception": ("xception", "Xception", 71, {}),
    "nasnet_mobile": ("nasnet", "NASNetMobile", 32, {}),
    "vgg16": ("vgg16", "VGG16", 32, {}),
}
CLASSES = 10


def _application(name):
    module, function, side, extra = APPLICATIONS[name]

    def build(api):
        kwargs = dict(extra, weights=None, input_shape=(side, side, 3), classes=CLASSES)
        if name == "mobilenet" and api.engine == "mxnet":
            # Keras 2.2.4's Layer.__call__ wraps an output that is its input in K.identity (MobileNet's Dropout(0)),
            # and keras-mxnet's mxnet_backend.identity evaluates it (eval), which cannot bind a placeholder
            raise Unsupported("keras-mxnet's K.identity evaluates a placeholder (Dropout(0) returns its input)")
        if api.flavor == "keras2":
            try:
                found = importlib.import_module("keras_applications." + module)
            except ImportError as exc:
                raise Unsupported("keras_applications.{} cannot be imported: {}".format(module, exc))
            modules = dict(backend=api.keras.backend, layers=api.layers, models=api.keras.models)
            return canonical_names(getattr(found, function)(utils=api.keras.utils, **dict(modules, **kwargs)), api)
        if name == "nasnet_mobile" and api.flavor == "keras3" and api.engine == "torch":
            # keras/src/applications/nasnet.py: NASNetMobile raises ValueError on the torch backend
            raise Unsupported("Keras 3's NASNetMobile refuses the torch backend ('an outstanding bug', nasnet.py)")
        return canonical_names(getattr(api.keras.applications, function)(**kwargs), api)

    return build


# the classifier's Dense as each Keras names it: keras_applications' ResNet50 "probs", DenseNet "fc1000"
ALIASES = {"probs": "predictions", "fc1000": "predictions", "act_softmax": "predictions"}


def _snake(class_name):
    # Keras's own rule for a layer's default name (keras/backend/common.py, keras.src.utils.naming.to_snake_case)
    s = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", class_name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", s).lower()


def canonical_names(model, api):
    """Gives an application's layers the same names on every engine: layers are matched across engines by name, and
    the applications leave some layers to Keras's default names, numbered per session (conv2d_4 on one, conv2d on
    another; input_1 or input_layer). A default-named layer becomes its class's name and its rank among the
    default-named layers of that class (model.layers order: the same on every engine, checked by
    `kbtool models --model NAME -v`), an explicit name keeps its own, with "/" (Keras 2, tf_keras) written "_" as Keras 3 must,
    and the classifier is "predictions" everywhere."""
    seen = {}
    for layer in model.layers:
        kind = type(layer).__name__
        default = "input" if kind == "InputLayer" else _snake(kind)
        if re.match("^{}(_\\d+)?$|^input_layer(_\\d+)?$".format(re.escape(default)), layer.name):
            seen[kind] = seen.get(kind, 0) + 1
            new = "{}_{}".format(default, seen[kind])
        else:
            new = ALIASES.get(layer.name, layer.name.replace("/", "_"))
        if api.flavor == "tf_keras":
            layer._name = new  # tf_keras's name is a read-only property over _name
        else:
            layer.name = new
    return model


def _app(name, about, trains=True):
    side = APPLICATIONS[name][2]
    return ModelDef(
        name,
        _application(name),
        [{"shape": [2, side, side, 3]}],
        [_probabilities(2, CLASSES)],
        "categorical_crossentropy",
        about,
        "applications",
        trains=trains,
    )


# ---- the zoo --------------------------------------------------------------------------------------------------------


def _probabilities(batch, n):
    # rows that sum to 1: categorical crossentropy is defined for a distribution, and TensorFlow's fused
    # softmax-crossentropy gradient (softmax - target) assumes one (with rows summing elsewhere the TF engines'
    # gradients differed from every other engine's while the forward passes agreed)
    return {"shape": [batch, n], "dist": "uniform", "low": 0.0, "high": 1.0, "rows_sum_to_one": True}


def _values(*shape):
    return {"shape": list(shape)}


SEQ = {"shape": [2, B.STEPS, B.FEATURES]}
NO_TRAIN_RANDOM = "; forward only: {} draws at random in training"
# measured with a training step on theano (2 shared cores): VGG16 20 s, MobileNet 64 s; the six
# applications together did not finish in 25 min, over the whole zoo's 15 min on 14 engines
NO_TRAIN_SLOW = "; forward only: Theano compiles its gradient graph for minutes, past the zoo's time on 14 engines"

MODELS = OrderedDict(
    (m.name, m)
    for m in [
        ModelDef(
            "mlp",
            B.mlp,
            [{"shape": [3, 8]}],
            [_probabilities(3, 4)],
            "mse",
            "two Dense layers, relu and softmax",
            "dense",
        ),
        ModelDef(
            "small_cnn",
            B.small_cnn,
            [_values(2, 12, 12, 3)],
            [_probabilities(2, 5)],
            "mse",
            "Conv2D, max pooling, Dense",
            "conv",
        ),
        ModelDef(
            "activations",
            B.activations,
            [_values(2, 6)],
            [_probabilities(2, 3)],
            "categorical_crossentropy",
            "Activation elu/selu/sigmoid/hard_sigmoid/tanh/softplus/softsign/relu/exponential, LeakyReLU, "
            "ReLU(max_value), ELU, PReLU side by side on one Dense",
            "activations",
        ),
        ModelDef(
            "merge",
            B.merge,
            [_values(2, 6), _values(2, 6)],
            [_values(2, 2)],
            "mse",
            "two inputs merged by Add, Subtract, Multiply, Average, Maximum, Minimum, Dot(normalize), Concatenate",
            "merge",
        ),
        ModelDef(
            "dropout_inference",
            B.dropout_inference,
            [_values(2, 8)],
            [_values(2, 3)],
            "mse",
            "Dropout, GaussianNoise, AlphaDropout in inference (identities)" + NO_TRAIN_RANDOM.format("each of them"),
            "dense",
            trains=False,
        ),
        ModelDef(
            "time_distributed",
            B.time_distributed,
            [_values(2, 5)],
            [_values(2, 2)],
            "mse",
            "RepeatVector, TimeDistributed(Dense), Permute, Reshape",
            "dense",
        ),
        ModelDef(
            "conv_pools",
            B.conv_pools,
            [_values(2, 12, 12, 3)],
            [_values(2, 4)],
            "mse",
            "ZeroPadding2D, strided and same Conv2D, AveragePooling2D, Cropping2D, UpSampling2D, "
            "GlobalAveragePooling2D, GlobalMaxPooling2D",
            "conv",
        ),
        ModelDef(
            "separable_conv",
            B.separable,
            [_values(2, 10, 10, 3)],
            [_probabilities(2, 4)],
            "mse",
            "DepthwiseConv2D, SeparableConv2D, GlobalAveragePooling2D",
            "conv",
        ),
        ModelDef(
            "conv1d",
            B.conv1d,
            [_values(2, 16, 3)],
            [_values(2, 3)],
            "mse",
            "causal Conv1D, MaxPooling1D, Conv1D (same), AveragePooling1D, UpSampling1D, GlobalAveragePooling1D",
            "conv",
        ),
        ModelDef(
            "dilated_conv",
            B.dilated,
            [_values(2, 12, 12, 3)],
            [_values(2, 3)],
            "mse",
            "dilated Conv2D (same), dilated Conv1D (causal, valid)",
            "conv",
        ),
        ModelDef("conv3d", B.conv3d, [_values(2, 6, 6, 6, 2)], [_values(2, 3)], "mse", "Conv3D, MaxPooling3D", "conv"),
        ModelDef(
            "text_cnn",
            B.text_cnn,
            [{"shape": [2, 12], "dtype": "int32", "dist": "randint", "low": 0, "high": 20}],
            [_probabilities(2, 3)],
            "categorical_crossentropy",
            "Embedding, Conv1D, GlobalMaxPooling1D (a text CNN)",
            "conv",
        ),
        ModelDef(
            "conv_autoencoder",
            B.autoencoder,
            [_values(2, 16, 16, 3)],
            [{"shape": [2, 16, 16, 3], "dist": "uniform", "low": 0.0, "high": 1.0}],
            "mse",
            "strided Conv2D encoder, Conv2DTranspose (same, strided; valid) decoder",
            "conv",
        ),
        ModelDef(
            "batchnorm_train",
            B.batchnorm("batchnorm_train"),
            [_values(2, 6, 6, 2)],
            [_values(2, 2)],
            "mse",
            "BatchNormalization after Conv2D and Dense in training mode (batch statistics)",
            "normalization",
            training_forward=True,
        ),
        ModelDef(
            "batchnorm_inference",
            B.batchnorm("batchnorm_inference"),
            [_values(2, 6, 6, 2)],
            [_values(2, 2)],
            "mse",
            "BatchNormalization after Conv2D and Dense in inference mode (seeded moving mean/variance)",
            "normalization",
        ),
        ModelDef("lstm", B.lstm, [SEQ], [_values(2, 3)], "mse", "two stacked LSTMs", "recurrent"),
        ModelDef(
            "gru", B.gru(True, "gru"), [SEQ], [_values(2, 3)], "mse", "two stacked GRUs, reset_after=True", "recurrent"
        ),
        ModelDef(
            "gru_v1",
            B.gru(False, "gru_v1"),
            [SEQ],
            [_values(2, 3)],
            "mse",
            "two stacked GRUs, reset_after=False (Keras 2's default)",
            "recurrent",
        ),
        ModelDef(
            "simple_rnn", B.simple_rnn, [SEQ], [_values(2, 3)], "mse", "two SimpleRNNs, tanh and relu", "recurrent"
        ),
        ModelDef(
            "bidirectional",
            B.bidirectional,
            [SEQ],
            [_values(2, 3)],
            "mse",
            "Bidirectional LSTM (concat) then Bidirectional GRU (sum)",
            "recurrent",
        ),
        ModelDef(
            "masking_lstm",
            B.masking,
            [dict(SEQ, zero_tail=[0, 2])],
            [_values(2, 3)],
            "mse",
            "Masking (the 2nd sample's last 2 steps are zeros) before an LSTM",
            "recurrent",
        ),
        ModelDef(
            "embedding_lstm",
            B.embedding_lstm,
            [{"shape": [2, 7], "dtype": "int32", "dist": "randint", "low": 1, "high": 15, "zero_tail": [1, 3]}],
            [_probabilities(2, 2)],
            "binary_crossentropy",
            "Embedding(mask_zero=True) (padded token sequences) before an LSTM",
            "recurrent",
        ),
        ModelDef(
            "go_backwards",
            B.go_backwards,
            [SEQ],
            [_values(2, 3)],
            "mse",
            "LSTM and SimpleRNN with go_backwards=True",
            "recurrent",
        ),
        ModelDef(
            "stateful_lstm",
            B.stateful,
            [SEQ],
            [_values(2, 3)],
            "mse",
            "a stateful LSTM (batch fixed at 2; the state starts at zeros)",
            "recurrent",
            batch_fixed=True,
        ),
        ModelDef(
            "lambda_k",
            B.lambda_k,
            [_values(2, 10, 10, 3)],
            [_probabilities(2, 5)],
            "mse",
            "Lambda layers calling K.conv2d, K.relu(alpha), K.pool2d(avg), K.batch_normalization (fixed "
            "mean/variance), K.l2_normalize, K.softmax",
            "lambda",
        ),
        ModelDef(
            "ctc",
            B.ctc,
            [_values(2, B.CTC_STEPS, 4)],
            [{"shape": [2, 1], "dist": "uniform", "low": 0.0, "high": 0.1}],
            "mae",
            "a Lambda calling K.ctc_batch_cost on a softmax over 5 classes + blank, fixed labels and full "
            "lengths (constants: the batch is fixed at 2)",
            "lambda",
            batch_fixed=True,
        ),
        _app(
            "mobilenet",
            "MobileNet alpha 0.25, 32x32; keras_applications 1.0.8 pads conv1 with a ZeroPadding2D "
            "layer (conv1_pad) and convolves 'valid', tf_keras and Keras 3 convolve 'same' (one layer fewer, the "
            "same weights); dropout 0 so that it trains",
        ),
        _app(
            "resnet50",
            "ResNet50 (keras_applications.resnet's, as tf_keras and Keras 3 build it; not Keras 2's "
            "keras.applications.ResNet50, an older architecture), 32x32" + NO_TRAIN_SLOW,
            trains=False,
        ),
        _app("densenet121", "DenseNet121, 32x32" + NO_TRAIN_SLOW, trains=False),
        _app(
            "xception", "Xception, 71x71 (its minimum; cheaper than InceptionV3 at 75x75)" + NO_TRAIN_SLOW, trains=False
        ),
        _app("nasnet_mobile", "NASNetMobile, 32x32" + NO_TRAIN_SLOW, trains=False),
        _app("vgg16", "VGG16, 32x32"),
    ]
)
