"""The models oracle on real Keras: zoo models built by Keras 2.3.1 on kbtool's reference (the theano env's Keras,
KERAS_BACKEND=kbtool.reference.keras_backend) predict what Keras 2.3.1 on TensorFlow 1 predicts with the same seeded
weights and inputs, at float32 tolerance. A backend env not installed fails these tests with kbtool's reason."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kbtool.paths import CHECKOUT_ROOT
from kbtool.runners.recipes.keras2 import TENSORFLOW1
from kbtool.runners.recipes.oracles import reference_keras_launch

# run inside an env: build each model, set seeded weights, predict (learning phase 1 where the model's forward pass
# is in training mode), save the outputs; argv: worker dir, output .npz, model names
DRIVER = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import shims
shims.collections_abc()
import numpy as np
import keras
K = keras.backend
from modelzoo import seeded, zoo
from modelzoo import api as apis
api = apis.detect(K)
saved, seconds = {}, {}
for name in sys.argv[3:]:
    model_def = zoo.MODELS[name]
    start = time.time()
    model = model_def.build(api)
    weights = [w for layer in model.layers for w in layer.weights]  # get_weights() order
    model.set_weights([seeded.weight_value(0, name, i, w.name, K.int_shape(w)) for i, w in enumerate(weights)])
    inputs = [seeded.input_value(0, name, i, spec) for i, spec in enumerate(model_def.inputs)]
    built = time.time()
    run = K.function(model.inputs + [K.learning_phase()], model.outputs)
    outputs = run(inputs + [1 if model_def.training_forward else 0])
    seconds[name] = [built - start, time.time() - built]
    for i, value in enumerate(outputs):
        saved["%s:%d" % (name, i)] = np.asarray(value)
np.savez(sys.argv[2], **saved)
print(json.dumps({"backend": K.backend(), "seconds": seconds}))
"""


def _models():
    """One zoo model of each family, every model whose forward pass runs in the training phase, and every model fed
    padded sequences (masks through K.rnn)."""
    sys.path.insert(0, os.path.join(CHECKOUT_ROOT, "kbtool", "worker"))
    try:
        from modelzoo import zoo
    finally:
        sys.path.pop(0)
    chosen, families = [], set()
    for name, model in zoo.MODELS.items():
        masked = any(spec.get("zero_tail") for spec in model.inputs)
        if model.family not in families or model.training_forward or masked:
            chosen.append(name)
            families.add(model.family)
    return chosen


def _run(python, env, out, models):
    script = os.path.join(os.path.dirname(out), "driver.py")
    with open(script, "w") as f:
        f.write(DRIVER)
    worker = os.path.join(CHECKOUT_ROOT, "kbtool", "worker")
    done = subprocess.run(
        [python, script, worker, out] + models, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), np.load(out)


@pytest.mark.backends
def test_zoo_models_on_the_reference_predict_what_tensorflow1_predicts(tmp_path):
    models = _models()
    assert len(models) >= 2
    launch = reference_keras_launch()
    oracle_env = launch.environ()
    tf1_env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="3")
    tf1_env.pop("KERAS_HOME", None)
    tf1_env["KERAS_HOME"] = oracle_env["KERAS_HOME"]  # the same private keras.json (the documented defaults)
    (tmp_path / "numpy").mkdir()
    (tmp_path / "tf1").mkdir()
    said, oracle = _run(launch.python, oracle_env, str(tmp_path / "numpy" / "out.npz"), models)
    assert said["backend"] == "kbtool.reference.keras_backend"
    _, tf1 = _run(TENSORFLOW1.env_python(), tf1_env, str(tmp_path / "tf1" / "out.npz"), models)
    assert sorted(oracle.files) == sorted(tf1.files) and len(oracle.files) >= len(models)
    for key in tf1.files:
        np.testing.assert_allclose(oracle[key], tf1[key], rtol=1e-4, atol=1e-5, err_msg=key)
    assert all(forward < 30 for _, forward in said["seconds"].values()), said["seconds"]
