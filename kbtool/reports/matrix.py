"""The op × backend parity matrix that the terminal, Markdown and HTML views share."""

from typing import Any, Dict, List, Optional, Tuple

from kbtool.reports.summary import count_word
from kbtool.results import OPTIONAL_STATUSES, SEVERITY, Status
from kbtool.results import SYMBOLS as SYMBOLS  # the views' legend

_RANK = [str(s) for s in SEVERITY]


def present(report: Dict[str, Any], words: List[str]) -> List[str]:
    """`words` (status words), less the statuses only --repeat makes where the report has none (views list those
    only where they occur)."""
    found = {r["status"] for r in report.get("results", [])} & set(OPTIONAL_STATUSES)
    return [w for w in words if w not in OPTIONAL_STATUSES or w in found]


def symbols(report: Dict[str, Any]) -> Dict[str, str]:
    """The legend's symbols for this report (SYMBOLS, less statuses it cannot have: see `present`)."""
    return {k: SYMBOLS[k] for k in present(report, list(SYMBOLS))}


def cell_status(records: List[Dict[str, Any]]) -> Optional[str]:
    """Worst status among one op's records on one backend ('known' when explained)."""
    statuses: List[str] = [count_word(r) for r in records]
    return max(statuses, key=_RANK.index) if statuses else None


def build(report: Dict[str, Any]) -> Tuple[List[str], List[Dict[str, Any]]]:
    backends = [b["name"] for b in report["backends"]]
    ops: List[str] = []
    cells: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for record in report["results"]:
        if record["op"] not in ops:
            ops.append(record["op"])
        cells.setdefault((record["op"], record["backend"]), []).append(record)
    rows = []
    for op in ops:
        row: Dict[str, Any] = {"op": op, "cells": {}}
        for backend in backends:
            records = cells.get((op, backend), [])
            status = cell_status(records)
            passed = sum(1 for r in records if r["status"] == Status.PASS.value)
            row["cells"][backend] = {"status": status, "passed": passed, "total": len(records)}
        rows.append(row)
    return backends, rows


def problems(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [r for r in report["results"] if r["status"] != Status.PASS.value]


def doc_claims(report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """What each doc version shows for an example, and on which backends it held (any mode).

    Returns rows: {op, case, docs, shown, holds: [backends], fails: [backends]}.
    """
    rows: Dict[Tuple[str, str, Tuple[str, ...]], Dict[str, Any]] = {}
    for record in report["results"]:
        for verdict in record.get("doc_check", []):
            key = (record["op"], record["case"], tuple(verdict["docs"]))
            row = rows.setdefault(
                key,
                {
                    "op": record["op"],
                    "case": record["case"],
                    "docs": verdict["docs"],
                    "shown": verdict.get("shown", ""),
                    "holds": [],
                    "fails": [],
                },
            )
            bucket = row["holds"] if verdict["matches"] else row["fails"]
            if verdict["matches"] is not None and record["backend"] not in bucket:
                bucket.append(record["backend"])
    for row in rows.values():
        row["holds"] = [b for b in row["holds"] if b not in row["fails"]]
    return list(rows.values())
