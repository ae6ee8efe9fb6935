"""K.rnn judged by its definition: the worker's loop over the engine's step function (definitions.py), and the
controller naming K.rnn when the engine's scan differs from that loop."""

import numpy as np

from kbtool.models.localise import first_cause, localise
from kbtool.models.records import Localisation, ModelResult, TracedCall
from kbtool.specs import loader
from kbtool.worker.modelzoo.definitions import rnn_loop


def _cumsum_step(x_t, states, constants):
    total = states[0] + x_t
    return total, [total]


def test_the_loop_is_a_scan_with_masking_and_reversal() -> None:
    x = np.arange(12, dtype="float32").reshape(2, 3, 2)
    mask = np.array([[1, 1, 1], [1, 0, 1]])
    last, outputs, state = rnn_loop(_cumsum_step, x, [np.zeros((2, 2), "float32")], [], mask, False, False, None)
    # row 1 skips step 1: its running sum keeps step 0's value there, then adds step 2
    assert outputs[1, 1].tolist() == outputs[1, 0].tolist()
    assert np.array_equal(last[0], x[0].sum(axis=0))
    assert np.array_equal(last[1], x[1, 0] + x[1, 2])
    assert np.array_equal(state, last)
    backwards = rnn_loop(_cumsum_step, x, [np.zeros((2, 2), "float32")], [], None, True, False, None)[1]
    assert np.array_equal(backwards[0, 0], x[0, 2])  # the first output is the last step's
    zeroed = rnn_loop(_cumsum_step, x, [np.zeros((2, 2), "float32")], [], mask, False, True, None)[1]
    assert zeroed[1, 1].tolist() == [0.0, 0.0]


def _rnn_call(shift: float) -> TracedCall:
    x = np.arange(12, dtype="float32").reshape(2, 3, 2)
    expected = tuple(rnn_loop(_cumsum_step, x, [np.zeros((2, 2), "float32")], [], None, False, False, None))
    got = tuple(a + shift for a in expected)
    return TracedCall("rnn", ({"repr": "<step>"},), {}, (), got[0], outputs=got, expected=expected)


def test_an_rnn_that_agrees_with_its_definition_is_not_the_cause() -> None:
    cause, notes = first_cause([_rnn_call(0.0)], loader.load())
    assert cause is None


def test_an_rnn_whose_scan_differs_from_its_definition_is_named() -> None:
    spec = loader.load()
    cause, _ = first_cause([_rnn_call(1e-2)], spec)
    assert cause is not None and cause.definitional and cause.traced == "rnn"
    result = ModelResult("lstm", "x", "unexplained", "reference", localisation=Localisation("lstm", "LSTM"))
    where, emitted = localise(result, [_rnn_call(1e-2)], spec)
    assert where.call == "rnn" and where.verdict == "unexplained" and emitted is None
    assert "step function" in where.why_not
