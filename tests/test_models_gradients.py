"""The training step's oracle: the reference does not train, so gradients are compared with the majority of the
engines that trained, and an engine whose gradients alone differ is unexplained."""

import numpy as np

from kbtool.models.compare import compare_model, gradient_majority
from tests.test_models_compare import run


def test_gradients_are_judged_against_the_majority_when_the_reference_does_not_train() -> None:
    runs = {"numpy": run("numpy", grads=False), "a": run("a"), "b": run("b"), "c": run("c")}
    runs["c"].gradients = [g + np.float32(0.05) for g in runs["c"].gradients]
    choice, results = compare_model(runs)
    assert choice.kind == "reference"
    by = {r.engine: r for r in results}
    assert by["a"].verdict == "pass" and by["a"].gradient is not None and by["a"].gradient_oracle in ("a", "b")
    assert by["c"].verdict == "unexplained" and by["c"].gradient is not None and by["c"].gradient.inconsistent
    assert not by["c"].forward.inconsistent  # only the gradients differ


def test_no_majority_no_gradient_verdict() -> None:
    runs = {"a": run("a"), "b": run("b")}
    runs["b"].gradients = [g * 2 for g in runs["b"].gradients]
    assert gradient_majority(runs) is None
    assert gradient_majority({"a": run("a"), "b": run("b"), "c": run("c", grads=False)}) is not None
