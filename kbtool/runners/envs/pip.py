"""Running pip in an env: its command lines, its environment, what it says when it fails, `pip freeze`."""

import os
import re
import subprocess
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence

from kbtool.errors import KbtoolError
from kbtool.runners.envs import children

if TYPE_CHECKING:
    from kbtool.runners.recipes.recipe import Recipe


def live_terminal(stream: Any, environ: Optional[Mapping[str, str]] = None) -> Optional[IO[str]]:
    """`stream` when pip's own output should go straight to it while it runs (a terminal: pip then draws its
    progress bars), else None: pip's output is captured and only its last line is said when it fails (a log, CI)."""
    env = os.environ if environ is None else environ
    try:
        tty = bool(stream.isatty()) and stream.fileno() >= 0
    except (AttributeError, OSError, ValueError):  # a StringIO, a closed or detached stream
        return None
    return stream if tty and env.get("TERM") != "dumb" else None


def run(
    argv: Sequence[str],
    log: Callable[[str], None],
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    terminal: Optional[IO[str]] = None,
) -> str:
    """Run `argv`; its output is returned (and only its last line said when it fails), or with `terminal` written
    to that terminal as it comes (nothing returned)."""
    log("$ " + " ".join(argv))
    what, bound = f"`{_command(argv)}`", COMMAND_SECONDS
    try:
        if terminal is not None:  # pip's own output is its progress
            terminal.flush()
            out: Any = terminal.fileno()
            proc = children.wait(argv, what, bound, lambda line: None, stdout=out, stderr=out, env=env, cwd=cwd)
            if proc.returncode != 0:
                raise KbtoolError(f"`{_command(argv)}` failed (exit {proc.returncode}): its output is above")
            return ""
        proc = children.wait(
            argv,
            what,
            bound,
            lambda line: log(line),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
        )
    except subprocess.TimeoutExpired:
        raise KbtoolError(f"`{_command(argv)}` did not finish within {bound:g} s (killed)")
    output = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        lines = [line for line in output.strip().splitlines() if line.strip() and "is ignored" not in line]
        raise KbtoolError(
            "`{}` failed (exit {}): {}".format(
                _command(argv),
                proc.returncode,
                no_space(lines, argv) or conflict(lines) or (lines[-1] if lines else "no output"),
            )
        )
    return output


COMMAND_SECONDS = 3600.0  # venv, or a pip install of TensorFlow's wheels on a slow link


def no_space(lines: List[str], argv: Sequence[str] = ()) -> Optional[str]:
    """ "no space left on device: PATH" when the disk filled up under the command (venv then reports its ensurepip
    step failing, which is not the cause), or None."""
    for line in lines:
        if "[Errno 28]" in line or "No space left on device" in line:
            match = re.search(r"No space left on device: '([^']*)'", line)
            where = match.group(1) if match else (argv[-1] if argv and os.path.isabs(argv[-1]) else "")
            return "no space left on device" + (f": {where}" if where else f" ({line.strip()})")
    return None


def _command(argv: Sequence[str]) -> str:
    """A failed command as a message names it: `pip install` for the env's pip (its path is in the log above, and a
    report that quotes the reason should not carry this machine's paths), else its first words."""
    if list(argv[1:3]) == ["-m", "pip"]:
        words = [w for w in argv[3:] if not w.startswith("--disable")]
        return "pip " + (words[0] if words else "")
    return " ".join(argv[:4]) + " ..."


def conflict(lines: List[str]) -> Optional[str]:
    """pip's own account of a dependency conflict, on one line ("keras 2.2.0 depends on keras-applications==1.0.2;
    tensorflow 1.15.5 depends on keras-applications>=1.0.8"), or None when pip did not give one."""
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "The conflict is caused by:") + 1
    except StopIteration:
        return None
    causes = []
    for line in lines[start:]:
        if not line.startswith((" ", "\t")):
            break
        causes.append(line.strip())
    return "conflicting dependencies: " + "; ".join(causes) if causes else None


def pip_environ() -> Dict[str, str]:
    """The environment pip runs in inside an env: the caller's, without PYTHONPATH (a checkout on it would be
    installed as far as `pip freeze` can tell, and the env would drift from its lock) and never prompting."""
    env = dict(os.environ, PIP_NO_INPUT="1")
    env.pop("PYTHONPATH", None)
    return env


def index_args(recipe: "Recipe", log: Callable[[str], None]) -> List[str]:
    """`--extra-index-url` for the recipe's extra index when its host answers within a few seconds; else nothing,
    said in the log (the packages must then come from the configured index or find-links)."""
    if not recipe.extra_index:
        return []
    import socket
    import urllib.parse

    url = urllib.parse.urlsplit(recipe.extra_index)
    try:
        port = url.port or (80 if url.scheme == "http" else 443)
        socket.create_connection((url.hostname or "", port), timeout=EXTRA_INDEX_PROBE_SECONDS).close()
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or exc
        log(f"{recipe.extra_index} cannot be reached ({why}): pip uses the configured indexes only")
        return []
    return ["--extra-index-url", recipe.extra_index]


EXTRA_INDEX_PROBE_SECONDS = 5.0


def freeze(pip: List[str], pip_env: Mapping[str, str], env_dir: str) -> List[str]:
    """The env's `pip freeze` (pip, setuptools and wheel aside), run in the env: pip also lists what the current
    directory holds; an old pip also echoes its options (-f DIR from PIP_FIND_LINKS)."""
    output = run(pip + ["freeze"], lambda _: None, pip_env, cwd=env_dir)
    return [line.strip() for line in output.splitlines() if "==" in line]
