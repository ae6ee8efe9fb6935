"""Text from backends made safe for each view.

A backend's messages, reasons and versions are data, not markup: they may hold ANSI escapes, control characters,
`<script>`, table pipes or a lone surrogate (a message decoded from JSON's "\\udcff"). Each view shows them as text:

    encodable(text)  any text: lone surrogates (which UTF-8 cannot encode) become "?"
    plain(text)      the terminal: no ANSI escape sequence and no control character
    cell(text)       a terminal table cell or name: plain, on one line (a line break is shown as ⏎)
    markdown(text)   a Markdown table cell: plain, on one line, with < > | and backticks escaped, and the brackets
                     that would make a link or an image ([x](url), [x][ref], ![x](url)); other brackets stay as
                     they are (a shape such as [2, 3] reads the same either way)
HTML is escaped by Jinja's autoescape, JUnit XML by junit._text.
"""

import re
from typing import Any, Optional

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), and the two-character escapes
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_MARKDOWN = {"<": "&lt;", ">": "&gt;", "|": "\\|", "`": "\\`"}
_LINK = re.compile(r"\](?=[(\[])|(?<=!)\[")  # the ] of [x](url) and [x][ref], the [ of ![x]


def encodable(text: Any) -> str:
    return str(text).encode("utf-8", "replace").decode("utf-8")


def plain(text: Any) -> str:
    text = _ANSI.sub("", encodable(text)).replace("\t", " ")
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def cell(text: Any) -> str:
    return plain(text).replace("\n", " ⏎ ")


def markdown(text: Any) -> str:
    text = plain(text).replace("\n", " ")
    text = "".join(_MARKDOWN.get(ch, ch) for ch in text)
    return _LINK.sub(lambda m: "\\" + m.group(0), text)


def plural(n: Any, word: str, many: Optional[str] = None) -> str:
    """`n word` with the word in the plural unless n is 1: plural(1, "result") is "1 result", plural(3, "op") is
    "3 ops", plural(2, "entry", "entries") "2 entries". A count that is not a number ("?") takes the plural."""
    return "{} {}".format(n, word if n == 1 else many or word + "s")


def megabytes(mb: Any) -> str:
    """A memory size measured in MB as the views show it: "n/a" when not measured (None, or 0: no sample was
    read), "<1 MB" below one MB, else whole MB."""
    if not isinstance(mb, (int, float)) or isinstance(mb, bool) or mb <= 0:
        return "n/a"
    return "<1 MB" if mb < 1 else f"{mb:.0f} MB"
