# py36-compatible
"""What a traced call that the reference cannot replay should have returned, by its definition, computed in the
worker: K.rnn takes a step function (a closure over the layer's engine tensors) that cannot cross the wire, so the
controller cannot run it on the reference. Its documented meaning is a loop: for each time step (reversed when
go_backwards), `output, states = step_function(inputs[:, t], states + constants)`; where the mask is 0 the previous
output and states are kept; the result is (last output, outputs stacked on axis 1, new states). That loop is run
here in NumPy around the engine's own step function, one step at a time, so a difference between it and the
engine's K.rnn is the scan's (its masking, its order, its states), not the step's arithmetic."""

import numpy as np

RNN_PARAMS = (
    "step_function",
    "inputs",
    "initial_states",
    "go_backwards",
    "mask",
    "constants",
    "unroll",
    "input_length",
)


def _flat(states):
    if isinstance(states, (list, tuple)):
        found = []
        for s in states:
            found.extend(_flat(s))
        return found
    return [states]


def rnn_loop(step, x, states, constants, mask, go_backwards, zero_output_for_mask, like):
    """The definition's loop on NumPy values; `step(x_t, states, constants)` -> (output, [states]) in NumPy."""
    steps = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    outputs, previous = [], None
    for t in steps:
        output, new_states = step(x[:, t], states, constants)
        if previous is None:
            previous = np.zeros_like(output)
        if mask is not None:
            keep = mask[:, t].astype(bool)
            shaped = keep.reshape((-1,) + (1,) * (output.ndim - 1))
            new_states = [np.where(keep.reshape((-1,) + (1,) * (n.ndim - 1)), n, s) for n, s in zip(new_states, states)]
            output = np.where(shaped, output, previous)
            outputs.append(np.where(shaped, output, 0) if zero_output_for_mask else output)
        else:
            outputs.append(output)
        previous, states = output, new_states
    return [previous, np.stack(outputs, axis=1)] + list(states)


def bound(args, kwargs):
    found = dict(zip(RNN_PARAMS, args))
    found.update(kwargs)
    return found


def eager_rnn(api, args, kwargs, to_numpy, to_tensor):
    """The definition of an eager engine's K.rnn call (tf_keras): the engine's step function on tensors made from
    NumPy values, one step at a time."""
    call = bound(args, kwargs)
    x = to_numpy(call["inputs"])
    if call.get("time_major"):
        x = np.swapaxes(x, 0, 1)
    states = [to_numpy(s) for s in _flat(call["initial_states"])]
    constants = list(call.get("constants") or [])
    mask = call.get("mask")
    mask = None if mask is None else to_numpy(mask)
    as_tuple = isinstance(call["initial_states"], tuple)

    def step(x_t, values, consts):
        tensors = [to_tensor(v) for v in values] + consts
        output, new_states = call["step_function"](to_tensor(x_t), tuple(tensors) if as_tuple else tensors)
        return to_numpy(output), [to_numpy(s) for s in _flat(new_states)]

    found = rnn_loop(
        step, x, states, constants, mask, call.get("go_backwards", False), call.get("zero_output_for_mask", False), None
    )
    if call.get("time_major"):
        found[1] = np.swapaxes(found[1], 0, 1)
    return found


def value_of(kb, known, tensor):
    """A symbolic argument's value: the trace's fetch, else a variable's own value (a stateful layer's states are
    variables; CNTK's are Parameters, which no K.is_tensor/is_variable test finds, so the trace fetched none)."""
    if id(tensor) in known:
        return np.asarray(known[id(tensor)])
    return np.asarray(kb.get_value(tensor))


def graph_rnn(api, args, kwargs, known, fed, values, training, compile_fn):
    """The definition of a graph engine's K.rnn call (Keras 2): the step function built once on placeholders and run
    as a K.function per time step; `known` holds the values of the call's symbolic arguments."""
    kb = api.keras.backend
    call = bound(args, kwargs)
    x = value_of(kb, known, call["inputs"])
    initial = _flat(call["initial_states"])
    states = [value_of(kb, known, s) for s in initial]
    constants = list(call.get("constants") or [])
    mask = call.get("mask")
    mask = None if mask is None else value_of(kb, known, mask)
    x_ph = kb.placeholder(shape=x[:, 0].shape, dtype=str(x.dtype))
    state_ph = [kb.placeholder(shape=s.shape, dtype=str(s.dtype)) for s in states]
    output, new_states = call["step_function"](x_ph, state_ph + constants)
    fn, takes_phase = compile_fn(api, [x_ph] + state_ph + list(fed), [output] + _flat(new_states), training)
    phase = [int(bool(training))] if takes_phase else []

    def step(x_t, current, consts):
        got = fn([x_t] + list(current) + list(values) + phase)
        return np.asarray(got[0]), [np.asarray(g) for g in got[1:]]

    return rnn_loop(step, x, states, constants, mask, call.get("go_backwards", False), False, None)
