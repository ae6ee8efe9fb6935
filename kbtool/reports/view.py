"""What a view shows of a report: `--status` picks the results the terminal lists.

Only the terminal view honours --status: files written with -o and `--json` always hold the whole report (the
source of truth), and the summary and exit code never change with it.
"""

from typing import Any, Dict, Iterable, Sequence, Tuple

from kbtool.errors import KbtoolError
from kbtool.results import Status

UNEXPLAINED = "unexplained"  # not pass and not explained by a known difference
STATUS_WORDS = tuple(s.value for s in Status) + ("known", UNEXPLAINED)


def check_statuses(statuses: Iterable[str]) -> Tuple[str, ...]:
    """The --status words, each one kbtool knows (a one-line KbtoolError otherwise)."""
    statuses = list(statuses)
    unknown = [s for s in statuses if s not in STATUS_WORDS]
    if unknown:
        raise KbtoolError("unknown --status {}; statuses are {}".format(", ".join(unknown), ", ".join(STATUS_WORDS)))
    return tuple(dict.fromkeys(statuses))


def shows(record: Dict[str, Any], statuses: Iterable[str]) -> bool:
    """Whether a result record has one of the statuses: `known` is an explained result, whatever its status;
    a status word names the results with that status that are not explained; `unexplained` every non-pass one
    that is not explained."""
    known = bool(record.get("known"))
    for word in statuses:
        if word == "known" and known:
            return True
        if word == UNEXPLAINED and not known and record["status"] != Status.PASS.value:
            return True
        if word == record["status"] and (not known or word == Status.PASS.value):
            return True
    return False


def filtered(report: Dict[str, Any], statuses: Sequence[str]) -> Dict[str, Any]:
    """A copy of `report` whose results are those with one of `statuses` (all of them when none); the rest of the
    report, the summary included, is the same objects (never changed)."""
    if not statuses:
        return report
    statuses = check_statuses(statuses)
    view = dict(report)
    view["results"] = [r for r in report["results"] if shows(r, statuses)]
    return view


def shown_line(report: Dict[str, Any], view: Dict[str, Any], statuses: Sequence[str]) -> str:
    """The line a filtered terminal view ends with: how much of the report it shows."""
    return "kbtool: --status {}: showing {} of {} results (the summary and exit code are the whole run's)".format(
        ",".join(statuses), len(view["results"]), len(report["results"])
    )
