"""The controller's side of the wire protocol: typed requests and replies over worker/protocol.py's frames.

The worker (Python 3.6, inside every backend env) speaks plain dicts; the controller speaks `Request` and `Reply`.
A `Reply` is a named (header, arrays) pair, so the verdicts, which compare a reply with the reference's (header,
arrays), read both the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from kbtool.worker import protocol as wire
from kbtool.worker.protocol import BROKEN, CRASH, NOT_REACHED, OK, RAISED, READY, TIMEOUT, UNAVAILABLE, UNSUPPORTED

__all__ = [
    "wire",
    "BROKEN",
    "CANCELLED",
    "CRASH",
    "NOT_REACHED",
    "OK",
    "RAISED",
    "READY",
    "TIMEOUT",
    "UNAVAILABLE",
    "UNSUPPORTED",
    "Header",
    "Hello",
    "Reply",
    "Request",
]

CANCELLED = "cancelled"  # the worker was killed under the request (the run was interrupted): it has no outcome

Header = Dict[str, Any]
Hello = Dict[str, Any]  # what a worker says once, at start: status ready|broken, versions, keras.json in effect


@dataclass(frozen=True)
class Request:
    """One command to a worker: `run` a case in a mode, `bench` it, measure the `overhead` or its device's `peak`,
    `ping`, `exit`."""

    cmd: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    arrays: Sequence[np.ndarray] = ()
    timeout: Optional[float] = None  # seconds to wait for the reply (None: the client's case timeout)

    @classmethod
    def from_header(cls, header: Mapping[str, Any], arrays: Sequence[np.ndarray] = ()) -> Request:
        fields = {k: v for k, v in header.items() if k != "cmd"}
        return cls(str(header.get("cmd", "run")), fields, tuple(arrays))

    def with_fields(self, **more: Any) -> Request:
        return Request(self.cmd, {**self.fields, **more}, self.arrays, self.timeout)

    def to_wire(self) -> Tuple[Header, List[np.ndarray]]:
        return dict(self.fields, cmd=self.cmd), list(self.arrays)

    def encode(self) -> bytes:
        header, arrays = self.to_wire()
        encoded: bytes = wire.encode(header, arrays)  # type: ignore[no-untyped-call]  # (the py36 worker is untyped)
        return encoded


class Reply(NamedTuple):
    """A worker's answer to one request (or the client's, for a worker that died, hung or was killed)."""

    header: Header
    arrays: List[np.ndarray]

    @classmethod
    def from_wire(cls, header: object, arrays: Sequence[np.ndarray]) -> Reply:
        if not isinstance(header, dict):
            raise ValueError(f"a reply header must be a JSON object, not {type(header).__name__}")
        return cls(header, list(arrays))

    @classmethod
    def failure(cls, status: str, message: str, captured: Optional[str] = None) -> Reply:
        header: Header = {"status": status, "message": message}
        if captured:
            header["captured"] = captured
        return cls(header, [])

    @property
    def status(self) -> Optional[str]:
        status = self.header.get("status")
        return None if status is None else str(status)

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def cancelled(self) -> bool:
        return self.status == CANCELLED

    @property
    def message(self) -> str:
        return str(self.header.get("message", ""))

    @property
    def note(self) -> Optional[str]:
        note = self.header.get("note")
        return None if note is None else str(note)

    @property
    def captured(self) -> Optional[str]:
        text = self.header.get("captured")
        return str(text) if text else None

    def with_captured(self, text: str) -> Reply:
        return Reply(dict(self.header, captured=text), self.arrays)


def is_ready(hello: Optional[Mapping[str, Any]]) -> bool:
    return hello is not None and hello.get("status") == READY
