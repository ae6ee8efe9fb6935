"""The JSON report as one typed record: its schema version, the one builder of its top level (for `check` and
`report merge` alike), reading it back (bounded and fast) and writing it (standard JSON).

The summary and the verdict are never read from a file: `to_dict` computes them from the results, so a report
edited to say `ok: true` over failures renders as failing. Reports are standard JSON: a number JSON cannot hold
(NaN, Infinity, -Infinity, e.g. a backend's value in a result's details) is written as the string "NaN",
"Infinity" or "-Infinity", and reading gives the same strings back; the schema allows those strings where a
detail is a number. A report file is at most MAX_REPORT_BYTES (256 MB; a full run of the shipped spec is 5 MB),
and a number in it has at most MAX_DIGITS digits.
"""

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, cast

from kbtool import files, schemas
from kbtool.errors import KbtoolError
from kbtool.known import KnownEntry
from kbtool.reports.verdict import summarize
from kbtool.results import OPTIONAL_FIELDS, Result, Status
from kbtool.specs import call
from kbtool.vocabulary import DEVICES, MODES

# files.py's helpers, typed for reports/ (files.py is not annotated), looked up at each call


def clip(value: Any, limit: Optional[int] = None) -> str:
    clipped = cast(Callable[..., str], files.clip)
    return clipped(value) if limit is None else clipped(value, limit)


def one_line(text: Any) -> str:
    return cast(Callable[[Any], str], files.one_line)(text)


def write_atomic(path: str, text: str) -> None:
    cast(Callable[[str, str], None], files.write_atomic)(path, text)


SCHEMA_VERSION = 1
SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report.schema.json")
MAX_REPORT_BYTES = 256 * 1024 * 1024
MAX_DIGITS = 40  # a number kbtool writes (a seed, a count, seconds) has far fewer
NON_FINITE = {"NaN": "NaN", "Infinity": "Infinity", "-Infinity": "-Infinity"}


@dataclass
class Report:
    """The top level of a report; `results` are Result records, `summary` is computed (see `to_dict`)."""

    kbtool: str
    created: str
    seed: int
    spec: Dict[str, Any]
    filters: List[str]
    backends: List[Dict[str, Any]]
    results: List[Result]
    known_differences: List[Dict[str, Any]]
    stale_known_differences: List[Dict[str, Any]]
    wall_seconds: float
    grid: Optional[str] = None
    keras_config: Optional[Dict[str, Any]] = None
    active_backend: Optional[str] = None
    has_active_backend: bool = False  # the key is written (its value may be null)
    resources: Optional[Dict[str, Any]] = None
    known_file: Optional[Dict[str, Any]] = None  # an older report's one known file (and `report judge`'s note)
    known_files: Optional[List[Dict[str, Any]]] = None  # the known files applied, in order: {path, sha256, shipped}
    known_refs: Optional[List[Dict[str, Any]]] = None  # the entries applied, by id and hash (kbtool/known/layers.py)
    known_entries: Optional[List[KnownEntry]] = None  # embedded (check --embed-known, or an older report)
    plan: Optional[Dict[str, Any]] = None
    incomplete: Optional[Dict[str, Any]] = None
    merged_from: Optional[List[Dict[str, Any]]] = None
    judged_from: Optional[Dict[str, Any]] = None  # `kbtool report judge`: the report whose results were judged again
    strict: bool = False  # judged as `check --strict`
    schema_version: int = field(default=SCHEMA_VERSION)

    # ------------------------------------------------------------------------------------------ dict and JSON

    def to_dict(self) -> Dict[str, Any]:
        """The report as JSON data, in the key order kbtool writes, with its summary computed from the results."""
        out: Dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "kbtool": self.kbtool,
            "created": self.created,
            "seed": self.seed,
            "spec": dict(self.spec),
            "filters": list(self.filters),
        }
        if self.grid is not None:
            out["grid"] = self.grid
        if self.keras_config is not None:
            out["keras_config"] = self.keras_config
        if self.has_active_backend or self.active_backend is not None:
            out["active_backend"] = self.active_backend
        out.update(
            backends=self.backends,
            results=[r.as_dict() for r in self.results],
            known_differences=self.known_differences,
            stale_known_differences=self.stale_known_differences,
            wall_seconds=self.wall_seconds,
        )
        optional: Dict[str, Any] = {
            "resources": self.resources,
            "known_file": self.known_file,
            "known_files": self.known_files,
            "known_refs": self.known_refs,
            "known_entries": None if self.known_entries is None else [e.to_dict() for e in self.known_entries],
            "plan": self.plan,
            "merged_from": self.merged_from,
            "judged_from": self.judged_from,
            "incomplete": self.incomplete,
        }
        out.update((key, value) for key, value in optional.items() if value is not None)
        out["summary"] = summarize(out, strict=self.strict)
        return out

    @classmethod
    def from_dict(cls, data: Dict[str, Any], where: str = "report") -> "Report":
        """From a report's JSON data that passed `validate` (its summary is dropped: `to_dict` computes it; its
        known_entries are held to the rules of a known-differences file)."""

        entries = data.get("known_entries")
        return cls(
            schema_version=data["schema_version"],
            kbtool=data["kbtool"],
            created=data["created"],
            seed=data["seed"],
            spec=data["spec"],
            filters=data["filters"],
            backends=data["backends"],
            results=[result_of(r) for r in data["results"]],
            known_differences=data["known_differences"],
            stale_known_differences=data["stale_known_differences"],
            wall_seconds=data["wall_seconds"],
            grid=data.get("grid"),
            keras_config=data.get("keras_config"),
            active_backend=data.get("active_backend"),
            has_active_backend="active_backend" in data,
            resources=data.get("resources"),
            known_file=data.get("known_file"),
            known_files=data.get("known_files"),
            known_refs=data.get("known_refs"),
            known_entries=None if entries is None else _entries(data, where),
            plan=data.get("plan"),
            incomplete=data.get("incomplete"),
            merged_from=data.get("merged_from"),
            judged_from=data.get("judged_from"),
            strict=bool((data.get("summary") or {}).get("strict")),
        )

    @classmethod
    def load(cls, path: str) -> "Report":
        """The report in `path` (read within MAX_REPORT_BYTES, validated); a one-line KbtoolError otherwise."""
        return cls.from_dict(read_data(path), f"report {path}")

    @classmethod
    def load_data(cls, path: str) -> Dict[str, Any]:
        """What `load(path).to_dict()` gives, without a Result per record (a 100 MB report holds 300,000): the
        validated data, its known entries held to the known file's rules, its summary computed from its results."""
        data = read_data(path)
        if data.get("known_entries") is not None:
            _entries(data, f"report {path}")
        strict = bool((data.pop("summary", None) or {}).get("strict"))
        data["summary"] = summarize(data, strict=strict)
        return data

    def save(self, path: str) -> None:
        """Write the report as standard JSON, atomically."""
        from kbtool.reports.text import encodable

        try:
            write_atomic(path, encodable(dumps(self.to_dict())))
        except OSError as exc:
            raise KbtoolError(f"cannot write {path}: {exc.strerror or exc}")


def _entries(data: Dict[str, Any], where: str) -> List[KnownEntry]:
    """The report's known entries, held to the known file's rules; every result it marks as explained must name
    the reason of one of them (a one-line KbtoolError otherwise: the report was edited)."""
    from kbtool import known

    entries = known.from_report(data["known_entries"], where)
    reasons = {entry.reason for entry in entries}
    for index, record in enumerate(data["results"]):
        if record.get("known") is not None and record["known"] not in reasons:
            raise KbtoolError(
                "{}: results/{}: explained by {}, the reason of no known entry the report applied; the report was "
                "edited, so its verdict cannot be trusted".format(where, index, clip(record["known"], 60))
            )
    return entries


def result_of(record: Dict[str, Any]) -> Result:
    """A report's result record as a Result (its status a Status)."""
    result = Result(**record)
    result.status = Status(result.status)
    return result


# ------------------------------------------------------------------------------------------------ writing JSON


def standard(value: Any) -> Any:
    """`value` with every non-finite float spelt as the string JSON readers agree on ("NaN", "Infinity",
    "-Infinity"); anything else as it is."""
    if isinstance(value, float):
        return (
            value if math.isfinite(value) else ("NaN" if value != value else "Infinity" if value > 0 else "-Infinity")
        )
    if isinstance(value, dict):
        return {k: standard(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [standard(v) for v in value]
    return value


def dumps(data: Dict[str, Any]) -> str:
    """The report as standard JSON text (no NaN or Infinity literals), stable key order."""
    try:
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    except ValueError:  # a non-finite number somewhere: spelt out (the common case pays nothing for it)
        return json.dumps(standard(data), indent=2, allow_nan=False) + "\n"


# ------------------------------------------------------------------------------------------------ reading JSON


class _Refused(ValueError):
    """A number kbtool will not read (too many digits, out of float range)."""

    def __init__(self, message: str, text: str) -> None:
        super().__init__(message)
        self.text = text


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _Refused(f"a {len(text.lstrip('-'))}-digit number ({text[:12]}…)", text)
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > 2 * MAX_DIGITS:
        raise _Refused(f"a number of {len(text)} characters ({text[:12]}…)", text)
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"a number out of range ({text[:20]})", text)
    return value


def _parse_constant(name: str) -> str:
    return NON_FINITE[name]  # as kbtool writes them now: the strings


def read_data(path: str) -> Dict[str, Any]:
    """The validated JSON data of a report file; a one-line KbtoolError naming the file otherwise."""
    text = _read(path)
    try:
        data = json.loads(text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
    except _Refused as exc:
        position = text.find(exc.text)
        line = f":{text.count(chr(10), 0, position) + 1}" if position >= 0 else ""
        raise KbtoolError(f"report {path}{line}: {exc}; kbtool writes numbers of at most {MAX_DIGITS} digits")
    except ValueError as exc:
        raise KbtoolError(one_line(f"report {path}: not JSON ({clip(exc, 120)})"))
    except RecursionError:
        raise KbtoolError(f"report {path}: not JSON (nested too deeply)")
    if isinstance(data, dict) and data.get("format") == "kbtool-bench":  # not "'seed' is required (and 87 more)"
        raise KbtoolError(f"{path}: a bench report, not a check report (`kbtool bench --from {path}` reads it)")
    if not isinstance(data, dict) or "schema_version" not in data or "results" not in data:
        raise KbtoolError(
            f"{path}: not a kbtool report (no schema_version and results; write one with `kbtool check -o FILE.json`)"
        )
    version = data["schema_version"]
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise KbtoolError(
            f"report {path}: schema_version {version} is newer than this kbtool reads ({SCHEMA_VERSION}); upgrade kbtool"
        )
    problems = validate(data)
    if problems:
        raise KbtoolError(
            one_line(
                "report {}: {}{}".format(
                    path,
                    clip(problems[0], 300),
                    f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else "",
                )
            )
        )
    return data


def _read(path: str) -> str:
    """The UTF-8 text of a report file: a regular file of at most MAX_REPORT_BYTES."""
    import stat

    try:
        info = os.stat(path)
    except OSError as exc:
        raise KbtoolError(f"cannot read report {path}: {exc.strerror or exc}")
    except ValueError as exc:  # a NUL in the path
        raise KbtoolError(f"cannot read report {path!r}: {exc}")
    if stat.S_ISDIR(info.st_mode):
        raise KbtoolError(f"cannot read report {path}: it is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise KbtoolError(f"cannot read report {path}: not a regular file (a report is a .json file kbtool wrote)")
    if info.st_size > MAX_REPORT_BYTES:
        raise KbtoolError(
            f"report {path}: {info.st_size // (1024 * 1024)} MB, larger than the {MAX_REPORT_BYTES // (1024 * 1024)} MB "
            "kbtool reads (a full run of the shipped spec is 5 MB)"
        )
    if info.st_size == 0:
        raise KbtoolError(f"report {path}: empty (not a kbtool report)")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_REPORT_BYTES + 1)
    except OSError as exc:
        raise KbtoolError(f"cannot read report {path}: {exc.strerror or exc}")
    if data[:2] == GZIP_MAGIC:  # a gzipped report (as a GPU machine's are kept), read within the same bound
        data = _gunzip(path, data)
    if len(data) > MAX_REPORT_BYTES:
        raise KbtoolError(f"report {path}: larger than the {MAX_REPORT_BYTES // (1024 * 1024)} MB kbtool reads")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KbtoolError(
            "report {}:{}: not UTF-8 text ({}), so not a JSON report kbtool wrote".format(
                path, data.count(b"\n", 0, exc.start) + 1, exc.reason
            )
        )


GZIP_MAGIC = b"\x1f\x8b"


def _gunzip(path: str, data: bytes) -> bytes:
    """A gzipped report's bytes, decompressed up to one byte past MAX_REPORT_BYTES (the caller refuses more)."""
    import zlib

    try:
        return zlib.decompressobj(wbits=16 + zlib.MAX_WBITS).decompress(data, MAX_REPORT_BYTES + 1)
    except zlib.error as exc:
        raise KbtoolError(f"report {path}: not a readable gzip file ({exc})")


# ------------------------------------------------------------------------------------------------ validation


def schema() -> Dict[str, Any]:
    return schemas.load(SCHEMA_FILE)


def validate(data: Any) -> List[str]:
    """Problems of a report against the shipped schema, as 'path: message' strings (empty when valid).

    The top level is checked by the schema with its results left out, each result by a quick check of its shape
    (`_plain_result`, ~20x faster than the schema: 10 MB in 0.3 s), and a result that fails it by the schema, which
    then says what is wrong in its own words. At most ~100 problems are listed."""
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return schemas.problems(SCHEMA_FILE, data)
    problems = schemas.problems(SCHEMA_FILE, dict(data, results=[]))
    for index, record in enumerate(data["results"]):
        if not _plain_result(record):
            problems.extend(schemas.problems(SCHEMA_FILE, record, "result", ["results", index]))
            if len(problems) > 100:
                break
    return problems


_REQUIRED_KEYS = frozenset(("op", "case", "backend", "mode", "status", "message", "seconds"))
_RESULT_KEYS = _REQUIRED_KEYS | set(OPTIONAL_FIELDS)
_STATUSES = frozenset(s.value for s in Status)
_MODES = frozenset(MODES)


def _plain_result(record: Any) -> bool:
    """Whether a result record is certainly valid: the schema's rules for a result, checked in plain Python (a
    False sends the record to the schema, which says why or finds it valid after all)."""
    if type(record) is not dict or not _REQUIRED_KEYS <= record.keys() <= _RESULT_KEYS:
        return False
    op, case, backend, message = record["op"], record["case"], record["backend"], record["message"]
    mode, status, seconds = record["mode"], record["status"], record["seconds"]
    if not (type(op) is str and type(case) is str and type(backend) is str and type(message) is str):
        return False
    if not (type(mode) is str and mode in _MODES and type(status) is str and status in _STATUSES):
        return False
    if type(seconds) not in (int, float) or not seconds >= 0 or (status == "pass") == ("repro" in record):
        return False
    if len(record) == 7:  # a passing result with nothing more: the common case
        return True
    for key in ("note", "known", "inherits", "repro"):
        if key in record and type(record[key]) is not str:
            return False
    if "device" in record and record["device"] not in DEVICES:
        return False
    return (
        ("details" not in record or _plain_details(record["details"]))
        and ("keras_config" not in record or _plain_settings(record["keras_config"]))
        and ("captured" not in record or _plain_captured(record["captured"]))
        and ("doc_check" not in record or _plain_doc_check(record["doc_check"]))
        and "changed" not in record  # rare: the schema checks it
        and ("call" not in record or (status != "pass" and call.is_plain(record["call"])))
    )


def _plain_captured(value: Any) -> bool:
    return (
        type(value) is dict and value.keys() <= {"reference", "backend"} and all(type(v) is str for v in value.values())
    )


def _plain_doc_check(value: Any) -> bool:
    return type(value) is list and all(
        type(item) is dict
        and {"docs", "matches"} <= item.keys() <= {"docs", "matches", "shown"}
        and type(item["docs"]) is list
        and all(type(doc) is str for doc in item["docs"])
        and item["matches"] in (True, False, None)
        and type(item["matches"]) in (bool, type(None))
        and type(item.get("shown", "")) is str
        for item in value
    )


_SETTINGS = {"image_data_format": {"channels_first", "channels_last"}, "floatx": {"float16", "float32", "float64"}}
_INTS = ("mismatched", "size", "non_finite", "expected_outputs", "actual_outputs")
_INT_LISTS = ("expected_shape", "actual_shape", "first_index")
_TEXTS = ("expected_dtype", "actual_dtype")
_NUMBERS = ("max_abs_diff", "max_rel_diff", "rtol", "atol")
_WORDS = {"values": {"agree", "differ", "not compared"}, "compared_as": {"flattened", "broadcast"}}
_DETAILS = set(_INTS + _INT_LISTS + _TEXTS + _NUMBERS + tuple(_WORDS) + ("expected_value", "actual_value"))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _plain_settings(value: Any) -> bool:
    """Whether a result's keras_config is certainly valid (the common case, checked without the schema)."""
    return isinstance(value, dict) and all(
        value[key] in _SETTINGS[key] if key in _SETTINGS else key == "epsilon" and _is_number(value[key])
        for key in value
    )


def _plain_details(value: Any) -> bool:
    """Whether a result's details are certainly valid (the common case, checked without the schema)."""
    if not isinstance(value, dict) or not set(value) <= _DETAILS:
        return False
    return (
        all(isinstance(value[k], int) and not isinstance(value[k], bool) and value[k] >= 0 for k in _INTS if k in value)
        and all(
            isinstance(value[k], list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value[k])
            for k in _INT_LISTS
            if k in value
        )
        and all(isinstance(value[k], str) for k in _TEXTS if k in value)
        and all(value[k] in words for k, words in _WORDS.items() if k in value)
        and all(_is_number(value[k]) and value[k] >= 0 for k in _NUMBERS if k in value)
    )
