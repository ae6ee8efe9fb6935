"""Control flow, functional ops and gradients. Callables come from the worker's named steps (steps.py)."""

from typing import Any, Optional

import numpy as np
from numpy.typing import NDArray

from kbtool.reference.core import Symbol, _has_symbol, learning_phase, multi_op, op, run_value
from kbtool.reference.finite_differences import central_differences

__all__ = ["switch", "in_train_phase", "in_test_phase", "rnn", "map_fn", "foldl", "foldr", "gradients"]


def _called(value: Any) -> Any:
    """A branch given as a callable (docs: "a tensor, or a callable that returns a tensor")."""
    return value() if callable(value) and not isinstance(value, (np.ndarray, Symbol)) else value


def switch(condition: Any, then_expression: Any, else_expression: Any) -> Any:
    return _switch(condition, _called(then_expression), _called(else_expression))


@op
def _switch(condition: Any, then_expression: Any, else_expression: Any) -> NDArray[Any]:
    cond = np.asarray(condition)
    then, other = np.asarray(then_expression), np.asarray(else_expression)
    if cond.ndim > then.ndim:
        raise ValueError("Rank of `condition` should be less than or equal to rank of `then_expression`")
    # a lower-rank condition selects along the leading dims: it is broadcast over the trailing ones
    cond = cond.reshape(cond.shape + (1,) * (then.ndim - cond.ndim)) != 0
    return np.where(cond, then, other)


def in_train_phase(x: Any, alt: Any, training: Any = None) -> Any:
    training = learning_phase() if training is None else training
    if isinstance(training, (bool, int)):  # a static flag picks a branch without building the other
        return _called(x) if training in (1, True) else _called(alt)
    return _select(training, _called(x), _called(alt))


@op
def _select(training: Any, x: Any, alt: Any) -> NDArray[Any]:
    return np.array(x if bool(np.asarray(training)) else alt)


def in_test_phase(x: Any, alt: Any, training: Any = None) -> Any:
    return in_train_phase(alt, x, training=training)


def _rnn_leaves(step_function: Any, inputs: Any, initial_states: Any, *args: Any, **kwargs: Any) -> Any:
    return 2 + len(initial_states)


def rnn(
    step_function: Any,
    inputs: Any,
    initial_states: Any,
    go_backwards: bool = False,
    mask: Any = None,
    constants: Any = None,
    unroll: bool = False,
    input_length: Any = None,
) -> Any:
    """Iterate over dim 1 of `inputs`; returns (last_output, outputs, new_states).

    Masked steps (mask 0) repeat the previous output (zeros before the first step) and keep the states.
    """
    shape = inputs.shape if isinstance(inputs, Symbol) else np.shape(inputs)
    if shape is not None and len(shape) < 3:
        raise ValueError("Input should be at least 3D.")
    if unroll and shape is not None and shape[1] is None and input_length is None:
        raise ValueError("Unrolling requires a fixed number of timesteps.")
    if mask is not None and not initial_states:
        raise ValueError("No initial states: a mask needs at least one state to keep.")
    result = _rnn(step_function, inputs, list(initial_states), go_backwards, mask, list(constants or []))
    if isinstance(result, tuple):  # symbolic: one symbol per leaf, the states nested again as a list
        return result[0], result[1], list(result[2:])
    return result


@multi_op(_rnn_leaves)
def _rnn(step_function: Any, inputs: Any, initial_states: Any, go_backwards: Any, mask: Any, constants: Any) -> Any:
    inputs = np.asarray(inputs)
    states = [np.asarray(s) for s in initial_states]
    if mask is not None:
        mask = np.asarray(mask)
        mask = mask.reshape(mask.shape[:2]) != 0  # (samples, time) or (samples, time, 1)
    steps = range(inputs.shape[1])
    outputs, previous = [], None
    for t in reversed(steps) if go_backwards else steps:
        output, new_states = run_value(step_function(inputs[:, t], states + constants))
        output, new_states = np.asarray(output), [np.asarray(s) for s in new_states]
        if mask is not None:
            previous = np.zeros_like(output) if previous is None else previous
            row = mask[:, t]

            def keep(ref: Any, row: Any = row) -> Any:
                return row.reshape((-1,) + (1,) * (ref.ndim - 1))

            output = np.where(keep(output), output, previous)
            new_states = [np.where(keep(new), new, old) for new, old in zip(new_states, states)]
        states, previous = new_states, output
        outputs.append(output)
    return outputs[-1], np.stack(outputs, axis=1), states


@op
def map_fn(fn: Any, elems: Any, name: Optional[str] = None, dtype: Any = None) -> NDArray[Any]:
    result = np.stack([np.asarray(run_value(fn(e))) for e in np.asarray(elems)])
    return result.astype(dtype) if dtype is not None else result


@op
def foldl(fn: Any, elems: Any, initializer: Any = None, name: Optional[str] = None) -> NDArray[Any]:
    elems = np.asarray(elems)
    acc, rest = (elems[0], elems[1:]) if initializer is None else (np.asarray(initializer), elems)
    for e in rest:
        acc = np.asarray(run_value(fn(acc, e)))
    return np.asarray(acc)


@op
def foldr(fn: Any, elems: Any, initializer: Any = None, name: Optional[str] = None) -> Any:
    """Right to left: the accumulator starts at elems[-1] (or initializer) and meets elems[-2], ... elems[0]."""
    return foldl(fn, np.asarray(elems)[::-1], initializer, name)


# -- gradients -------------------------------------------------------------------------------
class _Gradient(Symbol):
    """d loss / d variable by central differences in float64, through the symbolic graph.

    The reference has no autodiff: a graph built from placeholders is re-evaluated with the
    variable bumped, element by element. Only graphs (symbolic mode) can be differentiated.
    """

    def __init__(self, loss: Any, variable: Any) -> None:
        Symbol.__init__(self, shape=variable.shape, dtype=variable.dtype, name="gradient")
        self.loss, self.variable = loss, variable

    def evaluate(self, bindings: Any) -> Any:
        if self in bindings:
            return bindings[self]
        fed = {
            k: v for k, v in bindings.items() if isinstance(k, Symbol) and k.fn is None and not isinstance(k, _Gradient)
        }
        base = np.asarray(self.variable.evaluate(dict(fed)), dtype="float64")

        def total(value: Any) -> Any:
            trial = dict(fed)
            trial[self.variable] = value
            return float(np.sum(np.asarray(self.loss.evaluate(trial), dtype="float64")))

        grad = central_differences(total, base)
        dtype = np.asarray(bindings.get(self.variable, base)).dtype
        value = grad.astype(dtype if dtype.kind == "f" else "float64")
        bindings[self] = value
        return value


def gradients(loss: Any, variables: Any) -> Any:
    if not isinstance(loss, Symbol) or not all(isinstance(v, Symbol) for v in variables):
        raise NotImplementedError("the reference differentiates symbolic graphs only (use placeholders)")
    if not _has_symbol(list(variables)):
        raise ValueError("no variables to differentiate with respect to")
    return [_Gradient(loss, v) for v in variables]
