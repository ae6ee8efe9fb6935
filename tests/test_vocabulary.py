"""kbtool/vocabulary.py: the modes and the keras.json settings, defined once and used by every layer; the worker's
own copy (it imports nothing from kbtool) is held equal to it here."""

import ast
import math
import os

import pytest

from kbtool import keras_settings, vocabulary
from kbtool.config import keras_json as config
from kbtool.plan import MODES as PLAN_MODES
from kbtool.reference import core
from kbtool.runners import base
from kbtool.runners.recipes import Recipe
from kbtool.specs import cases, domains, schema
from kbtool.vocabulary import Mode

from .conftest import ROOT

WORKER_MAIN = os.path.join(ROOT, "kbtool", "worker", "main.py")


def worker_constant(name):
    """A module-level literal of the worker's main.py, read without importing it (it runs as a script)."""
    with open(WORKER_MAIN, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{WORKER_MAIN} has no {name}")


def test_the_worker_applies_exactly_the_case_settings():
    # the worker sets (and reports) floatx, epsilon and image_data_format from its keras.json; the order it applies
    # them in does not matter, but no key may be missing or extra
    keys = worker_constant("CONFIG_KEYS")
    assert len(keys) == len(set(keys)) and set(keys) == set(vocabulary.CASE_KEYS)


def test_modes():
    assert vocabulary.MODES == ("eager", "symbolic") == (Mode.EAGER, Mode.SYMBOLIC)
    assert f"{Mode.SYMBOLIC}" == str(Mode.SYMBOLIC) == "symbolic" and Mode("eager") is Mode.EAGER
    # the controller's lists of modes are this one
    assert cases.DEFAULT_MODES is vocabulary.MODES and PLAN_MODES is vocabulary.MODES
    assert Recipe("x", "3.11", [], "m").modes == vocabulary.MODES == base.Launch("x", "py", "m").modes
    assert schema.CASE["properties"]["modes"]["items"]["enum"] == list(vocabulary.MODES)


def test_the_documented_defaults():
    # https://keras.io/backend/ (Keras 2): the keras.json Keras writes on first use
    assert list(vocabulary.DEFAULTS.items()) == [
        ("image_data_format", "channels_last"),
        ("epsilon", 1e-07),
        ("floatx", "float32"),
        ("backend", "tensorflow"),
    ]
    assert vocabulary.CASE_DEFAULTS == {"image_data_format": "channels_last", "floatx": "float32", "epsilon": 1e-07}
    assert set(vocabulary.CASE_KEYS) == set(vocabulary.KEYS) - {"backend"}
    assert vocabulary.CHOICES == {"image_data_format": vocabulary.DATA_FORMATS, "floatx": vocabulary.FLOATX}


def test_every_layer_reads_the_one_description():
    assert config.DEFAULTS is vocabulary.DEFAULTS
    assert domains.CONFIG_KEYS is vocabulary.CASE_KEYS and domains.CONFIG_DEFAULTS is vocabulary.CASE_DEFAULTS
    assert keras_settings.CASE_KEYS is vocabulary.CASE_KEYS
    assert core.DATA_FORMATS is vocabulary.DATA_FORMATS
    assert schema.KERAS_CONFIG["properties"]["floatx"]["enum"] == list(vocabulary.FLOATX)
    assert set(schema.KERAS_CONFIG["properties"]) == set(vocabulary.CASE_KEYS)


@pytest.mark.parametrize(
    "key, value, problem",
    [
        ("floatx", "float64", None),
        ("floatx", "int8", "floatx must be one of float16, float32, float64, got 'int8'"),
        ("floatx", ["float32"], "floatx must be one of float16, float32, float64, got ['float32']"),
        ("image_data_format", "channels_first", None),
        ("image_data_format", "NHWC", "image_data_format must be one of channels_first, channels_last, got 'NHWC'"),
        ("epsilon", 1e-5, None),
        ("epsilon", 1, None),
        ("epsilon", 0, "epsilon must be a positive float (and finite), got 0"),
        ("epsilon", True, "epsilon must be a positive float (and finite), got True"),
        ("epsilon", math.inf, "epsilon must be a positive float (and finite), got inf"),
        ("epsilon", 10**400, "epsilon must be a positive float (and finite), got an integer of 401 digits"),
        ("backend", "theano", None),
        ("backend", "my_pkg.my_backend", None),
        ("backend", "my-backend", "backend must be one of tensorflow, theano, cntk or a module name"),
        ("backend", 3, "backend must be a string"),
        ("image_dim_ordering", "th", None),
        ("image_dim_ordering", "xx", "image_dim_ordering must be 'tf' or 'th', got 'xx'"),
        ("colour", "red", None),  # an unknown key is kept, not refused
    ],
)
def test_one_check_per_key(key, value, problem):
    got = vocabulary.check(key, value)
    assert (got is None) if problem is None else got.startswith(problem)
    assert config.check_value(key, value) == got  # config validates with the same check


def test_command_line_text_becomes_a_value():
    assert vocabulary.SETTINGS["epsilon"].from_text("1e-5") == 1e-5
    assert vocabulary.SETTINGS["floatx"].from_text("float16") == "float16"
    with pytest.raises(ValueError):
        vocabulary.SETTINGS["epsilon"].from_text("small")
    assert domains.parse_override(["epsilon=1e-3", "floatx=float64"]) == {"epsilon": 1e-3, "floatx": "float64"}


def test_the_vocabulary_imports_nothing_from_kbtool_but_the_message_quoting():
    with open(vocabulary.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.module == "kbtool.files":
                continue  # files.quote: the one clipping rule of messages (ground too)
            assert not node.level and not (node.module or "").startswith("kbtool"), node.lineno
        elif isinstance(node, ast.Import):
            assert not any(alias.name.startswith("kbtool") for alias in node.names), node.lineno
