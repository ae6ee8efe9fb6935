"""Fault audit of issue #33, second pass: `check --active` with a Keras 3 engine active (KERAS_BACKEND=jax, torch,
numpy, openvino, names no Keras 2 has) checks kbtool's backend of that engine (keras3-jax, ...), saying so. Before:
KERAS_BACKEND=numpy checked kbtool's own reference against itself and exited 0 ("self-test"), and jax or torch
were "unknown backend 'jax' ... no module 'jax' is importable". Fast: on an empty kbtool home no backend starts."""

import pytest
from click.testing import CliRunner

from kbtool.cli import main


def invoke(*args, env):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()  # click >= 8.2 keeps stderr apart
    return runner.invoke(main, list(args), env=env)


@pytest.mark.parametrize("engine", ["jax", "torch", "numpy", "openvino"])
def test_a_keras3_engine_active_is_its_keras3_backend(engine, tmp_path):
    env = {"KBTOOL_HOME": str(tmp_path / "empty"), "KERAS_BACKEND": engine}
    result = invoke("check", "--active", "--op", "abs", env=env)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert lines[0] == f"kbtool: --active: Keras 3's {engine} (KERAS_BACKEND): checking keras3-{engine}"
    assert lines[-1].startswith(f"kbtool: error: backend keras3-{engine}: not installed")
    assert "self-test" not in result.stdout


def test_a_keras2_backend_active_is_itself(tmp_path):
    env = {"KBTOOL_HOME": str(tmp_path / "empty"), "KERAS_BACKEND": "theano"}
    result = invoke("check", "--active", "--op", "abs", env=env)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "kbtool: error: backend theano: not installed: run `kbtool env install theano`"
    ]
