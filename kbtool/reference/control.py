"""Control flow and functional ops. Callables come from the worker's named steps (steps.py)."""
import numpy as np

from .core import learning_phase, multi_op, op

__all__ = ["switch", "in_train_phase", "in_test_phase", "rnn", "map_fn", "foldl", "foldr"]


@op
def switch(condition, then_expression, else_expression):
    cond = np.asarray(condition)
    then, other = np.asarray(then_expression), np.asarray(else_expression)
    if cond.ndim > then.ndim:
        raise ValueError("Rank of `condition` should be less than or equal to rank of `then_expression`")
    cond = cond.reshape(cond.shape + (1,) * (then.ndim - cond.ndim)) != 0  # broadcast over trailing dims
    return np.where(cond, then, other)


@op
def in_train_phase(x, alt, training=None):
    training = learning_phase() if training is None else training
    chosen = x if training in (1, True) else alt
    return chosen() if callable(chosen) else chosen


def in_test_phase(x, alt, training=None):
    return in_train_phase(alt, x, training=training)


def _rnn_leaves(step_function, inputs, initial_states, *args, **kwargs):
    return 2 + len(initial_states)


@multi_op(_rnn_leaves)
def rnn(step_function, inputs, initial_states, go_backwards=False, mask=None, constants=None, unroll=False,
        input_length=None):
    """Iterate over dim 1 of `inputs`; returns (last_output, outputs, new_states)."""
    inputs = np.asarray(inputs)
    if inputs.ndim < 3:
        raise ValueError("Input should be at least 3D.")
    states = [np.asarray(s) for s in initial_states]
    steps = range(inputs.shape[1])
    outputs = []
    for t in (reversed(steps) if go_backwards else steps):
        output, states = step_function(inputs[:, t], states + list(constants or []))
        states = [np.asarray(s) for s in states]
        outputs.append(np.asarray(output))
    stacked = np.stack(outputs, axis=1)
    return outputs[-1], stacked, states


@op
def map_fn(fn, elems, name=None, dtype=None):
    return np.stack([np.asarray(fn(e)) for e in np.asarray(elems)])


@op
def foldl(fn, elems, initializer=None, name=None):
    elems = np.asarray(elems)
    acc, rest = (elems[0], elems[1:]) if initializer is None else (np.asarray(initializer), elems)
    for e in rest:
        acc = np.asarray(fn(acc, e))
    return acc


@op
def foldr(fn, elems, initializer=None, name=None):
    return foldl(fn, np.asarray(elems)[::-1], initializer, name)
