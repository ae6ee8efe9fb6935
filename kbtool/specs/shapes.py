"""A small, restricted expression language for shape rules. Never Python `eval`.

Expressions are parsed with `ast` and interpreted node by node; only literals, names,
lists/tuples, subscripts and slices, arithmetic (+ - * // %), comparisons, `and/or/not`,
`x if c else y`, and a few whitelisted functions are allowed. Names are the input shapes
(by parameter name, as lists) and the call's keyword values.

    x[:-1] + y[1:]               concatenated shapes
    [x[0], y[1]] if len(x) == 2 else x

The language is bounded, so that a rule from a hostile spec cannot hang or exhaust memory: an expression has
at most MAX_CHARS characters and MAX_DEPTH levels of syntax; during evaluation no list, tuple or string may have
more than MAX_ITEMS items and no integer may pass MAX_INT in size (checked before `*` repeats a sequence and
after every operation); `%` works on numbers only (no string formatting). Breaking a bound, or a RecursionError
or MemoryError, is a ShapeExprError.
"""

import ast
import operator
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Type, Union

from kbtool import files

# Values in the language are the spec's own (shapes as lists of ints, kwargs' literals): genuinely dynamic.
Names = Mapping[str, Any]  # what an expression's names stand for
Rule = Mapping[str, Any]  # a shape rule of the spec ({shape, when?, let?})

MAX_CHARS = 1000  # the shipped spec's longest expression: 147
MAX_DEPTH = 30  # levels of the syntax tree (the shipped spec's deepest: 9)
MAX_ITEMS = 64  # items of a list, tuple or string made during evaluation (a shape has at most 32 dims)
MAX_INT = 2**31  # the magnitude of an integer made during evaluation

_BINOPS: Dict[Type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_CMPOPS: Dict[Type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


def _drop(seq: Sequence[Any], index: int) -> List[Any]:
    seq = list(seq)
    del seq[index]
    return seq


FUNCTIONS: Dict[str, Callable[..., Any]] = {
    "len": len,
    "max": max,
    "min": min,
    "list": list,
    "isint": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "islist": lambda v: isinstance(v, (list, tuple)),
    "drop": _drop,  # drop(seq, i): seq without item i
    "pick": lambda seq, indices: [seq[i] for i in indices],  # pick(x, pattern): x's items in that order
    "ceil_div": lambda a, b: -(-a // b),
    "prod": lambda seq: _prod(seq),
    "axes": lambda shape, axis: _axes(shape, axis),  # axes(x, axis): the reduced axes, sorted (None: all)
    "drop_axes": lambda seq, indices: [v for i, v in enumerate(seq) if i not in indices],
    "ones_at": lambda seq, indices: [1 if i in indices else v for i, v in enumerate(seq)],  # keepdims
    "broadcast": lambda a, b: _broadcast(a, b),  # NumPy broadcasting of two shapes
    "infer_dim": lambda shape, total: _infer_dim(shape, total),  # reshape's target with its one -1 filled in
}


_BUILDERS = ("list", "drop", "pick", "axes", "drop_axes", "ones_at", "broadcast", "infer_dim")


def _infer_dim(shape: Sequence[Any], total: int) -> List[Any]:
    shape = list(shape)
    if shape.count(-1) != 1:
        return shape
    known = _prod([v for v in shape if v != -1])
    shape[shape.index(-1)] = total // known if known else 0
    return shape


def _axes(shape: Sequence[Any], axis: Any) -> List[int]:
    """A reduction's axis argument (None, an int, a list or tuple of ints, negative ones counted from the end) as
    the sorted, distinct axes of `shape` it names."""
    if axis is None:
        return list(range(len(shape)))
    named = axis if isinstance(axis, (list, tuple)) else [axis]
    for a in named:
        if not (isinstance(a, int) and not isinstance(a, bool) and -len(shape) <= a < len(shape)):
            raise ShapeExprError(f"axis {files.clip(a, 40)} is not an axis of a rank-{len(shape)} shape")
    return sorted({a % len(shape) for a in named})


def _broadcast(a_shape: Sequence[Any], b_shape: Sequence[Any]) -> List[Any]:
    a, b = list(a_shape), list(b_shape)
    rank = max(len(a), len(b))
    a, b = [1] * (rank - len(a)) + a, [1] * (rank - len(b)) + b
    out: List[Any] = []
    for m, n in zip(a, b):
        if m != n and 1 not in (m, n):
            raise ShapeExprError(f"shapes {a} and {b} do not broadcast")
        out.append(n if m == 1 else m)
    return out


def _prod(seq: Sequence[Any]) -> Any:
    total = 1
    for v in seq:
        total *= v
        _bounded(total)  # checked as it grows: prod([7] * n) never builds a huge integer
    return total


class ShapeExprError(ValueError):
    pass


class UnboundName(ShapeExprError):
    """A name the case gives no value (a parameter bound to a step function, not a shape): the spec's validation
    already checked that every name is a parameter or a `let`."""


# every node the interpreter below evaluates (and the operator/context nodes under them); nothing else parses
_ALLOWED = (
    (
        ast.Expression,
        ast.Constant,
        ast.Name,
        ast.Load,
        ast.List,
        ast.Tuple,
        ast.BinOp,
        ast.UnaryOp,
        ast.USub,
        ast.Not,
        ast.BoolOp,
        ast.And,
        ast.Or,
        ast.Compare,
        ast.IfExp,
        ast.Subscript,
        ast.Slice,
        ast.Call,
    )
    + tuple(_BINOPS)
    + tuple(_CMPOPS)
)


def _quoted(text: Any) -> str:
    return files.quote(text)


def parse(text: Any) -> ast.expr:
    """Parse and check an expression; raises ShapeExprError naming the disallowed construct."""
    if not isinstance(text, str):
        raise ShapeExprError(f"a shape expression is a string, not {_quoted(text)}")
    if len(text) > MAX_CHARS:
        raise ShapeExprError(f"expression {_quoted(text)} is longer than {MAX_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ShapeExprError(f"syntax error in {_quoted(text)}: {exc.msg}")
    except (ValueError, RecursionError, MemoryError) as exc:  # a NUL byte; nesting the parser refuses
        raise ShapeExprError(f"cannot parse {_quoted(text)}: {type(exc).__name__}")
    depths: List[Tuple[ast.AST, int]] = [(tree, 1)]  # iterative: the tree may be deeper than Python's recursion limit
    while depths:
        node, depth = depths.pop()
        if depth > MAX_DEPTH:
            raise ShapeExprError(f"expression {_quoted(text)} is nested more than {MAX_DEPTH} levels deep")
        depths.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                raise ShapeExprError("only {} may be called in {}".format(", ".join(sorted(FUNCTIONS)), _quoted(text)))
        elif isinstance(node, ast.Attribute):
            raise ShapeExprError(f"attribute access is not allowed in {_quoted(text)}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _is_text(node.left):
            raise ShapeExprError(f"% works on numbers only (no string formatting) in {_quoted(text)}")
        elif not isinstance(node, _ALLOWED):
            raise ShapeExprError(f"{type(node).__name__} is not allowed in {_quoted(text)}")
    _check_constants(tree.body, text)
    return tree.body


def _check_constants(root: ast.expr, text: str) -> None:
    """Evaluates each largest part that reads no name (`prod([7] * 2000000)`), so that one breaking the bounds is
    refused when the spec is validated; other errors are left to evaluation (the part may be in a branch never
    taken)."""
    pending: List[ast.AST] = [root]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Constant):
            continue
        if isinstance(node, ast.expr) and not isinstance(node, ast.Slice) and not names(node):
            try:
                _eval(node, {})
            except ShapeExprError as exc:
                raise ShapeExprError(f"{exc} in {_quoted(text)}")
            except (IndexError, TypeError, KeyError, ZeroDivisionError, ValueError, OverflowError):
                pass
            continue
        pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr))


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))


def names(node: ast.AST) -> Set[str]:
    """The names an expression reads (not the functions it calls)."""
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in called}


def evaluate(text_or_node: Union[str, ast.expr], names: Names) -> Any:
    node = parse(text_or_node) if isinstance(text_or_node, str) else text_or_node
    try:
        return _eval(node, names)
    except RecursionError:
        raise ShapeExprError("expression nested too deep to evaluate")
    except MemoryError:
        raise ShapeExprError("expression needs too much memory")


def _bounded(value: Any) -> Any:
    """`value`, if within the language's bounds (see the module docstring)."""
    if isinstance(value, (list, tuple, str, bytes)):
        if len(value) > MAX_ITEMS:
            raise ShapeExprError(f"a {type(value).__name__} of {len(value)} items (the limit is {MAX_ITEMS})")
    elif isinstance(value, int) and not isinstance(value, bool) and not -MAX_INT <= value <= MAX_INT:
        raise ShapeExprError(f"integer {files.clip(value, 40)} is past the limit of 2**31")
    return value


def _binop(op: Type[ast.operator], left: Any, right: Any) -> Any:
    if op is ast.Mult:  # a sequence repeated: its size is known before it is built
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, (list, tuple, str, bytes)) and isinstance(times, int):
                _bounded(seq)
                if len(seq) * max(times, 0) > MAX_ITEMS:
                    raise ShapeExprError(
                        f"a {type(seq).__name__} of {len(seq)} items repeated {files.clip(times, 40)} times (the limit is {MAX_ITEMS} items)"
                    )
    if op is ast.Mod and not (isinstance(left, (int, float)) and isinstance(right, (int, float))):
        raise ShapeExprError(f"% works on numbers only, not {type(left).__name__} and {type(right).__name__}")
    return _BINOPS[op](left, right)


def _eval(node: ast.expr, names: Names) -> Any:
    if isinstance(node, ast.Name):  # the spec's own values (shapes and kwargs) are as they are
        if node.id in names:
            return names[node.id]
        raise UnboundName("unknown name {!r} (known: {})".format(node.id, ", ".join(sorted(names))))
    return _bounded(_eval_node(node, names))


def _eval_node(node: ast.expr, names: Names) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_eval(e, names) for e in node.elts]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _binop(type(node.op), _eval(node.left, names), _eval(node.right, names))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, names)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not _eval(node.operand, names)
    if isinstance(node, ast.BoolOp):
        values = (_eval(v, names) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, names)
        for op, comparator in zip(node.ops, node.comparators):
            right = _eval(comparator, names)
            if type(op) not in _CMPOPS or not _CMPOPS[type(op)](_normal(left), _normal(right)):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body, names) if _eval(node.test, names) else _eval(node.orelse, names)
    if isinstance(node, ast.Subscript):
        value = _eval(node.value, names)
        if isinstance(node.slice, ast.Slice):
            parts = [
                None if p is None else _eval(p, names) for p in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            if isinstance(value, (list, tuple, str, bytes)):  # sliced first: a long value is never copied whole
                return list(value[slice(*parts)])
            return list(_bounded(value))[slice(*parts)]
        return value[_eval(node.slice, names)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):  # parse() allows no other call
        args = [_eval(a, names) for a in node.args]
        if node.func.id in _BUILDERS:  # functions that copy a sequence: bounded before they copy it
            for arg in args:
                _bounded(arg)
        return FUNCTIONS[node.func.id](*args)
    raise ShapeExprError(f"{type(node).__name__} is not allowed in shape rules")


def _normal(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def expected_shape(rules: Sequence[Rule], names: Names) -> Tuple[Optional[List[int]], Optional[int]]:
    """Apply the first rule whose `when` holds; returns (shape or None, rule index)."""
    for index, rule in enumerate(rules):
        scope = dict(names)
        try:
            for key, expr in (rule.get("let") or {}).items():
                scope[key] = evaluate(expr, scope)
            if rule.get("when"):
                try:
                    applies = evaluate(rule["when"], scope)
                except UnboundName:  # e.g. `islist(x)` where x is a callable: the rule is not about this case
                    continue
                if not applies:
                    continue
            return [_bounded(int(v)) for v in evaluate(rule["shape"], scope)], index
        except (
            IndexError,
            TypeError,
            KeyError,
            ZeroDivisionError,
            ValueError,
            OverflowError,
            RecursionError,
            MemoryError,
        ) as exc:
            if isinstance(exc, ShapeExprError):
                raise
            raise ShapeExprError(f"shape rule {index} failed: {type(exc).__name__}: {files.clip(exc)}")
    return None, None


# the sizes the unknown dims of the inputs are given instead of their own when predicting a static shape: an output
# dim that changes with them depends on an unknown input dim (two shifts, so that a coincidence cannot hide one)
_SHIFTS = (101, 263)


def expected_static_shape(
    rules: Sequence[Rule], names: Names, static_names: Mapping[str, Any]
) -> Tuple[Optional[List[Optional[int]]], Optional[int], bool]:
    """What K.int_shape should say of a symbolic result: (dims, rule index, determined).

    `names` are what the rules see (the inputs' real shapes); `static_names` the tensor parameters whose static shape
    has None dims (the placeholders' shapes). An output dim is known (an int) unless it changes when the unknown input
    dims change, then None. `determined` is False when the rules cannot tell (a rule that fails or changes with other
    sizes, e.g. an unknown dim broadcast against a known one): then the dims are the real shape's and any of them
    may be unknown. Returns (None, None, True) when no rule applies.
    """
    want, index = expected_shape(rules, names)
    if want is None:
        return None, None, True
    if not static_names:
        return list(want), index, True
    unknown: Set[int] = set()
    for shift in _SHIFTS:
        shifted = dict(names)
        for name, static in static_names.items():
            if name in names:
                shifted[name] = _shifted(names[name], static, shift)
        try:
            other, other_index = expected_shape(rules, shifted)
        except ShapeExprError:
            return list(want), index, False
        if other is None or other_index != index or len(other) != len(want):
            return list(want), index, False
        unknown.update(i for i, (a, b) in enumerate(zip(want, other)) if a != b)
    return [None if i in unknown else d for i, d in enumerate(want)], index, True


def _shifted(shape: Any, static: Any, shift: int) -> Any:
    """`shape` with the dims that `static` leaves unknown (None) made `shift` larger (lists of shapes item by item)."""
    if not isinstance(shape, list) or not isinstance(static, list) or len(shape) != len(static):
        return shape
    out: List[Any] = []
    for size, known in zip(shape, static):
        if isinstance(size, list):
            out.append(_shifted(size, known, shift))
        elif known is None and isinstance(size, int) and not isinstance(size, bool):
            out.append(size + shift)
        else:
            out.append(size)
    return out
