"""The adapter runs the map: kbtool/worker/keras3_port/ defines exactly the functions specs/keras3_map.yaml gives
a Keras 3 expression, and each one calls what its row names. Read with `ast`: no keras is imported here."""

import ast
import os

from kbtool.specs import keras3_map, loader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORT = os.path.join(ROOT, "kbtool", "worker", "keras3_port")


def adapter_functions():
    """{function name: its source and that of the module's functions it calls}, for the public top-level functions of
    every module of the adapter, plus the names bound to a private one (gradients = _torch_gradients)."""
    found, done = {}, set()
    for name in sorted(os.listdir(PORT)):
        if not name.endswith(".py") or name == "__init__.py":
            continue
        with open(os.path.join(PORT, name)) as f:
            source = f.read()
        tree = ast.parse(source)
        private = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.col_offset == 0:
                text = ast.get_source_segment(source, node)
                if node.name.startswith("_"):
                    private[node.name] = text
                else:
                    found[node.name] = text
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in private:
                for target in node.targets:
                    if isinstance(target, ast.Name) and not target.id.startswith("_"):
                        found[target.id] = private[node.value.id]
        every = dict(private, **{name: found[name] for name in found if name not in done})
        for name in set(found) - done:
            found[name] = with_helpers(found[name], every)
        done = set(found)
    return found


def with_helpers(text, private):
    """`text` and the text of every function of its module it names, and theirs in turn."""
    seen, todo, parts = set(), [text], []
    while todo:
        part = todo.pop()
        parts.append(part)
        for node in ast.walk(ast.parse(part)):
            if isinstance(node, ast.Name) and node.id in private and node.id not in seen:
                seen.add(node.id)
                todo.append(private[node.id])
    return "\n".join(parts)


def test_the_adapter_defines_exactly_the_functions_the_map_gives_an_expression():
    spec = loader.load()
    rows = {row.op: row for row in keras3_map.load(spec_ops=sorted(spec.ops)).rows}
    defined = adapter_functions()
    # the map is the port: a row with an expression is defined (a Keras 1 alias too: its row is what a porter
    # writes), a row with none is not (gradients: the harness's kbtool_gradients is no spec op)
    with_expression = {op for op in spec.ops if rows[op].has_expression}
    missing = sorted(with_expression - set(defined))
    assert not missing, f"the map gives these a Keras 3 expression, the adapter does not define them: {missing}"
    unmapped = sorted(op for op in set(defined) & set(spec.ops) if not rows[op].has_expression)
    assert not unmapped, f"the map says these have no Keras 3 equivalent, yet the adapter defines them: {unmapped}"
    aliases = {op for op, entry in spec.ops.items() if entry.get("alias_of")}
    assert aliases and aliases <= with_expression  # the Keras 1 aliases have rows, so the rule above covers them


def test_each_adapter_function_calls_what_its_row_names():
    spec = loader.load()
    rows = {row.op: row for row in keras3_map.load(spec_ops=sorted(spec.ops)).rows}
    defined = adapter_functions()
    astray = []
    for op, source in sorted(defined.items()):
        row = rows.get(op)
        if row is None or not row.has_expression:
            continue
        leaves = {name.rsplit(".", 1)[-1] for name in keras3_map.keras_names(row.keras3)}
        if leaves and not any(leaf in source for leaf in leaves):
            astray.append(f"{op}: the map says {row.keras3}, the adapter calls none of {sorted(leaves)}")
    assert not astray, "\n".join(astray)
