# py36-compatible
"""Named step functions for ops that take callables (map_fn, foldl, foldr, rnn, switch...).

The spec refers to these by name and never contains code. Each entry receives the backend
module `K` and returns the callable, so the same step means the same thing on every backend.
"""


def _square(K):
    return lambda x: K.square(x)


def _add(K):
    return lambda acc, x: acc + x


def _multiply(K):
    return lambda acc, x: acc * x


def _const_one(K):
    return lambda: K.constant(1.0)


def _const_zero(K):
    return lambda: K.constant(0.0)


def _rnn_sum(K):
    # step(inputs, states) -> (output, new_states): a running sum, the simplest recurrence
    def step(inputs, states):
        new_state = states[0] + inputs
        return new_state, [new_state]

    return step


def _subtract(K):
    # not commutative: tells foldl from foldr and acc from x
    return lambda acc, x: acc - x


def _sum_all(K):
    # map_fn with a result of another shape than the element: each row to a scalar
    return lambda x: K.sum(x)


def _rnn_scaled_sum(K):
    # uses the rnn `constants`: they follow the states in the step's second argument
    def step(inputs, states):
        new_state = states[0] + inputs * states[1]
        return new_state, [new_state]

    return step


def _rnn_two_states(K):
    # two states, and an output that is neither of them
    def step(inputs, states):
        total = states[0] + inputs
        decayed = states[1] * 0.5 + inputs
        return total - decayed, [total, decayed]

    return step


def _rnn_double(K):
    # uses no state: the output is twice the input, the (possibly empty) states pass through
    def step(inputs, states):
        return inputs * 2.0, list(states)

    return step


def _rnn_pairs(K):
    # a rank-3 output (samples, features, 2): each input twice along a new last axis; the states pass through
    def step(inputs, states):
        return K.tile(K.expand_dims(inputs), [1, 1, 2]), list(states)

    return step


def _rnn_count(K):
    # the output is the input; every state, whatever its rank, counts the (unmasked) steps
    def step(inputs, states):
        return inputs, [state + 1.0 for state in states]

    return step


def _rnn_first_state(K):
    # as an LSTM: two states [h, c] and the output is the first, h; the input comes first in each sum (on
    # placeholders keras 2.3.1's CNTK recurrence fails when an elementwise op's first operand is a state)
    def step(inputs, states):
        h = inputs + states[0]
        c = inputs * 0.5 + states[1] * 0.5
        return h, [h, c]

    return step


STEPS = {
    "square": _square,
    "add": _add,
    "multiply": _multiply,
    "const_one": _const_one,
    "const_zero": _const_zero,
    "rnn_sum": _rnn_sum,
    "subtract": _subtract,
    "sum_all": _sum_all,
    "rnn_scaled_sum": _rnn_scaled_sum,
    "rnn_two_states": _rnn_two_states,
    "rnn_double": _rnn_double,
    "rnn_pairs": _rnn_pairs,
    "rnn_count": _rnn_count,
    "rnn_first_state": _rnn_first_state,
}


def get(name):
    try:
        return STEPS[name]
    except KeyError:
        raise ValueError("unknown step function {!r}; known: {}".format(name, ", ".join(sorted(STEPS))))
