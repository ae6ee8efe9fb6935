"""The built-in recipes behind a lazy table (as hypothesis keeps its providers): each backend's name maps to where
its Recipe is, "module:attribute", and the module is imported when the recipe is first asked for. The names, their
order and which are oracles are known without importing any recipe.

Three tables of data: keras2.py (the Keras 2 engines and keras3, Keras 3's legacy backend on TensorFlow), keras3.py
(the five Keras 3 engines behind kbtool's adapter) and oracles.py (keras-numpy; the numpy reference is a Launch of
its own). Adding a backend: a Recipe in one of them, a line here, and its lock in kbtool/runners/locks/.
"""

import importlib
from typing import Dict, Iterator, Mapping, MutableMapping

from kbtool.runners.recipes.recipe import Recipe as Recipe

_HERE = "kbtool.runners.recipes"
# name -> "module:attribute", in the order kbtool lists its backends
PROVIDERS: Dict[str, str] = {
    "tensorflow": f"{_HERE}.keras2:TENSORFLOW",
    "tensorflow1": f"{_HERE}.keras2:TENSORFLOW1",
    "theano": f"{_HERE}.keras2:THEANO",
    "cntk": f"{_HERE}.keras2:CNTK",
    "mxnet": f"{_HERE}.keras2:MXNET",
    "plaidml": f"{_HERE}.keras2:PLAIDML",
    "keras3": f"{_HERE}.keras2:KERAS3",
    "keras-numpy": f"{_HERE}.oracles:KERAS_NUMPY",
    "keras3-jax": f"{_HERE}.keras3:JAX",
    "keras3-torch": f"{_HERE}.keras3:TORCH",
    "keras3-tensorflow": f"{_HERE}.keras3:TENSORFLOW",
    "keras3-numpy": f"{_HERE}.keras3:NUMPY",
    "keras3-openvino": f"{_HERE}.keras3:OPENVINO",
}
ORACLE_NAMES = ["keras-numpy"]  # test oracles: checked, never benched (their recipes say oracle=True)


class RecipeTable(MutableMapping[str, Recipe]):
    """{name: Recipe}, each recipe imported on first use. Writable (tests register a recipe of their own)."""

    def __init__(self, providers: Mapping[str, str]) -> None:
        self._providers = dict(providers)
        self._loaded: Dict[str, Recipe] = {}

    def __getitem__(self, name: str) -> Recipe:
        if name not in self._loaded:
            module, _, attribute = self._providers[name].partition(":")  # KeyError: not a built-in recipe
            recipe = getattr(importlib.import_module(module), attribute)
            if not isinstance(recipe, Recipe):
                raise TypeError(f"{self._providers[name]} is not a Recipe")
            self._loaded[name] = recipe
        return self._loaded[name]

    def __setitem__(self, name: str, recipe: Recipe) -> None:
        self._providers.setdefault(name, "")
        self._loaded[name] = recipe

    def __delitem__(self, name: str) -> None:
        del self._providers[name]
        self._loaded.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._providers

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._providers))

    def __len__(self) -> int:
        return len(self._providers)

    def __repr__(self) -> str:
        return f"RecipeTable({list(self._providers)})"


RECIPES = RecipeTable(PROVIDERS)
