"""The words and records every stage of the pipeline shares: result statuses, backend statuses, the result record.

Defined once here; the verdicts produce them, known differences annotate them, the report carries them and every
renderer reads them. The report's JSON Schema (kbtool/reports/report.schema.json) lists the same words.
"""

import enum
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Tuple


class Status(str, enum.Enum):
    """What one result is: the verdict on one op × case × backend × mode."""

    PASS = "pass"  # same shapes, dtypes and values within tolerance, or the expected exception
    FAIL = "fail"  # a divergence from the reference (values, shape, dtype, error type, statistics, shape rule)
    ERROR = "error"  # the backend raised where the reference returned a value
    # making the case's inputs raised (a variable, placeholder, constant or a {"call": ...} argument), on the backend
    # or on the reference, before the op under test was called: the result says nothing of the op. Never a pass,
    # never coverage; unexplained unless a known difference explains it, and then still counted as not reached
    NOT_REACHED = "not_reached"
    UNSUPPORTED = "unsupported"  # the backend lacks the function or says NotImplementedError
    CRASH = "crash"  # the worker died on this case (it is restarted)
    TIMEOUT = "timeout"  # the worker hung on this case (it is killed and restarted)
    COULD_NOT_START = "could_not_start"  # the worker could not be (re)started, so the case never ran
    # a result a known difference recorded, now failing differently (its fingerprint changed): unexplained, and
    # the verdict it had is kept in Result.changed
    CHANGED = "changed"
    # `--repeat N`: the N runs of the case on the same worker did not all give the same outcome (values, shapes,
    # dtypes, or raising where another run returned): never a pass or a fail by luck. Unexplained unless a known
    # difference explains it; random ops (their draws differ by design) are never repeated
    NONDETERMINISTIC = "nondeterministic"

    def __str__(self) -> str:
        return self.value


# worst first is last: the order in which one op's results on one backend summarise to a matrix cell
SEVERITY: List[str] = [  # Status is a str: the words of a matrix cell
    Status.PASS,
    "known",
    Status.UNSUPPORTED,
    Status.CHANGED,
    Status.NONDETERMINISTIC,
    Status.FAIL,
    Status.ERROR,
    Status.NOT_REACHED,  # worse than an error of the op: nothing of the op was seen
    Status.TIMEOUT,
    Status.CRASH,
    Status.COULD_NOT_START,
]
SYMBOLS: Dict[str, str] = {
    "pass": "✓",
    "known": "≈",
    "fail": "✗",
    "error": "E",
    "crash": "☠",
    "timeout": "⏱",
    "unsupported": "–",
    "could_not_start": "∅",
    "changed": "Δ",
    "nondeterministic": "≠",
    "not_reached": "⊘",
}

# statuses only `--repeat N` makes: a report without one has no count, legend entry or column for them (a check of
# one run reads exactly as before)
OPTIONAL_STATUSES: Tuple[str, ...] = (Status.NONDETERMINISTIC.value,)


class BackendStatus(str, enum.Enum):
    """Whether a backend ran at all in a check."""

    AVAILABLE = "available"  # its worker started and answered
    NOT_INSTALLED = "not installed"  # no environment (or interpreter) for it: nothing was run
    BROKEN = "broken"  # its worker could not start: the backend fails to import, or the worker died at start
    # it cannot run on the device asked (--device gpu on a backend that runs on the CPU only): nothing was run
    DEVICE_UNSUPPORTED = "device unsupported"

    def __str__(self) -> str:
        return self.value


@dataclass
class Details:
    """Structured facts about a failing comparison, besides the message."""

    expected_shape: Optional[List[int]] = None
    actual_shape: Optional[List[int]] = None
    expected_dtype: Optional[str] = None
    actual_dtype: Optional[str] = None
    max_abs_diff: Optional[float] = None
    max_rel_diff: Optional[float] = None
    mismatched: Optional[int] = None  # how many values differ
    non_finite: Optional[int] = None  # how many of those are NaN or ±inf on either side (the max diffs are then too)
    size: Optional[int] = None
    first_index: Optional[List[int]] = None
    expected_value: Any = None
    actual_value: Any = None
    rtol: Optional[float] = None
    atol: Optional[float] = None
    mask: Optional[str] = None  # a digest of which elements differ (known differences fingerprint it)
    draws: Optional[bool] = None  # a verdict on random draws: its numbers vary from run to run (unseeded draws)
    # symbolic mode: what K.int_shape says of the result (None dims kept) and what the spec's shape rule predicts
    static_shape: Optional[List[Optional[int]]] = None
    predicted_static_shape: Optional[List[Optional[int]]] = None
    # a `nondeterministic` result (--repeat N): how many runs there were and how many disagreed with the first
    # (max_abs_diff is then the largest absolute difference between a run's values and the first's)
    runs: Optional[int] = None
    disagreed: Optional[int] = None
    # one output's value verdict, apart from its shape and dtype: "agree", "differ" or "not compared" (shapes that
    # neither match in size nor broadcast); compared_as: how values of another shape were aligned ("flattened",
    # "broadcast")
    values: Optional[str] = None
    compared_as: Optional[str] = None
    # a function of several outputs: every output's verdict ({index, status[, message][, details]}), and, when the
    # backend returned another number of outputs, both counts
    outputs: Optional[List[Dict[str, Any]]] = None
    expected_outputs: Optional[int] = None
    actual_outputs: Optional[int] = None

    def as_dict(self) -> Dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass
class Verdict:
    """What the verdict stage says of one outcome."""

    status: Status
    message: str = ""
    details: Optional[Details] = None
    # an op with an error bound (verdicts/bounds.py): the largest error / bound over its compared elements
    margin: Optional[float] = None

    @property
    def passed(self) -> bool:
        return self.status == Status.PASS


# a result's fields that the record carries only when set, in the record's order
OPTIONAL_FIELDS = (
    "details",
    "note",
    "known",
    "inherits",
    "doc_check",
    "repro",
    "keras_config",
    "captured",
    "changed",
    "device",
    "margin",
    "device_difference",
    "call",
)

# backend statuses of a backend that ran nothing in a check (and is no failure of it)
DID_NOT_RUN = (BackendStatus.NOT_INSTALLED.value, BackendStatus.DEVICE_UNSUPPORTED.value)


@dataclass
class Result:
    """One op × case × backend × mode: the record the JSON report carries."""

    op: str
    case: str
    backend: str
    mode: str
    status: Status
    message: str = ""
    seconds: float = 0.0
    details: Optional[Dict[str, Any]] = None
    note: Optional[str] = None  # e.g. the op came from a backend's private module
    known: Optional[str] = None  # the reason of the known difference that explains it
    # a custom module's op that is its base backend's own function (`mod@tensorflow` re-exporting tf_keras's): the
    # base's name; the base's known differences apply to it (kbtool.known targets `inherits or backend`)
    inherits: Optional[str] = None
    doc_check: Optional[List[Dict[str, Any]]] = None  # documented examples: what each doc version shows
    repro: Optional[str] = None  # the command that reproduces a non-passing result
    keras_config: Optional[Dict[str, Any]] = None  # the keras.json settings it ran under
    # what the reference and the backend printed or warned while it ran ({"reference": ..., "backend": ...}):
    # kept in the record, never let through to the terminal
    captured: Optional[Dict[str, str]] = None
    # for a `changed` result: the entry that recorded it, its recorded and its new fingerprint, and the verdict's own
    # status ({"entry": 12, "status": "fail", "recorded": "...", "now": "..."})
    changed: Optional[Dict[str, Any]] = None
    # the device it ran on ("cpu", "gpu"): set on every result of a backend whose recipe declares devices
    device: Optional[str] = None
    # an op with an error bound (dot, conv, reductions, rnn): the largest error / bound of its float values (1: the
    # edge), passing results included, so that drift shows before it fails
    margin: Optional[float] = None
    # a result on a device that the CPU's run explains otherwise (kbtool/reports/device_differences.py): its kind
    # ("tf32") and both precisions' numbers
    device_difference: Optional[Dict[str, Any]] = None
    # a non-passing result: the call the case made, its inputs summarised (kbtool/specs/call.py: Call.as_dict);
    # what every view shows of it. Passing results carry none (the report stays small)
    call: Optional[Dict[str, Any]] = None

    def as_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "op": self.op,
            "case": self.case,
            "backend": self.backend,
            "mode": self.mode,
            "status": Status(self.status).value,
            "message": self.message,
            "seconds": self.seconds,
        }
        for key in OPTIONAL_FIELDS:
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out
