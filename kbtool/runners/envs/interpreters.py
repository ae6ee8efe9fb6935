"""Finding a working CPython X.Y to build a backend's env from: the one place kbtool looks for interpreters.

The sources, in the order they are tried (the first interpreter that runs and says it is CPython X.Y wins):

1. `--python PATH` given to `kbtool env install` (explicit: used, or refused in one line; never searched past);
2. the variable KBTOOL_PYTHON_X_Y (KBTOOL_PYTHON_3_6, KBTOOL_PYTHON_3_7, ...): explicit too, refused when it is not
   a working Python X.Y rather than passed over;
3. kbtool's own interpreter, when it is X.Y;
4. pyenv's versions: $PYENV_ROOT/versions/X.Y.*/bin/pythonX.Y (PYENV_ROOT defaults to ~/.pyenv), newest first;
5. uv-managed Pythons: `uv python find X.Y` (only uv's own, when uv is on PATH), then the folders uv installs into
   ($UV_PYTHON_INSTALL_DIR, else $XDG_DATA_HOME/uv/python, else ~/.local/share/uv/python)/cpython-X.Y.*/bin;
6. conda envs: `conda env list --json` (when conda is on PATH or $CONDA_EXE names it), then
   ~/miniconda3, ~/anaconda3, ~/miniforge3, ~/mambaforge and ~/.conda: envs/*/bin/pythonX.Y;
7. pythonX.Y in each folder of PATH, in order.

Every candidate is run once (a version check): pyenv's shims are on PATH for every version but work only for the
active ones, and a conda env's python can be a dangling link, so "exists" is not "works".
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable, Iterator, List, Mapping, Optional, Tuple

from kbtool.runners.base import Unavailable
from kbtool.runners.envs import children

# Run by each candidate; Python 2 must parse it too (an old interpreter is then told apart, not a crash).
VERSION_PROBE = (
    "import sys, platform; sys.stdout.write('%d.%d.%d %s\\n' % (sys.version_info[0], sys.version_info[1], "
    "sys.version_info[2], platform.python_implementation()))"
)
PROBE_SECONDS = 30.0  # a conda env's python on a cold disk takes a few seconds to start
TOOL_SECONDS = 20.0  # `uv python find`, `conda env list --json`
CONDA_ROOTS = ("miniconda3", "anaconda3", "miniforge3", "mambaforge", ".conda")  # under the home folder
# the last release of each old Python (what `pyenv install` is told); a newer minor is given as X.Y
LAST_PATCH = {"3.6": "3.6.15", "3.7": "3.7.17", "3.8": "3.8.20", "3.9": "3.9.23"}
NO_UV = ("3.6",)  # Pythons uv cannot install (python-build-standalone starts at 3.7)


@dataclass(frozen=True)
class Interpreter:
    """A working CPython: its path (as found, never resolved: a venv's python keeps its venv), the version it
    reported ("3.6.15") and where it was found ("pyenv", "uv", "conda", "PATH", "KBTOOL_PYTHON_3_6", "--python",
    "kbtool's own Python")."""

    path: str
    version: str
    source: str

    def describe(self) -> str:
        return f"Python {self.version} from {self.source}: {self.path}"


class NoInterpreter(Unavailable):
    """No working Python X.Y here. str() is the one-line error, then one line per way to get one."""

    def __init__(self, version: str, looked: List[str], backend: Optional[str] = None) -> None:
        self.version = version
        self.looked = looked
        self.backend = backend
        first = f"no working Python {version} interpreter; looked at: {'; '.join(looked)}"
        super().__init__("\n".join([first] + ["  " + way for way in ways(version, backend)]))

    @property
    def line(self) -> str:
        """The first line alone (what a one-line summary quotes)."""
        return str(self).splitlines()[0]


class WrongInterpreter(Unavailable):
    """An interpreter named explicitly (--python, KBTOOL_PYTHON_X_Y) that is not a working Python X.Y."""


def variable(version: str) -> str:
    """The variable that names the Python `version` ("3.6" -> KBTOOL_PYTHON_3_6)."""
    return "KBTOOL_PYTHON_" + version.replace(".", "_")


def ways(version: str, backend: Optional[str] = None) -> List[str]:
    """Every way to get a Python `version` kbtool then finds (or is told of), one line each."""
    name = backend or "NAME"
    short = version.replace(".", "")
    lines = [f"pyenv install {LAST_PATCH.get(version, version)}   (found in pyenv's versions)"]
    if version in NO_UV:
        lines.append(f"uv python install {version}: not possible, uv has no Python {version}")
    else:
        lines.append(f"uv python install {version}   (found among uv's Pythons)")
    lines += [
        f"conda create -n py{short} python={version}   (found among conda's envs)",
        f"kbtool env install {name} --python PATH   (an interpreter you have: PATH is its python{version})",
        f"export {variable(version)}=PATH   (every kbtool env install of a Python {version} backend uses it)",
    ]
    return lines


def _commands(version: str) -> List[str]:
    """The commands that install a Python `version` where kbtool then finds it."""
    get = [f"`pyenv install {LAST_PATCH.get(version, version)}`"]
    if version not in NO_UV:
        get.append(f"`uv python install {version}`")
    get.append(f"`conda create -n py{version.replace('.', '')} python={version}`")
    return get


def get_one(version: str, backend: str = "NAME") -> str:
    """The ways to get a Python `version`, in one line."""
    get = _commands(version)
    return (
        f"get one with {', '.join(get[:-1])} or {get[-1]} (then `kbtool env install {backend}`), or name one: "
        f"`kbtool env install {backend} --python PATH` or {variable(version)}=PATH"
    )


def hint(version: str, backend: str) -> str:
    """One line for a table: the Python a backend needs, that none was found, and the ways to get one."""
    get = _commands(version)
    return (
        f"needs Python {version}, none found: {', '.join(get[:-1])} or {get[-1]}, then `kbtool env install "
        f"{backend}` (or name one: `--python PATH`)"
    )


def probe(path: str, environ: Optional[Mapping[str, str]] = None) -> Tuple[Optional[str], str]:
    """Run `path` once: (its version "3.6.15" when it is CPython, else None; why not, in words)."""
    env = dict(os.environ if environ is None else environ)
    for name in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):  # the controller's settings are not the candidate's
        env.pop(name, None)
    try:
        proc = children.wait(
            [path, "-c", VERSION_PROBE],
            f"{path} to say its version",
            PROBE_SECONDS,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return None, f"did not answer within {PROBE_SECONDS:g} s"
    except OSError as exc:
        return None, f"cannot run: {exc.strerror or exc}"
    words = proc.stdout.decode("utf-8", "replace").split()
    if proc.returncode != 0 or len(words) != 2 or not re.match(r"^\d+\.\d+\.\d+$", words[0]):
        said = [line.strip() for line in proc.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        return None, "did not run as a Python interpreter (exit {}{})".format(
            proc.returncode, ": " + _cut(said[-1]) if said else ""
        )
    if words[1] != "CPython":
        return None, f"is {words[1]} {words[0]}, not CPython"
    return words[0], ""


def _cut(line: str, width: int = 100) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


def _minor(full: str) -> str:
    return ".".join(full.split(".")[:2])


def resolve_path(python: str) -> str:
    """`python` as an absolute path (a bare name is looked up on PATH); a venv's bin/python stays as it is, never
    resolved to the interpreter it links to. A WrongInterpreter (one line) when it is missing or not executable."""
    path = os.path.expanduser(python)
    if os.sep not in path:
        found = shutil.which(path)
        if not found:
            raise WrongInterpreter(f"{python}: no such interpreter on PATH")
        path = found
    path = os.path.abspath(path)
    if not os.path.exists(path):
        raise WrongInterpreter(f"{path}: does not exist")
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise WrongInterpreter(f"{path}: not an executable file (give the interpreter, e.g. /opt/conda/bin/python)")
    return path


def named(
    python: str,
    version: str,
    source: str,
    environ: Optional[Mapping[str, str]] = None,
    backend: Optional[str] = None,
) -> Interpreter:
    """The interpreter named by `source` (--python, a variable), checked to be a working CPython `version`; else a
    WrongInterpreter (one line) saying what it is instead."""
    shown = f"{source}={python}" if source.startswith("KBTOOL_") else f"{source} {python}"
    try:
        path = resolve_path(python)
    except WrongInterpreter as exc:
        raise WrongInterpreter(f"{shown}: {str(exc).split(': ', 1)[-1]}")
    found, why = probe(path, environ)
    if found is None:
        raise WrongInterpreter(f"{shown}: {why}")
    if _minor(found) != version:
        raise WrongInterpreter(f"{shown} is Python {found}; {backend or 'the env'} needs Python {version}")
    return Interpreter(path, found, source)


def find(
    version: str,
    python: Optional[str] = None,
    backend: Optional[str] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> Interpreter:
    """A working CPython `version` ("3.6"), from the sources in the module's order; `python` is `--python PATH`.
    Raises WrongInterpreter for an explicit one that is not it, NoInterpreter (naming every place looked and every
    way to get one) when no source has it."""
    env = os.environ if environ is None else environ
    if python:
        return named(python, version, "--python", env, backend)
    name = variable(version)
    if env.get(name):
        return named(env[name], version, name, env, backend)
    looked = [f"{name} (not set)"]
    seen = set()
    for source, where, candidates in _sources(version, env):
        looked.append(where)
        for path in candidates:
            key = os.path.realpath(path)
            if key in seen:
                continue
            seen.add(key)
            found, _ = probe(path, env)
            if found is not None and _minor(found) == version:
                return Interpreter(path, found, source)
    raise NoInterpreter(version, looked, backend)


def _sources(version: str, env: Mapping[str, str]) -> Iterator[Tuple[str, str, Iterator[str]]]:
    """(source, where it looks in words, its candidate paths) for each source after the explicit ones."""
    if "{}.{}".format(*sys.version_info[:2]) == version:
        yield "kbtool's own Python", f"kbtool's own Python ({sys.executable})", iter([sys.executable])
    home = env.get("HOME") or os.path.expanduser("~")
    pyenv = env.get("PYENV_ROOT") or os.path.join(home, ".pyenv")
    yield (
        "pyenv",
        f"{pyenv}/versions/{version}.*",
        _chain(_newest(os.path.join(pyenv, "versions", version + ".*"), version)),
    )
    uv = _which("uv", env)
    uv_dir = env.get("UV_PYTHON_INSTALL_DIR") or os.path.join(
        env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share"), "uv", "python"
    )
    where = f"{'`uv python find`' if uv else 'uv (not on PATH)'} and {uv_dir}/cpython-{version}.*"
    yield (
        "uv",
        where,
        _chain(_uv_find(uv, version, env), _newest(os.path.join(uv_dir, f"cpython-{version}.*"), version)),
    )
    conda = _which("conda", env) or env.get("CONDA_EXE")
    roots = [os.path.join(home, root) for root in CONDA_ROOTS]
    where = "{} and {}".format(
        "`conda env list`" if conda else "conda (not on PATH)", ", ".join(os.path.join(r, "envs", "*") for r in roots)
    )
    yield "conda", where, _chain(_conda_envs(conda, version, env), _conda_dirs(roots, version))
    path = env.get("PATH", "")
    yield "PATH", f"python{version} in each folder of PATH", _chain(_on_path(path, version))


def _chain(*parts: Callable[[], List[str]]) -> Iterator[str]:
    for part in parts:
        yield from part()


def _newest(pattern: str, version: str) -> Callable[[], List[str]]:
    """The pythonX.Y (else python) in bin/ of each folder matching `pattern`, newest patch release first."""

    def candidates() -> List[str]:
        folders = sorted(glob.glob(pattern), key=_release, reverse=True)
        return [p for p in (_python_in(os.path.join(f, "bin"), version) for f in folders) if p]

    return candidates


def _release(folder: str) -> Tuple[int, ...]:
    """(3, 6, 15) from ".../3.6.15" or ".../cpython-3.6.15-linux-x86_64-gnu": how to sort releases."""
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", os.path.basename(folder))
    return tuple(int(n) for n in match.groups()) if match else (0,)


def _python_in(bin_dir: str, version: str) -> Optional[str]:
    for name in ("python" + version, "python"):
        path = os.path.join(bin_dir, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _which(tool: str, env: Mapping[str, str]) -> Optional[str]:
    return shutil.which(tool, path=env.get("PATH", ""))


def _tool_output(argv: List[str], env: Mapping[str, str]) -> Optional[str]:
    try:
        proc = subprocess.run(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=dict(env),
            timeout=TOOL_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else None


def _uv_find(uv: Optional[str], version: str, env: Mapping[str, str]) -> Callable[[], List[str]]:
    """What `uv python find X.Y` answers among the Pythons uv installed (never one it would download)."""

    def candidates() -> List[str]:
        if not uv:
            return []
        out = _tool_output(
            [uv, "python", "find", version],
            dict(env, UV_PYTHON_PREFERENCE="only-managed", UV_PYTHON_DOWNLOADS="never"),
        )
        return [line.strip() for line in (out or "").splitlines()[:1] if line.strip()]

    return candidates


def _conda_envs(conda: Optional[str], version: str, env: Mapping[str, str]) -> Callable[[], List[str]]:
    """The python of each env `conda env list --json` lists (the base env among them)."""

    def candidates() -> List[str]:
        if not conda:
            return []
        out = _tool_output([conda, "env", "list", "--json"], env)
        try:
            prefixes = json.loads(out or "{}").get("envs", [])
        except (ValueError, AttributeError):
            return []
        found = (_python_in(os.path.join(p, "bin"), version) for p in prefixes if isinstance(p, str))
        return [p for p in found if p]

    return candidates


def _conda_dirs(roots: List[str], version: str) -> Callable[[], List[str]]:
    def candidates() -> List[str]:
        folders = [f for root in roots for f in sorted(glob.glob(os.path.join(root, "envs", "*")))]
        return [p for p in (_python_in(os.path.join(f, "bin"), version) for f in folders) if p]

    return candidates


def _on_path(path: str, version: str) -> Callable[[], List[str]]:
    def candidates() -> List[str]:
        found = []
        for folder in path.split(os.pathsep):
            candidate = os.path.join(folder or ".", "python" + version)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                found.append(candidate)
        return found

    return candidates


def find_path(version: str) -> str:
    """The path of a working CPython `version` (find(version).path); NoInterpreter when there is none."""
    return find(version).path
