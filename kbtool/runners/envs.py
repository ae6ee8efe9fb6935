"""Provision backend environments from their recipes: venv + pip, recorded in kbtool-env.json."""
import datetime
import json
import os
import shutil
import subprocess

from ..errors import KbtoolError
from .base import Unavailable, find_interpreter

RECORD = "kbtool-env.json"


def _run(argv, log, env=None):
    log("$ " + " ".join(argv))
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    output = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        lines = [line for line in output.strip().splitlines() if line.strip() and "is ignored" not in line]
        raise KbtoolError("`{}` failed (exit {}): {}".format(" ".join(argv[:4]) + " ...", proc.returncode,
                                                             lines[-1] if lines else "no output"))
    return output


def install(recipe, log=print, force=False):
    """Build the env for `recipe`; returns its record. Idempotent: pip skips what is installed."""
    problems = recipe.system_check()
    if problems:
        raise KbtoolError("{}: {}".format(recipe.name, "; ".join(problems)))
    try:
        python = find_interpreter(recipe.python_version)
    except Unavailable as exc:
        raise KbtoolError("{}: {}".format(recipe.name, exc))
    env_dir = recipe.env_dir()
    if force and os.path.exists(env_dir):
        shutil.rmtree(env_dir)
    if not os.path.exists(os.path.join(env_dir, "bin", "python")):
        _run([python, "-m", "venv", env_dir], log)
    pip = [os.path.join(env_dir, "bin", "python"), "-m", "pip", "--disable-pip-version-check"]
    pip_env = dict(os.environ, PIP_NO_INPUT="1")
    if recipe.bootstrap_packages:
        _run(pip + ["install", "-q"] + recipe.bootstrap_packages, log, pip_env)
    _run(pip + ["install", "-q"] + recipe.packages, log, pip_env)
    recipe.prepare(env_dir)
    frozen = _run(pip + ["freeze"], lambda _: None, pip_env).split()
    record = {"backend": recipe.name, "python": python, "packages": recipe.packages, "installed": frozen,
              "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    with open(os.path.join(env_dir, RECORD), "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=2)
    return record


def describe(recipe):
    """Installed state of an env without starting it."""
    path = os.path.join(recipe.env_dir(), RECORD)
    info = {"name": recipe.name, "path": recipe.env_dir(), "python_version": recipe.python_version,
            "packages": recipe.packages}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
        info.update(installed=True, created=record.get("created"), size_mb=_size_mb(recipe.env_dir()))
    else:
        info["installed"] = False
    return info


def remove(recipe):
    env_dir = recipe.env_dir()
    if not os.path.exists(env_dir):
        raise KbtoolError("{} is not installed ({} does not exist)".format(recipe.name, env_dir))
    shutil.rmtree(env_dir)
    return env_dir


def _size_mb(path):
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return round(total / 1e6)
