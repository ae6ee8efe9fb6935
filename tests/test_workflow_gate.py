"""The reusable gate (.github/workflows/kbtool-gate.yml) for any repository, and its sample user repository
(examples/user-repo).

Fast: actionlint passes the workflow, and its shape keeps the promises (concurrency, a timeout on every job, kbtool
installed from a wheel and never the repository in place, one cache per backend env keyed on the env, the OS, the
Pythons and the env's lock as the installed kbtool locates it, the summary, the annotations, the uploaded report);
the sample's baseline is the partial run its README and the example call describe. `backends`: the workflow's steps
run here by scripts/run-workflow-locally.py (the real kbtool, built into a wheel) on a copy of the sample: its own
tests collected with kbtool's, the partial run diffed against its baseline exits 0 unchanged and 1 once a function
of its module changes, and its known file adds to the shipped one.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
import yaml

from tests.test_ci_example import run_actionlint

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GATE = os.path.join(ROOT, ".github", "workflows", "kbtool-gate.yml")
SAMPLE = os.path.join(ROOT, "examples", "user-repo")
EXAMPLE = os.path.join(ROOT, "examples", "ci", "github-actions.yml")
RUNNER = os.path.join(ROOT, "scripts", "run-workflow-locally.py")
MODULE = "mybackend.backend@tensorflow"
OPS = ["softsign", "relu", "slice"]
TESTS_STEP = "The repository's tests (pytest; its addopts may add kbtool's items)"


def gate():
    with open(GATE, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def scripts(job):
    return "\n".join(str(step.get("run", "")) for step in job["steps"])


def test_actionlint_passes_the_gate():
    done = run_actionlint(GATE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_would_catch_a_broken_expression(tmp_path):
    with open(GATE, encoding="utf-8") as fh:
        text = fh.read()
    broken = tmp_path / "broken.yml"
    broken.write_text(text.replace("${{ inputs.ops }}", "${{ inputs.opz }}", 1))
    done = run_actionlint(str(broken))
    assert done.returncode != 0 and "opz" in done.stdout


def test_it_is_called_with_the_inputs_a_user_repository_needs_and_answers_with_the_gate_s_counts():
    doc = gate()
    call = doc[True]["workflow_call"]  # YAML reads the key `on` as True
    assert set(call) == {"inputs", "outputs"}
    assert {"backends", "module", "ops", "baseline", "known", "kbtool", "python-version"} <= set(call["inputs"])
    assert {"exit-code", "results", "unexplained", "changed"} <= set(call["outputs"])
    assert all(value["value"].startswith("${{ jobs.gate.outputs.") for value in call["outputs"].values())


def test_concurrency_and_a_timeout_on_every_job():
    doc = gate()
    assert doc["concurrency"]["cancel-in-progress"] is True
    assert doc["concurrency"]["group"].startswith("kbtool-gate-")  # apart from the caller's own groups
    assert all("timeout-minutes" in job for job in doc["jobs"].values())


def test_kbtool_comes_from_its_wheel_never_from_the_repository_installed_in_place():
    with open(GATE, encoding="utf-8") as fh:
        text = fh.read()
    assert not re.search(r"pip install[^\n]*(-e|--editable)\b", text)
    for name in ("check", "gate"):
        install = next(s for s in gate()["jobs"][name]["steps"] if s.get("name") == "Install kbtool from its wheel")
        assert "pip wheel --no-deps" in install["run"] and 'pip install "${wheel:-$KBTOOL}"' in install["run"]


def test_each_backend_env_is_cached_apart_keyed_on_the_env_os_pythons_and_lock():
    check = gate()["jobs"]["check"]
    assert check["strategy"]["matrix"]["backend"] == "${{ fromJSON(needs.plan.outputs.backends) }}"
    (cache,) = [s for s in check["steps"] if str(s.get("uses", "")).startswith("actions/cache@")]
    assert cache["with"]["path"] == "${{ steps.env.outputs.dir }}"  # that env only: not all of kbtool's home
    key = cache["with"]["key"]
    for part in (
        "steps.env.outputs.name",
        "runner.os",
        "steps.python.outputs.python-version",
        "steps.env.outputs.lock",
    ):
        assert "${{ " + part + " }}" in key
    env_step = next(s for s in check["steps"] if s.get("id") == "env")
    # the lock and the env folder are the installed kbtool's own (kbtool/runners/envs lock_path, Recipe.env_dir)
    assert "lock_path(recipe)" in env_step["run"] and "recipe.env_dir()" in env_step["run"]
    install = next(s for s in check["steps"] if "kbtool env install" in str(s.get("run")))
    assert "steps.cache.outputs.cache-hit != 'true'" in install["if"]


def test_the_gate_job_writes_the_summary_and_annotations_uploads_the_report_and_diffs_the_baseline():
    job = gate()["jobs"]["gate"]
    text = scripts(job)
    assert 'kbtool report render kbtool-run.json --format github >> "$GITHUB_STEP_SUMMARY"' in text
    assert "kbtool report render kbtool-run.json --format annotations" in text
    assert 'kbtool report diff "$BASELINE" kbtool-run.json' in text
    uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert uploads and all(s["if"] == "always()" for s in uploads)
    assert job["if"].startswith("always()") and set(job["needs"]) == {"plan", "check"}
    check = gate()["jobs"]["check"]
    assert "kbtool check" in scripts(check) and "python -m pytest" in scripts(check)


def test_the_example_workflow_calls_the_gate_on_the_sample():
    with open(EXAMPLE, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    callers = [job for job in doc["jobs"].values() if "kbtool-gate.yml" in str(job.get("uses", ""))]
    assert callers, "examples/ci/github-actions.yml does not call the gate"
    given = callers[0]["with"]
    assert given["module"] == MODULE and given["ops"].split() == OPS and given["known"] == "known.yaml"
    assert given["baseline"] == "kbtool-baseline.json" and given["working-directory"] == "examples/user-repo"


def test_the_sample_s_baseline_is_its_partial_run():
    with open(os.path.join(SAMPLE, "kbtool-baseline.json"), encoding="utf-8") as fh:
        baseline = json.load(fh)
    assert sorted({r["op"] for r in baseline["results"]}) == sorted(OPS)
    assert {r["backend"] for r in baseline["results"]} == {"tensorflow", MODULE}
    assert os.path.getsize(os.path.join(SAMPLE, "kbtool-baseline.json")) < 200_000  # small enough to commit
    with open(os.path.join(SAMPLE, "pytest.ini"), encoding="utf-8") as fh:
        ini = fh.read()
    assert "testpaths = tests" in ini and "--kbtool" in ini and f"--kbtool-backend {MODULE}" in ini


# ---- the steps run here ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """kbtool built into a wheel, as the workflow's caller would publish it (no network: setuptools from here)."""
    out, source = tmp_path_factory.mktemp("wheel"), tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "setup.py", "setup.cfg", "README.md", "LICENSE"):
        shutil.copy2(os.path.join(ROOT, name), source)
    for name in ("kbtool", "specs"):  # a copy: setuptools builds in place (build/, *.egg-info) and not in ROOT
        shutil.copytree(os.path.join(ROOT, name), source / name, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PIP_NO_INDEX": "1"}
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
        check=True,
        env=env,
        timeout=300,
    )
    (built,) = out.glob("kbtool-*.whl")
    return str(built)


def run_gate(repo, work, wheel, **inputs):
    given = {"module": MODULE, "ops": " ".join(OPS), "known": "known.yaml", "baseline": "kbtool-baseline.json"}
    given.update(kbtool=wheel, **inputs)
    argv = [sys.executable, RUNNER, GATE, "--repo", str(repo), "--work", str(work)]
    argv += [f"--input={k}={v}" for k, v in given.items()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert os.path.exists(os.path.join(work, "result.json")), done.stdout[-3000:] + done.stderr[-3000:]
    with open(os.path.join(work, "result.json"), encoding="utf-8") as fh:
        return json.load(fh), done


def legs(result, job):
    return {json.dumps(leg["matrix"]): {s["name"]: s for s in leg["steps"]} for leg in result["jobs"][job]["legs"]}


@pytest.mark.backends
def test_the_sample_repository_gated_by_the_workflow_s_steps(tmp_path, wheel):
    repo = tmp_path / "repo"
    shutil.copytree(SAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    result, done = run_gate(repo, tmp_path / "unchanged", wheel, backends="tensorflow")
    log = done.stdout[-4000:]
    check = legs(result, "check")
    assert set(check) == {json.dumps({"backend": "tensorflow"}), json.dumps({"backend": MODULE})}, log
    for steps in check.values():
        # the env came from its cache (here: the env kbtool already has), so nothing was installed
        assert steps["actions/cache@v5"]["outputs"]["cache-hit"] == "true"
        assert steps["Install the backend's env (a cache hit is its lock's env already)"]["outcome"] == "skipped"
        with open(steps["Install kbtool from its wheel"]["log"], encoding="utf-8") as fh:
            assert re.search(r"kbtool \S+ from \S*/toolcache/python/lib/", fh.read())  # the wheel's kbtool
    # nothing changed: the diff against the committed baseline exits 0
    assert result["outputs"]["exit-code"] == "0", log
    assert result["outputs"]["changed"] == "0" and int(result["outputs"]["results"]) == 120
    with open(tmp_path / "unchanged" / "summary.md", encoding="utf-8") as fh:
        summary = fh.read()
    assert "kbtool" in summary and "report diff" in summary
    merged = tmp_path / "unchanged" / "artifacts" / "kbtool-report" / "kbtool-run.json"
    with open(merged, encoding="utf-8") as fh:
        report = json.load(fh)
    by = {(r["op"], r["case"], r["backend"], r["mode"]): r for r in report["results"]}
    # the user's own entry explains its deliberate difference (works on main: the file is read)
    mine = [r for k, r in by.items() if k[0] == "softsign" and k[2] == MODULE and r["status"] == "fail"]
    assert mine and all(r.get("known", "").startswith("Deliberate: mybackend") for r in mine)
    # its known file ADDS to the shipped one: slice, inherited from tf_keras, keeps the shipped reason (helper A)
    inherited = [r for k, r in by.items() if k[0] == "slice" and k[2] == MODULE]
    assert inherited and all("tf_keras 2.x has no K.slice" in (r.get("known") or "") for r in inherited)
    assert all(steps["Check the backend (the partial run)"]["outputs"]["exit-code"] == "0" for steps in check.values())
    # the repository's own tests are collected with kbtool's (helper B: --kbtool adds to the collection) and pass
    junit = ET.parse(tmp_path / "unchanged" / "artifacts" / "kbtool-pytest" / "kbtool-pytest.xml").getroot()
    cases = list(junit.iter("testcase"))
    assert {c.get("name") for c in cases if c.get("classname") == "tests.test_policy"} >= {
        "test_softsign_of_float32_is_computed_in_float16",
        "test_float64_keeps_its_precision",
        "test_other_ops_keep_their_dtype",
    }
    assert any(MODULE in (c.get("name") or "") for c in cases)
    assert not [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
    assert check[json.dumps({"backend": MODULE})][TESTS_STEP]["outcome"] == "success"
    assert result["ok"] is True

    # a planted change: relu's alpha a hundredth off (every case with alpha=0 still passes); the module alone
    backend = repo / "mybackend" / "backend.py"
    source = backend.read_text()
    backend.write_text(source.replace("alpha=alpha,", "alpha=alpha * 1.01,", 1))
    assert backend.read_text() != source
    planted, done = run_gate(repo, tmp_path / "planted", wheel, backends="", pytest="false")
    assert planted["outputs"]["exit-code"] == "1", done.stdout[-4000:]
    with open(tmp_path / "planted" / "artifacts" / "kbtool-report" / "kbtool-diff.json", encoding="utf-8") as fh:
        diff = json.load(fh)
    worse = {(r["op"], r["backend"], r["kind"]) for r in diff["results"]}
    assert ("relu", MODULE, "new_failure") in worse
    # only what both runs have is compared (helper B): tensorflow's results, not run here, are not "worse"
    assert worse == {("relu", MODULE, "new_failure")}
    assert planted["ok"] is False and planted["jobs"]["gate"]["result"] == "failure"
