"""keras3-numpy: kbtool's K.* adapter on keras 3.15.1 with KERAS_BACKEND=numpy (Keras 3's inference-only NumPy
engine: no gradients, no variables that train)."""

from kbtool.runners.keras3_engines import KERAS, engine_recipe

# keras's numpy engine imports scipy (keras/src/backend/numpy/math.py, nn.py, linalg.py) and jax (nn.py: its
# convolutions and pooling are jax.lax's), neither of which keras declares
RECIPE = engine_recipe(
    "numpy",
    packages=[KERAS, "scipy==1.17.1", "jax[cpu]==0.10.2"],
    version_of=["scipy", "jax"],
    case_seconds=0.005,
    notes="kbtool's K.* adapter on keras.ops, KERAS_BACKEND=numpy (whose convolutions and pooling call jax.lax).",
)
