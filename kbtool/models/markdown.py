"""Markdown of a models report, for PR comments and reports/: the verdict, the model × engine matrix (engines by
column code, with a legend), the unexplained findings (model, engine, layer, K.* call), the known ones, the engines
with their versions and seconds, and the changes between releases. Every text goes through text.markdown."""

from typing import List

from kbtool.models import report as models_report
from kbtool.models.terminal import CELLS, ORACLE, codes
from kbtool.reports.text import markdown as _escape
from kbtool.reports.text import plain, plural

Record = models_report.Record


def _table(header: List[str], rows: List[List[str]]) -> List[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows] + [""]


def _code(text: object) -> str:
    text = plain(text).replace("\n", " ").replace("`", "'").replace("|", "\\|")
    return f"`{text}`" if text.strip() else ""


def render(report: Record) -> str:
    lines = ["# kbtool models", ""] + _verdict(report) + _matrix(report) + _findings(report)
    lines += _engines(report) + _releases(report)
    return "\n".join(lines).rstrip("\n") + "\n"


def _verdict(report: Record) -> List[str]:
    summary = models_report.summarize(report)
    why = models_report.reasons(report)
    counts = ", ".join(f"{n} {v.replace('_', ' ')}" for v, n in summary["counts"].items() if n) or "no result"
    verdict = (
        f"**OK**: {_escape(counts)}" if summary["ok"] else f"**Not OK: {_escape('; '.join(why))}** ({_escape(counts)})"
    )
    s = report["settings"]
    facts = [
        plural(len(report["models"]), "model"),
        plural(len(report["engines"]), "engine"),
        f"seed {s['seed']}",
        "forward and a training step" if s.get("train") else "forward only",
        f"oracle: {report['oracle']} (the reference)" if report.get("oracle") else "oracle: majority of engines",
        "{:.1f} s wall".format(report["wall_seconds"]),
        f"created {report['created']}",
        f"kbtool {report['kbtool']}",
    ]
    lines = [verdict, "", _escape(" · ".join(facts)), ""]
    if report.get("incomplete"):
        lines[:0] = [f"**Incomplete: {_escape(report['incomplete']['note'])}**", ""]
    if report.get("cases"):
        lines += [f"Spec cases written: {report['cases']['written']} to {_code(report['cases']['path'])}", ""]
    return lines


def _matrix(report: Record) -> List[str]:
    engines = models_report.engine_names(report)
    models = models_report.model_names(report)
    if not engines or not models:
        return []
    code = codes(engines)
    cells = models_report.cell_of(report)
    rows = []
    for model in models:
        row = [_escape(model)]
        for engine in engines:
            record = cells.get((model, engine))
            word = CELLS[record["verdict"]] if record else (ORACLE if engine == report.get("oracle") else "")
            row.append(f"**{word}**" if word == "FAIL" else word)
        rows.append(row)
    legend = ", ".join(f"{code[e]} = {_escape(e)}" for e in engines)
    return (
        ["## Model × engine", ""] + _table(["model"] + [code[e] for e in engines], rows) + [f"Engines: {legend}.", ""]
    )


def _finding_rows(records: List[Record]) -> List[List[str]]:
    rows = []
    for r in records:
        where = r.get("localisation") or {}
        forward = r.get("forward") or {}
        rows.append(
            [
                _escape(r["model"]),
                _escape(r["engine"]),
                _escape(r["verdict"]),
                _escape(f"{where['layer']} ({where.get('layer_class', '?')})") if where else "",
                _code(models_report.call_of(r)),
                _escape(models_report.why_text(r)),
                _escape(forward.get("max_abs", "")),
                _escape(forward.get("mad", "")),
            ]
        )
    return rows


HEADER = ["model", "engine", "verdict", "layer", "K.* call", "known / case / why", "max abs", "MAD"]


def _findings(report: Record) -> List[str]:
    found = models_report.findings(report)
    lines = [f"## Unexplained ({len(found)})", ""]
    lines += _table(HEADER, _finding_rows(found)) if found else ["None: every model is explained on every engine.", ""]
    known = models_report.findings(report, ("known",))
    if known:
        lines += [f"## Known ({len(known)})", ""] + _table(HEADER, _finding_rows(known))
    stale = report.get("stale_known") or []
    if stale:
        rows = [[str(e["number"]), _escape(e["id"]), _escape(e["reason"])] for e in stale]
        lines += [f"## Stale known entries ({len(stale)}): they explain no finding of this run", ""]
        lines += _table(["entry", "id", "reason"], rows)
    return lines


def _engines(report: Record) -> List[str]:
    rows = []
    for e in report["engines"]:
        versions = ", ".join(f"{k} {v}" for k, v in (e.get("versions") or {}).items())
        seconds = e.get("seconds")
        rows.append(
            [
                _escape(e["name"]) + (" (oracle)" if e.get("oracle") else ""),
                _escape(e["status"]),
                _escape(versions or e.get("reason", "")),
                str(e.get("models", "")),
                f"{seconds:.1f}" if isinstance(seconds, (int, float)) else "",
            ]
        )
    return ["## Engines", ""] + _table(["engine", "status", "versions / why not", "models", "seconds"], rows)


def _releases(report: Record) -> List[str]:
    changes = report.get("releases") or []
    if not changes:
        return []
    rows = [[_escape(c["model"]), _escape(c["from"]), _escape(c["to"]), _escape(c["what"])] for c in changes]
    return ["## Changes between releases", ""] + _table(["model", "from", "to", "what changed"], rows)
