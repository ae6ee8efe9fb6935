# py36-compatible
"""Run one case against a Keras-backend-API module `K`.

The same code calls the NumPy reference in the controller and the real backends in their
workers, so every backend sees a case built the same way. A request is JSON:

    {"op": "batch_dot", "mode": "eager" | "symbolic", "grad": false,
     "args": [ARG, ...], "kwargs": {"axes": ARG}}

and an ARG is one of
    {"tensor": i, "ph_shape": [null, 3]}  array i as K.variable (eager) or K.placeholder (symbolic);
                                          with "grad": true always a K.variable, and the reply is
                                          K.gradients(K.sum(result), those variables)
    {"tensor": i, "ph_ndim": true}        in symbolic mode a placeholder made with K.placeholder(ndim=...) only
                                          (every dim None), as Keras 2's test_batch_dot_shape makes them
    {"tensor": i, "weight": true}         a layer's weight: a K.variable in both modes
    {"tensor": i, "sparse": true}         a 2-D array as a sparse COO matrix: K.variable(matrix) (eager) or
                                          K.placeholder(shape, sparse=True) fed the matrix (symbolic)
    {"constant": i}                       array i as K.constant
    {"array": i}                          array i passed as a NumPy array
    {"value": v}                          a JSON literal
    {"tuple": [v, ...]}                   a JSON list passed as a tuple
    {"list": [ARG, ...]}                  a Python list of ARGs
    {"step": "name"}                      a named step function from steps.py
    {"call": "name", "args": [ARG, ...], "kwargs": {...}}
                                          the result of calling K.name (e.g. the loss given to gradients)
    {"result": k}                         in a "then" call: the result of call k (0 is the op's own)

With "then": [{"op": name, "args": [ARG, ...]}, ...] further calls follow the first, and the reply
holds every call's result ("then_only": true leaves out the first, e.g. a placeholder that has no value).
With "repeat": n the op is called n times with the same arguments (random ops); with "reseed":
{"index": i or null, "value": s} once more with the seed (positional argument i, else the keyword `seed`) set to s. With "observe": true the tensors are variables and the reply is their values after the call; in
symbolic mode the call's result is run as an update (K.function([], [], updates=[result])), which
is how Keras applies K.update & co. on graph backends. With "observe": "eval" in eager mode the result is
evaluated first (K.eval(K.update_add(v, inc)), as Keras 2's own backend tests did), then the variables read.

print_tensor's reply has two more leaves, from the text it printed on stdout (captured): the printed words
that are not numbers (the message; nothing else is documented) and whether the printed numbers are the
tensor's values. The documented behaviour: "prints message and the tensor value".
"""

import contextlib
import io
import os
import re
import sys
import tempfile

import numpy as np

try:
    from . import protocol, steps
except ImportError:  # run as a script inside a backend env
    import protocol
    import steps

_PY_SCALARS = (bool, int, float, str, type(None))


class Unsupported(Exception):
    """The backend module does not provide the op."""


def resolve_op(modules, name):
    """First module that has `name`; returns (callable, index of the module used)."""
    for index, module in enumerate(modules):
        fn = getattr(module, name, None)
        if callable(fn):
            return fn, index
    found = [m for m in modules if getattr(m, name, None) is not None]
    if found:  # e.g. keras 3's legacy backend imports a module named `backend`: the name is there, no function
        value = getattr(found[0], name)
        raise Unsupported(
            "{}.{} is not a function (it is {} {})".format(
                getattr(found[0], "__name__", "backend"),
                name,
                "a" if type(value).__name__[0] not in "aeiou" else "an",
                type(value).__name__,
            )
        )
    raise Unsupported("{} has no attribute {!r}".format(getattr(modules[0], "__name__", "backend"), name))


class Builder(object):
    """Turns ARG specs into call arguments, remembering placeholders and their feeds.

    A case's inputs are made the way that works on the engine: with the backend module's `kbtool_variable`,
    `kbtool_placeholder` and `kbtool_constant` hooks where it has them (Keras 3 engines:
    kbtool/worker/keras3_port/harness.py), else with its own K.variable, K.placeholder and K.constant (on a Keras 2
    backend those are the native way). Only the function under test goes through the port."""

    def __init__(self, K, arrays, mode, variables_only=False):
        self.K, self.arrays, self.mode = K, arrays, mode
        # gradients are taken w.r.t. variables, as Keras code does (CNTK cannot differentiate placeholders)
        self.variables_only = variables_only
        self.placeholders, self.feeds, self.tensors = [], [], []
        self.results = []  # the results of the case's calls so far, for "then" calls
        self._by_index = {}

    def build(self, spec):
        K = self.K
        if "tensor" in spec:
            if spec["tensor"] in self._by_index:  # the same input named twice is the same tensor
                return self._by_index[spec["tensor"]]
            array = self.arrays[spec["tensor"]]
            sparse = bool(spec.get("sparse"))
            value = sparse_matrix(array) if sparse else array
            if self.mode == "symbolic" and not self.variables_only and not spec.get("weight"):
                tensor = self._placeholder(spec, array, sparse)
                self.placeholders.append(tensor)
                self.feeds.append(value)
            else:
                tensor = self.variable(value, str(array.dtype))
            self.tensors.append(tensor)
            self._by_index[spec["tensor"]] = tensor
            return tensor
        if "constant" in spec:
            array = self.arrays[spec["constant"]]
            hook = getattr(K, "kbtool_constant", None)
            return hook(array, str(array.dtype)) if hook else K.constant(array, dtype=str(array.dtype))
        if "array" in spec:
            return self.arrays[spec["array"]]
        if "value" in spec:
            return spec["value"]
        if "tuple" in spec:
            return tuple(spec["tuple"])
        if "list" in spec:
            return [self.build(item) for item in spec["list"]]
        if "step" in spec:
            return steps.get(spec["step"])(K)
        if "call" in spec:
            fn = getattr(K, spec["call"])
            return fn(
                *[self.build(a) for a in spec.get("args", [])],
                **{k: self.build(v) for k, v in spec.get("kwargs", {}).items()},
            )
        if "result" in spec:
            return self.results[spec["result"]]
        raise ValueError("unknown argument spec {!r}".format(spec))

    def variable(self, value, dtype):
        hook = getattr(self.K, "kbtool_variable", None)
        return hook(value, dtype) if hook else self.K.variable(value, dtype=dtype)

    def _placeholder(self, spec, array, sparse):
        dtype = str(array.dtype)
        shape = spec.get("ph_shape")
        shape = tuple(shape) if shape is not None else array.shape
        if spec.get("ph_ndim") and not sparse:
            shape = (None,) * array.ndim
        hook = getattr(self.K, "kbtool_placeholder", None)
        if hook:
            return hook(shape, dtype, sparse)
        if spec.get("ph_ndim") and not sparse:
            return self.K.placeholder(ndim=array.ndim, dtype=dtype)
        if sparse:
            return self.K.placeholder(shape=shape, dtype=dtype, sparse=True)
        return self.K.placeholder(shape=shape, dtype=dtype)


def is_python_value(value):
    # NumPy scalars are arrays of rank 0 (what K.eval returns), not Python values; np.float64
    # subclasses float, so it is ruled out first
    if isinstance(value, np.generic):
        return False
    if isinstance(value, _PY_SCALARS):
        return True
    if isinstance(value, (tuple, list)):
        return all(is_python_value(v) for v in value)
    return False


def _jsonable(value):
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


def flatten_result(result):
    """A call's result as a list of leaves, and whether it was a sequence of tensors."""
    if isinstance(result, (tuple, list)) and not is_python_value(result):
        leaves = []
        for item in result:
            leaves.extend(flatten_result(item)[0])
        return leaves, True
    return [result], False


def evaluate(K, request, arrays, modules=None, symbolic_context=None):
    """Run a request; returns (header, arrays) ready for the protocol.

    `modules` is the list of modules searched for the op (public API first).
    `symbolic_context` is a context manager factory for graph building (TensorFlow needs a tf.Graph).
    """
    modules = modules or [K]
    mode = request.get("mode", "eager")
    try:
        fn, module_index = resolve_op(modules, request["op"])
    except Unsupported as exc:
        return {"status": protocol.UNSUPPORTED, "message": str(exc)}, []
    if request.get("grad") and not callable(gradients_of(K)):
        return {
            "status": protocol.UNSUPPORTED,
            "message": "{} has no gradients()".format(getattr(K, "__name__", "backend")),
        }, []
    context = symbolic_context() if (mode == "symbolic" and symbolic_context) else contextlib.ExitStack()
    printed = CapturedStdout() if request["op"] == "print_tensor" else None
    progress = {"reached": False}  # set just before the op under test is called
    try:
        with context, printed or contextlib.ExitStack():
            values, statics, is_sequence = compute(K, fn, modules, request, arrays, mode, progress)
        if printed is not None and len(values) == 1:
            values = values + list(describe_printed(printed.text, values[0]))
            statics = statics + [None, None]
            is_sequence = True
    except Exception as exc:  # the backend's own error is the finding; report it whole
        # an error while the case's inputs were made says nothing of the op: it never ran
        status = protocol.RAISED if progress["reached"] else protocol.NOT_REACHED
        return {"status": status, "error": describe_exception(exc)}, []
    try:
        outputs, out_arrays = encode_values(values, statics)
    except Exception as exc:
        return {"status": protocol.RAISED, "error": describe_exception(exc)}, []
    header = {"status": protocol.OK, "outputs": outputs, "sequence": is_sequence}
    if module_index:
        header["note"] = "not in the public module; found in {}".format(modules[module_index].__name__)
    return header, out_arrays


def compute(K, fn, modules, request, arrays, mode, progress=None):
    """The request's call, its follow-ups, observed variables or gradients, evaluated to values:
    (values, static shapes, whether the result is a sequence). Runs inside the mode's context.
    `progress["reached"]` turns True once the inputs are made, just before the op is called."""
    observe = bool(request.get("observe"))
    builder = Builder(K, arrays, mode, variables_only=bool(request.get("grad")) or observe)
    args = [builder.build(a) for a in request.get("args", [])]
    kwargs = {k: builder.build(v) for k, v in request.get("kwargs", {}).items()}
    if progress is not None:
        progress["reached"] = True
    result = call_op(fn, args, kwargs, request)
    if request["op"] == "function" and callable(result):
        # K.function(...) returns a callable: run it on the fed values (CNTK tensors are
        # callable too, so only this op's result is called)
        result = result(builder.feeds)
    if request.get("then"):
        result = then_calls(modules, request, builder, result)
    if observe:
        result = observed_values(K, request, builder, mode, result)
    if request.get("grad"):
        result = gradients_of(K)(result, builder.tensors)
    leaves, is_sequence = flatten_result(result)
    statics = static_shapes(K, leaves) if mode == "symbolic" else [None] * len(leaves)
    values = evaluate_leaves(K, leaves, builder, mode)
    return values, statics, is_sequence


def gradients_of(K):
    """How a gradient case differentiates its op's result: the module's `kbtool_gradients(result, variables)` hook
    where it has one (a Keras 3 engine's own autodiff: the gradient is the harness's, not an op under test), else
    K.gradients(K.sum(result), variables); None where the module has neither."""
    hook = getattr(K, "kbtool_gradients", None)
    if callable(hook):
        return hook
    if not callable(getattr(K, "gradients", None)):
        return None
    return lambda result, variables: K.gradients(K.sum(result), variables)


def call_op(fn, args, kwargs, request):
    """The op called once; a random op's "repeat" calls it again and "reseed" once more with another seed."""
    result = fn(*args, **kwargs)
    if request.get("repeat") or request.get("reseed"):
        # random ops: the same call again (a seeded call must draw the same values, an unseeded one new
        # values), then with "reseed" the call once more with another seed (it must draw other values)
        result = (result,) + tuple(fn(*args, **kwargs) for _ in range((request.get("repeat") or 1) - 1))
        reseed = request.get("reseed")
        if reseed:
            other_args, other_kwargs = list(args), dict(kwargs)
            if reseed.get("index") is not None:
                other_args[reseed["index"]] = reseed["value"]
            else:
                other_kwargs["seed"] = reseed["value"]
            result = result + (fn(*other_args, **other_kwargs),)
    return result


def then_calls(modules, request, builder, result):
    """Documented examples that continue with more calls (set_floatx, then floatx()): every result in order."""
    builder.results.append(result)
    for call in request["then"]:
        then_fn, _ = resolve_op(modules, call["op"])
        then_args = [builder.build(a) for a in call.get("args", [])]
        builder.results.append(then_fn(*then_args))
    return tuple(builder.results[1:] if request.get("then_only") else builder.results)


def observed_values(K, request, builder, mode, result):
    """An update op's effect: run it, then read the variables it was given."""
    if mode == "eager" and request.get("observe") == "eval":
        K.eval(result)  # run the update op as an eager caller would (a Theano pair cannot be)
    elif mode == "symbolic" and result is not None:
        # a dummy output: some backends refuse a function with no outputs
        K.function([], [K.sum(K.constant(0.0))], updates=[result])([])
    return [K.get_value(t) for t in builder.tensors]


def encode_values(values, statics):
    """The protocol's output descriptions and the arrays they index (a Python value travels in its header)."""
    outputs, out_arrays = [], []
    for value, static in zip(values, statics):
        if is_python_value(value):
            outputs.append({"kind": "python", "value": _jsonable(value), "pytype": type(value).__name__})
        else:
            array = np.asarray(value)
            if array.dtype == object:
                raise TypeError("result of type {} is not an array".format(type(value).__name__))
            output = {
                "kind": "array",
                "index": len(out_arrays),
                "dtype": str(array.dtype),
                "shape": list(array.shape),
            }
            if static is not None:
                output.update(static)
            outputs.append(output)
            out_arrays.append(array)
    return outputs, out_arrays


def is_tensor_leaf(leaf):
    """A backend tensor (to evaluate), not a Python value or a NumPy array."""
    return not is_python_value(leaf) and not isinstance(leaf, (np.ndarray, np.generic))


def static_shapes(K, leaves):
    """What K.int_shape says of each symbolic result before it is run: {"static_shape": [2, None]} (None dims
    kept; null when int_shape returns None), {"static_shape_error": "..."} when the backend has no int_shape or
    it raises; None for a leaf that is not a backend tensor (nothing static to ask about)."""
    int_shape = getattr(K, "int_shape", None)
    out = []
    for leaf in leaves:
        if not is_tensor_leaf(leaf):
            out.append(None)
        elif not callable(int_shape):
            out.append({"static_shape_error": "{} has no int_shape()".format(getattr(K, "__name__", "backend"))})
        else:
            try:
                shape = int_shape(leaf)
                if shape is not None:
                    shape = [None if d is None else int(d) for d in shape]
                out.append({"static_shape": shape})
            except Exception as exc:
                error = describe_exception(exc)
                out.append({"static_shape_error": "{}: {}".format(error["type"], error["message"][:300])})
    return out


def evaluate_leaves(K, leaves, builder, mode):
    tensor_positions = [i for i, leaf in enumerate(leaves) if is_tensor_leaf(leaf)]
    values = list(leaves)
    if not tensor_positions:
        return values
    tensors = [leaves[i] for i in tensor_positions]
    # the harness reads results with the module's kbtool_function / kbtool_eval hooks where it has them (Keras 3
    # engines), else with K.function / K.eval
    if mode == "symbolic":
        function = getattr(K, "kbtool_function", None) or K.function
        computed = function(builder.placeholders, tensors)(builder.feeds)
    else:
        computed = [(getattr(K, "kbtool_eval", None) or K.eval)(t) for t in tensors]
    for position, value in zip(tensor_positions, computed):
        # a sparse result (Theano's K.function returns a scipy matrix for a sparse output) is read as the
        # dense array it stands for, as K.eval does
        values[position] = value.toarray() if hasattr(value, "toarray") else value
    return values


def describe_exception(exc):
    mro = [cls.__name__ for cls in type(exc).__mro__ if cls not in (object, BaseException)]
    message = str(exc).strip().splitlines()
    return {"type": type(exc).__name__, "mro": mro, "message": " ".join(message)[:1500]}


class CooMatrix(object):
    """A sparse matrix in COO form, as much of scipy.sparse.coo_matrix as the Keras backends read:
    tf_keras and keras 2.3.1 look for `tocoo()` and read row, col, data and shape; Theano's sparse
    variables need scipy itself (used when importable; the TensorFlow environment has no scipy)."""

    def __init__(self, dense):
        self.row, self.col = (index.astype("int64") for index in np.nonzero(dense))
        self.data, self.shape, self.dtype = dense[self.row, self.col], dense.shape, dense.dtype
        self.ndim = 2

    def tocoo(self):
        return self

    def toarray(self):
        dense = np.zeros(self.shape, self.dtype)
        dense[self.row, self.col] = self.data
        return dense


def sparse_matrix(array):
    if array.ndim != 2:
        raise ValueError("a sparse input must be 2-D, not of shape {}".format(array.shape))
    try:
        from scipy import sparse
    except ImportError:
        return CooMatrix(array)
    return sparse.csr_matrix(array)


class CapturedStdout(object):
    """What is printed on stdout meanwhile, at the Python level and on file descriptor 1 (TensorFlow's
    print writes there from C++). The worker points fd 1 at stderr; in the controller the reference
    prints to sys.stdout, which is captured before it reaches the caller's stdout."""

    def __enter__(self):
        sys.stdout.flush()
        self._file = tempfile.TemporaryFile()
        self._saved_fd = os.dup(1)
        os.dup2(self._file.fileno(), 1)
        self._saved_stdout = sys.stdout
        sys.stdout = self._buffer = io.StringIO()
        self.text = ""
        return self

    def __exit__(self, *exc_info):
        try:
            sys.stdout.flush()
        finally:
            sys.stdout = self._saved_stdout
            os.dup2(self._saved_fd, 1)
            os.close(self._saved_fd)
        self._file.seek(0)
        self.text = self._buffer.getvalue() + self._file.read().decode("utf-8", "replace")
        self._file.close()
        return False


_NUMBER_SEPARATORS = re.compile(r"[\[\],()]")
_BOOL_WORDS = {"True": 1.0, "False": 0.0, "true": 1.0, "false": 0.0}


def describe_printed(text, value):
    """(the printed words that are not numbers, whether the printed numbers are `value`'s values).

    Brackets, commas and the formatting of numbers are free (tf.print writes 1 for 1.0); the numbers
    must be all of the tensor's values, in order, to printing precision (a few significant digits).
    """
    words, numbers = [], []
    for token in _NUMBER_SEPARATORS.sub(" ", text).split():
        if token in _BOOL_WORDS:
            numbers.append(_BOOL_WORDS[token])
            continue
        try:
            numbers.append(float(token))
        except ValueError:
            words.append(token)
    expected = np.asarray(value, dtype="float64").ravel()
    found = np.asarray(numbers, dtype="float64")
    same = found.shape == expected.shape and bool(np.allclose(found, expected, rtol=1e-3, atol=1e-5, equal_nan=True))
    if same:
        verdict = "printed the {} value(s)".format(expected.size)
    else:
        verdict = "printed {} number(s), not the tensor's {} value(s)".format(found.size, expected.size)
    return " ".join(words), verdict
