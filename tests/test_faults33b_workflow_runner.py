"""Fault audit of issue #33, second pass: scripts/run-workflow-locally.py answers a bad workflow in one line.

- An expression function that fails on its argument (`fromJSON` of an input not given, or not JSON; `format` of a
  missing argument) was a Python traceback; now a step fails with the expression's one line (GitHub fails the step
  with "Error from function 'fromJSON'"), and in a matrix the run stops with exit 2.
- A workflow that is not YAML said only "while parsing a flow sequence": now its file and line.
Fast: the steps are `echo`."""

import importlib.util
import os
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "scripts", "run-workflow-locally.py")


def load():
    spec = importlib.util.spec_from_file_location("run_workflow_locally_33b", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runner = load()


@pytest.mark.parametrize(
    "text", ["fromJSON(inputs.missing)", "fromJSON('{bad')", "format('{1}', 'a')", "fromJSON(fromJSON('[1]'))"]
)
def test_a_function_that_fails_is_one_line(text):
    with pytest.raises(runner.WorkflowError) as caught:
        runner.evaluate(text, {"inputs": {}})
    assert str(caught.value).startswith(f"expression {text!r}: ") and "\n" not in str(caught.value)


def workflow(tmp_path, text):
    path = tmp_path / "wf.yml"
    path.write_text(textwrap.dedent(text))
    (tmp_path / "repo").mkdir()
    return [str(path), "--repo", str(tmp_path / "repo"), "--work", str(tmp_path / "work")]


def test_a_step_whose_expression_fails_fails_in_one_line(tmp_path, capsys):
    args = workflow(
        tmp_path,
        """
        on: {workflow_call: {inputs: {x: {type: string}}}}
        jobs:
          a:
            steps:
              - run: echo ${{ fromJSON(inputs.x) }}
        """,
    )
    assert runner.main(args) == 1
    out = capsys.readouterr().out
    assert "   expression ' fromJSON(inputs.x) ': fromJSON(): Expecting value" in out
    assert "Traceback" not in out


def test_a_matrix_whose_expression_fails_is_exit_2(tmp_path, capsys):
    args = workflow(
        tmp_path,
        """
        on: {workflow_call: {inputs: {m: {type: string}}}}
        jobs:
          a:
            strategy: {matrix: {x: "${{ fromJSON(inputs.m) }}"}}
            steps: [{run: echo}]
        """,
    )
    assert runner.main(args + ["--input", "m={bad"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["run-workflow-locally: expression ' fromJSON(inputs.m) ': fromJSON(): " + err[0].split("(): ")[-1]]
    assert "Expecting property name" in err[0]


def test_a_workflow_that_is_not_yaml_names_its_file_and_line(tmp_path, capsys):
    args = workflow(tmp_path, "jobs:\n  a: [unclosed\n")
    assert runner.main(args) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"run-workflow-locally: {args[0]}:3: not YAML: expected ',' or ']', but got '<stream end>'"
    ]
