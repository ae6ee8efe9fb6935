"""An entry's `match`: checked (it compiles in Python's `re`, which its authors read, and in the `regex` engine) and
searched with a time limit, within one `apply`'s budget for searches that time out.

The file may be hostile: a search that times out does not match, and the result says so in its note.
"""

import functools
import re
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

import regex

from kbtool.files import clip
from kbtool.known.globs import MAX_PATTERN_CHARS
from kbtool.results import Result

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.known.entry import KnownEntry

Number = Union[int, str]  # an entry's number in its file, or "spec alias" for the spec's own entries

REGEX_TIMEOUT = 1.0  # seconds one `match` search may take; past it the message does not match
# seconds the searches that time out may cost one `apply` together: once spent, every later search gets
# REGEX_LATE_TIMEOUT, so hostile entries (a report's, for `report merge`) cannot each spend REGEX_TIMEOUT. Only
# timed-out searches count: a plain one (the shipped file's take 0.02 s over the published run) never does, so a
# loaded machine never loses a legitimate match to the budget
REGEX_BUDGET = 5.0
REGEX_LATE_TIMEOUT = 0.01  # a search's limit once the budget is spent (a plain search takes microseconds)


def regex_problem(pattern: Any) -> Optional[str]:
    """Why `pattern` cannot be a `match` (None when it can): a string that compiles in Python's `re` (what the
    file's authors read) and in the `regex` engine that searches with a time limit."""
    if not isinstance(pattern, str):
        return "match must be a regex (a string)"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"match is longer than {MAX_PATTERN_CHARS} characters"
    for engine in (re, regex):
        try:
            engine.compile(pattern)
        except (engine.error, ValueError, OverflowError, RecursionError, MemoryError) as exc:
            return f"match is not a valid regex: {clip(exc)}"
    return None


def search(pattern: str, text: str, timeout: Optional[float] = None) -> Optional[bool]:
    """Whether `pattern` matches anywhere in `text`: True, False, or None when the search timed out."""
    try:
        limit = REGEX_TIMEOUT if timeout is None else timeout
        if limit <= 0:
            return None
        return _compiled(pattern).search(text, timeout=limit) is not None
    except TimeoutError:
        return None


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> Any:
    return regex.compile(pattern)  # regex.search() itself costs ~10x more per call than a compiled pattern's


class Searches:
    """The regex searches of one `apply`, within its time budget: only searches that time out spend it (5 s in
    all, then each later search gets REGEX_LATE_TIMEOUT), and each timeout is noted on its result at the end."""

    def __init__(self) -> None:
        self.spent = 0.0
        self.timeouts: List[Tuple[Result, Number, str]] = []
        self.timed_out: Dict[Number, Tuple[Result, str]] = {}

    def judge(self, entry: "KnownEntry", result: Result) -> Optional[bool]:
        """The entry's status and match condition on `result` (KnownEntry.judge) under the budget's limit; None
        when the search timed out (the caller then searches no more of the entry's messages)."""
        limit = REGEX_TIMEOUT if self.spent < REGEX_BUDGET else REGEX_LATE_TIMEOUT
        verdict = entry.judge(result, limit)
        if verdict is None:
            self.spent += limit
            self.timed_out[entry.number] = (result, _after(limit))
            self.timeouts.append((result, entry.number, _after(limit)))
        return verdict

    def unsearched(self, entry: "KnownEntry", targeted: List[Result]) -> str:
        if entry.number not in self.timed_out:
            return ""
        result, after = self.timed_out[entry.number]
        return (
            f"; its match regex timed out after {after}, so {len(targeted) - targeted.index(result)} were not searched"
        )

    def note_timeouts(self) -> None:
        for result, entry_number, after in self.timeouts:
            note = (
                f"known-difference entry {entry_number}: its match regex timed out after {after} on this "
                "message (taken as no match; later messages not searched)"
            )
            result.note = note if not result.note else f"{result.note}; {note}"


def _after(limit: float) -> str:
    """How long a search that timed out had: REGEX_TIMEOUT, or REGEX_LATE_TIMEOUT once the run's searches had lost
    REGEX_BUDGET to timeouts."""
    if limit >= REGEX_TIMEOUT:
        return f"{REGEX_TIMEOUT:g} s"
    return f"{limit:g} s, when timed-out searches had already cost the run {REGEX_BUDGET:g} s"
