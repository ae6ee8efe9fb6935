# py36-compatible
"""kbtool's Keras 2 backend API (`from keras import backend as K`) on Keras 3's public API, for any Keras 3 engine.

Each documented K.* function is written as specs/keras3_map.yaml maps it: the Keras 3 expression a port would use,
with Keras 2's arguments translated only where the map's note says how. A function the map gives no Keras 3
equivalent is not defined here, so every case of it is `unsupported`. The engine is Keras 3's (KERAS_BACKEND).
"""

from . import arrays, core, harness, nn
from .harness import (  # noqa: F401
    kbtool_constant,
    kbtool_eval,
    kbtool_function,
    kbtool_placeholder,
    kbtool_reset,
    kbtool_variable,
)

if hasattr(harness, "kbtool_gradients"):  # torch and tensorflow: the engines whose autodiff a case can reach
    kbtool_gradients = harness.kbtool_gradients

_MODULES = [core, arrays, nn]


def _export(module):
    for name, value in vars(module).items():
        if not name.startswith("_") and callable(value) and getattr(value, "__module__", None) == module.__name__:
            globals()[name] = value


for _module in _MODULES:
    _export(_module)
