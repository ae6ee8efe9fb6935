"""The shared words and records (kbtool/results.py): statuses, the result record, comparison details."""

import json

import pytest

from kbtool.results import SEVERITY, SYMBOLS, BackendStatus, Details, Result, Status, Verdict

STATUS_WORDS = [
    "pass",
    "fail",
    "error",
    "not_reached",
    "unsupported",
    "crash",
    "timeout",
    "could_not_start",
    "changed",
    "nondeterministic",
]


@pytest.mark.parametrize(
    "status, word",
    [
        (Status.PASS, "pass"),
        (Status.FAIL, "fail"),
        (Status.ERROR, "error"),
        (Status.NOT_REACHED, "not_reached"),
        (Status.UNSUPPORTED, "unsupported"),
        (Status.CRASH, "crash"),
        (Status.TIMEOUT, "timeout"),
        (Status.COULD_NOT_START, "could_not_start"),
        (Status.CHANGED, "changed"),
        (Status.NONDETERMINISTIC, "nondeterministic"),
        (BackendStatus.AVAILABLE, "available"),
        (BackendStatus.NOT_INSTALLED, "not installed"),
        (BackendStatus.BROKEN, "broken"),
        (BackendStatus.DEVICE_UNSUPPORTED, "device unsupported"),
    ],
)
def test_status_words(status, word):
    assert status.value == word
    assert str(status) == word and f"{status}" == word
    assert status == word and type(status)(word) is status
    assert json.dumps(status) == json.dumps(word)


def test_status_lists():
    assert [s.value for s in Status] == STATUS_WORDS
    assert [s.value for s in BackendStatus] == ["available", "not installed", "broken", "device unsupported"]
    # every status (and 'known') has one rank and one symbol
    assert [str(s) for s in SEVERITY] == [
        "pass",
        "known",
        "unsupported",
        "changed",
        "nondeterministic",
        "fail",
        "error",
        "not_reached",
        "timeout",
        "crash",
        "could_not_start",
    ]
    assert set(SYMBOLS) == set(STATUS_WORDS) | {"known"}


def test_result_as_dict_required_fields_only():
    result = Result(op="dot", case="basic", backend="numpy", mode="eager", status=Status.PASS)
    out = result.as_dict()
    assert out == {
        "op": "dot",
        "case": "basic",
        "backend": "numpy",
        "mode": "eager",
        "status": "pass",
        "message": "",
        "seconds": 0.0,
    }
    assert list(out) == ["op", "case", "backend", "mode", "status", "message", "seconds"]
    assert type(out["status"]) is str  # a plain word, not the enum


def test_result_as_dict_keeps_order_and_optional_fields_set():
    result = Result(
        op="clip",
        case="basic",
        backend="theano",
        mode="symbolic",
        status="fail",
        message="m",
        seconds=0.25,
        details={"max_abs_diff": 0.5},
        note="from tf_keras.src.backend",
        known="a reason",
        doc_check=[{"docs": ["ko-2.2"], "matches": True}],
        repro="kbtool check ...",
    )
    out = result.as_dict()
    assert list(out) == [
        "op",
        "case",
        "backend",
        "mode",
        "status",
        "message",
        "seconds",
        "details",
        "note",
        "known",
        "doc_check",
        "repro",
    ]
    assert (out["status"], out["details"], out["known"], out["repro"]) == (
        "fail",
        {"max_abs_diff": 0.5},
        "a reason",
        "kbtool check ...",
    )


@pytest.mark.parametrize(
    "optional, keys",
    [
        ({"repro": "r"}, ["repro"]),
        ({"known": "k", "repro": "r"}, ["known", "repro"]),
        ({"note": "n", "doc_check": []}, ["note", "doc_check"]),  # empty but not None: kept
        ({"details": {}, "note": None}, ["details"]),
    ],
)
def test_result_as_dict_drops_only_none(optional, keys):
    out = Result(op="a", case="c", backend="b", mode="eager", status=Status.ERROR, **optional).as_dict()
    assert list(out)[7:] == keys


def test_details_as_dict_drops_none_but_keeps_zeros():
    assert Details().as_dict() == {}
    details = Details(
        expected_shape=[2, 3],
        actual_shape=[3, 2],
        max_abs_diff=0.0,
        mismatched=0,
        first_index=[],
        expected_value=0,
        actual_value=False,
        atol=0.0,
    )
    assert details.as_dict() == {
        "expected_shape": [2, 3],
        "actual_shape": [3, 2],
        "max_abs_diff": 0.0,
        "mismatched": 0,
        "first_index": [],
        "expected_value": 0,
        "actual_value": False,
        "atol": 0.0,
    }
    assert list(Details(rtol=1e-5, expected_dtype="float32").as_dict()) == ["expected_dtype", "rtol"]


def test_verdict_passed():
    assert [Verdict(s).passed for s in Status] == [True] + [False] * 9


def test_every_status_has_a_severity_a_symbol_and_a_terminal_style():
    from kbtool.reports.console import STYLES
    from kbtool.results import SEVERITY, SYMBOLS

    words = {s.value for s in Status} | {"known"}
    assert {str(s) for s in SEVERITY} == set(SYMBOLS) == set(STYLES) == words
