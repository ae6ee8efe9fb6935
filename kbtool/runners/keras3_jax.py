"""keras3-jax: kbtool's K.* adapter on keras 3.15.1 with KERAS_BACKEND=jax, jax[cpu] 0.10.2, Python 3.11."""

from kbtool.runners.keras3_engines import HIDE_GPUS, KERAS, engine_recipe

RECIPE = engine_recipe(
    "jax",
    packages=[KERAS, "jax[cpu]==0.10.2"],
    version_of=["jax", "jaxlib"],
    # JAX x64 stays off, as Keras 3 leaves it: float64 inputs are computed in float32, which the results show
    devices={
        "cpu": lambda env_dir: dict(HIDE_GPUS, JAX_PLATFORMS="cpu"),
        # no preallocation: JAX would take 75 % of the GPU's memory and another engine's worker could not start
        "gpu": lambda env_dir: {"JAX_PLATFORMS": "cuda", "XLA_PYTHON_CLIENT_PREALLOCATE": "false"},
    },
)
