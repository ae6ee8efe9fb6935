"""The K.* -> Keras 3 map (specs/keras3_map.yaml): load it once, validate it, and hand out one typed row per function.

Each function of specs/ops.yaml has one row: `keras3:` the Python expression a port would use (with an optional
`note:`), or `none:` why Keras 3 has no equivalent. Validation has the spec loader's two layers: the JSON Schema
(structure) and what a schema cannot say (exactly one of keras3 and none, each expression parses as Python, the rows
are exactly the spec's functions). Every problem is one line, `file:line: map.NAME: message`.
"""

import ast
import hashlib
import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from kbtool import files, paths
from kbtool.errors import KbtoolError
from kbtool.specs import loader

SCHEMA_VERSION = 1

_TEXT = {"type": "string", "minLength": 1, "pattern": "\\S"}
SCHEMA: Dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["schema_version", "keras", "map"],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "keras": {"type": "string", "pattern": "^3\\."},  # the Keras 3 release the names were checked against
        "map": {
            "type": "object",
            "propertyNames": {"pattern": "^[a-z_][a-z0-9_]*$"},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"keras3": _TEXT, "note": _TEXT, "none": _TEXT},
            },
        },
    },
}


class MapError(KbtoolError):
    """The map file is unreadable or invalid: the first problem, and how many more there are."""

    def __init__(self, problems: List[str]) -> None:
        self.problems = problems
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        super().__init__(problems[0] + more)


@dataclass(frozen=True)
class Row:
    """One function's row: its Keras 3 expression and note, or why there is none."""

    op: str
    keras3: Optional[str]
    note: Optional[str]
    none: Optional[str]
    line: int  # where the row starts in the map file

    @property
    def has_expression(self) -> bool:
        return self.keras3 is not None

    def as_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"op": self.op}
        for key in ("keras3", "note", "none"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class Keras3Map:
    """The validated map: `rows` in the spec's order of functions."""

    path: str
    keras: str
    rows: Tuple[Row, ...]

    def row(self, op: str) -> Row:
        for row in self.rows:
            if row.op == op:
                return row
        raise KbtoolError(f"no row {op!r} in {self.path}")


def map_file() -> str:
    return os.path.join(paths.specs_dir(), "keras3_map.yaml")


_CACHE: Dict[Tuple[str, str, Tuple[str, ...]], Keras3Map] = {}


def load(path: Optional[str] = None, spec_ops: Optional[Sequence[str]] = None) -> Keras3Map:
    """The validated map at `path` (default: the shipped one), its rows checked against `spec_ops` (default: the
    shipped spec's functions, in order). A MapError lists its problems, one line each."""
    path = path or map_file()
    ops = tuple(spec_ops) if spec_ops is not None else tuple(loader.load().ops)
    try:
        text = files.read_text(path, "map ")
    except files.FileProblem as exc:
        raise MapError([str(exc)])
    assert text is not None  # read_text returns None only for missing_ok
    key = (path, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), ops)
    if key not in _CACHE:
        _CACHE[key] = _load(path, text, ops)
    return _CACHE[key]


def _load(path: str, text: str, ops: Tuple[str, ...]) -> Keras3Map:
    try:
        root, data = files.parse_yaml(path, text, "invalid YAML")
    except files.FileProblem as exc:
        raise MapError([str(exc)])
    if root is None:
        raise MapError([f"{path}:1: the map is empty"])
    found = _problems(root, data, ops)
    if found:
        found.sort(key=lambda item: item[0])
        raise MapError([files.one_line(f"{path}:{line}: {files.clip(where)}: {msg}") for line, where, msg in found])
    rows = tuple(
        Row(
            op=op,
            keras3=data["map"][op].get("keras3"),
            note=data["map"][op].get("note"),
            none=data["map"][op].get("none"),
            line=loader._node_line(root, ["map", op]),
        )
        for op in ops
    )
    return Keras3Map(path=path, keras=data["keras"], rows=rows)


def _problems(root: Any, data: Any, ops: Tuple[str, ...]) -> List[Tuple[int, str, str]]:
    import jsonschema

    found: List[Tuple[int, List[Any], str]] = []
    loader._duplicate_keys(root, [], found)
    for error in jsonschema.Draft202012Validator(SCHEMA).iter_errors(data):
        best = jsonschema.exceptions.best_match([error])
        found.append((loader._node_line(root, list(best.absolute_path)), list(best.absolute_path), best.message))
    if not found:
        found += [(loader._node_line(root, p), p, msg) for p, msg in _semantic_problems(data["map"], ops)]
    return [(line, loader._dotted(p), msg) for line, p, msg in found]


def _semantic_problems(rows: Dict[str, Dict[str, str]], ops: Tuple[str, ...]) -> Iterator[Tuple[List[Any], str]]:
    known: Set[str] = set(ops)
    for op in ops:
        if op not in rows:
            yield ["map"], f"no row for {op!r}, a function of the spec (each function needs keras3: or none:)"
    for op, row in rows.items():
        where = ["map", op]
        if op not in known:
            yield where, f"{op!r} is no function of the spec"
            continue
        if "keras3" in row and "none" in row:
            yield where, "both keras3 and none: give the Keras 3 expression, or why there is none, not both"
        elif "keras3" not in row and "none" not in row:
            yield where, "neither keras3 nor none: give the Keras 3 expression, or why there is none"
        elif "none" in row and "note" in row:
            yield where + ["note"], "a note goes with a keras3 expression; a row with none says all in none"
        if "keras3" in row:
            try:
                parse(row["keras3"])
            except SyntaxError as exc:
                yield where + ["keras3"], f"not a Python expression: {exc.msg} (column {exc.offset})"


def parse(expression: str) -> ast.Expression:
    """`expression` parsed as one Python expression; a SyntaxError otherwise."""
    return ast.parse(expression.strip(), mode="eval")


def keras_names(expression: str) -> List[str]:
    """The dotted `keras.*` names `expression` uses (keras.ops.image.resize, not keras.ops too), sorted, once each."""
    names: Set[str] = set()

    def chain(node: ast.AST) -> Optional[str]:
        parts: List[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id == "keras" and parts:
            return ".".join(["keras"] + parts[::-1])
        return None

    def visit(node: ast.AST) -> None:
        name = chain(node) if isinstance(node, ast.Attribute) else None
        if name:
            names.add(name)
            return
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(parse(expression))
    return sorted(names)


_MENTION = re.compile(r"\bkeras(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def mentioned_names(text: str) -> List[str]:
    """The dotted `keras.*` names a note or a reason mentions, sorted, once each."""
    return sorted(set(_MENTION.findall(text)))


def all_keras_names(keras3_map: Keras3Map) -> List[str]:
    """Every dotted `keras.*` name the map uses: in its expressions, and mentioned in its notes and reasons."""
    names: Set[str] = set()
    for row in keras3_map.rows:
        if row.keras3:
            names.update(keras_names(row.keras3))
        for text in (row.note, row.none):
            if text:
                names.update(mentioned_names(text))
    return sorted(names)
