# py36-compatible
"""The models of the zoo written layer by layer (dense, convolutions, recurrent, Lambda layers calling K.*), for
whichever Keras the engine has (see zoo.py for what `api` holds). Every layer is named: layers are matched across
engines by name. Where an engine's Keras cannot build a model, its builder raises Unsupported with the reason,
checked against that engine's source."""

import numpy as np


class Unsupported(Exception):
    """This engine's Keras cannot build the model; the message says why."""


def model(api, inputs, outputs, name):
    return api.keras.models.Model(inputs, outputs, name=name)


def no_masked_rnn(api, why):
    # plaidml's K.rnn (plaidml/keras/backend.py: rnn) raises NotImplementedError('rnn is not implemented with mask
    # support') for any mask
    if api.engine == "plaidml":
        raise Unsupported("PlaidML's K.rnn raises NotImplementedError for a mask ({})".format(why))


# ---- dense, activations, merges --------------------------------------------------------------------------------------


def mlp(api):
    L = api.layers
    x = L.Input((8,), name="x")
    h = L.Dense(16, activation="relu", name="dense_1")(x)
    y = L.Dense(4, activation="softmax", name="dense_2")(h)
    return model(api, x, y, "mlp")


ACTIVATIONS = ["elu", "selu", "sigmoid", "hard_sigmoid", "tanh", "softplus", "softsign", "relu", "exponential"]


def activations(api):
    # one branch per activation from one Dense, so that each sees the same inputs (a chain would squash them)
    L = api.layers
    x = L.Input((6,), name="x")
    h = L.Dense(4, name="dense_in")(x)
    branches = [L.Activation(name, name="act_" + name)(h) for name in ACTIVATIONS]
    branches.append(L.LeakyReLU(name="leaky_relu")(h))  # default slope 0.3 on every Keras
    branches.append(L.ReLU(max_value=6.0, name="relu6")(h))
    branches.append(L.ELU(alpha=0.5, name="elu_layer")(h))
    branches.append(L.PReLU(name="prelu")(h))
    c = L.Concatenate(name="concat")(branches)
    y = L.Dense(3, activation="softmax", name="dense_out")(c)
    return model(api, x, y, "activations")


def merge(api):
    L = api.layers
    a = L.Input((6,), name="a")
    b = L.Input((6,), name="b")
    ha = L.Dense(5, activation="tanh", name="dense_a")(a)
    hb = L.Dense(5, activation="tanh", name="dense_b")(b)
    merged = [
        L.Add(name="add")([ha, hb]),
        L.Subtract(name="subtract")([ha, hb]),
        L.Multiply(name="multiply")([ha, hb]),
        L.Average(name="average")([ha, hb]),
        L.Maximum(name="maximum")([ha, hb]),
        L.Minimum(name="minimum")([ha, hb]),
        L.Dot(axes=1, normalize=True, name="dot")([ha, hb]),
    ]
    c = L.Concatenate(axis=-1, name="concat")(merged)
    y = L.Dense(2, name="dense_out")(c)
    return model(api, [a, b], y, "merge")


def dropout_inference(api):
    if api.engine == "cntk":
        # Keras 2.3.1's cntk_backend.random_normal/random_uniform raise ValueError('CNTK Backend: randomness op with
        # dynamic shape is not supported now...') for a None dimension: GaussianNoise and AlphaDropout draw with
        # K.shape(inputs), whose batch dimension is None
        raise Unsupported("CNTK's K.random_normal/K.random_uniform refuse a dynamic (None) batch dimension")
    if api.engine == "mxnet":
        # keras-mxnet's mxnet_backend.random_normal/random_uniform turn a None dimension into 0 (MXNet's "unknown"),
        # and binding the symbol then fails (InferShape cannot decide the shape of GaussianNoise's draw)
        raise Unsupported("keras-mxnet's K.random_normal/K.random_uniform cannot draw with a None (batch) dimension")
    L = api.layers
    x = L.Input((8,), name="x")
    h = L.Dense(12, activation="relu", name="dense_1")(x)
    h = L.Dropout(0.5, name="dropout")(h)
    h = L.GaussianNoise(0.3, name="noise")(h)
    h = L.AlphaDropout(0.2, name="alpha_dropout")(h)
    y = L.Dense(3, name="dense_2")(h)
    return model(api, x, y, "dropout_inference")


def time_distributed(api):
    L = api.layers
    x = L.Input((5,), name="x")
    h = L.RepeatVector(4, name="repeat")(x)  # (4, 5)
    h = L.TimeDistributed(L.Dense(3, activation="tanh", name="dense"), name="td_dense")(h)  # (4, 3)
    h = L.Permute((2, 1), name="permute")(h)  # (3, 4)
    h = L.Reshape((12,), name="reshape")(h)
    y = L.Dense(2, name="dense_out")(h)
    return model(api, x, y, "time_distributed")


# ---- convolutions ---------------------------------------------------------------------------------------------------


def small_cnn(api):
    L = api.layers
    x = L.Input((12, 12, 3), name="image")
    h = L.Conv2D(8, 3, activation="relu", name="conv")(x)
    h = L.MaxPooling2D(2, name="pool")(h)
    h = L.Flatten(name="flatten")(h)
    y = L.Dense(5, activation="softmax", name="dense")(h)
    return model(api, x, y, "small_cnn")


def conv_pools(api):
    L = api.layers
    x = L.Input((12, 12, 3), name="image")
    h = L.ZeroPadding2D(1, name="pad")(x)  # 14
    h = L.Conv2D(6, 3, strides=2, padding="same", activation="relu", name="conv_stride")(h)  # 7
    h = L.AveragePooling2D(2, strides=1, name="avg_pool")(h)  # 6
    h = L.Conv2D(6, 3, padding="same", name="conv_same")(h)  # 6
    h = L.Cropping2D(1, name="crop")(h)  # 4
    h = L.UpSampling2D(2, name="upsample")(h)  # 8
    g1 = L.GlobalAveragePooling2D(name="gap")(h)
    g2 = L.GlobalMaxPooling2D(name="gmp")(h)
    c = L.Concatenate(name="concat")([g1, g2])
    y = L.Dense(4, name="dense")(c)
    return model(api, x, y, "conv_pools")


def separable(api):
    L = api.layers
    x = L.Input((10, 10, 3), name="image")
    # depth_multiplier 1: keras-mxnet's depthwise_conv2d raises ValueError for any other
    h = L.DepthwiseConv2D(3, depth_multiplier=1, activation="relu", name="depthwise")(x)  # 8x8x3
    h = L.SeparableConv2D(8, 3, padding="same", activation="relu", name="separable")(h)
    h = L.GlobalAveragePooling2D(name="gap")(h)
    y = L.Dense(4, activation="softmax", name="dense")(h)
    return model(api, x, y, "separable_conv")


def conv1d(api):
    L = api.layers
    x = L.Input((16, 3), name="signal")
    h = L.Conv1D(6, 3, padding="causal", activation="relu", name="conv_causal")(x)
    h = L.MaxPooling1D(2, name="max_pool")(h)  # 8
    # no SeparableConv1D: keras-mxnet's separable_conv1d raises NotImplementedError, PlaidML's backend has none
    h = L.Conv1D(6, 3, padding="same", name="conv_same")(h)
    h = L.AveragePooling1D(2, name="avg_pool")(h)  # 4
    h = L.UpSampling1D(2, name="upsample")(h)  # 8
    h = L.GlobalAveragePooling1D(name="gap")(h)
    y = L.Dense(3, name="dense")(h)
    return model(api, x, y, "conv1d")


def dilated(api):
    if api.engine == "cntk":
        # Keras 2.3.1's cntk_backend.conv1d/conv2d raise ValueError('Dilated convolution on CPU is not supported by
        # CNTK backend...') for a dilation_rate other than 1 (kbtool runs CNTK on the CPU)
        raise Unsupported("CNTK's K.conv1d/K.conv2d refuse a dilation_rate other than 1 on the CPU")
    L = api.layers
    x = L.Input((12, 12, 3), name="image")
    h = L.Conv2D(4, 3, dilation_rate=2, padding="same", activation="relu", name="conv2d_dilated")(x)
    h = L.Reshape((12, 48), name="rows")(h)
    h = L.Conv1D(4, 3, dilation_rate=2, padding="causal", name="conv1d_dilated_causal")(h)
    h = L.Conv1D(4, 3, dilation_rate=3, padding="valid", name="conv1d_dilated_valid")(h)
    h = L.Flatten(name="flatten")(h)
    y = L.Dense(3, name="dense")(h)
    return model(api, x, y, "dilated_conv")


def conv3d(api):
    L = api.layers
    x = L.Input((6, 6, 6, 2), name="volume")
    h = L.Conv3D(3, 2, activation="relu", name="conv3d")(x)  # 5
    h = L.MaxPooling3D(2, name="max_pool")(h)  # 2
    h = L.Flatten(name="flatten")(h)
    y = L.Dense(3, name="dense")(h)
    return model(api, x, y, "conv3d")


def text_cnn(api):
    L = api.layers
    x = L.Input((12,), dtype="int32", name="tokens")
    h = L.Embedding(20, 8, name="embedding")(x)
    h = L.Conv1D(8, 3, activation="relu", name="conv")(h)
    h = L.GlobalMaxPooling1D(name="gmp")(h)
    y = L.Dense(3, activation="softmax", name="dense")(h)
    return model(api, x, y, "text_cnn")


def autoencoder(api):
    L = api.layers
    x = L.Input((16, 16, 3), name="image")
    h = L.Conv2D(4, 3, strides=2, padding="same", activation="relu", name="encode")(x)  # 8
    h = L.Conv2DTranspose(4, 3, strides=2, padding="same", activation="relu", name="decode_same")(h)  # 16
    h = L.Conv2DTranspose(3, 3, padding="valid", name="decode_valid")(h)  # 18
    y = L.Conv2D(3, 3, activation="sigmoid", name="out")(h)  # 16
    return model(api, x, y, "conv_autoencoder")


def batchnorm(name):
    def build(api):
        L = api.layers
        x = L.Input((6, 6, 2), name="image")
        h = L.Conv2D(4, 3, name="conv")(x)
        h = L.BatchNormalization(name="bn_conv")(h)
        h = L.Activation("relu", name="relu")(h)
        h = L.Flatten(name="flatten")(h)
        h = L.Dense(5, name="dense")(h)
        h = L.BatchNormalization(name="bn_dense")(h)
        y = L.Dense(2, name="dense_out")(h)
        return model(api, x, y, name)

    return build


# ---- recurrent ------------------------------------------------------------------------------------------------------

STEPS, FEATURES = 5, 4


# the gates' activation stated: Keras 2.3.0 changed LSTM's and GRU's default recurrent_activation from
# "hard_sigmoid" to "sigmoid" (Keras 2.3.1, tf_keras and Keras 3 default to "sigmoid"; the Keras 2.2.4 of PlaidML and
# keras-mxnet 2.2.4.3 to "hard_sigmoid": keras/layers/recurrent.py LSTM.__init__/GRU.__init__), so a default would
# build another function on those engines
GATES = "sigmoid"


def seq_input(api, name="sequence"):
    return api.layers.Input((STEPS, FEATURES), name=name)


def lstm(api):
    L = api.layers
    x = seq_input(api)
    h = L.LSTM(6, recurrent_activation=GATES, return_sequences=True, name="lstm_1")(x)
    h = L.LSTM(5, recurrent_activation=GATES, name="lstm_2")(h)
    y = L.Dense(3, name="dense")(h)
    return model(api, x, y, "lstm")


def gru(reset_after, name):
    # reset_after stated: Keras 2's default is False, tf_keras's and Keras 3's True (the bias shape differs)
    def build(api):
        L = api.layers
        x = seq_input(api)
        h = L.GRU(6, recurrent_activation=GATES, reset_after=reset_after, return_sequences=True, name="gru_1")(x)
        h = L.GRU(5, recurrent_activation=GATES, reset_after=reset_after, name="gru_2")(h)
        y = L.Dense(3, name="dense")(h)
        return model(api, x, y, name)

    return build


def simple_rnn(api):
    L = api.layers
    x = seq_input(api)
    h = L.SimpleRNN(6, return_sequences=True, name="rnn_1")(x)
    h = L.SimpleRNN(5, activation="relu", name="rnn_2")(h)
    y = L.Dense(3, name="dense")(h)
    return model(api, x, y, "simple_rnn")


def bidirectional(api):
    L = api.layers
    x = seq_input(api)
    h = L.Bidirectional(
        L.LSTM(4, recurrent_activation=GATES, return_sequences=True, name="lstm"), merge_mode="concat", name="bi_lstm"
    )(x)
    h = L.Bidirectional(
        L.GRU(3, recurrent_activation=GATES, reset_after=True, name="gru"), merge_mode="sum", name="bi_gru"
    )(h)
    y = L.Dense(3, name="dense")(h)
    return model(api, x, y, "bidirectional")


def masking(api):
    no_masked_rnn(api, "Masking before an LSTM")
    L = api.layers
    x = seq_input(api)
    h = L.Masking(mask_value=0.0, name="masking")(x)
    h = L.LSTM(6, recurrent_activation=GATES, name="lstm")(h)
    y = L.Dense(3, name="dense")(h)
    return model(api, x, y, "masking_lstm")


def embedding_lstm(api):
    no_masked_rnn(api, "Embedding(mask_zero=True) before an LSTM")
    L = api.layers
    x = L.Input((7,), dtype="int32", name="tokens")
    h = L.Embedding(15, 6, mask_zero=True, name="embedding")(x)
    h = L.LSTM(5, recurrent_activation=GATES, name="lstm")(h)
    y = L.Dense(2, activation="sigmoid", name="dense")(h)
    return model(api, x, y, "embedding_lstm")


def go_backwards(api):
    L = api.layers
    x = seq_input(api)
    h = L.LSTM(5, recurrent_activation=GATES, go_backwards=True, return_sequences=True, name="lstm_backwards")(x)
    h = L.SimpleRNN(4, go_backwards=True, name="rnn_backwards")(h)
    y = L.Dense(3, name="dense")(h)
    return model(api, x, y, "go_backwards")


def stateful(api):
    L = api.layers
    x = L.Input(batch_shape=(2, STEPS, FEATURES), name="sequence")
    h = L.LSTM(6, recurrent_activation=GATES, stateful=True, return_state=False, name="lstm_stateful")(x)
    y = L.Dense(3, name="dense")(h)
    return model(api, x, y, "stateful_lstm")


# ---- Lambda layers calling K.* directly -----------------------------------------------------------------------------


def fixed(shape, key):
    # constants of a Lambda layer: the same on every engine, from a generator of their own
    return np.random.RandomState(key).normal(0.0, 0.5, shape).astype("float32")


def lambda_k(api):
    L, K = api.layers, api.K
    kernel = fixed((3, 3, 3, 4), 1)
    mean, var = fixed((4,), 2), np.abs(fixed((4,), 3)) + 0.5
    beta, gamma = fixed((4,), 4), np.abs(fixed((4,), 5)) + 0.5
    x = L.Input((10, 10, 3), name="image")
    h = L.Lambda(lambda t: K.conv2d(t, K.constant(kernel), padding="valid"), output_shape=(8, 8, 4), name="k_conv2d")(x)
    h = L.Lambda(lambda t: K.relu(t, alpha=0.1), output_shape=(8, 8, 4), name="k_relu")(h)
    pool = lambda t: K.pool2d(t, (2, 2), strides=(2, 2), pool_mode="avg")  # noqa: E731
    h = L.Lambda(pool, output_shape=(4, 4, 4), name="k_pool2d")(h)
    norm = lambda t: K.batch_normalization(  # noqa: E731
        t, K.constant(mean), K.constant(var), K.constant(beta), K.constant(gamma), epsilon=1e-3
    )
    h = L.Lambda(norm, output_shape=(4, 4, 4), name="k_batch_normalization")(h)
    h = L.Lambda(lambda t: K.l2_normalize(t, axis=-1), output_shape=(4, 4, 4), name="k_l2_normalize")(h)
    h = L.Flatten(name="flatten")(h)
    h = L.Dense(5, name="dense")(h)
    y = L.Lambda(lambda t: K.softmax(t), output_shape=(5,), name="k_softmax")(h)
    return model(api, x, y, "lambda_k")


CTC_STEPS, CTC_CLASSES, CTC_LABELS = 8, 5, [[1, 2, 3], [4, 1, 4]]  # blank: the last class (index 5)


def ctc(api):
    if api.engine in ("cntk", "plaidml", "mxnet"):
        # Keras 2.3.1's cntk_backend.ctc_batch_cost raises NotImplementedError; plaidml/keras/backend.py's
        # ctc_batch_cost calls _report_unimplemented, which raises it too; keras-mxnet's mxnet_backend.ctc_batch_cost
        # raises NotImplementedError("MXNet Backend: CTC is not supported yet.")
        raise Unsupported("{}'s K.ctc_batch_cost raises NotImplementedError".format(api.engine))
    L, K = api.layers, api.K
    labels = np.asarray(CTC_LABELS, dtype="int32")
    input_length = np.full((2, 1), CTC_STEPS, dtype="int32")
    label_length = np.full((2, 1), labels.shape[1], dtype="int32")

    def cost(y_pred):
        return K.ctc_batch_cost(
            K.constant(labels, dtype="int32"),
            y_pred,
            K.constant(input_length, dtype="int32"),
            K.constant(label_length, dtype="int32"),
        )

    x = L.Input((CTC_STEPS, 4), name="features")
    h = L.Dense(8, activation="relu", name="dense")(x)
    p = L.Dense(CTC_CLASSES + 1, activation="softmax", name="softmax")(h)
    y = L.Lambda(cost, output_shape=(1,), name="k_ctc_batch_cost")(p)
    return model(api, x, y, "ctc")
