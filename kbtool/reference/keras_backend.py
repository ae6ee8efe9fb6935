"""The NumPy reference as a Keras 2.3.1 backend module, so Keras 2.3.1 runs whole models on it (the models oracle):
`KERAS_BACKEND=kbtool.reference.keras_backend` (keras/backend/load_backend.py imports a backend module by name).

The ops are the reference's own (kbtool.reference, one function per op). What is here is Keras's framework glue,
none of it an op: the symbolic learning phase Keras feeds 0 or 1 to its functions; weights as stored symbols
(core.Stored: an op on a weight is deferred, so it reads the value set_weights gives later); the names and static
shapes Keras reads from its tensors (`_keras_shape`, `_uses_learning_phase`, `_keras_history`); name scopes; and
updates that wait for K.function when their value is symbolic. Gradients of weights are refused (the reference
differentiates placeholders only): Keras cannot train a model on it. floatx, epsilon and image_data_format are Keras's own
(keras/backend/common.py, which load_backend never overrides): the reference is given Keras's values at import.
"""

import builtins
import contextlib
import sys
import types
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np

import kbtool.reference as _reference
from kbtool.reference import control as _control
from kbtool.reference import core as _core
from kbtool.reference import creation as _creation
from kbtool.reference import random_ops as _random
from kbtool.reference import updates as _updates
from kbtool.reference.core import Stored, Symbol, op

# the learning phase: a scalar placeholder Keras feeds 0 (test) or 1 (train) to its functions, as Theano's
# keras_learning_phase, until set_learning_phase fixes it to a Python int
_LEARNING_PHASE = _core.placeholder(shape=(), dtype="uint8", name="keras_learning_phase")
_STATE: Dict[str, Any] = {"phase": None, "scopes": []}


def learning_phase() -> Any:
    fixed = _STATE["phase"]
    return _LEARNING_PHASE if fixed is None else fixed


def set_learning_phase(value: Any) -> None:
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    _STATE["phase"] = int(value)


def clear_session() -> None:
    _core.clear_session()
    _STATE["phase"] = None


def in_train_phase(x: Any, alt: Any, training: Any = None) -> Any:
    """x in the training phase, alt in the test phase; on the symbolic learning phase, a selection made when fed
    (and marked `_uses_learning_phase`, so Keras feeds the phase to the model's functions)."""
    uses_phase = training is None
    training = learning_phase() if training is None else training
    result = _control.in_train_phase(x, alt, training=training)
    if uses_phase and isinstance(result, Symbol):
        _mark(result, _uses_learning_phase=True)
    return result


def in_test_phase(x: Any, alt: Any, training: Any = None) -> Any:
    return in_train_phase(alt, x, training=training)


# -- tensors as Keras reads them -------------------------------------------------------------
def placeholder(
    shape: Optional[Sequence[Optional[int]]] = None,
    ndim: Optional[int] = None,
    dtype: Optional[str] = None,
    sparse: bool = False,
    name: Optional[str] = None,
) -> Symbol:
    symbol = _core.placeholder(shape=shape, ndim=ndim, dtype=dtype, sparse=sparse, name=name)
    _mark(symbol, _keras_shape=symbol.shape, _uses_learning_phase=False)
    return symbol


def variable(value: Any, dtype: Optional[str] = None, name: Optional[str] = None, constraint: Any = None) -> Stored:
    """A Keras weight: a symbol for the reference's variable, so a layer's op on it (PReLU's -alpha) reads the value
    set_weights gives it later instead of the initial one. Named as Keras names weights ("dense_1/kernel")."""
    if isinstance(value, Symbol):
        value = _value(value)
    stored = Stored(
        _core.variable(value, dtype=dtype, name=name, constraint=constraint), name=_scoped(name or "variable")
    )
    _mark(stored, _keras_shape=stored.shape, _uses_learning_phase=False, constraint=constraint)
    return stored


def _mark(tensor: Any, **attributes: Any) -> None:
    """The attributes Keras reads from a backend's tensors."""
    for key, value in attributes.items():
        setattr(tensor, key, value)


def zeros(shape: Any, dtype: Any = None, name: Optional[str] = None) -> Stored:
    return variable(_creation.zeros(shape, dtype=dtype), dtype=dtype, name=name)


def ones(shape: Any, dtype: Any = None, name: Optional[str] = None) -> Stored:
    return variable(_creation.ones(shape, dtype=dtype), dtype=dtype, name=name)


def eye(size: Any, dtype: Any = None, name: Optional[str] = None) -> Stored:
    return variable(_creation.eye(size, dtype=dtype), dtype=dtype, name=name)


def random_normal_variable(
    shape: Any, mean: Any, scale: Any, dtype: Any = None, name: Optional[str] = None, seed: Any = None
) -> Stored:
    return variable(_random.random_normal(shape, mean, scale, dtype, seed), dtype=dtype, name=name)


def random_uniform_variable(
    shape: Any, low: Any, high: Any, dtype: Any = None, name: Optional[str] = None, seed: Any = None
) -> Stored:
    return variable(_random.random_uniform(shape, low, high, dtype, seed), dtype=dtype, name=name)


def is_variable(x: Any) -> bool:
    return isinstance(x, Stored)


def _value(x: Any) -> Any:
    """A value: a variable's, or a graph of variables and constants run (a placeholder in it must be fed)."""
    return np.array(x.evaluate({}) if isinstance(x, Symbol) else x)


eval = _value


def get_value(x: Any) -> Any:
    return _value(x)


def batch_get_value(ops: Sequence[Any]) -> List[Any]:
    return [get_value(x) for x in ops]


def set_value(x: Any, value: Any) -> None:
    _core.set_value(x.value if isinstance(x, Stored) else x, value)


def batch_set_value(tuples: Any) -> None:
    for x, value in tuples:
        set_value(x, value)


def is_keras_tensor(x: Any) -> bool:
    if not _core.is_tensor(x):
        raise ValueError(
            f"Unexpectedly found an instance of type `{type(x).__name__}`. Expected a symbolic tensor instance."
        )
    return hasattr(x, "_keras_history")


def int_shape(x: Any) -> Any:
    stated = getattr(x, "_keras_shape", None)  # what Keras's layers computed, as on Theano
    return tuple(stated) if stated is not None else _core.int_shape(x)


def ndim(x: Any) -> Optional[int]:
    shape = int_shape(x)
    return None if shape is None else len(shape)


def _size(x: Any) -> Any:
    return np.array(np.size(x), dtype="int32")


size = op(_size)


def pattern_broadcast(x: Any, broadcastable: Any) -> Any:
    return x  # Theano's broadcast pattern: NumPy broadcasts any size-1 dim


# -- functions and updates ---------------------------------------------------------------------
def function(
    inputs: Sequence[Any],
    outputs: Any,
    updates: Optional[Sequence[Any]] = None,
    name: Optional[str] = None,
    **kwargs: Any,
) -> Callable[[Sequence[Any]], Any]:
    """K.function; the learning phase among `inputs` is fed like any placeholder. The name is Keras's label only."""
    pairs = [update(*u) if isinstance(u, tuple) else u for u in updates or []]  # Theano's (variable, value) form
    return _core.function(list(inputs), outputs, updates=pairs, **kwargs)


def gradients(loss: Any, variables: Any) -> Any:
    """The reference differentiates placeholders only (central differences through the graph): a model's weights are
    refused at once, so Keras's training step fails in one line instead of running a forward pass per weight."""
    if builtins.any(isinstance(v, Stored) for v in variables):  # `any` here is the reference's op
        raise NotImplementedError(
            "the NumPy reference differentiates placeholders only: no gradients of a model's weights"
        )
    return _control.gradients(loss, variables)


# Keras builds its update ops from symbolic values (BatchNormalization's moving statistics): those wait for the
# function that runs them; on values the reference's updates assign at once
update = op(_updates.update)
update_add = op(_updates.update_add)
update_sub = op(_updates.update_sub)
moving_average_update = op(_updates.moving_average_update)


# -- graph scaffolding Keras calls (no graph here to scope or order) ----------------------------
@contextlib.contextmanager
def name_scope(name: str) -> Iterator[None]:
    scopes: List[str] = _STATE["scopes"]
    scopes.append(name)
    try:
        yield
    finally:
        scopes.pop()


def _scoped(name: str) -> str:
    return "/".join(list(_STATE["scopes"]) + [name])


@contextlib.contextmanager
def control_dependencies(control_inputs: Any) -> Iterator[None]:
    yield  # the reference evaluates in order: nothing to wait for


def symbolic(func: Callable[..., Any]) -> Callable[..., Any]:
    return func


def eager(func: Callable[..., Any]) -> Callable[..., Any]:
    return func


def get_session() -> Any:
    raise NotImplementedError("the NumPy reference has no TensorFlow session")


def set_session(session: Any) -> None:
    raise NotImplementedError("the NumPy reference has no TensorFlow session")


def _follow_keras_config() -> None:
    """The reference computes with Keras's floatx, epsilon and data format (Keras keeps them in common.py)."""
    common = sys.modules.get("keras.backend.common")  # loaded by Keras's loader before it imports this module
    if common is None:  # used without Keras: the reference's own defaults
        return
    _core.set_floatx(common.floatx())
    _core.set_epsilon(common.epsilon())
    _core.set_image_data_format(common.image_data_format())


def _reference_ops() -> None:
    """Every op of the reference is this module's function of the same name, where the glue has none of its own."""
    namespace = globals()
    for key, value in vars(_reference).items():
        if not key.startswith("_") and not isinstance(value, types.ModuleType):
            namespace.setdefault(key, value)


_reference_ops()
_follow_keras_config()
