"""The models oracle without Keras: the reference's Symbol operators, deferred variables and learning phase, and the
Keras 2.3.1 glue (kbtool/reference/keras_backend.py) that lets Keras run whole models on the reference."""

import json
import os

import numpy as np
import pytest

from kbtool.reference import core
from kbtool.reference import keras_backend as K
from kbtool.runners.base import Unavailable
from kbtool.runners.recipes import oracles


def _run(inputs, outputs, values, updates=None):
    return core.function(inputs, outputs, updates=updates)(values)


X = np.arange(6, dtype="float32").reshape(2, 3) - 2.5


@pytest.mark.parametrize(
    "build, expected",
    [
        (lambda x: x + 1.5, X + 1.5),
        (lambda x: 1.5 + x, 1.5 + X),
        (lambda x: x - X[::-1], X - X[::-1]),
        (lambda x: X[::-1] - x, X[::-1] - X),  # an ndarray on the left gives way to the symbol
        (lambda x: 2 * x, 2 * X),
        (lambda x: x / 4, X / 4),
        (lambda x: 3 / (x + 10), 3 / (X + 10)),
        (lambda x: x // 2, X // 2),
        (lambda x: x % 2, X % 2),
        (lambda x: x**2, X**2),
        (lambda x: 2**x, 2**X),
        (lambda x: x @ X.T, X @ X.T),
        (lambda x: X.T @ x, X.T @ X),
        (lambda x: -x, -X),
        (lambda x: +x, X),
        (lambda x: abs(x), np.abs(X)),
        (lambda x: x < 0, X < 0),
        (lambda x: x <= 0.5, X <= 0.5),
        (lambda x: x > 0, X > 0),
        (lambda x: x >= -0.5, X >= -0.5),
        (lambda x: x[1], X[1]),
        (lambda x: x[:, 1:], X[:, 1:]),
        (lambda x: K.shape(x)[1], np.int32(3)),
    ],
)
def test_symbol_operators_defer_to_numpy_on_the_fed_values(build, expected):
    x = core.placeholder(shape=(None, 3))
    result = build(x)
    assert isinstance(result, core.Symbol)
    value = _run([x], result, [X])
    np.testing.assert_array_equal(value, expected)
    assert np.asarray(value).dtype == np.asarray(expected).dtype


def test_symbols_stay_identity_keys_and_are_not_iterable():
    x, y = core.placeholder(shape=(2,)), core.placeholder(shape=(2,))
    assert (x == x) is True and (x == y) is False and (x != y) is True  # identity, as a TF1 tensor
    assert {x: 1, y: 2}[y] == 2
    with pytest.raises(TypeError, match="not iterable"):
        list(x)


def test_a_deep_graph_evaluates_without_recursion():
    x = core.placeholder(shape=(2,))
    y = x
    for _ in range(5000):  # deeper than Python's recursion limit
        y = y + 1.0
    np.testing.assert_array_equal(_run([x], y, [np.zeros(2, "float32")]), [5000.0, 5000.0])


def test_a_probe_stops_at_a_shape_keras_states():
    # a layer's output carries _keras_shape: int_shape and dtype of what follows never run what precedes it
    def refuse(v):
        raise AssertionError("the probe ran the graph before the stated shape")

    x = core.placeholder(shape=(None, 3))
    layer_output = core.Symbol(refuse, (x,))
    layer_output._keras_shape = (None, 4)
    after = core.op(lambda v: np.concatenate([v, v], axis=-1).astype("float16"))(layer_output)
    assert core.int_shape(after) == (None, 8)
    assert core.dtype(after) == "float16"
    assert after.shape == (None, 8)  # what Keras reads as list(output.shape)


def test_a_probe_that_cannot_size_unknown_dims_keeps_the_rank():
    # Keras's target placeholder (None, None) against a model output (None, 3): the sizes 16 and 17 cannot meet 3
    target = core.placeholder(shape=(None, None))
    output = core.placeholder(shape=(None, 3))
    assert core.int_shape(target - output) == (None, None)


def test_dtype_of_a_deferred_result_is_the_dtype_its_call_gives():
    x = core.placeholder(shape=(2,), dtype="float32")
    assert core.dtype(K.cast(x, "int32")) == "int32"
    assert core.dtype(x * 2.0) == "float32"


def test_learning_phase_is_a_placeholder_keras_feeds():
    K.clear_session()
    phase = K.learning_phase()
    assert core.is_placeholder(phase)
    x = K.placeholder(shape=(None, 2))
    out = K.in_train_phase(x * 10.0, x)
    assert out._uses_learning_phase is True
    f = K.function([x, K.learning_phase()], [out])
    ones = np.ones((1, 2), "float32")
    np.testing.assert_array_equal(f([ones, 0])[0], ones)
    np.testing.assert_array_equal(f([ones, 1])[0], ones * 10)
    K.set_learning_phase(1)
    assert K.learning_phase() == 1 and K.in_train_phase(1.0, 2.0) == 1.0
    with pytest.raises(ValueError):
        K.set_learning_phase(2)
    K.clear_session()
    assert K.learning_phase() is phase


def test_a_variable_is_read_when_the_graph_runs_not_when_built():
    # Keras's PReLU computes -alpha * relu(-x) at build time; set_weights comes later
    with K.name_scope("prelu"):
        alpha = K.variable(np.zeros(2), name="alpha")
    assert alpha.name == "prelu/alpha" and K.is_variable(alpha) and not K.is_placeholder(alpha)
    x = K.placeholder(shape=(None, 2))
    out = -alpha * K.relu(-x)
    K.batch_set_value([(alpha, np.array([0.5, 2.0]))])
    np.testing.assert_array_equal(K.function([x], [out])([np.full((1, 2), -1.0, "float32")])[0], [[-0.5, -2.0]])
    np.testing.assert_array_equal(K.get_value(alpha), [0.5, 2.0])
    assert K.int_shape(alpha) == (2,) and K.dtype(alpha) == "float32" and K.count_params(alpha) == 2
    assert K.eval(K.zeros((2, 2)) + 1.0).tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_symbolic_updates_wait_for_the_function():
    moving = K.variable(np.zeros(2))
    state = K.variable(np.zeros(2))
    x = K.placeholder(shape=(None, 2))
    update = K.moving_average_update(moving, K.mean(x, axis=0), 0.5)
    f = K.function([x], [K.sum(x)], updates=[update, (state, K.max(x, axis=0))])  # Theano's pair form too
    np.testing.assert_array_equal(K.get_value(moving), [0.0, 0.0])
    f([np.array([[2.0, 4.0], [2.0, 8.0]], "float32")])
    np.testing.assert_array_equal(K.get_value(moving), [1.0, 3.0])
    np.testing.assert_array_equal(K.get_value(state), [2.0, 8.0])


def test_gradients_of_weights_are_refused_at_once():
    w = K.variable(np.ones(2))
    x = K.placeholder(shape=(2,))
    with pytest.raises(NotImplementedError, match="placeholders only"):
        K.gradients(K.sum(x * w), [w])
    (grad,) = K.gradients(K.sum(x * x), [x])
    np.testing.assert_allclose(K.function([x], [grad])([np.array([1.0, 2.0], "float32")])[0], [2.0, 4.0], rtol=1e-4)


def test_keras_tensors_and_static_shapes():
    x = K.placeholder(shape=(None, 3), name="x")
    assert x._keras_shape == (None, 3) and x._uses_learning_phase is False
    assert K.is_keras_tensor(x) is False
    x._keras_history = ("layer", 0, 0)
    assert K.is_keras_tensor(x) is True
    with pytest.raises(ValueError):
        K.is_keras_tensor(np.zeros(2))
    y = x * 2.0
    y._keras_shape = (5, 3)  # Keras's own computed shape wins, as on Theano
    assert K.int_shape(y) == (5, 3) and K.ndim(y) == 2
    assert K.function([x], [K.size(x)])([np.zeros((4, 3), "float32")])[0] == 12


def test_rnn_steps_on_weights_and_returns_the_states_as_a_list():
    kernel = K.variable(np.eye(2) * 2.0)
    x = K.placeholder(shape=(None, 3, 2))

    def step(inputs, states):  # Keras's cells compute on their weights, which are symbols
        out = K.dot(inputs, kernel) + states[0]
        return out, [out]

    last, outputs, states = K.rnn(step, x, [K.zeros_like(x[:, 0])])
    assert isinstance(states, list) and len(states) == 1
    values = K.function([x], [last, outputs])([np.ones((1, 3, 2), "float32")])
    np.testing.assert_array_equal(values[0], [[6.0, 6.0]])
    np.testing.assert_array_equal(values[1][0, :, 0], [2.0, 4.0, 6.0])


def test_random_ops_wait_for_a_symbolic_shape():
    x = K.placeholder(shape=(None, 3))
    noise = K.random_normal(K.shape(x), seed=1)
    assert isinstance(noise, core.Symbol)
    assert K.function([x], [noise])([np.zeros((4, 3), "float32")])[0].shape == (4, 3)


def test_batch_normalization_without_beta_or_gamma():
    x = np.array([[1.0, 3.0]], "float32")
    mean, var = np.array([1.0, 1.0], "float32"), np.array([4.0, 4.0], "float32")
    np.testing.assert_allclose(K.batch_normalization(x, mean, var, None, None, epsilon=0.0), [[0.0, 1.0]])
    normed, _, _ = K.normalize_batch_in_training(np.array([[1.0], [3.0]], "float32"), None, None, [0], epsilon=0.0)
    np.testing.assert_allclose(normed, [[-1.0], [1.0]])


def test_the_launch_runs_keras_of_the_theano_env_on_the_reference(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    with pytest.raises(Unavailable, match="theano env"):
        oracles.reference_keras_launch()
    env_dir = tmp_path / "envs" / "theano"
    env_dir.mkdir(parents=True)
    (env_dir / "kbtool-env.json").write_text(json.dumps({"name": "theano"}))
    launch = oracles.reference_keras_launch()
    assert launch.backend == "numpy" and launch.module == "keras.backend"
    assert launch.python == os.path.join(str(env_dir), "bin", "python")
    assert launch.env["KERAS_BACKEND"] == "kbtool.reference.keras_backend"
    assert launch.shims == ["collections_abc"] and launch.version_of == ["keras", "numpy"]
    assert os.path.isdir(os.path.join(launch.extra_pythonpath[0], "kbtool", "reference"))
    assert launch.environ()["KERAS_BACKEND"] == "kbtool.reference.keras_backend"
