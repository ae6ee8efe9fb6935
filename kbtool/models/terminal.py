"""The terminal view of a models report: the model × engine matrix at the console's width (80 columns and up),
engines as short column codes with a legend, cells pass/known/FAIL/unsup/err; below it each unexplained finding as
`model on engine: layer L -> K.fn(...)`; then the verdict line. Where the engines do not fit one matrix, it is
printed in blocks of engines, each at most the console's width."""

from typing import Dict, List, Optional, Sequence

from rich.console import Console
from rich.text import Text

from kbtool.models import report as models_report
from kbtool.reports.console import say
from kbtool.reports.text import plain, plural

Record = models_report.Record

# the built-in engines' column codes (a custom module or a release gets e1, e2, ... in report order)
CODES = {
    "numpy": "ref",
    "tensorflow": "tf",
    "tensorflow1": "tf1",
    "theano": "th",
    "cntk": "cntk",
    "mxnet": "mx",
    "plaidml": "pml",
    "keras3": "k3",
    "keras-numpy": "knp",
    "keras3-jax": "jax",
    "keras3-torch": "trch",
    "keras3-tensorflow": "k3tf",
    "keras3-numpy": "k3np",
    "keras3-openvino": "ov",
}
CELLS = {
    "pass": "pass",
    "known": "known",
    "unexplained": "FAIL",
    "unsupported": "unsup",
    "error": "err",
    "not_compared": "n/c",
}
STYLES = {"pass": "green", "known": "yellow", "unexplained": "bold red", "unsupported": "dim", "error": "red"}
CELL_WIDTH = max(len(c) for c in CELLS.values())
NAME_WIDTH = 20  # a model's name is cut (with …) past this
NO_RESULT = "·"  # an engine that has no result for the model (it did not run it)
ORACLE = "ref"  # the oracle's own column: what the others are compared with


def codes(engines: Sequence[str]) -> Dict[str, str]:
    """engine -> its column code: the built-in's, else e1, e2, ... (never two the same)."""
    out: Dict[str, str] = {}
    extra = 0
    for name in engines:
        code = CODES.get(name)
        if code is None or code in out.values():
            extra += 1
            code = f"e{extra}"
        out[name] = code
    return out


def render(report: Record, console: Optional[Console] = None, verbosity: int = 1) -> str:
    """Print the report on `console` (stdout by default); returns "" (the text is printed)."""
    console = console or Console(highlight=False)
    if verbosity > 0:
        _header(report, console)
        _matrix(report, console)
        _engines(report, console, verbosity)
        _findings(report, console, verbosity)
        _releases(report, console)
    _stale(report, console)
    _verdict(report, console)
    return ""


def _header(report: Record, console: Console) -> None:
    s = report["settings"]
    oracle = report.get("oracle")
    parts = [
        plural(len(report["models"]), "model"),
        plural(len(report["engines"]), "engine"),
        f"seed {s['seed']}",
        "forward and a training step" if s.get("train") else "forward only",
        f"oracle {oracle} (the reference)" if oracle else "oracle: majority of engines",
    ]
    say(console, Text("kbtool models: " + " · ".join(parts)), overflow="fold")


def _blocks(names: List[str], width: int, name_width: int) -> List[List[str]]:
    """The engines in blocks that fit `width` beside the model column (at least one engine per block)."""
    per = max(1, (width - name_width) // (CELL_WIDTH + 1))
    return [names[i : i + per] for i in range(0, len(names), per)] or [[]]


def _matrix(report: Record, console: Console) -> None:
    engines = models_report.engine_names(report)
    models = models_report.model_names(report)
    if not models or not engines:
        return
    code = codes(engines)
    cells = models_report.cell_of(report)
    name_width = min(NAME_WIDTH, max(len(m) for m in models + ["model"])) + 1
    for block in _blocks(engines, console.width, name_width):
        head = Text("model".ljust(name_width), style="bold")
        for engine in block:
            head.append(code[engine].rjust(CELL_WIDTH) + " ", style="bold")
        say(console, head, no_wrap=True, overflow="ellipsis")
        for model in models:
            shown = model if len(model) < name_width else model[: name_width - 2] + "…"
            line = Text(shown.ljust(name_width))
            for engine in block:
                record = cells.get((model, engine))
                verdict = record["verdict"] if record else None
                word = CELLS.get(verdict or "", ORACLE if engine == report.get("oracle") else NO_RESULT)
                line.append(word.rjust(CELL_WIDTH) + " ", style=STYLES.get(verdict or "", "dim"))
            say(console, line, no_wrap=True, overflow="ellipsis")
    legend = [f"{code[e]}={e}" for e in engines]
    say(console, Text("engines: " + ", ".join(legend), style="dim"), overflow="fold")
    say(
        console,
        Text(
            "cells: pass, known (a known difference explains it), FAIL (unexplained), unsup (the engine cannot "
            f"run it), err (it raised, crashed or timed out), n/c (no oracle to compare with), {ORACLE} the reference itself, "
            f"{NO_RESULT} no result",
            style="dim",
        ),
        overflow="fold",
    )


def _engines(report: Record, console: Console, verbosity: int) -> None:
    """Engines that ran nothing, with why; with -v every engine's versions and seconds."""
    for engine in report["engines"]:
        if engine["status"] != models_report.RAN:
            say(
                console,
                Text(f"{engine['name']}: {engine['status']}: {plain(engine.get('reason', ''))}"),
                overflow="fold",
            )
        elif verbosity >= 2:
            versions = ", ".join(f"{k} {v}" for k, v in (engine.get("versions") or {}).items())
            seconds = engine.get("seconds")
            took = f" · {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""
            say(console, Text(f"{engine['name']}: {versions}{took}"), overflow="fold")


def _findings(report: Record, console: Console, verbosity: int) -> None:
    found = models_report.findings(report)
    if not found:
        return
    say(console, Text(f"Unexplained ({len(found)}):", style="bold red"))
    for record in found:
        say(console, Text("  " + plain(models_report.finding_text(record))), overflow="fold")
        if verbosity >= 2 and record.get("forward"):
            f = record["forward"]
            say(
                console,
                Text(
                    f"    forward: max abs {f['max_abs']}, max rel {f['max_rel']}, MAD {f['mad']} (threshold {f['threshold']})"
                ),
                overflow="fold",
            )
    if verbosity < 2:
        known = [r for r in report["results"] if r["verdict"] == "known"]
        if known:
            say(
                console,
                Text(f"{plural(len(known), 'result')} explained by known differences (-v lists them)", style="dim"),
            )
    else:
        for record in models_report.findings(report, ("known",)):
            say(console, Text("  known: " + plain(models_report.finding_text(record))), overflow="fold")


def _number(value: object) -> str:
    """A difference as the views print one: 3 significant digits (a string such as "Infinity" as it is)."""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _releases(report: Record, console: Console) -> None:
    for change in report.get("releases") or []:
        say(
            console,
            Text(f"{change['model']}: changed from {change['from']} to {change['to']}: {plain(change['what'])}"),
            overflow="fold",
        )


def _stale(report: Record, console: Console) -> None:
    for entry in report.get("stale_known") or []:
        head = f"stale: specs/known_models.yaml entry {entry['number']} ({entry['id']}) explains no finding of this run"
        say(console, Text(f"{head}: {plain(entry['reason'])}", style="red"), overflow="fold")


def _verdict(report: Record, console: Console) -> None:
    summary = models_report.summarize(report)
    counts = summary["counts"]
    words = ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in counts.items() if n)
    why = models_report.reasons(report)
    if summary["ok"]:
        say(console, Text(f"ok: {words}", style="bold green"), overflow="fold")
    else:
        say(console, Text(f"not ok: {'; '.join(why)} ({words or 'no result'})", style="bold red"), overflow="fold")
