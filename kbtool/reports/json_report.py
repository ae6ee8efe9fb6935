"""JSON: the report itself, stable key order, standard JSON (a non-finite number is the string "NaN",
"Infinity" or "-Infinity"; see report.py)."""

from typing import Any, Dict

from kbtool.reports.report import dumps


def render(report: Dict[str, Any]) -> str:
    return dumps(report)
