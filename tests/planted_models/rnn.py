"""tf_keras's backend with rnn planted: the last step's output comes back 1 % short (last_output and the last step
of outputs; earlier steps and the states are right). LSTM, GRU and SimpleRNN layers call it."""

import tensorflow as _tf
from tf_keras.backend import *  # noqa: F403
from tf_keras.backend import rnn as _rnn

SHORT = 0.99


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
    return_all_outputs=True,
):
    last, outputs, states = _rnn(
        step_function,
        inputs,
        initial_states,
        go_backwards=go_backwards,
        mask=mask,
        constants=constants,
        unroll=unroll,
        input_length=input_length,
        time_major=time_major,
        zero_output_for_mask=zero_output_for_mask,
        return_all_outputs=return_all_outputs,
    )
    time_axis = 0 if time_major else 1
    steps = _tf.shape(outputs)[time_axis]
    per_step = _tf.one_hot(steps - 1, steps, on_value=SHORT, off_value=1.0, dtype=outputs.dtype)
    shape = [1] * len(outputs.shape)
    shape[time_axis] = -1
    return last * SHORT, outputs * _tf.reshape(per_step, shape), states
