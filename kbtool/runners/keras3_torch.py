"""keras3-torch: kbtool's K.* adapter on keras 3.15.1 with KERAS_BACKEND=torch, torch 2.13.0 (CPU wheel)."""

from kbtool.runners.keras3_engines import HIDE_GPUS, KERAS, engine_recipe

RECIPE = engine_recipe(
    "torch",
    packages=[KERAS, "torch==2.13.0+cpu"],
    version_of=["torch"],
    devices={"cpu": lambda env_dir: dict(HIDE_GPUS), "gpu": lambda env_dir: {}},
    # the CPU build of torch (no CUDA libraries, a tenth of the size) is on PyTorch's own index only
    extra_index="https://download.pytorch.org/whl/cpu",
)
