"""Real use II (#33), part E: a check that checked nothing is never green (no backend installed, every backend
filtered out, 0 results; numpy alone is a self-test only when asked for), and the terminal views keep to the
console's width (check -v's backend table keeps pass as is whole at 80 and 120 columns; bisect wraps its repros)."""

import json
import os
import re

import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from kbtool.bisect import search as bisect
from kbtool.bisect.search import Outcome
from kbtool.check import command as check_command
from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.plan import Plan, PlannedBackend
from kbtool.reports.verdict import exit_code, summarize, verdict_reasons
from kbtool.runners import releases
from kbtool.runners.base import Launch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARITY = os.path.join(ROOT, "reports", "parity.json")


def invoke(*args, env=None):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()  # click >= 8.2 keeps stderr apart
    result = runner.invoke(main, [str(a) for a in args], env=env)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


# ---------------------------------------------------------------------------- nothing checked is not green


def test_a_check_with_no_backend_installed_exits_2_saying_what_to_install(tmp_path):
    result = invoke("check", "--op", "abs", env={"KBTOOL_HOME": str(tmp_path / "empty")})
    lines = result.stderr.splitlines()
    assert result.exit_code == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("kbtool: error: nothing to check: no Keras backend is installed")
    assert "`kbtool env install tensorflow`" in lines[0] and "--backend numpy runs a self-test" in lines[0]
    assert result.stdout == ""  # no summary, no verdict: nothing ran


def test_numpy_asked_for_alone_is_a_self_test_and_says_so(tmp_path):
    out = tmp_path / "self.json"
    result = invoke(
        "check", "--op", "abs", "--backend", "numpy", "-o", out, env={"KBTOOL_HOME": str(tmp_path / "empty")}
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1].strip().endswith("self-test, no unexplained divergence (1 known)")
    assert "self-test (numpy, the reference, against itself" in result.stdout
    report = json.loads(out.read_text())
    assert report["plan"]["self_test"] is True
    rendered = invoke("report", "render", out)
    assert "self-test" in rendered.stdout.splitlines()[-1]


def planned(*backends):
    """A plan of `backends`: (name, runnable) pairs (the run itself is never started)."""
    launch = Launch(backend="numpy", python="python", module="kbtool.reference")
    return Plan(
        spec=None,
        ops=[],
        work=[],
        backends=[
            PlannedBackend(n, launch=launch if ok else None, unavailable=None if ok else "no GPU") for n, ok in backends
        ],
    )


def test_every_named_backend_filtered_out_but_the_reference_is_refused():
    plan = planned(("numpy", True), ("tensorflow", False))  # tensorflow: not on --device gpu, say
    with pytest.raises(KbtoolError, match=r"^nothing to check: tensorflow cannot run here \(numpy, kbtool's own"):
        check_command._refuse_checking_nothing(plan, ("numpy", "tensorflow"))
    check_command._refuse_checking_nothing(planned(("numpy", True)), ("numpy",))  # asked for: a self-test
    check_command._refuse_checking_nothing(planned(("numpy", True), ("tensorflow", True)), ())  # a parity run
    broken = planned(("numpy", True), ("tensorflow1[keras=2.2.4]", False))
    broken.backends[1].status = "broken"  # a release that did not install: the run fails with a report saying so
    check_command._refuse_checking_nothing(broken, ("numpy", "tensorflow1[keras=2.2.4]"))


def test_a_selection_that_no_backend_can_run_is_exit_2(tmp_path):
    home = {"KBTOOL_HOME": str(tmp_path / "empty")}
    result = invoke("check", "--op", "abs", "--backend", "numpy", "--device", "gpu", env=home)
    assert result.exit_code == 2 and "nothing to check: no backend can run here on the gpu" in result.stderr
    result = invoke("check", "--op", "abs", "--backend", "numpy", "--backend", "tensorflow", env=home)
    assert result.exit_code == 2 and "backend tensorflow: not installed" in result.stderr


def test_a_report_with_no_result_is_never_green():
    report = {
        "results": [],
        "backends": [{"name": "tensorflow", "status": "available"}],
        "stale_known_differences": [],
        "summary": {},
    }
    report["summary"] = summarize(report)
    assert report["summary"]["ok"] is False and exit_code(report) == 1
    assert "nothing was checked" in verdict_reasons(report)


# ---------------------------------------------------------------------------- widths


def too_wide(text, width):
    return [line for line in text.splitlines() if cell_len(line) > width]


PASS_AS_IS = re.compile(r"\d+\.\d % +\(\d+/\d+\)")


@pytest.mark.parametrize("columns", [80, 120])
def test_check_v_of_every_backend_fits_and_keeps_pass_as_is(columns):
    result = invoke("report", "render", PARITY, "-v", env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.stderr
    assert too_wide(result.stdout, columns) == []
    report_backends = [b["name"] for b in json.load(open(PARITY))["backends"]]
    table = result.stdout[result.stdout.index("\nbackend ") :].splitlines()[2 : 2 + len(report_backends)]
    assert [row.split()[0] for row in table] == report_backends  # the active one first, as reported
    assert all(PASS_AS_IS.search(row) for row in table), table  # the headline, never cut
    # every version still shown (-v), wrapped under the table: openvino's 66 characters among them
    assert "openvino 2026.4.1-22982-e213a147257-releases/2026/4," in result.stdout
    assert "printed while starting (kept in the report" in result.stdout
    assert "port.cc" not in result.stdout  # TensorFlow's start-up log is not printed


def test_bisect_output_fits_80_columns_and_its_repro_still_pastes(monkeypatch):
    monkeypatch.setattr(
        releases, "index_versions", lambda base, package, runner=None: ["2.2.4", "2.2.5", "2.3.0", "2.3.1"]
    )
    repro = "kbtool check --op batch_dot --case 'rank4_rank3' --backend 'tensorflow1[keras=2.2.4]' " + " ".join(
        f"--keras-config image_data_format=channels_last{i}" for i in range(3)
    )
    raises = Outcome("error", "ValueError: " + "Dimensions must be equal " * 8, "ValueError", repro=repro)
    key = ("batch_dot", "rank4_rank3", "eager")
    table = {v: {key: raises if v == "2.2.4" else Outcome("pass")} for v in ("2.2.4", "2.2.5", "2.3.0", "2.3.1")}
    monkeypatch.setattr(bisect.CheckRunner, "__call__", lambda self, versions: {v: table[v] for v in versions})
    result = invoke(
        "bisect",
        "--op",
        "batch_dot",
        "--backend",
        "tensorflow1",
        "--versions",
        "keras=2.2.4..2.3.1",
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 0, result.stderr
    assert too_wide(result.stdout, 80) == [] and too_wide(result.stderr, 80) == []
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  repro 2.2.4: "))
    joined = [lines[start]]
    while joined[-1].endswith(" \\"):
        joined.append(lines[start + len(joined)])
    assert " ".join(part.rstrip(" \\").strip() for part in joined) == "repro 2.2.4: " + repro


# ---------------------------------------------------------------------------- start-up output off the terminal

CHATTY = """import os
import sys

sys.stderr.write("CHATTER-AT-IMPORT on stderr\\n")
print("PRINTED-AT-IMPORT on stdout")
sys.stderr.flush()
sys.stdout.flush()
from kbtool.reference import *  # noqa


def sqrt(x):
    sys.stderr.write("DYING-NOW\\n")
    sys.stderr.flush()
    os._exit(3)
"""


def test_a_backends_start_up_output_goes_to_a_log_not_the_terminal_but_a_crash_says_why(custom_backend, tmp_path):
    import subprocess
    import sys

    module = custom_backend("chattykb", "kb", CHATTY)
    home = tmp_path / "home"
    env = dict(
        os.environ, KBTOOL_HOME=str(home), COLUMNS="80", PYTHONPATH=os.pathsep.join([ROOT, os.environ["PYTHONPATH"]])
    )
    argv = [sys.executable, "-m", "kbtool", "check", "--op", "abs", "--op", "sqrt", "--backend", module, "-v"]
    ran = subprocess.run(argv, env=env, capture_output=True, timeout=300, cwd=str(tmp_path))
    out, err = ran.stdout.decode(), ran.stderr.decode()
    assert ran.returncode == 1, err  # the crashes are unexplained
    assert "CHATTER-AT-IMPORT" not in out + err and "PRINTED-AT-IMPORT" not in out + err
    (line,) = [line for line in err.splitlines() if "start-up output" in line]
    assert line.startswith("kbtool: start-up output: ") and line.endswith(".log")
    log = line.split(": ")[-1]
    assert os.path.dirname(log) == str(home / "logs")
    text = open(log).read()
    assert text.startswith(f"== {module} printed while starting\n")
    assert "CHATTER-AT-IMPORT on stderr" in text and "PRINTED-AT-IMPORT on stdout" in text
    # a worker that dies says why, in the result's message, on the terminal
    assert "crash" in out and "DYING-NOW" in out


# ---------------------------------------------------------------------------- --last-failed per directory / report

BROKEN_ABS = """
import numpy as np
from kbtool.reference import *  # noqa
from kbtool.reference import abs as _abs
from kbtool.reference.core import op


@op
def abs(x):
    out = _abs(x)
    return out + 1 if np.asarray(x).dtype == np.float64 else out
"""


def failed_keys(path):
    report = json.loads(path.read_text())
    return sorted((r["op"], r["case"], r["mode"]) for r in report["results"] if r["status"] != "pass")


def test_last_failed_is_kept_per_directory_and_per_report(tmp_path, custom_backend, no_known, monkeypatch):
    from kbtool.reports import load

    module = custom_backend("lfkeyed", "planted", BROKEN_ABS)
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    common = ("--known", no_known, "--backend", module)
    monkeypatch.chdir(one)  # fails on abs
    assert invoke("check", "--op", "abs", "--case", "float*", *common, "-o", one / "r.json").exit_code == 1
    monkeypatch.chdir(two)  # a later run elsewhere, that fails on exp only
    assert invoke("check", "--op", "exp", "--case", "grad", *common).exit_code == 1  # no autodiff
    kept = [n for n in os.listdir(os.path.join(os.environ["KBTOOL_HOME"], "last")) if n.endswith(".json")]
    assert len(kept) == 3  # one's report and directory, two's directory

    monkeypatch.chdir(one)
    again = invoke("check", "--last-failed", "--known", no_known, "-o", one / "again.json")
    assert again.exit_code == 1, again.stderr
    assert {k[0] for k in failed_keys(one / "again.json")} == {"abs"}  # one's failures, not two's (the last run)
    assert failed_keys(one / "again.json") == failed_keys(one / "r.json")
    monkeypatch.chdir(two)
    again = invoke("check", "--last-failed", "--known", no_known, "-o", two / "again.json")
    assert {k[0] for k in failed_keys(two / "again.json")} == {"exp"}
    # the first -o report is a key of its own: from anywhere, --last-failed -o one/r.json reruns what it failed
    elsewhere = invoke("check", "--last-failed", "--known", no_known, "-o", one / "r.json")
    assert elsewhere.exit_code == 1 and {k[0] for k in failed_keys(one / "r.json")} == {"abs"}
    assert load.run_keys([str(one / "r.json"), "x.md"]) == ["report:" + str(one / "r.json"), "dir:" + str(two)]
    # and the last check of all is still last-report.json
    assert json.load(open(os.path.join(os.environ["KBTOOL_HOME"], "last-report.json")))["plan"]["last_failed"]
