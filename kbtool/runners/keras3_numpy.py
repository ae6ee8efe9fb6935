"""keras3-numpy: kbtool's K.* adapter on keras 3.15.1 with KERAS_BACKEND=numpy (Keras 3's inference-only NumPy
engine: no gradients, no variables that train)."""

from .keras3_engines import KERAS, engine_recipe

RECIPE = engine_recipe("numpy", packages=[KERAS], version_of=[], case_seconds=0.005)
