"""Views of the JSON report: one renderer module per format, each rendering the report dict.

json_report.py  the report itself          terminal.py  a summary that fits a screen
markdown.py     for PR comments, reports/  html.py      one self-contained page
junit.py        for CI dashboards          matrix.py    the op × backend matrix they share
github.py       GitHub's step summary and PR comment (fits 65,536 characters)
summary_md.py   summary.md: the verdict, a row per backend, the first failures (a PR comment with room to spare)
annotations.py  GitHub workflow commands: an ::error per unexplained group, at its spec line

Beneath them: report.py owns the JSON document (its schema, reading, writing), verdict.py its summary and verdict,
assemble.py builds it from a check (a CheckRun); console.py is what the terminal views share (terminal.py and its
backend_table.py, and bench's).
"""

import importlib
import os
import tempfile
from typing import Any, Callable, Dict, Iterable, List, Optional

from kbtool.errors import KbtoolError
from kbtool.reports.report import clip, one_line, write_atomic
from kbtool.reports.text import encodable

FORMATS = ("json", "terminal", "markdown", "html", "junit", "github", "annotations", "summary")
EXTENSIONS = {".json": "json", ".md": "markdown", ".html": "html", ".xml": "junit"}
SUMMARY_NAME = "summary.md"  # -o summary.md, or NAME.summary.md: the summary view, not the whole Markdown report
MODULES = {"json": "json_report", "summary": "summary_md"}  # a format whose module is not named after it


def render(report: Dict[str, Any], fmt: str, **options: Any) -> str:
    """Render `report` in `fmt`. Options go to the renderer: the terminal's `verbosity` (0 -q, 1, 2 -v) and
    `console`; the file formats take none."""
    if fmt not in FORMATS:
        raise ValueError(fmt)
    module = importlib.import_module("kbtool.reports." + MODULES.get(fmt, fmt))
    text: str = module.render(report, **options)
    return text


def format_of(path: str) -> str:
    name = os.path.basename(path).lower()
    if name == SUMMARY_NAME or name.endswith("." + SUMMARY_NAME):
        return "summary"
    fmt = EXTENSIONS.get(os.path.splitext(path)[1])
    if fmt is None:
        raise KbtoolError("cannot tell the format of {!r}: use one of {}".format(path, ", ".join(EXTENSIONS)))
    return fmt


def prepare_outputs(paths: Iterable[str]) -> None:
    """Check report paths before a run (made and tested now, so a long run never ends in an unwritable report)."""
    for path in paths:
        format_of(path)
        check_writable(path)


def check_writable(path: str) -> None:
    """A report path kbtool can write (in a folder that exists: files.refuse_missing_folder), or a one-line
    KbtoolError."""
    from kbtool.files import refuse_missing_folder

    if os.path.isdir(path):
        raise KbtoolError(f"{path} is a directory")
    refuse_missing_folder(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.access(folder, os.W_OK):
        raise KbtoolError(f"cannot write {path}: {folder} is not writable")
    # os.access says yes to root for /proc and for a read-only mount: make (and remove) a file there
    try:
        fd, probe = tempfile.mkstemp(prefix=".kbtool-probe-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise KbtoolError(f"cannot write {path}: {exc.strerror or exc}")
    os.close(fd)
    os.unlink(probe)


def write(report: Dict[str, Any], path: str) -> None:
    """Render `report` in the format of `path`'s extension and write it atomically. The text is made encodable
    first (a backend's message may hold a lone surrogate, which UTF-8 cannot encode)."""
    text = encodable(render(report, format_of(path)))
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise KbtoolError(f"cannot write {path}: {exc.strerror or exc}")


def write_all(report: Dict[str, Any], paths: Iterable[str], echo: Optional[Callable[[str], None]] = None) -> List[str]:
    """Write `report` to every path, each failure costing only its own file. Returns the failures' messages."""
    failures: List[str] = []
    for path in paths:
        try:
            write(report, path)
        except (KbtoolError, OSError, UnicodeError, ValueError) as exc:
            failures.append(str(exc) if isinstance(exc, KbtoolError) else f"cannot write {path}: {exc}")
            continue
        except (RecursionError, MemoryError, TypeError, KeyError) as exc:  # one view's fault costs only its file
            failures.append(one_line(f"cannot render {path}: {type(exc).__name__}: {clip(exc, 120)}"))
            continue
        if echo:
            echo(f"wrote {path}")
    return failures
