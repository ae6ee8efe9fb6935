"""The `kbtool bisect` command, which finds the release of a package where a result changed (the search is
bisect/search.py's)."""

import json
import sys
import time
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

import click

from kbtool import options
from kbtool.errors import KbtoolError
from kbtool.options import complete_backend, complete_op
from kbtool.settings import RunSettings
from kbtool.vocabulary import MODES

if TYPE_CHECKING:
    from kbtool.bisect.search import Bisection, CheckRunner
    from kbtool.interrupts import Interrupts


@click.command()
@click.option("--op", "ops", multiple=True, help="Op to run (repeatable).", shell_complete=complete_op)
@click.option(
    "--model",
    "model",
    metavar="NAME",
    help="Instead of ops: a model of `kbtool models`'s zoo, whose forward outputs at each release are compared with "
    "the first release's (a change past the tolerance is a change).",
)
@click.option("--case", "case_patterns", multiple=True, help="Only cases whose id matches this glob (repeatable).")
@click.option(
    "--backend",
    "backend",
    required=True,
    shell_complete=complete_backend,
    help="The built-in backend whose package releases are bisected (one with an env of its own, e.g. tensorflow1).",
)
@click.option(
    "--versions",
    "versions",
    required=True,
    metavar="PKG=LO..HI",
    help="The package and the range: every release the package index has from LO to HI, both on the index.",
)
@click.option(
    "--mode", "modes", multiple=True, type=click.Choice(MODES), help="Evaluation mode (repeatable; default: both)."
)
@click.option("--seed", default=0, show_default=True, help="Seed for generated inputs.")
@options.SPEC
@options.TIMEOUT
@options.jobs("the two ends run together")
@click.option(
    "--output", "-o", "output", type=click.Path(dir_okay=False), help="Also write the bisect as JSON to this file."
)
@click.option("--json", "as_json", is_flag=True, help="Print the bisect as JSON to stdout instead of the text view.")
def bisect(
    ops: Tuple[str, ...],
    model: Optional[str],
    case_patterns: Tuple[str, ...],
    backend: str,
    versions: str,
    modes: Tuple[str, ...],
    seed: int,
    spec_path: Optional[str],
    case_timeout: Optional[float],
    jobs: Optional[int],
    output: Optional[str],
    as_json: bool,
) -> None:
    """Find the release of a package where a result changed.

    Runs the selection (--op, --case, --mode) on BACKEND at both ends of the range, with the package at LO and at
    HI (each release a backend of its own, `tensorflow1[keras=2.2.4]`), and compares each result's outcome: its
    status and its message's words (numbers left out) and, for a failing value, its shape and dtype. For each result
    that differs it bisects the index's releases between the ends for the first one whose outcome is no longer LO's.
    A probed release runs the whole selection once, so results share probes; release envs it lacks are installed
    (seconds for a keras release), those installed are reused. A probe whose outcome is neither end's is said
    (non-monotonic). Each change shows both sides and the command that runs each again.

    With --model NAME instead of ops, a probe is that model of `kbtool models`'s zoo run forward (seeded weights and
    inputs), its outputs compared with LO's as `kbtool models` compares an engine with its oracle: a release whose
    outputs move past the tolerance, or where the model fails, is a change.

    \b
    Exit codes:
      0  a result changed between the ends; each change located
      1  nothing differs between the ends
      2  bad input: unknown op, model or backend, a bad range, LO or HI not on
         the index, a package not in the env; or a release that failed
         to install
      130/143  interrupted by SIGINT/SIGTERM

    \b
    Examples:
      kbtool bisect --op dot --backend tensorflow1 --versions keras=2.2.4..2.3.1
      kbtool bisect --op dot --backend theano --versions theano=1.0.0..1.0.5
      kbtool bisect --model lstm --backend theano --versions theano=1.0.0..1.0.5
    """
    from kbtool import reports
    from kbtool.bisect import search as bisect_mod
    from kbtool.interrupts import Interrupts
    from kbtool.runners.session import Cancel

    started = time.monotonic()
    package, lo, hi = _checked_range(backend, versions)
    if output:
        reports.check_writable(output)  # in a folder that exists (files.refuse_missing_folder)
    if bool(ops) == bool(model) or (model and (case_patterns or modes)):
        raise KbtoolError("bisect takes --op (with --case, --mode) or --model NAME: one of the two")
    with Interrupts(Cancel(), "the bisect stops here") as interrupts:
        run = RunSettings(seed=seed, case_timeout=case_timeout, jobs=jobs)
        runner = _runner(backend, package, model, spec_path, ops, case_patterns, modes, run, interrupts.cancel)
        runner.plan([])  # an unknown op or model, or a case glob that matches nothing: said before any install
        found = _search(runner, backend, versions, (package, lo, hi), interrupts)
    wall = time.monotonic() - started
    selection = {"models": [model]} if model else {"ops": list(ops), "cases": list(case_patterns), "modes": list(modes)}
    doc = bisect_mod.document(found, backend, package, selection, runner.installs, wall, runner.release_name)
    if output:
        bisect_mod.write(output, doc)
    if as_json:
        click.echo(json.dumps(doc, indent=2))
    else:
        for line in fitted(bisect_mod.render(found, package, runner.installs, wall), terminal_width()):
            click.echo(line)
    sys.exit(0 if found.changes else 1)


def _runner(
    backend: str,
    package: str,
    model: Optional[str],
    spec_path: Optional[str],
    ops: Tuple[str, ...],
    case_patterns: Tuple[str, ...],
    modes: Tuple[str, ...],
    run: RunSettings,
    cancel: Any,
) -> "CheckRunner":
    """What runs a probe: the model's forward pass at a release (--model), or the selection of cases."""
    from kbtool.bisect import models_probe
    from kbtool.bisect import search as bisect_mod
    from kbtool.specs import loader

    if model:
        return models_probe.ModelRunner(
            backend, package, model, seed=run.seed, timeout=run.case_timeout, cancel=cancel, note=_note
        )
    spec = loader.load(spec_path)
    return bisect_mod.CheckRunner(
        backend, package, spec, ops, case_patterns=case_patterns, modes=modes, run=run, cancel=cancel, note=_note
    )


def _checked_range(backend: str, versions: str) -> Tuple[str, str, str]:
    """(package, LO, HI) of --versions, refused unless BACKEND is a built-in base backend whose env has the package."""
    from kbtool.runners import releases
    from kbtool.runners.registry import RECIPES

    package, lo, hi = releases.parse_range(versions)
    if releases.is_release(backend):
        raise KbtoolError(
            f"--backend {backend}: name the base backend ({releases.base_name(backend)}); --versions names the releases"
        )
    if backend not in RECIPES:
        raise KbtoolError(
            "--backend {}: bisect runs releases of a built-in backend with an env of its own: {}".format(
                backend, ", ".join(RECIPES)
            )
        )
    releases.parse(f"{backend}[{package}={lo}]")  # the package must be one of the env's
    return package, lo, hi


def _search(
    runner: "CheckRunner", backend: str, versions: str, span: Tuple[str, str, str], interrupts: "Interrupts"
) -> "Bisection":
    """The index's releases in the range, said on stderr, bisected (an interrupt exits 128+N)."""
    from kbtool.bisect import search as bisect_mod
    from kbtool.runners import releases

    package, lo, hi = span
    chosen = releases.expand(backend, versions)
    if len(chosen) < 2:
        raise KbtoolError(f"--versions {versions}: LO and HI name the same release; a bisect needs two")
    _note(
        "kbtool: {} releases of {} from {} to {}: {}".format(
            len(chosen), package, lo, hi, ", ".join(r.version_of(package) or "?" for r in chosen)
        )
    )
    try:
        return bisect_mod.search([r.version_of(package) or "" for r in chosen], runner)
    except bisect_mod.Interrupted:
        sys.exit(interrupts.exit_code or 130)


def terminal_width() -> int:
    """The terminal's width (COLUMNS first), 80 when it is not a terminal; never under 40."""
    import shutil

    return max(40, shutil.get_terminal_size((80, 24)).columns)


def fitted(lines: List[str], width: int) -> List[str]:
    """The view's lines at most `width` wide: a repro wraps between shell words with a `\\` continuation (it still
    pastes), any other line between words under its own indent."""
    import textwrap

    from rich.cells import cell_len

    from kbtool.reports.console import SHELL_WORD, pack

    out: List[str] = []
    for line in lines:
        if cell_len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip(" ")))
        head, colon, command = line.partition(": ")
        if line.lstrip().startswith("repro ") and colon:
            out += pack(head + ": ", SHELL_WORD.findall(command), width, " ", indent + "    ", tail=" \\")
        else:
            out += textwrap.wrap(line, width, subsequent_indent=indent + "  ", break_on_hyphens=False)
    return out


def _note(line: str) -> None:
    """A line for the user on stderr (stdout is for the bisect: --json, the text view); what it quotes from outside
    (an install's last line, the index's releases) loses its terminal escapes."""
    from kbtool.reports.text import cell

    for part in fitted([cell(line)], terminal_width()):
        click.echo(part, err=True)
