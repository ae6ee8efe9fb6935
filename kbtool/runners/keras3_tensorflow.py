"""keras3-tensorflow: kbtool's K.* adapter on keras 3.15.1 with KERAS_BACKEND=tensorflow, in the tensorflow env
(TensorFlow 2.21 depends on keras 3.15.1 there), so it has no env of its own."""

from kbtool.runners import tensorflow
from kbtool.runners.keras3_engines import HIDE_GPUS, engine_recipe

RECIPE = engine_recipe(
    "tensorflow",
    packages=tensorflow.RECIPE.packages,
    version_of=["tensorflow"],
    # not the tensorflow recipe's variables, which hide the GPU for the Keras 2 backend
    env_vars=lambda env_dir: {"TF_CPP_MIN_LOG_LEVEL": "3"},
    devices={"cpu": lambda env_dir: dict(HIDE_GPUS), "gpu": lambda env_dir: {}},
    env_name=tensorflow.RECIPE.name,
    notes="kbtool's K.* adapter on keras.ops, KERAS_BACKEND=tensorflow; shares the tensorflow environment.",
)
