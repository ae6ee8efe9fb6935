"""Terminal: a rich parity matrix, the problems with their numbers, and the verdict.

Text from backends is shown as text: no ANSI escape or control character reaches the terminal (text.plain) and
no rich markup is interpreted (escape).
"""
from rich import box
from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.table import Table

from ..known import grown
from ..results import BackendStatus, Status
from .matrix import SYMBOLS, build, doc_claims, problems
from .text import plain


def escape(text):
    return _markup_escape(plain(text))


def _names(value):
    """An entry's op or backend field: a glob or a list of them."""
    return ", ".join(value) if isinstance(value, list) else str(value)

STYLES = {str(k): v for k, v in {
    Status.PASS: "green", "known": "yellow", Status.FAIL: "red", Status.ERROR: "red", Status.CRASH: "bold red",
    Status.TIMEOUT: "magenta", Status.UNSUPPORTED: "dim", Status.COULD_NOT_START: "bold red"}.items()}


def render(report, console=None):
    console = console or Console()
    backends, rows = build(report)
    table = Table(title="kbtool parity (seed {})".format(report["seed"]), box=box.SIMPLE_HEAVY)
    table.add_column("op", style="bold")
    info = {b["name"]: b for b in report["backends"]}
    for name in backends:
        versions = info[name].get("versions", {})
        label = name if info[name]["status"] == BackendStatus.AVAILABLE.value else "{} ({})".format(name, info[name]["status"])
        table.add_column(escape(label + "\n" + " ".join("{}".format(v) for v in list(versions.values())[:1])),
                         justify="center")
    for row in rows:
        cells = []
        for name in backends:
            cell = row["cells"][name]
            if cell["status"] is None:
                cells.append("")
                continue
            cells.append("[{}]{} {}/{}[/]".format(STYLES[cell["status"]], SYMBOLS[cell["status"]],
                                                  cell["passed"], cell["total"]))
        table.add_row(escape(row["op"]), *cells)
    console.print(table)
    for b in report["backends"]:
        if b["status"] != BackendStatus.AVAILABLE.value:
            console.print("[yellow]{}[/]: {} — {}".format(escape(b["name"]), b["status"], escape(b.get("reason", ""))),
                          highlight=False)
    issues = [r for r in problems(report) if not r.get("known")]
    if issues:
        console.print("[bold]Divergences[/] ({} results):".format(len(issues)))
        for r in issues[:60]:
            console.print("  [{}]{}[/] {} {} on {} ({}): {}".format(
                STYLES[r["status"]], r["status"], escape(r["op"]), escape(r["case"]), escape(r["backend"]), r["mode"],
                escape(r["message"][:400])),
                highlight=False, soft_wrap=True)
            console.print("      reproduce: {}".format(escape(r["repro"])), highlight=False, soft_wrap=True)
        if len(issues) > 60:
            console.print("  ... {} more in the JSON report".format(len(issues) - 60))
    known = {}
    for r in problems(report):
        if r.get("known"):
            known.setdefault((r["op"], r["backend"], r["known"]), []).append(r)
    if known:
        console.print("[bold]Known differences[/] ({} results, re-checked this run):".format(
            sum(len(v) for v in known.values())))
        for (op, backend, reason), records in known.items():
            console.print("  [yellow]≈[/] {} on {} ({} results): {}".format(escape(op), escape(backend), len(records),
                                                                           escape(reason)),
                          highlight=False, soft_wrap=True)
    for row in grown(report.get("known_differences", [])):
        console.print("[yellow]known difference grew[/]: entry {} ({} on {}) explained {} results, {} recorded (+{}): "
                      "{}".format(row["entry"], escape(_names(row["op"])), escape(_names(row["backend"])),
                                  row["explained"], row["count"], row["grown_by"], escape(row["reason"])),
                      highlight=False, soft_wrap=True)
    claims = doc_claims(report)
    if claims:
        console.print("[bold]Documentation examples[/] (what each doc version shows vs what ran):")
        for c in claims:
            if not c["fails"] and not c["holds"]:
                verdict = "[dim]text (a repr or random draw): shown, not judged[/]"
            elif not c["fails"]:
                verdict = "[green]holds on {}[/]".format(", ".join(c["holds"]))
            elif not c["holds"]:
                verdict = "[red]wrong on every backend run ({})[/]".format(", ".join(c["fails"]))
            else:
                verdict = "[yellow]holds on {} only; not on {}[/]".format(", ".join(c["holds"]), ", ".join(c["fails"]))
            console.print("  {} {} \\[{}] shows {}: {}".format(escape(c["op"]), escape(c["case"]), escape(", ".join(c["docs"])),
                                                             escape(c["shown"]), verdict),
                          highlight=False, soft_wrap=True)
    for entry in report["stale_known_differences"]:
        console.print("[red]stale known difference[/]: {} {} on {}: {} ({})".format(
            escape(entry["op"]), escape(str(entry.get("case", "*"))), escape(entry["backend"]), escape(entry["reason"]),
            escape(entry["note"])),
            highlight=False)
    summary = report["summary"]
    n_known = sum(c["known"] for c in summary["per_backend"].values())
    if summary["ok"]:
        verdict = "[green]all pass[/]" if not n_known else "[green]no unexplained divergence[/] ({} known)".format(n_known)
    else:
        reasons = ["{} divergence(s)".format(summary["divergences"]), "{} stale known difference(s)".format(summary["stale"])]
        if summary.get("could_not_start"):
            reasons.append("could not start: {}".format(", ".join(summary["could_not_start"])))
        if not report["results"]:
            reasons.append("nothing was checked")
        if report.get("incomplete"):
            reasons.insert(0, "incomplete ({})".format(report["incomplete"]["note"]))
        verdict = "[red]{}[/]".format(escape(", ".join(reasons)))
    n_grown = len(grown(report.get("known_differences", [])))
    if n_grown:  # reported for review; it does not change the exit code
        verdict += "; [yellow]{} known difference(s) grew[/]".format(n_grown)
    console.print("{} results in {:.1f} s: {}".format(len(report["results"]), report["wall_seconds"], verdict))
    return ""
