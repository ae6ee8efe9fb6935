import pytest
from click.testing import CliRunner

from kbtool.cli import main
from kbtool.specs import loader, shapes
from kbtool.specs.cases import cases_for
from kbtool.specs.docs import documented_union

from .helpers import HEADER


def write_spec(tmp_path, body):
    path = tmp_path / "ops.yaml"
    path.write_text(HEADER + body)
    return str(path)


def problems_of(path):
    with pytest.raises(loader.SpecError) as info:
        loader.load(path)
    return info.value.problems


def test_shipped_spec_is_valid():
    spec = loader.load()
    assert {
        "batch_dot",
        "dot",
        "transpose",
        "sum",
        "mean",
        "softmax",
        "concatenate",
        "reshape",
        "conv2d",
        "pool2d",
        "one_hot",
        "clip",
    } <= set(spec.ops)


def test_schema_error_names_file_line_and_op(tmp_path):
    path = write_spec(
        tmp_path,
        """  dot:
    category: linalg
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
    cases:
      - {id: a, inputs: [{shape: [2, 3], dtype: float31}]}
""",
    )
    (problem,) = problems_of(path)
    assert problem.startswith(path + ":11: ops.dot.cases[0].inputs[0].dtype:")
    assert "float31" in problem


def test_unknown_doc_id_and_bad_kwarg_are_semantic_errors(tmp_path):
    path = write_spec(
        tmp_path,
        """  dot:
    category: linalg
    summary: x
    documented_in: [en-9]
    signature: [{name: x, kind: tensor}]
    cases:
      - {id: a, inputs: [{shape: [2]}], kwargs: {axis: 1}}
""",
    )
    problems = problems_of(path)
    assert any(":8: ops.dot.documented_in: unknown doc id 'en-9'" in p for p in problems)
    assert any(":11: ops.dot.cases[0].kwargs.axis: 'axis' is not a parameter of dot" in p for p in problems)


def test_duplicate_op_is_an_error(tmp_path):
    entry = """  dot:
    category: linalg
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
"""
    problems = problems_of(write_spec(tmp_path, entry + entry))
    assert any("duplicate key 'dot'" in p for p in problems)


def test_shape_rules_cannot_run_python(tmp_path):
    path = write_spec(
        tmp_path,
        """  dot:
    category: linalg
    summary: x
    documented_in: [ko-2.2]
    signature: [{name: x, kind: tensor}]
    shape_rules: [{shape: "__import__('os').system('true')"}]
""",
    )
    (problem,) = problems_of(path)
    assert "ops.dot.shape_rules[0].shape" in problem and "may be called" in problem


def test_invalid_yaml_reports_line(tmp_path):
    path = write_spec(tmp_path, "  dot: [unclosed\n")
    (problem,) = problems_of(path)
    assert "invalid YAML" in problem and path + ":" in problem


def test_spec_validate_cli_exit_codes(tmp_path):
    bad = write_spec(tmp_path, "  Dot: {}\n")
    result = CliRunner().invoke(main, ["spec", "validate", bad])
    assert result.exit_code == 1 and bad in result.output
    result = CliRunner().invoke(main, ["spec", "validate"])
    assert result.exit_code == 0 and "valid" in result.output


@pytest.mark.parametrize(
    "expr,names,want",
    [
        ("x[:-1] + y[1:]", {"x": [2, 3], "y": [3, 4]}, [2, 4]),
        ("[x[0], ceil_div(x[1], 2)]", {"x": [4, 5]}, [4, 3]),
        ("drop(x, 1) if len(x) > 2 else x", {"x": [1, 2, 3]}, [1, 3]),
        ("[1] * len(x)", {"x": [5, 6]}, [1, 1]),
    ],
)
def test_shape_expressions(expr, names, want):
    assert shapes.evaluate(expr, names) == want


@pytest.mark.parametrize("expr", ["x.__class__", "(lambda: 1)()", "[i for i in x]", "open('f')"])
def test_shape_expressions_reject_python(expr):
    with pytest.raises(shapes.ShapeExprError):
        shapes.parse(expr)


def test_shape_expressions_evaluate_no_unchecked_call():
    """A tree that did not come from parse (which allows only calls of FUNCTIONS by name) calls nothing either."""
    import ast

    with pytest.raises(shapes.ShapeExprError, match="Call is not allowed"):
        shapes.evaluate(ast.parse("x.pop()", mode="eval").body, {"x": [1]})


def test_batch_dot_shape_rule_encodes_the_docs_walkthrough():
    rules = loader.load().ops["batch_dot"]["shape_rules"]
    assert shapes.expected_shape(rules, {"x": [32, 20, 1], "y": [32, 30, 20], "axes": [1, 2]})[0] == [32, 1, 30]
    assert shapes.expected_shape(rules, {"x": [100, 20], "y": [100, 30, 20], "axes": [1, 2]})[0] == [100, 30]
    assert shapes.expected_shape(rules, {"x": [2, 2], "y": [2, 2], "axes": 1})[0] == [2, 1]


def test_generated_inputs_are_seeded():
    spec = loader.load()
    a = cases_for(spec, "softmax", seed=7)[0].arrays[0]
    b = cases_for(spec, "softmax", seed=7)[0].arrays[0]
    c = cases_for(spec, "softmax", seed=8)[0].arrays[0]
    assert (a == b).all() and not (a == c).all()


def test_docs_parser_finds_the_154_documented_functions(docs_dir):
    union = documented_union(docs_dir)
    assert len(union) == 154
    assert "array" not in union  # example output, not a function
    assert set(union["lesser"]) == {"001_395648643f574e1c.txt", "002_1a6e4fb97d7fc5c3.txt"}


def test_every_documented_function_has_a_spec_entry(docs_dir):
    missing = sorted(set(documented_union(docs_dir)) - set(loader.load().ops))
    assert not missing, "{} documented functions lack a spec entry: {}".format(len(missing), ", ".join(missing))


def test_documented_in_matches_the_docs(docs_dir):
    spec = loader.load()
    by_file = {d["file"]: doc_id for doc_id, d in spec.docs.items()}
    union = documented_union(docs_dir)

    def found(name, entry):  # plus the doc versions whose signature line misprints the name (a recorded doc error)
        misprinted = {d for e in entry.get("doc_errors", []) if "signature line" in e["claim"] for d in e["docs"]}
        return sorted({by_file[f] for f in union[name]} | misprinted)

    wrong = {
        name: found(name, entry)
        for name, entry in spec.ops.items()
        if name in union and sorted(entry["documented_in"]) != found(name, entry)
    }
    assert not wrong
