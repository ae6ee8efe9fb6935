"""The keras.json matrix: each case runs under its settings (one worker per set), the reference follows them, every
result records them, and a backend that ignores its keras.json is never green. Runs the numpy worker and custom
modules on kbtool's own Python (no backend environment)."""

import json
import os

import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.execute import _by_settings
from kbtool.runners.base import keras_home_for
from kbtool.runners.session import settings_mismatch
from kbtool.specs.domains import CONFIG_DEFAULTS


def check(*args):
    result = CliRunner().invoke(main, ["check", "--json"] + list(args))
    return result.exit_code, result.stdout


def test_generated_cases_run_under_their_settings_and_record_them(no_known):
    code, out = check("--op", "conv2d", "--backend", "numpy", "--case", "grid*", "--known", no_known)
    report = json.loads(out)
    assert code == 0, [r["message"] for r in report["results"] if r["status"] != "pass"][:3]
    formats = {r["keras_config"]["image_data_format"] for r in report["results"]}
    assert formats == {"channels_first", "channels_last"}
    assert {"image_data_format": "channels_first", "floatx": "float32", "epsilon": 1e-07} in report["keras_config"][
        "ran"
    ]
    assert report["keras_config"]["override"] == {} and report["grid"] == "pairwise"


def test_an_override_applies_to_every_case_and_its_repro(no_known, custom_backend):
    # a module that computes abs in float32 whatever floatx says: under floatx=float64 its dtype differs
    name = custom_backend(
        "cfg",
        "f32abs",
        "from kbtool.reference import *\nimport numpy as _np\ndef abs(x):\n    return _np.abs(x).astype('float32')\n",
    )
    code, out = check(
        "--op", "abs", "--backend", "numpy", "--backend", name, "--keras-config", "floatx=float64", "--known", no_known
    )
    report = json.loads(out)
    assert report["keras_config"]["override"] == {"floatx": "float64"}
    assert all(r["keras_config"]["floatx"] == "float64" for r in report["results"])
    numpy_results = [r for r in report["results"] if r["backend"] == "numpy" and r["case"] != "grad"]
    assert numpy_results and all(r["status"] == "pass" for r in numpy_results)
    failing = [r for r in report["results"] if r["backend"] == name and r["status"] == "fail"]
    assert code == 1 and failing and "float32" in failing[0]["message"]
    assert "--keras-config floatx=float64" in failing[0]["repro"]


def test_a_backend_that_ignores_its_keras_json_is_never_green(no_known, custom_backend):
    name = custom_backend(
        "cfg",
        "deaf",
        "from kbtool.reference import *\ndef set_image_data_format(value):\n    pass  # ignores keras.json\n",
    )
    code, out = check("--op", "conv2d", "--backend", name, "--case", "grid*", "--known", no_known)
    report = json.loads(out)
    deaf = [r for r in report["results"] if r["keras_config"]["image_data_format"] == "channels_first"]
    assert code == 1 and deaf
    assert all(r["status"] == "error" and "did not apply its keras.json" in r["message"] for r in deaf)


@pytest.mark.parametrize("flag", ["floatx=float8", "colour=red", "epsilon=0"])
def test_bad_keras_config_flag_is_a_usage_error(flag, no_known):
    result = CliRunner().invoke(main, ["check", "--op", "abs", "--backend", "numpy", "--keras-config", flag])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1


def test_settings_mismatch_names_each_setting_that_differs():
    wanted = dict(CONFIG_DEFAULTS, floatx="float64")
    assert settings_mismatch(wanted, dict(wanted)) is None
    assert settings_mismatch(wanted, dict(wanted, epsilon=1e-07 * (1 + 1e-15))) is None
    assert settings_mismatch(wanted, dict(CONFIG_DEFAULTS)) == "floatx is float32 where keras.json says float64"
    assert settings_mismatch(wanted, {"floatx": None}) is None  # a module with no getter cannot say
    assert settings_mismatch(wanted, None) is None


def test_work_is_grouped_by_settings_with_the_defaults_first():
    class Case:
        def __init__(self, **config):
            self.keras_config = dict(CONFIG_DEFAULTS, **config)

    work = [(None, Case(floatx="float64")), (None, Case()), (None, Case(floatx="float64")), (None, Case())]
    groups = _by_settings(work)
    assert [g[0]["floatx"] for g in groups] == ["float32", "float64"]
    assert [len(g[1]) for g in groups] == [2, 2]


def test_each_set_of_settings_has_its_own_keras_json(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    default, other = keras_home_for(None), keras_home_for({"floatx": "float16"})
    assert default != other
    assert json.load(open(os.path.join(other, "keras.json")))["floatx"] == "float16"
    assert json.load(open(os.path.join(default, "keras.json"))) == CONFIG_DEFAULTS


def test_under_another_image_data_format_cases_ask_the_same_question_in_that_layout(no_known):
    # cases written channels_last with data_format left to keras.json: their data input moves to channels_first
    code, out = check(
        "--op",
        "conv2d",
        "--op",
        "pool2d",
        "--op",
        "bias_add",
        "--backend",
        "numpy",
        "--keras-config",
        "image_data_format=channels_first",
        "--case",
        "[!g]*",
        "--known",
        no_known,
    )
    report = json.loads(out)
    bad = [
        (r["op"], r["case"], r["message"])
        for r in report["results"]
        if r["status"] != "pass" and not r["case"].startswith("grad")
    ]
    assert not bad and len(report["results"]) > 30


def test_moving_an_input_between_layouts_keeps_values_and_unknown_dims():
    from kbtool.specs.domains import follow_image_data_format

    entry = {
        "signature": [{"name": "x", "kind": "tensor"}, {"name": "data_format", "default": None}],
        "reads_config": ["image_data_format"],
    }
    raw = {"id": "c", "inputs": [{"value": [[[1, 2], [3, 4], [5, 6]]], "none_dims": [0, 1]}]}  # (1, 3, 2): C=2
    moved = follow_image_data_format(entry, raw, "channels_first")["inputs"][0]
    assert moved["value"] == [[[1, 3, 5], [2, 4, 6]]] and moved["none_dims"] == [0, 2]
    explicit = dict(raw, kwargs={"data_format": "channels_last"})
    assert follow_image_data_format(entry, explicit, "channels_first") is explicit  # the case chose its layout
    assert follow_image_data_format({"signature": entry["signature"]}, raw, "channels_first") is raw


def test_layout_moves_both_ways_and_only_the_data_input():
    from kbtool.specs.domains import follow_image_data_format

    entry = {
        "signature": [
            {"name": "n", "kind": "value"},
            {"name": "x", "kind": "tensor"},
            {"name": "kernel", "kind": "tensor"},
            {"name": "data_format", "default": None},
        ],
        "reads_config": ["image_data_format"],
    }
    first = {"id": "c", "inputs": {"x": {"value": [[[1, 3, 5], [2, 4, 6]]]}, "kernel": {"shape": [2, 2, 1]}}}
    back = follow_image_data_format(entry, first, "channels_last")["inputs"]
    assert back["x"]["value"] == [[[1, 2], [3, 4], [5, 6]]] and back["kernel"] == {"shape": [2, 2, 1]}
    shaped = {"id": "s", "inputs": [{"shape": [2, 3, 4, 5], "none_dims": [3]}, {"shape": [3, 3, 5, 1]}]}
    moved = follow_image_data_format(entry, shaped, "channels_first")["inputs"]
    assert moved[0] == {"shape": [2, 5, 3, 4], "none_dims": [1]} and moved[1] == {"shape": [3, 3, 5, 1]}
    assert follow_image_data_format(entry, moved and dict(shaped, inputs=moved), "channels_last")["inputs"][0] == {
        "shape": [2, 3, 4, 5],
        "none_dims": [3],
    }  # and back again
    for unchanged in (
        {"id": "r", "args": [{"tensor": 0}], "inputs": [{"shape": [1, 2, 3]}]},
        {"id": "2d", "inputs": [{"shape": [4, 3]}]},
        {"id": "none", "inputs": [[{"shape": [1, 2, 3]}]]},
    ):
        assert follow_image_data_format(entry, unchanged, "channels_first") is unchanged
    no_param = dict(entry, signature=entry["signature"][:3])
    assert follow_image_data_format(no_param, shaped, "channels_first") is shaped


def test_a_rank4_value_moves_its_channels_and_back():
    import numpy as np

    from kbtool.specs.domains import follow_image_data_format

    entry = {
        "signature": [{"name": "x", "kind": "tensor"}, {"name": "data_format", "default": None}],
        "reads_config": ["image_data_format"],
    }
    value = np.arange(24).reshape(1, 2, 3, 4)  # channels_last: 4 channels
    first = follow_image_data_format(entry, {"id": "v", "inputs": [{"value": value.tolist()}]}, "channels_first")
    assert np.array_equal(first["inputs"][0]["value"], np.moveaxis(value, -1, 1))
    back = follow_image_data_format(entry, first, "channels_last")
    assert np.array_equal(back["inputs"][0]["value"], value)
