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
from keras import ops

from . import core

_FORMATS = ("channels_first", "channels_last")


def _data_format(data_format):
    # Keras 2: None means the configured image_data_format; any other word is a ValueError
    if data_format is None:
        data_format = keras.config.image_data_format()
    if data_format not in _FORMATS:
        raise ValueError("Unknown data_format: " + str(data_format))
    return data_format


def _padding(padding):
    if padding not in ("same", "valid"):
        raise ValueError("Invalid padding: " + str(padding))
    return padding


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


# ---- normalization


def batch_normalization(x, mean, var, beta, gamma, axis=-1, epsilon=1e-3):
    # Keras 3 orders the arguments (x, mean, variance, axis, offset, scale, epsilon)
    return ops.batch_normalization(x, mean, var, axis, offset=beta, scale=gamma, epsilon=epsilon)


def normalize_batch_in_training(x, gamma, beta, reduction_axes, epsilon=1e-3):
    # Keras 3 has moments + batch_normalization; Keras 2's (normed, mean, var) is built from them. The statistics
    # are normalized against with the reduced axes kept (keepdims) and gamma/beta broadcast over the kept axes.
    reduction_axes = list(reduction_axes)
    mean, var = ops.moments(x, reduction_axes)
    rank = len(x.shape)
    kept = [axis for axis in range(rank) if axis not in [a % rank for a in reduction_axes]]
    if len(kept) == 1:
        normed = ops.batch_normalization(x, mean, var, kept[0], offset=beta, scale=gamma, epsilon=epsilon)
    else:
        shape = [(x.shape[axis] or -1) if axis in kept else 1 for axis in range(rank)]

        def broadcast(value):
            return None if value is None else ops.reshape(value, shape)

        inv = ops.rsqrt(broadcast(var) + epsilon)
        if gamma is not None:
            inv = inv * broadcast(gamma)
        normed = x * inv - broadcast(mean) * inv
        if beta is not None:
            normed = normed + broadcast(beta)
    return normed, mean, var


def l2_normalize(x, axis=None):
    return ops.normalize(x, axis=axis, order=2)


def bias_add(x, bias, data_format=None):
    # Keras 3 has no bias_add op (its layers add the bias with a broadcasting add): Keras 2's rules as reshapes
    data_format = _data_format(data_format)
    rank, bias_rank = len(x.shape), len(bias.shape)
    if bias_rank != 1 and bias_rank != rank - 1:
        raise ValueError("Unexpected bias dimensions %d, expect to be 1 or %d dimensions" % (bias_rank, rank - 1))
    if data_format == "channels_first":
        if bias_rank == 1:
            return x + ops.reshape(bias, (1, bias.shape[0]) + (1,) * (rank - 2))
        return x + ops.reshape(bias, (1, bias.shape[-1]) + tuple(bias.shape[:-1]))
    return x + bias


# ---- losses: keras.ops takes (target, output) as Keras 2 did


def binary_crossentropy(target, output, from_logits=False):
    return ops.binary_crossentropy(target, output, from_logits=from_logits)


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    return ops.categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    return ops.sparse_categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def ctc_batch_cost(y_true, y_pred, input_length, label_length):
    # Keras 2 takes softmax outputs, (samples, 1) lengths, the blank as the last class, and returns (samples, 1);
    # keras.ops.ctc_loss takes logits (log-probabilities are logits), (samples,) lengths and the blank's index
    # (mask_index), and returns (samples,)
    blank = y_pred.shape[-1] - 1
    log_probs = ops.log(y_pred + keras.config.epsilon())
    loss = ops.ctc_loss(
        y_true,
        log_probs,
        ops.squeeze(label_length, axis=-1),
        ops.squeeze(input_length, axis=-1),
        mask_index=blank,
    )
    return ops.expand_dims(loss, 1)


def ctc_decode(y_pred, input_length, greedy=True, beam_width=100, top_paths=1):
    # Keras 2 takes softmax outputs with the blank last and returns ([top_paths tensors (samples, steps)], log
    # probabilities); keras.ops.ctc_decode takes logits, a strategy word and the blank's index, and stacks the paths
    # in one (top_paths, samples, steps) tensor
    blank = y_pred.shape[-1] - 1
    decoded, log_prob = ops.ctc_decode(
        ops.log(y_pred + keras.config.epsilon()),
        input_length,
        strategy="greedy" if greedy else "beam_search",
        beam_width=beam_width,
        top_paths=top_paths,
        mask_index=blank,
    )
    return [decoded[i] for i in range(decoded.shape[0])], log_prob


# ---- activations


def relu(x, alpha=0.0, max_value=None, threshold=0.0):
    # keras.ops.relu has no options; keras.activations.relu has Keras 2's (alpha is named negative_slope)
    return keras.activations.relu(x, negative_slope=alpha, max_value=max_value, threshold=threshold)


def elu(x, alpha=1.0):
    return ops.elu(x, alpha=alpha)


def hard_sigmoid(x):
    # K's slope 0.2, as the map writes it: keras.ops.hard_sigmoid is relu6(x + 3) / 6, slope 1/6
    return ops.clip(0.2 * x + 0.5, 0.0, 1.0)


def sigmoid(x):
    return ops.sigmoid(x)


def softmax(x, axis=-1):
    return ops.softmax(x, axis=axis)


def softplus(x):
    return ops.softplus(x)


def softsign(x):
    return ops.softsign(x)


def tanh(x):
    return ops.tanh(x)


def in_top_k(predictions, targets, k):
    # Keras 3 orders the arguments (targets, predictions, k)
    return ops.in_top_k(targets, predictions, k)


# ---- convolutions: kernels are laid out as Keras 2's; data_format None is image_data_format()


def _conv1d_causal(x, kernel, dilation_rate, data_format):
    # Keras 3's conv has no "causal" padding: Keras 3's Conv1D pads the steps' start by (k - 1) * dilation
    left = (kernel.shape[0] - 1) * dilation_rate
    pad = [[0, 0], [left, 0], [0, 0]] if data_format == "channels_last" else [[0, 0], [0, 0], [left, 0]]
    return ops.pad(x, pad)


def conv1d(x, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
    data_format = _data_format(data_format)
    if padding == "causal":
        x = _conv1d_causal(x, kernel, _tuple(dilation_rate, 1)[0], data_format)
        padding = "valid"
    return ops.conv(x, kernel, strides, _padding(padding), data_format, dilation_rate)


def conv2d(x, kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    return ops.conv(x, kernel, strides, _padding(padding), _data_format(data_format), dilation_rate)


def conv3d(x, kernel, strides=(1, 1, 1), padding="valid", data_format=None, dilation_rate=(1, 1, 1)):
    return ops.conv(x, kernel, strides, _padding(padding), _data_format(data_format), dilation_rate)


def _output_padding(x, kernel, output_shape, strides, padding, data_format, dilation_rate):
    """Keras 2 names the transposed convolution's output shape; Keras 3 takes `output_padding`, the extra rows at
    the end beyond its base length. Returns None where Keras 3's default length is the one asked for (or the input's
    length is not known before it runs), else each dim's padding by Keras 3's own length rule
    (keras/src/backend/common/backend_utils.py, _get_output_shape_given_tf_padding)."""
    n = len(x.shape) - 2
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
    data_format, padding = _data_format(data_format), _padding(padding)
    output_padding = _output_padding(x, kernel, output_shape, strides, padding, data_format, dilation_rate)
    return ops.conv_transpose(
        x,
        kernel,
        strides=strides,
        padding=padding,
        output_padding=output_padding,
        data_format=data_format,
        dilation_rate=dilation_rate,
    )


def conv3d_transpose(x, kernel, output_shape, strides=(1, 1, 1), padding="valid", data_format=None):
    data_format, padding = _data_format(data_format), _padding(padding)
    output_padding = _output_padding(x, kernel, output_shape, strides, padding, data_format, 1)
    return ops.conv_transpose(
        x, kernel, strides=strides, padding=padding, output_padding=output_padding, data_format=data_format
    )


def depthwise_conv2d(x, depthwise_kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)):
    return ops.depthwise_conv(x, depthwise_kernel, strides, _padding(padding), _data_format(data_format), dilation_rate)


def separable_conv1d(
    x, depthwise_kernel, pointwise_kernel, strides=1, padding="valid", data_format=None, dilation_rate=1
):
    data_format = _data_format(data_format)
    return ops.separable_conv(
        x, depthwise_kernel, pointwise_kernel, strides, _padding(padding), data_format, dilation_rate
    )


def separable_conv2d(
    x, depthwise_kernel, pointwise_kernel, strides=(1, 1), padding="valid", data_format=None, dilation_rate=(1, 1)
):
    data_format = _data_format(data_format)
    return ops.separable_conv(
        x, depthwise_kernel, pointwise_kernel, strides, _padding(padding), data_format, dilation_rate
    )


def _local_conv(inputs, kernel, kernel_size, strides, output_shape, data_format):
    """Keras 3 removed the LocallyConnected layers and has no local_conv op; the computation is keras.ops only, as
    Keras 2 writes it: each output position's input patch flattened, then a batched matmul with that position's
    kernel (kernel: (positions, patch size * channels, filters))."""
    data_format = _data_format(data_format)
    first = 1 if data_format == "channels_last" else 2  # the first spatial axis
    patches = []
    for position in _positions(output_shape):
        slices = [slice(None)] * first
        for start, size, stride in zip(position, kernel_size, strides):
            slices.append(slice(start * stride, start * stride + size))
        # flattened as Keras 2 does: (window..., channels) channels_last, (channels, window...) channels_first
        patches.append(ops.reshape(inputs[tuple(slices)], (1, -1, kernel.shape[1])))
    x = ops.concatenate(patches, axis=0)  # (positions, batch, patch size * channels)
    out = ops.matmul(x, kernel)  # (positions, batch, filters)
    out = ops.reshape(out, tuple(output_shape) + (-1, kernel.shape[-1]))
    out = ops.moveaxis(out, len(output_shape), 0)  # (batch, positions..., filters)
    if data_format == "channels_first":
        out = ops.moveaxis(out, -1, 1)
    return out


def _positions(output_shape):
    if not output_shape:
        return [()]
    return [(i,) + rest for i in range(output_shape[0]) for rest in _positions(output_shape[1:])]


def local_conv1d(inputs, kernel, kernel_size, strides, data_format=None):
    (stride,) = _tuple(strides, 1)
    return _local_conv(inputs, kernel, _tuple(kernel_size, 1), (stride,), (kernel.shape[0],), data_format)


def local_conv2d(inputs, kernel, kernel_size, strides, output_shape, data_format=None):
    return _local_conv(inputs, kernel, _tuple(kernel_size, 2), _tuple(strides, 2), tuple(output_shape), data_format)


# ---- pooling, resizing, padding


def _pool(x, pool_size, strides, padding, data_format, pool_mode):
    data_format, padding = _data_format(data_format), _padding(padding)
    # Keras 3's strides default to pool_size; Keras 2's to 1, so they are always passed
    if pool_mode == "max":
        return ops.max_pool(x, pool_size, strides, padding, data_format)
    if pool_mode == "avg":
        return ops.average_pool(x, pool_size, strides, padding, data_format)
    raise ValueError("Invalid pooling mode: " + str(pool_mode))


def pool2d(x, pool_size, strides=(1, 1), padding="valid", data_format=None, pool_mode="max"):
    return _pool(x, pool_size, strides, padding, data_format, pool_mode)


def pool3d(x, pool_size, strides=(1, 1, 1), padding="valid", data_format=None, pool_mode="max"):
    return _pool(x, pool_size, strides, padding, data_format, pool_mode)


_INTERPOLATIONS = ("area", "bicubic", "bilinear", "lanczos3", "lanczos5", "nearest")


def resize_images(x, height_factor, width_factor, data_format, interpolation="nearest"):
    # as Keras 3's UpSampling2D: "nearest" repeats rows and columns (keras.ops.repeat); any other interpolation is
    # keras.ops.image.resize to the multiplied size
    if data_format not in _FORMATS:
        raise ValueError("Invalid data_format: " + str(data_format))
    rows = 1 if data_format == "channels_last" else 2
    if interpolation == "nearest":
        return ops.repeat(ops.repeat(x, height_factor, axis=rows), width_factor, axis=rows + 1)
    if interpolation not in _INTERPOLATIONS:
        raise ValueError("Invalid interpolation: " + str(interpolation))
    size = (x.shape[rows] * height_factor, x.shape[rows + 1] * width_factor)
    return ops.image.resize(x, size, interpolation=interpolation, data_format=data_format)


def resize_volumes(x, depth_factor, height_factor, width_factor, data_format):
    if data_format not in _FORMATS:
        raise ValueError("Invalid data_format: " + str(data_format))
    first = 1 if data_format == "channels_last" else 2
    for axis, factor in zip(range(first, first + 3), (depth_factor, height_factor, width_factor)):
        x = ops.repeat(x, factor, axis=axis)
    return x


def temporal_padding(x, padding=(1, 1)):
    return ops.pad(x, [[0, 0], list(padding), [0, 0]])


def _spatial_padding(x, padding, data_format):
    data_format = _data_format(data_format)
    pattern = [list(p) for p in padding]
    if data_format == "channels_first":
        return ops.pad(x, [[0, 0], [0, 0]] + pattern)
    return ops.pad(x, [[0, 0]] + pattern + [[0, 0]])


def spatial_2d_padding(x, padding=((1, 1), (1, 1)), data_format=None):
    return _spatial_padding(x, padding, data_format)


def spatial_3d_padding(x, padding=((1, 1), (1, 1), (1, 1)), data_format=None):
    return _spatial_padding(x, padding, data_format)


# ---- randomness: keras.random with Keras 2's seed (an int seed draws the same values each call; None draws new
# values from Keras 3's global SeedGenerator)


def _floatx(dtype):
    return dtype or keras.config.floatx()


def random_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return keras.random.normal(shape, mean=mean, stddev=stddev, dtype=_floatx(dtype), seed=seed)


def random_uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    return keras.random.uniform(shape, minval=minval, maxval=maxval, dtype=_floatx(dtype), seed=seed)


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    return keras.random.truncated_normal(shape, mean=mean, stddev=stddev, dtype=_floatx(dtype), seed=seed)


def random_binomial(shape, p=0.0, dtype=None, seed=None):
    # Keras 2's binomial is a Bernoulli draw: keras.random.binomial with one trial
    return keras.random.binomial(shape, counts=1, probabilities=p, dtype=_floatx(dtype), seed=seed)


def _random_variable(value, dtype, name):
    var = keras.Variable(value, dtype=_floatx(dtype), name=name)
    core._watch(var)
    return var


def random_normal_variable(shape, mean, scale, dtype=None, name=None, seed=None):
    value = keras.random.normal(shape, mean=mean, stddev=scale, dtype=_floatx(dtype), seed=seed)
    return _random_variable(value, dtype, name)


def random_uniform_variable(shape, low, high, dtype=None, name=None, seed=None):
    value = keras.random.uniform(shape, minval=low, maxval=high, dtype=_floatx(dtype), seed=seed)
    return _random_variable(value, dtype, name)


def dropout(x, level, noise_shape=None, seed=None):
    return keras.random.dropout(x, level, noise_shape=noise_shape, seed=seed)


# ---- control flow


def map_fn(fn, elems, name=None, dtype=None):
    # keras.ops.map infers the result's dtype; Keras 2's name and dtype have no counterpart
    return ops.map(fn, elems)


def _fold_step(fn):
    # the step's per-element output is its carry: Keras 3's TensorFlow scan stores each output in arrays made from
    # the carry's structure, dtypes and shapes (keras/src/backend/tensorflow/core.py, scan), so outputs of another
    # structure (or None) fail there; with the carry as output the same scan runs on every engine
    def step(acc, x):
        acc = fn(acc, x)
        return acc, acc

    return step


def foldl(fn, elems, initializer=None, name=None):
    # a fold is keras.ops.scan keeping only the last carry; no initializer: the first element is the start
    if initializer is None:
        initializer, elems = elems[0], elems[1:]
    carry, _ = ops.scan(_fold_step(fn), initializer, elems)
    return carry


def foldr(fn, elems, initializer=None, name=None):
    if initializer is None:
        initializer, elems = elems[-1], elems[:-1]
    carry, _ = ops.scan(_fold_step(fn), initializer, elems, reverse=True)
    return carry


def switch(condition, then_expression, else_expression):
    # a scalar condition: keras.ops.cond on the two branches (Keras 2 takes tensors or callables);
    # a tensor condition: keras.ops.where, the condition given trailing unit axes up to the branches' rank as
    # Keras 2 does (it broadcasts from the left, where numpy broadcasts from the right)
    condition = ops.cast(condition, "bool")
    cond_rank = len(condition.shape)
    if cond_rank == 0:
        then_fn = then_expression if callable(then_expression) else (lambda: then_expression)
        else_fn = else_expression if callable(else_expression) else (lambda: else_expression)
        return ops.cond(condition, then_fn, else_fn)
    if callable(then_expression):
        then_expression = then_expression()
    if callable(else_expression):
        else_expression = else_expression()
    expr_rank = len(then_expression.shape)
    if cond_rank > expr_rank:
        raise ValueError(
            "Rank of `condition` should be less than or equal to rank of `then_expression` and `else_expression`. "
            "ndim(condition)={}, ndim(then_expression)={}".format(cond_rank, expr_rank)
        )
    if cond_rank > 1:
        for _ in range(expr_rank - cond_rank):
            condition = ops.expand_dims(condition, -1)
    return ops.where(condition, then_expression, else_expression)


def rnn(
    step_function,
    inputs,
    initial_states,
    go_backwards=False,
    mask=None,
    constants=None,
    unroll=False,
    input_length=None,
    time_major=False,
    zero_output_for_mask=False,
):
    """Keras 3 has no public rnn (keras.src.backend.rnn is internal, reached only through keras.layers.RNN), so
    this is the loop a port writes with keras.ops.scan: the carry is (last output, states), the step sees the
    states followed by the constants, and a masked step keeps the last output and states (or zeros the output)."""
    if len(inputs.shape) < 3:
        raise ValueError("Input should be at least 3D.")
    initial_states = list(initial_states)
    if mask is not None and not initial_states:
        raise ValueError("`initial_states` should not be an empty list when `mask` is given.")
    if unroll and inputs.shape[0 if time_major else 1] is None:
        raise ValueError("Unrolling requires a fixed number of timesteps.")
    constants = list(constants or [])
    xs = inputs if time_major else ops.moveaxis(inputs, 0, 1)  # (time, samples, ...)
    masks = None
    if mask is not None:
        mask = ops.cast(mask, "bool")
        masks = mask if time_major else ops.moveaxis(mask, 0, 1)
    if go_backwards:
        xs = ops.flip(xs, 0)
        masks = None if masks is None else ops.flip(masks, 0)
    first_output, _ = step_function(xs[0], initial_states + constants)

    def step(carry, x):
        last_output, states = carry
        if masks is not None:
            x, m = x
        output, new_states = step_function(x, list(states) + constants)
        new_states = list(new_states)
        if masks is not None:

            def keep(new, old):
                m_b = m
                while len(m_b.shape) < len(new.shape):
                    m_b = ops.expand_dims(m_b, -1)
                while len(m_b.shape) > len(new.shape):
                    m_b = ops.squeeze(m_b, -1)
                return ops.where(m_b, new, old)

            output = keep(output, ops.zeros_like(output) if zero_output_for_mask else last_output)
            new_states = [keep(new, old) for new, old in zip(new_states, states)]
        return (output, new_states), output

    # each step's output is the step function's output alone (one array, what Keras 3's symbolic Scan can
    # describe); Keras 3's TensorFlow scan wants outputs of the carry's structure instead (see _fold_step), which
    # a carry of (output, states) is not: no single form runs on every engine
    scan_xs = xs if masks is None else (xs, masks)
    (last_output, states), outputs = ops.scan(
        step, (ops.zeros_like(first_output), initial_states), scan_xs, unroll=bool(unroll)
    )
    if not time_major:
        outputs = ops.moveaxis(outputs, 0, 1)
    return last_output, outputs, list(states)
