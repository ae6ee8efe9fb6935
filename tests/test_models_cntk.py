"""The CNTK engine's model findings: kbtool's own part in them (the definition's loop for a stateful layer) and
the known entries that explain the rest (specs/known_models.yaml's cntk section, the op-level rnn case)."""

from types import SimpleNamespace
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
import pytest

from kbtool.models import localise
from kbtool.specs import loader
from kbtool.worker.modelzoo.definitions import graph_rnn


class _Token:
    """A symbolic tensor of a fake graph engine: only its identity matters."""


def _fake_graph_api(variables: Dict[int, np.ndarray]) -> SimpleNamespace:
    def placeholder(shape: Tuple[int, ...], dtype: str) -> _Token:
        return _Token()

    def get_value(tensor: Any) -> np.ndarray:
        return variables[id(tensor)]  # KeyError for anything that is not a variable, as the engine would refuse

    backend = SimpleNamespace(placeholder=placeholder, get_value=get_value)
    return SimpleNamespace(keras=SimpleNamespace(backend=backend))


def _compile_running_sum(api: Any, inputs: Sequence[Any], outputs: Sequence[Any], training: bool) -> Tuple[Any, bool]:
    def fn(values: List[np.ndarray]) -> List[np.ndarray]:
        total = values[0] + values[1]  # x_t + state: the step's output and its one new state
        return [total, total]

    return fn, False


def test_a_stateful_layers_states_are_variables_the_trace_did_not_fetch() -> None:
    # CNTK's variables are Parameters: the trace's K.is_tensor/is_variable walk does not fetch a stateful layer's
    # states, so the definition's loop reads them as variables (it failed with KeyError: <id> before)
    x, state = _Token(), _Token()
    x_value = np.arange(12, dtype="float32").reshape(2, 3, 2)
    state_value = np.full((2, 2), 10.0, "float32")
    api = _fake_graph_api({id(state): state_value})
    step = lambda inputs, states: (inputs, states)  # noqa: E731 - built once on placeholders, run by compile_fn
    last, outputs, final = graph_rnn(api, (step, x, [state]), {}, {id(x): x_value}, [], [], False, _compile_running_sum)
    assert np.array_equal(last, state_value + x_value.sum(axis=1))
    assert np.array_equal(outputs[:, 0], state_value + x_value[:, 0])
    assert np.array_equal(final, last)


def _replay_report(results: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {"results": [dict(r, op="conv2d", case="same", backend="cntk") for r in results]}


def test_a_replay_is_known_by_its_symbolic_form_where_eager_fails_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    # conv_pools on cntk: K.conv2d(x[2,14,14,3], kernel[3,3,3,6], strides=(2, 2), padding='same') replayed; the
    # eager mode errors for CNTK's own reason (no dynamic batch axis on a variable: "kernel dim 6 <= input dim 2",
    # a form no entry recorded), the symbolic one has the strided-'same' entry's form: the finding is that entry's
    import kbtool.check.run as check_run

    eager = {
        "mode": "eager",
        "status": "error",
        "message": "ValueError: Convolution operation requires that kernel dim 6 <= input dim 2.",
    }
    symbolic = {  # as the replay reported it (its details: the fingerprint's shape, mask and magnitude)
        "mode": "symbolic",
        "status": "fail",
        "message": "588 of 588 values differ",
        "details": {
            "expected_shape": [2, 7, 7, 6],
            "actual_shape": [2, 7, 7, 6],
            "expected_dtype": "float32",
            "actual_dtype": "float32",
            "max_abs_diff": 5.015770494937897,
            "mismatched": 588,
            "size": 588,
            "first_index": [0, 0, 0, 0],
            "mask": "e8392048",
            "values": "differ",
        },
    }
    monkeypatch.setattr(check_run, "run_check", lambda plan: _replay_report([eager, symbolic]))
    spec = loader.load()
    verdict = localise.check_replay(spec, "conv2d", "same", "cntk")  # any case the plan holds
    entry = [e for e in check_run.known_entries_for(spec) if e.id == verdict.known_id]
    assert verdict.status == "known" and entry and entry[0].reason.startswith("Strided 'same' convolutions")
