"""`kbtool models --list` fits the terminal: the about column wraps under itself at 80 columns."""

from tests.helpers import invoke_cli


def test_the_zoo_list_fits_80_columns_and_names_every_model(monkeypatch) -> None:
    from kbtool.worker.modelzoo import zoo

    monkeypatch.setenv("COLUMNS", "80")
    result = invoke_cli("models", "--list")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    named = {line.split()[0] for line in lines[1:] if line[:1].strip()}
    assert named == set(zoo.MODELS) and len(named) >= 20
