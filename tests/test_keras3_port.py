"""The keras3_port adapter's source, read without Keras: every module parses as Python 3.6 syntax would need, is
registered in the package, and defines only documented K.* functions (a misspelt name would silently leave an op
`unsupported`). No backend environment is needed."""

import ast
import pathlib

import pytest

PORT = pathlib.Path(__file__).resolve().parent.parent / "kbtool" / "worker" / "keras3_port"
MODULES = ["core", "arrays", "nn"]
# Documented functions the adapter leaves undefined on purpose: Keras 3 has no equivalent (arrays.py's docstring).
UNDEFINED = {"print_tensor", "is_placeholder", "is_sparse"}
# Names that are no K.* function: the adapter's own hooks, read by kbtool's worker.
# the harness's own: bench's sync and reset, and the device peak's copy, device name and precision switch
ADAPTER_HOOKS = {
    "kbtool_sync",
    "kbtool_reset",
    "is_symbolic",
    "kbtool_copy",
    "kbtool_device",
    "kbtool_precisions",
    "kbtool_set_precision",
}


def _tree(name: str) -> ast.Module:
    return ast.parse((PORT / f"{name}.py").read_text(), filename=f"{name}.py", feature_version=(3, 6))


def _public_defs(name: str) -> set[str]:
    """The functions the package exports from a module: top-level defs not starting with '_', and top-level names
    bound to one of its defs (core's `gradients = _torch_gradients`)."""
    tree = _tree(name)
    names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in names:
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {n for n in names if not n.startswith("_")}


@pytest.mark.parametrize("name", MODULES + ["__init__"])
def test_each_module_parses_as_python36(name):
    tree = _tree(name)
    assert tree.body, f"{name}.py is empty"
    # Python 3.6 has no walrus, no positional-only parameters and no `from __future__ import annotations`
    for node in ast.walk(tree):
        assert not isinstance(node, ast.NamedExpr), f"{name}.py line {node.lineno}: walrus"
        if isinstance(node, ast.arguments):
            assert not node.posonlyargs, f"{name}.py: positional-only parameters"
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            assert "annotations" not in {a.name for a in node.names}, f"{name}.py: postponed annotations"


def test_every_module_is_registered_in_the_package():
    tree = _tree("__init__")
    modules = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["_MODULES"]
    )
    assert isinstance(modules, ast.List)
    assert sorted(elt.id for elt in modules.elts if isinstance(elt, ast.Name)) == sorted(MODULES)


def test_every_exported_function_is_a_documented_op(shipped_spec):
    documented = set(shipped_spec.ops)
    for name in MODULES:
        extra = _public_defs(name) - documented - ADAPTER_HOOKS
        assert not extra, f"{name}.py exports functions that are no documented K.* op: {sorted(extra)}"


def test_no_function_is_defined_twice_and_the_undefined_ones_stay_so(shipped_spec):
    seen: dict[str, str] = {}
    for name in MODULES:
        for fn in _public_defs(name):
            assert fn not in seen, f"{fn} is defined in both {seen[fn]}.py and {name}.py"
            seen[fn] = name
    assert UNDEFINED <= set(shipped_spec.ops)
    assert not UNDEFINED & set(seen), "a function said to have no Keras 3 equivalent is defined"


def test_arrays_defines_the_tensor_functions():
    defined = _public_defs("arrays")
    for fn in ("batch_dot", "dot", "sum", "int_shape", "update_add", "moving_average_update", "get_uid", "reset_uids"):
        assert fn in defined
