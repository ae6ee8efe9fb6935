"""Nothing a backend or the reference prints or warns reaches kbtool's terminal; it goes into the record.

The reference runs in kbtool's process (its stdout, stderr and warnings are captured around each case: kbtool/
capture.py, reference/oracle.py); a worker's stdout and stderr go to a file the client reads per request
(runners/client.py), at the file-descriptor level, so C code printing is caught too. Checked end to end on a real
`kbtool check` process: its stdout is exactly the terminal view of its own JSON report, and its stderr holds
kbtool's own lines only.
"""

import io
import json
import os
import re
import subprocess
import sys
import warnings

import pytest
from rich.console import Console

import kbtool
from kbtool.capture import LIMIT, Captured, cut
from kbtool.reports import progress, terminal
from kbtool.reports.report import validate

REPO = os.path.dirname(os.path.dirname(os.path.abspath(kbtool.__file__)))
# what kbtool itself writes on stderr during a check: the settings it runs under, progress lines, files written
OWN_STDERR = re.compile(
    r"^(keras\.json settings: .*|  \S+ +(done: |stopped: |\d+/\d+ |\d+ results in ).*"
    r"|wrote .*|kbtool: start-up output: \S+\.log"
    r"|  \(" + re.escape(progress.LEGEND) + r"\))$"
)


def kbtool_check(tmp_path, *args):
    """Run `kbtool check ... -o r.json` as its own process (fd-level leaks show there); returns (proc, report)."""
    env = dict(os.environ, COLUMNS="100", PYTHONPATH=os.pathsep.join([REPO, os.environ.get("PYTHONPATH", "")]))
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "kbtool", "check"] + list(args) + ["-o", "r.json"],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        timeout=600,
    )
    with open(str(tmp_path / "r.json"), encoding="utf-8") as fh:
        report = json.load(fh)
    assert validate(report) == []
    return proc, report


def assert_only_kbtool_output(proc, report):
    """stdout is the terminal view of the report, byte for byte; stderr is kbtool's own lines only."""
    console = Console(file=io.StringIO(), width=100)
    terminal.render(report, console)
    assert proc.stdout.decode() == console.file.getvalue()
    stray = [line for line in proc.stderr.decode().splitlines() if not OWN_STDERR.match(line)]
    assert stray == []


def test_print_tensor_prints_nothing_but_kbtools_output(tmp_path):
    proc, report = kbtool_check(tmp_path, "--op", "print_tensor", "--backend", "numpy")
    assert proc.returncode == 0, proc.stderr.decode()
    assert_only_kbtool_output(proc, report)
    assert b"x is:" not in proc.stdout + proc.stderr  # the reference's and the worker's print, both caught
    assert {r["status"] for r in report["results"]} == {"pass"}  # and still judged: the printed text is checked


def test_reference_warnings_go_to_the_record_not_stderr(tmp_path):
    # exp and log answer their hard values (overflow, log of 0) without warning; cast to float16 past 65504 warns
    proc, report = kbtool_check(tmp_path, "--op", "cast", "--op", "exp", "--op", "log", "--backend", "numpy")
    assert_only_kbtool_output(proc, report)
    assert b"Warning" not in proc.stderr
    overflow = [r for r in report["results"] if r["case"] == "float16_overflow"]
    assert overflow and all(
        "RuntimeWarning: overflow encountered in cast" in r["captured"]["reference"] for r in overflow
    )
    quiet = [
        r
        for r in report["results"]
        if r["op"] in ("exp", "log") and r["case"] in ("large_overflow", "zero_and_negative", "special_values")
    ]
    assert quiet and all("reference" not in r.get("captured", {}) for r in quiet)


NOISY_SOURCE = """import os, sys, warnings
from kbtool.reference import *
from kbtool.reference import transpose as _transpose

print("IMPORT-NOISE on stdout")
os.write(2, b"IMPORT-NOISE at fd 2\\n")


def transpose(x, *args, **kwargs):
    print("PY-STDOUT-NOISE")
    sys.stderr.write("PY-STDERR-NOISE\\n")
    sys.stderr.flush()
    os.write(1, b"FD1-NOISE\\n")  # as C code writes (TensorFlow's C++ print, Theano's compiler)
    os.write(2, b"FD2-NOISE\\n")
    warnings.warn("WARN-NOISE", RuntimeWarning)
    return _transpose(x, *args, **kwargs)
"""


def test_what_a_backend_prints_at_any_level_goes_to_its_results(tmp_path, custom_backend):
    module = custom_backend("noisykb", "kb", NOISY_SOURCE)
    proc, report = kbtool_check(tmp_path, "--op", "transpose", "--case", "rank3", "--backend", module)
    assert proc.returncode == 0, proc.stderr.decode()
    assert_only_kbtool_output(proc, report)
    assert b"NOISE" not in proc.stdout + proc.stderr
    (info,) = report["backends"]
    assert "IMPORT-NOISE on stdout" in info["start_output"] and "IMPORT-NOISE at fd 2" in info["start_output"]
    results = report["results"]
    assert [r["mode"] for r in results] == ["eager", "symbolic"]
    for r in results:
        printed = r["captured"]["backend"]
        for marker in ("PY-STDOUT-NOISE", "PY-STDERR-NOISE", "FD1-NOISE", "FD2-NOISE"):
            assert printed.count(marker) == 1, (marker, printed)  # this request's output, not the one before
        assert "IMPORT-NOISE" not in printed
    assert "WARN-NOISE" in results[0]["captured"]["backend"]  # Python shows a warning once per place


def test_a_backend_that_prints_a_lot_is_cut(custom_backend):
    module = custom_backend(
        "chattykb",
        "kb",
        "import os\nfrom kbtool.reference import *\n"
        "from kbtool.reference import transpose as _t\n\n"
        "def transpose(x, *a, **k):\n"
        "    os.write(2, b'y' * 100000)\n    return _t(x, *a, **k)\n",
    )
    from kbtool.check.run import run_check
    from kbtool.plan import Selection, make_plan
    from kbtool.specs import loader

    plan = make_plan(
        loader.load(), Selection(ops=["transpose"], case_patterns=["rank3"], modes=["eager"], backends=[module])
    )
    report = run_check(plan, known_entries=[])
    printed = report["results"][0]["captured"]["backend"]
    assert printed.startswith("y" * LIMIT) and len(printed) < LIMIT + 100 and "more" in printed


def test_what_a_worker_said_before_it_died_is_kept_with_the_crash(custom_backend):
    from kbtool.check.run import run_check
    from kbtool.plan import Selection, make_plan
    from kbtool.specs import loader

    module = custom_backend(
        "dyingkb",
        "kb",
        "import os\nfrom kbtool.reference import *\n\n"
        "def transpose(x, *a, **k):\n"
        "    os.write(1, b'DYING WORDS\\n')\n    os._exit(7)\n",
    )
    plan = make_plan(
        loader.load(), Selection(ops=["transpose"], case_patterns=["rank3"], modes=["eager"], backends=[module])
    )
    (result,) = run_check(plan, known_entries=[])["results"]
    assert result["status"] == "crash" and "exited with code 7" in result["message"]
    assert result["captured"] == {"backend": "DYING WORDS"}


# ---------------------------------------------------------------------------------------------------- units


def test_captured_collects_prints_and_every_warning_and_restores_the_streams():
    stdout, stderr, filters = sys.stdout, sys.stderr, list(warnings.filters)
    with Captured() as out:
        print("hello")
        sys.stderr.write("on stderr\n")
        for _ in range(2):
            warnings.warn("twice", RuntimeWarning, stacklevel=1)  # the same place twice: both recorded
    assert sys.stdout is stdout and sys.stderr is stderr and warnings.filters == filters
    lines = out.text.splitlines()
    assert lines[:2] == ["hello", "on stderr"]
    assert len([line for line in lines if line.endswith("RuntimeWarning: twice")]) == 2


def test_captured_restores_the_streams_when_the_code_raises():
    stdout = sys.stdout
    with pytest.raises(ValueError):
        with Captured() as out:
            print("before")
            raise ValueError
    assert sys.stdout is stdout and out.text == "before"


def test_nothing_printed_is_nothing_captured():
    with Captured() as out:
        pass
    assert out.text == ""


def test_cut():
    assert cut("abc", 5) == "abc"
    assert cut("abcdefgh", 5) == "abcde… (3 more characters)"


def test_the_oracle_records_what_the_reference_warns():
    from kbtool.reference.oracle import Oracle
    from kbtool.specs import loader
    from kbtool.specs.cases import cases_for

    case = [c for c in cases_for(loader.load(), "cast") if c.id == "float16_overflow"][0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning that escaped the capture would raise here
        header, _ = Oracle().expected(case)
    assert "RuntimeWarning: overflow encountered in cast" in header["captured"]


# ---------------------------------------------------------------------------------------------------- real backends


@pytest.mark.backends
def test_print_tensor_on_every_backend_prints_nothing_but_kbtools_output(tmp_path):
    proc, report = kbtool_check(tmp_path, "--op", "print_tensor")
    assert proc.returncode == 0, proc.stderr.decode()
    assert_only_kbtool_output(proc, report)
    assert b"x is:" not in proc.stdout + proc.stderr
    assert {b["name"] for b in report["backends"] if b["status"] == "available"} >= {
        "numpy",
        "tensorflow",
        "theano",
        "cntk",
    }
