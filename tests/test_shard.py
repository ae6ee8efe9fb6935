"""`kbtool check --shard K/N`: the partition (deterministic, disjoint, covering, balanced by specs/timings.json),
its plan, the timings file and scripts/record-timings.py."""

import json
import os
import random
import subprocess
import sys

import pytest

from kbtool import shard
from kbtool.errors import KbtoolError
from kbtool.plan import Selection, make_plan, select_ops, select_work
from kbtool.specs import loader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def keys(spec):
    """(op, case id) of every case a default check plans, in plan order."""
    return [(case.op, case.id) for _, case in select_work(spec, select_ops(spec))]


@pytest.fixture(scope="module")
def timings():
    return shard.load_timings()


def loads(keys, parts, timings):
    seconds = shard.estimates(keys, timings)
    return [sum(seconds[i] for i in part) for part in parts]


@pytest.mark.parametrize("text, expected", [("1/1", (1, 1)), ("2/4", (2, 4)), (" 3 / 3 ", (3, 3))])
def test_parse(text, expected):
    assert shard.parse(text) == expected


@pytest.mark.parametrize(
    "text, says",
    [
        ("0/3", "between 1 and N"),
        ("4/3", "between 1 and N"),
        ("1/0", "between"),
        ("a/b", "takes K/N"),
        ("2", "takes K/N"),
        ("-1/2", "takes K/N"),
        ("1/2/3", "takes K/N"),
    ],
)
def test_parse_refuses(text, says):
    with pytest.raises(KbtoolError, match=says):
        shard.parse(text)


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 16])
def test_parts_are_disjoint_and_cover_the_plan(keys, timings, count):
    parts = shard.partition(keys, count, timings)
    flat = [i for part in parts for i in part]
    assert sorted(flat) == list(range(len(keys)))  # every case once: disjoint and covering
    assert all(part == sorted(part) for part in parts)  # each part runs in the plan's order


def test_partition_is_deterministic_whatever_the_order_of_the_keys(keys, timings):
    first = [[keys[i] for i in part] for part in shard.partition(keys, 5, timings)]
    assert first == [[keys[i] for i in part] for part in shard.partition(keys, 5, timings)]
    shuffled = list(keys)
    random.Random(7).shuffle(shuffled)
    again = [{shuffled[i] for i in part} for part in shard.partition(shuffled, 5, timings)]
    assert again == [set(part) for part in first]


@pytest.mark.parametrize("count, tolerance", [(2, 1.01), (3, 1.01), (4, 1.01), (8, 1.02), (16, 1.05)])
def test_parts_of_the_real_spec_are_balanced_by_recorded_time(keys, timings, count, tolerance):
    parts = shard.partition(keys, count, timings)
    times = loads(keys, parts, timings)
    ratio = max(times) / min(times)
    assert ratio <= tolerance, f"max/min estimated seconds {ratio:.4f} over {count} shards: {times}"


def test_the_shipped_timings_know_nearly_every_planned_case(keys, timings):
    known = sum(1 for op, case in keys if case in timings.get(op, {}))
    assert known >= 0.95 * len(keys), "regenerate specs/timings.json: scripts/record-timings.py REPORT.json"


def test_unknown_cases_count_the_median_and_no_timings_spreads_by_count():
    timings = {"a": {"x": 1.0, "y": 3.0, "z": 100.0}}
    assert shard.estimates([("a", "x"), ("a", "new"), ("b", "other")], timings) == [1.0, 3.0, 3.0]
    keys = [("op", str(i)) for i in range(10)]
    parts = shard.partition(keys, 3, {})
    assert sorted(len(p) for p in parts) == [3, 3, 4]


def test_longest_first_onto_the_least_loaded_part():
    timings = {"o": {"a": 5.0, "b": 4.0, "c": 3.0, "d": 3.0, "e": 2.0, "f": 1.0}}
    keys = [("o", c) for c in "abcdef"]
    parts = shard.partition(keys, 2, timings)
    assert [[keys[i][1] for i in p] for p in parts] == [["a", "d", "f"], ["b", "c", "e"]]  # 9 and 9


def test_a_shard_with_no_case_is_refused():
    work = [({}, type("C", (), {"op": "o", "id": str(i)})()) for i in range(2)]
    with pytest.raises(KbtoolError, match="shard 3 gets no case"):
        shard.select(work, 3, 3, {})


@pytest.mark.parametrize(
    "text, says",
    [
        ("[1, 2]", "expected"),
        ("{nope", "not JSON"),
        ('{"a": {"b": -1}}', "expected"),
        ('{"a": {"b": true}}', "expected"),
    ],
)
def test_a_bad_timings_file_is_one_line(tmp_path, text, says):
    path = tmp_path / "timings.json"
    path.write_text(text)
    with pytest.raises(KbtoolError, match=says):
        shard.load_timings(str(path))
    assert shard.load_timings(str(tmp_path / "absent.json")) == {}


def test_timings_live_beside_the_spec():
    from kbtool import paths

    assert os.path.dirname(shard.timings_file()) == os.path.dirname(paths.spec_file())
    assert os.path.isfile(os.path.join(ROOT, "specs", "timings.json"))  # tests/test_packaging: in the wheel too


def test_plan_of_a_shard(spec):
    plans = [make_plan(spec, Selection(backends=["numpy"], shard=(k, 3))) for k in (1, 2, 3)]
    whole = make_plan(spec, Selection(backends=["numpy"]))
    ids = [(c.op, c.id) for p in plans for _, c in p.work]
    assert sorted(ids) == sorted((c.op, c.id) for _, c in whole.work) and len(set(ids)) == len(ids)
    for k, plan in enumerate(plans, 1):
        assert plan.shard == (k, 3) and plan.filters == [f"--shard {k}/3"]
        assert plan.whole_spec and not plan.all_cases and not plan.counts_comparable  # never judges staleness
        assert plan.shard_share.describe().startswith(f"shard {k}/3: {len(plan.work)} of {len(whole.work)} cases")
    assert whole.all_cases and whole.counts_comparable


def test_a_variant_case_runs_in_the_shard_of_its_case(spec):
    """Theano's .kernel_flipped variants are made from the planned case inside execute.py: they are not planned work,
    so no partition can separate them from their case."""
    plan = make_plan(spec, Selection(ops=["conv2d"], backends=["numpy"], shard=(1, 2)))
    assert not any(case.variant_of for _, case in plan.work)


# ---------------------------------------------------------------------------- scripts/record-timings.py


def record(tmp_path, report):
    source = tmp_path / "report.json"
    source.write_text(json.dumps(report))
    target = tmp_path / "timings.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "record-timings.py"), str(source), "--file", str(target)],
        capture_output=True,
        text=True,
    )
    return proc, target


def test_record_timings_sums_backends_modes_and_variants(tmp_path):
    from .helpers import synthetic

    report = synthetic(
        [
            ("conv2d", "basic", "numpy", "eager", "pass", 1.0),
            ("conv2d", "basic", "theano", "symbolic", "pass", 2.0),
            ("conv2d", "basic.kernel_flipped", "theano", "symbolic", "pass", 0.5),
            ("abs", "x", "numpy", "eager", "pass", 0.25),
        ]
    )
    proc, target = record(tmp_path, report)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(target.read_text()) == {"abs": {"x": 0.25}, "conv2d": {"basic": 3.5}}


def test_record_timings_refuses_a_filtered_run(tmp_path):
    from .helpers import synthetic

    report = synthetic([("abs", "x", "numpy", "eager", "pass", 0.25)], filters=["--shard 1/2"])
    proc, target = record(tmp_path, report)
    assert proc.returncode == 2 and "filtered (--shard 1/2)" in proc.stderr and not target.exists()


def test_shard_errors_say_what_was_given_and_what_is_expected(tmp_path):
    with pytest.raises(KbtoolError) as info:
        shard.parse("2-4")
    assert str(info.value) == "--shard takes K/N, e.g. 2/4 (the 2nd of 4 parts), not '2-4'"
    with pytest.raises(KbtoolError) as info:
        shard.parse("5/4")
    assert str(info.value) == "--shard 5/4: K must be between 1 and N"
    bad = tmp_path / "timings.json"
    bad.write_text("{")
    with pytest.raises(KbtoolError, match=f"^{bad}: not JSON \\("):
        shard.load_timings(str(bad))
    bad.write_text('{"abs": {"basic": -1}}')
    with pytest.raises(KbtoolError) as info:
        shard.load_timings(str(bad))
    assert str(info.value) == (
        f"{bad}: expected {{op: {{case: seconds}}}} with seconds >= 0 (scripts/record-timings.py writes it)"
    )
    bad.write_text('{"abs": {"basic": 0}}')  # a case that took no measurable time is a time
    assert shard.load_timings(str(bad)) == {"abs": {"basic": 0}}


def test_the_shipped_timings_sit_beside_the_spec_and_given_timings_replace_them():
    from kbtool import paths

    assert shard.timings_file() == os.path.join(os.path.dirname(paths.spec_file()), "timings.json")
    assert shard.load_timings() == shard.load_timings(shard.timings_file()) != {}
    spec = loader.load()
    work = select_work(spec, ["abs", "mean"])
    heavy = {"abs": {case.id: 1000.0 for _, case in work if case.op == "abs"}}
    mine, share = shard.select(work, 1, 2, timings=heavy)
    assert share.total_seconds > 1000 * len(heavy["abs"]) - 1  # the given timings, not the shipped ones
    with pytest.raises(KbtoolError) as info:
        shard.select(work[:1], 2, 2, timings={})
    assert str(info.value) == "--shard 2/2: shard 2 gets no case (1 cases are selected; use at most 1 shards)"
