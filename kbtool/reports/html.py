"""HTML: one self-contained page rendered with a Jinja2 template (autoescaped)."""
import jinja2

from .matrix import SYMBOLS, build, problems


def render(report):
    env = jinja2.Environment(loader=jinja2.PackageLoader("kbtool.reports", "templates"),
                             autoescape=jinja2.select_autoescape(["html", "j2"]))
    backends, rows = build(report)
    return env.get_template("report.html.j2").render(report=report, backends=backends, rows=rows,
                                                     symbols=SYMBOLS, issues=problems(report))
