"""Shell completion: `kbtool completion SHELL` prints a script, and op, backend and environment names complete
(read without loading the spec: a Tab press must not cost a second)."""

import pytest
from click.shell_completion import BashComplete
from click.testing import CliRunner

from kbtool import options
from kbtool.cli import main
from kbtool.runners.registry import BUILTIN
from kbtool.specs import loader


def complete(args, incomplete):
    return [
        item.value for item in BashComplete(main, {}, "kbtool", "_KBTOOL_COMPLETE").get_completions(args, incomplete)
    ]


def test_the_line_scan_finds_exactly_the_specs_op_names_in_order():
    assert options.spec_op_names() == list(loader.load().ops)


@pytest.mark.parametrize(
    "args", [["check", "--op"], ["explore", "--op"], ["spec", "show"], ["spec", "coverage", "--op"]]
)
def test_op_names_complete(args):
    assert complete(args, "batch_") == [
        "batch_dot",
        "batch_get_value",
        "batch_flatten",
        "batch_normalization",
        "batch_set_value",
    ]


def test_backend_and_environment_names_complete(keras_home, tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))  # no release installed
    assert complete(["check", "--backend"], "th") == ["theano"]
    assert complete(["check", "--backend"], "") == BUILTIN  # every built-in backend, in the registry's order
    assert complete(["check", "--backend"], "keras3-") == [
        "keras3-jax",
        "keras3-torch",
        "keras3-tensorflow",
        "keras3-numpy",
        "keras3-openvino",
    ]
    assert complete(["env", "install"], "c") == ["cntk"]
    assert complete(["env", "install"], "keras3-t") == ["keras3-torch", "keras3-tensorflow"]
    keras_home.mkdir()
    (keras_home / "keras.json").write_text('{"backend": "my_backend"}')
    assert complete(["check", "--backend"], "my") == ["my_backend"]  # the configured one, custom or not
    (tmp_path / "home" / "envs" / "releases" / "tensorflow1" / "keras-2.2.4").mkdir(parents=True)
    assert complete(["check", "--backend"], "tensorflow1") == ["tensorflow1", "tensorflow1[keras=2.2.4]"]
    assert complete(["env", "remove"], "tensorflow1[") == ["tensorflow1[keras=2.2.4]"]  # installed releases too


def test_a_broken_spec_completes_nothing_instead_of_failing(tmp_path):
    assert complete(["check", "--spec", str(tmp_path / "missing.yaml"), "--op"], "b") == []


@pytest.mark.parametrize("shell, marker", [("bash", "complete -o nosort -F"), ("zsh", "compdef"), ("fish", "complete")])
def test_the_completion_command_prints_each_shells_script(shell, marker):
    result = CliRunner().invoke(main, ["completion", shell])
    assert result.exit_code == 0 and marker in result.stdout and "_KBTOOL_COMPLETE" in result.stdout
