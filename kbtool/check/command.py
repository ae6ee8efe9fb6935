"""The `kbtool check` command, from its flags to its exit code. Its flags are validated once in options.CheckOptions; the run is check/run.py's."""

import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

import click

from kbtool import options
from kbtool.errors import KbtoolError
from kbtool.options import complete_backend, complete_op
from kbtool.vocabulary import DEFAULT_GPU_WORKERS, MODES

if TYPE_CHECKING:
    from kbtool.plan import Plan


@click.command()
@click.option(
    "--op",
    "ops",
    multiple=True,
    help="Op to check (repeatable; default: every op in the spec).",
    shell_complete=complete_op,
)
@click.option(
    "--backend",
    "backend_names",
    multiple=True,
    shell_complete=complete_backend,
    help="Backend (repeatable): a built-in name (`kbtool backends` lists them) or a module path [@ENV]. "
    "Default: every installed built-in backend.",
)
@click.option(
    "--versions",
    "versions",
    metavar="PKG=LO..HI",
    help="Sweep releases: each --backend whose env has PKG becomes every release of PKG the package index has "
    "from LO to HI (e.g. --backend tensorflow1 --versions keras=2.2.4..2.3.1 runs tensorflow1[keras=2.2.4], "
    "tensorflow1[keras=2.2.5], ...), in version order; releases not installed are installed first.",
)
@click.option("--case", "case_patterns", multiple=True, help="Only cases whose id matches this glob (repeatable).")
@click.option(
    "--mode", "modes", multiple=True, type=click.Choice(MODES), help="Evaluation mode (repeatable; default: both)."
)
@click.option("--examples", is_flag=True, help="Only the documented examples: checks what each doc version shows.")
@click.option("--seed", default=0, show_default=True, help="Seed for generated inputs.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON report to stdout instead of the table.")
@options.outputs("Also write the report: .json, .md, .html or .xml (JUnit), by extension (repeatable).")
@click.option(
    "--history",
    "history_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Also append the run to this parity history file (JSON Lines: a line per backend; "
    "`kbtool report history FILE` draws it).",
)
@options.SPEC
@options.CASES
@options.TIMEOUT
@options.jobs(f"sharing every backend's cases; on a GPU, without --jobs, at most {DEFAULT_GPU_WORKERS} of one backend")
@click.option(
    "--keras-config",
    "keras_config",
    multiple=True,
    metavar="KEY=VALUE",
    help="Run every case under this keras.json setting (image_data_format, floatx, epsilon; repeatable), "
    "or `defaults`: ignore keras.json and run the documented defaults (what CI should pin).",
)
@options.KNOWN
@options.EMBED_KNOWN
@options.DEVICE
@options.PRECISION
@click.option(
    "--active",
    is_flag=True,
    help="Check only the active backend (KERAS_BACKEND, else keras.json's backend) against the reference.",
)
@click.option(
    "--grid",
    default="pairwise",
    show_default=True,
    type=click.Choice(["pairwise", "full"]),
    help="Cases generated from the parameters' documented domains: every pair of values, or every row.",
)
@click.option(
    "--shard",
    "shard",
    metavar="K/N",
    help="Run part K of N of the planned cases (the same parts on every machine, balanced by "
    "specs/timings.json); `kbtool report merge` joins the parts' JSON reports.",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="STATUS",
    help="Show only these results in the terminal (repeatable): pass, known, unsupported, fail, error, "
    "crash, timeout, could_not_start, nondeterministic, unexplained. Files, --json, summary and exit code keep all.",
)
@click.option(
    "--last-failed",
    "last_failed",
    is_flag=True,
    help="Rerun only what did not pass (and is not a known difference) in the last check.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Also exit 1 on unsupported results (even explained ones) and on known differences that grew.",
)
@options.REPEAT
@click.option(
    "--show-inputs",
    is_flag=True,
    help="Print the input arrays of each result that did not pass, under its call, before the summary.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only the verdict line (and errors): no progress, no summary.")
@click.option(
    "--verbose",
    "-v",
    is_flag=True,
    help="List everything: the op × backend matrix, every failure with its details, every known "
    "difference, every documentation example.",
)
def check(**flags: Any) -> None:
    """Check ops on backends against the NumPy reference.

    Runs the spec's cases on each backend and compares values, shapes, dtypes and errors. Exit code: 0 all pass, 1 any divergence (or stale known difference, or a backend that could not start;
    with --strict also an unsupported result or a grown known difference), 2 usage/config error, a report that
    could not be written, or nothing to check (no Keras backend can run: numpy, the reference, alone is a
    self-test only with --backend numpy), 130/143 interrupted by SIGINT/SIGTERM (the partial report is written, marked incomplete).
    Every check's JSON report is kept in kbtool's home for --last-failed, which reruns what failed in the last check
    with the same first -o JSON report, else in the same directory (runs elsewhere never overwrite it).

    \b
    Examples:
      kbtool check --op batch_dot
      kbtool check --op conv2d --backend theano --mode symbolic
      kbtool check --active --op conv2d
      kbtool check --keras-config defaults -o report.html -o junit.xml
      kbtool check --known my_known.yaml --status unexplained
      kbtool check --shard 2/4 -o part2.json
      kbtool check --op dot --backend tensorflow1 --versions keras=2.2.4..2.3.1
    """
    from kbtool import reports
    from kbtool.files import refuse_output_over_input

    show_inputs = flags.pop("show_inputs")
    if show_inputs and flags["as_json"]:
        raise KbtoolError("--show-inputs prints to the terminal; --json prints the report (its results carry the call)")
    opts = options.CheckOptions(**flags)
    # the history is read (and appended to) too: a report over it would replace it
    refuse_output_over_input(opts.outputs, (opts.history_path, opts.spec_path, *opts.known_paths))
    refuse_output_over_input([opts.history_path], (opts.spec_path, *opts.known_paths))
    # the files are checked before the plan, which may install --versions' releases (minutes of work)
    reports.prepare_outputs(opts.outputs)
    if opts.history_path:
        from kbtool.reports import history

        history.check_target(opts.history_path)
    _run(_plan(opts), opts, show_inputs)


def _plan(opts: options.CheckOptions) -> "Plan":
    """The check's plan from its flags (the user's keras.json settings applied), its notes said on stderr."""
    from kbtool import keras_settings
    from kbtool import shard as shard_mod
    from kbtool.plan import Selection, Sources, make_plan
    from kbtool.reports import load as report_load
    from kbtool.specs import extra_cases, loader

    shard = shard_mod.parse(opts.shard) if opts.shard is not None else None
    keys = report_load.run_keys(opts.outputs)  # the last report of this -o report, else of this directory
    failed_last = report_load.last_failures(opts.seed, opts.grid, say=_note, keys=keys) if opts.last_failed else None
    settings = keras_settings.resolve(opts.keras_config)
    if opts.active and opts.backend_names:
        raise KbtoolError(
            f"--active checks the configured backend ({settings.active_backend}); give --active or --backend, not both"
        )
    spec = extra_cases.extend(loader.load(opts.spec_path), opts.case_files)
    backend_names, not_run = _swept(opts)
    chosen = Selection(
        ops=opts.ops,
        backends=(_active_backend(settings),) if opts.active else backend_names,
        case_patterns=opts.case_patterns,
        modes=opts.modes,
        examples=opts.examples,
        grid=opts.grid,
        shard=shard,
        last_failed=failed_last,
    )
    plan = make_plan(spec, chosen, opts.run_settings(settings), Sources(not_run=not_run))
    _refuse_checking_nothing(plan, chosen.backends)
    for note in plan.notes:
        _note(f"kbtool: {note}")
    if plan.shard_share is not None:
        _note(f"kbtool: {plan.shard_share.describe()}")
    keras_settings.apply(plan, settings)  # the summary's header line says which settings ran and where from
    return plan


# KERAS_BACKEND / keras.json names of Keras 3's engines that no Keras 2 has: kbtool runs them through keras3_port
KERAS3_ENGINES = {"jax": "keras3-jax", "torch": "keras3-torch", "numpy": "keras3-numpy", "openvino": "keras3-openvino"}


def _active_backend(settings: Any) -> str:
    """The backend --active checks: the configured one, or for a Keras 3 engine's name (KERAS_BACKEND=jax) kbtool's
    backend of that engine, said on stderr; before, `jax` was an unknown module and `numpy` checked kbtool's own
    reference against itself, green."""
    name = str(settings.active_backend)
    engine = KERAS3_ENGINES.get(name)
    if engine is None:
        return name
    _note(f"kbtool: --active: Keras 3's {name} ({settings.sources.get('backend')}): checking {engine}")
    return engine


def _refuse_checking_nothing(plan: "Plan", named: Tuple[str, ...]) -> None:
    """Plan.refuse_checking_nothing, under the name check's tests know."""
    plan.refuse_checking_nothing(named)


def _run(plan: "Plan", opts: options.CheckOptions, show_inputs: bool = False) -> None:
    """Run the plan, keep and write its report, render it, and exit with the check's exit code."""
    from kbtool import reports
    from kbtool.check.run import run_interruptibly
    from kbtool.interrupts import Interrupts
    from kbtool.reports import load as report_load
    from kbtool.reports import view
    from kbtool.reports.verdict import exit_code
    from kbtool.runners.session import Cancel

    verbosity = opts.verbosity
    with Interrupts(Cancel(), "the partial report follows") as interrupts:
        report = run_interruptibly(plan, interrupts, verbosity=verbosity, echo=_note, embed_known=opts.embed_known)
        report_load.save_last(report, warn=_note, keys=report_load.run_keys(opts.outputs))
        failures = reports.write_all(report, opts.outputs, echo=_note if verbosity else None)
        if opts.history_path:
            failures += _append_history(report, opts.history_path, echo=_note if verbosity else None)
        if opts.as_json:
            click.echo(reports.render(report, "json"), nl=False)
        else:
            if show_inputs:
                from kbtool.check import inputs

                inputs.say(plan, view.filtered(report, opts.statuses)["results"])
            reports.render(view.filtered(report, opts.statuses), "terminal", verbosity=verbosity)
            if opts.statuses:
                _note(view.shown_line(report, view.filtered(report, opts.statuses), opts.statuses))
        if verbosity:
            _say_start_log(report)
        if failures:
            _note("kbtool: error: {}".format("; ".join(failures)))
        sys.exit(interrupts.exit_code or (2 if failures else exit_code(report)))


START_LOGS_KEPT = 20  # the newest start-up logs kept in kbtool's home (one per check that had any)


def _say_start_log(report: Dict[str, Any]) -> None:
    """What the backends printed while starting (TensorFlow's C++ logs, CNTK's warnings: never on the terminal) goes
    to a log file of this run in kbtool's home, which one short line names (~ for the user's home: it fits 80
    columns); a log that cannot be written costs a warning."""
    chatty = [b for b in report["backends"] if b.get("start_output")]
    if not chatty:
        return
    try:
        path = write_start_log(chatty)
    except (KbtoolError, OSError, UnicodeError) as exc:
        _note("kbtool: warning: could not keep the backends' start-up output: {}".format(getattr(exc, "strerror", exc)))
        return
    home = os.path.expanduser("~")
    shown = "~" + path[len(home) :] if home not in ("", "/") and path.startswith(home + os.sep) else path
    _note(f"kbtool: start-up output: {shown}")  # which backends printed: the log's headings, and -v


def write_start_log(backends: List[Dict[str, Any]]) -> str:
    """Write each backend's start-up output to a new file under kbtool's home logs/ (the oldest beyond
    START_LOGS_KEPT removed) and return its path."""
    import glob
    import time

    from kbtool.runners.base import kbtool_home

    folder = os.path.join(kbtool_home(), "logs")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "start-{}.log".format(time.strftime("%Y%m%d-%H%M%S")))
    try:
        fh = open(path, "x", encoding="utf-8", errors="replace")
    except FileExistsError:  # another check in the same second: never its log
        path = path[: -len(".log")] + f"-{os.getpid()}.log"
        fh = open(path, "w", encoding="utf-8", errors="replace")
    with fh:
        for b in backends:
            fh.write("== {} printed while starting\n{}\n\n".format(b["name"], b["start_output"]))
    for old in sorted(glob.glob(os.path.join(folder, "start-*.log")), key=os.path.getmtime)[:-START_LOGS_KEPT]:
        try:
            os.remove(old)
        except OSError:
            pass
    return path


def _append_history(report: Dict[str, Any], path: str, echo: Optional[Callable[[str], None]] = None) -> List[str]:
    """check --history: the run's lines appended to the history file; [] or the failure's message (an interrupted
    run has no line: a note says so)."""
    from kbtool.reports import history

    if report.get("incomplete"):
        _note(f"kbtool: note: the run was interrupted, so nothing was added to history {path}")
        return []
    try:
        written, skipped = history.append(path, history.lines_of(report))
    except KbtoolError as exc:
        return [str(exc)]
    if echo:
        echo("appended {} line{} to history {}".format(written, "" if written == 1 else "s", path))
    return []


def _swept(opts: options.CheckOptions) -> Tuple[Tuple[str, ...], Dict[str, str]]:
    """(the backends a check runs, {release: why it did not install}): --backend as named, or under --versions each
    base that has the package replaced by its releases in the range, those not installed installed first."""
    if opts.versions is None:
        return opts.backend_names, {}
    from kbtool.runners.releases import expand_backends, install_missing, refuse_missing_base

    names = expand_backends(opts.backend_names, opts.versions)
    refuse_missing_base(names)
    say = _note if opts.verbosity else (lambda line: None)
    return tuple(names), install_missing(names, say)


def _note(line: str) -> None:
    """A line for the user on stderr (stdout is for data: --json, the views)."""
    click.echo(line, err=True)
