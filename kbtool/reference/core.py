"""The Keras-backend-API plumbing of the NumPy reference: variables, placeholders, functions.

Tensors are NumPy arrays. For the symbolic path, `placeholder` returns a `Symbol`, and every
op wrapped with `@op` returns a deferred `Symbol` when any argument is symbolic; `function`
evaluates such a graph with the fed values. So the reference answers both ways of calling
the API, like the real backends.
"""
import functools

import numpy as np

_CONFIG = {"floatx": "float32", "epsilon": 1e-07, "image_data_format": "channels_last"}
DATA_FORMATS = ("channels_first", "channels_last")


class Symbol:
    """A symbolic tensor: a placeholder (fn is None) or a deferred op call."""

    def __init__(self, fn=None, args=(), kwargs=None, shape=None, dtype=None, name=None):
        self.fn, self.args, self.kwargs = fn, args, kwargs or {}
        self.shape, self.dtype, self.name = shape, dtype, name

    def evaluate(self, bindings):
        if self in bindings:
            return bindings[self]
        if self.fn is None:
            raise ValueError("placeholder {!r} was not fed".format(self.name))
        args = _substitute(self.args, bindings)
        kwargs = {k: _substitute(v, bindings) for k, v in self.kwargs.items()}
        value = self.fn(*args, **kwargs)
        bindings[self] = value
        return value

    def __repr__(self):
        return "<Symbol {} shape={}>".format(self.name or getattr(self.fn, "__name__", "?"), self.shape)


def _has_symbol(value):
    if isinstance(value, Symbol):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_symbol(v) for v in value)
    return False


def _substitute(value, bindings):
    if isinstance(value, Symbol):
        return value.evaluate(bindings)
    if isinstance(value, list):
        return [_substitute(v, bindings) for v in value]
    if isinstance(value, tuple):
        return tuple(_substitute(v, bindings) for v in value)
    return value


def op(fn):
    """Make a NumPy function usable on symbols: defer the call until `function` feeds values."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if _has_symbol(args) or _has_symbol(list(kwargs.values())):
            return Symbol(fn, args, kwargs)
        return fn(*args, **kwargs)

    return wrapper


def normalize_data_format(data_format):
    data_format = image_data_format() if data_format is None else data_format
    if data_format not in DATA_FORMATS:
        raise ValueError("Unknown data_format: {}".format(data_format))
    return data_format


# -- configuration -------------------------------------------------------------------------
def backend():
    return "numpy"


def floatx():
    return _CONFIG["floatx"]


def set_floatx(value):
    if value not in ("float16", "float32", "float64"):
        raise ValueError("Unknown floatx type: {}".format(value))
    _CONFIG["floatx"] = str(value)


def epsilon():
    return _CONFIG["epsilon"]


def set_epsilon(value):
    _CONFIG["epsilon"] = float(value)


def image_data_format():
    return _CONFIG["image_data_format"]


def set_image_data_format(data_format):
    if data_format not in DATA_FORMATS:
        raise ValueError("Unknown data_format: {}".format(data_format))
    _CONFIG["image_data_format"] = str(data_format)


# -- tensors -------------------------------------------------------------------------------
def variable(value, dtype=None, name=None, constraint=None):
    return np.array(value, dtype=dtype or floatx())


def constant(value, dtype=None, shape=None, name=None):
    array = np.array(value, dtype=dtype or floatx())
    return np.broadcast_to(array, shape).copy() if shape is not None else array


def placeholder(shape=None, ndim=None, dtype=None, sparse=False, name=None):
    if shape is None and ndim is not None:
        shape = (None,) * ndim
    return Symbol(shape=tuple(shape) if shape is not None else None, dtype=dtype or floatx(), name=name)


def is_placeholder(x):
    return isinstance(x, Symbol) and x.fn is None


def eval(x):
    if isinstance(x, Symbol):
        raise ValueError("cannot eval a symbolic tensor without feeding its placeholders; use function()")
    return np.asarray(x)


def function(inputs, outputs, updates=None, **kwargs):
    single = not isinstance(outputs, (list, tuple))
    outputs = [outputs] if single else list(outputs)

    def run(values):
        if len(values) != len(inputs):
            raise ValueError("expected {} inputs, got {}".format(len(inputs), len(values)))
        bindings = {ph: np.asarray(v) for ph, v in zip(inputs, values)}
        results = [_substitute(out, bindings) for out in outputs]
        return results[0] if single else results

    return run


def int_shape(x):
    if isinstance(x, Symbol):
        return x.shape
    return tuple(np.shape(x))


def ndim(x):
    shape = int_shape(x)
    return None if shape is None else len(shape)


def dtype(x):
    return x.dtype if isinstance(x, Symbol) else str(np.asarray(x).dtype)
