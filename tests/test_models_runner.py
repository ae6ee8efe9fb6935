"""The models worker on real engines: the skeleton's zoo models forward, one training step and the trace of the
conv layer, through kbtool/models/wire.py, on tensorflow1 (keras2, graph), tensorflow (tf_keras) and keras3-jax."""

from typing import Dict, Iterator

import numpy as np
import pytest

from kbtool.models import wire
from kbtool.models.records import EngineRun
from kbtool.runners.client import WorkerClient
from kbtool.runners.registry import launch_for

pytestmark = pytest.mark.backends
ENGINES = ("tensorflow1", "tensorflow", "keras3-jax")
TIMEOUT = 300.0


@pytest.fixture(scope="module")
def clients() -> Iterator[Dict[str, WorkerClient]]:
    made = {engine: WorkerClient(launch_for(engine), case_timeout=TIMEOUT) for engine in ENGINES}
    yield made
    for client in made.values():
        client.stop()


@pytest.fixture(scope="module")
def runs(clients: Dict[str, WorkerClient]) -> Dict[str, Dict[str, EngineRun]]:
    return {
        model: {e: wire.run_model(c, model, 7, True, TIMEOUT) for e, c in clients.items()}
        for model in ("mlp", "small_cnn")
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_small_cnn_runs_layer_by_layer_and_trains_once(runs: Dict[str, Dict[str, EngineRun]], engine: str) -> None:
    run = runs["small_cnn"][engine]
    assert run.status == "ok", run.reason
    assert [(o.name, o.cls) for o in run.layers] == [
        ("image", "InputLayer"),
        ("conv", "Conv2D"),
        ("pool", "MaxPooling2D"),
        ("flatten", "Flatten"),
        ("dense", "Dense"),
    ]
    assert [o.arrays[0].shape for o in run.layers] == [(2, 12, 12, 3), (2, 10, 10, 8), (2, 5, 5, 8), (2, 200), (2, 5)]
    assert run.layers[2].inbound == ("conv",) and np.array_equal(run.outputs[0], run.layers[-1].arrays[0])
    assert [shape for _, shape in run.weights] == [(3, 3, 3, 8), (8,), (200, 5), (5,)]
    assert run.loss is not None and np.isfinite(run.loss) and run.train_note == ""
    assert [g.shape for g in run.gradients] == [shape for _, shape in run.weights]
    assert all(np.abs(g).max() > 0 for g in run.gradients)


@pytest.mark.parametrize("model", ["mlp", "small_cnn"])
def test_the_seeded_weights_and_inputs_give_the_same_outputs_loss_and_gradients_on_every_engine(
    runs: Dict[str, Dict[str, EngineRun]], model: str
) -> None:
    first, *others = (runs[model][e] for e in ENGINES)
    for run in [first] + others:
        assert run.status == "ok", (run.engine, run.reason)
    for run in others:
        for mine, theirs in zip(run.layers, first.layers):
            np.testing.assert_allclose(mine.arrays[0], theirs.arrays[0], rtol=1e-4, atol=1e-5)
        assert run.loss == pytest.approx(first.loss, rel=1e-4)
        for mine, theirs in zip(run.gradients, first.gradients):
            np.testing.assert_allclose(mine, theirs, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_conv_layers_trace_records_its_calls_on_the_layers_input(
    clients: Dict[str, WorkerClient], runs: Dict[str, Dict[str, EngineRun]], engine: str
) -> None:
    run = runs["small_cnn"][engine]
    image, conv = run.layers[0].arrays[0], run.layers[1].arrays[0]
    calls = wire.trace_layer(clients[engine], "small_cnn", 7, "conv", [image], TIMEOUT)
    names = [c.fn for c in calls]
    last = calls[-1].output
    assert last is not None
    if engine == "tensorflow":
        # tf_keras's Conv2D computes with tf.nn.convolution and tf.nn.bias_add, not K.*: only the activation is a K.*
        # call (tf_keras/src/activations.py: backend.relu)
        assert names == ["relu"]
        np.testing.assert_allclose(last, conv, rtol=1e-6)
        return
    conv_name = "ops.conv" if engine == "keras3-jax" else "conv2d"
    call = calls[names.index(conv_name)]
    x, kernel = wire.resolve(call.args[:2], call.arrays)
    assert x.shape == (2, 12, 12, 3) and kernel.shape == (3, 3, 3, 8) and np.array_equal(x, image)
    assert call.output is not None and call.output.shape == (2, 10, 10, 8)
    if engine == "keras3-jax":
        # Keras 3's relu activation calls keras.src.backend directly, not keras.src.ops: the last op is the bias add
        assert names[-1] == "ops.add"
        np.testing.assert_allclose(np.maximum(last, 0), conv, rtol=1e-6)
    else:
        assert names == ["conv2d", "bias_add", "relu"]
        np.testing.assert_allclose(last, conv, rtol=1e-6)
