"""The migration table: the K.* -> Keras 3 map (specs/keras3_map.yaml), one row per function, with each Keras 3
engine's parity verdict beside it, taken from check reports (`kbtool report migration [REPORT.json ...]`).

An engine is a backend whose name starts with `keras3-` (one column per device where a result names a device other
than the CPU). Its verdict on a function is the op × backend matrix's cell (matrix.cell_status: the worst status of
the function's results there, `known` when a known difference explains it) with passed/total; a function none of
whose cases ran there (no result, or only `could_not_start`) is "not run". Without a report there are no verdict
columns, and the page says so.
"""

from typing import Any, Dict, List, Optional, Sequence, Tuple

from kbtool.reports.matrix import cell_status
from kbtool.reports.text import markdown as _escape
from kbtool.reports.text import plain
from kbtool.results import SYMBOLS, Status
from kbtool.specs.keras3_map import Keras3Map

Record = Dict[str, Any]
ENGINE_PREFIX = "keras3-"
NOT_RUN = "not run"
FORMATS = ("markdown", "html")


def _column(record: Record) -> str:
    device = record.get("device")
    return record["backend"] if device in (None, "cpu") else "{} ({})".format(record["backend"], device)


def engines(reports: Sequence[Record]) -> List[str]:
    """The keras3-* columns of `reports`: each backend they list, and each (backend, device) their results name."""
    found: List[str] = []
    for report in reports:
        names = [b["name"] for b in report.get("backends", [])]
        names += [_column(r) for r in report.get("results", [])]
        for name in names:
            if name.startswith(ENGINE_PREFIX) and name not in found:
                found.append(name)
    return sorted(found)


def verdict(records: List[Record]) -> Dict[str, Any]:
    """One function's verdict on one engine: its matrix cell, or not run."""
    ran = [r for r in records if r["status"] != Status.COULD_NOT_START.value]
    passed = sum(1 for r in records if r["status"] == Status.PASS.value)
    if not ran:
        why = " (its worker could not start)" if records else ""
        return {"status": None, "passed": 0, "total": len(records), "text": NOT_RUN + why}
    status = cell_status(records)
    assert status is not None
    return {
        "status": status,
        "passed": passed,
        "total": len(records),
        "text": f"{SYMBOLS[status]} {status} {passed}/{len(records)}",
    }


def table(keras3_map: Keras3Map, reports: Sequence[Record] = ()) -> Dict[str, Any]:
    """The migration table as data: rows in the spec's order, the engines, and the counts the page starts with."""
    columns = engines(reports)
    cells: Dict[Tuple[str, str], List[Record]] = {}
    for report in reports:
        for record in report.get("results", []):
            column = _column(record)
            if column in columns:
                cells.setdefault((record["op"], column), []).append(record)
    rows = []
    for row in keras3_map.rows:
        item = row.as_dict()
        item["verdicts"] = {engine: verdict(cells.get((row.op, engine), [])) for engine in columns}
        rows.append(item)
    per_engine = {
        engine: {
            "pass": sum(1 for r in rows if r["verdicts"][engine]["status"] == Status.PASS.value),
            "not_run": sum(1 for r in rows if r["verdicts"][engine]["status"] is None),
        }
        for engine in columns
    }
    return {
        "keras": keras3_map.keras,
        "functions": len(rows),
        "with_expression": sum(1 for r in rows if "keras3" in r),
        "without": sum(1 for r in rows if "none" in r),
        "engines": columns,
        "per_engine": per_engine,
        "reports": len(reports),
        "rows": rows,
    }


def _counts(data: Dict[str, Any]) -> List[str]:
    lines = [
        "{} functions of the Keras 2 backend API: {} with a Keras 3 expression, {} with no equivalent "
        "(keras {}).".format(data["functions"], data["with_expression"], data["without"], data["keras"])
    ]
    if not data["engines"]:
        reason = "no report was given" if not data["reports"] else "the report(s) hold no keras3-* engine"
        lines.append(f"No parity verdicts: {reason} (`kbtool report migration REPORT.json ...` adds them).")
    for engine in data["engines"]:
        counts = data["per_engine"][engine]
        lines.append(
            "{}: {} of {} functions pass as is, {} not run.".format(
                engine, counts["pass"], data["functions"], counts["not_run"]
            )
        )
    return lines


def _code(text: str) -> str:
    """A Markdown code span a table cell can hold (no backtick closes it early, no pipe splits the cell)."""
    return "`{}`".format(plain(text).replace("\n", " ").replace("`", "'").replace("|", "\\|"))


def _prose(text: str) -> str:
    """A note or reason for a Markdown cell: its `code` spans kept as code, everything else escaped."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code spans at all
        return _escape(text)
    return "".join(_code(part) if i % 2 else _escape(part) for i, part in enumerate(parts))


def render_markdown(data: Dict[str, Any]) -> str:
    lines = ["# Migrating K.* to Keras 3", ""]
    lines += [f"- {_prose(line)}" for line in _counts(data)] + [""]
    header = ["function", "Keras 3", "note"] + [_escape(e) for e in data["engines"]]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in data["rows"]:
        home = _code(row["keras3"]) if "keras3" in row else "no equivalent: " + _prose(row["none"])
        cells = [_code("K." + row["op"]), home, _prose(row.get("note", ""))]
        cells += [_escape(row["verdicts"][e]["text"]) for e in data["engines"]]
        lines.append("| " + " | ".join(cells) + " |")
    if data["engines"]:
        legend = ", ".join(f"{v} {k}" for k, v in SYMBOLS.items())
        lines += ["", f"Each verdict is the function's worst result on the engine, passed/total. Legend: {legend}; "]
        lines[-1] += f"{NOT_RUN}: none of its cases ran."
    return "\n".join(lines) + "\n"


def render_html(data: Dict[str, Any]) -> str:
    from kbtool.reports.html import _environment

    return (
        _environment()
        .get_template("migration.html.j2")
        .render(data=data, counts=_counts(data), symbols=SYMBOLS, not_run=NOT_RUN)
    )


def render(keras3_map: Keras3Map, reports: Sequence[Record] = (), fmt: Optional[str] = "markdown") -> str:
    data = table(keras3_map, reports)
    if fmt == "html":
        return render_html(data)
    if fmt == "markdown":
        return render_markdown(data)
    raise ValueError(fmt)
