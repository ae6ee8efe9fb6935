"""The port is the map: each K.* function of kbtool's Keras 3 adapter (kbtool/worker/keras3_port/) has the spec's
signature and its body is its specs/keras3_map.yaml row's code; a `none:` row has no function. Fast (Python's ast,
no backend): the shipped port has no deviation, and a changed row or a changed port function (in copies) is one;
`kbtool check` turns a deviation into a fail of each of that op's results on a keras3-* engine."""

import os
import shutil

import pytest

from kbtool.specs import keras3_map

PORT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kbtool", "worker", "keras3_port")


@pytest.fixture()
def port_copy(tmp_path):
    copy = tmp_path / "keras3_port"
    shutil.copytree(PORT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.fixture()
def map_copy(tmp_path):
    path = tmp_path / "keras3_map.yaml"
    shutil.copy(keras3_map.map_file(), path)
    return path


def edit(path, old, new):
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def test_the_shipped_port_is_the_map():
    assert keras3_map.port_deviations(PORT) == {}


def test_a_changed_expression_row_is_a_deviation(map_copy):
    edit(map_copy, 'keras3: "keras.ops.dot(x, y)"', 'keras3: "keras.ops.tensordot(x, y, axes=1)"')
    found = keras3_map.port_deviations(PORT, keras3_map.load(str(map_copy)))
    assert list(found) == ["dot"]
    assert found["dot"].startswith("its body is not the row's code: return keras.ops.dot(x, y)")


def test_a_changed_block_row_is_a_deviation(map_copy):
    edit(map_copy, "initializer, elems = elems[0], elems[1:]", "initializer, elems = elems[0], elems")
    assert list(keras3_map.port_deviations(PORT, keras3_map.load(str(map_copy)))) == ["foldl"]


def test_a_row_made_none_is_a_deviation_while_the_port_defines_it(map_copy):
    edit(map_copy, 'abs:\n    keras3: "keras.ops.abs(x)"\n', 'abs:\n    none: "no abs"\n')
    found = keras3_map.port_deviations(PORT, keras3_map.load(str(map_copy)))
    assert list(found) == ["abs"] and "none:" in found["abs"]


def test_a_changed_port_function_is_a_deviation(port_copy):
    edit(port_copy / "arrays.py", "    return keras.ops.dot(x, y)", "    return keras.ops.tensordot(x, y, axes=1)")
    edit(port_copy / "arrays.py", "def sum(x, axis=None, keepdims=False):", "def sum(x, axis=None, keepdims=True):")
    edit(
        port_copy / "nn.py",
        "    return keras.ops.sigmoid(x)",
        '    """A docstring is no code."""\n    return keras.ops.sigmoid(x)',
    )
    found = keras3_map.port_deviations(str(port_copy))
    assert sorted(found) == ["dot", "sum"]
    assert "keepdims=True" in found["sum"] and "the spec's signature is (x, axis=None, keepdims=False)" in found["sum"]


def test_a_missing_function_an_extra_one_and_a_none_row_defined_are_deviations(port_copy):
    edit(port_copy / "nn.py", "def sigmoid(x):", "def _sigmoid(x):")
    with open(port_copy / "core.py", "a") as out:
        out.write("\n\ndef helper(x):\n    return x\n\n\ngradients = helper\n\n\ndef kbtool_hook(x):\n    return x\n")
    found = keras3_map.port_deviations(str(port_copy))
    assert sorted(found) == ["gradients", "helper", "sigmoid"]
    assert "does not define it" in found["sigmoid"] and "none:" in found["gradients"]


def test_a_helper_the_row_calls_must_be_defined_in_the_port(port_copy):
    edit(port_copy / "nn.py", "def _local_conv(", "def _local_conv_renamed(")
    found = keras3_map.port_deviations(str(port_copy))
    assert sorted(found) == ["local_conv1d", "local_conv2d"]
    assert found["local_conv1d"] == "the row calls _local_conv, which nn.py does not define"


def test_an_aliased_import_is_not_the_rows_module(port_copy):
    edit(port_copy / "arrays.py", "import numpy\n", "import numpy as numpy_\nnumpy = None\n")
    found = keras3_map.port_deviations(str(port_copy))
    assert found == {"count_params": "the row names numpy, which arrays.py does not `import numpy`"}


def test_check_fails_each_result_of_a_deviating_op(monkeypatch):
    """The gate `kbtool check` applies (runners/session.py): the keras3_port adapter's deviation, per op."""
    monkeypatch.setattr(keras3_map, "_DEVIATIONS", {})
    assert keras3_map.adapter_deviation("keras3_port", "dot") is None
    assert keras3_map.adapter_deviation("tensorflow_backend", "dot") is None
    monkeypatch.setattr(keras3_map, "_DEVIATIONS", {PORT: {"dot": "its body is not the row's code: x"}})
    assert keras3_map.adapter_deviation("keras3_port", "dot") == "its body is not the row's code: x"
    assert keras3_map.adapter_deviation("keras3_port", "sum") is None
