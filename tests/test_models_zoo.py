"""The model zoo's rules (kbtool/worker/modelzoo/zoo.py, seeded.py), without a backend: what it holds, that every
layer a builder writes is named, the Unsupported reasons, the seeded streams."""

import ast
import os
from typing import Any, Dict, List

import numpy as np
import pytest

from kbtool.worker.modelzoo import graph, layout, seeded, zoo
from kbtool.worker.modelzoo.api import Api

WORKER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kbtool", "worker")

REQUIRED = [
    "mobilenet",
    "resnet50",
    "densenet121",
    "xception",
    "nasnet_mobile",
    "vgg16",
    "lstm",
    "gru",
    "simple_rnn",
    "bidirectional",
    "masking_lstm",
    "go_backwards",
    "stateful_lstm",
    "text_cnn",
    "conv_autoencoder",
    "ctc",
    "batchnorm_train",
    "batchnorm_inference",
    "lambda_k",
    "dropout_inference",
    "separable_conv",
    "activations",
    "merge",
    "mlp",
    "small_cnn",
]


class FakeLayer:
    """Records how a builder constructs a layer; calling it on anything gives a token."""

    made: List["FakeLayer"] = []

    def __init__(self, kind: str, *args: Any, **kwargs: Any) -> None:
        self.kind, self.args, self.kwargs = kind, args, kwargs
        FakeLayer.made.append(self)

    def __call__(self, inputs: Any) -> str:
        return "tensor"


class FakeLayers:
    def __getattr__(self, kind: str) -> Any:
        def make(*args: Any, **kwargs: Any) -> Any:
            layer = FakeLayer(kind, *args, **kwargs)
            return "tensor" if kind == "Input" else layer

        return make


class FakeKeras:
    __version__ = "0.0"

    def __init__(self) -> None:
        self.layers = FakeLayers()
        self.models = self
        self.built: Dict[str, Any] = {}

    def Model(self, inputs: Any, outputs: Any, name: str) -> Dict[str, Any]:
        self.built = {"inputs": inputs, "outputs": outputs, "name": name}
        return self.built


class FakeK:
    def __init__(self, backend: str) -> None:
        self.name = backend

    def backend(self) -> str:
        return self.name


def build_fake(name: str, backend: str = "tensorflow") -> List[FakeLayer]:
    FakeLayer.made = []
    zoo.MODELS[name].build(Api(FakeKeras(), FakeK(backend), "keras2", backend))
    return list(FakeLayer.made)


def written_models() -> List[str]:
    return [name for name, m in zoo.MODELS.items() if m.family != "applications"]


def test_the_zoo_holds_every_model_the_issue_names_and_at_least_24() -> None:
    assert len(zoo.MODELS) >= 24
    assert [name for name in REQUIRED if name not in zoo.MODELS] == []
    assert {m.family for m in zoo.MODELS.values()} >= {"applications", "recurrent", "conv", "lambda", "dense"}
    assert [n for n, m in zoo.MODELS.items() if m.training_forward] == ["batchnorm_train"]


@pytest.mark.parametrize("name", written_models())
def test_every_layer_a_builder_writes_is_named(name: str) -> None:
    made = build_fake(name)
    assert made, name
    unnamed = [layer.kind for layer in made if not layer.kwargs.get("name")]
    assert unnamed == []
    names = [layer.kwargs["name"] for layer in made]
    assert len(names) == len(set(names)), "layer names repeat"


def test_the_model_is_named_as_its_zoo_entry() -> None:
    for name in written_models():
        keras = FakeKeras()
        FakeLayer.made = []
        zoo.MODELS[name].build(Api(keras, FakeK("tensorflow"), "keras2", "tensorflow"))
        assert keras.built["name"] == name


def test_every_gru_states_reset_after() -> None:
    # Keras 2 defaults to reset_after=False, tf_keras and Keras 3 to True: an unstated one builds other weights
    grus = [layer for name in written_models() for layer in build_fake(name) if layer.kind == "GRU"]
    assert len(grus) >= 4
    assert all("reset_after" in layer.kwargs for layer in grus)


@pytest.mark.parametrize(
    "name,backend,words",
    [
        ("ctc", "cntk", "NotImplementedError"),
        ("ctc", "plaidml", "NotImplementedError"),
        ("ctc", "mxnet", "NotImplementedError"),
        ("dropout_inference", "cntk", "None"),
        ("dropout_inference", "mxnet", "None"),
        ("dilated_conv", "cntk", "dilation_rate"),
        ("masking_lstm", "plaidml", "mask"),
        ("embedding_lstm", "plaidml", "mask"),
    ],
)
def test_an_engine_that_cannot_build_a_model_says_why(name: str, backend: str, words: str) -> None:
    with pytest.raises(zoo.Unsupported) as raised:
        build_fake(name, backend)
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_those_models_build_on_the_other_engines() -> None:
    for name in ["ctc", "masking_lstm", "embedding_lstm", "dropout_inference", "dilated_conv"]:
        assert build_fake(name, "tensorflow")


def test_forward_only_models_say_why_in_about() -> None:
    forward_only = [m for m in zoo.MODELS.values() if not m.trains]
    assert forward_only
    assert all("forward only: " in m.about for m in forward_only)
    assert all("random" in m.about or ("Theano" in m.about and m.family == "applications") for m in forward_only)
    # and a model with Dropout or noise layers is forward only
    random_kinds = {"Dropout", "GaussianNoise", "AlphaDropout", "GaussianDropout", "SpatialDropout2D"}
    for name in written_models():
        if {layer.kind for layer in build_fake(name)} & random_kinds:
            assert not zoo.MODELS[name].trains, name


def test_models_are_small() -> None:
    for m in zoo.MODELS.values():
        for spec in m.inputs + m.targets:
            assert spec["shape"][0] <= 3 and int(np.prod(spec["shape"])) <= 2 * 71 * 71 * 3, m.name


def test_applications_take_their_minimum_input_and_ten_classes() -> None:
    minimum = {"xception": 71, "inception_v3": 75}
    for name, (_, _, side, _) in zoo.APPLICATIONS.items():
        assert side == minimum.get(name, 32), name
        assert zoo.MODELS[name].inputs[0]["shape"] == [2, side, side, 3]
        assert zoo.MODELS[name].targets[0]["shape"] == [2, zoo.CLASSES] and zoo.CLASSES == 10


def test_batch_fixed_models_are_those_whose_batch_is_part_of_them() -> None:
    fixed = {n for n, m in zoo.MODELS.items() if m.batch_fixed}
    assert fixed == {"stateful_lstm", "ctc"}
    layers = build_fake("stateful_lstm")
    assert (
        layers[0].kind == "Input"
        and layers[0].kwargs["batch_shape"][0] == zoo.MODELS["stateful_lstm"].inputs[0]["shape"][0]
    )


class FakeVariable:
    def __init__(self, name: str) -> None:
        self.name = name


class FakeModelLayer:
    def __init__(self, *names: str) -> None:
        self.name = names[0].split("/")[0]
        self.weights = [FakeVariable(n) for n in names]


class FakeModel:
    layers = [
        FakeModelLayer("dense/kernel", "dense/bias"),
        FakeModelLayer("bn/gamma", "bn/beta", "bn/moving_mean", "bn/moving_variance"),
        FakeModelLayer("out/kernel"),
    ]


def test_weights_have_one_canonical_order_by_layer_name_and_place() -> None:
    keys = [key for key, _, _ in graph.canonical(FakeModel())]
    assert keys == sorted(keys) and "bn/3" in keys and "dense/0" in keys
    assert len(keys) == 7


def test_target_value_draws_from_a_stream_of_its_own() -> None:
    spec = {"shape": [2, 3], "dist": "uniform", "low": 0.0, "high": 1.0}
    target = seeded.target_value(0, "mlp", 0, spec)
    assert target.shape == (2, 3) and target.dtype == np.float32
    assert not np.array_equal(target, seeded.input_value(0, "mlp", 0, spec))
    assert np.array_equal(target, seeded.target_value(0, "mlp", 0, spec))
    assert not np.array_equal(target, seeded.target_value(1, "mlp", 0, spec))


def test_zero_tail_zeroes_the_last_steps_and_leaves_the_stream_as_it_was() -> None:
    spec = {"shape": [2, 5, 4]}
    plain = seeded.input_value(3, "m", 0, spec)
    padded = seeded.input_value(3, "m", 0, dict(spec, zero_tail=[0, 2]))
    assert np.array_equal(padded[0], plain[0])
    assert np.array_equal(padded[1, :3], plain[1, :3]) and not padded[1, 3:].any()
    tokens = seeded.input_value(
        3, "m", 0, {"shape": [2, 7], "dtype": "int32", "dist": "randint", "low": 1, "high": 9, "zero_tail": [1, 3]}
    )
    assert tokens.dtype == np.int32 and (tokens[0, :6] > 0).all() and not tokens[0, 6:].any()


def test_the_zoo_imports_nothing_of_kbtool() -> None:
    for name in ("zoo.py", "seeded.py", "builders.py"):
        tree = ast.parse(open(os.path.join(WORKER, "modelzoo", name)).read())
        roots = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        roots |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
        assert roots <= {"importlib", "collections", "numpy", "re", "zlib"}, roots


class NamedLayer:
    def __init__(self, name: str) -> None:
        self.name = name


class InputLayer(NamedLayer):
    pass


class Conv2D(NamedLayer):
    pass


class GlobalAveragePooling2D(NamedLayer):
    pass


class Dense(NamedLayer):
    pass


class LayeredModel:
    def __init__(self, *layers: NamedLayer) -> None:
        self.layers = list(layers)


def test_canonical_names_number_default_names_per_class_and_keep_explicit_ones() -> None:
    api = Api(FakeKeras(), FakeK("tensorflow"), "keras2", "tensorflow")
    keras2 = LayeredModel(
        InputLayer("input_1"),
        Conv2D("conv1/conv"),
        Conv2D("conv2d_4"),
        GlobalAveragePooling2D("avg_pool"),
        Dense("probs"),
    )
    keras3 = LayeredModel(
        InputLayer("input_layer"),
        Conv2D("conv1_conv"),
        Conv2D("conv2d"),
        GlobalAveragePooling2D("avg_pool"),
        Dense("predictions"),
    )
    names = [[layer.name for layer in zoo.canonical_names(m, api).layers] for m in (keras2, keras3)]
    assert names[0] == names[1] == ["input_1", "conv1_conv", "conv2d_1", "avg_pool", "predictions"]


def test_keras3_nasnet_on_torch_is_unsupported_with_the_reason() -> None:
    api = Api(FakeKeras(), FakeK("torch"), "keras3", "torch")
    with pytest.raises(zoo.Unsupported, match="torch"):
        zoo.MODELS["nasnet_mobile"].build(api)


def test_mobilenet_on_mxnet_is_unsupported_with_the_reason() -> None:
    with pytest.raises(zoo.Unsupported, match="identity"):
        zoo.MODELS["mobilenet"].build(Api(FakeKeras(), FakeK("mxnet"), "keras2", "mxnet"))


class Conv1D(NamedLayer):
    def __init__(self, name: str, count: int) -> None:
        super().__init__(name)
        self.weights = [FakeVariable(f"{name}/{i}") for i in range(count)]


class SeparableConv1D(Conv1D):
    pass


def test_true_convolution_kernels_are_flipped_on_theano_only() -> None:
    model = LayeredModel(Conv1D("a", 2), SeparableConv1D("b", 3), Conv1D("c", 1))
    theano = layout.flipped_kernels(Api(FakeKeras(), FakeK("theano"), "keras2", "theano"), model)
    assert theano == {id(model.layers[0].weights[0]), id(model.layers[2].weights[0])}
    assert not layout.flipped_kernels(Api(FakeKeras(), FakeK("tensorflow"), "keras2", "tensorflow"), model)
    kernel = np.arange(12, dtype="float32").reshape(3, 2, 2)
    assert np.array_equal(layout.flip(kernel), kernel[::-1])
