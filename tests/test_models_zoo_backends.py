"""The zoo built on real engines (scripts/zoo-smoke.py in each env): the written models build, take their seeded
weights and predict, with the same layers and get_weights() shapes on a Keras 2.3.1 graph engine as on Keras 3."""

import importlib.util
import os
from types import ModuleType
from typing import Any, Dict, List

import pytest

from kbtool.runners.base import Unavailable
from kbtool.runners.registry import launch_for

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# cheap models that cover each family the applications do not (a few seconds on each engine)
MODELS = ["mlp", "separable_conv", "batchnorm_train", "gru", "bidirectional", "lambda_k", "ctc"]


def smoke() -> ModuleType:
    spec = importlib.util.spec_from_file_location("zoo_smoke", os.path.join(ROOT, "scripts", "zoo-smoke.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows_on(backend: str) -> Dict[str, Dict[str, Any]]:
    try:
        launch_for(backend)
    except Unavailable as exc:
        pytest.fail(f"{backend} is not installed: {exc}")
    rows: List[Dict[str, Any]] = smoke().run_backend(backend, MODELS, 0, False, 600)
    return {row["model"]: row for row in rows if "model" in row}


@pytest.mark.backends
def test_the_same_models_on_keras2_and_keras3() -> None:
    keras2, keras3 = rows_on("tensorflow1"), rows_on("keras3-jax")
    for name in MODELS:
        assert keras2[name]["status"] == "ok", keras2[name]
        assert keras3[name]["status"] == "ok", keras3[name]
        assert [shape for _, shape in keras2[name]["weights"]] == [shape for _, shape in keras3[name]["weights"]]
        assert keras2[name]["layers"] == keras3[name]["layers"]
        assert keras2[name]["shape"] == keras3[name]["shape"]


@pytest.mark.backends
def test_an_engine_without_a_function_reports_the_model_unsupported() -> None:
    rows = rows_on("cntk")
    assert rows["ctc"]["status"] == "unsupported" and "ctc_batch_cost" in rows["ctc"]["error"]
    assert rows["mlp"]["status"] == "ok"
