"""Known files as layers (#33): the shipped file always applies (unless --no-shipped-known), each --known adds to it
in order, an entry that repeats an earlier file's is refused unless it says `overrides: ID`, every entry knows its
file; reports reference the entries they applied by id and hash (--embed-known embeds them)."""

import json

import pytest
from click.testing import CliRunner

from kbtool import known
from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.known import KnownFiles, load_layers
from kbtool.repro import command
from kbtool.results import Result, Status
from kbtool.settings import RunSettings

# a tf_keras difference the shipped file explains (recorded; by_regex: by its status and match)
TF_MEAN = Result(
    op="mean",
    case="int32_input",
    backend="tensorflow",
    mode="eager",
    status=Status.FAIL,
    message="dtype int32 != reference float32",
)
MINE = "- op: abs\n  case: basic\n  backend: my_pkg.my_module@tensorflow\n  status: fail\n  reason: mine\n  count: 1\n"
ENTRY = "- op: sum\n  case: basic\n  backend: numpy\n  status: fail\n  match: {match}\n  reason: {reason}\n  count: 1\n"


def run(*args):
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def sum_fail(message="boom"):
    return Result(op="sum", case="basic", backend="numpy", mode="eager", status=Status.FAIL, message=message)


def test_a_users_file_adds_to_the_shipped_one_so_an_inherited_tf_keras_difference_stays_explained(tmp_path):
    mine = write(tmp_path, "mine.yaml", MINE)
    alone = load_layers(KnownFiles((mine,), shipped=False))
    layered = load_layers(KnownFiles((mine,)))
    assert [e.reason for e in alone] == ["mine"] and layered[-1].reason == "mine"
    assert len(layered) == len(load_layers()) + 1
    for entries, explained in ((alone, False), (layered, True)):
        result = Result(**TF_MEAN.__dict__)
        known.apply([result], entries, whole_spec=False, all_cases=False, by_regex=True)
        assert (result.known is not None) == explained
    # every entry knows its file, and its number there
    assert all(e.source.shipped and e.source.path.endswith("known_differences.yaml") for e in layered[:-1])
    assert not layered[-1].source.shipped and layered[-1].source.path.endswith("mine.yaml")
    assert layered[-1].number == 1 and layered[0].number == 1 and layered[-1].where.endswith("mine.yaml entry 1")


def test_two_files_apply_in_order(tmp_path):
    first = write(tmp_path, "a.yaml", ENTRY.format(match="boom", reason="from a"))
    second = write(tmp_path, "b.yaml", ENTRY.format(match="bo+m", reason="from b"))
    for order, reason in (((first, second), "from a"), ((second, first), "from b")):
        entries = load_layers(KnownFiles(order, shipped=False))
        result = sum_fail()
        applied = known.apply([result], entries, whole_spec=False, all_cases=False)
        assert result.known == reason
        assert [row["file"].rsplit("/", 1)[-1] for row in applied.counts] == [p.rsplit("/", 1)[-1] for p in order]


def test_an_entry_that_repeats_an_earlier_files_is_refused_in_one_line(tmp_path):
    first = write(tmp_path, "a.yaml", ENTRY.format(match="boom", reason="from a"))
    second = write(tmp_path, "b.yaml", ENTRY.format(match="boom", reason="reworded in b"))
    with pytest.raises(KbtoolError) as caught:
        load_layers(KnownFiles((first, second), shipped=False))
    (entry,) = load_layers(KnownFiles((first,), shipped=False))
    said = str(caught.value)
    assert (
        "\n" not in said and f"overrides: {entry.id}" in said and "b.yaml entry 1" in said and "a.yaml entry 1" in said
    )
    code, _, err = run("known", "list", "--no-shipped-known", "--known", first, "--known", second)
    assert code == 2 and err.count("\n") == 1 and f"overrides: {entry.id}" in err


def test_an_override_replaces_the_entry_it_names_and_the_listing_names_both_files(tmp_path):
    first = write(tmp_path, "a.yaml", ENTRY.format(match="boom", reason="from a") + MINE.replace("mine", "kept"))
    (target, kept) = load_layers(KnownFiles((first,), shipped=False))
    second = write(tmp_path, "b.yaml", ENTRY.format(match="boom", reason="from b") + f"  overrides: {target.id}\n")
    entries = load_layers(KnownFiles((first, second), shipped=False))
    assert [(e.reason, e.source.path.rsplit("/", 1)[-1]) for e in entries] == [("from b", "b.yaml"), ("kept", "a.yaml")]
    result = sum_fail()
    known.apply([result], entries, whole_spec=False, all_cases=False)
    assert result.known == "from b"
    code, out, _ = run("known", "list", "--no-shipped-known", "--known", first, "--known", second)
    assert code == 0 and "a.yaml:" in out and "b.yaml:" in out and f"(overrides {target.id})" in out
    code, out, _ = run("known", "list", "--no-shipped-known", "--known", first, "--known", second, "--json")
    listed = json.loads(out)
    assert [e["file"].rsplit("/", 1)[-1] for e in listed] == ["b.yaml", "a.yaml"] and listed[0]["overrides"] == [
        target.id
    ]
    code, out, _ = run("known", "show", kept.id, "--no-shipped-known", "--known", first, "--known", second)
    assert code == 0 and out.splitlines()[0].endswith("a.yaml entry 2")


@pytest.mark.parametrize(
    "overrides, says",
    [("sum-00000000", "no entry of an earlier known file has that id"), ("not an id", "overrides must be the id")],
)
def test_an_override_of_nothing_is_refused(tmp_path, overrides, says):
    first = write(tmp_path, "a.yaml", ENTRY.format(match="boom", reason="from a"))
    second = write(tmp_path, "b.yaml", ENTRY.format(match="x", reason="b") + f"  overrides: {overrides}\n")
    with pytest.raises(KbtoolError, match=says):
        load_layers(KnownFiles((first, second), shipped=False))


def test_a_file_given_twice_is_refused_and_the_shipped_file_named_is_one_layer(tmp_path):
    first = write(tmp_path, "a.yaml", "[]\n")
    code, _, err = run("known", "list", "--known", first, "--known", first)
    assert code == 2 and "given twice" in err and err.count("\n") == 1
    assert len(load_layers(KnownFiles(("specs/known_differences.yaml",)))) == len(load_layers())


def test_known_record_writes_the_last_known_file_and_says_so(tmp_path):
    assert KnownFiles(("a.yaml", "b.yaml")).record_target == "b.yaml"
    assert KnownFiles().record_target.endswith("known_differences.yaml")
    with pytest.raises(KbtoolError, match="no file to record into"):
        KnownFiles(shipped=False).record_target  # noqa: B018


def test_a_repro_carries_every_known_file_in_order():
    settings = RunSettings(known_paths=("a.yaml", "b.yaml"), shipped_known=False)
    failing = Result(op="abs", case="basic", backend="numpy", mode="eager", status=Status.FAIL, message="x")
    assert command(failing, settings=settings).endswith(" --no-shipped-known --known a.yaml --known b.yaml")


# ---------------------------------------------------------------------------------------------- small reports


@pytest.fixture(scope="module")
def dot_numpy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dot")
    code, out, _ = run("check", "--op", "dot", "--backend", "numpy", "--json", "-q")
    embedded = folder / "embedded.json"
    run("check", "--op", "dot", "--backend", "numpy", "--embed-known", "-q", "-o", str(embedded))
    return folder, code, out, json.loads(embedded.read_text())


def test_a_check_references_the_entries_it_applied_and_stays_small(dot_numpy):
    _, code, out, embedded = dot_numpy
    report = json.loads(out)
    assert len(out.encode()) < 100_000 and "known_entries" not in report
    assert report["known_files"][0] == {
        "path": "specs/known_differences.yaml",
        "sha256": report["known_files"][0]["sha256"],
        "shipped": True,
    }
    refs = report["known_refs"]
    assert refs and all(set(r) == {"id", "file", "entry", "sha256"} for r in refs)
    by_digest = {e.digest: e for e in load_layers()}
    assert all(by_digest[r["sha256"]].id == r["id"] for r in refs if r["file"] != "spec")
    # --embed-known: the same references, and each entry they name
    assert embedded["known_refs"] == refs and len(embedded["known_entries"]) == len(refs)


def test_merge_finds_referenced_entries_by_hash_and_says_what_to_pass_when_it_cannot(dot_numpy, tmp_path):
    folder, _, out, embedded = dot_numpy
    report = json.loads(out)
    path = tmp_path / "r.json"
    path.write_text(out)
    code, merged, err = run("report", "merge", str(path))
    assert code in (0, 1) and "Traceback" not in err and json.loads(merged)["known_refs"] == report["known_refs"]
    report["known_refs"][0]["sha256"] = "0" * 16  # an entry no file at hand holds
    path.write_text(json.dumps(report))
    code, _, err = run("report", "merge", str(path))
    assert code == 2 and err.count("\n") == 1 and "--known" in err and "--embed-known" in err
    # embedded entries need no file: merged with no shipped file at all
    path.write_text(json.dumps(embedded))
    code, merged, err = run("report", "merge", str(path), "--no-shipped-known")
    assert code in (0, 1) and "error" not in err, err


@pytest.mark.backends
def test_check_tensorflow_with_a_users_file_keeps_the_shipped_differences(tmp_path):
    mine = write(tmp_path, "mine.yaml", MINE)
    code, out, err = run("check", "--op", "mean", "--backend", "tensorflow", "--known", mine, "-q")
    assert code == 0, out + err


def test_parts_whose_known_files_hold_the_same_bytes_at_other_paths_merge(dot_numpy, tmp_path):
    # each CI job installs kbtool at its own path: the shipped file is the same file by its bytes
    _, _, out, _ = dot_numpy
    here, there = tmp_path / "here.json", tmp_path / "there.json"
    report = json.loads(out)
    results = report["results"]
    half = len(results) // 2
    here.write_text(json.dumps(dict(report, results=results[:half])))
    report["results"] = results[half:]
    elsewhere = "/runner/venv/lib/site-packages/kbtool/specs/known_differences.yaml"
    report["known_files"][0]["path"] = elsewhere
    for ref in report["known_refs"]:
        ref["file"] = elsewhere if ref["file"] == "specs/known_differences.yaml" else ref["file"]
    there.write_text(json.dumps(report))
    code, _, err = run("report", "merge", str(here), str(there))
    assert code in (0, 1) and "different known files" not in err, err
    report["known_files"][0]["sha256"] = "f" * 64  # other bytes: another file
    there.write_text(json.dumps(report))
    code, _, err = run("report", "merge", str(here), str(there))
    assert code == 2 and "different known files" in err
