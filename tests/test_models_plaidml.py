"""PlaidML's model findings (specs/known_models.yaml, "# ---- plaidml"): the zoo states what Keras 2.2.4 defaults
otherwise (no backend), and PlaidML itself, without kbtool, computes what the entries say (backends: the plaidml
env, one small script; an engine that no longer does makes its entry stale, and this test says which)."""

import json
import os
import subprocess
from typing import Any, Dict

import pytest

from kbtool.models import known
from kbtool.runners.recipes.keras2 import PLAIDML
from kbtool.worker.modelzoo import builders
from tests.test_models_zoo import build_fake, written_models


def test_every_lstm_and_gru_states_its_gates_activation() -> None:
    # Keras 2.3.0 changed the default recurrent_activation from hard_sigmoid to sigmoid: PlaidML's and keras-mxnet's
    # Keras 2.2.4 built LSTMs and GRUs of another function (0.016-0.045 apart on the zoo) while every K.* call agreed
    cells = [layer for name in written_models() for layer in build_fake(name) if layer.kind in ("LSTM", "GRU")]
    assert len(cells) >= 8
    assert [c.kwargs.get("recurrent_activation") for c in cells] == [builders.GATES] * len(cells)
    assert builders.GATES == "sigmoid"


def test_the_plaidml_entries_name_their_models_and_a_source() -> None:
    mine = [e for e in known.load() if "plaidml" in e.engine]
    named = sorted(m for e in mine for m in ([e.model] if isinstance(e.model, str) else list(e.model or ())))
    assert named == ["batchnorm_inference", "batchnorm_train", "conv1d", "conv_pools", "mobilenet"]
    assert all(e.source and e.match for e in mine)


# PlaidML alone (no kbtool): the three behaviours the entries state, each as small as it goes
DRIVER = r"""
import json
import numpy as np
import plaidml.keras
plaidml.keras.install_backend()
import keras
import keras.backend as K
from keras import layers as L

rng = np.random.RandomState(0)
found = {}

# conv1d: a reshape's result fetched with a 'same' convolution that reads it (MaxPooling1D ends in K.squeeze)
x = rng.normal(size=(2, 16, 6)).astype("float32")
i = L.Input((16, 6))
pool = L.MaxPooling1D(2)(i)
conv = L.Conv1D(6, 3, padding="same")(pool)
both = keras.models.Model(i, [pool, conv]).predict(x)[0]
alone = keras.models.Model(i, pool).predict(x)
expected = x.reshape(2, 8, 2, 6).max(2)
found["pool_alone"] = float(np.abs(alone - expected).max())
found["pool_with_conv_exact"] = bool(np.allclose(both, expected))

# conv_pools: the gradient of a max with tied maxima
X = K.placeholder(shape=(1, 4))
row = np.array([[1.0, 3.0, 3.0, 2.0]], dtype="float32")
found["max_ties"] = K.function([X], K.gradients(K.sum(K.max(X, axis=1)), [X]))([row])[0].ravel().tolist()

# batch norm: a tensor that reaches the loss through K.reshape and directly
xb = rng.normal(size=(2, 4, 4, 3)).astype("float32")
w = rng.normal(size=xb.shape).astype("float32")
XB, B = K.placeholder(shape=xb.shape), K.placeholder(shape=(3,))
for name, y in [("reshape_only", XB + K.reshape(B, (1, 1, 1, 3))),
                ("reshape_and_direct", XB + K.reshape(B, (1, 1, 1, 3)) + B)]:
    got = K.function([XB, B], K.gradients(K.sum(y * K.constant(w)), [B]))([xb, np.zeros(3, "float32")])[0]
    exact = w.sum(axis=(0, 1, 2)) * (2 if name == "reshape_and_direct" else 1)
    found[name] = float(np.abs(got - exact).max() / np.abs(exact).max())
print("RESULT " + json.dumps(found))
"""


def _plaidml(script: str) -> Dict[str, Any]:
    python = PLAIDML.env_python()
    if not os.path.exists(python):
        pytest.fail(PLAIDML.not_installed())
    env = dict(os.environ, **PLAIDML.worker_env(PLAIDML.env_dir()))
    done = subprocess.run([python, "-c", script], env=env, capture_output=True, text=True, timeout=300, check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stderr[-2000:]
    result: Dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


@pytest.mark.backends
def test_plaidml_computes_what_its_known_model_entries_say() -> None:
    found = _plaidml(DRIVER)
    # conv1d: right alone, corrupted when fetched beside the convolution that reads it
    assert found["pool_alone"] == 0.0
    assert found["pool_with_conv_exact"] is False
    # conv_pools: every tied maximum gets the whole gradient (TensorFlow splits it: 0.5, 0.5)
    assert found["max_ties"] == [0.0, 1.0, 1.0, 0.0]
    # batchnorm_*, mobilenet: one path through a reshape is exact, with a direct path beside it it is not
    assert found["reshape_only"] < 1e-5
    assert found["reshape_and_direct"] > 1.0
