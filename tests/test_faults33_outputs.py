"""Fault audit of issue #33: every command's -o refuses a folder that does not exist with bisect's one line
(files.refuse_missing_folder), and check refuses a bad -o before its plan installs --versions' releases. Fast: the
refusals come before any backend runs."""

from pathlib import Path

import pytest

from kbtool.paths import CHECKOUT_ROOT
from kbtool.runners import releases

from .helpers import invoke_cli as invoke

GPU = Path(CHECKOUT_ROOT) / "tests" / "fixtures" / "gpu_h100"
CPU = str(GPU / "cpu.json.gz")
DEVICE = str(GPU / "gpu-default.json.gz")
HISTORY = str(Path(CHECKOUT_ROOT) / "reports" / "history.jsonl")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


COMMANDS = {
    "check": ["check", "--backend", "numpy", "--op", "abs", "--case", "example*"],
    "bench": ["bench", "--backend", "numpy", "--op", "abs", "--budget", "0.05"],
    "report render": ["report", "render", CPU],
    "report merge": ["report", "merge", CPU, "--allow-incomplete"],
    "report judge": ["report", "judge", CPU],
    "report devices": ["report", "devices", CPU, DEVICE],
    "report history": ["report", "history", HISTORY],
    "report migration": ["report", "migration"],
}
EXTENSION = {"report history": ".md", "report migration": ".md", "report devices": ".md"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_output_into_a_missing_folder_is_refused_in_one_line(command, tmp_path, home):
    out = tmp_path / "nonexistent" / "dir" / ("out" + EXTENSION.get(command, ".json"))
    result = invoke(*COMMANDS[command], "-o", str(out))
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.strip().splitlines()[-1] == f"kbtool: error: -o {out}: no folder {out.parent}; create it first"
    assert not (tmp_path / "nonexistent").exists()


def test_check_refuses_its_output_before_it_asks_the_index_or_installs(tmp_path, home, monkeypatch):
    def no_index(*args, **kwargs):
        raise AssertionError("check asked the package index before checking -o")

    monkeypatch.setattr(releases, "index_versions", no_index)
    out = tmp_path / "nonexistent" / "x.json"
    args = ["check", "--backend", "tensorflow1", "--op", "dot", "--versions", "keras=2.2.4..2.3.1", "-o", str(out)]
    result = invoke(*args)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.strip() == f"kbtool: error: -o {out}: no folder {out.parent}; create it first"
    bad = invoke(*args[:-1], str(tmp_path / "x.txt"))  # an extension no format has: said before the index too
    assert bad.exit_code == 2 and "cannot tell the format of" in bad.stderr and "Traceback" not in bad.stderr


def test_an_output_in_an_existing_folder_is_still_written(tmp_path, home):
    out = tmp_path / "render.md"
    result = invoke("report", "render", CPU, "-o", str(out))
    assert result.exit_code in (0, 1), result.stderr
    assert out.read_text().startswith("#")


def test_an_output_under_a_file_says_the_file_is_in_the_way(tmp_path, home):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    out = blocked / "sub" / "x.md"
    result = invoke("report", "render", CPU, "-o", str(out))
    assert result.exit_code == 2
    assert result.stderr.strip() == f"kbtool: error: -o {out}: {blocked} is a file, not a folder"
    assert blocked.read_text() == "not a folder"
