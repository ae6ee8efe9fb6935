"""The `kbtool explore` command, which searches one op's inputs for differences with Hypothesis (the search is
engine.py's)."""

import json
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import click

from kbtool import options
from kbtool.errors import KbtoolError
from kbtool.options import complete_backend, complete_op

if TYPE_CHECKING:
    from kbtool.explore.engine import Exploration
    from kbtool.interrupts import Interrupts
    from kbtool.plan import PlannedBackend


@click.command()
@click.option("--op", required=True, help="The op to explore.", shell_complete=complete_op)
@click.option(
    "--backend",
    "backend_names",
    multiple=True,
    shell_complete=complete_backend,
    help="Backend (repeatable): a built-in name (`kbtool backends` lists them) or a module path [@ENV]. "
    "Default: every installed built-in backend but numpy (the reference itself).",
)
@click.option(
    "--max-examples",
    default=100,
    show_default=True,
    type=click.IntRange(1, 100000),
    help="Drawn cases per backend (shrinking a failure runs a few more).",
)
@click.option("--seed", default=0, show_default=True, type=int, help="Hypothesis seed: the same seed, the same draws.")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON on stdout.")
@click.option("--save", is_flag=True, help="Add each unexplained failure to the op's cases in the spec file.")
@click.option("--replay", metavar="JSON|@FILE", help="Run one case, as a failure's replay command gives it.")
@options.SPEC
@options.KNOWN
@options.TIMEOUT
@options.REPEAT
def explore(
    op: str,
    backend_names: Tuple[str, ...],
    max_examples: int,
    seed: int,
    as_json: bool,
    save: bool,
    replay: Optional[str],
    spec_path: Optional[str],
    known_paths: Tuple[str, ...],
    no_shipped_known: bool,
    case_timeout: Optional[float],
    repeat: int,
) -> None:
    """Search one op's inputs for differences (Hypothesis).

    Draws inputs, parameters and keras.json settings, and judges them against the reference as `check` does.
    Each failure is shrunk to a minimal case with a replay command. Exit code: 0 nothing unexplained, 1 an
    unexplained failure (or a backend that could not run), 2 usage errors.

    \b
    Examples:
      kbtool explore --op mean --backend theano --max-examples 200
      kbtool explore --op mean --backend theano --seed 1 --json
      kbtool explore --op mean --backend theano --replay @case.json
    """
    from kbtool.explore import engine, render
    from kbtool.specs import loader

    raw = engine.parse_replay(replay) if replay else None
    spec_obj = loader.load(spec_path)
    spec_obj.op(op)  # an unknown op: one line naming the closest ones
    planned_backends = _planned_backends(backend_names)
    exploration = engine.Exploration(
        spec_obj,
        op,
        seed,
        engine.load_known_entries(spec_obj, options.known_files(known_paths, no_shipped_known)),
        case_timeout=case_timeout,
        repeat=repeat,
    )
    if raw is None and exploration.strategy is None:
        raise KbtoolError(
            f"nothing to explore: {op} has no case to start from (its cases are all raw-args, raises, "
            "random or gradient cases)"
        )
    outcomes, interrupts = _search(exploration, planned_backends, max_examples, raw)
    if interrupts.caught:
        save = False  # an interrupted search saves nothing: its last draw may not be minimal
    saved, not_saved = _save(outcomes, spec_obj.path, op, seed) if save else ([], [])
    if as_json:
        click.echo(json.dumps(render.as_json(op, seed, max_examples, outcomes, saved), indent=2))
    else:
        click.echo(render.text(op, outcomes, saved))
    for problem in not_saved:
        click.echo(f"kbtool: error: {problem}", err=True)
    if interrupts.caught:
        click.echo(f"kbtool: interrupted by {interrupts.name}: the findings above are partial", err=True)
        sys.exit(interrupts.exit_code)
    sys.exit(engine.exit_code(outcomes))


def _planned_backends(backend_names: Tuple[str, ...]) -> List["PlannedBackend"]:
    """The backends to explore (default: every installed built-in one but numpy); refused when none can run."""
    from kbtool.plan import resolve_backends
    from kbtool.runners import registry

    builtin = [name for name in registry.BUILTIN if name != "numpy"]
    planned_backends = resolve_backends(list(backend_names), registry.launch_for, builtin)
    if not any(planned_backend.launch for planned_backend in planned_backends):
        raise KbtoolError(
            "nothing to explore: no backend can run here ({})".format(
                "; ".join(f"{s.name}: {s.unavailable}" for s in planned_backends)
            )
        )
    return planned_backends


def _search(
    exploration: "Exploration", planned_backends: List["PlannedBackend"], max_examples: int, raw: Any
) -> Tuple[List[Any], "Interrupts"]:
    """(each backend's outcome, the interrupts that watched the search): the search, or the one replayed case."""
    from kbtool.explore import engine, render
    from kbtool.interrupts import Interrupted, Interrupts

    outcomes: List[Any] = []  # filled as each backend finishes (or is interrupted): a signal keeps what was found
    with Interrupts(exploration.cancel, "the findings so far follow", raise_in_main=True) as interrupts:
        try:
            if raw is not None:
                for planned_backend in planned_backends:
                    if planned_backend.launch:
                        outcomes.append(engine.replay(exploration, planned_backend.name, planned_backend.launch, raw))
            else:
                with render.Progress() as progress:
                    engine.explore(exploration, planned_backends, max_examples, progress=progress, outcomes=outcomes)
        except Interrupted:
            pass
    return outcomes, interrupts


def _save(outcomes: List[Any], spec_path: str, op: str, seed: int) -> Tuple[List[str], List[str]]:
    """--save: each unexplained failure added to the op's cases; (what was saved, the problems of what was not)."""
    from kbtool.explore.save import save_case

    saved: List[str] = []
    not_saved: Dict[str, None] = {}  # each problem once, in order
    unexplained = {json.dumps(f.case, sort_keys=True): f for o in outcomes for f in o.unexplained}
    for failure in unexplained.values():
        about = f"found by kbtool explore (seed {seed}) on {failure.backend}, {failure.mode} mode: {failure.message}"
        try:
            saved.append(f"{op} case {save_case(spec_path, op, failure.case, about[:300])}")
        except KbtoolError as exc:  # the findings and their replays are still printed, the problem after them
            not_saved[str(exc)] = None
    return saved, list(not_saved)
