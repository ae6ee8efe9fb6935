"""Packaging: every package is found, the wheel carries the spec and the worker, `python -m kbtool` works, and the
system-package list has one source (the backend recipes)."""

import os
import re
import shutil
import subprocess
import sys
import zipfile

from click.testing import CliRunner
from setuptools import find_packages

from kbtool import paths
from kbtool.cli import main
from kbtool.runners.registry import RECIPES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_folder_with_python_files_is_a_package():
    folders = set()
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "kbtool")):
        dirnames[:] = [d for d in dirnames if d != "__pycache__" and not d.startswith(".")]
        if any(f.endswith(".py") for f in filenames):
            folders.add(os.path.relpath(dirpath, ROOT).replace(os.sep, "."))
    found = set(find_packages(where=ROOT, include=["kbtool", "kbtool.*"]))
    assert folders - found == set(), "folders with .py files but no __init__.py (not shipped in the wheel)"
    assert {"kbtool.specs", "kbtool.reference", "kbtool.reports", "kbtool.runners", "kbtool.worker"} <= found


def test_checkout_reads_specs_in_place():
    # A checkout (and an editable install) must read the top-level specs/ so edits are live; only a wheel has _specs.
    if os.path.dirname(os.path.abspath(paths.__file__)) == os.path.join(ROOT, "kbtool"):
        assert not os.path.exists(os.path.join(ROOT, "kbtool", "_specs"))
        assert paths.spec_file() == os.path.join(ROOT, "specs", "ops.yaml")
        assert paths.known_differences_file() == os.path.join(ROOT, "specs", "known_differences.yaml")


def test_system_packages_come_from_the_recipes():
    result = CliRunner().invoke(main, ["env", "system-packages"])
    assert result.exit_code == 0, result.output
    printed = result.output.splitlines()
    union = {p for recipe in RECIPES.values() for p in recipe.apt_packages}
    assert union, "the recipes name no apt packages"
    assert sorted(printed) == sorted(union) and len(printed) == len(union)
    assert printed == sorted(printed)  # stable order

    with open(os.path.join(ROOT, "scripts", "install-system-packages.sh"), encoding="utf-8") as fh:
        script = fh.read()
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    for name in sorted(union | {"libopenblas", "libopenmpi"}):
        assert not re.search(re.escape(name), code), f"{name} is hard-coded in the script"
    assert "env system-packages" in code


def test_python_dash_m_kbtool(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "kbtool", "--help"],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Usage: kbtool ")


def test_wheel_contents(tmp_path):
    build = os.path.join(ROOT, "build")
    egg_infos = {f for f in os.listdir(ROOT) if f.endswith(".egg-info")}
    shutil.rmtree(build, ignore_errors=True)  # a stale build/lib could hide a missing mapping
    try:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(tmp_path),
                ROOT,
            ],
            cwd=str(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(build, ignore_errors=True)
        for f in os.listdir(ROOT):
            if f.endswith(".egg-info") and f not in egg_infos:
                shutil.rmtree(os.path.join(ROOT, f), ignore_errors=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = [f for f in os.listdir(str(tmp_path)) if f.endswith(".whl")]
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(os.path.join(str(tmp_path), wheels[0])) as zf:
        names = set(zf.namelist())
    for expected in (
        "kbtool/_specs/ops.yaml",
        "kbtool/_specs/known_differences.yaml",
        "kbtool/_specs/timings.json",
        "kbtool/worker/main.py",
        "kbtool/specs/__init__.py",
        "kbtool/reports/templates/report.html.j2",
        "kbtool/__main__.py",
        "kbtool/reports/templates/report.js.j2",
        "kbtool/reports/templates/report.css.j2",
        "kbtool/cli.py",
        "kbtool/bisect/bisect.schema.json",
        "kbtool/runners/locks/tensorflow.txt",
        "kbtool/worker/keras3_port/core.py",
    ):
        assert expected in names, f"{expected} missing from the wheel"
    assert not any(n.startswith("specs/") for n in names), "specs/ must ship as kbtool/_specs/ only"
