# py36-compatible
"""Neural-network functions, randomness and control flow: the Keras 2 backend API's nn part on Keras 3's public API.

Each function is the Keras 3 expression a port would write (keras.ops, keras.activations, keras.random,
keras.Variable), with Keras 2's arguments translated where the two APIs name or lay them out differently; each
translation is said in a comment. Nothing here adjusts a result to look like Keras 2's.

Not defined (no Keras 3 equivalent, so their cases are `unsupported`):
- learning_phase, set_learning_phase, in_train_phase, in_test_phase: Keras 3 has no global learning phase; a
  layer's behaviour is chosen by its call's `training=` argument.
- manual_variable_initialization: Keras 3 has no sessions; a keras.Variable holds its value when it is made.
- ctc_label_dense_to_sparse: it returns a sparse tensor, and Keras 3 has no engine-neutral sparse tensor to make
  (keras.ops has no dense-to-sparse op; keras.ops.ctc_loss takes the dense labels itself).
"""

import keras

# ---- normalization


def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=0.001):
    return keras.ops.batch_normalization(x, mean, var, axis, offset=beta, scale=gamma, epsilon=epsilon)


def normalize_batch_in_training(x, gamma, beta, reduction_axes, epsilon=0.001):
    mean, variance = keras.ops.moments(x, axes=reduction_axes)
    kept = [a for a in range(len(x.shape)) if a not in [r % len(x.shape) for r in reduction_axes]]
    shape = [(x.shape[a] or -1) if a in kept else 1 for a in range(len(x.shape))]
    inv = keras.ops.rsqrt(keras.ops.reshape(variance, shape) + epsilon)
    if gamma is not None:
        inv = inv * keras.ops.reshape(gamma, shape)
    normed = x * inv - keras.ops.reshape(mean, shape) * inv
    if beta is not None:
        normed = normed + keras.ops.reshape(beta, shape)
    return normed, mean, variance


def l2_normalize(x, axis=None):
    return keras.ops.normalize(x, axis=axis, order=2)


def bias_add(x, bias, data_format=None):
    if (data_format or keras.config.image_data_format()) == "channels_first":
        if len(bias.shape) == 1:
            bias = keras.ops.reshape(bias, (bias.shape[0],) + (1,) * (len(x.shape) - 2))
        else:
            bias = keras.ops.reshape(bias, (bias.shape[-1],) + tuple(bias.shape[:-1]))
    return keras.ops.add(x, bias)


# ---- losses: keras.ops takes (target, output) as Keras 2 did


def binary_crossentropy(target, output, from_logits=False):
    return keras.ops.binary_crossentropy(target, output, from_logits=from_logits)


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    return keras.ops.categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    return keras.ops.sparse_categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    return keras.ops.expand_dims(
        keras.ops.ctc_loss(
            y_true,
            keras.ops.log(y_pred),
            keras.ops.squeeze(label_length, -1),
            keras.ops.squeeze(input_length, -1),
            mask_index=y_pred.shape[-1] - 1,
        ),
        1,
    )


def ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1):
    decoded, log_prob = keras.ops.ctc_decode(
        keras.ops.log(y_pred),
        input_length,
        strategy="greedy" if greedy else "beam_search",
        beam_width=beam_width,
        top_paths=top_paths,
        mask_index=y_pred.shape[-1] - 1,
    )
    return [decoded[i] for i in range(top_paths)], log_prob


# ---- activations


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    return keras.activations.relu(x, negative_slope=alpha, max_value=max_value, threshold=threshold)


def elu(x, alpha=1.0):
    return keras.ops.elu(x, alpha=alpha)


def hard_sigmoid(x):
    return keras.ops.clip(0.2 * x + 0.5, 0.0, 1.0)


def sigmoid(x):
    return keras.ops.sigmoid(x)


def softmax(x, axis=-1):
    return keras.ops.softmax(x, axis=axis)


def softplus(x):
    return keras.ops.softplus(x)


def softsign(x):
    return keras.ops.softsign(x)


def tanh(x):
    return keras.ops.tanh(x)


def in_top_k(predictions, targets, k):
    return keras.ops.in_top_k(targets, predictions, k)


# ---- convolutions: kernels are laid out as Keras 2's; data_format None is image_data_format()


def conv1d(x, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    if padding == "causal":
        left = dilation_rate * (kernel.shape[0] - 1)
        if (data_format or keras.config.image_data_format()) == "channels_last":
            x = keras.ops.pad(x, [[0, 0], [left, 0], [0, 0]])
        else:
            x = keras.ops.pad(x, [[0, 0], [0, 0], [left, 0]])
        padding = "valid"
    return keras.ops.conv(
        x, kernel, strides=strides, padding=padding, data_format=data_format, dilation_rate=dilation_rate
    )


def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    return keras.ops.conv(
        x, kernel, strides=strides, padding=padding, data_format=data_format, dilation_rate=dilation_rate
    )


def conv3d(x, kernel, strides=(1, 1, 1), padding="valid", data_format=None, dilation_rate=(1, 1, 1)):
    return keras.ops.conv(
        x, kernel, strides=strides, padding=padding, data_format=data_format, dilation_rate=dilation_rate
    )


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


def _output_padding(x, kernel, output_shape, strides, padding, data_format, dilation_rate):
    """Keras 2 names the transposed convolution's output shape; Keras 3 takes `output_padding`, the extra rows at
    the end beyond its base length. Returns None where Keras 3's default length is the one asked for (or the input's
    length is not known before it runs), else each dim's padding by Keras 3's own length rule
    (keras/src/backend/common/backend_utils.py, _get_output_shape_given_tf_padding)."""
    n = len(x.shape) - 2
    data_format = data_format or keras.config.image_data_format()
    spatial_in = x.shape[1:-1] if data_format == "channels_last" else x.shape[2:]
    spatial_out = output_shape[1:-1] if data_format == "channels_last" else output_shape[2:]
    strides, dilation_rate = _tuple(strides, n), _tuple(dilation_rate, n)
    default, padded = [], []
    for size, k, s, d, target in zip(spatial_in, kernel.shape[:n], strides, dilation_rate, spatial_out):
        if size is None:
            return None
        k = (k - 1) * d + 1
        if padding == "valid":
            default.append((size - 1) * s + max(k, s))
            padded.append(target - ((size - 1) * s + k))
        else:
            default.append(size * s)
            padded.append(target - ((size - 1) * s + k % 2))
    if list(default) == list(spatial_out):
        return None
    return tuple(padded)


def conv2d_transpose(x, kernel, output_shape, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    return keras.ops.conv_transpose(
        x,
        kernel,
        strides=strides,
        padding=padding,
        output_padding=_output_padding(x, kernel, output_shape, strides, padding, data_format, dilation_rate),
        data_format=data_format,
        dilation_rate=dilation_rate,
    )


def conv3d_transpose(x, kernel, output_shape, strides=(1, 1, 1), padding="valid", data_format=None):
    return keras.ops.conv_transpose(
        x,
        kernel,
        strides=strides,
        padding=padding,
        output_padding=_output_padding(x, kernel, output_shape, strides, padding, data_format, 1),
        data_format=data_format,
    )


def depthwise_conv2d(x, depthwise_kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    return keras.ops.depthwise_conv(
        x, depthwise_kernel, strides=strides, padding=padding, data_format=data_format, dilation_rate=dilation_rate
    )


def separable_conv1d(
    x, depthwise_kernel, pointwise_kernel, strides=1, padding="valid", data_format=None, dilation_rate=1
):
    return keras.ops.separable_conv(
        x,
        depthwise_kernel,
        pointwise_kernel,
        strides=strides,
        padding=padding,
        data_format=data_format,
        dilation_rate=dilation_rate,
    )


def separable_conv2d(
    x, depthwise_kernel, pointwise_kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)
):
    return keras.ops.separable_conv(
        x,
        depthwise_kernel,
        pointwise_kernel,
        strides=strides,
        padding=padding,
        data_format=data_format,
        dilation_rate=dilation_rate,
    )


def _local_conv(inputs, kernel, kernel_size, strides, output_shape, data_format):
    """Keras 3 removed the LocallyConnected layers and has no local_conv op; the computation is keras.ops only, as
    Keras 2 writes it: each output position's input patch flattened, then a batched matmul with that position's
    kernel (kernel: (positions, patch size * channels, filters))."""
    data_format = data_format or keras.config.image_data_format()
    kernel_size, strides = _tuple(kernel_size, len(output_shape)), _tuple(strides, len(output_shape))
    first = 1 if data_format == "channels_last" else 2  # the first spatial axis
    patches = []
    for position in _positions(output_shape):
        slices = [slice(None)] * first
        for start, size, stride in zip(position, kernel_size, strides):
            slices.append(slice(start * stride, start * stride + size))
        # flattened as Keras 2 does: (window..., channels) channels_last, (channels, window...) channels_first
        patches.append(keras.ops.reshape(inputs[tuple(slices)], (1, -1, kernel.shape[1])))
    x = keras.ops.concatenate(patches, axis=0)  # (positions, batch, patch size * channels)
    out = keras.ops.matmul(x, kernel)  # (positions, batch, filters)
    out = keras.ops.reshape(out, tuple(output_shape) + (-1, kernel.shape[-1]))
    out = keras.ops.moveaxis(out, len(output_shape), 0)  # (batch, positions..., filters)
    if data_format == "channels_first":
        out = keras.ops.moveaxis(out, -1, 1)
    return out


def _positions(output_shape):
    if not output_shape:
        return [()]
    return [(i,) + rest for i in range(output_shape[0]) for rest in _positions(output_shape[1:])]


def local_conv1d(inputs, kernel, kernel_size, strides, data_format=None):
    return _local_conv(inputs, kernel, kernel_size, strides, (kernel.shape[0],), data_format)


def local_conv2d(inputs, kernel, kernel_size, strides, output_shape, data_format=None):
    return _local_conv(inputs, kernel, kernel_size, strides, output_shape, data_format)


# ---- pooling, resizing, padding


def pool2d(x, pool_size, strides=(1, 1), padding="valid", data_format=None, pool_mode="max"):
    if pool_mode == "avg":
        return keras.ops.average_pool(x, pool_size, strides=strides, padding=padding, data_format=data_format)
    return keras.ops.max_pool(x, pool_size, strides=strides, padding=padding, data_format=data_format)


def pool3d(x, pool_size, strides=(1, 1, 1), padding="valid", data_format=None, pool_mode="max"):
    if pool_mode == "avg":
        return keras.ops.average_pool(x, pool_size, strides=strides, padding=padding, data_format=data_format)
    return keras.ops.max_pool(x, pool_size, strides=strides, padding=padding, data_format=data_format)


def resize_images(x, height_factor, width_factor, data_format, interpolation="nearest"):
    return keras.layers.UpSampling2D(
        size=(height_factor, width_factor), data_format=data_format, interpolation=interpolation
    )(x)


def resize_volumes(x, depth_factor, height_factor, width_factor, data_format):
    first = 1 if data_format == "channels_last" else 2
    return keras.ops.repeat(
        keras.ops.repeat(keras.ops.repeat(x, depth_factor, axis=first), height_factor, axis=first + 1),
        width_factor,
        axis=first + 2,
    )


def temporal_padding(x, padding=(1, 1)):
    return keras.ops.pad(x, [[0, 0], list(padding), [0, 0]])


def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None):
    if (data_format or keras.config.image_data_format()) == "channels_first":
        return keras.ops.pad(x, [[0, 0], [0, 0], list(padding[0]), list(padding[1])])
    return keras.ops.pad(x, [[0, 0], list(padding[0]), list(padding[1]), [0, 0]])


def spatial_3d_padding(x, padding=((1, 1), (1, 1), (1, 1)), data_format=None):
    if (data_format or keras.config.image_data_format()) == "channels_first":
        return keras.ops.pad(x, [[0, 0], [0, 0], list(padding[0]), list(padding[1]), list(padding[2])])
    return keras.ops.pad(x, [[0, 0], list(padding[0]), list(padding[1]), list(padding[2]), [0, 0]])


# ---- randomness: keras.random with Keras 2's seed (an int seed draws the same values each call; None draws new
# values from Keras 3's global SeedGenerator)


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return keras.random.normal(shape, mean, stddev, dtype=dtype, seed=seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    return keras.random.uniform(shape, minval, maxval, dtype=dtype, seed=seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return keras.random.truncated_normal(shape, mean, stddev, dtype=dtype, seed=seed)


def random_binomial(shape, p=0.0, dtype=None, seed=None):
    return keras.random.binomial(shape, 1, p, dtype=dtype, seed=seed)


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None):
    return keras.Variable(keras.initializers.RandomNormal(mean, scale, seed=seed), shape=shape, dtype=dtype, name=name)


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None):
    return keras.Variable(keras.initializers.RandomUniform(low, high, seed=seed), shape=shape, dtype=dtype, name=name)


def dropout(x, level, noise_shape=None, seed=None):
    return keras.random.dropout(x, level, noise_shape=noise_shape, seed=seed)


# ---- control flow


def map_fn(fn, elems, name=None, dtype=None):
    return keras.ops.map(fn, elems)


def foldl(fn, elems, initializer=None, name=None):
    if initializer is None:
        initializer, elems = elems[0], elems[1:]
    return keras.ops.scan(lambda acc, item: (fn(acc, item), None), initializer, elems)[0]


def foldr(fn, elems, initializer=None, name=None):
    if initializer is None:
        initializer, elems = elems[-1], elems[:-1]
    return keras.ops.scan(lambda acc, item: (fn(acc, item), None), initializer, elems, reverse=True)[0]


def switch(condition, then_expression, else_expression):
    return keras.ops.where(condition, then_expression, else_expression)


def rnn(
    step_function,
    inputs,
    initial_states,
    go_backwards=False,
    mask=None,
    constants=None,
    unroll=False,
    input_length=None,
):
    class Cell(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.state_size = [state.shape[-1] for state in initial_states]

        def call(self, step_inputs, states):
            output, new_states = step_function(step_inputs, list(states) + list(constants or []))
            return output, list(new_states)

    outputs_and_states = keras.layers.RNN(
        Cell(), return_sequences=True, return_state=True, go_backwards=go_backwards, unroll=unroll
    )(inputs, initial_state=list(initial_states), mask=mask)
    outputs = outputs_and_states[0]
    return outputs[:, -1], outputs, list(outputs_and_states[1:])


def deconv2d(
    x, kernel, output_shape, strides=(1, 1), border_mode="valid", dim_ordering="tf", image_shape=None, filter_shape=None
):
    return keras.ops.conv_transpose(
        x,
        kernel,
        strides=strides,
        padding=border_mode,
        data_format="channels_first" if dim_ordering == "th" else "channels_last",
    )
