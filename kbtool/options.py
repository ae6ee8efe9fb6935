"""The flags several commands share, validated in one place: `kbtool check`, `kbtool explore`, `kbtool report render`
and the pytest plugin's --kbtool-* options take the same values and refuse the same ones with the same one-line
message (a KbtoolError: the CLI prints `kbtool: error: ...` and exits 2; the plugin raises pytest.UsageError).

Light on purpose: the CLI imports it at start-up, and `kbtool --help` imports nothing heavy.
"""

import math
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple

import click
from click.decorators import FC
from click.shell_completion import CompletionItem

from kbtool.errors import KbtoolError
from kbtool.settings import RunSettings
from kbtool.vocabulary import DEFAULT_DEVICE, DEFAULT_PRECISION, DEVICES, PRECISIONS, choice_problem

if TYPE_CHECKING:
    from kbtool.keras_settings import CheckSettings
    from kbtool.known.layers import KnownFiles

MAX_CASE_SECONDS = 86400  # --timeout: a day at most


def seconds(text: Any, flag: str = "--timeout") -> Optional[float]:
    """A case timeout as `flag` gives it (None: not given): a finite number of seconds, more than 0, at most a day."""
    if text is None:
        return None
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_CASE_SECONDS):
        raise KbtoolError(
            f"{flag} takes a number of seconds, more than 0 and at most {MAX_CASE_SECONDS} (got {text!r})"
        )
    return value


MAX_REPEAT = 1000  # --repeat: runs of one case at most


def repeat_count(text: Any, flag: str = "--repeat") -> int:
    """How many times each case runs (`flag` N; None: once): a whole number from 1 to MAX_REPEAT."""
    if text is None:
        return 1
    try:
        value = int(str(text).strip()) if not isinstance(text, bool) else 0
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_REPEAT:
        raise KbtoolError(f"{flag} takes a whole number of runs, from 1 to {MAX_REPEAT} (got {text!r})")
    return value


def existing_file(path: Optional[str], flag: str) -> Optional[str]:
    """A file a flag names (--known, --kbtool-spec, ...): it must exist when given."""
    if path and not os.path.exists(path):  # a directory or a device: the reader names what it is
        raise KbtoolError(f"{flag} {path}: no such file")
    return path or None


def device(text: Any, flag: str = "--device") -> str:
    """A device as `flag` gives it (cpu when not given): one of DEVICES."""
    if text is None:
        return DEFAULT_DEVICE
    problem = choice_problem(flag, text, DEVICES)
    if problem:
        raise KbtoolError(problem)
    return str(text)


def precision(text: Any, flag: str = "--precision") -> str:
    """A precision as `flag` gives it (default when not given): one of PRECISIONS."""
    if text is None:
        return DEFAULT_PRECISION
    problem = choice_problem(flag, text, PRECISIONS)
    if problem:
        raise KbtoolError(problem)
    return str(text)


def verbosity(quiet: bool, verbose: bool) -> int:
    """The terminal view's level from -q and -v: 0 the verdict line, 1 the summary, 2 everything."""
    if quiet and verbose:
        raise KbtoolError("give -q (the verdict line only) or -v (everything), not both")
    return 0 if quiet else 2 if verbose else 1


# ---------------------------------------------------------------------------- click: the shared options


def _timeout_callback(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[float]:
    return seconds(value, "--timeout")


def _repeat_callback(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> int:
    return repeat_count(value, "--repeat")


def _known_callback(ctx: click.Context, param: click.Parameter, value: Tuple[str, ...]) -> Tuple[str, ...]:
    return tuple(existing_file(path, "--known") or path for path in value)


TIMEOUT = click.option(
    "--timeout",
    "case_timeout",
    metavar="SECONDS",
    callback=_timeout_callback,
    help="Seconds one case may take before the worker is killed (more than 0, at most 86400; default 120, "
    "theano 600: it compiles each graph, minutes for a scan graph on a cold cache).",
)
REPEAT = click.option(
    "--repeat",
    "repeat",
    metavar="N",
    callback=_repeat_callback,
    help="Run each case N times on each backend's worker (default 1): runs whose outputs are not bit for bit the same "
    "(or where one raises and another returns) give a `nondeterministic` result, never a pass or fail by luck. "
    "Random ops are not repeated: their draws differ by design.",
)
_KNOWN_FILES = click.option(
    "--known",
    "known_paths",
    type=click.Path(dir_okay=False),
    multiple=True,
    metavar="FILE",
    callback=_known_callback,
    help="A known-differences file whose entries add to the shipped file's (repeatable, applied in order; an entry "
    "that repeats an earlier file's must say `overrides: ID`).",
)
_NO_SHIPPED_KNOWN = click.option(
    "--no-shipped-known",
    "no_shipped_known",
    is_flag=True,
    help="Apply only the --known files, not kbtool's shipped known differences.",
)


def KNOWN(function: FC) -> FC:
    """--known FILE (repeatable) and --no-shipped-known: the command gets `known_paths` and `no_shipped_known`."""
    return _KNOWN_FILES(_NO_SHIPPED_KNOWN(function))


def known_files(known_paths: Tuple[str, ...] = (), no_shipped_known: bool = False) -> "KnownFiles":
    """The layers --known and --no-shipped-known name (kbtool/known/layers.py)."""
    from kbtool.known.layers import KnownFiles

    return KnownFiles(tuple(known_paths), not no_shipped_known)


EMBED_KNOWN = click.option(
    "--embed-known",
    "embed_known",
    is_flag=True,
    help="Embed the known-difference entries the run applied in its JSON report (by default it references them by "
    "id and hash): `report merge` of reports from machines that lack your known files needs them.",
)
DEVICE = click.option(
    "--device",
    "device",
    metavar="cpu|gpu",
    default=DEFAULT_DEVICE,
    callback=lambda ctx, param, value: device(value, "--device"),
    help="Where the backends with devices compute (the keras3-* engines, custom modules that declare "
    "KBTOOL_DEVICES; KBTOOL_DEVICE in their workers). A backend that runs on the CPU only is listed as not run on "
    "gpu. Default: cpu.",
)
PRECISION = click.option(
    "--precision",
    "precision",
    metavar="default|highest",
    default=DEFAULT_PRECISION,
    callback=lambda ctx, param, value: precision(value, "--precision"),
    help="Float32 precision of the backends with devices (KBTOOL_PRECISION): each engine's default, or its "
    "highest (no TF32 on a GPU). Default: default.",
)
# `config set/validate`: a custom backend module is imported in a child process for at most this long
IMPORT_TIMEOUT = click.option(
    "--timeout",
    default=60.0,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds a custom backend module may take to import (it is imported in a child process).",
)


def jobs(what: str) -> Callable[[FC], FC]:
    """`--jobs N`: at most N backend workers at once; `what` says how a command shares them out."""
    return click.option(
        "--jobs",
        "-j",
        "jobs",
        type=click.IntRange(1, 256),
        metavar="N",
        help=f"At most N backend workers at once ({what}; default: one per core).",
    )


def outputs(what: str) -> Callable[[FC], FC]:
    """`-o/--output PATH`, repeatable: the files a command writes, each format chosen by its extension (`what`)."""
    return click.option("--output", "-o", "outputs", multiple=True, type=click.Path(dir_okay=False), help=what)


SPEC = click.option(
    "--spec",
    "spec_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Spec file (default: the shipped spec, ops.yaml in kbtool/_specs/ of an installed kbtool, "
    "or specs/ in a checkout).",
)
CASES = click.option(
    "--cases",
    "case_files",
    type=click.Path(dir_okay=False),
    multiple=True,
    metavar="FILE",
    callback=lambda ctx, param, value: tuple(existing_file(path, "--cases") or path for path in value),
    help="A case file (`kbtool models --emit-cases` writes them) whose cases are added to the spec's ops for this "
    "run (repeatable).",
)
# `spec map` and `report migration`
MAP = click.option(
    "--map",
    "map_path",
    type=click.Path(dir_okay=False),
    help="The K.* -> Keras 3 map (default: keras3_map.yaml beside the shipped spec).",
)


# ---------------------------------------------------------------------------- the options of one check


@dataclass(frozen=True)
class CheckOptions:
    """Every flag of `kbtool check`, validated, built once from the command line."""

    ops: Tuple[str, ...] = ()
    backend_names: Tuple[str, ...] = ()
    case_patterns: Tuple[str, ...] = ()
    modes: Tuple[str, ...] = ()
    examples: bool = False
    seed: int = 0
    as_json: bool = False
    outputs: Tuple[str, ...] = ()
    history_path: Optional[str] = None
    spec_path: Optional[str] = None
    case_timeout: Optional[float] = None
    jobs: Optional[int] = None
    keras_config: Tuple[str, ...] = ()
    grid: str = "pairwise"
    known_paths: Tuple[str, ...] = ()
    no_shipped_known: bool = False
    embed_known: bool = False
    active: bool = False
    shard: Optional[str] = None
    statuses: Tuple[str, ...] = ()
    last_failed: bool = False
    strict: bool = False
    repeat: int = 1
    quiet: bool = False
    verbose: bool = False
    device: str = DEFAULT_DEVICE
    precision: str = DEFAULT_PRECISION
    versions: Optional[str] = None  # --versions PKG=LO..HI: each --backend that has PKG becomes its releases
    case_files: Tuple[str, ...] = ()  # --cases FILE: cases added to the spec's ops for this run (specs/extra_cases.py)

    def __post_init__(self) -> None:
        from kbtool.reports import view  # light: the status words
        from kbtool.runners import names, releases  # light: no backend, no index asked here

        object.__setattr__(self, "statuses", tuple(view.check_statuses(self.statuses)))
        # two spellings of one release (`tensorflow1[Keras=2.2.4]`) are one backend: run once, under its one name
        object.__setattr__(self, "backend_names", names.canonical_names(self.backend_names))
        verbosity(self.quiet, self.verbose)
        device(self.device)
        precision(self.precision)
        if self.versions is not None:
            if not self.backend_names:
                raise KbtoolError(
                    "--versions sweeps the releases of a backend you name: give --backend too "
                    f"(e.g. --backend tensorflow1 --versions {self.versions})"
                )
            releases.parse_range(self.versions)
        if self.statuses and self.as_json:
            raise KbtoolError("--status filters the terminal view; --json prints the whole report (filter it with jq)")

    @property
    def verbosity(self) -> int:
        """The terminal's: 0 with -q, 2 with -v, else 1."""
        return verbosity(self.quiet, self.verbose)

    def run_settings(self, keras: "CheckSettings") -> RunSettings:
        """The run's settings, built once from these options and the keras.json settings resolved from them."""
        return RunSettings(
            seed=self.seed,
            repeat=self.repeat,
            case_timeout=self.case_timeout,
            jobs=self.jobs,
            device=self.device,
            precision=self.precision,
            strict=self.strict,
            spec_path=self.spec_path,
            known_paths=self.known_paths,
            shipped_known=not self.no_shipped_known,
            keras_config=keras.override,
            keras_defaults=keras.pinned_defaults,
        )


# ---------------------------------------------------------------------------- shell completion of the flags' values
# (click's completion protocol: `kbtool completion bash|zsh|fish` prints the script that calls these on each Tab.)
# Completion runs on every Tab press, so it reads the op names with a line scan of the spec instead of loading it
# (about 3 ms instead of 1.3 s) and never raises: a completion that fails offers nothing.

_OP_KEY = re.compile(r"^  ([A-Za-z_][A-Za-z0-9_]*):")
_TOP_KEY = re.compile(r"^[A-Za-z_]")


def spec_op_names(path: Optional[str] = None) -> List[str]:
    """The op names of the spec (the keys under its top-level `ops:`), in file order.

    The file is read with the loader's guards (files.read_text: a regular file only, opened without blocking, at
    most files.MAX_FILE_BYTES, UTF-8): /dev/zero, a FIFO or a huge file is a KbtoolError, never a hang."""
    from kbtool import files, paths

    names: List[str] = []
    inside = False
    text = files.read_text(path or paths.spec_file(), "spec ") or ""  # never None: not missing_ok
    for line in text.splitlines():
        if _TOP_KEY.match(line):
            inside = line.startswith("ops:")
        elif inside:
            match = _OP_KEY.match(line)
            if match:
                names.append(match.group(1))
    return names


def _spec_path(ctx: Optional[click.Context]) -> Optional[str]:
    while ctx is not None:
        if ctx.params.get("spec_path"):
            return str(ctx.params["spec_path"])
        ctx = ctx.parent
    return None


def complete_op(ctx: click.Context, param: click.Parameter, incomplete: str) -> List[CompletionItem]:
    try:
        names = spec_op_names(_spec_path(ctx))
    except Exception:  # an unreadable or hostile --spec: nothing to offer
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def complete_backend(ctx: click.Context, param: click.Parameter, incomplete: str) -> List[CompletionItem]:
    """Built-in backends, and the configured one (it may be a custom module)."""
    try:
        from kbtool.config import keras_json as config
        from kbtool.runners.registry import BUILTIN

        names = list(BUILTIN) + _installed_releases()
        configured = config.effective()["backend"].value
        if isinstance(configured, str) and configured not in names:
            names.append(configured)
    except Exception:
        return []
    return [CompletionItem(n) for n in names if n.startswith(incomplete)]


def complete_environment(ctx: click.Context, param: click.Parameter, incomplete: str) -> List[CompletionItem]:
    try:
        from kbtool.runners.registry import RECIPES
    except Exception:
        return []
    return [CompletionItem(n) for n in list(RECIPES) + _installed_releases() if n.startswith(incomplete)]


def _installed_releases() -> List[str]:
    """The release backends installed under kbtool's home (`tensorflow1[keras=2.2.4]`); none when it cannot be read."""
    try:
        from kbtool.runners import releases

        return [r.name for r in releases.installed()]
    except Exception:
        return []
