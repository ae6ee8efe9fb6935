"""The models worker on keras-mxnet: its learning phase is a plain int read when a K.function runs (1 unless set), so
the worker's K.function must set it for the call (modelzoo/run.py PhasedFunction); and the mxnet entries of
specs/known_models.yaml match the findings' text as the models run writes it."""

import os
import re
import subprocess
import textwrap
from typing import Any, List

import pytest
import yaml

from kbtool.runners.base import envs_dir
from kbtool.worker.modelzoo import run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class FakeBackend:
    """keras-mxnet's phase API: learning_phase() an int (1 by default), a Function that reads it when called."""

    def __init__(self) -> None:
        self.phase = 1
        self.seen: List[Any] = []

    def learning_phase(self) -> int:
        return self.phase

    def set_learning_phase(self, value: int) -> None:
        self.phase = value

    def function(self, inputs: List[Any], outputs: List[Any]) -> Any:
        def call(values: List[Any]) -> List[Any]:
            self.seen.append((self.phase, list(values)))
            return ["out"]

        return call


class FakeApi:
    def __init__(self, engine: str, kb: FakeBackend) -> None:
        self.engine = engine
        self.keras = type("keras", (), {"backend": kb})


@pytest.mark.parametrize("phase", [0, 1])
def test_an_mxnet_function_runs_in_the_phase_it_is_given_and_restores_the_engines(phase: int) -> None:
    kb = FakeBackend()
    fn, takes_phase = run.keras2_function(FakeApi("mxnet", kb), ["x"], ["y"], phase)
    assert takes_phase  # the callers append the phase as the last value
    assert fn(["value", phase]) == ["out"]
    assert kb.seen == [(phase, ["value", phase])]  # set while it ran; a trailing number is Function's is_train
    assert kb.phase == 1  # restored


def test_an_int_phase_on_another_keras2_engine_is_not_fed() -> None:
    kb = FakeBackend()
    _, takes_phase = run.keras2_function(FakeApi("tensorflow", kb), ["x"], ["y"], 0)
    assert not takes_phase


def mxnet_entries() -> List[Any]:
    with open(os.path.join(ROOT, "specs", "known_models.yaml"), encoding="utf-8") as handle:
        return [e for e in yaml.safe_load(handle) if e["engine"] == "mxnet"]


# the findings' text as `kbtool models --backend mxnet --backend numpy` wrote it (reason | why_not | call_text),
# one per entry in file order: a match that stops matching its finding is a typo in the regex
FINDINGS = [
    "its last output differs from the definition's loop over the step function: 12 of 12 values differ (max abs "
    "diff 0.328, rtol 1e-05, atol 1e-06); first at (0, 0): 0.0 vs reference -0.139756441116333; it takes a step "
    "function, so no spec case can carry it | K.rnn(step_function, inputs, initial_states, ...)",
    'mxnet.base.MXNetError: Traceback (most recent call last): File "../src/imperative/./imperative_utils.h", line '
    "147 MXNetError: Operator where inferring shapes failed. input shapes: [2,1] [2,6] [2,6] output shapes: [2,6] "
    "operator attributes: __subgraph_name__ : foreach24",
    "K.mxnet_batchnorm is not a documented K.* function (the reference cannot replay it) and is the layer's only "
    "call that could not be judged; its array arguments: [2,8,8,4] float32 | K.mxnet_batchnorm(...)",
    "K.mxnet_batchnorm is not a documented K.* function (the reference cannot replay it) and is the layer's only "
    "call that could not be judged; its array arguments: [2,8,8,4] float32 | K.mxnet_batchnorm(...)",
    "mxnet.base.MXNetError: MXNetError: Error in operator dot20: [02:30:52] ../src/operator/tensor/./dot-inl.h:1241: "
    "Check failed: L[!Ta].Size() == R[Tb].Size() (6 vs. 12) : dot shape error: [-1,6] X [12,4]",
    "mxnet.base.MXNetError: MXNetError: could not create a descriptor for a dilated deconvolution forward "
    "propagation primitive",
    "K.constant(value[3,3,3,4] float32)",
]


def test_each_mxnet_entry_matches_its_finding_and_no_other() -> None:
    entries = mxnet_entries()
    assert len(entries) == len(FINDINGS)
    for entry, text in zip(entries, FINDINGS):
        assert re.search(entry["match"], text), entry["model"]
        assert entry["source"].startswith("keras/"), entry["model"]
    rnn, masking = entries[0], entries[1]
    assert not re.search(rnn["match"], FINDINGS[0].replace(": 0.0 vs", ": 0.25 vs"))  # only outputs read as zeros
    assert not re.search(masking["match"], FINDINGS[1].replace("[2,1] [2,6]", "[2] [2,6]"))


MXNET_SCRIPT = """
import os, sys
import numpy as np
sys.path.insert(0, os.path.join(sys.argv[1], "kbtool", "worker"))
import keras, keras.backend as K
from modelzoo import api as apis, run
api = apis.detect(K)
x = keras.layers.Input((200,))
y = keras.layers.Dropout(0.5)(x)
model = keras.models.Model(x, y)
value = np.ones((2, 200), "float32")
for training in (False, True):
    got = run.evaluate(api, model, [y], [value], training)[id(y)]
    print(training, int((got == 0).sum()))
"""


@pytest.mark.backends
def test_the_mxnet_forward_runs_dropout_as_the_phase_says() -> None:
    python = os.path.join(envs_dir(), "mxnet", "bin", "python")
    if not os.path.exists(python):
        pytest.fail(f"no mxnet env at {python}")
    env = dict(os.environ, KERAS_BACKEND="mxnet")
    out = subprocess.run(
        [python, "-c", textwrap.dedent(MXNET_SCRIPT), ROOT], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    dropped = dict(line.split() for line in out.stdout.splitlines() if line.startswith(("False", "True")))
    assert dropped["False"] == "0"  # inference: Dropout is the identity
    assert int(dropped["True"]) > 0, out.stdout  # training: about half of the 400 values dropped
