"""The example CI workflow (examples/ci/github-actions.yml) stays runnable: valid YAML, a job per backend and shard
that together cover every shard, a merge job after them, and every kbtool command line in it parses against
today's CLI (an option renamed or removed fails here, not in a user's CI)."""

import os
import re
import shlex

import click
import yaml

from kbtool.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKFLOW = os.path.join(ROOT, "examples", "ci", "github-actions.yml")
VALUES = {"matrix.backend": "theano", "matrix.shard": "2", "env.SHARDS": "2"}


def workflow():
    with open(WORKFLOW, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def kbtool_lines(doc):
    for job in doc["jobs"].values():
        for step in job["steps"]:
            for line in str(step.get("run", "")).replace("\\\n", " ").splitlines():
                line = re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", lambda m: VALUES[m.group(1)], line.strip())
                if line.startswith("kbtool "):
                    yield line


def test_the_matrix_covers_every_backend_and_every_shard_and_the_merge_waits_for_it():
    doc = workflow()
    matrix = doc["jobs"]["check"]["strategy"]["matrix"]
    from kbtool.runners.registry import BUILTIN

    assert set(matrix["backend"]) == set(BUILTIN)
    assert sorted(matrix["shard"]) == list(range(1, int(doc["env"]["SHARDS"]) + 1))
    assert doc["jobs"]["merge"]["needs"] == "check" and doc["jobs"]["merge"]["if"] == "always()"


def test_every_kbtool_command_in_the_workflow_parses():
    lines = list(kbtool_lines(workflow()))
    assert {shlex.split(line)[1] for line in lines} >= {"check", "env", "report"}
    for line in lines:
        args = [a for a in shlex.split(line)[1:] if "*" not in a]  # a shell glob stands for files
        if args[:2] == ["report", "merge"]:
            args.insert(2, "part.json")
        try:
            parse(args)
        except click.UsageError as exc:  # pragma: no cover - the message is the failure
            raise AssertionError(f"{line}: {exc.format_message()}")


def parse(args):
    """Parse a command line down to its subcommand, as click would run it, without running anything (the groups
    on the way take no option here)."""
    command, ctx, name = main, main.make_context("kbtool", [], resilient_parsing=True), "kbtool"
    while isinstance(command, click.Group):
        name, command, args = command.resolve_command(ctx, list(args))
    return command.make_context(name, list(args), parent=ctx)


def test_the_parser_used_here_refuses_an_unknown_option():
    import pytest

    with pytest.raises(click.UsageError, match="nonexistent"):
        parse(["check", "--nonexistent"])
    with pytest.raises(click.UsageError, match="shard"):
        parse(["report", "merge", "a.json", "--shard", "1/2"])


def test_the_check_step_pins_the_documented_settings_and_writes_its_part():
    check = [line for line in kbtool_lines(workflow()) if line.startswith("kbtool check")]
    assert len(check) == 1
    assert "--keras-config defaults" in check[0] and "--shard 2/2" in check[0] and "-o part-theano-2.json" in check[0]
