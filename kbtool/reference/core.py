"""The Keras-backend-API plumbing of the NumPy reference: variables, placeholders, functions.

Tensors are NumPy arrays. For the symbolic path, `placeholder` returns a `Symbol`, and every
op wrapped with `@op` returns a deferred `Symbol` when any argument is symbolic; `function`
evaluates such a graph with the fed values. So the reference answers both ways of calling
the API, like the real backends.
"""

import functools
import operator
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import numpy as np
from numpy.typing import NDArray

from kbtool.vocabulary import CASE_DEFAULTS, DATA_FORMATS

_CONFIG: Dict[str, Any] = dict(
    CASE_DEFAULTS, learning_phase=0
)  # the documented keras.json defaults; set_floatx & co. change them
_UIDS: Dict[str, int] = {}

Shape = Optional[Tuple[Optional[int], ...]]  # a static shape: None where a dim (or the rank) is unknown
Bindings = Dict["Symbol", Any]  # what each symbol stands for in one run of a function: fed or computed values


class Symbol:
    """A symbolic tensor: a placeholder (fn is None) or a deferred op call."""

    def __init__(
        self,
        fn: Optional[Callable[..., Any]] = None,
        args: Sequence[Any] = (),
        kwargs: Optional[Dict[str, Any]] = None,
        shape: Shape = None,
        dtype: Optional[str] = None,
        name: Optional[str] = None,
    ) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs or {}
        self._shape, self.dtype, self.name = shape, dtype, name
        self.sparse = False  # a sparse placeholder is fed a dense array all the same (the reference computes densely)

    @property
    def shape(self) -> Shape:
        """The static shape: a placeholder's own, a deferred result's as int_shape infers it (a framework reads it
        from its tensors: Keras's list(output.shape))."""
        return self._shape if self.fn is None else _static_shape(self)

    @shape.setter
    def shape(self, value: Shape) -> None:
        self._shape = value

    def evaluate(self, bindings: Bindings) -> Any:
        """This symbol's value: its inputs first, each node once, without recursion (a whole model's graph is
        deeper than Python's recursion limit)."""
        _RUNNING.append(bindings)
        try:
            self._run(bindings)
        finally:
            _RUNNING.pop()
        return bindings[self]

    def _run(self, bindings: Bindings) -> None:
        pending: List[Tuple[Symbol, bool]] = [(self, False)]
        while pending:
            node, ready = pending.pop()
            if node in bindings:
                continue
            if type(node) is not Symbol:  # a subclass evaluates itself (a gradient)
                node.evaluate(bindings)
            elif node.fn is None:
                raise ValueError(f"placeholder {node.name!r} was not fed")
            elif ready:
                args = _substitute(node.args, bindings)
                kwargs = {k: _substitute(v, bindings) for k, v in node.kwargs.items()}
                bindings[node] = node.fn(*args, **kwargs)
            else:
                pending.append((node, True))
                pending.extend((arg, False) for arg in _symbols((node.args, list(node.kwargs.values()))))

    def __repr__(self) -> str:
        return "<Symbol {} shape={}>".format(self.name or getattr(self.fn, "__name__", "?"), self._shape)

    # Python's operators, as graph backends' tensors have them (TensorFlow's, Theano's), each deferred to the NumPy
    # operator on the fed values. `==` and `!=` stay identity, as on a TensorFlow 1 tensor (symbols are dict keys).
    __array_ufunc__ = None  # ndarray <op> symbol: NumPy gives way to the symbol's reflected operator
    __hash__ = object.__hash__

    def __iter__(self) -> Any:
        raise TypeError("a symbolic tensor is not iterable")  # __getitem__ alone would make it an endless sequence

    def __getitem__(self, key: Any) -> "Symbol":
        return cast(Symbol, _operator("getitem", self, key))

    def __add__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("add", self, other))

    def __radd__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("add", other, self))

    def __sub__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("sub", self, other))

    def __rsub__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("sub", other, self))

    def __mul__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("mul", self, other))

    def __rmul__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("mul", other, self))

    def __truediv__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("truediv", self, other))

    def __rtruediv__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("truediv", other, self))

    def __floordiv__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("floordiv", self, other))

    def __rfloordiv__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("floordiv", other, self))

    def __mod__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("mod", self, other))

    def __rmod__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("mod", other, self))

    def __pow__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("pow", self, other))

    def __rpow__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("pow", other, self))

    def __matmul__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("matmul", self, other))

    def __rmatmul__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("matmul", other, self))

    def __lt__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("lt", self, other))

    def __le__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("le", self, other))

    def __gt__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("gt", self, other))

    def __ge__(self, other: Any) -> "Symbol":
        return cast(Symbol, _operator("ge", self, other))

    def __neg__(self) -> "Symbol":
        return cast(Symbol, _operator("neg", self))

    def __pos__(self) -> "Symbol":
        return cast(Symbol, _operator("pos", self))

    def __abs__(self) -> "Symbol":
        return cast(Symbol, _operator("abs", self))


class Stored(Symbol):
    """A symbol standing for a stored array that changes in place (a framework's variable): an op on it is deferred
    like an op on a placeholder, and sees the array as it is when the graph is run, not as it was when built."""

    def __init__(self, value: NDArray[Any], name: Optional[str] = None) -> None:
        Symbol.__init__(self, shape=tuple(int(d) for d in value.shape), dtype=str(value.dtype), name=name)
        self.value = value

    def evaluate(self, bindings: Bindings) -> Any:
        return bindings.setdefault(self, self.value)


_RUNNING: List[Bindings] = []  # the bindings of the graph runs in progress (innermost last)


def run_value(value: Any) -> Any:
    """A value made while a graph runs (a step function's result): a symbol in it (an op on a framework's variable,
    on a placeholder of the graph) evaluated with the feeds of the run in progress."""
    if isinstance(value, Symbol):
        return value.evaluate(_RUNNING[-1] if _RUNNING else {})
    if isinstance(value, (list, tuple)):
        return type(value)(run_value(v) for v in value)
    return value


def _symbols(value: Any) -> List[Symbol]:
    """The symbols in a (nested) argument."""
    if isinstance(value, Symbol):
        return [value]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _symbols(v)]
    return []


def _has_symbol(value: Any) -> bool:
    if isinstance(value, Symbol):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_symbol(v) for v in value)
    return False


def _substitute(value: Any, bindings: Bindings) -> Any:
    if isinstance(value, Symbol):
        return value.evaluate(bindings)
    if isinstance(value, list):
        return [_substitute(v, bindings) for v in value]
    if isinstance(value, tuple):
        return tuple(_substitute(v, bindings) for v in value)
    return value


def op(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Make a NumPy function usable on symbols: defer the call until `function` feeds values."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _has_symbol(args) or _has_symbol(list(kwargs.values())):
            return Symbol(fn, args, kwargs)
        return fn(*args, **kwargs)

    return wrapper


@op
def _operator(name: str, *operands: Any) -> Any:
    """A Python operator on fed values (NumPy's rules: x + 1.0 keeps a float32 x float32)."""
    return getattr(operator, name)(*operands)


def multi_op(count: Callable[..., int]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Like `op`, for functions returning several tensors: `count(*args, **kwargs)` says how many
    leaves the (flattened) result has, so a symbolic call can return one symbol per leaf."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        deferred = op(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            result = deferred(*args, **kwargs)
            if not isinstance(result, Symbol):
                return result
            return tuple(Symbol(_leaf, (result, i)) for i in range(count(*args, **kwargs)))

        return wrapper

    return decorate


def _leaf(value: Any, index: int) -> Any:
    return _flat(value)[index]


def _flat(value: Any) -> List[Any]:
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _flat(item)]
    return [value]


def normalize_data_format(data_format: Optional[str]) -> str:
    data_format = image_data_format() if data_format is None else data_format
    if data_format not in DATA_FORMATS:
        raise ValueError(f"Unknown data_format: {data_format}")
    return data_format


# -- configuration -------------------------------------------------------------------------
def backend() -> str:
    return "numpy"


def floatx() -> str:
    value: str = _CONFIG["floatx"]
    return value


def set_floatx(value: Any) -> None:
    if value not in ("float16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value}")
    _CONFIG["floatx"] = str(value)


def epsilon() -> float:
    value: float = _CONFIG["epsilon"]
    return value


def set_epsilon(value: Any) -> None:
    _CONFIG["epsilon"] = float(value)


def image_data_format() -> str:
    value: str = _CONFIG["image_data_format"]
    return value


def set_image_data_format(data_format: Optional[str]) -> None:
    if data_format not in DATA_FORMATS:
        raise ValueError(f"Unknown data_format: {data_format}")
    _CONFIG["image_data_format"] = str(data_format)


def image_dim_ordering() -> str:
    """Keras 1.x name: 'tf' for channels_last, 'th' for channels_first."""
    return "tf" if image_data_format() == "channels_last" else "th"


def set_image_dim_ordering(dim_ordering: Any) -> None:
    if dim_ordering not in ("tf", "th"):
        raise ValueError(f"Unknown dim_ordering: {dim_ordering}")
    set_image_data_format("channels_last" if dim_ordering == "tf" else "channels_first")


def learning_phase() -> int:
    value: int = _CONFIG["learning_phase"]
    return value


def set_learning_phase(value: Any) -> None:
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    _CONFIG["learning_phase"] = value


def get_uid(prefix: str = "") -> int:
    _UIDS[prefix] = _UIDS.get(prefix, 0) + 1
    return _UIDS[prefix]


def reset_uids() -> None:
    _UIDS.clear()


def manual_variable_initialization(value: Any) -> None:
    _CONFIG["manual_init"] = bool(value)


def clear_session() -> None:
    # a new graph: uids start again and the learning phase is no longer fixed (test phase, 0, by default);
    # floatx, epsilon and the data format are configuration, not graph state, and stay
    reset_uids()
    _CONFIG["learning_phase"] = 0


# -- tensors -------------------------------------------------------------------------------
class Tensor(np.ndarray):
    """A backend tensor (what K.constant returns): an ndarray that `is_tensor` recognises."""


class Variable(Tensor):
    """A variable: a tensor that the update ops and set_value change in place."""


def _dense(value: Any) -> Any:
    """A sparse matrix (anything with toarray(), as scipy.sparse) as the dense array it stands for."""
    return value.toarray() if hasattr(value, "toarray") else value


def variable(
    value: Any, dtype: Optional[str] = None, name: Optional[str] = None, constraint: Any = None
) -> NDArray[Any]:
    return np.array(_dense(value), dtype=dtype or floatx()).view(Variable)


def is_tensor(x: Any) -> bool:
    return isinstance(x, (Tensor, Symbol))


def is_keras_tensor(x: Any) -> bool:
    if not is_tensor(x):
        raise ValueError(
            f"Unexpectedly found an instance of type `{type(x).__name__}`. Expected a symbolic tensor instance."
        )
    return False  # only layer outputs are Keras tensors; the reference has no layers


@op
def shape(x: Any) -> Any:
    # deferred on symbols: the symbolic shape is the fed value's shape (None dims included)
    return np.array(np.shape(x), dtype="int32")


def count_params(x: Any) -> int:
    # static: the product of int_shape (a None dim has no static count)
    dims = int_shape(x)
    if dims is None or any(d is None for d in dims):
        raise ValueError(f"count_params needs a fully defined static shape, got {dims}")
    return int(np.prod(cast(Tuple[int, ...], dims), dtype="int64"))


def get_value(x: Any) -> NDArray[Any]:
    return np.array(x)


def batch_get_value(ops: Sequence[Any]) -> List[NDArray[Any]]:
    return [get_value(x) for x in ops]


def _assign(x: NDArray[Any], value: Any) -> NDArray[Any]:
    """Write `value` into variable `x` in place; like a variable assignment, the shape must match."""
    value = np.asarray(value)
    if value.shape != x.shape:
        raise ValueError(f"cannot assign a value of shape {value.shape} to a variable of shape {x.shape}")
    x[...] = value.astype(x.dtype)
    return x


def set_value(x: NDArray[Any], value: Any) -> None:
    _assign(x, value)


def batch_set_value(tuples: Any) -> None:
    for x, value in tuples:
        set_value(x, value)


@op
def print_tensor(x: Any, message: str = "") -> Any:
    # stdout, as Keras' backends print; invoke.evaluate captures it, so the caller's stdout stays clean
    print(message, np.asarray(x), file=sys.stdout)
    return x


def stop_gradient(variables: Any) -> Any:
    return variables


def constant(
    value: Any, dtype: Optional[str] = None, shape: Optional[Sequence[int]] = None, name: Optional[str] = None
) -> NDArray[Any]:
    array = np.array(value, dtype=dtype or floatx())
    if shape is not None:
        # a scalar fills the shape; a value with as many elements is reshaped (tf.constant)
        shape = tuple(shape)
        same_size = array.ndim > 0 and array.size == int(np.prod(shape, dtype="int64"))
        array = array.reshape(shape) if same_size else np.broadcast_to(array, shape).copy()
    return array.view(Tensor)


def placeholder(
    shape: Optional[Sequence[Optional[int]]] = None,
    ndim: Optional[int] = None,
    dtype: Optional[str] = None,
    sparse: bool = False,
    name: Optional[str] = None,
) -> Symbol:
    if shape is None and ndim is not None:
        shape = (None,) * ndim
    symbol = Symbol(shape=tuple(shape) if shape is not None else None, dtype=dtype or floatx(), name=name)
    symbol.sparse = bool(sparse)  # fed a dense array all the same (the reference computes densely)
    return symbol


def is_placeholder(x: Any) -> bool:
    return isinstance(x, Symbol) and x.fn is None and not isinstance(x, Stored)


def eval(x: Any) -> NDArray[Any]:
    if isinstance(x, Symbol):
        raise ValueError("cannot eval a symbolic tensor without feeding its placeholders; use function()")
    return np.array(x)


def function(
    inputs: Sequence[Symbol], outputs: Any, updates: Optional[Sequence[Any]] = None, **kwargs: Any
) -> Callable[[Sequence[Any]], Any]:
    if kwargs:
        raise ValueError(f"Invalid argument {sorted(kwargs)[0]} passed to K.function")
    single = not isinstance(outputs, (list, tuple))
    outputs = [outputs] if single else list(outputs)

    def run(values: Sequence[Any]) -> Any:
        if len(values) != len(inputs):
            raise ValueError(f"expected {len(inputs)} inputs, got {len(values)}")
        bindings = {ph: np.asarray(_dense(v)) for ph, v in zip(inputs, values)}
        results = [_substitute(out, bindings) for out in outputs]
        for update in updates or []:
            _substitute(update, bindings)
        return results[0] if single else results

    return run


def int_shape(x: Any) -> Shape:
    if isinstance(x, Symbol) and getattr(x.fn, "__name__", "") == "print_tensor":
        return int_shape(x.args[0])  # x itself, printed when run
    if isinstance(x, Symbol):
        return x.shape if x.fn is None else _static_shape(x)
    return tuple(int(d) for d in np.shape(x))


# the sizes a deferred result's unknown placeholder dims are given to find its static shape (two, so that a dim that
# follows them shows it)
_STATIC_FILLS = (16, 17)


def _static_shape(symbol: Symbol) -> Shape:
    """A deferred result's static shape, as a graph backend infers it: the call run on placeholders filled with ones,
    each unknown dim given one size and then another; a dim that stays the same is known, one that follows them is
    None. None when it cannot run so (a call that prints, a placeholder of unknown rank, a call that raises)."""
    probed = _probe(symbol)
    return None if probed is None else probed[0]


_Probe = Optional[Tuple[Tuple[Optional[int], ...], str]]  # a deferred result's static shape and dtype


def _probe_leaves(symbol: Symbol) -> Optional[List[Symbol]]:
    """The symbols a probe of `symbol` feeds: its placeholders, and the symbols on its way that state their static
    shape (`_keras_shape`: a Keras layer's output, so a model's graph is probed a layer at a time, not from its
    inputs at every call); None when one cannot be fed (a placeholder of unknown rank, a print on the way)."""
    leaves: List[Symbol] = []
    pending: List[Any] = [symbol]
    seen = set()
    while pending:
        item = pending.pop()
        if isinstance(item, (list, tuple)):
            pending.extend(item)
        elif isinstance(item, Symbol) and id(item) not in seen:
            seen.add(id(item))
            if isinstance(item, Stored):
                continue  # its own value, fed by itself
            if item.fn is None or (item is not symbol and _stated_shape(item) is not None):
                if (item.shape if item.fn is None else _stated_shape(item)) is None:
                    return None
                leaves.append(item)
            elif getattr(item.fn, "__name__", "") == "print_tensor" or type(item) is not Symbol:
                return None
            else:
                pending.extend(item.args)
                pending.extend(item.kwargs.values())
    return leaves


def _stated_shape(symbol: Symbol) -> Shape:
    stated = getattr(symbol, "_keras_shape", None)
    return tuple(stated) if isinstance(stated, (list, tuple)) else None


def _probe(symbol: Symbol) -> _Probe:
    """The static shape and dtype of a deferred result (cached: a symbol's graph never changes). Where the unknown
    dims cannot take the probe's two sizes (a target placeholder of unknown dims against a layer's output), they
    are all given 1, which only the rank survives: every dim None, as a graph backend knows a rank without sizes."""
    if "_probed" in symbol.__dict__:
        return cast(_Probe, symbol.__dict__["_probed"])
    symbol.__dict__["_probed"] = None  # a probe that fails (or recurses into itself) is not retried
    leaves = _probe_leaves(symbol)
    if leaves is None:
        return None
    first, second = (_probe_run(symbol, leaves, fill) for fill in _STATIC_FILLS)
    if first is not None and second is not None and first.ndim == second.ndim:
        shape = tuple(int(a) if a == b else None for a, b in zip(first.shape, second.shape))
        symbol.__dict__["_probed"] = (shape, str(first.dtype))
    elif first is None or second is None:
        ones = _probe_run(symbol, leaves, 1)
        if ones is not None:
            symbol.__dict__["_probed"] = ((None,) * ones.ndim, str(ones.dtype))
    return cast(_Probe, symbol.__dict__["_probed"])


def _probe_run(symbol: Symbol, leaves: List[Symbol], fill: int) -> Optional[NDArray[Any]]:
    """`symbol` evaluated on ones, each unknown dim of its leaves `fill` long; None where that raises."""
    feeds: Bindings = {}
    for leaf in leaves:
        stated = leaf.shape if leaf.fn is None else _stated_shape(leaf)
        kind = (leaf.dtype if leaf.fn is None else dtype(leaf)) or floatx()
        feeds[leaf] = np.ones(tuple(fill if d is None else d for d in stated or ()), dtype=kind)
    try:
        with np.errstate(all="ignore"):
            return np.asarray(symbol.evaluate(feeds))
    except Exception:
        return None


def ndim(x: Any) -> Optional[int]:
    shape = int_shape(x)
    return None if shape is None else len(shape)


def dtype(x: Any) -> Optional[str]:
    if isinstance(x, Symbol) and x.dtype is None and x.fn is not None:
        probed = _probe(x)  # a deferred result's dtype: what its call gives on fed values
        return None if probed is None else probed[1]
    return x.dtype if isinstance(x, Symbol) else str(np.asarray(x).dtype)
