"""`kbtool bench`: the command line (the work is in measure.py; every view renders the JSON of report.py)."""

import math
import shlex
import signal
import sys
from typing import Any, Dict, List, Optional, Tuple

import click

from kbtool import options
from kbtool.errors import KbtoolError
from kbtool.options import complete_backend, complete_op
from kbtool.vocabulary import MODES

SIZE_NAMES = ("small", "medium", "large")


def _sizes(size, sizes):
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


def _positive(name, value, upper):
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
@click.option(
    "--output",
    "-o",
    "outputs",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Also write the bench: .json, .md or .html, by extension (repeatable).",
)
@options.SPEC
@click.option("--quiet", "-q", is_flag=True, help="Only the verdict line: no progress, no table.")
@click.option("--verbose", "-v", is_flag=True, help="Every result in the table, and the growth exponents.")
def bench(
    ops,
    backend_names,
    versions,
    size,
    sizes,
    modes,
    budget,
    min_samples,
    max_seconds,
    baseline,
    fail_over,
    min_effect,
    source,
    device,
    precision,
    seed,
    as_json,
    outputs,
    spec_path,
    quiet,
    verbose,
):
    """Time each op on each backend.

    Reports the one-time cost (graph build, compile, first call) apart from the steady-state
    call, median ± IQR of calibrated samples, GFLOP/s and GB/s against this machine's measured peak, the ratio to
    the fastest backend and to NumPy, the growth over sizes, and a regression gate against a baseline.

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
    import time

    from kbtool.bench import compare, measure, peak
    from kbtool.bench import load as bench_load
    from kbtool.bench import output as bench_output
    from kbtool.bench import report as bench_report
    from kbtool.bench.measure import Settings
    from kbtool.specs import loader

    started = time.time()
    chosen = _sizes(size, sizes)
    _positive("--budget", budget, 3600)
    _positive("--max-seconds", max_seconds, 86400)
    for name, value in (("--fail-over", fail_over), ("--min-effect", min_effect)):
        if not (math.isfinite(value) and value >= 0):
            raise KbtoolError(f"{name} takes a percentage of 0 or more (got {value:g})")
    if quiet and verbose:
        raise KbtoolError("give -q (the verdict line only) or -v (everything), not both")
    if versions and baseline:
        raise KbtoolError(
            "--versions compares two releases measured now; --compare compares with a saved bench: give one of them"
        )
    base = bench_report.load(baseline) if baseline else None
    bench_output.prepare_outputs(outputs)
    if source:
        given = [
            name
            for name, value in (
                ("--op", ops),
                ("--backend", backend_names),
                ("--versions", versions),
                ("--size", size),
                ("--sizes", sizes),
                ("--mode", modes),
                ("--device", device if device != "cpu" else None),
                ("--precision", precision if precision != "default" else None),
            )
            if value
        ]
        if given:
            raise KbtoolError(
                "--from renders an earlier bench as it was measured; {} cannot apply".format("/".join(given))
            )
        data = bench_report.load(source)
        if base is not None:
            data["comparison"] = compare.compare(
                data, base, baseline, min_effect_pct=min_effect, fail_over_pct=fail_over
            )
        data["summary"]["ok"] = bench_report.is_ok(data)
        _show(data, outputs, as_json, quiet, verbose, _stderr_lines)
        return
    settings = Settings(
        sizes=chosen,
        modes=list(modes) or list(MODES),
        budget=budget,
        min_samples=min_samples,
        max_seconds=max_seconds,
        seed=seed,
        device=device,
        precision=precision,
    )
    spec = loader.load(spec_path)
    items, families, skipped = measure.plan_items(spec, list(ops), chosen, seed)
    pair = _releases(backend_names, versions, quiet) if versions else None  # the ops checked first: then installs
    if pair:
        backend_names = (pair[0].name, pair[1].name)
    slots = measure.backend_slots(backend_names, device, precision)
    runnable = [s for s in slots if s.launch is not None]
    if not runnable:
        raise KbtoolError(
            "nothing to bench: no backend can run here ({})".format(
                "; ".join(f"{s.name}: {s.unavailable}" for s in slots)
            )
        )
    say = _stderr_lines if not quiet else (lambda line: None)
    infos, results, incomplete, measured_peak = [], [], None, None
    lookup = {(i.family.op, i.size): (i.family, i.case) for i in items}
    from kbtool.bench.progress import BenchProgress
    from kbtool.runners.registry import not_installed_info

    stop = _Stop()
    previous = stop.install()
    try:  # the handlers are restored whatever happens (an in-process caller keeps its own)
        # said once the handlers are in: a signal from here on stops the bench with its partial results
        from kbtool.reports.text import plural  # here: `kbtool --help` imports nothing heavy

        say(
            "kbtool bench: {} × {} on {}; measuring this machine's peak first".format(
                plural(len(families), "op"), plural(len(chosen), "size"), ", ".join(s.name for s in runnable)
            )
        )
        watch = bench_load.Watch()
        busy = watch.busy_before()
        if busy:
            say(f"kbtool bench: warning: {busy}")
        try:
            measured_peak = peak.measure()
            with BenchProgress(runnable, items, settings, enabled=not quiet, in_turns=bool(pair)) as progress:
                for slot in slots:
                    if slot.launch is None:
                        infos.append(not_installed_info(slot.name, slot.unavailable, slot.status))
                    elif not pair:
                        measure.measure_backend(
                            slot, items, settings, infos, results, progress=progress, cancel=stop.cancel
                        )
                if pair:  # the two releases in turns, each result on both back to back
                    measure.measure_in_turns(
                        runnable, items, settings, infos, results, progress=progress, cancel=stop.cancel
                    )
        except (KeyboardInterrupt, Terminated) as exc:  # the workers are killed (the handler); keep the rest
            name = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
            stop.stopping(name)
            incomplete = {
                "signal": name,
                "note": "interrupted by {} {}: {} results measured before it".format(
                    name, "while measuring this machine's peak" if measured_peak is None else "", len(results)
                ).replace("  ", " "),
            }
            infos = _after_interrupt(slots, infos, bench_report.NOT_RUN)
            say(f"kbtool: {name}: stopping; the partial bench follows")
        if results and not incomplete:
            say("kbtool bench: measuring this machine's peak again")
            try:
                measured_peak = peak.combine(measured_peak, peak.measure())
            except (KeyboardInterrupt, Terminated) as exc:  # the first measurement stands
                name = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
                stop.stopping(name)
                incomplete = {
                    "signal": name,
                    "note": f"interrupted by {name} while measuring this machine's peak again",
                }
        stop.stopping(incomplete["signal"] if incomplete else "done")  # from here a signal no longer interrupts
        scaling = measure.finish(results, lookup, measured_peak)
        comparison = None
        if pair:
            comparison = compare.between(
                {"results": results, "settings": settings.as_dict(list(families)), "backends": infos},
                pair[0].name,
                pair[1].name,
                min_effect_pct=min_effect,
                fail_over_pct=fail_over,
            )
        elif base is not None:
            comparison = compare.compare(
                {"results": results, "settings": settings.as_dict(list(families)), "backends": infos},
                base,
                baseline,
                min_effect_pct=min_effect,
                fail_over_pct=fail_over,
            )
        notes = [n for n in [measure.skipped_note(skipped), pair and _pair_note(pair, versions, seed, chosen)] if n]
        machine = measure.machine()
        machine["load"] = watch.record()
        data = bench_report.assemble(
            bench_report.BenchRun(
                " ".join(["kbtool"] + sys.argv[1:]),
                machine,
                measured_peak,
                settings.as_dict(list(families)),
                families,
                infos,
                results,
                scaling,
                time.time() - started,
                comparison=comparison,
                incomplete=incomplete,
                notes=notes,
            )
        )
        _show(data, outputs, as_json, quiet, verbose, say, interrupted=incomplete and incomplete["signal"])
    finally:
        stop.restore(previous)


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


def _after_interrupt(slots, infos, not_run):
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
        for s in slots
        if s.name not in done
    ]


class Terminated(BaseException):
    """SIGTERM during a bench (handled as Ctrl-C is: the partial bench is written). A BaseException, as
    KeyboardInterrupt is: no `except Exception` on the way (a view, a library) may swallow it."""


class _Stop:
    """SIGINT and SIGTERM during a bench. The first kills the workers at once (a hung one included) and raises
    (KeyboardInterrupt or Terminated) so the partial bench is written; a second, while that is written (a moment:
    no worker is left to wait for), kills any worker again and lets the writing finish; a third exits at once.
    Once the measurements are over, a signal no longer interrupts: the first lets the bench be written."""

    CODES: Dict[int, int] = {signal.SIGINT.value: 130, signal.SIGTERM.value: 143}

    def __init__(self) -> None:
        from kbtool.runners.session import Cancel

        self.signal: Optional[str] = None
        self.again = 0
        self.cancel = Cancel()  # the backend session's: setting it kills the worker at once

    def install(self) -> Dict[int, Any]:
        if not _main_thread():
            return {}
        return {signum: signal.signal(signum, self._handle) for signum in self.CODES}

    def restore(self, previous: Dict[int, Any]) -> None:
        from kbtool import interrupts

        interrupts.restore(previous, self.signal in ("SIGINT", "SIGTERM") or self.again > 0)

    def stopping(self, name: str) -> None:
        self.signal = name

    def _handle(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        first = self.signal is None
        if first:  # said before anything else: a signal arriving inside this handler is then a second one
            self.signal = name
        self.cancel.set(name)
        if first:
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        self.again += 1
        if self.again >= 2:
            click.echo(f"kbtool: {name} again: exiting at once", err=True)
            raise SystemExit(self.CODES[signum])
        click.echo(f"kbtool: {name}: the bench is being written (once more exits at once)", err=True)


def _main_thread():
    import threading

    return threading.current_thread() is threading.main_thread()


def _show(data, outputs, as_json, quiet, verbose, say, interrupted=None):
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
