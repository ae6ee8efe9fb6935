"""A model finding as a spec case: the K.* call that caused it, its inputs as `value` literals (float32 values round
trip exactly: each is written as the shortest decimal of its float64 widening, which reads back to the same float32)
and its other arguments as kwargs, under the id `model.<model>.<engine>.<layer>`; `kbtool models --emit-cases
FILE.yaml` writes one per unexplained finding, and `kbtool check --cases FILE.yaml --op OP --case ID --backend ENGINE`
replays it (kbtool/specs/extra_cases.py reads the file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Sequence

import numpy as np

from kbtool.specs.records import Entry, RawCase

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")  # what a spec case id may not hold (specs/schema.py CASE id)
HEADER = (
    "# Spec cases written by `kbtool models --emit-cases`: one per model inconsistency no known difference explains.\n"
    "# Replay one: kbtool check --cases THIS_FILE --op OP --case ID --backend ENGINE\n"
)


@dataclass(frozen=True)
class EmittedCase:
    """One finding's case: the op it calls and the case as the spec writes it."""

    op: str
    raw: RawCase


def case_id(model: str, engine: str, layer: str) -> str:
    """`model.<model>.<engine>.<layer>`, each part with what an id may not hold replaced by '_'."""
    return ".".join(_UNSAFE.sub("_", part) or "_" for part in ("model", model, engine, layer))


def _input(value: np.ndarray) -> Dict[str, Any]:
    """A `value` input of an array, its dtype named (NaN and inf as YAML writes them)."""
    wide = value.astype(np.float64) if value.dtype.kind == "f" else value
    return {"value": wide.tolist(), "dtype": str(value.dtype)}


def _literal(value: Any) -> Any:
    """A kwarg as YAML can hold it: tuples as lists, NumPy scalars as Python numbers."""
    if isinstance(value, (tuple, list)):
        return [_literal(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def raw_case(entry: Entry, params: Mapping[str, Any], case: str, about: str = "") -> RawCase:
    """The spec case of a call of the op `entry` describes, its arguments by parameter name: arrays (and lists of
    arrays) become `value` inputs of their parameter, the rest kwargs."""
    inputs: Dict[str, Any] = {}
    kwargs: Dict[str, Any] = {}
    for param in entry.get("signature", []):
        name = param["name"]
        if name.startswith("*") or name not in params:
            continue
        value = params[name]
        if isinstance(value, np.ndarray):
            inputs[name] = _input(value)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, np.ndarray) for v in value):
            inputs[name] = [_input(v) for v in value]
        else:
            kwargs[name] = _literal(value)
    raw: RawCase = {"id": case}
    if about:
        raw["about"] = about
    if inputs:
        raw["inputs"] = inputs
    if kwargs:
        raw["kwargs"] = kwargs
    return raw


def render(cases: Sequence[EmittedCase]) -> str:
    """The case file's text: `cases:` by op, in the order the findings came."""
    import yaml

    by_op: Dict[str, List[RawCase]] = {}
    for emitted in cases:
        by_op.setdefault(emitted.op, []).append(emitted.raw)
    body = yaml.safe_dump({"cases": by_op}, default_flow_style=None, sort_keys=False, width=120)
    return HEADER + body


def write_cases(path: str, cases: Sequence[EmittedCase]) -> None:
    """Write the case file (replacing it); an unwritable path is a one-line KbtoolError."""
    from kbtool import files
    from kbtool.errors import KbtoolError

    try:
        files.write_atomic(path, render(cases))
    except OSError as exc:
        raise KbtoolError(f"--emit-cases {path}: {exc.strerror or exc}")
