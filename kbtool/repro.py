"""The command that runs one result again: `command(result, case, flags)`, the one place a repro is built.

A printed repro carries every flag that changed its result's verdict, so that run as printed, from the directory
the check ran in, it gives the same status and the same exit code:

- the result's own: --op, --case (a backend variant's: its case's), --backend, --mode; --keras-config KEY=VALUE for
  each setting the case was forced to (by --keras-config or keras.json); --grid full for a case of the full grid;
  --device when not the cpu and --precision when not the default (a backend with devices: its results name one);
- the run's (`RunFlags`, built once from the run's options): --seed; --spec and --known when not the shipped files;
  --keras-config defaults when keras.json was ignored; --repeat N; --timeout SECONDS; --strict;
- the environment: KBTOOL_HOME when it is set and the backend's env lives there (not numpy or a plain custom module).

Paths are shown relative to the current directory when inside it, else absolute (`paths.shown`); every word is
shell-quoted.
"""

import os
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Mapping, Optional

from kbtool import paths
from kbtool.vocabulary import DEFAULT_DEVICE, DEFAULT_PRECISION

if TYPE_CHECKING:
    from kbtool.results import Result
    from kbtool.specs.cases import Case


@dataclass(frozen=True)
class RunFlags:
    """The flags of one run that change verdicts: every repro of the run carries those that differ from the
    defaults. `spec_path` and `known_path` are as the repro shows them (None: the shipped file)."""

    seed: int = 0
    spec_path: Optional[str] = None
    known_path: Optional[str] = None
    keras_defaults: bool = False  # --keras-config defaults: keras.json's settings were ignored
    precision: str = DEFAULT_PRECISION
    repeat: int = 1
    case_timeout: Optional[float] = None  # --timeout: None, each backend's own
    strict: bool = False
    kbtool_home: Optional[str] = None  # $KBTOOL_HOME, when set

    @classmethod
    def of_run(
        cls,
        plan: Any,
        known_path: Optional[str] = None,
        case_timeout: Optional[float] = None,
        strict: bool = False,
        repeat: int = 1,
        environ: Optional[Mapping[str, str]] = None,
    ) -> "RunFlags":
        """The flags of a check (or a pytest session) of `plan` run with these options, in `environ` (default:
        this process's)."""
        env = os.environ if environ is None else environ
        settings = getattr(plan, "settings", None)
        spec_path = getattr(plan.spec, "path", None)
        home = env.get("KBTOOL_HOME")
        return cls(
            seed=plan.seed,
            spec_path=_given(spec_path, paths.spec_file()),
            known_path=_given(known_path, paths.known_differences_file()),
            keras_defaults=bool(settings is not None and getattr(settings, "pinned_defaults", False)),
            precision=plan.precision,
            repeat=repeat,
            case_timeout=case_timeout,
            strict=strict,
            kbtool_home=paths.shown(os.path.expanduser(home)) if home else None,
        )


def _given(path: Optional[str], shipped: str) -> Optional[str]:
    """`path` as a repro shows it, or None when it is not given or is the `shipped` file."""
    if not path or os.path.realpath(path) == os.path.realpath(shipped):
        return None
    return paths.shown(path)


def command(result: "Result", case: Optional["Case"] = None, flags: RunFlags = RunFlags()) -> str:
    """The shell command that runs `result` again with every flag that changed its verdict (see the module)."""
    case_id = case.variant_of if case is not None and case.variant_of else result.case
    words: List[str] = ["kbtool", "check", "--op", result.op, "--case", case_id, "--backend", result.backend]
    words += ["--mode", str(result.mode), "--seed", str(flags.seed)]
    if flags.spec_path:
        words += ["--spec", flags.spec_path]
    if flags.known_path:
        words += ["--known", flags.known_path]
    if flags.keras_defaults:
        words += ["--keras-config", "defaults"]
    override = (case.keras_override if case is not None else None) or {}
    for key in sorted(override):
        words += ["--keras-config", f"{key}={override[key]}"]
    if case is not None and case.id.startswith("grid.") and case.grid == "full":
        words += ["--grid", "full"]
    if result.device and result.device != DEFAULT_DEVICE:
        words += ["--device", result.device]
    if result.device and flags.precision != DEFAULT_PRECISION:  # only a backend with devices has a precision
        words += ["--precision", flags.precision]
    if flags.repeat > 1:
        words += ["--repeat", str(flags.repeat)]
    if flags.case_timeout is not None:
        words += ["--timeout", format(flags.case_timeout, "g")]
    if flags.strict:
        words.append("--strict")
    env = [f"KBTOOL_HOME={shlex.quote(flags.kbtool_home)}"] if flags.kbtool_home and _in_home(result.backend) else []
    return " ".join(env + [shlex.quote(word) for word in words])


def _in_home(backend: str) -> bool:
    """Whether a backend's worker runs in an env under KBTOOL_HOME: a managed backend but numpy (kbtool's own
    Python), or a custom module run in one (`mod@ENV`); a plain custom module runs on kbtool's own Python."""
    from kbtool.runners.registry import is_builtin

    if "@" in backend:
        return True
    return is_builtin(backend) and backend != "numpy"
