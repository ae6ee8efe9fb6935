# py36-compatible
"""Where a model raised: the layer whose `call` was running (from the exception's traceback) and the outermost
backend function it had called (a K.* function, or on Keras 3 a keras.ops function, "ops.<fn>"), with that call's
arguments as they came in, described (tensors by shape and dtype: on a graph engine they have no values yet). Found
by running the model once more with the backend functions watched, only after it raised: a run that does not raise
costs nothing. {} when the second run does not raise or passes through no layer (Keras' own machinery)."""

import sys

from . import trace


def frames_of(exc):
    tb, frames = exc.__traceback__, []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def layer_frame(api, frames):
    """(index, layer) of the innermost frame running a Layer's call, else (None, None)."""
    layer_type = getattr(api.keras.layers, "Layer", None)
    found = (None, None)
    for index, frame in enumerate(frames):
        owner = frame.f_locals.get("self")
        if frame.f_code.co_name == "call" and layer_type is not None and isinstance(owner, layer_type):
            found = (index, owner)
    return found


class InFlight(trace.Recorder):
    """The trace's patching of the backend functions the layers call (trace.targets), keeping no call that returns:
    only the outermost call that raised, with its arguments as they came in (a backend function reassigns its
    locals before it raises), and the layer running then."""

    def __init__(self, layer_type=None):
        trace.Recorder.__init__(self)
        self.failed = None  # (name, fn, args, kwargs) of the outermost call that raised
        self.layer = None  # the innermost layer whose call was running when it raised (the live stack's)
        self.layer_type = layer_type

    def returned(self, name, args, kwargs, output):
        pass  # a locate run keeps nothing of the calls that worked

    def raised(self, name, fn, args, kwargs):
        if self.failed is None:
            self.failed = (name, fn, args, kwargs)
            self.layer = self.running_layer()

    def running_layer(self):
        """The innermost Layer.call on the live stack (Keras 3 drops those frames from the traceback it re-raises)."""
        frame = sys._getframe(1)
        while frame is not None and self.layer_type is not None:
            owner = frame.f_locals.get("self")
            if frame.f_code.co_name == "call" and isinstance(owner, self.layer_type):
                return owner
            frame = frame.f_back
        return None


def arguments(api, fn, args, kwargs):
    """{parameter: description} of a call, by the function's own parameter names where it has them."""
    import inspect

    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):
        bound = {"arg{}".format(i): a for i, a in enumerate(args)}
        bound.update(kwargs)
    return {name: describe(api, value) for name, value in bound.items()}


def dtype_name(api, value):
    import numpy as np

    for read in (lambda: api.K.dtype(value), lambda: value.dtype):
        try:
            dtype = read()
            return np.dtype(getattr(dtype, "as_numpy_dtype", dtype)).name
        except Exception:
            continue
    return "float32"


def describe(api, value):
    """An argument as the wire carries it: plain values as they are, tuples as {"tuple"}, a tensor as {"shape",
    "dtype"} (None for a dim the graph does not know), anything else as a short repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
        return {"tuple": list(value)} if isinstance(value, tuple) else list(value)
    if getattr(value, "shape", None) is not None:
        try:
            dims = [None if d is None else int(d) for d in api.K.int_shape(value)]
        except Exception:
            try:
                dims = [None if d is None else int(d) for d in tuple(value.shape)]
            except Exception:
                dims = None
        if dims is not None:
            return {"shape": dims, "dtype": dtype_name(api, value)}
    return {"repr": repr(value)[:80]}


def locate(api, mdef, seed, train):
    """Run the model again with the backend functions watched: {layer, class, fn, args} of the call that raised, or
    {} when the run does not raise again or passes through no layer."""
    from . import run

    watcher = InFlight(getattr(api.keras.layers, "Layer", None))
    for module, prefix in trace.targets(api):
        watcher.patch(module, prefix)
    try:
        run.run(api, mdef, seed, train, run.Arrays())
        return {}
    except Exception as exc:
        _, layer = layer_frame(api, frames_of(exc))
        layer = layer if layer is not None else watcher.layer
    finally:
        watcher.restore()
    if layer is None:
        return {}
    where = {"layer": layer.name, "class": type(layer).__name__}
    if watcher.failed is not None:
        name, fn, args, kwargs = watcher.failed
        where.update(fn=name, args=arguments(api, fn, args, kwargs))
    return where
