"""Expected exceptions: the case (or the reference) raised, so the backend must raise the same type."""

from typing import Any, Mapping, Optional

import regex

from kbtool.results import Details, Status, Verdict
from kbtool.verdicts.replies import Header, shape_note
from kbtool.worker import protocol

MATCH_TIMEOUT = 1.0  # seconds a case's `match` search may take


def judge_raises(want: str, match: Optional[str], actual_header: Header) -> Verdict:
    """`want` is an exception class name that must be in the raised error's MRO; `match` a regex on its message."""
    if actual_header["status"] != protocol.RAISED:
        return Verdict(Status.FAIL, f"expected {want} to be raised, got a result{shape_note(actual_header)}")
    error = actual_header["error"]
    if want not in error["mro"]:
        return Verdict(
            Status.FAIL,
            "expected {}, raised {}: {}".format(want, error["type"], error["message"][:200]),
            Details(expected_value=want, actual_value=error["type"]),
        )
    if match:
        try:  # the `regex` engine with a time limit: a spec's regex can never hang a check
            found, note = regex.search(match, error["message"], timeout=MATCH_TIMEOUT) is not None, ""
        except TimeoutError:
            found, note = False, f" (the regex search timed out after {MATCH_TIMEOUT:g} s: taken as no match)"
        if not found:
            return Verdict(
                Status.FAIL,
                "raised {} but message {!r} does not match {!r}{}".format(
                    error["type"], error["message"][:200], match[:200], note
                ),
            )
    return Verdict(Status.PASS)


def judge_backend_raised(error: Mapping[str, Any]) -> Verdict:
    """The backend raised where the reference returned a value: unsupported when it says it lacks the feature."""
    if "NotImplementedError" in error["mro"]:
        # the backend says itself that it lacks the feature (e.g. keras 2.3.1's CNTK arange, ctc_*)
        return Verdict(Status.UNSUPPORTED, "{}: {}".format(error["type"], error["message"][:300] or "(no message)"))
    return Verdict(Status.ERROR, error_words(error))


def error_words(error: Mapping[str, Any]) -> str:
    """A raised error as a result's message: 'ValueError: the message' (cut at 300 characters)."""
    return "{}: {}".format(error["type"], error["message"][:300])
