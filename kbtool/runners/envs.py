"""Provision backend environments from their recipes: venv + pip, recorded in kbtool-env.json."""
import datetime
import json
import os
import shutil
import subprocess

from .. import files
from ..errors import KbtoolError
from .base import Unavailable, find_interpreter

RECORD = "kbtool-env.json"
RECORD_MAX_BYTES = 1 << 20  # a record is a few KB (the env's pip freeze)


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
    if force and os.path.lexists(env_dir):
        _delete(env_dir, log)
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
    try:  # atomic: an interrupted install never leaves a half-written record
        files.write_atomic(os.path.join(env_dir, RECORD), json.dumps(record, indent=2))
    except OSError as exc:
        raise KbtoolError("cannot write {}: {}".format(os.path.join(env_dir, RECORD), exc.strerror or exc))
    return record


def describe(recipe):
    """Installed state of an env without starting it. A broken env (unreadable record, dangling symlink, a file
    where the folder should be) gets `problem`: one line naming the file, for the caller to report."""
    env_dir = recipe.env_dir()
    path = os.path.join(env_dir, RECORD)
    info = {"name": recipe.name, "path": env_dir, "python_version": recipe.python_version,
            "packages": recipe.packages, "installed": False}
    if os.path.islink(env_dir):
        info["symlink_to"] = os.readlink(env_dir)
        if not os.path.exists(env_dir):
            info["problem"] = "{}: dangling symlink to {} (`kbtool env remove {}` removes the link)".format(
                env_dir, info["symlink_to"], recipe.name)
            return info
    if os.path.lexists(env_dir) and not os.path.isdir(env_dir):
        info["problem"] = "{}: not a directory, not an environment kbtool made".format(env_dir)
        return info
    if not os.path.lexists(path):
        return info
    try:
        record = _read_record(path)
    except KbtoolError as exc:
        info["problem"] = str(exc)
        return info
    info.update(installed=True, created=record.get("created"), size_mb=_size_mb(env_dir))
    return info


def _read_record(path):
    try:
        with open(path, "rb") as fh:
            raw = fh.read(RECORD_MAX_BYTES + 1)
        if len(raw) > RECORD_MAX_BYTES:
            raise KbtoolError("{}: larger than {} bytes, not a record kbtool wrote; `kbtool env install --force` "
                              "rebuilds it".format(path, RECORD_MAX_BYTES))
        record = json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise KbtoolError("{}: cannot read: {}".format(path, exc.strerror or exc))
    except UnicodeDecodeError as exc:
        raise KbtoolError("{}: not valid UTF-8 (byte 0x{:02x} at offset {}); `kbtool env install --force` "
                          "rebuilds it".format(path, raw[exc.start], exc.start))
    except json.JSONDecodeError as exc:
        raise KbtoolError("{}:{}:{}: not valid JSON ({}); `kbtool env install --force` rebuilds it".format(
            path, exc.lineno, exc.colno, exc.msg))
    except (ValueError, RecursionError) as exc:
        raise KbtoolError("{}: not valid JSON ({}); `kbtool env install --force` rebuilds it".format(
            path, type(exc).__name__))
    if not isinstance(record, dict):
        raise KbtoolError("{}: must hold a JSON object, found {}; `kbtool env install --force` rebuilds it".format(
            path, type(record).__name__))
    return record


def remove(recipe):
    """Delete an env; returns what was done, in words. A symlinked env loses the link only, never the target."""
    env_dir = recipe.env_dir()
    if not os.path.lexists(env_dir):
        raise KbtoolError("{} is not installed ({} does not exist)".format(recipe.name, env_dir))
    if not os.path.islink(env_dir) and not os.path.isdir(env_dir):
        raise KbtoolError("{}: not a directory, not an environment kbtool made; not removed".format(env_dir))
    return _delete(env_dir)


def _delete(env_dir, log=lambda line: None):
    try:
        if os.path.islink(env_dir):
            target = os.readlink(env_dir)
            os.unlink(env_dir)
            done = "removed the symlink {} (its target {} was left alone)".format(env_dir, target)
        else:
            shutil.rmtree(env_dir)
            done = "removed {}".format(env_dir)
    except OSError as exc:
        raise KbtoolError("cannot remove {}: {}".format(exc.filename or env_dir, exc.strerror or exc))
    log(done)
    return done


def _size_mb(path):
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return round(total / 1e6)
