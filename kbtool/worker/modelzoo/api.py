# py36-compatible
"""What a zoo builder builds with: the Keras the worker's backend module belongs to, read from that module.

Three flavors: "keras2" (Keras 2.2.x/2.3.x, K = keras.backend, graph: K.function), "tf_keras" (K = tf_keras.backend,
eager) and "keras3" (Keras 3: K = kbtool's keras3_port or keras.src.legacy.backend, eager). A custom module
(`mod@env`) is read by the base backend's modules it was started with."""

import importlib


class Api(object):
    """keras: the Keras package; layers: its layers module; K: the backend module (for Lambda layers); flavor;
    version: the Keras version; engine: what computes (K.backend() on keras2, keras.backend.backend() otherwise)."""

    def __init__(self, keras, K, flavor, engine):
        self.keras = keras
        self.layers = keras.layers
        self.K = K
        self.flavor = flavor
        self.version = str(getattr(keras, "__version__", "unknown"))
        self.engine = engine


def flavor_of(module_name):
    """The flavor a backend module's name says, or None (a custom module, the reference: read from their base)."""
    if module_name == "keras3_port" or module_name.startswith(("keras3_port.", "keras.src")):
        return "keras3"
    if module_name == "tf_keras" or module_name.startswith("tf_keras."):
        return "tf_keras"
    # plaidml: the plaidml_install_backend shim hands Keras 2.2.4 plaidml's own module as keras.backend
    if module_name == "keras.backend" or module_name.startswith(("keras.backend.", "plaidml.keras")):
        keras = importlib.import_module("keras")
        major = str(getattr(keras, "__version__", "2")).split(".")[0]
        return "keras2" if major in ("1", "2") else "keras3"
    return None


def detect(K, base_modules=()):
    """The Api of the worker's backend module K; `base_modules` (names) decide for a custom module."""
    flavor = None
    for name in [getattr(K, "__name__", "")] + list(base_modules):
        flavor = flavor_of(name)
        if flavor:
            break
    if flavor is None:
        raise ValueError(
            "cannot tell which Keras the backend module {} belongs to (start it as module@env)".format(
                getattr(K, "__name__", K)
            )
        )
    if flavor == "keras2":
        keras = importlib.import_module("keras")
        backend = keras.backend
        engine = backend.backend() if callable(getattr(backend, "backend", None)) else "keras2"
        return Api(keras, K, flavor, str(engine))
    if flavor == "tf_keras":
        keras = importlib.import_module("tf_keras")
        return Api(keras, K, flavor, "tensorflow")
    keras = importlib.import_module("keras")
    return Api(keras, K, flavor, str(keras.backend.backend()))


def layer_facing_module(api):
    """The module whose attributes the engine's layers look up at call time (the one a trace wraps and a custom
    module's functions are put into): keras.backend on keras2, tf_keras.src.backend on tf_keras; None on keras3
    (its layers call keras.src.ops, not a backend module)."""
    if api.flavor == "keras2":
        return importlib.import_module("keras.backend")
    if api.flavor == "tf_keras":
        return importlib.import_module("tf_keras.src.backend")
    return None
