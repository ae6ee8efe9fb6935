"""Known differences for releases (`tensorflow1[keras=2.2.4]`): a base backend's entry applies to its releases, an
entry may name a release exactly, and `versions: {PKG: SPECIFIERS}` narrows it to the releases in a PEP 440 range,
compared with the versions the backend's worker reported (else its lock)."""

import fnmatch
import json
import os
import subprocess
import sys

import pytest

from kbtool import files, known
from kbtool.errors import KbtoolError
from kbtool.known import record as known_record
from kbtool.results import Result, Status
from kbtool.runners import envs

R224 = "tensorflow1[keras=2.2.4]"
R231 = "tensorflow1[keras=2.3.1]"
REPORTED = {
    "tensorflow1": {"tensorflow": "1.15.5", "keras": "2.3.1", "numpy": "1.18.5"},
    R224: {"tensorflow": "1.15.5", "keras": "2.2.4", "numpy": "1.18.5"},
    R231: {"tensorflow": "1.15.5", "keras": "2.3.1", "numpy": "1.18.5"},
}


def entry(**kw):
    out = {"op": "batch_dot", "case": "rank4_rank3", "backend": "tensorflow1", "status": "error", "reason": "r"}
    out.update(kw)
    return out


def result(backend, status="error", message="ValueError: rank", case="rank4_rank3", mode="eager"):
    return Result(op="batch_dot", case=case, backend=backend, mode=mode, status=Status(status), message=message)


def explained(entries, results, versions=REPORTED):
    known.apply(results, [known.KnownEntry.from_dict(e, i) for i, e in enumerate(entries, 1)], versions=versions)
    return {r.backend: r.known for r in results}


def test_a_base_backend_entry_applies_to_its_releases():
    for backend in ("tensorflow1", "tensorflow*", ["theano", "tensorflow1"]):
        found = explained([entry(backend=backend)], [result(R224), result(R231), result("tensorflow1")])
        assert found == {R224: "r", R231: "r", "tensorflow1": "r"}, backend
    assert explained([entry(backend="theano")], [result(R224)]) == {R224: None}


@pytest.mark.parametrize(
    "versions, hits",
    [
        ({"keras": ">=2.2.5"}, {R231, "tensorflow1"}),
        ({"keras": "<2.2.5"}, {R224}),
        ({"keras": "==2.2.4"}, {R224}),
        ({"Keras": ">=2.2.4,<2.3"}, {R224}),  # a package as PEP 503 compares them
        ({"keras": ">=2.2.4", "tensorflow": "<1.15"}, set()),  # every package must be in range
        ({"keras": "!=2.2.4", "tensorflow": "==1.15.*"}, {R231, "tensorflow1"}),
    ],
)
def test_a_versions_range_includes_and_excludes_releases(versions, hits):
    found = explained([entry(versions=versions)], [result(R224), result(R231), result("tensorflow1")])
    assert {name for name, reason in found.items() if reason} == hits


def test_versions_are_the_reported_ones_and_a_package_not_reported_does_not_apply():
    results = [result(R224)]
    assert explained([entry(versions={"keras": "==2.2.4"})], results, {R224: {"keras": "2.2.4"}}) == {R224: "r"}
    results = [result(R224)]  # the worker said another version: the name's pins are not what ran
    assert explained([entry(versions={"keras": "==2.2.4"})], results, {R224: {"keras": "2.2.5"}}) == {R224: None}
    results = [result(R224)]
    assert explained([entry(versions={"keras": "==2.2.4"})], results, {R224: {"numpy": "1.18.5"}}) == {R224: None}
    results = [result(R224)]  # not a PEP 440 version ("unknown", "unavailable (ImportError)"): out of every range
    assert explained([entry(versions={"keras": ">0"})], results, {R224: {"keras": "unknown"}}) == {R224: None}


def test_without_reported_versions_a_release_is_taken_at_its_pins_and_a_base_at_its_lock():
    assert known.locked_versions(R224, envs.read_lock)["keras"] == "2.2.4"
    assert known.locked_versions("tensorflow1", envs.read_lock)["keras"] == "2.3.1"  # the shipped lock
    assert known.locked_versions("my_pkg.mod", envs.read_lock) == {}
    results = [result(R224), result("tensorflow1")]  # the caller reads the locks: apply reads no file
    found = explained([entry(versions={"keras": "<2.2.5"})], results, known.lookup(results, None, envs.read_lock))
    assert found == {R224: "r", "tensorflow1": None}
    results = [result(R224), result("tensorflow1")]  # without them, no versions: in no range
    assert explained([entry(versions={"keras": "<2.2.5"})], results, versions=None) == {R224: None, "tensorflow1": None}


def test_a_literal_release_name_applies_to_that_release_alone(tmp_path):
    path = tmp_path / "known.yaml"
    path.write_text(
        '- {op: batch_dot, case: rank4_rank3, backend: "tensorflow1[Keras=2.2.4]", status: error, reason: r}\n'
    )
    (loaded,) = known.load(str(path))
    assert loaded.backend == "tensorflow1[Keras=2.2.4]"  # kept as written; matched as the canonical name
    results = [result(R224), result(R231), result("tensorflow1"), result("tensorflow1k=2.2.4]")]
    known.apply(results, [loaded], versions=REPORTED)
    assert [r.known for r in results] == ["r", None, None, None]


def test_brackets_in_a_backend_are_never_fnmatch_classes(tmp_path):
    # fnmatch would read the brackets as a character class: the release would not match its own name, and
    # 'tensorflow[1]' would match tensorflow1
    assert not fnmatch.fnmatchcase(R224, R224) and fnmatch.fnmatchcase("tensorflow1", "tensorflow[1]")
    assert known.backend_matches(R224, R224)
    assert not known.backend_matches("tensorflow1", "tensorflow[1]")
    assert not known.backend_matches("tensorflow1k=2.2.4]", R224)
    assert known.backend_matches(R224, "tensorflow?")  # a glob is matched against the release's base name
    assert not known.backend_matches(R224, "tensorflow1[*")
    path = tmp_path / "known.yaml"
    path.write_text('- {op: batch_dot, case: rank4_rank3, backend: "tensorflow[12]", reason: r}\n')
    with pytest.raises(KbtoolError) as info:
        known.load(str(path))
    assert str(info.value) == (
        f"{path}:1: entry 1 (batch_dot): backend 'tensorflow[12]' is not a release kbtool can name (brackets name "
        "a release, they are no glob): '12' is not PACKAGE=VERSION (e.g. keras=2.2.4)"
    )


@pytest.mark.parametrize(
    "versions, message",
    [
        (
            '{keras: ">=2.2.x"}',
            "entry 2 (batch_dot): versions: keras: '>=2.2.x' is not a version specifier (PEP 440, e.g. '>=2.2.5')",
        ),
        ('{keras: ""}', "entry 2 (batch_dot): versions: keras: '' is not a version specifier"),
        ("{keras: 2.2}", "entry 2 (batch_dot): versions: keras: 2.2 is not a version specifier"),
        ('">=2.2.5"', "entry 2 (batch_dot): versions must map a package to PEP 440 specifiers"),
        ("{}", "entry 2 (batch_dot): versions must map a package to PEP 440 specifiers"),
        (
            '{theano: ">=1"}',
            "entry 2 (batch_dot): versions: no backend of the entry reports theano (they report keras, numpy, "
            "tensorflow): the entry would never apply",
        ),
    ],
)
def test_a_bad_versions_is_a_one_line_error_with_the_entry_number(tmp_path, versions, message):
    path = tmp_path / "known.yaml"
    path.write_text(
        "- {op: batch_dot, case: rank4_rank3, backend: tensorflow1, reason: fine}\n"
        f"- op: batch_dot\n  case: rank4_rank3\n  backend: tensorflow1\n  versions: {versions}\n  reason: r\n"
    )
    with pytest.raises(KbtoolError) as info:
        known.load(str(path))
    assert "\n" not in str(info.value)
    assert str(info.value).startswith(f"{path}:2: {message}")


def test_a_custom_backend_may_name_any_package(tmp_path):
    path = tmp_path / "known.yaml"
    path.write_text('- {op: abs, case: x, backend: my_pkg.my_mod, versions: {my_pkg: "<2"}, reason: r}\n')
    (loaded,) = known.load(str(path))
    assert loaded.to_dict()["versions"] == {"my_pkg": "<2"}


def test_an_entry_with_no_release_in_its_range_in_the_run_is_not_stale():
    only_224 = entry(versions={"keras": "==2.2.4"})
    results = [result("tensorflow1"), result(R231)]
    applied = known.apply(results, [known.KnownEntry.from_dict(only_224, 1)], versions=REPORTED)
    assert applied.stale == [] and applied.counts == []
    # in range and not reproducing: stale, as any entry
    results = [result(R224, status="pass", message="")]
    applied = known.apply(results, [known.KnownEntry.from_dict(only_224, 1)], versions=REPORTED)
    assert [s["note"] for s in applied.stale] == ["did not reproduce in this run (1 results checked)"]


def test_a_base_record_stands_for_its_releases_and_a_release_that_passes_does_not_make_it_stale():
    base = result("tensorflow1")
    from kbtool.known import fingerprint

    recorded = known.KnownEntry.from_dict(
        entry(results={known.result_key(base): fingerprint.of_result(base)}, count=1), 1
    )
    same, passing, other = result(R231), result(R224, status="pass", message=""), result(R224, message="Other")
    applied = known.apply([same], [recorded], versions=REPORTED)
    assert same.known == "r" and applied.stale == []
    applied = known.apply([passing], [recorded], versions=REPORTED)
    assert passing.known is None and applied.stale == []
    applied = known.apply([other], [recorded], versions=REPORTED)
    assert other.status == Status.CHANGED and other.changed["recorded"] == fingerprint.of_result(base)
    gone = result("tensorflow1", status="pass", message="")
    applied = known.apply([gone], [recorded], versions=REPORTED)
    assert applied.stale and "pass now" in applied.stale[0]["note"]


@pytest.mark.parametrize("release_entry_first", [True, False])
def test_a_release_failing_otherwise_is_not_changed_when_an_entry_of_its_own_range_explains_it(release_entry_first):
    """theano 1.0.4's in_top_k raises where theano 1.0.5 (the base) fails on a static shape: the base's record says
    `changed` only while nothing else explains it, wherever the release's own entry stands in the file."""
    from kbtool.known import fingerprint

    base = result("tensorflow1")
    recorded = known.KnownEntry.from_dict(
        entry(results={known.result_key(base): fingerprint.of_result(base)}, count=1), 1
    )
    other = result(R224, message="IndexError: index 3 is out of bounds")
    own = known.KnownEntry.from_dict(
        entry(
            versions={"keras": "<2.2.5"},
            reason="its own",
            results={known.result_key(other): fingerprint.of_result(other)},
        ),  # fmt: skip
        2,
    )
    entries = [own, recorded] if release_entry_first else [recorded, own]
    applied = known.apply([other], entries, versions=REPORTED)
    assert other.status == Status.ERROR and other.changed is None and other.known == "its own"
    assert all("changed" not in row for row in applied.counts)
    alone = result(R224, message="IndexError: index 3 is out of bounds")
    applied = known.apply([alone], [recorded], versions=REPORTED)
    assert alone.status == Status.CHANGED and alone.known is None
    assert applied.counts[0]["changed"] == 1


KNOWN = """# releases of keras on tensorflow1
- op: batch_dot
  case: "rank4_*"
  backend: tensorflow1
  versions: {keras: "==2.2.4"}   # the rewrite of keras PR 11458 came in 2.2.5
  status: error
  reason: keras 2.2.4's batch_dot raises for a 4-D x 3-D batch

- op: batch_dot
  case: rank3_rank3
  backend: "tensorflow1[keras=2.2.4]"
  status: error
  reason: named by the release itself
"""


def test_record_round_trip_of_release_results(tmp_path):
    path = tmp_path / "known.yaml"
    path.write_text(KNOWN)
    entries = known.load(str(path))
    results = [
        result(R224, case="rank4_rank3", mode="eager"),
        result(R224, case="rank4_rank3", mode="symbolic"),
        result(R224, case="rank3_rank3"),
        result(R231, case="rank4_rank3", status="pass", message=""),
        result(R231, case="rank3_rank3", status="pass", message=""),
        result("tensorflow1", case="rank4_rank3", status="pass", message=""),
    ]
    text = path.read_text()
    root, _ = files.parse_yaml(str(path), text)
    done = known_record.record(text, root, entries, results, versions=REPORTED)
    assert (done.entries, done.results) == (2, 3)
    assert "# the rewrite of keras PR 11458 came in 2.2.5" in done.text
    path.write_text(done.text)
    first, second = known.load(str(path))
    assert sorted(first.results or {}) == [
        f"batch_dot rank4_rank3 {R224} eager",
        f"batch_dot rank4_rank3 {R224} symbolic",
    ]
    assert list(second.results or {}) == [f"batch_dot rank3_rank3 {R224} eager"]
    assert first.to_dict()["versions"] == {"keras": "==2.2.4"}
    fresh = [Result(**{**r.__dict__, "known": None, "changed": None}) for r in results]
    applied = known.apply(fresh, [first, second], versions=REPORTED)
    assert [r.known is not None for r in fresh] == [True, True, True, False, False, False]
    assert applied.stale == []


def test_record_writes_a_releases_result_only_where_it_differs_from_the_bases(tmp_path):
    """The base's record stands for a release's result with the same fingerprint: recorded once, under the base."""
    path = tmp_path / "known.yaml"
    path.write_text('- op: batch_dot\n  case: "rank*"\n  backend: tensorflow1\n  status: error\n  reason: r\n')
    entries = known.load(str(path))
    results = [
        result("tensorflow1", case="rank4_rank3"),
        result(R231, case="rank4_rank3"),  # as the base fails: the base's record stands for it
        result(R224, case="rank4_rank3", message="ValueError: other"),  # otherwise: its own record
        result(R224, case="rank3_rank3"),  # the base did not run this case: its own record
    ]
    text = path.read_text()
    root, _ = files.parse_yaml(str(path), text)
    done = known_record.record(text, root, entries, results, versions=REPORTED)
    path.write_text(done.text)
    [again] = known.load(str(path))
    assert sorted(again.results or {}) == [
        f"batch_dot rank3_rank3 {R224} eager",
        "batch_dot rank4_rank3 tensorflow1 eager",
        f"batch_dot rank4_rank3 {R224} eager",
    ]
    fresh = [Result(**{**r.__dict__, "known": None, "changed": None}) for r in results]
    applied = known.apply(fresh, [again], versions=REPORTED)
    assert all(r.known == "r" for r in fresh) and applied.stale == []


def test_record_refuses_an_entry_whose_range_holds_results_it_does_not_explain(tmp_path):
    path = tmp_path / "known.yaml"
    path.write_text(KNOWN.split("\n\n")[0] + "\n")
    entries = known.load(str(path))
    text = path.read_text()
    root, _ = files.parse_yaml(str(path), text)
    with pytest.raises(KbtoolError) as info:
        known_record.record(text, root, entries, [result(R224, status="pass", message="")], versions=REPORTED)
    assert str(info.value).startswith("entry 1 (batch_dot): stale: explains none of the 1 results it targets")


@pytest.mark.backends
def test_a_release_at_the_locked_version_has_the_base_backends_known_differences(tmp_path):
    """`tensorflow1[keras=2.3.1]` is tensorflow1 at its lock: the shipped entries for tensorflow1 explain it."""
    out = tmp_path / "r.json"
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    for backend in (R231, "tensorflow1"):
        proc = subprocess.run(
            [sys.executable, "-m", "kbtool", "check", "--op", "batch_dot", "--op", "mean", "--backend", backend]
            + ["-o", str(out)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        report = json.loads(out.read_text())
        (info,) = report["backends"]
        assert info["status"] == "available" and info["versions"]["keras"] == "2.3.1"
        ran = [r for r in report["results"] if r["backend"] == backend]
        unexplained = [r for r in ran if r["status"] != "pass" and r.get("known") is None]
        assert ran and unexplained == []
        assert any(r.get("known") for r in ran)  # mean's tensorflow1 entries explain the release's results


def test_the_versions_lookup_takes_the_reported_ones_first_and_a_lock_only_for_a_backend_that_reported_none():
    derived = Result(op="abs", case="x", backend="pkg.mod@tensorflow1", mode="eager", status=Status.ERROR)
    derived.inherits = "tensorflow1"
    lookup = known.Versions({"pkg.mod@tensorflow1": {"Keras": "9"}}, {"tensorflow1": {"keras": "1"}})
    assert lookup.of(derived) == {"keras": "9"}  # its own worker's, package names normalised
    assert known.Versions({"tensorflow1": {"keras": "2"}}).of(derived) == {"keras": "2"}  # else its base's
    assert known.Versions(None, {"tensorflow1": {"keras": "1"}}).of(derived) == {"keras": "1"}  # else the lock
    assert known.Versions().of(derived) == {}  # else none: in no range
    read = []

    def read_lock(recipe):
        read.append(recipe.name)
        return {"keras": "keras==2.3.1", "tensorflow": "tensorflow==1.15.5", "h5py": "h5py==2.10.0"}

    results = [result("tensorflow1"), result(R224), result("theano"), result("tensorflow1")]
    found = known.lookup(results, {"theano": {"theano": "1.0.5"}}, read_lock)
    assert found.of(results[0]) == {"keras": "2.3.1", "tensorflow": "1.15.5"}  # the packages its worker reports
    assert found.of(results[1])["keras"] == "2.2.4"  # a release's pins over its base's lock
    assert found.of(results[2]) == {"theano": "1.0.5"}
    # once for each backend that reported nothing (tensorflow1, and the release, layered on it), none for theano
    assert read == ["tensorflow1", "tensorflow1", R224]


def test_apply_reads_no_file(monkeypatch):
    import builtins

    results = [result(R224), result("tensorflow1")]
    versions = known.lookup(results, None, envs.read_lock)  # the caller reads the locks

    def refuse(*args, **kwargs):
        raise AssertionError(f"apply opened {args[:1]}")

    monkeypatch.setattr(builtins, "open", refuse)
    assert explained([entry(versions={"keras": "<2.2.5"})], results, versions) == {R224: "r", "tensorflow1": None}
