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


STEPS = {
    "square": _square,
    "add": _add,
    "multiply": _multiply,
    "const_one": _const_one,
    "const_zero": _const_zero,
    "rnn_sum": _rnn_sum,
}


def get(name):
    try:
        return STEPS[name]
    except KeyError:
        raise ValueError("unknown step function {!r}; known: {}".format(name, ", ".join(sorted(STEPS))))
