"""The rules that make known differences precise enough to gate on (issue #8): entries name their ops, narrow them by
case or message and name backends kbtool knows; recorded entries explain exactly the results they recorded while
their fingerprints hold (a known result that fails differently is `changed`), dead entries are stale;
`verified_by` entries explain a result only where the variant of the same call passes; Theano's kernel-flipped
variants."""

import io
import os

import numpy as np
import pytest
from rich.console import Console

from kbtool import files, known
from kbtool.errors import KbtoolError
from kbtool.known import fingerprint, rules
from kbtool.reports import html, markdown, terminal
from kbtool.reports.report import validate as validate_report
from kbtool.reports.verdict import summarize
from kbtool.results import Result, Status
from kbtool.runners import registry
from kbtool.runners.recipes import keras2
from kbtool.runners.recipes import variants as flipping
from kbtool.specs import loader
from kbtool.specs.cases import Case

from .helpers import HEADER

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = (
    HEADER
    + """  sum:
    category: reduce
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
    cases:
      - {id: int32, inputs: [{shape: [2], dtype: int32}]}
      - {id: float, inputs: [{shape: [2]}]}
  conv2d:
    category: conv
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}, {name: kernel, kind: tensor, weight: true}]
    cases:
      - {id: same, inputs: [{shape: [1, 4, 4, 1]}, {shape: [3, 3, 1, 1]}]}
"""
)
NAMES = ", ".join(registry.BUILTIN)  # the message lists every built-in backend, in the registry's order


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "ops.yaml"
    path.write_text(SPEC)
    return loader.load(str(path))


def entry(**kw):
    out = {"op": "sum", "case": "int32", "backend": "theano", "reason": "upcast", "count": 1}
    out.update(kw)
    return {k: v for k, v in out.items() if v is not None}


def result(**kw):
    record = {
        "op": "sum",
        "case": "int32",
        "backend": "theano",
        "mode": "eager",
        "status": "fail",
        "message": "dtype int64 != reference int32 (values agree)",
    }
    record.update(kw)
    return Result(**record)


# ---- every entry lists its ops, narrows them, names known backends, records a count ----------------------------------

NOT_AN_OP = "op {} is not an op name (an entry lists the ops it is about; no glob such as '*')"
UNKNOWN_BACKEND = (
    "backend {} names no backend kbtool knows (" + NAMES + ", or a custom module spelled out, such as "
    "my_package.my_module@theano)"
)
NARROWS_NOTHING = "narrows nothing: give a case glob other than '*' or a match regex"


@pytest.mark.parametrize(
    "kw, problems",
    [
        ({}, []),
        # ops by name only
        ({"op": "*"}, [NOT_AN_OP.format("'*'")]),
        ({"op": "s?m"}, [NOT_AN_OP.format("'s?m'")]),
        ({"op": "conv*"}, [NOT_AN_OP.format("'conv*'")]),
        ({"op": ["sum", "[sc]*"]}, [NOT_AN_OP.format("'[sc]*'")]),
        ({"op": []}, ["op is an empty list"]),
        # a case glob other than every case, or a non-empty regex
        ({"case": None}, [NARROWS_NOTHING]),
        ({"case": "*"}, [NARROWS_NOTHING]),
        ({"case": ["int32", "**"]}, [NARROWS_NOTHING]),
        ({"case": []}, [NARROWS_NOTHING]),
        ({"case": None, "match": ""}, [NARROWS_NOTHING]),
        ({"case": None, "match": "int64"}, []),
        ({"case": "*", "match": "int64"}, []),
        ({"case": "*_same"}, []),
        ({"case": ["x", 1]}, ["case must be a glob or a list of globs"]),  # reported as mistyped, not as too wide
        # backends kbtool knows: globs over the built-in names, custom modules spelled out
        ({"backend": "*"}, []),
        ({"backend": "th*"}, []),
        ({"backend": ["numpy", "cntk"]}, []),
        ({"backend": "tf"}, [UNKNOWN_BACKEND.format("'tf'")]),
        ({"backend": ["theano", "jax"]}, [UNKNOWN_BACKEND.format("'jax'")]),
        ({"backend": "*.*"}, [UNKNOWN_BACKEND.format("'*.*'")]),
        ({"backend": "my_pkg.*"}, [UNKNOWN_BACKEND.format("'my_pkg.*'")]),
        ({"backend": "my_pkg.my_mod"}, []),
        ({"backend": "my_pkg.my_mod@theano"}, []),
        ({"backend": "my_pkg.my_mod@jax"}, [UNKNOWN_BACKEND.format("'my_pkg.my_mod@jax'")]),
        ({"backend": "my_pkg.my_mod@"}, [UNKNOWN_BACKEND.format("'my_pkg.my_mod@'")]),
        ({"backend": "plainname"}, [UNKNOWN_BACKEND.format("'plainname'")]),
        ({"backend": []}, ["backend is an empty list"]),
        # a recorded count
        ({"count": None}, []),  # `kbtool known record` writes it: an entry not yet recorded has none
        ({"count": 0}, []),
        ({"count": -1}, ["count must be a whole number >= 0, not -1"]),
        ({"count": 1.5}, ["count must be a whole number >= 0, not 1.5"]),
        ({"count": True}, ["count must be a whole number >= 0, not True"]),
        ({"count": "3"}, ["count must be a whole number >= 0, not '3'"]),
        # verified_by: a variant's case-id suffix
        ({"verified_by": ".kernel_flipped"}, []),
        (
            {"verified_by": "kernel_flipped"},
            ["verified_by must be a variant's case-id suffix such as .kernel_flipped, not 'kernel_flipped'"],
        ),
        (
            {"verified_by": ".a.b"},
            ["verified_by must be a variant's case-id suffix such as .kernel_flipped, not '.a.b'"],
        ),
        ({"verified_by": 1}, ["verified_by must be a variant's case-id suffix such as .kernel_flipped, not 1"]),
        # every problem, in order
        (
            {"op": "*", "case": "*", "backend": "jax", "count": None},
            [NOT_AN_OP.format("'*'"), UNKNOWN_BACKEND.format("'jax'"), NARROWS_NOTHING],
        ),
    ],
)
def test_precision_rules(kw, problems):
    item = entry(**kw)
    assert known.validate([item]) == ["entry 1 ({}): {}".format(files.clip(item["op"], 60), p) for p in problems]


@pytest.mark.parametrize(
    "kw, problems",
    [
        ({}, []),
        ({"op": "conv2d", "case": "same"}, []),
        # case globs may name the variants a backend runs of the op's cases, and only those
        ({"op": "conv2d", "case": "same.kernel_flipped"}, []),
        ({"op": "conv2d", "case": "*.kernel_flipped"}, []),
        ({"op": "sum", "case": "int32.kernel_flipped"}, ["case 'int32.kernel_flipped' names no case of sum"]),
        ({"op": "conv2d", "case": "same.bogus"}, ["case 'same.bogus' names no case of conv2d"]),
        # verified_by must be a variant some backend runs for every op it names
        ({"op": "conv2d", "case": "same", "verified_by": ".kernel_flipped"}, []),
        (
            {"op": ["conv2d", "sum"], "case": "same", "verified_by": ".kernel_flipped"},
            ["verified_by '.kernel_flipped': no backend runs that variant of sum"],
        ),
        (
            {"op": "conv2d", "case": "same", "verified_by": ".other"},
            ["verified_by '.other': no backend runs that variant of conv2d"],
        ),
    ],
)
def test_rules_against_the_spec(spec, kw, problems):
    item = entry(**kw)
    assert known.validate([item], spec) == ["entry 1 ({}): {}".format(files.clip(item["op"], 60), p) for p in problems]


def test_load_names_the_file_and_line_of_the_first_problem(tmp_path, spec):
    path = tmp_path / "known.yaml"
    path.write_text(
        "# header\n- {op: sum, case: int32, backend: theano, reason: r, count: 0}\n\n"
        "- op: '*'\n  match: x\n  backend: theano\n  reason: r\n  count: 0\n"
        "- {op: sum, backend: tf, reason: r, count: 0}\n"
    )
    with pytest.raises(KbtoolError) as info:
        known.load(str(path), spec)
    assert str(info.value) == "{}:4: entry 2 (*): {} (and 2 more problems)".format(path, NOT_AN_OP.format("'*'"))


def test_the_shipped_file_obeys_every_rule():
    shipped = loader.load()
    entries = [e.to_dict() for e in known.load(spec=shipped)]
    assert entries and known.validate(entries, shipped) == []
    for item in entries:
        ops = item["op"] if isinstance(item["op"], list) else [item["op"]]
        assert all(op in shipped.ops for op in ops), item
        assert rules._narrows(item) and isinstance(item["count"], int), item


# ---- exact known results: recorded fingerprints -----------------------------------------------------------------------

VALUES = {
    "expected_shape": [2],
    "actual_shape": [2],
    "expected_dtype": "float32",
    "actual_dtype": "float32",
    "mismatched": 2,
    "size": 2,
    "first_index": [0],
    "mask": "0badf00d",
}


def differing(scale_class=-2, **kw):
    """A values-differ result whose largest difference is of the power of ten `scale_class`."""
    details = dict(VALUES, max_abs_diff=3 * 10.0**scale_class)
    record = {"case": "float", "message": "2 of 2 values differ (max abs diff 0.03, ...)", "details": details}
    record.update(kw)
    return result(**record)


def recorded(item, *records):
    """`item` as `kbtool known record` leaves it after a run that gave `records`."""
    return dict(item, results={known.result_key(r): fingerprint.of_result(r) for r in records}, count=len(records))


def test_a_recorded_entry_explains_its_results_while_their_fingerprints_hold():
    item = recorded(entry(case=["int32", "float"]), result(), differing())
    again = [result(), differing()]
    applied = known.apply(again, [item], whole_spec=False, all_cases=False)
    assert [r.known for r in again] == ["upcast", "upcast"] and applied.stale == []
    assert "unrecorded" not in applied.counts[0] and applied.counts[0]["explained"] == 2


def test_a_known_result_that_fails_differently_is_changed_in_a_one_op_run():
    item = recorded(entry(case=["int32", "float"]), differing(scale_class=-2))
    now = differing(scale_class=0)  # 1% off when recorded, 100% off now
    applied = known.apply([now], [item], whole_spec=False, all_cases=False)
    assert now.status == Status.CHANGED and now.known is None
    assert now.changed == {
        "entry": 1,
        "reason": "upcast",
        "status": "fail",
        "recorded": fingerprint.of_result(differing(scale_class=-2)),
        "now": fingerprint.of_result(now),
    }
    assert " 1e-2 @" in now.changed["recorded"] and " 1e0 @" in now.changed["now"]
    assert applied.counts[0]["changed"] == 1 and applied.stale == []
    report = {"backends": [], "results": [now.as_dict()], "stale_known_differences": [], "known_differences": []}
    summary = summarize(report)
    assert summary["divergences"] == 1 and not summary["ok"]


@pytest.mark.parametrize(
    "now",
    [
        result(status="error", message="TypeError: x"),  # another status
        result(message="dtype int16 != reference int32 (values agree)"),  # another message
        differing(details=dict(VALUES, max_abs_diff=0.03, mask="feedf00d")),  # other elements differ
        differing(details=dict(VALUES, max_abs_diff=0.03, first_index=[1])),
        differing(details=dict(VALUES, max_abs_diff=0.03, actual_dtype="float64")),
    ],
)
def test_every_part_of_the_fingerprint_counts(now):
    was = result() if now.case == "int32" else differing()
    item = recorded(entry(case=["int32", "float"], status=["fail", "error"]), was)
    known.apply([now], [item])
    assert now.status == Status.CHANGED and now.changed["recorded"] != now.changed["now"]


def test_a_result_the_entry_never_recorded_is_unexplained_even_where_its_regex_matches():
    item = recorded(entry(case=["int32", "float"], match="dtype int64"), result())
    other = result(case="float")  # the same message, a result the run that recorded the entry did not have
    applied = known.apply([result(), other], [item])
    assert other.known is None and other.status == Status.FAIL and applied.counts[0]["explained"] == 1


def test_a_recorded_result_that_passes_now_makes_the_entry_stale_in_any_run():
    item = recorded(entry(case=["int32", "float"]), result(), differing())
    applied = known.apply([result(), differing(status="pass")], [item], whole_spec=False, all_cases=False)
    (stale,) = applied.stale
    assert stale["note"].startswith("1 of its 2 recorded results pass now (sum float theano eager)")


def test_a_recorded_entry_none_of_whose_results_ran_is_stale_only_where_their_backends_ran():
    # recorded on theano and cntk (its case passes elsewhere); the same entry targets every backend
    item = recorded(entry(backend="*", case="int32"), result(), result(backend="cntk"))
    elsewhere = [result(backend="mxnet", status="pass")]
    assert known.apply(elsewhere, [item]).stale == []  # a run of mxnet alone cannot judge it
    renamed = [result(backend="mxnet", status="pass"), result(case="int32", backend="cntk", mode="symbolic")]
    (stale,) = known.apply(renamed, [item]).stale  # cntk ran, and none of the recorded results did
    assert stale["note"] == "none of its 2 recorded results ran (2 results checked)"


def test_a_record_of_several_ways_explains_each_and_any_stands_for_one_part():
    crash = result(status="crash", message="worker killed by signal SIGABRT: ...")
    item = recorded(entry(status=["fail", "crash"]), result())
    item["results"]["sum int32 theano eager"] = [fingerprint.of_result(crash), fingerprint.of_result(result())]
    assert known.validate([item]) == []
    for now in (result(), result(status="crash", message="worker killed by signal SIGABRT: ...")):
        known.apply([now], [item])
        assert now.known == "upcast", now
    other = result(message="dtype int16 != reference int32 (values agree)")
    known.apply([other], [item])
    assert other.status == Status.CHANGED and " or " in other.changed["recorded"]
    # ANY: the values' verdict may be anything; the status, message, shape and dtype still hold
    was = fingerprint.of_result(differing(scale_class=-1))
    varies = recorded(entry(case="float"), differing())
    varies["results"]["sum float theano eager"] = was.rsplit("values: ", 1)[0] + "values: " + fingerprint.ANY
    for now, explained in (
        (differing(scale_class=12), True),
        (differing(details=dict(VALUES, max_abs_diff=0.03, actual_dtype="float64")), False),
    ):
        known.apply([now], [varies])
        assert (now.known == "upcast") is explained, fingerprint.of_result(now)
    assert not fingerprint.holds("a | <any> | c", "a | b | x | c")  # ANY stays within one part


def test_record_mode_reads_regexes_and_ignores_the_records():
    item = recorded(entry(case=["int32", "float"]), result())
    other = result(case="float")
    known.apply([other], [item], by_regex=True)
    assert other.known == "upcast"


def test_an_entry_that_only_explains_what_earlier_entries_took_is_dead():
    first, second = entry(case=["int32", "float"], reason="first"), entry(reason="second")
    applied = known.apply([result(), result(case="float")], [first, second])
    (dead,) = applied.stale
    assert dead["reason"] == "second" and dead["note"].startswith("dead: the 1 results it explains")


def test_a_derived_backends_inherited_result_is_its_base_backends():
    item = recorded(entry(), result())
    derived = result(backend="pkg.mod@theano")
    derived.inherits = "theano"
    known.apply([derived], [item])
    assert derived.known == "upcast"
    own = result(backend="pkg.mod@theano")  # a function the module redefines: not the base's result
    known.apply([own], [item])
    assert own.known is None


@pytest.mark.parametrize(
    "results, problem",
    [
        ({"sum int32 theano": "x"}, "results: 'sum int32 theano' is not 'op case backend mode'"),
        ({"sum int32 cntk eager": "x"}, "results: 'sum int32 cntk eager' is not a result the entry targets"),
        ({"max int32 theano eager": "x"}, "results: 'max int32 theano eager' is not a result the entry targets"),
        ({"sum int32 theano eager": 3}, "results must map 'op case backend mode' to a fingerprint"),
        ({"sum int32 theano eager": []}, "results must map 'op case backend mode' to a fingerprint"),
        ({"sum int32 theano eager": ["x", "x"]}, "results must map 'op case backend mode' to a fingerprint"),
        ({"sum int32 theano eager": ["x", 3]}, "results must map 'op case backend mode' to a fingerprint"),
        ({"sum int32 theano eager": "x", "sum int32 theano symbolic": "y"}, "count is 1 but 2 results are recorded"),
    ],
)
def test_recorded_results_are_checked(results, problem):
    problems = known.validate([entry(results=results)])
    assert len(problems) == 1 and problems[0].startswith("entry 1 (sum): " + problem), problems


def test_a_result_is_recorded_by_one_entry():
    item = entry(results={"sum int32 theano eager": "x"})
    problems = known.validate([item, dict(item, reason="again")])
    assert problems == [
        "entry 2 (sum): result 'sum int32 theano eager' is recorded by entry 1 too (a result is explained by one entry)"
    ]


# ---- verified_by ---------------------------------------------------------------------------------------------------------

FLIPPED = ".kernel_flipped"
TRUE_CONV = {
    "op": "conv2d",
    "case": ["same", "strided_same"],
    "backend": "theano",
    "status": "fail",
    "verified_by": FLIPPED,
    "reason": "true convolution",
    "count": 1,
}
OFFSET = {
    "op": "conv2d",
    "case": "strided_same" + FLIPPED,
    "backend": "theano",
    "status": "fail",
    "reason": "window offset",
    "count": 1,
}


def conv(case, status="fail", mode="eager", backend="theano"):
    return Result(
        op="conv2d",
        case=case,
        backend=backend,
        mode=mode,
        status=status,
        message="values differ" if status != "pass" else "",
    )


@pytest.mark.parametrize("variant_status, explained", [("pass", True), ("fail", False), (None, False)])
def test_verified_by_needs_the_variant_to_pass(variant_status, explained):
    records = [conv("same")] + ([conv("same" + FLIPPED, variant_status)] if variant_status else [])
    applied = known.apply(records, [TRUE_CONV])
    assert records[0].known == ("true convolution" if explained else None)
    assert applied.counts[0]["explained"] == int(explained)


def test_verified_by_looks_at_the_same_backend_and_mode():
    records = [
        conv("same"),
        conv("same" + FLIPPED, "pass", mode="symbolic"),
        conv("same" + FLIPPED, "pass", backend="cntk"),
    ]
    known.apply(records, [TRUE_CONV])
    assert records[0].known is None


@pytest.mark.parametrize("order", [(TRUE_CONV, OFFSET), (OFFSET, TRUE_CONV)])
def test_verified_by_accepts_a_variant_explained_by_another_cause(order):
    # strided 'same': flipping the kernel back leaves the window offset, recorded on the variant's results
    records = [conv("strided_same"), conv("strided_same" + FLIPPED)]
    applied = known.apply(records, list(order))
    assert [r.known for r in records] == ["true convolution", "window offset"]
    assert applied.stale == []
    # entries are numbered and listed in file order, whichever is applied first
    assert [c["reason"] for c in applied.counts] == [e["reason"] for e in order]


def test_verified_by_does_not_accept_a_variant_explained_by_a_verified_by_entry():
    other = dict(TRUE_CONV, case="*", reason="another verified entry")
    records = [conv("same"), conv("same" + FLIPPED)]
    known.apply(records, [TRUE_CONV, other])
    assert records[0].known is None and records[1].known is None


def test_a_verified_by_entry_that_explains_nothing_is_stale():
    records = [conv("same"), conv("same" + FLIPPED, "fail")]
    applied = known.apply(records, [TRUE_CONV])
    assert [s["reason"] for s in applied.stale] == ["true convolution"]


# ---- Theano's kernel-flipped variants ------------------------------------------------------------------------------------


def make_case(op="conv2d", kernel_shape=(3, 2, 1, 4), **kw):
    arrays = [
        np.arange(32, dtype="float32").reshape(1, 4, 4, 2),
        np.arange(np.prod(kernel_shape), dtype="float32").reshape(kernel_shape),
    ]
    fields = dict(
        op=op,
        id="same",
        arrays=arrays,
        args=[{"tensor": 0}, {"tensor": 1, "weight": True}],
        kwargs={},
        modes=["eager", "symbolic"],
    )
    fields.update(kw)
    return Case(**fields)


@pytest.mark.parametrize(
    "op, kernel_shape, axes",
    [
        ("conv1d", (3, 2, 4), (0,)),
        ("conv2d", (3, 2, 1, 4), (0, 1)),
        ("conv3d", (2, 3, 2, 1, 4), (0, 1, 2)),
        ("conv2d_transpose", (3, 2, 4, 1), (0, 1)),
        ("conv3d_transpose", (2, 3, 2, 4, 1), (0, 1, 2)),
    ],
)
def test_kernel_flipped_variant_reverses_the_spatial_axes(op, kernel_shape, axes):
    case = make_case(op, kernel_shape)
    (variant,) = flipping.kernel_flipped_variants(case)
    assert variant.id == "same.kernel_flipped" and variant.op == op
    assert np.array_equal(variant.arrays[1], np.flip(case.arrays[1], axis=axes))
    assert not np.array_equal(variant.arrays[1], case.arrays[1])
    assert variant.arrays[0] is case.arrays[0] and variant.args == case.args and variant.modes == case.modes
    assert np.array_equal(case.arrays[1], np.arange(np.prod(kernel_shape)).reshape(kernel_shape))  # not in place


def test_kernel_flipped_variant_by_keyword():
    case = make_case(args=[{"tensor": 0}], kwargs={"kernel": {"tensor": 1}})
    (variant,) = flipping.kernel_flipped_variants(case)
    assert np.array_equal(variant.arrays[1], case.arrays[1][::-1, ::-1])


@pytest.mark.parametrize(
    "kw",
    [
        {"op": "depthwise_conv2d"},  # Theano flips the depthwise kernel itself: a cross-correlation like TensorFlow's
        {"op": "separable_conv2d"},
        {"op": "local_conv2d"},
        {"grad": True},
        {"raises": "ValueError"},
        {"stats": {"mean": [0, 1]}},
        {"shown": [{"docs": ["ko-2.2"], "value": 1}]},
        {"args": [{"tensor": 0}]},  # no kernel
        {"args": [{"tensor": 0}, {"value": [1, 2]}]},
        {"args": [{"tensor": 1}, {"tensor": 1}]},  # the kernel array is also the data
        {"args": [{"tensor": 0}, {"tensor": 7}]},
        {"kernel_shape": (4, 8)},  # no spatial axis
    ],
)
def test_no_kernel_flipped_variant(kw):
    assert flipping.kernel_flipped_variants(make_case(**kw)) == []


def test_the_theano_recipe_runs_the_variants():
    assert keras2.THEANO.variants is flipping.kernel_flipped_variants
    assert keras2.THEANO.variant_suffixes == {FLIPPED: flipping.FLIPPED_KERNEL_OPS}
    # kbtool.known reads the suffixes from the recipes' data (the registry), never from one backend's module
    assert registry.variant_suffixes("conv3d") == [FLIPPED] and registry.variant_suffixes("sum") == []
    assert known.variant_suffixes("conv3d") == [FLIPPED] and known.variant_suffixes("sum") == []


def test_variants_of_the_shipped_convolutions():
    from kbtool.specs.cases import cases_for

    shipped = loader.load()
    for op in flipping.FLIPPED_KERNEL_OPS:
        variants = [v for c in cases_for(shipped, op) for v in flipping.kernel_flipped_variants(c)]
        assert variants, op
        assert all(v.id.endswith(FLIPPED) for v in variants)


# ---- reports ---------------------------------------------------------------------------------------------------------


def grown_report():
    rows = [
        {
            "entry": 3,
            "op": ["conv2d", "conv3d"],
            "backend": "theano",
            "reason": "true <convolution>",
            "targeted": 9,
            "explained": 7,
            "named": 7,
            "count": 4,
            "grown": True,
            "grown_by": 3,
        },
        {
            "entry": 4,
            "op": "sum",
            "backend": "cntk",
            "reason": "upcast",
            "targeted": 2,
            "explained": 2,
            "named": 2,
            "count": 2,
        },
    ]
    return {
        "schema_version": 1,
        "kbtool": "0",
        "created": "now",
        "seed": 0,
        "spec": {"path": "x", "ops": 2, "cases": 2},
        "filters": [],
        "backends": [],
        "results": [],
        "known_differences": rows,
        "stale_known_differences": [],
        "wall_seconds": 1.0,
        "summary": {
            "per_backend": {},
            "case_seconds": {},
            "results": 0,
            "divergences": 0,
            "stale": 0,
            "unavailable_backends": [],
            "could_not_start": [],
            "ok": True,
        },
    }


def test_report_schema_takes_count_and_growth():
    report = grown_report()
    assert validate_report(report) == []
    report["known_differences"][1]["grown_by"] = 1
    assert validate_report(report) != []  # grown_by without grown
    del report["known_differences"][1]["grown_by"]
    report["known_differences"][0]["grown"] = False
    assert validate_report(report) != []


def changed_report():
    report = grown_report()
    report["known_differences"][0].pop("grown"), report["known_differences"][0].pop("grown_by")
    report["known_differences"][0]["changed"] = 1
    report["results"] = [
        dict(
            differing(scale_class=0).as_dict(),
            status="changed",
            repro="kbtool check --op sum",
            changed={
                "entry": 3,
                "reason": "true <convolution>",
                "status": "fail",
                "recorded": "fail | a",
                "now": "fail | b",
            },
        )
    ]
    report["summary"] = summarize(report)
    return report


def test_terminal_shows_a_changed_result_with_both_fingerprints():
    console = Console(file=io.StringIO(), width=300)
    report = changed_report()
    assert validate_report(report) == []
    terminal.render(report, console)
    out = console.file.getvalue()
    assert "changed known result: sum float on theano (eager), entry 3: recorded fail | a; now fail | b" in out
    assert out.rstrip().splitlines()[-1].endswith("1 divergence")


def test_markdown_lists_counts_and_changed_results():
    text = markdown.render(changed_report())
    section = text.split("Known-difference entries", 1)[1]
    assert "**1 known result changed**" in text
    assert "- sum float on theano (eager), entry 3: recorded `fail | a`; now `fail | b`" in text
    assert "| 3 | conv2d, conv3d | theano | 4 | 7 | **1** | true &lt;convolution&gt; |" in section
    assert "| 4 | sum | cntk | 2 | 2 |  | upcast |" in section


def test_html_lists_changed_results():
    page = html.render(changed_report())
    assert (
        "<li>sum float on theano (eager), entry 3: recorded <code>fail | a</code>; now <code>fail | b</code></li>"
    ) in page
    assert "<strong>1</strong>" in page
