"""A models report in each format, told by a file's extension (.json, .md, .html, .xml) or by --format: one
renderer module per format (report.py's JSON, markdown.py, html.py, junit.py, terminal.py). The -o files are checked
before the run (a long run never ends in an unwritable file) and written after it, each failure costing only its
own file."""

import importlib
import os
from typing import Any, Callable, Iterable, List, Optional

from kbtool.errors import KbtoolError
from kbtool.models import report as models_report
from kbtool.reports import check_writable
from kbtool.reports.report import write_atomic
from kbtool.reports.text import encodable

EXTENSIONS = {".json": "json", ".md": "markdown", ".html": "html", ".xml": "junit"}
FORMATS = ("terminal", "json", "markdown", "html", "junit")


def format_of(path: str) -> str:
    fmt = EXTENSIONS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise KbtoolError("cannot tell the format of {!r}: use one of {}".format(path, ", ".join(EXTENSIONS)))
    return fmt


def render(report: models_report.Record, fmt: str, **options: Any) -> str:
    """`report` in `fmt` (the terminal prints it and returns ""; its options: console, verbosity)."""
    if fmt == "json":
        return models_report.render_json(report)
    if fmt not in FORMATS:
        raise KbtoolError("unknown format {!r}: use one of {}".format(fmt, ", ".join(FORMATS)))
    module = importlib.import_module(f"kbtool.models.{fmt}")
    text: str = module.render(report, **options)
    return text


def prepare_outputs(paths: Iterable[str]) -> None:
    for path in paths:
        format_of(path)
        check_writable(path)


def write_all(
    report: models_report.Record, paths: Iterable[str], echo: Optional[Callable[[str], None]] = None
) -> List[str]:
    """Write every -o file atomically; returns the failures' messages."""
    failures: List[str] = []
    for path in paths:
        try:
            write_atomic(path, encodable(render(report, format_of(path))))
        except (KbtoolError, OSError, UnicodeError, ValueError) as exc:
            failures.append(str(exc) if isinstance(exc, KbtoolError) else f"cannot write {path}: {exc}")
            continue
        if echo:
            echo(f"wrote {path}")
    return failures
