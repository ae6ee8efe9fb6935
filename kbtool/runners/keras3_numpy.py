"""keras3-numpy: kbtool's K.* adapter on keras 3.15.1 with KERAS_BACKEND=numpy (Keras 3's inference-only NumPy
engine: no gradients, no variables that train)."""

from .keras3_engines import KERAS, engine_recipe

# keras's numpy engine imports scipy (keras/src/backend/numpy/math.py, nn.py, linalg.py), which keras does not declare
RECIPE = engine_recipe("numpy", packages=[KERAS, "scipy==1.17.1"], version_of=["scipy"], case_seconds=0.005)
