"""Writing on a rich console, as every terminal view does (check's, bench's).

Text from a report is shown as text (no markup applied, no escape sequence); the status and band colours; lines
wrapped between words, between items, or between a command's arguments (a repro still pastes)."""

import re
from typing import Any, List, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape as _markup_escape
from rich.text import Text

from kbtool.reports.text import cell, plain
from kbtool.results import Status


def escape(text: Any) -> str:
    """A table cell: no markup, no control character, one line."""
    return _markup_escape(cell(text))


def entry_names(value: Any) -> str:
    """An entry's op or backend field: a glob or a list of them."""
    return ", ".join(value) if isinstance(value, list) else str(value)


STYLES = {
    str(k): v
    for k, v in {
        Status.PASS: "green",
        "known": "yellow",
        Status.FAIL: "red",
        Status.ERROR: "red",
        Status.NOT_REACHED: "bold red",
        Status.CRASH: "bold red",
        Status.TIMEOUT: "magenta",
        Status.UNSUPPORTED: "dim",
        Status.COULD_NOT_START: "bold red",
        Status.CHANGED: "bold magenta",
        Status.NONDETERMINISTIC: "bold yellow",
    }.items()
}


# a matrix cell's passed/total (and a backend's pass as is) shaded by its pass-as-is band (summary.pass_band)
BAND_STYLES = {"all": "bold green", "most": "green", "half": "yellow", "few": "red", "none": "bold white on red"}


def say(console: Console, text: Any, **options: Any) -> None:
    """Print a line, wrapped between words at the console's width."""
    console.print(text, highlight=False, **options)


def say_items(console: Console, first: str, items: Sequence[str], sep: str = ", ", indent: str = "  ") -> None:
    """`first` and the items joined by `sep`, wrapped between items (an item is never split unless it alone is
    wider than the console); lines after the first are indented. Plain text."""
    for line in pack(first, items, console.width, sep, indent):
        say(console, Text(line), overflow="fold")


def pack(first: str, items: Sequence[str], width: int, sep: str, indent: str, tail: str = "") -> List[str]:
    """The lines of `say_items`: `first` (ending with a space, or empty) then the items; `tail` ends each line but the
    last (a shell continuation)."""
    lines: List[str] = []
    line, fresh = first, True  # fresh: the line holds no item yet (an item too wide goes on a line of its own)
    for i, item in enumerate(items):
        last = i == len(items) - 1
        piece = item + ("" if last else sep.rstrip())
        gap = "" if fresh else " "
        fits = cell_len(line + gap + piece) + (0 if last else cell_len(tail)) <= width
        if fresh and not fits and line.strip():  # after a label, an item too wide starts the next line
            lines.append(line.rstrip() + tail)
            line, gap = indent, ""
        if fresh or fits:
            line += gap + piece
        else:
            lines.append(line + tail)
            line = indent + piece
        fresh = False
    lines.append(line)
    return lines


SHELL_WORD = re.compile(r"""(?:[^\s'"]+|'[^']*'|"(?:\\.|[^"\\])*")+""")


def say_command(console: Console, command: str, indent: str) -> None:
    """A shell command (a repro) at `indent`, wrapped between its arguments with ` \\` continuations, so that what
    is pasted from the screen still runs."""
    tokens = SHELL_WORD.findall(plain(command).replace("\n", " "))
    if not tokens:
        return
    for line in pack(indent, tokens, console.width, " ", indent + "    ", tail=" \\"):
        say(console, Text(line), overflow="fold")
