import json

from click.testing import CliRunner

from kbtool.cli import main
from kbtool.config import keras_json as config


def run(*args):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_path_honours_keras_home(keras_home):
    assert config.config_path() == str(keras_home / "keras.json")


def test_missing_file_gives_documented_defaults(keras_home):
    settings = config.effective()
    assert {k: s.value for k, s in settings.items()} == {
        "image_data_format": "channels_last",
        "epsilon": 1e-07,
        "floatx": "float32",
        "backend": "tensorflow",
    }
    assert all(s.source.startswith("default") for s in settings.values())
    assert not (keras_home / "keras.json").exists()  # reading never creates the file


def test_keras_backend_env_overrides_file_and_show_says_so(keras_home, monkeypatch):
    keras_home.mkdir()
    (keras_home / "keras.json").write_text(json.dumps({"backend": "theano"}))
    monkeypatch.setenv("KERAS_BACKEND", "cntk")
    code, out = run("config", "show", "--json")
    assert code == 0
    backend = json.loads(out)["settings"]["backend"]
    assert backend == {"value": "cntk", "source": "environment KERAS_BACKEND"}
    assert run("config", "get", "backend") == (0, "cntk\n")


def test_set_writes_atomically_and_keeps_unknown_keys(keras_home):
    keras_home.mkdir()
    (keras_home / "keras.json").write_text(json.dumps({"floatx": "float32", "my_key": [1, 2]}))
    code, out = run("config", "set", "epsilon", "1e-5")
    assert code == 0, out
    data = json.loads((keras_home / "keras.json").read_text())
    assert data == {"floatx": "float32", "my_key": [1, 2], "epsilon": 1e-05}
    # no temp files left behind; keras.json.lock is the writers' lock, kept on purpose
    assert sorted(p.name for p in keras_home.iterdir()) == ["keras.json", "keras.json.lock"]


def test_set_rejects_bad_values_with_one_line(keras_home):
    for key, value, needle in [
        ("floatx", "float99", "floatx must be one of"),
        ("image_data_format", "channels_middle", "image_data_format must be"),
        ("epsilon", "-1", "positive"),
        ("epsilon", "abc", "positive"),
        ("backend", "not a module", "dotted module path"),
        ("colour", "red", "unknown key"),
    ]:
        code, out = run("config", "set", key, value)
        assert code == 2 and needle in out, (key, out)
        assert len(out.strip().splitlines()) == 1 and "Traceback" not in out
    assert not (keras_home / "keras.json").exists()


def test_corrupt_file_is_reported_with_line_and_never_overwritten(keras_home):
    keras_home.mkdir()
    path = keras_home / "keras.json"
    path.write_text('{\n  "floatx": "float32",\n  "epsilon": 1e-07,,\n}\n')
    before = path.read_text()
    code, out = run("config", "show")
    assert code == 2 and "keras.json:3:" in out and "not valid JSON" in out
    code, out = run("config", "set", "floatx", "float64")
    assert code == 2 and "--force" in out
    assert path.read_text() == before


def test_force_replaces_corrupt_file_and_keeps_a_backup(keras_home):
    keras_home.mkdir()
    path = keras_home / "keras.json"
    path.write_text("{broken")
    code, out = run("config", "set", "floatx", "float64", "--force")
    assert code == 0, out
    assert json.loads(path.read_text())["floatx"] == "float64"
    backups = [p for p in keras_home.iterdir() if p.name.startswith("keras.json.bak-")]
    assert len(backups) == 1 and backups[0].read_text() == "{broken"


def test_keras1_file_is_read_and_migrated_on_set(keras_home):
    keras_home.mkdir()
    path = keras_home / "keras.json"
    path.write_text(
        json.dumps({"image_dim_ordering": "th", "epsilon": 1e-07, "floatx": "float32", "backend": "theano"})
    )
    settings = config.effective()
    assert settings["image_data_format"].value == "channels_first"
    assert "image_dim_ordering='th'" in settings["image_data_format"].source
    code, out = run("config", "set", "floatx", "float64")
    assert code == 0 and "migrated" in out
    data = json.loads(path.read_text())
    assert "image_dim_ordering" not in data
    assert data["image_data_format"] == "channels_first" and data["floatx"] == "float64"


def test_custom_backend_module_is_imported_and_checked(keras_home, custom_backend):
    good = custom_backend(
        "goodpkg", "kb", "def placeholder(*a): pass\ndef variable(*a): pass\ndef function(*a): pass\n"
    )
    bad = custom_backend("badpkg", "kb", "def variable(*a): pass\n")
    broken = custom_backend("brokenpkg", "kb", "raise RuntimeError('boom at import')\n")
    code, out = run("config", "set", "backend", bad)
    assert code == 2 and "lacks placeholder, function" in out
    code, out = run("config", "set", "backend", broken)
    assert code == 2 and "does not import: RuntimeError: boom at import" in out
    code, out = run("config", "set", "backend", "nosuchpkg.mod")
    assert code == 2 and "does not import" in out
    assert run("config", "set", "backend", good)[0] == 0
    assert config.effective()["backend"].value == good


def test_validate_reports_each_bad_key(keras_home):
    keras_home.mkdir()
    (keras_home / "keras.json").write_text(json.dumps({"floatx": "float8", "epsilon": 0}))
    code, out = run("config", "validate")
    assert code == 1
    assert "floatx must be one of" in out and "epsilon must be a positive float" in out
