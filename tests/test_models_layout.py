"""The worker's build-time shortcuts change no result: Theano's initializer draws become zeros only for static
shapes (set_weights overwrites every weight), anything else is left to the backend and restored afterwards."""

import numpy as np

from kbtool.worker.modelzoo.api import Api
from kbtool.worker.modelzoo.layout import cheap_draws


class Backend:
    def __init__(self) -> None:
        self.calls = []

    def floatx(self) -> str:
        return "float32"

    def random_normal(self, shape, mean=0.0, stddev=1.0, dtype=None, seed=None):  # type: ignore[no-untyped-def]
        self.calls.append(shape)
        return "symbolic draw"

    random_uniform = truncated_normal = random_normal


class Keras:
    def __init__(self) -> None:
        self.backend = Backend()
        self.layers = None


def test_theano_draws_of_static_shapes_are_zeros_during_a_build_only() -> None:
    keras = Keras()
    original = keras.backend.random_normal
    with cheap_draws(Api(keras, keras.backend, "keras2", "theano")):
        drawn = keras.backend.random_normal((2, 3), 0.0, 0.05)
        assert isinstance(drawn, np.ndarray) and drawn.shape == (2, 3) and not drawn.any()
        assert keras.backend.random_uniform("a symbolic shape") == "symbolic draw"  # a layer's noise: the backend's
    assert keras.backend.random_normal == original


def test_other_engines_draw_as_they_do() -> None:
    keras = Keras()
    with cheap_draws(Api(keras, keras.backend, "keras2", "tensorflow")):
        assert keras.backend.random_normal((2, 3)) == "symbolic draw"
    with cheap_draws(Api(keras, keras.backend, "tf_keras", "theano")):
        assert keras.backend.random_normal((2, 3)) == "symbolic draw"
