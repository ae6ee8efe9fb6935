"""keras.json drives the check: the configured backend is the active one (first, `--active`), the file's floatx,
epsilon and image_data_format apply to every case, `--keras-config` overrides one and `--keras-config defaults` pins
the documented defaults. Plain module names work as Keras 2 accepts them. numpy worker and custom modules only."""

import json

import pytest
from click.testing import CliRunner

from kbtool import keras_settings
from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.plan import Plan, PlannedBackend


def write_config(home, **settings):
    home.mkdir(parents=True, exist_ok=True)
    (home / "keras.json").write_text(json.dumps(settings))


def test_no_file_means_the_documented_defaults_and_tensorflow_active(keras_home):
    s = keras_settings.resolve()
    assert s.active_backend == "tensorflow" and s.override == {}
    assert s.values == {"image_data_format": "channels_last", "floatx": "float32", "epsilon": 1e-07}
    assert s.sources["backend"] == "documented default: no keras.json"
    assert set(s.sources.values()) == {"documented default: no keras.json", "documented default"}


def test_the_files_settings_apply_where_they_differ_from_the_defaults(keras_home):
    write_config(keras_home, backend="cntk", image_data_format="channels_first", floatx="float32", epsilon=1e-3)
    s = keras_settings.resolve()
    assert s.active_backend == "cntk" and s.sources["backend"] == "keras.json"
    assert s.override == {"image_data_format": "channels_first", "epsilon": 1e-3}  # floatx equals the default
    assert s.sources["floatx"] == "keras.json, the documented default"
    assert s.sources["image_data_format"] == "keras.json"
    assert s.header() == (
        "keras.json settings: backend cntk (active; keras.json), image_data_format channels_first "
        "(keras.json), floatx float32 (keras.json, the documented default), epsilon 0.001 "
        "(keras.json)"
    )


def test_a_flag_overrides_the_file_and_defaults_pins_the_rest(keras_home):
    write_config(keras_home, image_data_format="channels_first", floatx="float64")
    s = keras_settings.resolve(["floatx=float16"])
    assert s.override == {"image_data_format": "channels_first", "floatx": "float16"}
    assert s.sources["floatx"] == "--keras-config"
    pinned = keras_settings.resolve(["defaults"])
    assert pinned.override == {} and pinned.values["image_data_format"] == "channels_last"
    assert pinned.sources["image_data_format"] == "--keras-config defaults"
    both = keras_settings.resolve(["defaults", "epsilon=0.01"])
    assert both.override == {"epsilon": 0.01} and both.values["floatx"] == "float32"


def test_keras_backend_names_the_active_backend(keras_home, monkeypatch):
    write_config(keras_home, backend="cntk")
    monkeypatch.setenv("KERAS_BACKEND", "theano")
    s = keras_settings.resolve()
    assert s.active_backend == "theano" and s.sources["backend"] == "KERAS_BACKEND"


@pytest.mark.parametrize(
    "content, words",
    [
        ('{"floatx": "float8"}', "floatx must be one of"),
        ('{"epsilon": -1}', "epsilon must be a positive float"),
        ('{"backend": "not a module"}', "backend must be one of"),
        ("{not json", "keras.json"),
    ],
)
def test_a_file_keras_would_refuse_is_one_line_naming_the_way_out(keras_home, content, words):
    keras_home.mkdir(parents=True)
    (keras_home / "keras.json").write_text(content)
    with pytest.raises(KbtoolError) as info:
        keras_settings.resolve()
    message = str(info.value)
    assert words in message and "\n" not in message
    assert "--keras-config defaults" in message or "--backend" in message
    if "backend" not in words:
        assert keras_settings.resolve(["defaults"]).override == {}  # the way out works


def test_apply_puts_the_active_backend_first_and_keeps_the_others_in_order():
    plan = Plan(
        spec=None, ops=[], work=[], backends=[PlannedBackend(n) for n in ("numpy", "tensorflow", "theano", "cntk")]
    )
    settings = keras_settings.CheckSettings(active_backend="theano")
    keras_settings.apply(plan, settings)
    assert [s.name for s in plan.backends] == ["theano", "numpy", "tensorflow", "cntk"]
    assert plan.active_backend == "theano" and plan.settings is settings


def run(*args):
    result = CliRunner().invoke(main, ["check", "--json"] + list(args))
    return result.exit_code, result.stdout, result.stderr


def test_check_runs_under_the_files_settings_and_says_so(keras_home, no_known):
    write_config(keras_home, backend="theano", image_data_format="channels_first", floatx="float64")
    code, out, err = run("--op", "conv2d", "--backend", "numpy", "--case", "grid*", "--known", no_known)
    report = json.loads(out)
    assert code == 0
    assert {r["keras_config"]["image_data_format"] for r in report["results"]} == {"channels_first"}
    assert {r["keras_config"]["floatx"] for r in report["results"]} == {"float64"}
    assert report["keras_config"]["source"]["image_data_format"] == "keras.json"
    assert report["keras_config"]["values"]["floatx"] == "float64"
    assert report["keras_config"]["file"] == str(keras_home / "keras.json")
    assert report["active_backend"] == "theano"
    # the terminal summary says which settings ran and where from, and names the active backend
    result = CliRunner().invoke(
        main, ["check", "--op", "conv2d", "--backend", "numpy", "--case", "grid*", "--known", no_known]
    )
    shown = " ".join(result.stdout.split())
    assert "image_data_format channels_first, floatx float64 (keras.json)" in shown
    assert "keras.json settings: backend theano (active; keras.json)" in shown
    # pinned: the grid's own settings run again, and the report says where they came from
    code, out, _ = run(
        "--op", "conv2d", "--backend", "numpy", "--case", "grid*", "--known", no_known, "--keras-config", "defaults"
    )
    report = json.loads(out)
    assert {r["keras_config"]["image_data_format"] for r in report["results"]} == {"channels_first", "channels_last"}
    assert report["keras_config"]["source"]["floatx"] == "--keras-config defaults"


def test_active_checks_the_configured_plain_module_alone_and_first(keras_home, no_known, tmp_path, monkeypatch):
    # Keras 2 imports a plain module name from keras.json; kbtool runs it from the current directory as Keras would
    (tmp_path / "my_backend.py").write_text("from kbtool.reference import *\n")
    monkeypatch.chdir(tmp_path)
    write_config(keras_home, backend="my_backend")
    code, out, err = run("--op", "abs", "--active", "--mode", "eager", "--known", no_known)  # (grad: symbolic)
    report = json.loads(out)
    assert code == 0, err
    assert [b["name"] for b in report["backends"]] == ["my_backend"] and report["active_backend"] == "my_backend"
    assert report["results"] and {r["backend"] for r in report["results"]} == {"my_backend"}
    code, out, err = run("--op", "abs", "--backend", "numpy", "--backend", "my_backend", "--known", no_known)
    assert [b["name"] for b in json.loads(out)["backends"]] == ["my_backend", "numpy"]


def test_active_and_backend_together_is_a_usage_error(keras_home):
    code, out, err = run("--op", "abs", "--active", "--backend", "numpy")
    assert code == 2 and "give --active or --backend, not both" in err and len(err.strip().splitlines()) == 1


def test_a_misspelt_plain_backend_name_suggests_the_builtin(keras_home):
    code, out, err = run("--op", "abs", "--backend", "tensorflw")
    assert code == 2 and "did you mean tensorflow?" in err and len(err.strip().splitlines()) == 1


def test_config_set_accepts_a_plain_module_that_imports(keras_home, tmp_path, monkeypatch):
    (tmp_path / "plain_backend.py").write_text("def placeholder(): pass\ndef variable(): pass\ndef function(): pass\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["config", "set", "backend", "plain_backend"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["config", "set", "backend", "no_such_plain_backend"])
    assert result.exit_code == 2 and "does not import" in result.output


@pytest.mark.backends
def test_config_set_backend_and_data_format_drive_a_real_check(keras_home, tmp_path):
    """The issue's own scenario: `kbtool config set backend cntk`, `kbtool config set image_data_format
    channels_first`, then `kbtool check --op conv2d` shows cntk as the active backend, runs under channels_first and
    says so."""
    for key, value in (("backend", "cntk"), ("image_data_format", "channels_first")):
        assert CliRunner().invoke(main, ["config", "set", key, value]).exit_code == 0
    report_path = tmp_path / "conv2d.json"
    # the backends whose known differences were recorded under channels_first too (mxnet's kernel layout and keras3's
    # NCHW-on-CPU entries name default-run cases: under a forced channels_first their results are not all explained)
    backends = sum((["--backend", name] for name in ("cntk", "numpy", "tensorflow", "tensorflow1", "theano")), [])
    result = CliRunner().invoke(main, ["check", "--op", "conv2d", "-o", str(report_path)] + backends)
    report = json.loads(report_path.read_text())
    assert result.exit_code == 0, result.stdout
    assert report["active_backend"] == "cntk" and report["backends"][0]["name"] == "cntk"
    assert {r["keras_config"]["image_data_format"] for r in report["results"]} == {"channels_first"}
    assert report["keras_config"]["source"]["image_data_format"] == "keras.json"
    shown = " ".join(result.stdout.split())
    assert "keras.json settings: backend cntk (active; keras.json), image_data_format channels_first" in shown
    rows = [line.split()[0:2] for line in result.stdout.splitlines() if line.split()[:1] == ["cntk"]]
    assert ["cntk", "(active)"] in rows


def test_every_setting_gets_a_value_and_a_source_whatever_overrides_it(keras_home):
    write_config(keras_home, backend="theano", epsilon=1e-07)  # the default, spelt out; no floatx, no data format
    s = keras_settings.resolve(["floatx=float16"])
    assert s.values == {"image_data_format": "channels_last", "floatx": "float16", "epsilon": 1e-07}
    assert s.sources == {
        "backend": "keras.json",
        "image_data_format": "documented default",
        "floatx": "--keras-config",
        "epsilon": "keras.json, the documented default",
    }
    assert s.override == {"floatx": "float16"}  # an epsilon equal to the default forces nothing
    write_config(keras_home, epsilon=1.0000001e-07)  # near the default but not it: applied
    assert keras_settings.resolve().override == {"epsilon": 1.0000001e-07}


@pytest.mark.parametrize(
    "environ, flags, words",
    [
        ({"KERAS_BACKEND": "not a module"}, [], "KERAS_BACKEND (backend): backend must be one of"),
        (
            {},
            ["floatx=float8"],
            "--keras-config floatx is one of float16, float32, float64 (got 'float8') (or `--keras-config defaults`)",
        ),
    ],
)
def test_what_is_wrong_is_named_where_it_comes_from(keras_home, monkeypatch, environ, flags, words):
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(KbtoolError) as info:
        keras_settings.resolve(flags)
    assert words in str(info.value)


def test_an_unreadable_file_with_pinned_defaults_keeps_keras_backend_as_the_active_one(keras_home, monkeypatch):
    keras_home.mkdir()
    (keras_home / "keras.json").write_text("{not json")
    monkeypatch.setenv("KERAS_BACKEND", "cntk")
    s = keras_settings.resolve(["defaults"])
    assert s.active_backend == "cntk" and s.config_file is None and s.override == {}
    assert s.sources["backend"] == "KERAS_BACKEND"
