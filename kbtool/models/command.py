"""The `kbtool models` command, from its flags to its exit code: which models and engines (execute.py), the run with
its progress, the judging and localising, the report (report.py) and its views (output.py)."""

import fnmatch
import sys
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

import click

from kbtool import options
from kbtool.errors import KbtoolError
from kbtool.options import complete_backend

if TYPE_CHECKING:
    from kbtool.interrupts import Interrupts
    from kbtool.models.execute import Engine
    from kbtool.models.known import ModelKnown
    from kbtool.models.records import ModelResult

VIEW_FORMATS = ("terminal", "json", "markdown", "html", "junit")
CASE_EXTENSIONS = (".yaml", ".yml")


@click.command()
@click.option(
    "--backend",
    "backend_names",
    multiple=True,
    shell_complete=complete_backend,
    help="Engine (repeatable): a built-in backend (`kbtool backends` lists them), a release "
    "(tensorflow1[keras=2.2.4]) or a custom module inside an engine's env, module@ENV. Default: every installed "
    "engine. numpy is the oracle (Keras 2.3.1 on kbtool's reference); keras-numpy cannot run models.",
)
@click.option("--model", "model_patterns", multiple=True, metavar="GLOB", help="Only the models matching (repeatable).")
@click.option("--seed", default=0, show_default=True, help="Seed of the weights and inputs (the same on every engine).")
@options.jobs("one worker per engine")
@click.option(
    "--timeout",
    "model_timeout",
    metavar="SECONDS",
    help="Seconds one model may take on an engine before its worker is killed (default 900: Theano compiles an "
    "application for minutes).",
)
@click.option("--no-train", "no_train", is_flag=True, help="The forward pass only: no training step.")
@click.option(
    "--versions",
    metavar="PKG=LO..HI",
    help="Run each --backend that has PKG at every release from LO to HI (installed first when missing), as check "
    "does; a model whose verdict or outputs change from one release to the next is reported (LEMON's finding).",
)
@options.DEVICE
@click.option(
    "--emit-cases",
    "emit_cases",
    type=click.Path(dir_okay=False),
    metavar="FILE.yaml",
    help="Write a spec case for each unexplained K.* call found (`kbtool check --op OP --case ID` reproduces it).",
)
@options.outputs("Also write the report: .json, .md, .html or .xml (JUnit), by extension (repeatable).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(VIEW_FORMATS),
    default="terminal",
    metavar="FORMAT",
    help="What to print on stdout: terminal (default), json, markdown, html or junit.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report on stdout (--format json).")
@click.option(
    "--list", "list_only", is_flag=True, help="List the zoo's models (name, family, what each exercises); run nothing."
)
@click.option("--quiet", "-q", is_flag=True, help="Only the verdict line: no progress, no matrix.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="Also every engine's versions and seconds, every difference, every known finding.",
)
def models(**flags: Any) -> None:
    """Compare whole Keras models across engines, layer by layer.

    Each model of the zoo (built in code, weights and inputs seeded the same everywhere) runs forward and one
    training step on each engine, in its own worker, and is compared with the oracle: kbtool's NumPy reference as a
    Keras 2.3.1 backend (where it cannot run a model, the majority of engines). Each inconsistency is traced to the
    first layer that diverges while its inputs agree, then to the K.* call in it, replayed at op level: a known
    difference explains it, or it is unexplained (--emit-cases writes the spec case that reproduces it).
    Exit code: 0 every model explained on every engine, 1 any unexplained (or an engine that could not start),
    2 usage error, a report that could not be written, or nothing compared; 130/143 interrupted.

    \b
    Examples:
      kbtool models --list
      kbtool models --model mlp --backend tensorflow --backend numpy
      kbtool models -o reports/models.html -o models.json --emit-cases found.yaml
      kbtool models --backend my_backend@tensorflow --model 'resnet*'
      kbtool models --backend tensorflow1 --versions keras=2.2.4..2.3.1
    """
    verbosity = options.verbosity(flags["quiet"], flags["verbose"])
    fmt = _format(flags["fmt"], flags["as_json"])
    chosen = select_models(flags["model_patterns"])
    if flags["list_only"]:
        _list(chosen, fmt)
        return
    timeout = options.seconds(flags["model_timeout"], "--timeout")
    _check_outputs(flags["outputs"], flags["emit_cases"])
    names = _swept(flags["backend_names"], flags["versions"], verbosity)
    from kbtool.models import execute

    engines = execute.plan_engines(names[0], flags["device"], jobs=flags["jobs"], not_run=names[1])
    _refuse_comparing_nothing(engines)
    settings = {
        "seed": flags["seed"],
        "train": not flags["no_train"],
        "timeout": timeout or execute.DEFAULT_TIMEOUT,
        "jobs": flags["jobs"],
        "device": flags["device"],
        "versions": flags["versions"],
        "models": list(flags["model_patterns"]),
        "backends": list(flags["backend_names"]),
        "emit_cases": flags["emit_cases"],
    }
    _run(engines, chosen, settings, flags["outputs"], fmt, verbosity)


def _format(fmt: str, as_json: bool) -> str:
    if as_json and fmt not in ("terminal", "json"):
        raise KbtoolError(f"give --json or --format {fmt}, not both")
    return "json" if as_json else fmt


def select_models(patterns: Tuple[str, ...]) -> List[Any]:
    """The zoo's models matching any of the globs (all without one), in zoo order; a glob matching none is a
    one-line KbtoolError naming the zoo's models."""
    from kbtool.worker.modelzoo import zoo

    everything = list(zoo.MODELS.values())
    if not patterns:
        return everything
    for pattern in patterns:
        if not any(fnmatch.fnmatchcase(m.name, pattern) for m in everything):
            raise KbtoolError(
                "unknown model {!r}; the zoo has {} (`kbtool models --list`)".format(
                    pattern, ", ".join(m.name for m in everything)
                )
            )
    return [m for m in everything if any(fnmatch.fnmatchcase(m.name, p) for p in patterns)]


def _list(chosen: List[Any], fmt: str) -> None:
    rows = [{"name": m.name, "family": m.family, "about": m.about} for m in chosen]
    if fmt == "json":
        import json

        click.echo(json.dumps(rows, indent=2))
        return
    if fmt != "terminal":
        raise KbtoolError("--list prints a table, or JSON with --json")
    import shutil
    import textwrap

    width = max([len(r["name"]) for r in rows] + [5])
    family = max([len(r["family"]) for r in rows] + [6])
    indent = width + family + 4
    # the about column wraps under itself, so that the table fits the terminal (80 columns and up)
    about = max(30, shutil.get_terminal_size((80, 24)).columns - indent)
    click.echo(f"{'model':<{width}}  {'family':<{family}}  about")
    for r in rows:
        lines = textwrap.wrap(r["about"], about) or [""]
        click.echo(f"{r['name']:<{width}}  {r['family']:<{family}}  {lines[0]}")
        for line in lines[1:]:
            click.echo(" " * indent + line)


def _check_outputs(outputs: Tuple[str, ...], emit_cases: Optional[str]) -> None:
    """Every file the run will write, checked now (a long run never ends in an unwritable file)."""
    from kbtool.files import refuse_output_over_input
    from kbtool.models import output
    from kbtool.reports import check_writable

    refuse_output_over_input([*outputs, emit_cases], ())
    output.prepare_outputs(outputs)
    if emit_cases is not None:
        if not emit_cases.lower().endswith(CASE_EXTENSIONS):
            raise KbtoolError(f"--emit-cases {emit_cases}: spec cases are YAML, give a .yaml file")
        check_writable(emit_cases)
        if emit_cases in outputs:
            raise KbtoolError(f"{emit_cases} is both -o and --emit-cases")


def _swept(
    backends: Tuple[str, ...], versions: Optional[str], verbosity: int
) -> Tuple[Tuple[str, ...], Dict[str, str]]:
    """(the engines asked, {release: why it did not install}): under --versions each --backend with the package
    becomes its releases in the range, those not installed installed first (as check does)."""
    if versions is None:
        return backends, {}
    from kbtool.runners import releases
    from kbtool.runners.names import canonical_names

    if not backends:
        raise KbtoolError(
            f"--versions sweeps the releases of an engine you name: give --backend too (--versions {versions})"
        )
    releases.parse_range(versions)
    names = releases.expand_backends(canonical_names(backends), versions)
    releases.refuse_missing_base(names)
    return tuple(names), releases.install_missing(names, _note if verbosity else (lambda line: None))


def _refuse_comparing_nothing(engines: List["Engine"]) -> None:
    """Exit 2 before any worker starts when no engine but the oracle can run (nothing would be compared)."""
    runnable = [e for e in engines if e.launch is not None]
    if not [e for e in runnable if not e.oracle]:
        said = "; ".join(
            f"{e.name}: {e.status}" + (f" ({e.reason})" if e.reason else "") for e in engines if not e.launch
        )
        raise KbtoolError(
            "nothing to compare: no engine but the oracle can run models here" + (f" ({said})" if said else "")
        )


def _run(
    engines: List["Engine"],
    chosen: List[Any],
    settings: Dict[str, Any],
    outputs: Tuple[str, ...],
    fmt: str,
    verbosity: int,
) -> None:
    from kbtool.interrupts import Interrupts
    from kbtool.models import output, report
    from kbtool.runners.pool import default_jobs
    from kbtool.runners.session import Cancel

    started = time.monotonic()
    jobs = settings["jobs"] or default_jobs()
    with Interrupts(Cancel(), "the partial report follows") as interrupts:
        results, infos, changes, cases, stale = _execute(
            engines, [m.name for m in chosen], settings, jobs, interrupts, verbosity
        )
        incomplete = (
            {"signal": interrupts.name or "interrupted", "note": f"stopped by {interrupts.name}: the models that ran"}
            if interrupts.exit_code
            else None
        )
        run = report.ModelsRun(
            settings=settings,
            oracle=next((e.name for e in engines if e.oracle and e.launch is not None), None),
            engines=infos,
            models=[{"name": m.name, "family": m.family, "about": m.about} for m in chosen],
            results=results,
            wall_seconds=time.monotonic() - started,
            releases=changes,
            incomplete=incomplete,
            cases=cases,
            stale_known=stale,
        )
        document = report.assemble(run)
        failures = output.write_all(document, outputs, echo=_note if verbosity else None)
        if fmt == "terminal":
            output.render(document, "terminal", verbosity=verbosity)
        else:
            click.echo(output.render(document, fmt), nl=False)
        if failures:
            _note("kbtool: error: {}".format("; ".join(failures)))
        sys.exit(interrupts.exit_code or (2 if failures else report.exit_code(document)))


def _execute(
    engines: List["Engine"],
    names: List[str],
    settings: Dict[str, Any],
    jobs: int,
    interrupts: "Interrupts",
    verbosity: int,
) -> Tuple[
    List["ModelResult"], List[Dict[str, Any]], List[Dict[str, Any]], Optional[Dict[str, Any]], List[Dict[str, Any]]
]:
    """Run, judge, localise, explain: (results, the engines' report lines, release changes, {path, written} of
    --emit-cases, the stale specs/known_models.yaml entries)."""
    from kbtool.models import execute, known
    from kbtool.models.progress import LEGEND, ModelsProgress
    from kbtool.reports.text import plural

    seed, train, timeout = settings["seed"], settings["train"], settings["timeout"]
    entries = known.load()  # a broken file is a one-line error before any engine starts
    planned = {e.name: len(names) for e in engines if e.launch is not None}
    if verbosity:
        _note(f"kbtool: {plural(len(names), 'model')} on {plural(len(planned), 'engine')}, {jobs} at a time ({LEGEND})")
    progress = ModelsProgress(planned, quiet=60.0) if verbosity else None
    if progress is not None:
        with progress:
            runs, infos = execute.run_all(engines, names, seed, train, timeout, jobs, interrupts.cancel, progress)
    else:
        runs, infos = execute.run_all(engines, names, seed, train, timeout, jobs, interrupts.cancel)
    results = execute.judge(runs, names)
    results += unsupported_results(engines, names, has_oracle=any(e.oracle and e.launch for e in engines))
    cases: Optional[List[Any]] = [] if settings["emit_cases"] else None  # emit.EmittedCase, as localise makes them
    if not interrupts.cancel.is_set():
        tracers = execute.Tracers(engines, seed, timeout, interrupts.cancel)
        try:
            execute.localise_all(
                results, runs, tracers, cases, say=_note if verbosity else None, cancel=interrupts.cancel
            )
        finally:
            tracers.close()
    written = None
    if settings["emit_cases"] and cases is not None:
        from kbtool.models import emit

        emit.write_cases(settings["emit_cases"], cases)
        written = {"path": settings["emit_cases"], "written": len(cases)}
        if verbosity:
            _note(f"kbtool: wrote {plural(len(cases), 'spec case')} to {written['path']}")
    stale = _explain(results, engines, entries, interrupts.cancel.is_set())
    order = [e.name for e in engines]
    results.sort(
        key=lambda r: (
            names.index(r.model) if r.model in names else len(names),
            order.index(r.engine) if r.engine in order else len(order),
        )
    )
    return results, infos, execute.release_changes(runs, results, order), written, stale


def _explain(
    results: List["ModelResult"], engines: List["Engine"], entries: List["ModelKnown"], interrupted: bool
) -> List[Dict[str, Any]]:
    """What op level left unexplained, given to specs/known_models.yaml; its stale entries (none judged when the
    run was interrupted: its findings are not all there)."""
    from kbtool.models import known
    from kbtool.worker.modelzoo.zoo import MODELS

    applied = known.apply(results, entries, [e.name for e in engines if e.launch is not None], list(MODELS))
    return [] if interrupted else [dict(known.stale_record(entry)) for entry in applied.stale]


def unsupported_results(engines: List["Engine"], names: List[str], has_oracle: bool) -> List["ModelResult"]:
    """A cell per model of an engine that cannot run Keras models (keras-numpy, a module on Keras 3), with why."""
    from kbtool.models.records import ModelResult

    oracle = "reference" if has_oracle else "majority"
    return [
        ModelResult(model=name, engine=e.name, verdict="unsupported", oracle=oracle, reason=e.reason)
        for e in engines
        if e.status == "unsupported" and not e.oracle
        for name in names
    ]


def _note(line: str) -> None:
    """A line for the user on stderr (stdout is for data: --json, the views)."""
    click.echo(line, err=True)
