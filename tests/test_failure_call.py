"""Failures show the call (#33, item 6): kbtool/specs/call.py writes the call a case makes as code, with its inputs'
shapes, dtypes and values in a few words; every non-pass result carries it in the JSON report and every view shows
it; a report from before calls still renders. Fast: no backend (a planted module runs on kbtool's own Python)."""

import ast
import io
import json
import os
import re
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner
from rich.console import Console

from kbtool import reports
from kbtool.cli import main
from kbtool.reports import report as report_format
from kbtool.specs import call, cases, loader
from kbtool.specs.call import Call, Input

from .helpers import available, make_report, record

CONV = {"tensor": 0}, {"tensor": 1, "weight": True}


def case_of(op, args, kwargs=None, arrays=(), params=(), grad=False, tensor_indices=(), then=()):
    """A stand-in for kbtool.specs.cases.Case: what call.of_case reads."""
    return SimpleNamespace(
        op=op,
        args=list(args),
        kwargs=dict(kwargs or {}),
        arrays=[np.asarray(a) for a in arrays],
        params=list(params),
        grad=grad,
        tensor_indices=list(tensor_indices),
        then=list(then),
    )


# ------------------------------------------------------------------------------------------------ the code form
def test_inputs_show_shape_dtype_and_range_and_keywords_are_python():
    x = np.linspace(-1.9, 2.3, 150, dtype="float32").reshape(2, 5, 5, 3)
    kernel = np.full((3, 3, 3, 4), 0.5, dtype="float32")
    case = case_of(
        "conv2d",
        [*CONV, {"tuple": [2, 1]}],
        {"padding": {"value": "same"}, "data_format": {"value": None}},
        [x, kernel],
        ["x", "kernel", "strides", "padding", "data_format"],
    )
    assert str(call.of_case(case)) == (
        "K.conv2d(x[2,5,5,3] float32 in [-1.9, 2.3], kernel[3,3,3,4] float32 all 0.5, strides=(2, 1), "
        "padding='same', data_format=None)"
    )


def test_small_arrays_are_written_out_and_large_ones_summarised():
    assert call.summary(np.array([[1, 2], [3, 4]], dtype="int32")) == "[[1, 2], [3, 4]]"
    assert call.summary(np.array(0.5, dtype="float32")) == "0.5"
    assert call.summary(np.array([0.1234567, -2.0])) == "[0.123, -2]"
    assert call.summary(np.arange(7)) == "in [0, 6]"
    assert call.summary(np.array([1.0, np.nan, np.inf, -3.0, 2.0, 5.0, np.nan])) == "in [-3, 5], 2 nan, 1 inf"
    assert call.summary(np.array([True, False] * 4)) == "4 of 8 True"
    assert call.summary(np.zeros((0, 3))) == "empty"
    assert call.summary(np.full(10, np.nan)) == "10 nan"


def test_literals_tuples_strings_none_steps_lists_and_nested_calls():
    case = case_of(
        "rnn",
        [{"step": "rnn_sum"}, {"tensor": 0}, {"list": [{"tensor": 1}, {"tensor": 2}]}],
        {"go_backwards": {"value": True}, "axis": {"tuple": [0]}, "name": {"value": "it's"}},
        [np.ones((2, 4, 3)), np.zeros((2, 4)), np.array([1.5])],
        ["step_function", "inputs", "initial_states"],
    )
    assert str(call.of_case(case)) == (
        "K.rnn(rnn_sum, inputs[2,4,3] float64 all 1, [initial_states0[2,4] float64 all 0, "
        'initial_states1[1] float64 [1.5]], go_backwards=True, axis=(0,), name="it\'s")'
    )
    nested = case_of(
        "gradients",
        [{"call": "sum", "args": [{"call": "square", "args": [{"tensor": 0}]}]}, {"list": [{"tensor": 0}]}],
        arrays=[np.array([1.0, 2.0])],
        params=["loss", "variables"],
    )
    # an input named a second time is written by its name alone
    assert str(call.of_case(nested)) == "K.gradients(K.sum(K.square(a0[2] float64 [1, 2])), [a0])"


def test_a_gradient_case_and_then_calls_are_written_as_they_run():
    grad = case_of("relu", [{"tensor": 0}], arrays=[np.array([-1.0, 1.0])], params=["x"], grad=True, tensor_indices=[0])
    assert str(call.of_case(grad)) == "K.gradients(K.sum(K.relu(x[2] float64 [-1, 1])), [x])"
    then = case_of(
        "get_uid",
        [{"value": "a"}],
        params=["prefix"],
        then=[{"op": "get_uid", "args": [{"value": "a"}]}, {"op": "eval", "args": [{"result": 0}]}],
    )
    assert str(call.of_case(then)) == "K.get_uid(prefix='a'); K.get_uid('a'); K.eval(result0)"


def test_a_real_case_is_the_call_the_worker_gets():
    spec = loader.load()
    (case,) = [c for c in cases.cases_for(spec, "conv2d") if c.id == "same"]
    found = call.of_case(case)
    x, kernel = case.arrays
    assert found.op == "conv2d" and found.kwargs == {"padding": "'same'"}
    assert [(i.name, i.shape, i.dtype) for i in found.inputs()] == [
        ("x", x.shape, "float32"),
        ("kernel", kernel.shape, "float32"),
    ]
    low, high = (float(v) for v in re.findall(r"in \[(\S+), (\S+)\]", found.inputs()[0].summary)[0])
    assert low == pytest.approx(float(x.min()), rel=1e-2) and high == pytest.approx(float(x.max()), rel=1e-2)


def test_the_stored_form_round_trips_and_is_what_the_schema_says():
    spec = loader.load()
    schema = json.load(open(os.path.join(os.path.dirname(report_format.__file__), "report.schema.json")))
    validator = jsonschema.Draft202012Validator({"$ref": "#/$defs/call", "$defs": schema["$defs"]})
    for op in ("conv2d", "gradients", "get_uid", "rnn", "concatenate", "random_normal", "in_top_k"):
        for case in cases.cases_for(spec, op):
            data = call.of_case(case).as_dict()
            json.dumps(data)  # plain JSON
            assert Call.from_dict(data).as_dict() == data and str(Call.from_dict(data)) == str(call.of_case(case))
            assert call.is_plain(data) and not list(validator.iter_errors(data)), (op, case.id)
    bad = {"op": "abs", "args": [{"name": "x", "shape": [-1], "dtype": "float32"}]}
    assert not call.is_plain(bad) and list(validator.iter_errors(bad))
    assert call.stored({"op": 3, "args": []}) is None and call.text_of({"status": "fail"}) == ""


def test_every_case_of_the_spec_has_a_call_that_fits_the_schema():
    spec = loader.load()
    made = [(op, c.id, call.of_case(c)) for op in spec.ops for c in cases.cases_for(spec, op)]
    assert len(made) > 1000
    assert [(op, case_id) for op, case_id, found in made if not call.is_plain(found.as_dict())] == []
    assert all(str(found).startswith(("K." + op + "(", "K.gradients(K.sum(K." + op + "(")) for op, _, found in made)


def test_lines_break_between_arguments_and_cut_a_too_wide_one_with_dots():
    wide = Call("concatenate", [[Input(f"tensors{i}", (2, 3), "float32", "in [-1.5, 2.25]") for i in range(6)]])
    lines = wide.lines(80, "      call: ", "          ")
    assert len(lines) > 1 and all(len(line) <= 80 for line in lines)
    assert " ".join(line.strip() for line in lines).replace("call: ", "") == str(wide)
    huge = Call("f", [], {"name": "'" + "x" * 200 + "'"})
    (line,) = huge.lines(80, "")
    assert len(line) == 80 and line.endswith("...")


# ------------------------------------------------------------------------------------------------ every view
CALLED = {
    "op": "conv2d",
    "args": [
        {"name": "x", "shape": [2, 5, 5, 3], "dtype": "float32", "summary": "in [-1.9, 2.3]"},
        {"name": "kernel", "shape": [3, 3, 3, 4], "dtype": "float32", "summary": "in [-2.1, 2]"},
    ],
    "kwargs": {"strides": "(2, 1)", "padding": "'same'"},
}
CODE = (
    "K.conv2d(x[2,5,5,3] float32 in [-1.9, 2.3], kernel[3,3,3,4] float32 in [-2.1, 2], strides=(2, 1), padding='same')"
)


def called_report(with_call=True):
    extra = {"call": CALLED} if with_call else {}
    results = [
        record("conv2d", "a", "alpha", "pass"),
        record("conv2d", "same", "alpha", "fail", message="values differ", **extra),
        record("conv2d", "same", "beta", "error", known="beta raises here", **extra),
    ]
    return make_report([available("alpha"), available("beta")], results)


def terminal(report, verbosity):
    console = Console(file=io.StringIO(), width=80, color_system=None)
    reports.render(report, "terminal", verbosity=verbosity, console=console)
    return console.file.getvalue()


@pytest.mark.parametrize("verbosity", [1, 2])
def test_the_terminal_shows_the_call_of_a_failure_within_80_columns(verbosity):
    text = terminal(called_report(), verbosity)
    assert all(len(line) <= 80 for line in text.splitlines())
    if verbosity == 1:  # a screen of groups: the call on one line, without its value summaries (-v: whole)
        (line,) = [line for line in text.splitlines() if line.strip().startswith("call: ")]
        assert line.strip().startswith("call: K.conv2d(x[") and "in [" not in line
        return
    shown = re.search(r"call: (K\.conv2d\(.*?\))\n(?=\s*(reproduce: )?kbtool check)", text, re.S)
    assert shown and " ".join(shown.group(1).split()) == CODE


def test_every_file_view_carries_the_call():
    report = called_report()
    assert CODE in reports.render(report, "markdown")
    html = reports.render(report, "html")
    assert CODE.replace("'", "&#39;") in html  # the divergences table
    data = json.loads(re.search(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S).group(1))
    details = [r[4] for op in data["ops"] for cell in op["r"] for r in cell if len(r) > 4]
    assert [data["calls"][d["a"]] for d in details] == [CODE, CODE]  # both non-pass results, the known one too
    assert CODE in reports.render(report, "github")
    assert "call: " + CODE in reports.render(report, "annotations")
    root = ET.fromstring(reports.render(report, "junit"))
    bodies = {c.tag: c.text for c in root.iter() if c.tag in ("failure", "skipped")}
    assert bodies["failure"].splitlines()[0] == CODE and bodies["failure"].splitlines()[1].startswith("kbtool check")
    assert bodies["skipped"] == CODE  # a known difference: the call, nothing to rerun
    assert json.loads(reports.render(report, "json"))["results"][1]["call"] == CALLED


def test_a_report_from_before_calls_renders_without_them():
    report = called_report(with_call=False)
    for fmt in ("markdown", "html", "github", "annotations", "junit"):
        assert "K.conv2d" not in reports.render(report, fmt), fmt
    assert "call:" not in terminal(report, 2)


def test_a_passing_result_with_a_call_is_not_a_valid_report(tmp_path):
    report = called_report()
    report["results"][0]["call"] = CALLED
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    code = CliRunner().invoke(main, ["report", "render", str(path), "--format", "markdown"])
    assert code.exit_code == 2 and "call" in code.output


# ------------------------------------------------------------------------------------------------ a real check
PLANTED = (
    "import json, os\n"
    "import numpy as _np\n"
    "from kbtool.reference import *\n"
    "def clip(x, min_value=None, max_value=None):\n"
    "    with open(os.environ['KBTOOL_TEST_SEEN'], 'a') as f:\n"
    "        f.write(json.dumps(_np.asarray(x).tolist()) + '\\n')\n"
    "    return _np.clip(_np.asarray(x), min_value, max_value) + 1.0  # planted: off by one\n"
)


@pytest.fixture
def planted_clip(custom_backend, no_known, tmp_path, monkeypatch):
    seen = tmp_path / "seen.jsonl"
    monkeypatch.setenv("KBTOOL_TEST_SEEN", str(seen))
    monkeypatch.setenv("COLUMNS", "80")
    return custom_backend("kbcall", "offbyone", PLANTED), no_known, seen


def test_a_check_stores_the_call_on_each_non_pass_result_only(planted_clip):
    name, no_known, _ = planted_clip
    result = CliRunner().invoke(
        main, ["check", "--op", "clip", "--backend", name, "--mode", "eager", "--known", no_known, "--json"]
    )
    report = json.loads(result.stdout)
    failing = [r for r in report["results"] if r["status"] != "pass"]
    assert result.exit_code == 1 and failing
    assert all(r["call"]["op"] == "clip" and r["call"]["args"][0]["name"] == "x" for r in failing)
    assert all("call" not in r for r in report["results"] if r["status"] == "pass")


def test_show_inputs_prints_the_arrays_the_backend_got(planted_clip):
    name, no_known, seen = planted_clip
    args = ["check", "--op", "clip", "--case", "basic", "--backend", name, "--mode", "eager", "--known", no_known]
    result = CliRunner().invoke(main, args + ["--show-inputs"])
    assert result.exit_code == 1, result.output
    got = np.array(json.loads(seen.read_text().splitlines()[0]))
    out = result.stdout
    assert "call: K.clip(x[" in out and all(len(line) <= 80 for line in out.splitlines())
    printed = out[out.index("x = ") + 4 :]
    printed = printed[: printed.index("]]") + 2] if got.ndim == 2 else printed[: printed.index("]") + 1]
    assert np.allclose(np.array(ast.literal_eval(" ".join(printed.split()))), got, atol=1e-4)
    plain = CliRunner().invoke(main, args)
    assert "x = " not in plain.stdout
    refused = CliRunner().invoke(main, args + ["--show-inputs", "--json"])
    assert refused.exit_code == 2 and "--show-inputs" in refused.output


# ------------------------------------------------------------------------------------------------ spec show
def test_spec_show_is_a_page_at_80_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    result = CliRunner().invoke(main, ["spec", "show", "batch_dot"])
    lines = result.stdout.splitlines()
    assert result.exit_code == 0 and max(len(line) for line in lines) <= 80
    assert lines[0] == "K.batch_dot(x, y, axes=None)"
    assert any(line.strip().startswith("K.batch_dot(x[7,3,4,5] float32") for line in lines)
    assert any("known-difference entr" in line for line in lines) and any("rtol" in line for line in lines)
    raw = CliRunner().invoke(main, ["spec", "show", "batch_dot", "--yaml"])
    assert raw.exit_code == 0 and raw.stdout.startswith("batch_dot:\n  category: linalg")
    both = CliRunner().invoke(main, ["spec", "show", "batch_dot", "--yaml", "--json"])
    assert both.exit_code == 2


def test_every_op_page_fits_80_columns():
    from rich.cells import cell_len

    from kbtool.specs import domains, page

    spec = loader.load()
    for op in spec.ops:
        expanded = cases.cases_for(spec, op)
        grid = [c for c in expanded if c.id.startswith("grid.")]
        own = [c for c in expanded if not c.id.startswith("grid.")]
        facts = page.PageFacts(domains=domains.param_domains(spec, op))
        lines = page.render(op, spec.ops[op], own, grid, facts, 80)
        # in terminal columns: a Japanese or Chinese doc's words take two each
        assert all(cell_len(line) <= 80 for line in lines), (op, [line for line in lines if cell_len(line) > 80])


@pytest.mark.slow
def test_a_result_opened_in_the_browser_shows_its_call(tmp_path):
    from .test_html_scoreboard import open_views

    page = tmp_path / "report.html"
    page.write_text(reports.render(called_report(), "html"))
    (dom,) = open_views(str(page), ["op=conv2d&open=conv2d/alpha"], tmp_path).values()
    assert CODE in dom.panel_text()


def test_a_call_cut_to_a_few_lines_drops_its_value_summaries_first_and_keeps_every_argument():
    made = Call(
        "conv3d",
        [
            Input("x", (1, 2, 4, 4, 4), "float32", "in [-2.78, 2.3]"),
            Input("kernel", (2, 2, 2, 2, 3), "float32", "in [-1.97, 2.17]"),
        ],
        {"data_format": "'channels_first'"},
    )
    record = {"call": made.as_dict()}
    assert len(call.lines_of(record, 60, "call: ", "    ")) > 2  # whole, it takes three lines at 60 columns
    cut = call.lines_of(record, 60, "call: ", "    ", most=2)
    joined = " ".join(line.strip() for line in cut)
    assert len(cut) <= 2 and "in [" not in joined
    assert joined == "call: K.conv3d(x[1,2,4,4,4] float32, kernel[2,2,2,2,3] float32, data_format='channels_first')"
