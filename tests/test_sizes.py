"""The sizes that keep the code readable, read from the code with `ast`: no module over 700 lines, no function over
80 lines, no function with more than 10 parameters (a click command taking its options aside), every function
outside the worker annotated (mypy's strict flags then check the annotations)."""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80
MAX_PARAMETERS = 10


def sources():
    for folder, dirs, names in os.walk(os.path.join(ROOT, "kbtool")):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    yield os.path.relpath(path, ROOT), f.read()


def functions(source):
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def parameters(node):
    a = node.args
    return [x for x in a.posonlyargs + a.args + a.kwonlyargs if x.arg not in ("self", "cls")]


def is_click_command(node):
    return any(
        word in ast.unparse(d) for d in node.decorator_list for word in ("command", "option", "argument", "group")
    )


def oversized(files):
    """One line per module, function or parameter list over its limit."""
    found = []
    for path, source in files:
        lines = len(source.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{path}: {lines} lines (at most {MAX_MODULE_LINES})")
        for node in functions(source):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{path}:{node.lineno} {node.name}: {length} lines (at most {MAX_FUNCTION_LINES})")
            count = len(parameters(node))
            if count > MAX_PARAMETERS and not is_click_command(node):
                found.append(f"{path}:{node.lineno} {node.name}: {count} parameters (at most {MAX_PARAMETERS})")
    return found


def test_no_module_function_or_parameter_list_is_over_its_limit():
    found = oversized(sources())
    assert not found, "\n".join(found)


def test_every_function_outside_the_worker_is_annotated():
    bare = [
        f"{path}:{node.lineno} {node.name}"
        for path, source in sources()
        if not path.startswith(os.path.join("kbtool", "worker"))
        for node in functions(source)
        if node.returns is None and not any(p.annotation is not None for p in parameters(node))
    ]
    assert not bare, "\n".join(bare)


@pytest.mark.parametrize(
    "source, found",
    [
        ("def f(a, b):\n    return a\n", 0),
        ("def f(\n" + "".join(f"    a{i},\n" for i in range(11)) + "):\n    pass\n", 1),
        ("@click.command()\ndef f(" + ", ".join(f"a{i}" for i in range(11)) + "):\n    pass\n", 0),
        ("def f():\n" + "    x = 1\n" * 80, 1),
        ("def f():\n" + "    x = 1\n" * 79, 0),
        ("x = 1\n" * 701, 1),
    ],
)
def test_the_limits_bite(source, found):
    assert len(oversized([("kbtool/x.py", source)])) == found
