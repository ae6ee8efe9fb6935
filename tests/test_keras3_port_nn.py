"""keras3_port/nn.py without Keras: it parses as Python 3.6, is registered in the package, and each function it
exports is a documented op of specs/ops.yaml (no keras import: the adapter runs only inside a keras3-* env)."""

import ast
import os

import yaml

from kbtool import paths

PORT = os.path.join(paths.PACKAGE_DIR, "worker", "keras3_port")
NN = os.path.join(PORT, "nn.py")

# documented ops the module leaves undefined on purpose (its docstring says why): their cases are `unsupported`
NOT_DEFINED = {
    "learning_phase",
    "set_learning_phase",
    "in_train_phase",
    "in_test_phase",
    "manual_variable_initialization",
    "ctc_label_dense_to_sparse",
}


def _tree(path: str, version: tuple = (3, 6)) -> ast.Module:
    with open(path, encoding="utf-8") as handle:
        return ast.parse(handle.read(), filename=path, feature_version=version)


def _public_defs(tree: ast.Module) -> set:
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}


def _spec_ops() -> set:
    with open(paths.spec_file(), encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    return set(data["ops"] if "ops" in data else data)


def test_nn_parses_as_python_36() -> None:
    tree = _tree(NN)
    assert _public_defs(tree), "nn.py defines no public function"


def test_every_public_function_is_a_documented_op() -> None:
    defined = _public_defs(_tree(NN))
    unknown = sorted(defined - _spec_ops())
    assert not unknown, f"nn.py exports functions that are not documented ops: {unknown}"


def test_left_undefined_ops_are_documented_named_and_absent() -> None:
    ops = _spec_ops()
    assert NOT_DEFINED <= ops
    assert not NOT_DEFINED & _public_defs(_tree(NN))
    docstring = ast.get_docstring(_tree(NN)) or ""
    missing = sorted(name for name in NOT_DEFINED if name not in docstring)
    assert not missing, f"nn.py's docstring does not say why these are not defined: {missing}"


def test_nn_is_registered_in_the_package() -> None:
    tree = _tree(os.path.join(PORT, "__init__.py"))
    modules = [
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_MODULES" for t in node.targets)
    ]
    assert modules and "nn" in {getattr(elt, "id", None) for elt in modules[0].elts}


def test_no_name_clash_with_core() -> None:
    # the package exports every module's functions into one namespace: a name defined twice would be shadowed
    clash = _public_defs(_tree(NN)) & _public_defs(_tree(os.path.join(PORT, "core.py")))
    assert not clash, f"defined in both core.py and nn.py: {sorted(clash)}"
