"""HTML: one self-contained page rendered with a Jinja2 template (autoescaped; every text shown loses its ANSI
escapes and control characters first, as in the terminal)."""
import jinja2
import markupsafe

from ..known import grown
from .matrix import SYMBOLS, build, problems
from .text import plain


def _finalize(value):
    return plain(value) if isinstance(value, str) and not isinstance(value, markupsafe.Markup) else value


def render(report):
    env = jinja2.Environment(loader=jinja2.PackageLoader("kbtool.reports", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]), finalize=_finalize)
    backends, rows = build(report)
    return env.get_template("report.html.j2").render(report=report, backends=backends, rows=rows,
                                                     symbols=SYMBOLS, issues=problems(report),
                                                     grown=grown(report.get("known_differences", [])), names=_names)


def _names(value):
    """An entry's op or backend field: a glob or a list of them."""
    return ", ".join(value) if isinstance(value, list) else value
