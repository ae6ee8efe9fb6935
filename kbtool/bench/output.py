"""A bench written out in each format, told by a file's extension (report.py's JSON, markdown_view, html_view).

The -o files are checked before a bench (a long run never ends in an unwritable file) and written after it."""

import os
from typing import Any, Dict, Iterable, List

from kbtool.bench import html_view, markdown_view
from kbtool.bench.report import dumps
from kbtool.errors import KbtoolError
from kbtool.reports import check_writable
from kbtool.reports.report import write_atomic
from kbtool.reports.text import encodable

EXTENSIONS = {".json": "json", ".md": "markdown", ".html": "html"}


def format_of(path: str) -> str:
    fmt = EXTENSIONS.get(os.path.splitext(path)[1])
    if fmt is None:
        raise KbtoolError("cannot tell the format of {!r}: use one of {}".format(path, ", ".join(EXTENSIONS)))
    return fmt


def render(report: Dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return dumps(report)
    if fmt == "markdown":
        return markdown_view.render(report)
    if fmt == "html":
        return html_view.render(report)
    raise KbtoolError(f"unknown bench format {fmt!r}")


def prepare_outputs(paths: Iterable[str]) -> None:
    """Check the -o paths before a bench (a long run never ends in an unwritable file)."""
    for path in paths:
        format_of(path)
        check_writable(path)


def write_all(report: Dict[str, Any], paths: Iterable[str]) -> List[str]:
    """Write every -o file atomically; returns the failures' messages (each costs only its own file)."""
    failures: List[str] = []
    for path in paths:
        try:
            write_atomic(path, encodable(render(report, format_of(path))))
        except (KbtoolError, OSError, UnicodeError, ValueError) as exc:
            failures.append(str(exc) if isinstance(exc, KbtoolError) else f"cannot write {path}: {exc}")
    return failures
