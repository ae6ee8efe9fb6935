"""The spec against the five doc pages (KBTOOL_DOCS, default ../shared/seeds), line by line: signatures per doc version, Raises per doc
version, doc errors recorded as such, and shape rules where the docs state a shape (issue #8, items 1, 4, 6)."""

import ast
import os
import re

import numpy as np
import pytest
from click.testing import CliRunner

from kbtool import reference
from kbtool.cli import main
from kbtool.specs import loader, shapes

_NAME = re.compile(r"[a-z_][a-z0-9_]*")
_SIGNATURE = re.compile(r"^(?:keras\.backend\.|backend\.)?([a-z_][a-z0-9_]*)\((.*)$")
_RAISES = re.compile(r"^(?:#+\s*)?(?:\*\*|__)?(?:Raises|例外|异常|예외)(?:\*\*|__)?\s*:?$")


def _signature_line(text):
    match = _SIGNATURE.match(text.strip().strip("`").strip())
    if not match:
        return None
    args = match.group(2)
    complete = args.endswith(")")  # ja-2 cuts a few long signature lines short
    return match.group(1), args[:-1] if complete else args, complete


def _sections(path):
    """{heading: (signature name, args text, complete, [lines of the section])}: a heading is a line holding only a
    function name (`### name` in Markdown) followed within five lines by a signature line."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    found = []
    for i, line in enumerate(lines):
        heading = line.strip().lstrip("#").strip().strip("`").replace("-", "_")  # ja-1's "one-hot", ja-2's `rnn`
        if line.strip().startswith("```") or not _NAME.fullmatch(heading):  # "```python" opens a code block
            continue
        for j in range(i + 1, min(i + 6, len(lines))):
            sig = _signature_line(lines[j])
            if sig:
                found.append((i, j, heading, sig))
                break
    out = {}
    for k, (_i, j, heading, sig) in enumerate(found):
        end = found[k + 1][0] if k + 1 < len(found) else len(lines)
        out.setdefault(heading, sig + (lines[j + 1 : end],))
        out.setdefault(sig[0], sig + (lines[j + 1 : end],))  # a misnamed heading (ja-1's "normalize_batch")
    return out


@pytest.fixture(scope="module")
def pages(spec, docs_dir):
    return {doc: _sections(os.path.join(docs_dir, d["file"])) for doc, d in spec.docs.items()}


def _params(args):
    """A signature's parameters as (name, default or None, has a default); tuples compared as lists."""
    parts, depth, current = [], 0, ""
    for ch in args:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    out = []
    for part in parts:
        name, eq, default = part.partition("=")
        value = None
        if eq:
            try:
                value = _as_lists(ast.literal_eval(default.strip()))
            except (ValueError, SyntaxError):
                value = default.strip()
        out.append((name.strip(), value, bool(eq)))
    return out


def _as_lists(value):
    return [_as_lists(v) for v in value] if isinstance(value, (list, tuple)) else value


def _spec_params(entry, doc):
    return [
        (p["name"], _as_lists(p.get("default")), "default" in p)
        for p in entry["signature"]
        if doc in p.get("docs", [doc])
    ]


def _documented(entry, doc):
    return [c["signature"] for c in entry.get("signature_changes", []) if doc in c["docs"] and "signature" in c]


def test_every_documented_signature_line_is_the_spec_signature_or_a_recorded_change(spec, pages):
    wrong = []
    for name, entry in spec.ops.items():
        for doc in entry["documented_in"]:
            if name not in pages[doc]:
                continue  # a section without a heading of its own (ja-1's print_tensor): test_spec checks those
            sig_name, args, complete, _ = pages[doc][name]
            if sig_name != name:
                if not any(doc in e["docs"] and sig_name in e["claim"] for e in entry.get("doc_errors", [])):
                    wrong.append(f"{name} {doc}: signature line names {sig_name} and no doc error says so")
                continue
            got, want = _params(args), _spec_params(entry, doc)
            if not complete:  # cut short: its whole parameters are a prefix of the spec's
                got = got[:-1]
                want = want[: len(got)]
            if got == want:
                continue
            line = "{}({}{}".format(sig_name, args, ")" if complete else "")
            if line not in _documented(entry, doc):
                wrong.append(f"{name} {doc}: documented {line} is neither the spec's signature nor a signature change")
    assert not wrong, "\n".join(wrong)


def test_every_signature_change_quotes_its_doc_versions_verbatim(spec, pages):
    checked = 0
    for name, entry in spec.ops.items():
        for change in entry.get("signature_changes", []):
            for doc in change["docs"] if "signature" in change else []:
                sig_name, args, complete, _ = pages[doc][name]
                assert change["signature"] == f"{sig_name}({args})", (name, doc)
                checked += 1
    assert checked >= 50


@pytest.mark.parametrize(
    "op, docs, needles",
    [
        (
            "conv2d",
            ["ja-1", "ja-1md"],
            ["strides=(1, 1)", "border_mode='valid'", "dim_ordering='th'", "image_shape=None", "filter_shape=None"],
        ),
        ("pool2d", ["ja-1", "ja-1md"], ["border_mode='valid'", "dim_ordering='th'", "pool_mode='max'"]),
        ("ctc_decode", ["ja-1", "ja-1md"], ["beam_width=None", "dict_seq_lens=None", "dict_values=None"]),
        ("normalize_batch_in_training", ["ja-1", "ja-1md"], ["epsilon=0.0001"]),
        ("placeholder", ["ja-1", "ja-1md"], ["dtype='float32'"]),
        ("variable", ["ja-1", "ja-1md"], ["dtype='float32'"]),
        ("batch_get_value", ["ja-1", "ja-1md"], ["(xs)"]),
        ("function", ["ja-2", "zh-2.2", "ko-2.2"], ["updates=None)"]),
    ],
)
def test_the_audited_keras_1_signatures(spec, op, docs, needles):
    for doc in docs:
        (line,) = _documented(spec.ops[op], doc)
        for needle in needles:
            assert needle in line, (op, doc, needle)


def test_conv2d_and_pool2d_notes_name_the_keras_1_parameters(spec):
    for op in ("conv2d", "pool2d"):
        (change,) = [c for c in spec.ops[op]["signature_changes"] if "ja-1" in c["docs"]]
        assert "border_mode" in change["note"] and "dim_ordering" in change["note"]


def test_argmin_is_documented_in_ja_2_whose_signature_line_misprints_argmax(spec, pages):
    entry = spec.ops["argmin"]
    assert "ja-2" in entry["documented_in"]
    assert pages["ja-2"]["argmin"][0] == "argmax"
    (error,) = [e for e in entry["doc_errors"] if e["docs"] == ["ja-2"]]
    assert "argmax" in error["claim"]


def _raises_in_docs(pages, name):
    """{doc: [the Raises items]} of an op's sections; an empty heading gives []."""
    found = {}
    for doc, sections in pages.items():
        if name not in sections:
            continue
        body = sections[name][3]
        for i, line in enumerate(body):
            if _RAISES.match(line.strip()):
                items = []
                for item in body[i + 1 : i + 9]:
                    text = item.strip()
                    if not text:
                        if items:
                            break
                        continue
                    if "Error" not in text:
                        break
                    items.append(text)
                found[doc] = items
    return found


def test_raises_name_exactly_the_doc_versions_whose_raises_section_lists_them(spec, pages):
    wrong = []
    for name, entry in spec.ops.items():
        in_docs = {doc for doc, items in _raises_in_docs(pages, name).items() if items}
        in_spec = {doc for r in entry.get("raises", []) for doc in r.get("docs", [])}
        if in_docs != in_spec:
            wrong.append(f"{name}: docs {sorted(in_docs)} spec {sorted(in_spec)}")
    assert not wrong, "\n".join(wrong)


def test_a_raise_no_doc_documents_says_where_the_source_raises_it(spec):
    from_source = {name for name, entry in spec.ops.items() for r in entry.get("raises", []) if "source" in r}
    assert {"batch_dot", "set_floatx", "set_image_data_format"} <= from_source
    (batch_dot,) = spec.ops["batch_dot"]["raises"]
    assert "docs" not in batch_dot and "batch_dot" in batch_dot["source"]


def test_bias_add_raises_are_in_zh_2_2_and_conv2d_has_none_in_ja_2(spec, pages):
    assert all("zh-2.2" in r["docs"] for r in spec.ops["bias_add"]["raises"])
    assert _raises_in_docs(pages, "conv2d")["ja-2"] == []  # the heading is there, empty
    assert all("ja-2" not in r["docs"] for r in spec.ops["conv2d"]["raises"])
    assert any(e["docs"] == ["ja-2"] for e in spec.ops["conv2d"]["doc_errors"])


def test_clip_says_its_max_below_min_rule_comes_from_the_source(spec):
    entry = spec.ops["clip"]
    assert "Not in the docs, from the source" in entry["returns"]
    (case,) = [c for c in entry["cases"] if c["id"] == "max_below_min"]
    assert "documented" not in case["about"]
    assert entry["doc_errors"][0]["docs"] == ["ko-2.2"]  # its NumPy implementation gives max_value instead


def test_ctc_decode_keeps_the_documented_log_prob_shape_as_the_docs_claim(spec):
    (error,) = spec.ops["ctc_decode"]["doc_errors"]
    assert "(top_paths,)" in error["claim"] and "(samples, top_paths)" in error["actual"]


# ---------------------------------------------------------------------------- doc errors
def test_relu_threshold_formula_is_a_doc_error_and_the_reference_follows_the_backends(spec):
    (error,) = spec.ops["relu"]["doc_errors"]
    assert error["docs"] == ["ko-2.2"] and "threshold <= x" in error["claim"]
    x = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 0.75, 3.0], dtype="float32")
    np.testing.assert_allclose(reference.relu(x, threshold=0.5), [0, 0, 0, 0, 0, 0.75, 3.0])  # 0 at x == 0.5
    np.testing.assert_allclose(
        reference.relu(x, alpha=0.1, max_value=2.0, threshold=0.5), [-0.25, -0.15, -0.1, -0.05, 0, 0.75, 2.0], rtol=1e-6
    )
    # a negative threshold without max_value keeps x in (threshold, 0) as it is (no clip at 0)
    np.testing.assert_allclose(reference.relu(x, threshold=-1.0), [0, 0, -0.5, 0, 0.5, 0.75, 3.0])
    np.testing.assert_allclose(reference.relu(x), np.maximum(x, 0))


def test_the_relu_doc_error_is_no_known_difference_any_more():
    from kbtool import known, paths

    entries = known.load(paths.known_differences_file())
    about = [e for e in entries if "threshold_exact" in str(e.case or "") + str(e.match or "")]
    # the doc error is fixed in the spec: only PlaidML, whose relu keeps x == threshold, and keras-numpy, whose relu
    # is the docs' NumPy implementation itself (Keras 2.3.1's numpy_backend.py), have an entry for that case
    assert [e.to_dict()["backend"] for e in about] == ["plaidml", "keras-numpy"]
    assert "relu doc_errors" in about[1].reason


@pytest.mark.parametrize(
    "op", ["relu", "batch_dot", "dtype", "image_data_format", "argmin", "conv2d", "clip", "ctc_decode"]
)
def test_doc_errors_are_recorded_with_their_evidence(spec, op):
    for error in spec.ops[op]["doc_errors"]:
        assert set(error["docs"]) <= set(spec.ops[op]["documented_in"])
        assert error["claim"] and error["actual"] and error["evidence"]


def test_spec_show_prints_the_doc_errors():
    result = CliRunner().invoke(main, ["spec", "show", "relu"])
    assert result.exit_code == 0
    assert "Doc errors" in result.output and "threshold <= x" in result.output


HEADER = """schema_version: 1
docs:
  ko-2.2: {file: 004.txt, lang: ko}
  zh-2.2: {file: 003.txt, lang: zh}
ops:
  abs:
    category: math
    summary: s
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
"""


@pytest.mark.parametrize(
    "body, needle",
    [
        ("    doc_errors: [{docs: [ko-2.2], claim: c, actual: a}]\n", "'evidence' is a required property"),
        ("    doc_errors: [{docs: [ko-2.2], claim: c, actual: a, evidence: e, why: w}]\n", "Additional properties"),
        ("    doc_errors: [{docs: [], claim: c, actual: a, evidence: e}]\n", "should be non-empty"),
        ("    doc_errors: [{docs: [ko-2.2], claim: '', actual: a, evidence: e}]\n", "should be non-empty"),
        (
            "    doc_errors: [{docs: [zh-2.2], claim: c, actual: a, evidence: e}]\n",
            "doc version 'zh-2.2' does not document this op",
        ),
        (
            "    doc_errors: [{docs: [ja-9], claim: c, actual: a, evidence: e}]\n",
            "doc version 'ja-9' does not document",
        ),
        ("    raises: [{type: ValueError, when: w}]\n", "is not valid under any of the given schemas"),
        ("    raises: [{type: ValueError, when: w, docs: [ko-2.2], source: s}]\n", "is valid under each of"),
    ],
)
def test_a_malformed_doc_error_or_raise_is_refused_in_one_line(tmp_path, body, needle):
    path = tmp_path / "ops.yaml"
    path.write_text(HEADER + body)
    result = CliRunner().invoke(main, ["spec", "validate", str(path)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert needle in lines[0] and ":11: ops.abs." in lines[0]


def test_a_well_formed_doc_error_loads(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(HEADER + "    doc_errors: [{docs: [ko-2.2], claim: c, actual: a, evidence: e}]\n")
    assert loader.load(str(path)).ops["abs"]["doc_errors"][0]["claim"] == "c"


# ---------------------------------------------------------------------------- shape rules
REDUCTIONS = ["sum", "mean", "max", "min", "prod", "var", "std", "any", "all", "logsumexp"]


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize(
    "axis, keepdims, want",
    [
        (None, False, []),
        (None, True, [1, 1, 1]),
        (1, False, [2, 4]),
        (-1, False, [2, 3]),
        (-3, True, [1, 3, 4]),
        ([0, 2], False, [3]),
        ([0, -1], True, [1, 3, 1]),
        ((1, 2), False, [2]),
        ([2, 0], False, [3]),
    ],
)
def test_each_reduction_has_the_documented_shape(spec, op, axis, keepdims, want):
    names = {"x": [2, 3, 4], "axis": axis, "keepdims": keepdims}
    assert shapes.expected_shape(spec.ops[op]["shape_rules"], names)[0] == want
    x = np.random.default_rng(0).uniform(0.5, 1.5, size=(2, 3, 4)).astype("float32")
    ref_axis = list(axis) if isinstance(axis, tuple) else axis
    assert list(np.shape(getattr(reference, op)(x, axis=ref_axis, keepdims=keepdims))) == want  # the reference agrees


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reductions_drop_their_axis(spec, op):
    rules = spec.ops[op]["shape_rules"]
    assert shapes.expected_shape(rules, {"x": [2, 3, 4], "axis": -1})[0] == [2, 3]
    assert shapes.expected_shape(rules, {"x": [2, 3, 4], "axis": 0})[0] == [3, 4]


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_cumulative_ops_keep_the_shape(spec, op):
    assert shapes.expected_shape(spec.ops[op]["shape_rules"], {"x": [2, 3], "axis": 1})[0] == [2, 3]


def _conv_names(x, kernel, strides, padding, data_format, dilation=(1, 1)):
    return {
        "x": list(x),
        "kernel": list(kernel),
        "strides": list(strides),
        "padding": padding,
        "data_format": data_format,
        "dilation_rate": list(dilation),
    }


@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
@pytest.mark.parametrize("padding", ["valid", "same"])
@pytest.mark.parametrize("strides", [(1, 1), (2, 1), (2, 3)])
@pytest.mark.parametrize("rows", [7, 8])
def test_conv2d_and_pool2d_rules_hold_on_the_reference_in_both_data_formats(spec, data_format, padding, strides, rows):
    cf = data_format == "channels_first"
    x = np.random.default_rng(1).normal(size=(2, 3, rows, 6) if cf else (2, rows, 6, 3)).astype("float32")
    kernel = np.ones((3, 2, 3, 4), dtype="float32")
    names = _conv_names(x.shape, kernel.shape, strides, padding, data_format)
    got = reference.conv2d(x, kernel, strides=strides, padding=padding, data_format=data_format)
    assert shapes.expected_shape(spec.ops["conv2d"]["shape_rules"], names)[0] == list(got.shape)
    names = {
        "x": list(x.shape),
        "pool_size": [3, 2],
        "strides": list(strides),
        "padding": padding,
        "data_format": data_format,
        "pool_mode": "max",
    }
    got = reference.pool2d(x, (3, 2), strides=strides, padding=padding, data_format=data_format)
    assert shapes.expected_shape(spec.ops["pool2d"]["shape_rules"], names)[0] == list(got.shape)


def test_channels_first_same_convolutions_and_pools_have_rules(spec):
    cases = {
        "conv1d": ({"x": [2, 3, 7], "kernel": [3, 3, 4], "strides": 2, "dilation_rate": 1}, [2, 4, 4]),
        "conv2d": (_conv_names([2, 3, 7, 6], [3, 3, 3, 4], [2, 2], "same", "channels_first"), [2, 4, 4, 3]),
        "conv3d": (
            {"x": [1, 2, 5, 6, 7], "kernel": [2, 2, 2, 2, 3], "strides": [2, 2, 2], "dilation_rate": [1, 1, 1]},
            [1, 3, 3, 3, 4],
        ),
        "separable_conv2d": (
            {
                "x": [1, 2, 7, 6],
                "depthwise_kernel": [3, 3, 2, 1],
                "pointwise_kernel": [1, 1, 2, 5],
                "strides": [2, 2],
                "dilation_rate": [1, 1],
            },
            [1, 5, 4, 3],
        ),
        "depthwise_conv2d": (
            {"x": [1, 2, 7, 6], "depthwise_kernel": [3, 3, 2, 2], "strides": [2, 2], "dilation_rate": [1, 1]},
            [1, 4, 4, 3],
        ),
        "pool2d": ({"x": [1, 2, 7, 6], "pool_size": [3, 3], "strides": [2, 2]}, [1, 2, 4, 3]),
        "pool3d": ({"x": [1, 2, 5, 6, 7], "pool_size": [2, 2, 2], "strides": [2, 2, 2]}, [1, 2, 3, 3, 4]),
        "conv2d_transpose": (
            {"x": [1, 2, 3, 3], "kernel": [3, 3, 4, 2], "output_shape": [1, 4, 6, 6], "strides": [2, 2]},
            [1, 4, 6, 6],
        ),
    }
    for op, (names, want) in cases.items():
        names = dict(names, padding="same", data_format="channels_first")
        assert shapes.expected_shape(spec.ops[op]["shape_rules"], names)[0] == want, op


def test_elementwise_and_comparison_rules(spec):
    for op in ("abs", "exp", "sqrt", "square", "round", "sign"):
        assert shapes.expected_shape(spec.ops[op]["shape_rules"], {"x": [2, 3]})[0] == [2, 3]
    for op in ("equal", "greater", "less_equal", "maximum", "minimum", "lesser"):
        assert shapes.expected_shape(spec.ops[op]["shape_rules"], {"x": [2, 3], "y": [3]})[0] == [2, 3]
    assert shapes.expected_shape(spec.ops["reshape"]["shape_rules"], {"x": [2, 3, 4], "shape": [-1, 4]})[0] == [6, 4]


def test_a_rule_about_a_tensor_parameter_skips_a_case_that_passes_a_callable(spec):
    rules = spec.ops["switch"]["shape_rules"]
    assert shapes.expected_shape(rules, {"condition": []}) == (None, None)  # then_expression is a step function
    assert shapes.expected_shape(rules, {"condition": [], "then_expression": [2, 3]})[0] == [2, 3]
    with pytest.raises(shapes.ShapeExprError, match="unknown name"):  # a shape (not a `when`) still needs its names
        shapes.expected_shape([{"shape": "y"}], {"x": [2]})


@pytest.mark.parametrize(
    "expr, names, message",
    [
        ("axes(x, 3)", {"x": [2, 3]}, "axis 3 is not an axis of a rank-2 shape"),
        ("axes(x, [0, 'a'])", {"x": [2, 3]}, "is not an axis"),
        ("broadcast(x, y)", {"x": [2, 3], "y": [4]}, "do not broadcast"),
    ],
)
def test_the_new_shape_functions_refuse_what_makes_no_shape(expr, names, message):
    with pytest.raises(shapes.ShapeExprError, match=message):
        shapes.evaluate(expr, names)


def test_shape_rules_cover_the_functions_whose_docs_state_a_shape(spec):
    with_rules = {name for name, entry in spec.ops.items() if entry.get("shape_rules")}
    assert len(with_rules) >= 116
    must = set(REDUCTIONS) | {
        "argmax",
        "argmin",
        "cumsum",
        "cumprod",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv2d_transpose",
        "conv3d_transpose",
        "separable_conv1d",
        "separable_conv2d",
        "depthwise_conv2d",
        "pool2d",
        "pool3d",
        "reshape",
        "equal",
        "maximum",
        "switch",
    }
    assert must <= with_rules, sorted(must - with_rules)
