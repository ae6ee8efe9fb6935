"""HTML of a models report: one self-contained page in the scoreboard's style (the parity scoreboard's CSS,
kbtool/reports/templates/report.css.j2, inlined as is), beside it in reports/: the verdict, the model × engine
matrix, the unexplained and the known findings (layer, K.* call, known entry or spec case), the engines and the
changes between releases. No script: the page is small. Every text goes through text.plain (autoescaped)."""

from typing import Any, Optional

import jinja2
import markupsafe

from kbtool.models import report as models_report
from kbtool.models.terminal import CELLS
from kbtool.reports.text import plain, plural

Record = models_report.Record
# a verdict's chip in the scoreboard's colours (its status classes)
SYMBOL_CLASSES = {
    "pass": "pass",
    "known": "known",
    "unexplained": "fail",
    "unsupported": "unsupported",
    "error": "error",
    "not_compared": "unsupported",
}
SCOREBOARD = "parity.html"  # the parity scoreboard, beside this page in reports/


def _finalize(value: Any) -> Any:
    return plain(value) if isinstance(value, str) and not isinstance(value, markupsafe.Markup) else value


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader(
            [jinja2.PackageLoader("kbtool.models", "templates"), jinja2.PackageLoader("kbtool.reports", "templates")]
        ),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        finalize=_finalize,
    )


def _title(record: Record) -> str:
    forward = record.get("forward")
    parts = [models_report.finding_text(record)]
    if forward:
        parts.append(f"forward max abs {forward['max_abs']}, MAD {forward['mad']}")
    return " · ".join(parts)


def render(report: Record, scoreboard: Optional[str] = SCOREBOARD) -> str:
    """The page; `scoreboard`: the parity scoreboard's address relative to it (None: no link)."""
    env = _environment()
    assert env.loader is not None
    css = markupsafe.Markup(env.loader.get_source(env, "report.css.j2")[0])
    cells = models_report.cell_of(report)
    names = models_report.model_names(report)
    about = {m["name"]: m for m in report["models"]}
    return env.get_template("models.html.j2").render(
        report=report,
        summary=models_report.summarize(report),
        reasons=models_report.reasons(report),
        engines=models_report.engine_names(report),
        models=[about.get(name, {"name": name}) for name in names],
        cell=lambda model, engine: cells.get((model, engine)),
        cells=CELLS,
        sym=SYMBOL_CLASSES,
        title=_title,
        unexplained=models_report.findings(report),
        known=models_report.findings(report, ("known",)),
        plural=plural,
        why=models_report.why_text,
        call_of=models_report.call_of,
        css=css,
        scoreboard=scoreboard,
    )
