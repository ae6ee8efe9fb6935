"""Keeping what the reference prints or warns out of the terminal, and in the record.

The NumPy reference runs in kbtool's own process (reference/oracle.py): `log(0)` warns, `print_tensor` prints.
`Captured` collects its stdout, stderr and Python warnings (each warning, not once per place as Python's default
filter does) while it computes a case; the text goes into that case's results (`captured.reference`). Worker
processes are captured by their client (runners/client.py) at the file-descriptor level.

Python's stdout, stderr and warning filters are process-wide: callers serialise their use (the oracle computes
under its lock), and whatever writes to the terminal meanwhile from another thread binds its stream beforehand
(reports/progress.py does).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Literal

LIMIT = 4000  # characters of captured text kept per side of a result


def cut(text: str, limit: int = LIMIT) -> str:
    """At most `limit` characters: the beginning, and how much more there was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


class Captured:
    """`with Captured() as out: ...` then `out.text`: what was printed on sys.stdout/sys.stderr and warned."""

    def __init__(self) -> None:
        self.text = ""

    def __enter__(self) -> Captured:
        self._buffer = io.StringIO()
        self._stack = contextlib.ExitStack()
        self._warnings = self._stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always")
        self._stack.enter_context(contextlib.redirect_stdout(self._buffer))
        self._stack.enter_context(contextlib.redirect_stderr(self._buffer))
        return self

    def __exit__(self, *exc_info: object) -> Literal[False]:
        self._stack.close()
        lines = [self._buffer.getvalue().rstrip("\n")] if self._buffer.getvalue().strip() else []
        for w in self._warnings:
            lines.append(f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}")
        self.text = cut("\n".join(lines))
        return False
