"""The versioned JSON of a bench (the source of truth): its one builder, reading it back, its validation, its
verdict. The views (terminal, markdown_view, html_view) only read it; output.py writes it in each format."""

import datetime
import json
import math
import os
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, cast

from kbtool import __version__, files, schemas
from kbtool.errors import KbtoolError
from kbtool.results import BackendStatus

# a backend's status in a bench: kbtool/results.py's BackendStatus (available, not installed, broken), and one that
# only a bench has: an interrupted bench never reached it
NOT_RUN = "not run"
BACKEND_STATUSES = [s.value for s in BackendStatus] + [NOT_RUN]
MAX_DEPTH = 64  # no bench nests deeper than about 6 (a kwargs value may hold a list of lists)


SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench.schema.json")


def one_line(text: object, limit: Optional[int] = None) -> str:
    """files.one_line, typed here (files.py's is not annotated), looked up at each call."""
    flatten = cast(Callable[..., str], files.one_line)
    return flatten(text) if limit is None else flatten(text, limit)


def schema() -> Dict[str, Any]:
    return schemas.load(SCHEMA_FILE)


def validate(report: Any) -> List[str]:
    """Problems of a bench report against its schema, as 'path: message' strings (empty when valid)."""
    return schemas.problems(SCHEMA_FILE, report)


class BenchRun(NamedTuple):
    """What one bench measured: all its report is assembled from (`comparison`: the gate's rows against a baseline
    or the other release; `incomplete`: {signal, note} of an interrupted bench; `notes`: said under the verdict)."""

    command: str
    machine: Dict[str, Any]
    peak: Optional[Dict[str, Any]]  # None: a signal stopped the bench before the peak was measured
    settings: Dict[str, Any]
    families: Dict[str, Any]
    backends: List[Dict[str, Any]]
    results: List[Dict[str, Any]]
    scaling: List[Dict[str, Any]]
    wall_seconds: float
    comparison: Optional[Dict[str, Any]] = None
    incomplete: Optional[Dict[str, Any]] = None
    notes: Sequence[str] = ()


def assemble(run: BenchRun) -> Dict[str, Any]:
    """The bench's JSON document, its summary computed from its results."""
    results, backends, comparison, incomplete = run.results, run.backends, run.comparison, run.incomplete
    failed = [r for r in results if r["status"] not in ("ok", "unsupported")]
    measured = [r for r in results if r["status"] == "ok"]
    could_not_start = problems({"backends": backends})
    report = {
        "format": "kbtool-bench",
        "schema_version": 1,
        "kbtool": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        "command": run.command,
        "machine": run.machine,
        "peak": run.peak,
        "settings": run.settings,
        "families": run.families,
        "backends": backends,
        "results": results,
        "scaling": run.scaling,
        "wall_seconds": round(run.wall_seconds, 3),
        "summary": {
            "measured": len(measured),
            "failed": len(failed),
            "unsupported": sum(r["status"] == "unsupported" for r in results),
            "unstable": sum(bool(r.get("unstable")) for r in measured),
            "ok": bool(measured)
            and not incomplete
            and not could_not_start
            and not (comparison and comparison["failed"]),
            "notes": list(run.notes),
        },
    }
    if comparison is not None:
        report["comparison"] = comparison
    if incomplete:
        report["incomplete"] = incomplete
    return report


def problems(report: Dict[str, Any]) -> List[str]:
    """Why a bench is not ok whatever it measured: each backend that could not start (never green, as in check)."""
    return [
        "{} could not start: {}".format(b["name"], one_line(b.get("reason") or "no reason given", 300))
        for b in report["backends"]
        if b["status"] == BackendStatus.BROKEN.value
    ]


def is_ok(report: Dict[str, Any]) -> bool:
    """Whether a bench (as measured or as read back, with its comparison if any) holds: something measured, not
    interrupted, every backend started, the gate holds."""
    comparison = report.get("comparison")
    return (
        report["summary"]["measured"] > 0
        and not report.get("incomplete")
        and not problems(report)
        and not (comparison and comparison["failed"])
    )


def exit_code(report: Dict[str, Any]) -> int:
    """0 when something was measured and no gate failed; 1 otherwise (nothing measured, a significant slowdown
    beyond --fail-over, or an interrupted run)."""
    return 0 if report["summary"]["ok"] else 1


def load(path: str) -> Dict[str, Any]:
    """A bench report from a file (a baseline for --compare), gzipped or not, or a one-line KbtoolError."""
    text = files.read_text(path, "bench report ", gzipped_ok=True) or ""  # never None: a missing file is a KbtoolError
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise KbtoolError(f"{path}: not JSON ({exc})")
    except RecursionError:
        raise KbtoolError(f"{path}: not a valid bench report: nested too deeply")
    if not isinstance(data, dict) or data.get("format") != "kbtool-bench":
        raise KbtoolError(f"{path}: not a kbtool bench report (a `kbtool bench -o FILE.json` file)")
    found = unusable(data) or validate(data) or inconsistent(data)
    if found:
        raise KbtoolError(
            one_line(
                "{}: not a valid bench report: {}{}".format(
                    path, files.clip(found[0], 300), f" (and {len(found) - 1} more)" if len(found) > 1 else ""
                )
            )
        )
    return data


def unusable(data: Any) -> List[str]:
    """What no schema says: nesting deeper than any bench's (MAX_DEPTH), and numbers that are not finite (JSON has
    none; Python's json module reads NaN and Infinity)."""
    found: List[str] = []
    stack = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            return [f"{where or '(top)'}: nested too deeply (more than {MAX_DEPTH} levels)"]
        if isinstance(value, dict):
            stack.extend((v, f"{where}/{k}" if where else str(k), depth + 1) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{where}/{i}" if where else str(i), depth + 1) for i, v in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            found.append(f"{where}: {value} is not a finite number")
    return sorted(found)


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def inconsistent(data: Dict[str, Any]) -> List[str]:
    """What the schema cannot say of a valid report and every view and the gate need: a measured result's times
    are positive, its samples present; no n is negative (the growth is fitted on log axes, over the positive ones)."""
    found: List[str] = []
    for i, r in enumerate(data["results"]):
        if r["n"] < 0:  # 0: a fixed family (its inputs do not grow)
            found.append(f"results/{i}/n: {r['n']!r} is a negative size")
        if r["status"] != "ok":
            continue
        for key in ("median_s", "min_s"):
            if not _positive(r[key]):
                found.append(f"results/{i}/{key}: {r[key]!r} is not a positive number of seconds")
        if r["iqr_s"] < 0:
            found.append(f"results/{i}/iqr_s: {r['iqr_s']!r} is negative")
        if not all(_positive(s) for s in r["samples_s"]):
            found.append(f"results/{i}/samples_s: a sample is not a positive number of seconds")
    for i, row in enumerate(data["scaling"]):
        if not all(_positive(n) and _positive(t) for n, t in row["points"]):
            found.append(f"scaling/{i}/points: a point is not positive")
    return found


def dumps(report: Dict[str, Any]) -> str:
    """The bench as its JSON file says it."""
    return json.dumps(report, indent=1, sort_keys=False) + "\n"
