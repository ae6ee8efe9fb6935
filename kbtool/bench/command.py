"""`kbtool bench`: the command line (the work is in measure.py; every view renders the JSON of report.py)."""

import math
import shlex
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NoReturn, Optional, Sequence, Tuple

import click

from kbtool import options
from kbtool.errors import KbtoolError
from kbtool.options import complete_backend, complete_op
from kbtool.vocabulary import MODES

if TYPE_CHECKING:  # the heavy modules load with the command's run, not with `kbtool --help`
    from kbtool.bench.load import Watch
    from kbtool.bench.measure import Settings
    from kbtool.interrupts import Interrupts
    from kbtool.plan import PlannedBackend

SIZE_NAMES = ("small", "medium", "large")


def _sizes(size: Optional[str], sizes: Optional[str]) -> List[str]:
    if size and sizes:
        raise KbtoolError("give --size or --sizes, not both")
    if not sizes:
        return [size or "medium"]
    names = [s.strip() for s in sizes.split(",") if s.strip()]
    if names == ["all"]:
        return list(SIZE_NAMES)
    bad = [s for s in names if s not in SIZE_NAMES]
    if bad or not names:
        raise KbtoolError(f"--sizes takes a comma-separated list of small, medium, large (or all); got {sizes!r}")
    return [s for s in SIZE_NAMES if s in names]


def _positive(name: str, value: Optional[float], upper: float) -> Optional[float]:
    if value is None:
        return None
    if not (math.isfinite(value) and 0 < value <= upper):
        raise KbtoolError(f"{name} takes a number of seconds above 0 and at most {upper:g} (got {value:g})")
    return value


@click.command("bench")
@click.option(
    "--op",
    "ops",
    multiple=True,
    shell_complete=complete_op,
    help="Op to time (repeatable; default: every op of the spec that has a case).",
)
@click.option(
    "--backend",
    "backend_names",
    multiple=True,
    shell_complete=complete_backend,
    help="Backend (repeatable): a built-in name or a module path [@ENV]. Default: every installed one.",
)
@click.option(
    "--versions",
    metavar="PKG=OLD..NEW",
    help="Time the --backend at two releases of PKG, OLD and NEW (installed first when missing), one after the "
    "other in this run, and compare NEW against OLD as --compare does (e.g. keras=2.2.4..2.3.1).",
)
@click.option("--size", type=click.Choice(SIZE_NAMES), help="One size of each op's family (default: medium).")
@click.option("--sizes", metavar="LIST", help="Several sizes, e.g. small,medium,large or all (fits the growth).")
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(MODES),
    help="Only this mode (repeatable; default both).",
)
@click.option(
    "--budget",
    type=float,
    default=0.1,
    show_default=True,
    metavar="SECONDS",
    help="Seconds of samples per result (after calibration and warmup).",
)
@click.option(
    "--min-samples",
    type=click.IntRange(2, 1000),
    default=5,
    show_default=True,
    help="Samples per result at least, however long they take (up to --max-seconds).",
)
@click.option(
    "--max-seconds",
    type=float,
    default=5.0,
    show_default=True,
    metavar="SECONDS",
    help="A result's time limit: it stops sampling there (and says how few samples it has).",
)
@click.option(
    "--compare",
    "baseline",
    type=click.Path(dir_okay=False),
    metavar="BASELINE.json",
    help="Compare with an earlier `kbtool bench -o BASELINE.json` (Mann-Whitney U on the samples).",
)
@click.option(
    "--fail-over",
    type=float,
    default=10.0,
    show_default=True,
    metavar="PCT",
    help="With --compare: exit 1 when a significant slowdown exceeds PCT percent.",
)
@click.option(
    "--min-effect",
    type=float,
    default=5.0,
    show_default=True,
    metavar="PCT",
    help="With --compare: smaller changes of the median count as unchanged, however significant.",
)
@click.option(
    "--from",
    "source",
    type=click.Path(dir_okay=False),
    metavar="BENCH.json",
    help="Measure nothing: render (and --compare) an earlier bench's JSON.",
)
@options.DEVICE
@options.PRECISION
@click.option("--seed", default=0, show_default=True, help="Seed of the generated inputs.")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON (with every sample) instead of the table.")
@options.outputs("Also write the bench: .json, .md or .html, by extension (repeatable).")
@options.SPEC
@click.option("--quiet", "-q", is_flag=True, help="Only the verdict line: no progress, no table.")
@click.option("--verbose", "-v", is_flag=True, help="Every result in the table, and the growth exponents.")
def bench(
    ops: Tuple[str, ...],
    backend_names: Tuple[str, ...],
    versions: Optional[str],
    size: Optional[str],
    sizes: Optional[str],
    modes: Tuple[str, ...],
    budget: float,
    min_samples: int,
    max_seconds: float,
    baseline: Optional[str],
    fail_over: float,
    min_effect: float,
    source: Optional[str],
    device: str,
    precision: str,
    seed: int,
    as_json: bool,
    outputs: Tuple[str, ...],
    spec_path: Optional[str],
    quiet: bool,
    verbose: bool,
) -> None:
    """Time each op on each backend.

    Reports the one-time cost (graph build, compile, first call) apart from the steady-state call, median ± IQR of
    calibrated samples, GFLOP/s and GB/s against this machine's measured peak (with --device gpu: against the
    GPU's own, measured in each backend's worker), the ratio to the fastest backend and to NumPy, the growth over
    sizes, and a regression gate against a baseline.

    Backends run one at a time (no measurement shares the cores). Exit code: 0 when something was measured and
    the gate holds, 1 when nothing was measured or --compare found a significant slowdown beyond --fail-over,
    2 on a usage error or a file that could not be written, 130 when interrupted (the partial bench is written).

    With --versions PKG=OLD..NEW the one --backend is timed at the two ends of the range (its releases
    `BACKEND[PKG=OLD]` and `BACKEND[PKG=NEW]`, the releases between them not measured), OLD first and NEW right
    after in the same run, same seed and sizes; NEW is then compared against OLD (the gate and exit codes of
    --compare).

    \b
    Examples:
      kbtool bench --op dot --op conv2d
      kbtool bench --backend tensorflow --sizes all -v
      kbtool bench --op dot -o bench.json -o bench.html
      kbtool bench --op dot --compare baseline.json --fail-over 10
      kbtool bench --op dot --backend tensorflow1 --versions keras=2.2.4..2.3.1
      kbtool bench --from bench.json --compare baseline.json
    """
    from kbtool.runners.names import canonical_names

    started = time.time()
    request = _Request(
        ops=tuple(ops),
        backend_names=canonical_names(backend_names),  # two spellings of one release: timed once
        versions=versions,
        sizes=_sizes(size, sizes),
        modes=tuple(modes),
        budget=budget,
        min_samples=min_samples,
        max_seconds=max_seconds,
        baseline=baseline,
        fail_over=fail_over,
        min_effect=min_effect,
        device=device,
        precision=precision,
        seed=seed,
        as_json=as_json,
        outputs=tuple(outputs),
        spec_path=spec_path,
        quiet=quiet,
        verbose=verbose,
    )
    _check(request, source)
    base = _load_baseline(request)
    if source:
        _refuse_measuring_options(request, size, sizes)
        _render_saved(request, source, base)
    else:
        _measure_and_show(request, base, started)


@dataclass(frozen=True)
class _Request:
    """The options of one `kbtool bench` (the sizes already chosen from --size/--sizes)."""

    ops: Tuple[str, ...]
    backend_names: Tuple[str, ...]
    versions: Optional[str]
    sizes: List[str]
    modes: Tuple[str, ...]
    budget: float
    min_samples: int
    max_seconds: float
    baseline: Optional[str]
    fail_over: float
    min_effect: float
    device: str
    precision: str
    seed: int
    as_json: bool
    outputs: Tuple[str, ...]
    spec_path: Optional[str]
    quiet: bool
    verbose: bool

    def say(self, line: str) -> None:
        """A progress or notice line on stderr (none with -q)."""
        if not self.quiet:
            _stderr_lines(line)


@dataclass
class _Measured:
    """What a bench measured (so far: a signal may have stopped it)."""

    infos: List[Dict[str, Any]] = field(default_factory=list)
    results: List[Dict[str, Any]] = field(default_factory=list)
    incomplete: Optional[Dict[str, Any]] = None
    peak: Optional[Dict[str, Any]] = None


def _check(request: _Request, source: Optional[str] = None) -> None:
    """The usage errors of the options, each one line; an output that is also an input (--from, --compare, the
    spec) is refused before anything is read or written."""
    from kbtool.files import refuse_output_over_input

    refuse_output_over_input(request.outputs, (source, request.baseline, request.spec_path))
    _positive("--budget", request.budget, 3600)
    _positive("--max-seconds", request.max_seconds, 86400)
    for name, value in (("--fail-over", request.fail_over), ("--min-effect", request.min_effect)):
        if not (math.isfinite(value) and value >= 0):
            raise KbtoolError(f"{name} takes a percentage of 0 or more (got {value:g})")
    if request.quiet and request.verbose:
        raise KbtoolError("give -q (the verdict line only) or -v (everything), not both")
    if request.versions and request.baseline:
        raise KbtoolError(
            "--versions compares two releases measured now; --compare compares with a saved bench: give one of them"
        )


def _load_baseline(request: _Request) -> Optional[Dict[str, Any]]:
    """The --compare baseline (None without one); the -o files are checked writable first."""
    from kbtool.bench import output as bench_output
    from kbtool.bench import report as bench_report

    base = bench_report.load(request.baseline) if request.baseline else None
    bench_output.prepare_outputs(request.outputs)
    return base


def _refuse_measuring_options(request: _Request, size: Optional[str], sizes: Optional[str]) -> None:
    """--from renders a bench as it was measured: an option that chooses what to measure is a usage error."""
    given = [
        name
        for name, value in (
            ("--op", request.ops),
            ("--backend", request.backend_names),
            ("--versions", request.versions),
            ("--size", size),
            ("--sizes", sizes),
            ("--mode", request.modes),
            ("--device", request.device if request.device != "cpu" else None),
            ("--precision", request.precision if request.precision != "default" else None),
        )
        if value
    ]
    if given:
        raise KbtoolError("--from renders an earlier bench as it was measured; {} cannot apply".format("/".join(given)))


def _render_saved(request: _Request, source: str, base: Optional[Dict[str, Any]]) -> None:
    """--from: an earlier bench, compared with the baseline when given, shown and written again."""
    from kbtool.bench import compare
    from kbtool.bench import report as bench_report

    data = bench_report.load(source)
    if base is not None:
        data["comparison"] = compare.compare(
            data, base, request.baseline or "", min_effect_pct=request.min_effect, fail_over_pct=request.fail_over
        )
    data["summary"]["ok"] = bench_report.is_ok(data)
    _show(data, request.outputs, request.as_json, request.quiet, request.verbose, _stderr_lines)


def _measure_and_show(request: _Request, base: Optional[Dict[str, Any]], started: float) -> None:
    """Measure the ops on the backends (under the one signal handler of kbtool/interrupts.py), then assemble, show
    and write the bench, and exit with its code. A first signal stops the measurements (the workers are killed at
    once) and the partial bench is written; a second lets that writing finish; a third exits at once."""
    from kbtool.bench import measure
    from kbtool.bench.measure import Settings
    from kbtool.interrupts import Interrupts
    from kbtool.runners.session import Cancel
    from kbtool.specs import loader

    settings = Settings(
        sizes=request.sizes,
        modes=list(request.modes) or list(MODES),
        budget=request.budget,
        min_samples=request.min_samples,
        max_seconds=request.max_seconds,
        seed=request.seed,
        device=request.device,
        precision=request.precision,
    )
    spec = loader.load(request.spec_path)
    items, families, skipped = measure.plan_items(spec, list(request.ops), request.sizes, request.seed)
    backend_names = request.backend_names
    pair = _releases(backend_names, request.versions, request.quiet) if request.versions else None  # ops first
    if pair:
        backend_names = (pair[0].name, pair[1].name)
    planned_backends = measure.planned_backends(backend_names, request.device, request.precision)
    runnable = [s for s in planned_backends if s.launch is not None]
    if not runnable:
        raise KbtoolError(
            "nothing to bench: no backend can run here ({})".format(
                "; ".join(f"{s.name}: {s.unavailable}" for s in planned_backends)
            )
        )
    writing = "the bench is being written (once more exits at once)"
    # the handlers are restored whatever happens (an in-process caller keeps its own)
    with Interrupts(Cancel(), what=None, raise_in_main=True, while_writing=writing) as interrupts:
        from kbtool.bench import load as bench_load
        from kbtool.bench import peak
        from kbtool.reports.text import plural  # here: `kbtool --help` imports nothing heavy

        # said once the handlers are in: a signal from here on stops the bench with its partial results
        request.say(
            "kbtool bench: {} × {} on {}; measuring this machine's peak first{}".format(
                plural(len(families), "op"),
                plural(len(request.sizes), "size"),
                ", ".join(s.name for s in runnable),
                f" (and each backend's {request.device} peak in its worker)"
                if any(peak.wants_device_peak(s.launch.device) for s in runnable)
                else "",
            )
        )
        watch = bench_load.Watch()
        busy = watch.busy_before()
        if busy:
            request.say(f"kbtool bench: warning: {busy}")
        measured = _measure(request, planned_backends, runnable, items, settings, pair is not None, interrupts)
        interrupts.finishing()  # from here a signal no longer interrupts
        machine = _machine(watch)
        data = _assemble(request, measured, settings, families, items, skipped, pair, base, machine, started)
        interrupted = measured.incomplete["signal"] if measured.incomplete else None
        _show(data, request.outputs, request.as_json, request.quiet, request.verbose, request.say, interrupted)


def _measure(
    request: _Request,
    planned_backends: List["PlannedBackend"],
    runnable: List["PlannedBackend"],
    items: List[Any],
    settings: "Settings",
    in_turns: bool,
    interrupts: "Interrupts",
) -> _Measured:
    """This machine's peak, every backend's measurements (the two releases of --versions in turns), the peak
    again; a signal stops them and keeps what was measured."""
    from kbtool.bench import measure, peak
    from kbtool.bench import report as bench_report
    from kbtool.bench.progress import BenchProgress
    from kbtool.interrupts import Interrupted
    from kbtool.runners.registry import not_installed_info

    done = _Measured()
    cancel = interrupts.cancel
    try:
        done.peak = peak.measure()
        with BenchProgress(runnable, items, settings, enabled=not request.quiet, in_turns=in_turns) as progress:
            for planned_backend in planned_backends:
                if planned_backend.launch is None:
                    done.infos.append(
                        not_installed_info(planned_backend.name, planned_backend.unavailable, planned_backend.status)
                    )
                elif not in_turns:
                    measure.measure_backend(
                        planned_backend, items, settings, done.infos, done.results, progress=progress, cancel=cancel
                    )
            if in_turns:  # the two releases in turns, each result on both back to back
                measure.measure_in_turns(
                    runnable, items, settings, done.infos, done.results, progress=progress, cancel=cancel
                )
    except KeyboardInterrupt as exc:  # the workers are killed (the handler); keep the rest
        name = exc.name if isinstance(exc, Interrupted) else "SIGINT"
        done.incomplete = {
            "signal": name,
            "note": "interrupted by {} {}: {} results measured before it".format(
                name, "while measuring this machine's peak" if done.peak is None else "", len(done.results)
            ).replace("  ", " "),
        }
        done.infos = _after_interrupt(planned_backends, done.infos, bench_report.NOT_RUN)
        request.say(f"kbtool: {name}: stopping; the partial bench follows")
    if done.results and not done.incomplete and done.peak is not None:  # (results come after the first peak)
        request.say("kbtool bench: measuring this machine's peak again")
        try:
            done.peak = peak.combine(done.peak, peak.measure())
        except KeyboardInterrupt as exc:  # the first measurement stands
            name = exc.name if isinstance(exc, Interrupted) else "SIGINT"
            done.incomplete = {
                "signal": name,
                "note": f"interrupted by {name} while measuring this machine's peak again",
            }
    return done


def _machine(watch: "Watch") -> Dict[str, Any]:
    """The machine the bench ran on, and its load while it ran."""
    from kbtool.bench import measure

    machine: Dict[str, Any] = measure.machine()
    machine["load"] = watch.record()
    return machine


def _assemble(
    request: _Request,
    measured: _Measured,
    settings: "Settings",
    families: Dict[str, Any],
    items: List[Any],
    skipped: Dict[str, str],
    pair: Optional[Tuple[Any, Any, int]],
    base: Optional[Dict[str, Any]],
    machine: Dict[str, Any],
    started: float,
) -> Dict[str, Any]:
    """The bench's JSON: the results with their scaling, and the comparison (--versions: NEW against OLD;
    --compare: against the baseline)."""
    import time

    from kbtool.bench import compare, measure
    from kbtool.bench import report as bench_report

    lookup = {(i.family.op, i.size): (i.family, i.case) for i in items}
    device_peaks = {i["name"]: i["peak"] for i in measured.infos if i.get("peak")}
    scaling = measure.finish(measured.results, lookup, measured.peak, device_peaks=device_peaks)
    current = {"results": measured.results, "settings": settings.as_dict(list(families)), "backends": measured.infos}
    limits = dict(min_effect_pct=request.min_effect, fail_over_pct=request.fail_over)
    comparison = None
    if pair:
        comparison = compare.between(current, pair[0].name, pair[1].name, **limits)
    elif base is not None:
        comparison = compare.compare(current, base, request.baseline or "", **limits)
    versions_note = pair and _pair_note(pair, request.versions or "", request.seed, request.sizes)
    notes = [n for n in [measure.skipped_note(skipped), versions_note] if n]
    data: Dict[str, Any] = bench_report.assemble(
        bench_report.BenchRun(
            " ".join(["kbtool"] + sys.argv[1:]),
            machine,
            measured.peak,
            settings.as_dict(list(families)),
            families,
            measured.infos,
            measured.results,
            scaling,
            time.time() - started,
            comparison=comparison,
            incomplete=measured.incomplete,
            notes=notes,
        )
    )
    return data


def _releases(backend_names: Tuple[str, ...], text: str, quiet: bool) -> Tuple[Any, Any, int]:
    """--versions PKG=OLD..NEW on the one --backend: (OLD's release, NEW's release, how many releases the index has
    between them), both installed (those missing are installed now, said on stderr). A KbtoolError for a usage
    error, a range the index does not have, or an env that failed to install."""
    from kbtool.runners import releases

    if len(backend_names) != 1:
        raise KbtoolError(
            "--versions takes exactly one --backend, the built-in backend whose releases are timed (e.g. --backend "
            "tensorflow1 --versions keras=2.2.4..2.3.1){}".format(
                "; got " + ", ".join(backend_names) if backend_names else ""
            )
        )
    package, lo, hi = releases.parse_range(text)
    if releases.version_key(lo) == releases.version_key(hi):
        raise KbtoolError(f"--versions {text!r}: both ends are {package} {lo}; name two releases to compare")
    found = releases.expand(backend_names[0], text)
    if len(found) < 2:  # the index lists the two ends as one release (2.3 and 2.3.0)
        raise KbtoolError(f"--versions {text!r}: the index has one release in this range; name two to compare")
    old, new = found[0], found[-1]
    releases.refuse_missing_base([old.name, new.name])
    missing = [r.name for r in (old, new) if not releases.is_installed(r.name)]
    if missing:
        say = _quiet if quiet else _stderr_lines
        say("kbtool bench: installing {} first (not installed yet)".format(", ".join(missing)))
        done = releases.install_releases(missing, out=say, err=_quiet if quiet else _stderr_whole)
        failed = list(dict.fromkeys(name for d in done for name in d.failed))
        if failed:
            raise KbtoolError(
                "could not install {}: nothing was timed (`kbtool env install {}` says why)".format(
                    ", ".join(failed), " ".join(shlex.quote(n) for n in failed)
                )
            )
    return old, new, len(found) - 2


def _quiet(line: str) -> None:
    """A line -q leaves out."""


def _stderr_whole(line: str) -> None:
    click.echo(line, err=True)


def _pair_note(pair: Tuple[Any, Any, int], text: str, seed: int, sizes: List[str]) -> str:
    """How --versions timed its two releases, and what lies between them."""
    from kbtool.reports.text import plural

    old, new, between = pair
    return (
        "--versions {}: {} and {} timed in turns in this run (each result on one, then at once on the other, "
        "which goes first alternating; one worker at a time), same seed {} and sizes ({}); {}".format(
            text,
            old.name,
            new.name,
            seed,
            ", ".join(sizes),
            "{} between them not measured".format(plural(between, "release"))
            if between
            else "the index has no release between them",
        )
    )


def _stderr_lines(line: str) -> None:
    """A progress or notice line on stderr, broken between words at the terminal's width (COLUMNS when set)."""
    import shutil

    from kbtool.bench.terminal import sized, wrap

    for part in wrap(line, shutil.get_terminal_size().columns) if sized(sys.stderr) else [line]:
        click.echo(part, err=True)


def _after_interrupt(planned_backends: List[Any], infos: List[Dict[str, Any]], not_run: str) -> List[Dict[str, Any]]:
    """The backends' infos after an interrupt: those the bench never reached say so (the one it was starting too)."""
    from kbtool.runners.registry import is_builtin, not_installed_info

    done = {i["name"] for i in infos}
    return infos + [
        not_installed_info(s.name, s.unavailable)
        if s.launch is None
        else {
            "name": s.name,
            "kind": "builtin" if is_builtin(s.name) else "custom",
            "status": not_run,
            "reason": "interrupted before it ran",
        }
        for s in planned_backends
        if s.name not in done
    ]


def _show(
    data: Dict[str, Any],
    outputs: Sequence[str],
    as_json: bool,
    quiet: bool,
    verbose: bool,
    say: Callable[[str], None],
    interrupted: Optional[str] = None,
) -> NoReturn:
    """Write the -o files, print the chosen view, exit with the bench's code."""
    from kbtool.bench import output as bench_output
    from kbtool.bench import report as bench_report
    from kbtool.bench import terminal
    from kbtool.bench.units import verdict_line

    failures = bench_output.write_all(data, outputs)
    for path in outputs:
        if not any(path in f for f in failures):
            say(f"kbtool: wrote {path}")
    if as_json:
        click.echo(bench_report.dumps(data), nl=False)
    elif quiet:
        click.echo(verdict_line(data))
    else:
        terminal.render(data, verbose=verbose)
    if failures:
        click.echo("kbtool: error: {}".format("; ".join(failures)), err=True)
    sys.exit(
        {"SIGINT": 130, "SIGTERM": 143}[interrupted] if interrupted else 2 if failures else bench_report.exit_code(data)
    )
