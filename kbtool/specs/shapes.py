"""A small, restricted expression language for shape rules. Never Python `eval`.

Expressions are parsed with `ast` and interpreted node by node; only literals, names,
lists/tuples, subscripts and slices, arithmetic (+ - * // %), comparisons, `and/or/not`,
`x if c else y`, and a few whitelisted functions are allowed. Names are the input shapes
(by parameter name, as lists) and the call's keyword values.

    x[:-1] + y[1:]               concatenated shapes
    [x[0], y[1]] if len(x) == 2 else x
"""
import ast
import operator

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def _drop(seq, index):
    seq = list(seq)
    del seq[index]
    return seq


FUNCTIONS = {
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
}


def _prod(seq):
    total = 1
    for v in seq:
        total *= v
    return total


class ShapeExprError(ValueError):
    pass


def parse(text):
    """Parse and check an expression; raises ShapeExprError naming the disallowed construct."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ShapeExprError("syntax error in {!r}: {}".format(text, exc.msg))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS or node.keywords:
                raise ShapeExprError("only {} may be called in {!r}".format(", ".join(sorted(FUNCTIONS)), text))
        elif isinstance(node, ast.Attribute):
            raise ShapeExprError("attribute access is not allowed in {!r}".format(text))
        elif isinstance(node, (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.DictComp, ast.SetComp,
                               ast.NamedExpr, ast.Starred, ast.Await)):
            raise ShapeExprError("{} is not allowed in {!r}".format(type(node).__name__, text))
    return tree.body


def evaluate(text_or_node, names):
    node = parse(text_or_node) if isinstance(text_or_node, str) else text_or_node
    return _eval(node, names)


def _eval(node, names):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in names:
            return names[node.id]
        raise ShapeExprError("unknown name {!r} (known: {})".format(node.id, ", ".join(sorted(names))))
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_eval(e, names) for e in node.elts]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval(node.left, names), _eval(node.right, names))
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
            parts = [None if p is None else _eval(p, names) for p in (node.slice.lower, node.slice.upper, node.slice.step)]
            return list(value)[slice(*parts)]
        return value[_eval(node.slice, names)]
    if isinstance(node, ast.Call):
        return FUNCTIONS[node.func.id](*[_eval(a, names) for a in node.args])
    raise ShapeExprError("{} is not allowed in shape rules".format(type(node).__name__))


def _normal(value):
    return list(value) if isinstance(value, tuple) else value


def expected_shape(rules, names):
    """Apply the first rule whose `when` holds; returns (shape or None, rule index)."""
    for index, rule in enumerate(rules):
        scope = dict(names)
        try:
            for key, expr in (rule.get("let") or {}).items():
                scope[key] = evaluate(expr, scope)
            if rule.get("when") and not evaluate(rule["when"], scope):
                continue
            return [int(v) for v in evaluate(rule["shape"], scope)], index
        except (IndexError, TypeError, KeyError, ZeroDivisionError, ValueError) as exc:
            if isinstance(exc, ShapeExprError):
                raise
            raise ShapeExprError("shape rule {} failed: {}: {}".format(index, type(exc).__name__, exc))
    return None, None
