"""The command that runs one result again: `command(result, case, settings)`, the one place a repro is built.

A printed repro carries every flag that changed its result's verdict, so that run as printed, from the directory
the check ran in, it gives the same status and the same exit code:

- the result's own: --op, --case (a backend variant's: its case's), --backend, --mode; --keras-config KEY=VALUE for
  each setting the case was forced to (by --keras-config or keras.json); --grid full for a case of the full grid;
  --device when not the cpu and --precision when not the default (a backend with devices: its results name one);
- the run's (`settings.RunSettings`, built once from the run's options): --seed; --spec when not the shipped
  spec; every --known in its order (the shipped known file named by --known is left out: it applies anyway) and
  --no-shipped-known; --keras-config defaults when keras.json was ignored; --repeat N; --timeout SECONDS; --strict;
- the environment: KBTOOL_HOME (the settings' `kbtool_home`) when the backend's env lives there (not numpy or a plain
  custom module).

Paths are shown relative to the current directory when inside it, else absolute (`paths.shown`); every word is
shell-quoted.
"""

import os
import shlex
from typing import TYPE_CHECKING, List, Optional

from kbtool import paths
from kbtool.settings import DEFAULTS, RunSettings
from kbtool.vocabulary import DEFAULT_DEVICE, DEFAULT_PRECISION

if TYPE_CHECKING:
    from kbtool.results import Result
    from kbtool.specs.cases import Case


def _given(path: Optional[str], shipped: str) -> Optional[str]:
    """`path` as a repro shows it, or None when it is not given or is the `shipped` file."""
    if not path or os.path.realpath(path) == os.path.realpath(shipped):
        return None
    return paths.shown(path)


def command(result: "Result", case: Optional["Case"] = None, settings: RunSettings = DEFAULTS) -> str:
    """The shell command that runs `result` again with every flag that changed its verdict (see the module)."""
    case_id = case.variant_of if case is not None and case.variant_of else result.case
    words: List[str] = ["kbtool", "check", "--op", result.op, "--case", case_id, "--backend", result.backend]
    words += ["--mode", str(result.mode), "--seed", str(settings.seed)]
    spec_path = _given(settings.spec_path, paths.spec_file())
    if spec_path:
        words += ["--spec", spec_path]
    if not settings.shipped_known:
        words.append("--no-shipped-known")
    for known_path in settings.known_paths:
        shown = (
            _given(known_path, paths.known_differences_file()) if settings.shipped_known else paths.shown(known_path)
        )
        if shown:
            words += ["--known", shown]
    if settings.keras_defaults:
        words += ["--keras-config", "defaults"]
    override = (case.keras_override if case is not None else None) or {}
    for key in sorted(override):
        words += ["--keras-config", f"{key}={override[key]}"]
    if case is not None and case.id.startswith("grid.") and case.grid == "full":
        words += ["--grid", "full"]
    if result.device and result.device != DEFAULT_DEVICE:
        words += ["--device", result.device]
    if result.device and settings.precision != DEFAULT_PRECISION:  # only a backend with devices has a precision
        words += ["--precision", settings.precision]
    if settings.repeat > 1:
        words += ["--repeat", str(settings.repeat)]
    if settings.case_timeout is not None:
        words += ["--timeout", format(settings.case_timeout, "g")]
    if settings.strict:
        words.append("--strict")
    home = paths.shown(settings.kbtool_home) if settings.kbtool_home and _in_home(result.backend) else None
    env = [f"KBTOOL_HOME={shlex.quote(home)}"] if home else []
    return " ".join(env + [shlex.quote(word) for word in words])


def _in_home(backend: str) -> bool:
    """Whether a backend's worker runs in an env under KBTOOL_HOME: a managed backend but numpy (kbtool's own
    Python), or a custom module run in one (`mod@ENV`); a plain custom module runs on kbtool's own Python."""
    from kbtool.runners.registry import is_builtin

    if "@" in backend:
        return True
    return is_builtin(backend) and backend != "numpy"
