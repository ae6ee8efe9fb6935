# py36-compatible
"""The one layout conversion the zoo's weights need: Theano's convolution kernels are flipped, as Keras 2's own
weight loader flips them, and their gradients flipped back, so that one set of seeded weights means one function
(and one gradient) on every engine."""

# Keras 2's own weight loader (keras/engine/saving.py: conv_layers, _need_convert_kernel) flips these layers' kernels
# between Theano (a true convolution: filter_flip) and the correlating backends; the same here, so that one set of
# seeded weights means one function everywhere
FLIPPED_ON_THEANO = {
    "Conv1D": (0,),
    "Conv2D": (0,),
    "Conv3D": (0,),
    "Conv2DTranspose": (0,),
    "Conv3DTranspose": (0,),
    "ConvLSTM2D": (0, 1),
}
LAYOUT_NOTE = (
    "Theano: Conv1D/2D/3D/2DTranspose and ConvLSTM2D kernels flipped (conv_utils.convert_kernel, as Keras's loader)"
)


def flip(kernel):
    """conv_utils.convert_kernel: every axis but the last two reversed."""
    return kernel[tuple([slice(None, None, -1)] * (kernel.ndim - 2) + [slice(None), slice(None)])]


def flipped_kernels(api, model):
    """The ids of the variables to flip on this engine (none but on Theano)."""
    if api.flavor != "keras2" or api.engine != "theano":
        return set()
    found = set()
    for layer in all_layers(model):
        for k in FLIPPED_ON_THEANO.get(type(layer).__name__, ()):
            if k < len(layer.weights):
                found.add(id(layer.weights[k]))
    return found


def all_layers(model):
    for layer in model.layers:
        yield layer
        if hasattr(layer, "layers"):  # a nested model
            for inner in all_layers(layer):
                yield inner


# the random initializers' K.* functions (Keras 2): during a build their draws are thrown away (set_weights
# overwrites every weight with the seeded values), but Theano compiles a function per draw to evaluate it (K.variable
# of a symbolic value: resnet50 4.5 s -> 1.7 s, densenet121 8.8 s -> 3.0 s to build, measured on a warm cache)
DRAWS = ("random_normal", "random_uniform", "truncated_normal")


class cheap_draws(object):
    """While building a model on Keras 2 with Theano: a random initializer's draw of a static shape is zeros of that
    shape (a NumPy array, which K.variable takes as it is); a draw of a symbolic shape (a layer's noise at call
    time) is left to the backend. Restored on exit."""

    def __init__(self, api):
        self.api, self.saved = api, []

    def __enter__(self):
        if self.api.flavor != "keras2" or self.api.engine != "theano":
            return self
        backend = self.api.keras.backend
        for name in DRAWS:
            original = getattr(backend, name, None)
            if callable(original):
                self.saved.append((name, original))
                setattr(backend, name, _zeros_for_static(original, backend))
        return self

    def __exit__(self, *exc):
        for name, original in self.saved:
            setattr(self.api.keras.backend, name, original)
        return False


def _zeros_for_static(original, backend):
    import numpy as np

    def draw(shape, *args, **kwargs):
        if isinstance(shape, (tuple, list)) and all(isinstance(d, int) for d in shape):
            dtype = kwargs.get("dtype") or backend.floatx()
            return np.zeros(tuple(shape), dtype=dtype)
        return original(shape, *args, **kwargs)

    return draw
