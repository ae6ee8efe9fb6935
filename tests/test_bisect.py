"""`kbtool bisect`: the search over releases with outcomes given as data (a fake runner), the command's bad input (one
line, exit 2) and exit codes, and one real bisect of batch_dot over keras 2.2.4..2.3.1 on tensorflow1."""

import json
import math
import os

import pytest
from click.testing import CliRunner

from kbtool.bisect import search as bisect
from kbtool.bisect.search import Outcome
from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.runners import releases

PASS = Outcome("pass")
RAISES = Outcome(
    "error", "ValueError: Dimensions must be equal, but are 5 and 3", "ValueError: Dimensions must be equal"
)
WRONG = Outcome("fail", "values differ", "values differ | returned (2,3) float32")


class Fake:
    """A runner whose outcomes per release are data: {version: {key: outcome}}; it records each call."""

    def __init__(self, table):
        self.table, self.calls = table, []

    def __call__(self, versions):
        self.calls.append(list(versions))
        return {v: self.table[v] for v in versions}


def versions(n):
    return [f"1.{i}" for i in range(n)]


def step(n, at, key=("dot", "c", "eager"), before=RAISES, after=PASS):
    return {v: {key: before if i < at else after} for i, v in enumerate(versions(n))}


def test_a_monotonic_change_is_located_with_the_release_before_it():
    fake = Fake(step(8, 5))
    found = bisect.search(versions(8), fake)
    [change] = found.changes
    assert (change.first_changed, change.last_same) == ("1.5", "1.4")
    assert change.before.same(RAISES) and change.after.same(PASS) and change.monotonic
    assert fake.calls[0] == ["1.0", "1.7"]  # the two ends run together, first
    assert found.compared == 1


@pytest.mark.parametrize("n", [3, 17, 64, 200])
def test_probes_are_logarithmic_in_the_releases(n):
    for at in (1, n // 3, n - 1):
        fake = Fake(step(n, at))
        found = bisect.search(versions(n), fake)
        assert found.changes[0].first_changed == f"1.{at}"
        assert len(found.probed) <= 2 + math.ceil(math.log2(n - 1)), (n, at, found.probed)
        assert len(set(found.probed)) == len(found.probed)  # no release runs twice


def test_several_keys_share_probes():
    n = 33
    a, b, c = ("dot", "x", "eager"), ("dot", "y", "eager"), ("dot", "z", "symbolic")
    table = {v: {a: RAISES if i < 9 else PASS, b: PASS if i < 9 else WRONG, c: PASS} for i, v in enumerate(versions(n))}
    fake = Fake(table)
    found = bisect.search(versions(n), fake)
    assert [(ch.key, ch.first_changed) for ch in found.changes] == [(a, "1.9"), (b, "1.9")]
    assert len(found.probed) <= 2 + math.ceil(math.log2(n - 1))  # the second key reuses every probe of the first
    assert found.compared == 3


def test_keys_changing_at_different_releases_are_each_located():
    n = 20
    a, b = ("dot", "x", "eager"), ("mean", "y", "eager")
    table = {v: {a: RAISES if i < 3 else PASS, b: PASS if i < 14 else WRONG} for i, v in enumerate(versions(n))}
    found = bisect.search(versions(n), Fake(table))
    assert {ch.key: (ch.last_same, ch.first_changed) for ch in found.changes} == {
        a: ("1.2", "1.3"),
        b: ("1.13", "1.14"),
    }


def test_a_third_outcome_between_the_ends_is_non_monotonic():
    # LO raises, 1.4..1.5 return a wrong value, HI passes: the probe that lands on a wrong value is named
    table = {
        v: {("dot", "c", "eager"): RAISES if i < 4 else WRONG if i < 6 else PASS} for i, v in enumerate(versions(8))
    }
    found = bisect.search(versions(8), Fake(table))
    [change] = found.changes
    assert (change.last_same, change.first_changed) == ("1.3", "1.4")
    assert not change.monotonic and change.after.same(WRONG) and change.hi.same(PASS)
    assert [v for v, o in change.others] and all(o.same(WRONG) for _, o in change.others)
    text = "\n".join(bisect.render(found, "keras", [], 1.0))
    assert "non-monotonic" in text and "changed in keras 1.4 (last same: 1.3)" in text


def test_a_change_that_goes_back_by_hi_is_not_a_change():
    table = {v: {("dot", "c", "eager"): WRONG if i == 3 else PASS} for i, v in enumerate(versions(8))}
    fake = Fake(table)
    found = bisect.search(versions(8), fake)
    assert found.changes == [] and fake.calls == [["1.0", "1.7"]]  # the ends agree: nothing else runs


def test_numbers_in_a_message_do_not_make_a_change_but_other_words_do():
    def result(status, message, **details):
        return {"status": status, "message": message, "details": details or None}

    one = Outcome.of_result(result("error", "ValueError: Dimensions must be equal, but are 5 and 3"))
    two = Outcome.of_result(result("error", "ValueError: Dimensions must be equal, but are 4 and 2"))
    other = Outcome.of_result(result("error", "InvalidArgumentError: Incompatible shapes"))
    assert one.same(two) and not one.same(other)
    assert not Outcome.of_result(result("pass", "")).same(one)
    wide = Outcome.of_result(result("fail", "values differ", actual_shape=[2, 3], actual_dtype="float32"))
    tall = Outcome.of_result(result("fail", "values differ", actual_shape=[3, 2], actual_dtype="float32"))
    assert not wide.same(tall)


def test_a_key_missing_at_one_end_is_a_change():
    found = bisect.search(["1.0", "1.1"], Fake({"1.0": {("dot", "c", "eager"): PASS}, "1.1": {}}))
    [change] = found.changes
    assert change.hi.status == "absent" and change.first_changed == "1.1"


def test_one_release_is_refused():
    with pytest.raises(KbtoolError, match="two releases"):
        bisect.search(["1.0"], Fake({"1.0": {}}))


def test_the_document_is_valid_and_says_each_change():
    found = bisect.search(versions(8), Fake(step(8, 5)))
    doc = bisect.document(found, "tensorflow1", "keras", {"ops": ["dot"]}, [], 2.5, lambda v: f"tensorflow1[keras={v}]")
    assert bisect.validate(doc) == []
    assert doc["changes"][0]["first_changed"] == "1.5" and doc["changes"][0]["last_same"] == "1.4"
    assert doc["probes"][0]["releases"] == ["tensorflow1[keras=1.0]", "tensorflow1[keras=1.7]"]
    assert bisect.validate(dict(doc, changes=[{"op": "dot"}]))  # a change without its release is refused


def test_the_view_fits_eighty_columns_but_the_repros():
    long = Outcome("error", "ValueError: " + "word " * 60, "x", repro="kbtool check --op dot --backend 'b[keras=1.4]'")
    table = {v: {("dot", "c", "eager"): long if i < 5 else PASS} for i, v in enumerate(versions(8))}
    lines = bisect.render(bisect.search(versions(8), Fake(table)), "keras", [], 1.0)
    assert all(len(line) <= 80 for line in lines if "repro" not in line), lines
    assert "  repro 1.4: kbtool check --op dot --backend 'b[keras=1.4]'" in lines
    assert lines[-2].startswith("bisect: 8 releases in keras 1.0..1.7, 0 installed, ")


# ---------------------------------------------------------------------------- the command


def invoke(*args):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()  # click >= 8.2 keeps stderr apart
    return runner.invoke(main, ["bisect", *args])


def assert_one_error(result, *needles):
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbtool: error: "), result.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert result.exit_code == 2, result.exit_code


@pytest.fixture
def index(monkeypatch):
    """The package index answers keras 2.2.4, 2.2.5, 2.3.0, 2.3.1 (no pip asked)."""
    monkeypatch.setattr(
        releases, "index_versions", lambda base, package, runner=None: ["2.2.4", "2.2.5", "2.3.0", "2.3.1"]
    )


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--op", "batch_dot", "--backend", "tensorflow1", "--versions", "keras=2.3.1..2.2.4"], "write the older"),
        (["--op", "batch_dot", "--backend", "tensorflow1", "--versions", "keras"], "PACKAGE=LOW..HIGH"),
        (["--op", "batch_dot", "--backend", "nope", "--versions", "keras=2.2.4..2.3.1"], "--backend nope"),
        (["--op", "batch_dot", "--backend", "numpy", "--versions", "keras=2.2.4..2.3.1"], "--backend numpy"),
        (["--op", "batch_dot", "--backend", "tensorflow1[keras=2.2.4]", "--versions", "keras=2.2.4..2.3.1"], "base"),
        (["--op", "batch_dot", "--backend", "tensorflow1", "--versions", "nopkg=1.0..2.0"], "not a package"),
        (["--op", "nope", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1"], "no op 'nope'"),
        (["--op", "batch_dot", "--case", "zz*", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1"], "zz*"),
        (["--op", "batch_dot", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.2.9"], "no keras 2.2.9"),
        (["--op", "batch_dot", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.2.4"], "same release"),
        (["--op", "batch_dot", "--backend", "tensorflow1"], "--versions"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(index, args, needle):
    assert_one_error(invoke(*args), needle)


def fake_runner(monkeypatch, table):
    """CheckRunner runs `table` ({version: {key: outcome}}) instead of the backends."""
    calls = []

    def call(self, versions):
        calls.append(list(versions))
        return {v: table[v] for v in versions}

    monkeypatch.setattr(bisect.CheckRunner, "__call__", call)
    return calls


def test_the_command_names_the_release_and_exits_0(index, monkeypatch, tmp_path):
    key = ("batch_dot", "rank4_rank3", "eager")
    table = {v: {key: RAISES if v == "2.2.4" else PASS} for v in ("2.2.4", "2.2.5", "2.3.0", "2.3.1")}
    calls = fake_runner(monkeypatch, table)
    out = tmp_path / "bisect.json"
    result = invoke("--op", "batch_dot", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert "batch_dot rank4_rank3 eager: changed in keras 2.2.5 (last same: 2.2.4)" in result.stdout
    summary = " ".join(result.stdout[result.stdout.index("\nbisect: ") :].split())
    assert summary.startswith("bisect: 4 releases in keras 2.2.4..2.3.1, 0 installed, 3 probed in 2 runs; 1 of 1 ")
    assert calls == [["2.2.4", "2.3.1"], ["2.2.5"]]
    doc = json.loads(out.read_text())
    assert bisect.validate(doc) == [] and doc["changes"][0]["first_changed"] == "2.2.5"


def test_the_command_exits_1_when_the_ends_agree(index, monkeypatch):
    key = ("batch_dot", "rank4_rank3", "eager")
    fake_runner(monkeypatch, {v: {key: PASS} for v in ("2.2.4", "2.2.5", "2.3.0", "2.3.1")})
    result = invoke("--op", "batch_dot", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1", "--json")
    assert result.exit_code == 1, result.stderr
    doc = json.loads(result.stdout)
    assert doc["changes"] == [] and doc["compared"] == 1 and bisect.validate(doc) == []


# ---------------------------------------------------------------------------- a real bisect


def installed(name):
    return os.path.exists(os.path.join(releases.recipe_for(name).env_dir(), "kbtool-env.json"))


@pytest.mark.backends
@pytest.mark.skipif(not installed("tensorflow1"), reason="needs the tensorflow1 env: kbtool env install tensorflow1")
def test_keras_2_2_5_stopped_raising_on_rank4_by_rank3_batch_dot(tmp_path):
    out = tmp_path / "bisect.json"
    result = invoke(
        "--op", "batch_dot", "--backend", "tensorflow1", "--versions", "keras=2.2.4..2.3.1", "-o", str(out)
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    doc = json.loads(out.read_text())
    changed = {(c["case"], c["mode"]): c for c in doc["changes"]}
    for mode in ("eager", "symbolic"):
        change = changed[("rank4_rank3", mode)]
        assert (change["last_same"], change["first_changed"]) == ("2.2.4", "2.2.5")
        assert change["before"]["status"] == "error" and "ValueError" in change["before"]["message"]
        assert change["after"]["status"] == "pass"
        assert "--backend 'tensorflow1[keras=2.2.5]'" in change["after"]["repro"]
