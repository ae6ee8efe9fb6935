"""The CI gate, end to end, as a team lives with it: a fresh divergence fails the run and every view points at it
with its numbers and the command that reproduces it; registering it as a known difference makes the run green;
removing its cause makes the entry stale and the run red again. A planted custom backend on kbtool's own Python
(the reference with abs scaled by 1.01), no backend environment."""

import json
import re
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from kbtool.cli import main

BUGGY = """from kbtool.reference import *
from kbtool.reference.core import op as _op
import numpy as _np

@_op
def abs(x):
    x = _np.asarray(x)
    return (_np.abs(x) * {scale}).astype(x.dtype)
"""
# the reference has no autodiff: its gradient case is unsupported on any module built on it, planted or not
GRAD = """- op: abs
  backend: gate.planted
  case: grad
  reason: the module is the NumPy reference, which has no autodiff
  count: 1
"""
PLANTED = """- op: abs
  backend: gate.planted
  match: "values differ"
  reason: planted, abs scaled by 1.01
  count: 6
"""


@pytest.fixture
def gate(custom_backend, tmp_path, monkeypatch):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path / "home"))
    known = tmp_path / "known.yaml"
    outputs = {ext: tmp_path / ("report." + ext) for ext in ("json", "md", "html", "xml")}

    def run(scale, entries):
        custom_backend("gate", "planted", BUGGY.format(scale=scale))
        known.write_text(entries or "[]\n")
        args = ["check", "--op", "abs", "--backend", "gate.planted", "--known", str(known)]
        for path in outputs.values():
            args += ["-o", str(path)]
        result = CliRunner().invoke(main, args)
        return result.exit_code, result.stdout, {ext: path.read_text() for ext, path in outputs.items()}

    return run


REPRO = "kbtool check --op abs --case basic --backend gate.planted --mode eager --seed 0"


def test_a_fresh_divergence_fails_and_every_view_points_at_it_with_numbers_and_repro(gate):
    code, terminal, views = gate(1.01, GRAD)
    assert code == 1
    report = json.loads(views["json"])
    failing = [r for r in report["results"] if r["status"] == "fail"]
    # basic, float64 and int32_min (int32's maximum ×1.01 wraps), eager and symbolic; int32 and special_values hold
    assert {(r["case"], r["mode"]) for r in failing} == {
        (case, mode) for case in ("basic", "float64", "int32_min") for mode in ("eager", "symbolic")
    }
    assert len(failing) == 6 and all(not r.get("known") for r in failing)
    assert report["summary"]["divergences"] == 6 and not report["summary"]["ok"]
    # terminal: the failure's numbers and its repro, and the verdict as the last line
    # (lines wider than the terminal wrap between words; a repro with shell continuations)
    words = " ".join(terminal.replace(" \\\n", " ").split())
    assert "max abs diff 0.0196" in words and REPRO in words
    assert terminal.rstrip().splitlines()[-1].endswith("6 divergences")
    # Markdown: a row with the numbers and the repro in a code span
    assert "**Not OK: 6 divergences**" in views["md"]
    row = [line for line in views["md"].splitlines() if line.startswith("| abs | basic | gate.planted | eager |")]
    # the repro in a code span, with the run's known-differences file (and its kbtool home)
    assert row and "max abs diff 0.01955" in row[0] and re.search(f"`[^`]*{REPRO} --known [^`]*known.yaml`", row[0])
    # HTML: the page's data holds the result with its details and repro, and the page says it is not ok
    assert REPRO in views["html"] and '"max_abs_diff"' in views["html"] and "not ok" in views["html"].lower()
    # JUnit: a failure whose message has the numbers and whose text is the repro
    case = [c for c in ET.fromstring(views["xml"]).iter("testcase") if c.get("name") == "basic[eager]"][0]
    failure = case.find("failure")
    assert (
        failure is not None and "max abs diff 0.0196" in failure.get("message") and REPRO + " --known " in failure.text
    )


def test_registering_it_makes_the_run_green_and_removing_its_cause_makes_it_stale(gate):
    code, terminal, views = gate(1.01, GRAD + PLANTED)
    report = json.loads(views["json"])
    assert code == 0, terminal
    assert sum(1 for r in report["results"] if r.get("known") == "planted, abs scaled by 1.01") == 6
    assert terminal.rstrip().splitlines()[-1].endswith("no unexplained divergence (7 known)")
    skipped = [c for c in ET.fromstring(views["xml"]).iter("testcase") if c.find("skipped") is not None]
    assert len(skipped) == 7 and not [
        c for c in ET.fromstring(views["xml"]).iter("testcase") if c.find("failure") is not None
    ]
    # the cause is gone (the backend is fixed): the entry no longer reproduces, and that is a red run
    code, terminal, views = gate(1, GRAD + PLANTED)
    report = json.loads(views["json"])
    assert code == 1
    assert [e["reason"] for e in report["stale_known_differences"]] == ["planted, abs scaled by 1.01"]
    assert "stale known difference" in terminal and terminal.rstrip().splitlines()[-1].endswith(
        "1 stale known difference"
    )
    assert "## Stale known differences" in views["md"] and "planted, abs scaled by 1.01" in views["md"]
    stale = [c for c in ET.fromstring(views["xml"]).iter("testcase") if c.find("failure") is not None]
    assert len(stale) == 1 and "planted, abs scaled by 1.01" in ET.tostring(stale[0], encoding="unicode")
