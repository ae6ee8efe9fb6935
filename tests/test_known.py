"""Known differences: loading and validating the file, matching results, applying entries, counting and staleness."""

import builtins
import fnmatch
import locale

import pytest

from kbtool import known
from kbtool.errors import KbtoolError
from kbtool.known import globs, rules
from kbtool.results import Result, Status
from kbtool.specs import loader

from .helpers import HEADER

TINY_SPEC = """  sum:
    category: reduce
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
    cases:
      - {id: int32, inputs: [{shape: [2], dtype: int32}]}
      - {id: float, inputs: [{shape: [2]}]}
    examples:
      - id: doc
        docs: [ko-2.2]
        source: ">>> K.sum(x)"
        case: {inputs: [{value: [1, 2]}]}
        shown: [{docs: [ko-2.2], value: 3}]
  less:
    category: compare
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}, {name: y, kind: tensor}]
    cases:
      - {id: float, inputs: [{shape: [2]}, {shape: [2]}]}
  lesser:
    category: compare
    summary: x
    documented_in: [ko-2.2]
    alias_of: less
    signature: [{name: x, kind: tensor}, {name: y, kind: tensor}]
    cases:
      - {id: float, inputs: [{shape: [2]}, {shape: [2]}]}
  mean: &reduce
    category: reduce
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
    cases:
      - {id: float, inputs: [{shape: [2]}]}
  max: *reduce
  min: *reduce
"""
STATUS_WORDS = "fail, error, not_reached, unsupported, crash, timeout, could_not_start, nondeterministic"
KEY_WORDS = "op, case, backend, mode, device, status, precision, versions, match, reason, count, verified_by, every_call, overrides, results"


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "ops.yaml"
    path.write_text(HEADER + TINY_SPEC)
    return loader.load(str(path))


def entry(**kw):
    out = {"op": "sum", "backend": "theano", "reason": "upcast", "count": 1}
    out.update(kw)
    return out


def valid(**kw):
    """An entry that passes every rule: it names its op, narrows it by case, and has a count."""
    return entry(**dict({"case": "int32"}, **kw))


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


# ---- validate ------------------------------------------------------------------------------------------------------

NOT_A_LIST = ["expected a list of entries (op, backend, reason, count, ...)"]


@pytest.mark.parametrize(
    "entries, problems",
    [
        ([], []),
        ([valid()], []),
        ([valid(case="*", mode=["eager"], status="fail", match="int64")], []),
        # not a list of mappings
        ({"op": "sum"}, NOT_A_LIST),
        ("sum", NOT_A_LIST),
        (None, NOT_A_LIST),
        ([valid(), "sum"], NOT_A_LIST),
        ([[valid()]], NOT_A_LIST),
        # required keys: the rest of such an entry is not checked
        ([{"op": "sum"}], ["entry 1 lacks backend, reason"]),
        ([{}], ["entry 1 lacks op, backend, reason"]),
        ([{"backend": "x", "reason": "r", "bogus": 1}], ["entry 1 lacks op"]),
        ([valid(), {"op": "max", "backend": "x"}], ["entry 2 lacks reason"]),
        # unknown keys, sorted
        ([valid(zed=1, alpha=2)], [f"entry 1 (sum): unknown key alpha, zed (keys are {KEY_WORDS})"]),
        ([valid(source="spec")], [f"entry 1 (sum): unknown key source (keys are {KEY_WORDS})"]),
        # each glob field: a string or a list of strings
        ([valid(op=3)], ["entry 1 (3): op must be a glob or a list of globs"]),
        ([valid(case=["a", 1])], ["entry 1 (sum): case must be a glob or a list of globs"]),
        ([valid(backend=None)], ["entry 1 (sum): backend must be a glob or a list of globs"]),
        ([valid(mode={"eager": 1})], ["entry 1 (sum): mode must be a glob or a list of globs"]),
        ([valid(status=1)], ["entry 1 (sum): status must be a glob or a list of globs"]),
        ([valid(backend=[])], ["entry 1 (sum): backend is an empty list"]),
        # the reason is a sentence
        ([valid(reason="")], ["entry 1 (sum): reason must be a sentence"]),
        ([valid(reason="  \n ")], ["entry 1 (sum): reason must be a sentence"]),
        ([valid(reason=["why"])], ["entry 1 (sum): reason must be a sentence"]),
        ([valid(reason=None)], ["entry 1 (sum): reason must be a sentence"]),
        # match is a valid regex
        ([valid(match=3)], ["entry 1 (sum): match must be a regex (a string)"]),
        (
            [valid(match="(unclosed")],
            ["entry 1 (sum): match is not a valid regex: missing ), unterminated subpattern at position 0"],
        ),
        ([valid(match="a[")], ["entry 1 (sum): match is not a valid regex: unterminated character set at position 1"]),
        ([valid(match="")], []),
        # status names a result status other than pass
        ([valid(status="passed")], [f"entry 1 (sum): status passed names no result status ({STATUS_WORDS})"]),
        ([valid(status="pass")], [f"entry 1 (sum): status pass names no result status ({STATUS_WORDS})"]),
        (
            [valid(status=["bogus", "p*"])],
            [f"entry 1 (sum): status ['bogus', 'p*'] names no result status ({STATUS_WORDS})"],
        ),
        ([valid(status=["bogus", "fail"])], []),
        ([valid(status="c*")], []),
        ([valid(status="could_not_start")], []),
        ([valid(status="*")], []),
        ([valid(status=[])], [f"entry 1 (sum): status [] names no result status ({STATUS_WORDS})"]),
        # every problem of an entry, in order, and entries numbered from 1
        (
            [valid(), valid(op="max", reason="", match="(", extra=1)],
            [
                f"entry 2 (max): unknown key extra (keys are {KEY_WORDS})",
                "entry 2 (max): reason must be a sentence",
                "entry 2 (max): match is not a valid regex: missing ), unterminated subpattern at position 0",
            ],
        ),
        (
            [valid(backend=1, status=2)],
            [
                "entry 1 (sum): backend must be a glob or a list of globs",
                "entry 1 (sum): status must be a glob or a list of globs",
            ],
        ),
    ],
)
def test_validate(entries, problems):
    assert known.validate(entries) == problems


@pytest.mark.parametrize(
    "entries, problems",
    [
        ([valid()], []),
        ([valid(op=["max", "sum"])], []),
        ([valid(op="lesser", case="float")], []),
        ([valid(op="prod")], ["entry 1 (prod): op prod names no op of the spec"]),
        # each op of a list must be an op of the spec
        (
            [valid(op=["prod", "sum", "cumsum"])],
            [
                "entry 1 (['prod', 'sum', 'cumsum']): op prod names no op of the spec",
                "entry 1 (['prod', 'sum', 'cumsum']): op cumsum names no op of the spec",
            ],
        ),
        ([valid(op="Sum")], ["entry 1 (Sum): op Sum names no op of the spec"]),  # names are case-sensitive
        # case globs must name a case (or a documented example) of the ops
        ([valid(case="int*")], []),
        ([valid(case="example:doc")], []),
        ([valid(case=["float", "int32"])], []),
        (
            [valid(op=["mean", "max", "min"], case="int32")],
            ["entry 1 (['mean', 'max', 'min']): case 'int32' names no case of mean, max, min"],
        ),
        ([valid(case="zzz*")], ["entry 1 (sum): case 'zzz*' names no case of sum"]),
        (
            [valid(case=["int32", "nope", "nada"])],
            ["entry 1 (sum): case 'nope' names no case of sum", "entry 1 (sum): case 'nada' names no case of sum"],
        ),
        (
            [valid(op=["less", "lesser"], case="int32")],
            ["entry 1 (['less', 'lesser']): case 'int32' names no case of less, lesser"],
        ),
        ([valid(op=["less", "mean", "max", "min", "lesser", "sum"], case="int32")], []),  # one op with it is enough
        # at most five ops are named
        (
            [valid(op=["less", "mean", "max", "min", "lesser", "sum"], case="none")],
            [
                "entry 1 (['less', 'mean', 'max', 'min', 'lesser', 'sum']): case 'none' names no case of less, mean, max, "
                "min, lesser"
            ],
        ),
        ([valid(), valid(op="prod")], ["entry 2 (prod): op prod names no op of the spec"]),
    ],
)
def test_validate_against_the_spec(spec, entries, problems):
    assert known.validate(entries, spec) == problems


def test_spec_checks_wait_for_the_entry_checks(spec):
    # an entry with problems of its own is not checked against the spec
    assert known.validate([valid(op="prod", reason="")], spec) == ["entry 1 (prod): reason must be a sentence"]
    assert known.validate([valid(op="prod", reason="")]) == ["entry 1 (prod): reason must be a sentence"]


# ---- load ----------------------------------------------------------------------------------------------------------


def _load(tmp_path, text, spec=None):
    path = tmp_path / "known.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return [e.to_dict() for e in known.load(str(path), spec)]


@pytest.mark.parametrize(
    "text, entries",
    [
        ("", []),
        ("# only a comment\n", []),
        ("[]\n", []),
        (
            "- {op: sum, backend: theano, match: x, reason: upcast, count: 0}\n",
            [{"op": "sum", "backend": "theano", "match": "x", "reason": "upcast", "count": 0}],
        ),
        (
            "- op: sum\n  case: int32\n  backend: [theano, cntk]\n  status: fail\n  reason: >-\n    two\n    lines\n"
            "  count: 3\n",
            [
                {
                    "op": "sum",
                    "case": "int32",
                    "backend": ["theano", "cntk"],
                    "status": "fail",
                    "reason": "two lines",
                    "count": 3,
                }
            ],
        ),
    ],
)
def test_load(tmp_path, text, entries):
    assert _load(tmp_path, text) == entries


@pytest.mark.parametrize(
    "text, message",
    [
        # the C parser's wording (PyYAML's pure-Python parser is far too slow on a hostile 20 MB file)
        ("- op: sum\n  reason: a: b\n", "{path}:2: not valid YAML (mapping values are not allowed in this context)"),
        ("- [op\n", "{path}:2: not valid YAML (did not find expected ',' or ']')"),
        (b"- op: \xff\xfe\n", "{path}:1: not UTF-8 text (invalid start byte)"),
        (b"- {op: sum, backend: x, reason: r}\n- op: \xff\xfe\n", "{path}:2: not UTF-8 text (invalid start byte)"),
        ("op: sum\n", "{path}: expected a list of entries (op, backend, reason, count, ...)"),
        (
            "- {op: sum, backend: theano, match: '(unclosed', reason: r, count: 0}\n",
            "{path}:1: entry 1 (sum): match is not a valid regex: missing ), unterminated subpattern at position 0",
        ),
        (
            "- {op: sum, backend: 3, match: x, reason: r, count: 0}\n",
            "{path}:1: entry 1 (sum): backend must be a glob or a list of globs",
        ),
        # the first problem, and how many more
        (
            "- {op: sum, backend: 3, match: x, reason: '', count: 0}\n",
            "{path}:1: entry 1 (sum): backend must be a glob or a list of globs (and 1 more problems)",
        ),
        ("- {op: sum}\n- {op: max}\n- {op: min}\n", "{path}:1: entry 1 lacks backend, reason (and 2 more problems)"),
        # the line is the entry's first line, however the file is laid out
        (
            "# a comment\n\n- op: sum\n  match: x\n  backend: theano\n  reason: r\n  count: 1\n"
            "- op: max\n  case: float\n  backend: theano\n  reason: r\n  count: -1\n",
            "{path}:8: entry 2 (max): count must be a whole number >= 0, not -1",
        ),
    ],
)
def test_load_errors_are_one_line(tmp_path, text, message):
    with pytest.raises(KbtoolError) as info:
        _load(tmp_path, text)
    assert str(info.value) == message.format(path=tmp_path / "known.yaml")


def test_load_checks_against_the_spec(tmp_path, spec):
    assert _load(tmp_path, "- {op: lesser, case: float, backend: numpy, reason: r, count: 0}\n", spec) == [
        {"op": "lesser", "case": "float", "backend": "numpy", "reason": "r", "count": 0}
    ]
    with pytest.raises(KbtoolError) as info:
        _load(
            tmp_path,
            "- {op: sum, match: x, backend: numpy, reason: r, count: 0}\n"
            "- {op: prod, match: x, backend: numpy, reason: r, count: 0}\n",
            spec,
        )
    assert str(info.value) == "{}:2: entry 2 (prod): op prod names no op of the spec".format(tmp_path / "known.yaml")
    # without a spec only the file's own rules apply
    assert _load(tmp_path, "- {op: prod, match: x, backend: numpy, reason: r, count: 0}\n") == [
        {"op": "prod", "match": "x", "backend": "numpy", "reason": "r", "count": 0}
    ]


def test_load_reads_utf8_whatever_the_locale(tmp_path, monkeypatch):
    # the file is read as bytes and decoded as UTF-8 (files.read_text), never with the locale's encoding
    monkeypatch.setattr(locale, "getpreferredencoding", lambda *a: "ascii")
    monkeypatch.setattr(locale, "getencoding", lambda: "ascii", raising=False)
    monkeypatch.setattr(builtins, "open", None)  # nothing opens it as text
    assert _load(
        tmp_path, '- {op: sum, match: x, backend: theano, reason: "kernel flipped \u2014 see \u00a7 3", count: 0}\n'
    ) == [{"op": "sum", "match": "x", "backend": "theano", "reason": "kernel flipped \u2014 see \u00a7 3", "count": 0}]


def test_missing_file_is_no_entries_and_unreadable_path_is_an_error(tmp_path):
    assert known.load(str(tmp_path / "absent.yaml")) == []
    with pytest.raises(KbtoolError) as info:
        known.load(str(tmp_path))
    assert str(info.value) == f"cannot read {tmp_path}: Is a directory"


# legacy (tests/test_rules_legacy.py)
def test_broken_known_differences_file_is_one_clear_error(tmp_path):
    path = tmp_path / "known.yaml"
    path.write_text("- op: sum\n  reason: a: b\n")
    with pytest.raises(KbtoolError, match=r"known.yaml:2: not valid YAML"):
        known.load(str(path))
    path.write_text("op: sum\n")
    with pytest.raises(KbtoolError, match="expected a list"):
        known.load(str(path))
    path.write_text("- {op: sum, backend: theano, match: '(unclosed', reason: r, count: 0}\n")
    with pytest.raises(KbtoolError, match=r"entry 1 \(sum\): match is not a valid regex"):
        known.load(str(path))
    path.write_text("- {op: sum, backend: 3, match: x, reason: r, count: 0}\n")
    with pytest.raises(KbtoolError, match="backend must be a glob"):
        known.load(str(path))


def test_shipped_known_differences_load_with_the_shipped_spec(shipped_spec):
    entries = [e.to_dict() for e in known.load(spec=shipped_spec)]
    assert len(entries) >= 100
    names = set(shipped_spec.ops)
    for item in entries:  # real ops by name, a reason, a case glob or regex, and a count each
        ops = [item["op"]] if isinstance(item["op"], str) else item["op"]
        assert all(op in names for op in ops), item
        assert item["reason"].strip() and rules._narrows(item) and isinstance(item["count"], int)
    assert [e.to_dict() for e in known.load()] == entries


def test_shipped_aliases_bring_their_entries(shipped_spec):
    aliases = [a.to_dict() for a in known.alias_entries(shipped_spec)]
    assert [a["op"] for a in aliases] == [
        "deconv2d",
        "image_dim_ordering",
        "lesser",
        "lesser_equal",
        "set_image_dim_ordering",
    ]
    assert aliases[2]["reason"] == "Keras 1.x name, renamed to less in Keras 2"


# ---- matching --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, patterns, matched",
    [
        ("sum", "sum", True),
        ("sum", "s*", True),
        ("sum", "s?m", True),
        ("sum", "*", True),
        ("sum", "su", False),
        ("sum", "Sum", False),
        ("sum", ["max", "su?"], True),
        ("sum", ["max", "min"], False),
        ("sum", [], False),
        ("my.mod", "*.*", True),
        ("numpy", "*.*", False),
        ("channels_last", "channels_[fl]*", True),
    ],
)
def test_matches(value, patterns, matched):
    assert known.matches(value, patterns) is matched


@pytest.mark.parametrize(
    "kw, targeted",
    [
        ({}, True),
        ({"op": "s*", "case": "int*", "backend": ["cntk", "theano"], "mode": "eager"}, True),
        ({"op": "max"}, False),
        ({"op": ["max", "sum"]}, True),
        ({"case": "float"}, False),
        ({"case": ["float", "int32"]}, True),
        ({"backend": "cntk"}, False),
        ({"backend": "th*"}, True),
        ({"mode": "symbolic"}, False),
        ({"mode": ["symbolic", "eager"]}, True),
        # status and message are not about targeting
        ({"status": "crash", "match": "nothing like it"}, True),
    ],
)
def test_targets(kw, targeted):
    assert known.targets(entry(**kw), result()) is targeted


@pytest.mark.parametrize(
    "kw, result_kw, explained",
    [
        ({}, {}, True),
        ({}, {"status": "pass", "message": ""}, False),  # a pass is never explained
        ({"status": "*"}, {"status": Status.PASS}, False),
        ({"status": "pass"}, {"status": "pass"}, False),
        ({"status": "fail"}, {}, True),
        ({"status": "fail"}, {"status": Status.FAIL}, True),
        ({"status": "error"}, {}, False),
        ({"status": ["error", "f*"]}, {}, True),
        ({"status": "un*"}, {"status": "unsupported"}, True),
        ({"status": "could_not_start"}, {"status": Status.COULD_NOT_START}, True),
        # match: searched anywhere in the message, not matched from its start
        ({"match": "int64"}, {}, True),
        ({"match": "^int64"}, {}, False),
        ({"match": "^dtype int64"}, {}, True),
        ({"match": r"values \w+\)$"}, {}, True),
        ({"match": "INT64"}, {}, False),
        ({"match": ""}, {}, True),
        ({"match": None}, {}, True),
        ({"match": "int64", "status": "error"}, {}, False),
        ({"match": "int16", "status": "fail"}, {}, False),
        # explains does not look at the target
        ({"op": "max", "backend": "cntk"}, {}, True),
    ],
)
def test_explains(kw, result_kw, explained):
    assert known.explains(entry(**kw), result(**result_kw)) is explained


# ---- apply -----------------------------------------------------------------------------------------------------------


def _count(number, item, targeted, explained, named):
    item = item.to_dict() if isinstance(item, known.KnownEntry) else item
    row = {
        "entry": number,
        "op": item["op"],
        "backend": item["backend"],
        "reason": item["reason"],
        "targeted": targeted,
        "explained": explained,
        "named": named,
    }
    if "count" in item:
        row["count"] = item["count"]
    if "results" not in item and number != "spec alias":
        row["unrecorded"] = True
    return row


def test_first_entry_names_the_result_and_later_ones_do_not_overwrite():
    first = entry(reason="first", match="int64")
    second = entry(reason="second", status="fail", count=2)
    third = entry(reason="third", backend="cntk")
    records = [result(), result(case="float", message="other"), result(mode="symbolic", status="pass", message="")]
    applied = known.apply(records, [first, second, third])
    assert [r.known for r in records] == ["first", "second", None]
    assert applied.counts == [_count(1, first, 3, 1, 1), _count(2, second, 3, 2, 1)]
    assert applied.stale == []


def test_a_result_already_named_is_kept():
    record = result(known="from before")
    applied = known.apply([record], [entry()])
    assert record.known == "from before"
    assert applied.counts == [_count(1, entry(), 1, 1, 0)]


def test_counts_are_exact_per_entry():
    records = [
        result(case="int32"),
        result(case="float", status="error", message="ValueError: x"),
        result(case="float", mode="symbolic", status="pass", message=""),
        result(backend="cntk", status="crash", message="died"),
        result(op="less", case="float", backend="tensorflow", status="unsupported", message=""),
    ]
    entries = [
        entry(op="*", backend="*", status=["fail", "error"], reason="a", count=2),
        entry(backend="cntk", reason="b"),
        entry(op="less", backend="*", reason="c", match="no"),
        entry(op="max", reason="d"),
    ]
    applied = known.apply(records, entries)
    assert applied.counts == [
        _count(1, entries[0], 5, 2, 2),
        _count(2, entries[1], 1, 1, 1),
        _count(3, entries[2], 1, 0, 0),
    ]
    assert [r.known for r in records] == ["a", "a", None, "b", None]
    assert applied.stale == [dict(entries[2], note="did not reproduce in this run (1 results checked)")]


def test_stale_when_targeted_but_nothing_explained():
    item = entry(match="dtype int64")
    records = [result(status="pass", message=""), result(mode="symbolic", status="fail", message="shape (2,)")]
    applied = known.apply(records, [item])
    assert applied.stale == [dict(item, note="did not reproduce in this run (2 results checked)")]
    assert applied.counts == [_count(1, item, 2, 0, 0)]
    assert [r.known for r in records] == [None, None]


def test_not_stale_when_nothing_targeted():
    applied = known.apply([result(op="max")], [entry()])
    assert applied.stale == [] and applied.counts == []
    assert known.apply([], [entry()]).stale == []


def test_not_stale_when_one_result_is_explained():
    applied = known.apply([result(), result(case="float", status="pass", message="")], [entry()])
    assert applied.stale == [] and applied.counts == [_count(1, entry(), 2, 1, 1)]


@pytest.mark.parametrize(
    "op, whole_spec, all_cases, stale",
    [
        ("sum", True, True, True),
        ("sum", False, True, True),
        ("sum", True, False, False),
        ("sum", False, False, False),
        ("*", True, True, True),
        ("*", False, True, False),
        ("*", True, False, False),
        ("*", False, False, False),
        ("s*", False, True, True),
    ],
)
def test_staleness_scope(op, whole_spec, all_cases, stale):
    item = entry(op=op)
    applied = known.apply([result(status="pass", message="")], [item], whole_spec=whole_spec, all_cases=all_cases)
    assert applied.stale == ([dict(item, note="did not reproduce in this run (1 results checked)")] if stale else [])
    assert applied.counts == [_count(1, item, 1, 0, 0)]  # counted whether or not judged


SPEC_OPS = {"sum", "mean", "max", "less"}


@pytest.mark.parametrize(
    "op, result_op, planned, stale",
    [
        # an entry is judged when every spec op its globs match was planned
        ("sum", "sum", ["sum"], True),
        ("s*", "sum", ["sum"], True),
        ("m*", "mean", ["sum", "mean"], False),
        ("m*", "mean", ["mean", "max"], True),
        (["sum", "less"], "sum", ["sum"], False),
        (["sum", "less"], "sum", ["less", "sum", "max"], True),
        (["*"], "sum", ["sum", "mean", "max"], False),
        (["*"], "sum", ["sum", "mean", "max", "less"], True),
        ("z*", "zap", ["max"], True),  # names no op of the spec: nothing left unplanned
        # "*" still needs the whole spec, whatever was planned
        ("*", "sum", ["sum", "mean", "max", "less"], False),
    ],
)
def test_staleness_scope_by_planned_ops(op, result_op, planned, stale):
    item, records = entry(op=op), [result(op=result_op, status="pass")]
    applied = known.apply(records, [item], whole_spec=False, planned_ops=planned, spec_ops=SPEC_OPS)
    assert applied.stale == ([dict(item, note="did not reproduce in this run (1 results checked)")] if stale else [])
    assert applied.counts == [_count(1, item, 1, 0, 0)]
    # a whole-spec run judges every entry; a filtered one none
    assert len(known.apply(records, [item], planned_ops=planned, spec_ops=SPEC_OPS).stale) == 1
    assert (
        known.apply(records, [item], whole_spec=False, all_cases=False, planned_ops=planned, spec_ops=SPEC_OPS).stale
        == []
    )


@pytest.mark.parametrize(
    "planned, spec_ops, covered",
    [
        (None, SPEC_OPS, True),
        (["sum"], None, True),
        (None, None, True),
        (["sum"], SPEC_OPS, False),
        (["mean", "max"], SPEC_OPS, True),
        ([], set(), True),
        ([], SPEC_OPS, False),
    ],
)
def test_covers(planned, spec_ops, covered):
    assert known.covers(entry(op="m*"), planned, spec_ops) is covered


def test_apply_judges_staleness_by_default():
    item = entry(op="*")
    assert known.apply([result(status="pass")], [item]).stale == [
        dict(item, note="did not reproduce in this run (1 results checked)")
    ]


def test_stale_entries_are_copies_with_a_note():
    item = entry()
    applied = known.apply([result(status="pass")], [item])
    assert "note" not in item and applied.stale[0] is not item


# legacy (tests/test_rules_legacy.py)
def test_known_difference_globs_lists_and_status_lists():
    item = {
        "op": ["mean", "sum"],
        "case": ["int*"],
        "backend": ["theano", "cntk"],
        "status": ["fail", "error"],
        "match": "dtype int64",
        "reason": "upcast",
    }
    explained, other_op, passing = result(), result(op="max"), result(case="int64", status="pass")
    applied = known.apply([explained, other_op, passing], [item])
    assert explained.known == "upcast" and other_op.known is None and passing.known is None
    assert applied.stale == []


def test_known_difference_that_no_longer_reproduces_is_stale():
    item = {"op": "sum", "backend": "theano", "match": "dtype int64", "reason": "upcast"}
    stale = known.apply([result(status="pass", message="")], [item]).stale
    assert len(stale) == 1 and "did not reproduce" in stale[0]["note"]


def test_an_entry_for_every_op_is_judged_stale_only_on_a_whole_spec_run():
    item = {
        "op": "*",
        "backend": "theano",
        "status": "unsupported",
        "match": "NotImplementedError",
        "reason": "not implemented",
    }
    records = [result(status="pass", message="")]
    assert known.apply(records, [item], whole_spec=False).stale == []
    assert len(known.apply(records, [item], whole_spec=True).stale) == 1


# ---- the spec's alias entries ----------------------------------------------------------------------------------------


def test_alias_entries(spec):
    assert [a.to_dict() for a in known.alias_entries(spec)] == [
        {
            "op": "lesser",
            # the keras3-* port defines the Keras 1 names as their keras3_map.yaml rows say: not a keras3-* engine
            "backend": ["tensorflow", "tensorflow1", "theano", "cntk", "mxnet", "plaidml", "keras3", "*.*"],
            "status": "unsupported",
            "reason": "Keras 1.x name, renamed to less in Keras 2",
            "source": "spec",
        }
    ]


def test_a_report_keeps_loading_alias_entries_in_the_form_an_earlier_kbtool_wrote(spec):
    (alias,) = known.alias_entries(spec)
    written = alias.to_dict()
    # while the keras3-* port left the Keras 1 names out, kbtool wrote the list with "keras3-*" before "*.*"
    earlier = dict(written, backend=written["backend"][:-1] + ["keras3-*", "*.*"])
    loaded = known.from_report([written, earlier], "report r.json")
    assert [e.backend for e in loaded] == [tuple(written["backend"]), tuple(earlier["backend"])]
    for backend in (["*"], written["backend"][:-1], earlier["backend"] + ["numpy"]):  # any other list is refused
        with pytest.raises(KbtoolError, match=r"report r.json: known_entries: a spec alias entry kbtool did not"):
            known.from_report([dict(written, backend=backend)], "report r.json")


@pytest.mark.parametrize(
    "backend, targeted",
    [
        ("numpy", False),
        ("tensorflow", True),
        ("theano", True),
        ("cntk", True),
        ("pkg.mod", True),
        ("pkg.mod@theano", True),
        ("mxnet", True),
        ("keras3", True),
        ("keras3-jax", False),
        ("keras3-openvino", False),
        ("jax", False),
    ],
)
def test_alias_entries_target_keras2_backends_only(spec, backend, targeted):
    (alias,) = known.alias_entries(spec)
    record = result(op="lesser", case="float", backend=backend, status="unsupported", message="no lesser")
    assert known.targets(alias, record) is targeted
    assert known.explains(alias, record) is True
    assert known.targets(alias, result(op="less", case="float", backend=backend)) is False


def test_alias_entries_are_counted_apart_and_go_stale(spec):
    (alias,) = known.alias_entries(spec)
    item = entry(op="less", backend="*", reason="file entry")
    records = [
        result(op="lesser", case="float", backend="tensorflow", status="unsupported", message="m"),
        result(op="lesser", case="float", backend="numpy", status="pass", message=""),
        result(op="lesser", case="float", backend="pkg.mod", status="pass", message=""),
        result(op="less", case="float", backend="cntk", status="fail", message="x"),
    ]
    applied = known.apply(records, [alias, item])
    assert [r.known for r in records] == ["Keras 1.x name, renamed to less in Keras 2", None, None, "file entry"]
    # the file's entries are numbered as `validate` numbers them: the alias entry has no number
    assert applied.counts == [_count("spec alias", alias, 2, 1, 1), _count(1, item, 1, 1, 1)]
    assert applied.stale == []
    # once the backend has the old name, the alias entry no longer reproduces
    passing = [result(op="lesser", case="float", backend="theano", status="pass", message="")]
    applied = known.apply(passing, [alias])
    assert applied.stale == [dict(alias.to_dict(), note="did not reproduce in this run (1 results checked)")]
    assert applied.counts == [_count("spec alias", alias, 1, 0, 0)]


def test_entry_numbers_skip_alias_entries_whether_or_not_they_target(spec):
    (alias,) = known.alias_entries(spec)
    first, second = entry(reason="one"), entry(reason="two", backend="cntk")
    records = [result(), result(backend="cntk")]
    applied = known.apply(records, [first, alias, second])
    assert [c["entry"] for c in applied.counts] == [1, 2]


def test_spec_problems_of_later_entries_are_reported_after_an_earlier_entry_has_one(spec):
    problems = known.validate([valid(reason=""), valid(op="nosuch")], spec)
    assert problems == [
        "entry 1 (sum): reason must be a sentence",
        "entry 2 (nosuch): op nosuch names no op of the spec",
    ]


# ---- bounds on the file: glob count, glob and regex lengths (exactly at and one past each limit) --------------------


def _with_globs(extra):
    """Three entries holding 9 + `extra` globs: every glob key counts, list items one by one, non-globs not at all."""
    return [
        entry(case="int*", backend=["theano"] * (extra + 1), mode="eager", status="fail"),  # 5 + extra
        entry(match="x"),  # op, backend
        entry(match="x", mode=3),
    ]  # op, backend (mode is no glob: not counted, reported on its own)


def test_validate_counts_globs_up_to_the_limit():
    assert known.validate(_with_globs(9991)) == ["entry 3 (sum): mode must be a glob or a list of globs"]
    assert known.validate(_with_globs(9992)) == ["10001 globs in 3 entries; kbtool checks at most 10000 in one file"]


def test_validate_bounds_glob_lengths():
    assert known.validate([valid(mode=["eager", "m" * 1000], case="c" * 1000)]) == []
    assert known.validate([valid(case="c" * 1001)]) == ["entry 1 (sum): case has a glob longer than 1000 characters"]
    assert known.validate([valid(mode=["eager", "m" * 1001], status=["fail", "s" * 1001])]) == [
        "entry 1 (sum): mode has a glob longer than 1000 characters",
        "entry 1 (sum): status has a glob longer than 1000 characters",
    ]


def test_entry_names_its_op_in_at_most_60_characters():
    assert known.validate([valid(op="o" * 60, reason="")]) == [
        "entry 1 ({}): reason must be a sentence".format("o" * 60)
    ]
    assert known.validate([valid(op="o" * 61, reason="")]) == [
        "entry 1 ({}... (61 characters)): reason must be a sentence".format("o" * 60)
    ]
    assert known.validate([valid(op="o" * 1001)]) == [
        "entry 1 ({}... (1001 characters)): op has a glob longer than 1000 characters".format("o" * 60)
    ]


def test_regex_length_limit():
    assert known.regex_problem("a" * 1000) is None
    assert known.regex_problem("a" * 1001) == "match is longer than 1000 characters"
    assert known.validate([valid(match="a" * 1000)]) == []
    assert known.validate([valid(match="a" * 1001)]) == ["entry 1 (sum): match is longer than 1000 characters"]


# ---- glob regexes: built once per glob and per list (both by value) ----------------------------------------


def test_glob_regexes_are_built_once_per_glob_and_per_list(monkeypatch):
    globs.glob_regex_of.cache_clear()
    calls, translate = [], fnmatch.translate
    monkeypatch.setattr(fnmatch, "translate", lambda pattern: calls.append(pattern) or translate(pattern))
    one, same = "".join(["cache-", "glob*"]), "".join(["cache-", "glob*"])
    assert one == same and one is not same
    first, second = ["cache-a*", "cache-b"], ["cache-c"]
    for _ in range(3):
        assert known.matches("cache-globx", one) and known.matches("cache-globx", same)
        assert known.matches("cache-b", first) and not known.matches("cache-b", second)
        assert known.matches("cache-c", second) and not known.matches("cache-c", first)
    assert calls == ["cache-glob*", "cache-a*", "cache-b", "cache-c"]


# ---- regex time limit --------------------------------------------------------------------------------------------------

SLOW_PATTERN, SLOW_MESSAGE = "(a+)+b", "a" * 600  # ~0.5 s without a time limit (cubic in the regex engine)
SHORT_TIMEOUT_NOTE = (
    "known-difference entry {}: its match regex timed out after 0.01 s on this message "
    "(taken as no match; later messages not searched)"
)


@pytest.fixture
def short_known_timeout(monkeypatch):
    monkeypatch.setattr(known.regexes, "REGEX_TIMEOUT", 0.01)


def test_search_times_out_as_none(short_known_timeout):
    assert known.search(SLOW_PATTERN, SLOW_MESSAGE) is None
    assert known.search(SLOW_PATTERN, "xyz") is False
    assert known.search(SLOW_PATTERN, "aab") is True
    assert known.explains(entry(match=SLOW_PATTERN), result(message=SLOW_MESSAGE)) is False


def test_apply_regex_timeouts_are_exact(short_known_timeout):
    alias = {
        "op": "sum",
        "case": "alias",
        "backend": "theano",
        "match": SLOW_PATTERN,
        "reason": "alias",
        "source": "spec",
    }
    first = entry(match=SLOW_PATTERN, reason="first")
    second = entry(case="float", match=SLOW_PATTERN, reason="second")
    records = [
        result(message="xyz"),
        result(case="other", message=SLOW_MESSAGE, note="private module"),
        result(case="third", message="aab"),  # would match: never searched after the timeout
        result(case="float", message=SLOW_MESSAGE),
        result(case="alias", message=SLOW_MESSAGE),
    ]
    applied = known.apply(records, [alias, first, second])
    assert [r.known for r in records] == [None] * 5
    assert [r.note for r in records] == [
        None,
        "private module; " + SHORT_TIMEOUT_NOTE.format(1),
        None,
        SHORT_TIMEOUT_NOTE.format(2),
        SHORT_TIMEOUT_NOTE.format("spec alias"),
    ]
    assert applied.counts == [
        _count("spec alias", alias, 1, 0, 0),
        _count(1, first, 5, 0, 0),
        _count(2, second, 1, 0, 0),
    ]
    assert applied.stale == [
        dict(
            alias,
            note="did not reproduce in this run (1 results checked); its match regex timed out after "
            "0.01 s, so 1 were not searched",
        ),
        dict(
            first,
            note="did not reproduce in this run (5 results checked); its match regex timed out after "
            "0.01 s, so 4 were not searched",
        ),
        dict(
            second,
            note="did not reproduce in this run (1 results checked); its match regex timed out after "
            "0.01 s, so 1 were not searched",
        ),
    ]
