"""Views of the JSON report: one renderer module per format, each rendering the report dict.

    json_report.py  the report itself          terminal.py  a rich matrix and the problems
    markdown.py     for PR comments, reports/  html.py      one self-contained page
    junit.py        for CI dashboards          matrix.py    the op × backend matrix they share
"""
import importlib
import os

from .. import files
from ..errors import KbtoolError

FORMATS = ("json", "terminal", "markdown", "html", "junit")
EXTENSIONS = {".json": "json", ".md": "markdown", ".html": "html", ".xml": "junit"}


def render(report, fmt):
    if fmt not in FORMATS:
        raise ValueError(fmt)
    return importlib.import_module("kbtool.reports." + ("json_report" if fmt == "json" else fmt)).render(report)


def format_of(path):
    fmt = EXTENSIONS.get(os.path.splitext(path)[1])
    if fmt is None:
        raise KbtoolError("cannot tell the format of {!r}: use one of {}".format(path, ", ".join(EXTENSIONS)))
    return fmt


def prepare_outputs(paths):
    """Check report paths before a run (made and tested now, so a long run never ends in an unwritable report)."""
    for path in paths:
        format_of(path)
        if os.path.isdir(path):
            raise KbtoolError("{} is a directory".format(path))
        folder = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise KbtoolError("cannot create {} for {}: {}".format(folder, path, exc.strerror))
        if not os.access(folder, os.W_OK):
            raise KbtoolError("cannot write {}: {} is not writable".format(path, folder))


def write(report, path):
    """Render `report` in the format of `path`'s extension and write it atomically."""
    text = render(report, format_of(path))
    try:
        files.write_atomic(path, text)
    except OSError as exc:
        raise KbtoolError("cannot write {}: {}".format(path, exc.strerror or exc))
