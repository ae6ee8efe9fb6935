"""`kbtool check --shard K/N`: a deterministic partition of a plan's (op, case) work into N balanced parts.

Every machine with the same checkout computes the same partition: the work is spread by the recorded time of each
case (specs/timings.json, {op: {case: seconds}}, the sum over backends and modes of a full run, written by
scripts/record-timings.py) with the greedy longest-processing-time rule and fixed tie-breaks, never by anything
that differs between machines (which backends are installed, the clock, hash seeds). A case the file does not
know (a new case, a --grid full row) counts the median recorded time. A backend's variants of a case (Theano's
`.kernel_flipped`) are made from the case inside execute.py, so they always run in the shard of their case.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, TypeVar

from kbtool import files, paths
from kbtool.errors import KbtoolError

if TYPE_CHECKING:
    from kbtool.specs.cases import Case

Timings = Dict[str, Dict[str, float]]  # {op: {case id: seconds}}, as specs/timings.json holds them

SPEC = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*\Z")
# a plan's (spec entry, case) pair: the shard keeps the pairs as they are (its own type, so that the plan, which
# imports this module, is not imported back)
Piece = TypeVar("Piece", bound=Tuple[Any, "Case"])
DEFAULT_SECONDS = 1.0  # each case's weight when no time is recorded at all (an empty or missing timings file)


def parse(text: Any) -> Tuple[int, int]:
    """'K/N' → (K, N) with 1 <= K <= N; a one-line KbtoolError otherwise."""
    match = SPEC.match(str(text))
    if not match:
        raise KbtoolError(f"--shard takes K/N, e.g. 2/4 (the 2nd of 4 parts), not {files.quote(text)}")
    index, count = int(match.group(1)), int(match.group(2))
    if not 1 <= index <= count:
        raise KbtoolError(f"--shard {index}/{count}: K must be between 1 and N")
    return index, count


def timings_file() -> str:
    """specs/timings.json beside the spec (kbtool/_specs/ in a wheel)."""
    return os.path.join(paths.specs_dir(), "timings.json")


def load_timings(path: Optional[str] = None) -> Timings:
    """{op: {case: seconds}} from the timings file; {} when there is none. A file that is not such a mapping is a
    one-line KbtoolError (a partition from a misread file would differ between machines silently)."""
    path = path or timings_file()
    text = files.read_text(path, missing_ok=True)
    if text is None:
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise KbtoolError(f"{path}: not JSON ({exc})")
    good = isinstance(data, dict) and all(
        isinstance(cases, dict)
        and all(isinstance(s, (int, float)) and not isinstance(s, bool) and s >= 0 for s in cases.values())
        for cases in data.values()
    )
    if not good:
        raise KbtoolError(
            f"{path}: expected {{op: {{case: seconds}}}} with seconds >= 0 (scripts/record-timings.py writes it)"
        )
    timings: Timings = data
    return timings


def estimates(keys: Sequence[Tuple[str, str]], timings: Timings) -> List[float]:
    """Estimated seconds of each (op, case id): the recorded time, else the median of every recorded time."""
    recorded = [float(s) for cases in timings.values() for s in cases.values()]
    fallback = statistics.median(recorded) if recorded else DEFAULT_SECONDS
    return [float(timings.get(op, {}).get(case, fallback)) for op, case in keys]


def partition(keys: Sequence[Tuple[str, str]], count: int, timings: Timings) -> List[List[int]]:
    """The indices of `keys` ((op, case id) pairs) in each of `count` parts, each part in the keys' order.

    Longest first, each onto the part with the least estimated time so far; ties go to the part with fewer cases,
    then the lower part number, and equal times keep the keys' order (op, then case id): so equal weights (no
    timings) still spread one by one, and the outcome depends only on the keys and the timings."""
    seconds = estimates(keys, timings)
    order = sorted(range(len(keys)), key=lambda i: (-seconds[i], keys[i][0], keys[i][1], i))
    loads = [0.0] * count
    members: List[List[int]] = [[] for _ in range(count)]
    for i in order:
        part = min(range(count), key=lambda p: (loads[p], len(members[p]), p))
        loads[part] += seconds[i]
        members[part].append(i)
    return [sorted(m) for m in members]


@dataclass
class Share:
    """What one shard runs, for the start-up line and the report."""

    index: int
    count: int
    cases: int
    total_cases: int
    seconds: float
    total_seconds: float

    def describe(self) -> str:
        return f"shard {self.index}/{self.count}: {self.cases} of {self.total_cases} cases, about {self.seconds:.0f} s of {self.total_seconds:.0f} s recorded case time"


def select(
    work: Sequence[Piece], index: int, count: int, timings: Optional[Timings] = None
) -> Tuple[List[Piece], Share]:
    """(the part `index` of `count` of `work` ((entry, case) pairs), its Share). A part that would be empty (more
    parts than cases) is a one-line KbtoolError."""
    timings = load_timings() if timings is None else timings
    keys = [(case.op, case.id) for _, case in work]
    parts = partition(keys, count, timings)
    mine = parts[index - 1]
    if not mine:
        raise KbtoolError(
            f"--shard {index}/{count}: shard {index} gets no case ({len(work)} cases are selected; use at most {len(work)} shards)"
        )
    seconds = estimates(keys, timings)
    share = Share(index, count, len(mine), len(work), sum(seconds[i] for i in mine), sum(seconds))
    return [work[i] for i in mine], share
