"""scripts/run-workflow-locally.py, the local runner of a workflow's steps (no backend, no kbtool): expressions as
GitHub evaluates them, and a toy reusable workflow run whole: a matrix from a job's output, GITHUB_OUTPUT,
GITHUB_ENV and the step summary read back, `if:` defaults, a failing step, artifacts up and down, job and workflow
outputs, timeout-minutes, and bad input answered in one line."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "scripts", "run-workflow-locally.py")


def load():
    spec = importlib.util.spec_from_file_location("run_workflow_locally", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


runner = load()


@pytest.mark.parametrize(
    "text, value",
    [
        ("inputs.name == 'ABC'", True),  # strings compare case-insensitively
        ("inputs.flag && 'yes' || 'no'", "yes"),
        ("!inputs.flag && 'yes' || 'no'", "no"),
        ("inputs.missing == ''", True),
        ("format('{0}-{1}', inputs.name, 3)", "abc-3"),
        ("fromJSON('[1, 2]')", [1, 2]),
        ("needs.plan.outputs.tests-on", "x@y"),
        ("contains(fromJSON('[\"a\", \"b\"]'), 'b') && startsWith('kbtool-env', 'KBTOOL')", True),
        ("inputs.minutes > 5", True),
    ],
)
def test_expressions_evaluate_as_github_evaluates_them(text, value):
    context = {
        "inputs": {"name": "abc", "flag": True, "minutes": 60.0},
        "needs": {"plan": {"outputs": {"tests-on": "x@y"}}},
    }
    assert runner.evaluate(text, context) == value


def test_an_if_without_a_status_function_means_success_and_it():
    context = {"inputs": {"go": True}}
    assert runner.condition("inputs.go", context, failed=False) is True
    assert runner.condition("${{ inputs.go }}", context, failed=True) is False
    assert runner.condition("always() && inputs.go", context, failed=True) is True
    assert runner.condition(None, context, failed=True) is False


def test_an_unsupported_function_or_a_broken_expression_is_a_one_line_error():
    with pytest.raises(runner.WorkflowError, match="hashFiles"):
        runner.evaluate("hashFiles('x')", {})
    with pytest.raises(runner.WorkflowError, match="unexpected"):
        runner.evaluate("inputs.a inputs.b", {})


def test_output_files_read_both_forms(tmp_path):
    path = tmp_path / "out"
    path.write_text("a=1\nb<<EOF\nline one\nline=two\nEOF\nc=x=y\n")
    assert runner.read_pairs(str(path)) == {"a": "1", "b": "line one\nline=two", "c": "x=y"}


TOY = """
name: toy
on:
  workflow_call:
    inputs:
      names: {type: string, default: "one two"}
      fail-two: {type: boolean, default: false}
    outputs:
      joined: {value: "${{ jobs.last.outputs.joined }}"}
env:
  TOP: top
jobs:
  plan:
    runs-on: ubuntu-latest
    timeout-minutes: 1
    outputs:
      names: ${{ steps.p.outputs.names }}
    steps:
      - id: p
        shell: python3 {0}
        env:
          NAMES: ${{ inputs.names }}
        run: |
          import json, os
          with open(os.environ["GITHUB_OUTPUT"], "a") as fh:
              fh.write("names=" + json.dumps(os.environ["NAMES"].split()) + "\\n")
  legs:
    needs: plan
    runs-on: ubuntu-latest
    timeout-minutes: 1
    strategy:
      matrix:
        name: ${{ fromJSON(needs.plan.outputs.names) }}
    defaults:
      run:
        working-directory: sub
    env:
      NAME: ${{ matrix.name }}
    steps:
      - uses: actions/checkout@v5
      - run: |
          echo "LATER=$TOP-$NAME" >> "$GITHUB_ENV"
          echo "## leg $NAME" >> "$GITHUB_STEP_SUMMARY"
      - id: made
        run: |
          [ "$NAME" != two ] || [ "${{ inputs.fail-two }}" != true ]
          echo "$LATER" > "part-$NAME.txt"
          echo "file=part-$NAME.txt" >> "$GITHUB_OUTPUT"
      - name: after a failure
        run: echo never
      - uses: actions/upload-artifact@v6
        if: always()
        with:
          name: part-${{ matrix.name }}
          path: sub/part-${{ matrix.name }}.txt
          if-no-files-found: ignore
  last:
    needs: [plan, legs]
    if: always()
    runs-on: ubuntu-latest
    timeout-minutes: 1
    outputs:
      joined: ${{ steps.join.outputs.joined }}
    steps:
      - uses: actions/download-artifact@v7
        with:
          pattern: part-*
          path: parts
          merge-multiple: true
      - id: join
        run: echo "joined=$(cat parts/*.txt | tr '\\n' ' ')" >> "$GITHUB_OUTPUT"
      - name: slow
        run: sleep 30
"""


def run_toy(tmp_path, text, *inputs):
    workflow = tmp_path / "toy.yml"
    workflow.write_text(text)
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, RUNNER, str(workflow), "--repo", str(repo), "--work", str(tmp_path / "work")]
    argv += [f"--input={i}" for i in inputs]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    result = tmp_path / "work" / "result.json"
    return done, json.loads(result.read_text()) if result.exists() else None


def test_a_toy_workflow_runs_whole(tmp_path):
    toy = TOY.replace(
        "timeout-minutes: 1\n    outputs:\n      joined", "timeout-minutes: 0.05\n    outputs:\n      joined"
    )
    done, result = run_toy(tmp_path, toy, "fail-two=true")
    assert done.returncode == 1, done.stderr
    legs = result["jobs"]["legs"]["legs"]
    assert [leg["matrix"] for leg in legs] == [{"name": "one"}, {"name": "two"}]
    assert [leg["failed"] for leg in legs] == [False, True]
    outcomes = {leg["matrix"]["name"]: [s["outcome"] for s in leg["steps"]] for leg in legs}
    assert outcomes == {
        "one": ["success", "success", "success", "success", "success"],
        "two": ["success", "success", "failure", "skipped", "success"],  # upload: always(); nothing to upload
    }
    assert result["jobs"]["legs"]["result"] == "failure"
    # `last` ran (always()), got leg one's artifact, and its slow step was killed at the job's timeout
    last = result["jobs"]["last"]
    assert last["outputs"] == {"joined": "top-one "} and result["outputs"] == {"joined": "top-one "}
    slow = last["legs"][0]["steps"][-1]
    assert slow["outcome"] == "failure" and slow["exit_code"] == 124
    summary = (tmp_path / "work" / "summary.md").read_text()
    assert "## leg one" in summary and "## leg two" in summary


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    done, result = run_toy(tmp_path, TOY, "nonesuch=1")
    assert done.returncode == 2 and result is None
    assert done.stderr.strip().count("\n") == 0 and "unknown input 'nonesuch'" in done.stderr
    done, _ = run_toy(tmp_path, TOY, "fail-two=maybe")
    assert done.returncode == 2 and "boolean" in done.stderr
    done, _ = run_toy(tmp_path, "jobs: [1]\n")
    assert done.returncode == 2 and "not a workflow" in done.stderr


def test_an_action_without_a_stand_in_fails_its_step(tmp_path):
    text = "on: {workflow_call: {}}\njobs:\n  a:\n    runs-on: x\n    steps:\n      - uses: someone/else@v1\n"
    done, result = run_toy(tmp_path, textwrap.dedent(text))
    assert done.returncode == 1
    (step,) = result["jobs"]["a"]["legs"][0]["steps"]
    assert step["outcome"] == "failure" and "no local stand-in" in open(step["log"]).read()
