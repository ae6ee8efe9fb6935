"""What the CLI hands to other modules (kbtool/options.py, interrupts.Interrupts, envs.install_all, merge.distinct_files,
load.last_failures): each validated or done in one place, with the messages the commands print."""

import os
import signal

import pytest

from kbtool import options
from kbtool.errors import KbtoolError
from kbtool.interrupts import Interrupts
from kbtool.reports import load, merge
from kbtool.runners import envs
from kbtool.runners.envs import build as env_build
from kbtool.runners.envs import state as env_state
from kbtool.runners.registry import RECIPES
from kbtool.runners.session import Cancel


@pytest.mark.parametrize("text, seconds", [("1", 1.0), ("0.5", 0.5), ("86400", 86400.0), (" 2e1 ", 20.0), (None, None)])
def test_a_good_timeout(text, seconds):
    assert options.seconds(text) == seconds


@pytest.mark.parametrize("text", ["0", "-1", "86400.5", "nan", "inf", "ten", ""])
def test_a_bad_timeout_names_the_flag_it_came_from(text):
    for flag in ("--timeout", "--kbtool-timeout"):
        with pytest.raises(KbtoolError) as info:
            options.seconds(text, flag)
        assert str(info.value) == f"{flag} takes a number of seconds, more than 0 and at most 86400 (got {text!r})"


def test_existing_file_and_verbosity(tmp_path):
    there = tmp_path / "known.yaml"
    there.write_text("[]\n")
    assert options.existing_file(str(there), "--known") == str(there)
    assert options.existing_file(None, "--known") is None
    with pytest.raises(KbtoolError, match=r"^--kbtool-spec /no/such: no such file$"):
        options.existing_file("/no/such", "--kbtool-spec")
    # a folder or a device exists: the reader then names what it is (tests/test_faults_commands.py)
    assert options.existing_file(str(tmp_path), "--known") == str(tmp_path)
    assert [options.verbosity(q, v) for q, v in ((True, False), (False, False), (False, True))] == [0, 1, 2]
    with pytest.raises(KbtoolError, match="not both"):
        options.verbosity(True, True)


def test_check_options_are_validated_once_built():
    opts = options.CheckOptions(statuses=("fail", "fail", "pass"), verbose=True)
    assert opts.statuses == ("fail", "pass") and opts.verbosity == 2
    with pytest.raises(KbtoolError, match="unknown --status nope"):
        options.CheckOptions(statuses=("nope",))
    with pytest.raises(KbtoolError, match="--json prints the whole report"):
        options.CheckOptions(statuses=("fail",), as_json=True)
    with pytest.raises(KbtoolError, match="not both"):
        options.CheckOptions(quiet=True, verbose=True)


def test_interrupts_install_handlers_and_give_the_old_ones_back():
    # a suite started in the background (`nohup`, `cmd &`) inherits SIGINT ignored, which Interrupts keeps as the
    # caller's choice: the test gives itself the handlers a foreground run has, and puts the caller's back after
    callers = {signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler)}
    callers[signal.SIGTERM] = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        with Interrupts(Cancel()) as interrupts:
            assert all(signal.getsignal(s) == interrupts._handle for s in before)
            assert interrupts.exit_code is None and interrupts.name is None
            interrupts._handle(signal.SIGTERM, None)  # as the handler is called: the check is cancelled
            assert interrupts.cancel.is_set() and interrupts.cancel.reason == "SIGTERM"
            assert interrupts.exit_code == 143 and interrupts.name == "SIGTERM"
        assert {s: signal.getsignal(s) for s in before} == before
    finally:
        for signum, handler in callers.items():
            signal.signal(signum, handler)


def test_a_process_kbtool_owns_ignores_a_late_signal_once_one_stopped_the_command(monkeypatch):
    # a second Ctrl-C while kbtool exits with 130 must not kill it with SIGINT (status -2): CI caught that race
    from kbtool import interrupts as module

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    monkeypatch.setattr(module, "OWNS_PROCESS", True)
    try:
        with Interrupts(Cancel()):  # not stopped: the old handlers come back
            pass
        assert {s: signal.getsignal(s) for s in before} == before
        with Interrupts(Cancel()) as interrupts:
            interrupts._handle(signal.SIGINT, None)
        assert all(signal.getsignal(s) is signal.SIG_IGN for s in before)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    monkeypatch.setattr(module, "OWNS_PROCESS", False)  # in-process callers (CliRunner, the plugin) get theirs back
    with Interrupts(Cancel()) as interrupts:
        interrupts._handle(signal.SIGINT, None)
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_command_that_writes_its_partial_output_lets_one_more_signal_pass_and_exits_on_the_next(capfd):
    """bench's staging through the one handler: the first signal raises in the main thread (and says nothing: the
    command says it), one more lets the writing go on, the next exits at once with its own code, unwinding."""
    from kbtool.interrupts import Interrupted

    with Interrupts(Cancel(), what=None, raise_in_main=True, while_writing="being written") as interrupts:
        with pytest.raises(Interrupted) as first:
            interrupts._handle(signal.SIGTERM, None)
        assert first.value.name == "SIGTERM" and interrupts.exit_code == 143
        interrupts._handle(signal.SIGINT, None)  # while writing: no exit
        with pytest.raises(SystemExit) as last:
            interrupts._handle(signal.SIGINT, None)
        assert last.value.code == 130
    err = capfd.readouterr().err
    assert err == "kbtool: SIGINT: being written\nkbtool: SIGINT again: exiting at once\n"
    with Interrupts(Cancel(), what=None, raise_in_main=True, while_writing="being written") as interrupts:
        interrupts.finishing()  # the work is over: a first signal no longer interrupts
        interrupts._handle(signal.SIGINT, None)
        assert not interrupts.caught and interrupts.later == 1
    assert capfd.readouterr().err == "kbtool: SIGINT: being written\n"


def test_an_ignored_signal_stays_ignored():
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with Interrupts(Cancel()):
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_distinct_files_refuses_a_file_given_twice(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text("{}")
    b.symlink_to(a)
    assert merge.distinct_files([str(a)]) == [str(a)]
    with pytest.raises(KbtoolError) as info:
        merge.distinct_files([str(a), str(a)])
    assert str(info.value) == f"{a} is given twice"
    with pytest.raises(KbtoolError) as info:
        merge.distinct_files([str(a), str(b)])
    assert str(info.value) == f"{b} is given twice (as {a})"


def test_install_all_builds_a_shared_env_once_and_goes_on_after_a_failure(monkeypatch, tmp_path):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    built = []

    def install(recipe, log, force, **_):
        built.append((recipe.name, force))
        log("pip says hello")
        if recipe.name == "theano":
            raise KbtoolError("theano: no compiler")
        return {"install_seconds": 1.5}

    monkeypatch.setattr(env_build, "install", install)
    monkeypatch.setattr(env_state, "describe", lambda recipe: {"size_mb": 7})
    out, err = [], []
    names = ["keras3", "tensorflow", "theano", "cntk"]
    failed = envs.install_all([RECIPES[n] for n in names], True, out.append, err.append)
    assert built == [("tensorflow", True), ("theano", True), ("cntk", True)]  # keras3 built tensorflow's env, once
    assert failed == ["theano"]
    tf_dir = RECIPES["tensorflow"].env_dir()
    assert out[:3] == [
        f"tensorflow: installed in {tf_dir} (1.5 s, 7 MB)",
        "keras3: runs in the tensorflow env",
        f"tensorflow: runs in the tensorflow env, installed in {tf_dir}",
    ]
    assert "kbtool: error: theano: no compiler" in err and "   pip says hello" in err
    assert err[0].startswith("== tensorflow (Python ")


def test_last_failures_with_no_last_report_runs_everything(monkeypatch, tmp_path):
    monkeypatch.setenv("KBTOOL_HOME", str(tmp_path))
    said = []
    assert load.last_failures(0, "pairwise", said.append) is None
    assert said == ["kbtool: no last run recorded; running everything"]
    os.makedirs(os.path.dirname(load.last_report_path()), exist_ok=True)
    with open(load.last_report_path(), "w") as fh:
        fh.write("{not json")
    with pytest.raises(KbtoolError, match=r"\(delete .*last-report.json to start afresh\)$"):
        load.last_failures(0, "pairwise", said.append)
