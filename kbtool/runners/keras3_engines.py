"""What the five Keras 3 engine backends share: one adapter module on keras.ops, KERAS_BACKEND per engine.

Each `keras3-<engine>` backend runs kbtool's adapter `keras3_port` (kbtool/worker/keras3_port/): the Keras 2
backend API written on Keras 3's public API (keras.ops, keras.random, keras.Variable, keras.Input/keras.Function),
as specs/keras3_map.yaml maps each function. The engine is Keras 3's own choice from KERAS_BACKEND.
"""

from typing import Callable, Dict, List, Optional

from kbtool.runners.base import Recipe

KERAS = "keras==3.15.1"
ADAPTER = "keras3_port"  # the worker-side adapter package (kbtool/worker/keras3_port/)

# The worker's environment per device (on_device adds KBTOOL_DEVICE and KBTOOL_PRECISION, which the adapter reads).
# A CPU run hides every GPU from the engine, so "cpu" means the CPU even on a machine with a GPU.
HIDE_GPUS = {"CUDA_VISIBLE_DEVICES": "-1"}
CPU_ONLY: Dict[str, Callable[[str], Dict[str, str]]] = {"cpu": lambda env_dir: dict(HIDE_GPUS)}


def engine_recipe(
    engine: str,
    packages: List[str],
    version_of: List[str],
    env_vars: Callable[[str], Dict[str, str]] = lambda env_dir: {},
    devices: Optional[Dict[str, Callable[[str], Dict[str, str]]]] = None,
    env_name: Optional[str] = None,
    python_version: str = "3.11",
    extra_index: Optional[str] = None,
    case_seconds: float = 0.01,
    notes: str = "",
) -> Recipe:
    """The recipe of `keras3-<engine>`: keras 3.15.1 with KERAS_BACKEND=<engine>, both modes (symbolic mode runs
    through keras.Input with None dims and keras.Function)."""
    return Recipe(
        name=f"keras3-{engine}",
        python_version=python_version,
        packages=packages,
        module=ADAPTER,
        keras_backend=engine,
        version_of=["keras"] + version_of + ["numpy"],
        env_vars=env_vars,
        devices=devices or CPU_ONLY,
        env_name=env_name,
        extra_index=extra_index,
        notes=notes or f"kbtool's K.* adapter on keras.ops, KERAS_BACKEND={engine}.",
        case_seconds=case_seconds,
    )
