"""One item's verdict: its known difference (as known.apply marks a check's result), the unexpected pass, the text.

known.apply marks a result with the first entry that explains it; an entry with `verified_by` looks at the result of
the variant of the same call. Applied to a result together with its variants' results, it names the same entry as
in a check of the whole plan, since nothing else of the run enters a result's mark.

A stale entry is one that targets results but explains none of them: it is judged over every result of the session
(runners/session.py). An entry that targets this item's result alone (in the whole plan) is certainly stale when the item
passes: that item fails at once, as an unexpected pass.
"""

import dataclasses
import json
from collections import namedtuple
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Tuple

from kbtool.known import KnownEntry
from kbtool.results import Result
from kbtool.specs import call

if TYPE_CHECKING:
    from kbtool.pytest_plugin.items import Target


class KbtoolFailure(Exception):
    """An item that does not pass and is not explained: the text says what, with the numbers and the repro."""


class WorkerUnavailable(Exception):
    """The backend's worker for this item could not start (or was killed): the item errors, saying why."""


Key = namedtuple("Key", "op case backend mode")  # what known.targets reads of a result


_LOCKS: Dict[str, Dict[str, str]] = {}


def read_lock(recipe: Any) -> Dict[str, str]:
    """A recipe's lock, read once per process: every item's verdict asks for the same few locks (a pytest session
    judges thousands of items), and a lock does not change while it runs."""
    if recipe.name not in _LOCKS:
        from kbtool.runners import envs

        _LOCKS[recipe.name] = envs.read_lock(recipe)
    return _LOCKS[recipe.name]


def known_reason(
    result: Result, variant_results: Sequence[Result], entries: Sequence[KnownEntry], by_regex: bool = False
) -> Optional[str]:
    """The reason of the entry that explains `result` (None: none does), given its variants' results. A result an
    entry recorded that fails differently now is marked `changed` (its status and `changed`), as in a check."""
    from kbtool import known

    probe = dataclasses.replace(result, known=None)
    others = [dataclasses.replace(r, known=None) for r in variant_results]
    versions = known.lookup([probe] + others, None, read_lock)  # (no worker's versions here: the locks)
    known.apply([probe] + others, entries, whole_spec=False, all_cases=False, by_regex=by_regex, versions=versions)
    if probe.changed:
        result.status, result.changed = probe.status, probe.changed
    return probe.known


def needs_variants(result: Result, entries: Sequence[KnownEntry]) -> bool:
    """Whether an entry with `verified_by` would explain `result` if its variant's result says so."""
    from kbtool import known

    versions = known.lookup([result], None, read_lock)  # (no worker's versions here: the locks)
    return any(e.verified_by and e.explains(result, versions) for e in known.numbered(entries))


def sole_targets(plan: Any, keys: Iterable[Tuple[str, str, str, str]], entries: Sequence[KnownEntry]) -> Dict[Any, Any]:
    """{key: (entry number, entry)} for each entry that the plan's results `keys` give one target, and whose staleness
    a check of this plan judges (no --case, --mode, --examples or --keras-config; every op it names planned)."""
    from kbtool import known
    from kbtool.plan import checkable_ops

    if not plan.all_cases:
        return {}
    by_op: Dict[str, List[Key]] = {}
    for key in keys:
        by_op.setdefault(key[0], []).append(Key(*key))
    spec_ops = checkable_ops(plan.spec)
    versions = known.lookup([k for op_keys in by_op.values() for k in op_keys], None, read_lock)  # the locks
    out: Dict[Any, Any] = {}
    for entry in known.numbered(entries):
        if not known.judged(entry, plan.whole_spec, True, plan.ops, spec_ops):
            continue
        targeted = [
            k
            for op, op_keys in by_op.items()
            if known.matches(op, entry.op)
            for k in op_keys
            if entry.targets(k, versions)
        ]
        if len(targeted) == 1:
            out.setdefault(tuple(targeted[0]), (entry.number, entry))
    return out


def failure_text(result: Result) -> str:
    """What a failing item shows: the verdict, the structured details, the backend's note, the repro command."""
    message = (result.message or "").splitlines() or [""]
    lines = [f"{result.status}: {message[0]}"] + ["  " + line for line in message[1:]]
    if result.changed:  # a known result that fails differently now
        change = result.changed
        lines += [
            f"  known-difference entry {change['entry']} recorded: {change['recorded']}",
            f"  now: {change['now']}",
        ]
    for key, value in (result.details or {}).items():
        lines.append(f"  {key}: {json.dumps(value) if not isinstance(value, str) else value}")
    if result.note:
        lines.append(f"note: {result.note}")
    for side, text in sorted((getattr(result, "captured", None) or {}).items()):  # what it printed or warned
        lines.append("{} printed: {}".format(side, " | ".join(str(text).split("\n"))[:500]))
    if result.call:  # the call the case made (kbtool/specs/call.py)
        lines.append(f"call: {call.code(result.call)}")
    if result.repro:
        lines.append(f"repro: {result.repro}")
    return "\n".join(lines)


def stale_text(number: Any, entry: KnownEntry) -> str:
    return (
        f"passed, but known-difference entry {number} targets this result alone: it no longer reproduces (stale). "
        f"Its reason: {entry.reason}"
    )


def headline(target: "Target") -> str:
    """The title of an item's report: op, case, backend and mode in words (not a suffix of its id, which pytest
    would rewrite)."""
    op, case, backend, mode = target.key
    return f"{op} {case} on {backend} ({mode})"
