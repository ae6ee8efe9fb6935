"""The K.* -> Keras 3 map (specs/keras3_map.yaml): load it once, validate it, and hand out one typed row per function.

Each function of specs/ops.yaml has one row: `keras3:` the Python expression a port would use (with an optional
`note:`), or `none:` why Keras 3 has no equivalent. Validation has the spec loader's two layers: the JSON Schema
(structure) and what a schema cannot say (exactly one of keras3 and none, each expression parses as Python, the rows
are exactly the spec's functions). Every problem is one line, `file:line: map.NAME: message`.
"""

import ast
import builtins
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
                parse_code(row["keras3"])
            except SyntaxError as exc:
                yield where + ["keras3"], f"not a Python expression or block: {exc.msg} (column {exc.offset})"


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

    visit(parse_code(expression))
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


# ---- the port is the map: each K.* function of kbtool's Keras 3 adapter is its row's code, mechanically

_BUILTINS = frozenset(dir(builtins))
_MODULES = ("keras", "numpy")  # the modules a row may name; the port imports each under its own name
HOOK_PREFIX = "kbtool_"  # the harness's own hooks (kbtool_reset, kbtool_sync, input hooks): not K.* functions


@dataclass(frozen=True)
class _Module:
    """One source file of the port: its module-level functions and classes, the modules it imports by name, and
    what else it binds at module level (name -> line)."""

    path: str
    functions: Dict[str, ast.AST]
    imports: Set[str]
    bound: Dict[str, int]


def parse_code(code: str) -> ast.AST:
    """A row's code: one expression (`ast.Expression`) or, for a port that needs statements, a block
    (`ast.Module`, which may `return`). A SyntaxError when it is neither."""
    try:
        return parse(code)
    except SyntaxError:
        return ast.parse(code.strip("\n"), mode="exec")


def row_body(code: str) -> List[ast.stmt]:
    """The statements a port function's body must be (docstring aside): `return <expression>` for an expression
    row, the block itself for a block row."""
    tree = parse_code(code)
    if isinstance(tree, ast.Expression):
        return [ast.Return(value=tree.body)]
    assert isinstance(tree, ast.Module)
    return list(tree.body)


def _read_port(port_dir: str) -> List[_Module]:
    modules = []
    for name in sorted(os.listdir(port_dir)):
        if not name.endswith(".py"):
            continue
        path = os.path.join(port_dir, name)
        tree = ast.parse(files.read_text(path, "port ") or "", filename=path)
        functions: Dict[str, ast.AST] = {}
        imports: Set[str] = set()
        bound: Dict[str, int] = {}
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                functions[node.name] = node
            elif isinstance(node, ast.Import):
                imports.update(alias.asname or alias.name for alias in node.names if alias.name in _MODULES)
            for sub in ast.walk(node):  # module-level bindings, conditional ones included (`if ...: f = g`)
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    bound.setdefault(sub.id, sub.lineno)
                if isinstance(sub, (ast.FunctionDef, ast.ClassDef)) and sub is not node:
                    break
        modules.append(_Module(path=path, functions=functions, imports=imports, bound=bound))
    return modules


def _signature(node: ast.FunctionDef) -> List[Tuple[str, Any]]:
    """(name, default) per parameter, in order; `*args` and `**kwargs` keep their stars; no default: the marker."""
    args = node.args
    positional = list(getattr(args, "posonlyargs", [])) + list(args.args)
    defaults: List[Any] = [_NO_DEFAULT] * (len(positional) - len(args.defaults)) + [_literal(d) for d in args.defaults]
    out = [(a.arg, d) for a, d in zip(positional, defaults)]
    if args.vararg:
        out.append(("*" + args.vararg.arg, _NO_DEFAULT))
    out += [(a.arg, _NO_DEFAULT if d is None else _literal(d)) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        out.append(("**" + args.kwarg.arg, _NO_DEFAULT))
    return out


_NO_DEFAULT = "<required>"


def _literal(node: ast.AST) -> Any:
    try:
        return _tuples(ast.literal_eval(node))
    except ValueError:
        return ast.unparse(node)


def _tuples(value: Any) -> Any:
    # the spec writes K's tuple defaults as YAML lists
    return tuple(_tuples(v) for v in value) if isinstance(value, (list, tuple)) else value


def _spec_signature(params: Sequence[Dict[str, Any]]) -> List[Tuple[str, Any]]:
    return [(p["name"], _tuples(p["default"]) if "default" in p else _NO_DEFAULT) for p in params]


def _body(node: ast.FunctionDef) -> List[ast.stmt]:
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
    return body


def _free_names(code: str, params: Set[str]) -> Set[str]:
    """The names `code` reads that it does not bind itself, are not parameters and are not builtins."""
    tree = parse_code(code)
    read: Set[str] = set()
    local: Set[str] = set(params)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else local).add(node.id)
        elif isinstance(node, ast.arg):
            local.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            local.add(node.name)
    return read - local - _BUILTINS


def _row_deviation(row: Row, params: Sequence[Dict[str, Any]], module: _Module, node: ast.AST) -> Optional[str]:
    assert row.keras3 is not None
    if not isinstance(node, ast.FunctionDef):
        return f"{module.path}: {row.op} is a class, not a function"
    want, got = _spec_signature(params), _signature(node)
    if want != got:
        return f"its parameters are {_shown(got)}, the spec's signature is {_shown(want)}"
    for name in sorted(_free_names(row.keras3, {p[0].lstrip("*") for p in want})):
        if name in _MODULES and name not in module.imports:
            return f"the row names {name}, which {os.path.basename(module.path)} does not `import {name}`"
        if name not in _MODULES and name not in module.functions:
            return f"the row calls {name}, which {os.path.basename(module.path)} does not define"
    if ast.dump(ast.Module(body=_body(node), type_ignores=[])) != ast.dump(
        ast.Module(body=row_body(row.keras3), type_ignores=[])
    ):
        return "its body is not the row's code: " + files.clip(" ".join(ast.unparse(s) for s in _body(node)))
    return None


def _shown(signature: List[Tuple[str, Any]]) -> str:
    return "(" + ", ".join(n if d == _NO_DEFAULT else f"{n}={d!r}" for n, d in signature) + ")"


def port_deviations(
    port_dir: str, keras3_map: Optional[Keras3Map] = None, spec: Optional[loader.Spec] = None
) -> Dict[str, str]:
    """{name: why} for each way the adapter in `port_dir` (its *.py files, read, not imported) is not the map: a
    `keras3:` row whose function is missing, has other parameters than the spec's signature, or whose body
    (docstring aside) is not the row's code (`return <expression>`, or the row's block); a helper the row calls
    that the port does not define; a `none:` row the port defines anyway; a public function that is no K.*
    function (the harness's `kbtool_*` hooks and private `_names` aside). Empty: the port is the map."""
    keras3_map = keras3_map or load()
    spec = spec or loader.load()
    modules = _read_port(port_dir)
    found: Dict[str, str] = {}
    defined: Dict[str, Tuple[_Module, ast.AST]] = {}
    for module in modules:
        for name, node in module.functions.items():
            if name in defined:
                found[name] = f"defined twice: {defined[name][0].path} and {module.path}"
            defined[name] = (module, node)
    rows = {row.op: row for row in keras3_map.rows}
    for row in keras3_map.rows:
        where = [m for m in modules if row.op in m.bound or row.op in m.functions]
        if row.none is not None:
            if where:
                found[row.op] = f"the map has no Keras 3 equivalent (none:), yet {where[0].path} defines it"
        elif row.op not in defined:
            found[row.op] = "the map gives its code (keras3:), but the port does not define it"
        elif row.op not in found:
            module, node = defined[row.op]
            why = _row_deviation(row, spec.op(row.op)["signature"], module, node)
            if why:
                found[row.op] = why
    for name, (module, node) in defined.items():
        if name not in rows and not name.startswith(("_", HOOK_PREFIX)) and not isinstance(node, ast.ClassDef):
            found[name] = f"{module.path}: a public function that is no K.* function (a hook is named kbtool_*)"
    return found


_DEVIATIONS: Dict[str, Dict[str, str]] = {}


def adapter_deviation(module: str, op: str) -> Optional[str]:
    """Why kbtool's adapter package `module` (a keras3-* backend's: keras3_port) runs something other than the
    map's row for `op`, or None (also for any other backend's module). Read once per process."""
    if module != PORT_MODULE:
        return None
    port_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "worker", module)
    if port_dir not in _DEVIATIONS:
        _DEVIATIONS[port_dir] = port_deviations(port_dir)
    return _DEVIATIONS[port_dir].get(op)


PORT_MODULE = "keras3_port"
