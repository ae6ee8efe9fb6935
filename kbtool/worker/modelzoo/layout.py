# py36-compatible
"""The one layout conversion the zoo's weights need: Theano's convolution kernels are flipped, as Keras 2's own
weight loader flips them, and their gradients flipped back, so that one set of seeded weights means one function
(and one gradient) on every engine."""

# Keras 2's own weight loader (keras/engine/saving.py: conv_layers, _need_convert_kernel) flips these layers' kernels
# between Theano (a true convolution: filter_flip) and the correlating backends; the same here, so that one set of
# seeded weights means one function everywhere
FLIPPED_ON_THEANO = {"Conv1D": (0,), "Conv2D": (0,), "Conv3D": (0,), "Conv2DTranspose": (0,), "ConvLSTM2D": (0, 1)}
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
