"""Hostile or broken spec and known-differences files: never a crash, a hang or a memory blow-up.

Every problem is one line naming the file (and line), with no traceback; `kbtool spec validate FILE` exits 1
listing the problems (2 when the file cannot be read at all); `kbtool check --spec FILE` exits 2 with one line;
and each attack finishes within 10 s. What validation passes, `check` runs without tripping.

Table-driven: each hostile file is one row, written to tmp_path and run through the CLI (click's CliRunner on
kbtool.cli.main); the shape-rule language and the regex time limit have rows of their own.
"""

import os
import time

import pytest
from click.testing import CliRunner

from kbtool import files, known, paths
from kbtool.cli import main
from kbtool.errors import KbtoolError
from kbtool.results import Result
from kbtool.specs import shapes
from kbtool.verdicts import raises
from kbtool.verdicts.raises import judge_raises

SECONDS = 10  # the most one attack may take
LINE = 450  # the longest line a problem may print (path included)

HEADER = """schema_version: 1
docs:
  ko-2.2: {file: 004.txt, lang: ko}
ops:
"""
SUM = """  sum:
    category: reduce
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}, {name: axis, default: null}]
"""
RESHAPE = """  reshape:
    category: shape
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}, {name: shape}]
"""
GOOD_CASE = "{id: a, inputs: [{shape: [2, 3]}]}"


def spec(case=GOOD_CASE, rules=None, op=SUM):
    """A one-op spec with one case (a flow mapping) and optional shape rules (YAML flow list)."""
    text = HEADER + op + (f"    shape_rules: {rules}\n" if rules else "") + "    cases:\n      - " + case + "\n"
    return text


def laughs(levels, key="lol", indent=""):
    """The billion laughs: `levels` anchors, each a list of nine aliases of the one before (9**levels values)."""
    lines = [f"{indent}{key}0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append("{}{}{}: &a{} [{}]".format(indent, key, i, i, ", ".join([f"*a{i - 1}"] * 9)))
    return "\n".join(lines) + "\n"


PASSWD = "".join(f"user{i}:x:{i}:{i}:User {i},,,:/home/user{i}:/bin/bash\n" for i in range(40))

# (id, file content (str, bytes, or a function of tmp_path giving a path), validate exit, check exit, needle)
SPEC_ROWS = [
    # raw args, then-calls, regexes: what validation passed and `check` then tripped on
    (
        "raw_tensor_index",
        spec("{id: a, inputs: [{shape: [2, 3]}], args: [{tensor: 7}]}"),
        1,
        2,
        "cases[0].args[0].tensor: no input 7: the case has 1 input(s)",
    ),
    (
        "raw_index_in_call",
        spec("{id: a, inputs: [{shape: [2]}], args: [{call: sum, args: [{list: [{tensor: 3}]}]}]}"),
        1,
        2,
        "args[0].args[0].list[0].tensor: no input 3",
    ),
    (
        "raw_index_bool",
        spec("{id: a, inputs: [{shape: [2]}, {shape: [2]}], args: [{tensor: true}]}"),
        1,
        2,
        "no input True",
    ),
    ("raw_list_not_a_list", spec("{id: a, inputs: [{shape: [2]}], args: [{list: 5}]}"), 1, 2, "list takes a list"),
    (
        "raw_two_kinds",
        spec("{id: a, inputs: [{shape: [2]}], args: [{tensor: 0, array: 0}]}"),
        1,
        2,
        "has exactly one of tensor",
    ),
    (
        "raw_unknown_key",
        spec("{id: a, inputs: [{shape: [2]}], args: [{tensor: 0, bogus: 1}]}"),
        1,
        2,
        "unknown key bogus in a tensor ARG spec",
    ),
    ("raw_no_kind", spec("{id: a, inputs: [{shape: [2]}], args: [{result: 0}]}"), 1, 2, "has exactly one of"),
    (
        "raw_call_not_an_op",
        spec("{id: a, inputs: [{shape: [2]}], args: [{call: no_such_op, args: [{tensor: 0}]}]}"),
        1,
        2,
        "args[0].call: 'no_such_op' is not an op of the spec",
    ),
    (
        "raw_call_kwargs_list",
        spec("{id: a, inputs: [{shape: [2]}], args: [{call: sum, kwargs: [1]}]}"),
        1,
        2,
        "kwargs is a mapping",
    ),
    (
        "raw_ph_shape_rank",
        spec("{id: a, inputs: [{shape: [2, 3]}], args: [{tensor: 0, ph_shape: [null]}]}"),
        1,
        2,
        "ph_shape has 1 dimensions but the input has 2",
    ),
    (
        "raw_step_unknown",
        spec("{id: a, inputs: [{shape: [2]}], args: [{tensor: 0}, {step: nope}]}"),
        1,
        2,
        "unknown step 'nope'",
    ),
    (
        "then_not_an_op",
        spec("{id: a, inputs: [{shape: [2, 3]}], then: [{op: no_such_op}]}"),
        1,
        2,
        "then[0].op: 'no_such_op' is not an op of the spec",
    ),
    (
        "then_result_ahead",
        spec("{id: a, inputs: [{shape: [2]}], then: [{op: sum, args: [{result: 3}]}]}"),
        1,
        2,
        "then[0].args[0].result: no result 3 before then[0]",
    ),
    (
        "match_unclosed",
        spec("{id: a, inputs: [{shape: [2]}], raises: ValueError, match: '(unclosed'}"),
        1,
        2,
        "cases[0].match: match is not a valid regex",
    ),
    (
        "match_too_long",
        spec("{id: a, inputs: [{shape: [2]}], raises: ValueError, match: '" + "a" * 5000 + "'}"),
        1,
        2,
        "match is longer than 1000 characters",
    ),
    # inputs that would exhaust memory, or that NumPy cannot draw
    (
        "shape_1e13",
        spec("{id: a, inputs: [{shape: [100000, 100000, 1000]}]}"),
        1,
        2,
        "has 10,000,000,000,000 elements; one input may have at most 10,000,000",
    ),
    (
        "shape_zero_times_huge",
        spec("{id: a, inputs: [{shape: [0, 1000000000000000000000]}]}"),
        1,
        2,
        "no larger dimension",
    ),
    (
        "shape_40_dims",
        spec("{id: a, inputs: [{shape: [" + ", ".join(["1"] * 40) + "]}]}"),
        1,
        2,
        "40 dimensions; kbtool allows at most 32",
    ),
    (
        "shape_float_dim",
        spec("{id: a, inputs: [{shape: [2.0, 3]}]}"),
        1,
        2,
        "a shape is a list of non-negative integers",
    ),
    (
        "case_total",
        spec("{id: a, inputs: {x: [{shape: [10000000]}, {shape: [10000000]}, {shape: [10000000]}]}}"),
        1,
        2,
        "a case may have at most 20,000,000",
    ),
    (
        "spec_total",
        HEADER
        + SUM
        + "    cases:\n"
        + "".join(
            f"      - {{id: c{i}, inputs: {{x: [{{shape: [10000000]}}, {{shape: [10000000]}}]}}}}\n" for i in range(6)
        ),
        1,
        2,
        "the spec's inputs pass 100,000,000 elements",
    ),
    ("randint_nan", spec("{id: a, inputs: [{shape: [2], dtype: int32, low: .nan}]}"), 1, 2, "low nan is not a finite"),
    ("randint_huge", spec("{id: a, inputs: [{shape: [2], dtype: int32, high: 1.0e+30}]}"), 1, 2, "outside int64"),
    (
        "uniform_too_wide",
        spec("{id: a, inputs: [{shape: [2], dist: uniform, low: -1.0e+308, high: 1.0e+308}]}"),
        1,
        2,
        "too wide to draw from",
    ),
    (
        "fill_out_of_range",
        spec("{id: a, inputs: [{shape: [2], dtype: uint8, fill: 300}]}"),
        1,
        2,
        "fill 300 is not a uint8 value",
    ),
    # the shape-rule language: bounded at parse time
    ("rule_prod_huge", spec(rules="[{shape: 'prod([7]*2000000)'}]"), 1, 2, "repeated 2000000 times"),
    ("rule_string_format", spec(rules="[{shape: \"'%0999999999d' % 0\"}]"), 1, 2, "% works on numbers only"),
    ("rule_deep_unary", spec(rules="[{shape: '" + "-" * 2000 + "x[0]'}]"), 1, 2, "longer than 1000 characters"),
    ("rule_deep_short", spec(rules="[{shape: '" + "-" * 500 + "x[0]'}]"), 1, 2, "nested more than 30 levels"),
    ("rule_null_byte", spec(rules='[{shape: "x\\0"}]'), 1, 2, "null bytes"),
    ("rule_unknown_name", spec(rules="[{shape: 'y[:1]'}]"), 1, 2, "unknown name y"),
    ("rule_pow", spec(rules="[{shape: '[2 ** 99999999]'}]"), 1, 2, "Pow is not allowed"),
    (
        "rule_constant_int",
        spec(rules="[{shape: '[x[0] * (100000 * 100000)]'}]"),
        1,
        2,
        "integer 10000000000 is past the limit of 2**31",
    ),
    # YAML that hangs, crashes or eats memory
    (
        "billion_laughs_8",
        HEADER.replace("ops:\n", "") + laughs(8) + "ops:\n" + SUM,
        1,
        2,
        "more than 150000 values once aliases are expanded",
    ),
    (
        "laughs_in_a_case",
        spec("{id: a, inputs: [{shape: [2]}], kwargs: {axis: *a8}}").replace(
            "ops:\n", "x:\n" + laughs(8, indent="  ") + "ops:\n"
        ),
        1,
        2,
        "more than 150000 values",
    ),
    (
        "recursive_alias",
        spec("&c {id: a, inputs: [{shape: [2]}], kwargs: {axis: [*c]}}"),
        1,
        2,
        "alias *c is inside the collection it names",
    ),
    ("nested_100000", "[" * 100000 + "]" * 100000, 1, 2, "nested more than 50 levels deep"),  # libyaml: SIGSEGV
    (
        "long_integer",
        spec("{id: a, inputs: [{shape: [2]}], kwargs: {axis: " + "9" * 5000 + "}}"),
        1,
        2,
        "integer too long (5000 characters)",
    ),
    (
        "binary_tag",
        spec("{id: a, inputs: [{shape: [2]}], kwargs: {axis: !!binary aGVsbG8=}}"),
        1,
        2,
        "binary is not allowed",
    ),
    ("set_tag", spec("{id: a, inputs: [{shape: [2]}], kwargs: {axis: !!set {a, b}}}"), 1, 2, "set is not allowed"),
    ("nul_char", spec('{id: a, inputs: [{shape: [2]}], about: "x\x00"}'), 1, 2, "#x0000 is not allowed"),
    (
        "unique_items_quadratic",
        spec().replace(
            "documented_in: [ko-2.2]",
            "documented_in: [" + ", ".join(str(i) if i % 2 else "d" + str(i) for i in range(30000)) + "]",
        ),
        1,
        2,
        "is not of type 'string'",
    ),
    (
        "long_value",
        spec(op=SUM.replace("category: reduce", "category: " + "c" * 20000)),
        1,
        2,
        "ccc... (20002 characters) is not one of ['config'",
    ),
    # files that are not text, not a spec, too big, or not files
    ("not_utf8", HEADER.encode() + b"  sum: \xff\xfe\n", 1, 2, ":5: not UTF-8 text (invalid start byte)"),
    ("passwd", PASSWD, 1, 2, "is not of type 'object'"),
    ("over_20_MB", "#" * (20 * 1024 * 1024 + 1), 1, 2, "larger than 20 MB"),
    ("big_scalar_19_MB", spec("{id: a, inputs: [{shape: [2]}], about: " + "a" * (19 * 1024 * 1024) + "}"), 0, 0, None),
    (
        "flat_list_19_MB",
        spec("{id: a, inputs: [{shape: [2]}], kwargs: {axis: [" + "0," * (9 * 1024 * 1024) + "0]}}"),
        1,
        2,
        "more than 150000 values",
    ),
    ("empty", "", 1, 2, ":1: the spec is empty"),
    ("dev_zero", lambda tmp: "/dev/zero", 2, 2, "cannot read spec /dev/zero: not a regular file (a character device)"),
    ("fifo", lambda tmp: _fifo(tmp), 2, 2, "not a regular file (a FIFO)"),
    ("missing", lambda tmp: str(tmp / "absent.yaml"), 2, 2, "No such file or directory"),
]


def _fifo(tmp):
    path = tmp / "fifo.yaml"
    os.mkfifo(str(path))
    return str(path)


def invoke(*args):
    try:
        runner = CliRunner(mix_stderr=False)  # click < 8.2
    except TypeError:
        runner = CliRunner()  # click >= 8.2 keeps stderr apart
    started = time.monotonic()
    result = runner.invoke(main, list(args))
    return result, time.monotonic() - started


def assert_no_traceback(result):
    uncaught = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not uncaught, f"TRACEBACK: {type(result.exception).__name__}: {result.exception}"
    assert "Traceback" not in result.stderr + result.stdout, "TRACEBACK in output"


def assert_problems(result, seconds, code, path, needle, one=False):
    """Exit `code` within SECONDS, no traceback, every stderr line a short one naming `path`."""
    assert_no_traceback(result)
    assert seconds < SECONDS, f"took {seconds:.1f} s"
    assert result.exit_code == code, (result.exit_code, result.stderr[-2000:])
    if code == 0:
        return
    lines = result.stderr.splitlines()
    assert lines and (len(lines) == 1 or not one), result.stderr[-2000:]
    for line in lines:
        assert path in line and len(line) <= LINE, line[:2000]
        assert line.startswith(path if code == 1 else "kbtool: error: "), line[:300]
    if needle:
        assert needle in result.stderr, (needle, result.stderr[-2000:])


def write(tmp_path, content, name="ops.yaml"):
    if callable(content):
        return content(tmp_path)
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return str(path)


@pytest.fixture
def no_known_differences(tmp_path, monkeypatch):
    """`check --spec` on a small spec: no shipped known differences (they name ops the small spec lacks)."""
    monkeypatch.setattr(paths, "known_differences_file", lambda: str(tmp_path / "no_known_differences.yaml"))


@pytest.mark.parametrize(
    "content, validate_code, check_code, needle", [pytest.param(*row[1:], id=row[0]) for row in SPEC_ROWS]
)
def test_hostile_spec(tmp_path, no_known_differences, content, validate_code, check_code, needle):
    path = write(tmp_path, content)
    result, seconds = invoke("spec", "validate", path)
    assert_problems(result, seconds, validate_code, path, needle)
    result, seconds = invoke("check", "--spec", path, "--op", "sum", "--backend", "numpy")
    assert_problems(result, seconds, check_code, path, None, one=True)  # the first problem, and how many more


def test_an_error_quotes_at_most_about_100_characters_of_the_file(tmp_path):
    path = write(tmp_path, PASSWD)
    result, _ = invoke("spec", "validate", path)
    (line,) = result.stderr.splitlines()
    assert line == "{}:1: (top): {} is not of type 'object'".format(
        path, files.quote(" ".join(PASSWD.split("\n")).strip())
    )
    assert len(line) < len(path) + 200


# What validation passes, `check` runs: a rule or regex that misbehaves at run time is a result, not a hang.
RUNTIME_ROWS = [
    # a shape rule whose evaluation breaks a bound: a failing result naming the rule's error
    (
        "rule_bound_at_run_time",
        spec(rules="[{shape: 'x * x[0] * 100'}]"),
        "--op",
        "sum",
        1,
        "spec shape rule error: a list of 4 items repeated 100 times",
    ),
    (
        "rule_int_bound_at_run_time",
        spec(rules="[{shape: '[x[0] * 100000 * 100000]'}]"),
        "--op",
        "sum",
        1,
        "spec shape rule error: integer 20000000000 is past the limit of 2**31",
    ),
    # a catastrophic regex for Python's `re` (past 60 s on the reference's message): instant on the `regex` engine
    (
        "catastrophic_case_match",
        spec(
            "{id: a, inputs: [{shape: [2, 3]}], kwargs: {shape: [4, 2]}, raises: ValueError, match: '(.|.|.|.)*Z'}",
            op=RESHAPE,
        ),
        "--op",
        "reshape",
        1,
        "does not match '(.|.|.|.)*Z'",
    ),
]


@pytest.mark.parametrize("content, flag, op, code, needle", [pytest.param(*row[1:], id=row[0]) for row in RUNTIME_ROWS])
def test_what_validation_passes_check_runs(tmp_path, no_known_differences, content, flag, op, code, needle):
    path = write(tmp_path, content)
    result, seconds = invoke("spec", "validate", path)
    assert_problems(result, seconds, 0, path, None)
    result, seconds = invoke("check", "--spec", path, flag, op, "--backend", "numpy")
    assert_no_traceback(result)
    assert seconds < SECONDS and result.exit_code == code, (seconds, result.exit_code, result.stdout[-2000:])
    if needle:
        assert needle in " ".join(result.stdout.split()), result.stdout[-2000:]  # lines wrap at 80 columns


# ---------------------------------------------------------------------------- known-differences files
KNOWN_ROWS = [
    ("reason_42", "- {op: sum, backend: numpy, reason: 42}\n", "entry 1 (sum): reason must be a sentence"),
    (
        "many_case_globs",
        "".join(
            "- {{op: sum, backend: numpy, reason: r, count: 0, case: [{}]}}\n".format(
                ", ".join(f"'z{i}_{j}*'" for j in range(100))
            )
            for i in range(97)
        ),
        ":1: entry 1 (sum): case 'z0_0*' names no case of sum (and 9699 more problems)",
    ),
    ("match_5", "- {op: sum, backend: numpy, match: 5, reason: r}\n", "match must be a regex (a string)"),
    ("match_unclosed", "- {op: sum, backend: numpy, match: '(unclosed', reason: r}\n", "match is not a valid regex"),
    ("match_only_re_rejects", "- {op: sum, backend: numpy, match: '\\p{L}', reason: r}\n", "bad escape"),
    ("match_too_long", "- {op: sum, backend: numpy, match: '" + "a" * 2000 + "', reason: r}\n", "longer than 1000"),
    ("glob_too_long", "- {op: '" + "s" * 2000 + "', backend: numpy, reason: r}\n", "longer than 1000 characters"),
    (
        "laughs_7_in_reason",
        laughs(7, key="x").replace("x0:", "- x0:").replace("\nx", "\n  x")
        + "  op: sum\n  backend: numpy\n  reason: *a7\n",
        "more than 150000 values",
    ),
    ("recursive_alias", "- &e {op: sum, backend: numpy, reason: r, case: [*e]}\n", "alias *e is inside"),
    ("non_string_keys", "- {op: sum, backend: numpy, reason: r, 1: a, null: b, zed: c}\n", "unknown key 1, None, zed"),
    (
        "long_op_list",
        "- {op: [" + ", ".join("o" + str(i) for i in range(5000)) + "], backend: numpy, match: x, "
        "reason: r, count: 0}\n",
        ":1: entry 1 (['o0', 'o1', 'o2', 'o3', 'o4', 'o5', 'o6', 'o7', 'o8', "
        "'o9',... (43890 characters)): op o0 names no op of the spec (and 4999 "
        "more problems)",
    ),
    (
        "glob_flood",
        "".join(
            "- {{op: '*', backend: numpy, reason: r, case: [{}]}}\n".format(
                ", ".join(f"'z{i}_{j}*'" for j in range(100))
            )
            for i in range(300)
        ),
        "30600 globs in 300 entries; kbtool checks at most 10000",
    ),
    ("nested_100000", "[" * 100000, "nested more than 50 levels deep"),
    ("not_utf8", b"- {op: sum, backend: numpy, reason: r}\n- {op: \xff}\n", ":2: not UTF-8 text"),
    ("over_20_MB", "#" * (20 * 1024 * 1024 + 1), "larger than 20 MB"),
    ("directory", lambda tmp: str(tmp), "Is a directory"),
    ("fifo", lambda tmp: _fifo(tmp), "not a regular file (a FIFO)"),
]


@pytest.mark.parametrize("content, needle", [pytest.param(*row[1:], id=row[0]) for row in KNOWN_ROWS])
def test_hostile_known_differences_file(tmp_path, monkeypatch, content, needle):
    spec_path = write(tmp_path, spec(), "ops.yaml")
    (tmp_path / "known").mkdir()
    # beside its spec the file is checked against it too (entries naming no op or case of that spec)
    path = write(tmp_path / "known" if callable(content) else tmp_path, content, "known_differences.yaml")
    monkeypatch.setattr(paths, "known_differences_file", lambda: path)
    result, seconds = invoke("check", "--spec", spec_path, "--op", "sum", "--backend", "numpy")
    assert_problems(result, seconds, 2, path, needle, one=True)


def test_catastrophic_known_difference_regex_is_a_result_not_a_hang(tmp_path, monkeypatch):
    # the case fails on numpy (nothing raised): the entry's regex is searched on that message
    spec_path = write(tmp_path, spec("{id: a, inputs: [{shape: [2, 3]}], raises: ValueError}"))
    path = write(tmp_path, "- {op: sum, backend: numpy, match: '(.|.|.|.)*Z', reason: r, count: 1}\n", "known.yaml")
    monkeypatch.setattr(paths, "known_differences_file", lambda: path)
    result, seconds = invoke("check", "--spec", spec_path, "--op", "sum", "--backend", "numpy")
    assert_no_traceback(result)
    assert seconds < SECONDS and result.exit_code == 1, (seconds, result.exit_code, result.stdout[-2000:])


# ---------------------------------------------------------------------------- the bounds themselves
@pytest.mark.parametrize(
    "expr, names, message",
    [
        ("prod([7]*2000000)", {}, "repeated 2000000 times"),
        ("prod(x)", {"x": [7] * 250000}, "past the limit of 2**31"),
        ("'%0999999999d' % 0", {}, "% works on numbers only"),
        ("x % 0", {"x": "%0999999999d"}, "% works on numbers only"),
        ("-" * 2000 + "x[0]", {"x": [1]}, "longer than 1000 characters"),
        ("-" * 100 + "x[0]", {"x": [1]}, "nested more than 30 levels deep"),
        ("[1] * x", {"x": 2**40}, "repeated 1099511627776 times"),
        ("x * x", {"x": 2**30}, "past the limit of 2**31"),
        ("list(x)", {"x": "a" * 10**7}, "a str of 10000000 items"),
        ("x + x", {"x": list(range(40))}, "a list of 80 items"),
        ("drop(x, 0)", {"x": list(range(10**6))}, "a list of 1000000 items"),
        ("f'{x:099999999}'", {"x": 1}, "JoinedStr is not allowed"),
        ("x.__class__", {"x": 1}, "attribute access is not allowed"),
        ("x\0", {"x": 1}, "null bytes"),
    ],
)
def test_shape_rule_language_is_bounded(expr, names, message):
    started = time.monotonic()
    with pytest.raises(shapes.ShapeExprError) as info:
        shapes.evaluate(expr, names)
    assert time.monotonic() - started < SECONDS
    assert message in str(info.value) and len(str(info.value)) < 300


def test_shape_rule_bounds_keep_real_rules():
    assert shapes.evaluate("x[:1] + y[1:]", {"x": [2, 3], "y": [3, 4]}) == [2, 4]
    assert shapes.evaluate("x[1:2]", {"x": "a" * 10**7}) == ["a"]  # sliced before it is copied
    assert shapes.evaluate("[prod(x)]", {"x": [1000, 1000, 1000]}) == [10**9]
    assert shapes.evaluate("x % 3", {"x": 7}) == 1
    with pytest.raises(shapes.ShapeExprError, match="a list of 1 items repeated 65 times"):
        shapes.expected_shape([{"shape": "[1] * 65"}], {})


SLOW = ("(a+)+b", "a" * 5000)  # past the regex engine's time limit too


@pytest.fixture
def short_regex_timeout(monkeypatch):
    """0.2 s instead of 1 s: the same code paths, a faster suite."""
    monkeypatch.setattr(known.regexes, "REGEX_TIMEOUT", 0.2)
    monkeypatch.setattr(raises, "MATCH_TIMEOUT", 0.2)


def test_known_difference_regex_timeout_is_no_match_with_a_note(short_regex_timeout):
    entry = {"op": "sum", "backend": "numpy", "match": SLOW[0], "reason": "r"}
    results = [
        Result(op="sum", case=c, backend="numpy", mode="eager", status="fail", message=SLOW[1]) for c in ("a", "b", "c")
    ]
    started = time.monotonic()
    assert known.search(*SLOW) is None
    assert known.explains(entry, results[0]) is False
    applied = known.apply(results, [entry])
    assert time.monotonic() - started < SECONDS  # one timeout per entry, not one per result
    assert [r.known for r in results] == [None, None, None]
    assert "its match regex timed out after 0.2 s" in results[0].note and results[1].note is None
    (stale,) = applied.stale
    assert "timed out after 0.2 s, so 3 were not searched" in stale["note"]


def test_case_match_timeout_is_no_match_with_a_note(short_regex_timeout):
    header = {
        "status": "raised",
        "error": {"type": "ValueError", "mro": ["ValueError", "Exception"], "message": SLOW[1]},
    }
    started = time.monotonic()
    verdict = judge_raises("ValueError", SLOW[0], header)
    assert time.monotonic() - started < SECONDS
    assert verdict.status == "fail" and "the regex search timed out after 0.2 s: taken as no match" in verdict.message


def test_known_load_gives_one_line_for_each_unreadable_file(tmp_path):
    with pytest.raises(KbtoolError) as info:
        known.load("/dev/zero")
    assert str(info.value) == "cannot read /dev/zero: not a regular file (a character device)"
    assert known.load(str(tmp_path / "absent.yaml")) == []
