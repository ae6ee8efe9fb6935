"""The spec's `bench:` section: the sizes an op's benchmark family declares, and the raw case each size is.

An op's `bench:` gives a case whose dims (and `{eval: expr}` kwargs) are expressions of `n`, and the `n` of each
size. What that means is the spec's own fact, so it lives here: the loader checks that every size binds, and
kbtool/bench/families.py times the same cases (it also makes families for ops without a `bench:` section).
"""

import copy
from typing import Dict, List

from kbtool.specs import shapes
from kbtool.specs.records import Entry, InputSpec, RawCase

SIZES = ("small", "medium", "large")


def inputs(raw: RawCase) -> List[InputSpec]:
    """The raw case's input specs, flattened in order (a mapping's values, lists of inputs spread)."""
    given = raw.get("inputs", [])
    values = list(given.values()) if isinstance(given, dict) else list(given)
    flat: List[InputSpec] = []
    for value in values:
        flat.extend(value if isinstance(value, list) else [value])
    return flat


def substitute(raw: RawCase, names: Dict[str, float]) -> RawCase:
    """A family's case with every dim that is an expression of n, and every `{eval: expr}` kwarg, evaluated."""
    raw = copy.deepcopy(raw)
    for inp in inputs(raw):
        if isinstance(inp.get("shape"), list):
            inp["shape"] = [d if isinstance(d, int) else int(shapes.evaluate(str(d), names)) for d in inp["shape"]]
    for key, value in list(raw.get("kwargs", {}).items()):
        if isinstance(value, dict) and set(value) == {"eval"}:
            raw["kwargs"][key] = shapes.evaluate(str(value["eval"]), names)
    return raw


def with_id(raw: RawCase, size: str) -> RawCase:
    """The raw case of one size, named bench.<size> (a family's `about` is not the case's)."""
    raw = dict(raw, id="bench." + size)
    raw.pop("about", None)
    return raw


def declared_case(entry: Entry, size: str) -> RawCase:
    """The raw case of one size of the family an op's `bench:` declares (shapes.ShapeExprError, ValueError or
    TypeError when an expression does not evaluate)."""
    declared = entry["bench"]
    return with_id(substitute(dict(declared["case"]), {"n": declared["sizes"][size]}), size)
