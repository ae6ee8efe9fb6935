"""JUnit XML of a models report, for CI dashboards: one testsuite per engine, one testcase per model × engine.

Counted as the exit code counts: pass passes; known (explained by a known difference), unsupported and not compared
(no oracle to compare with) are <skipped> with the reason; unexplained is a <failure> naming the layer and the K.*
call; error is an <error>. An engine that could not start is an erroring testcase of its suite; one that is not
installed or cannot run models is a skipped one, so a dashboard shows it was not run."""

import xml.etree.ElementTree as ET
from typing import Dict, List, Optional, Tuple

from kbtool.models import report as models_report
from kbtool.reports.junit import _Suite, _timestamp

Record = models_report.Record


def _outcome(record: Record) -> Tuple[Optional[str], str]:
    verdict = record["verdict"]
    if verdict == "pass":
        return None, ""
    if verdict == "unexplained":
        return "failure", models_report.finding_text(record)
    if verdict == "error":
        return "error", record.get("reason") or "error"
    if verdict == "known":
        return "skipped", "known difference: " + models_report.finding_text(record)
    if verdict == "not_compared":
        return "skipped", "not compared: " + (record.get("reason") or "no oracle for this model")
    return "skipped", f"{verdict}: {record.get('reason', '')}"


def _text(record: Record) -> str:
    lines = []
    for key in ("forward", "gradient"):
        diff = record.get(key)
        if diff:
            lines.append(
                "{}: max abs {}, max rel {}, MAD {} (threshold {}){}".format(
                    key,
                    diff["max_abs"],
                    diff["max_rel"],
                    diff["mad"],
                    diff["threshold"],
                    ", inconsistent" if diff["inconsistent"] else "",
                )
            )
    lines.append(f"oracle: {record['oracle']}")
    return "\n".join(lines)


def render(report: Record) -> str:
    timestamp = _timestamp(report.get("created"))
    suites = ET.Element("testsuites", name="kbtool models")
    by_engine: Dict[str, List[Record]] = {}
    for record in report["results"]:
        by_engine.setdefault(record["engine"], []).append(record)
    for engine in report["engines"]:
        suite = _Suite(suites, f"kbtool.models.{engine['name']}", timestamp)
        for key in ("status", "device"):
            suite.property(key, engine.get(key))
        suite.property("versions", engine.get("versions"))
        suite.property("seed", report["settings"]["seed"])
        suite.property("kbtool", report.get("kbtool"))
        if engine["status"] == "broken":
            suite.case(f"models.{engine['name']}", "(start)", outcome="error", message=engine.get("reason", ""))
        elif engine["status"] != models_report.RAN:
            suite.case(
                f"models.{engine['name']}",
                "(not run)",
                outcome="skipped",
                message=f"{engine['status']}: {engine.get('reason', '')}",
            )
        for record in by_engine.pop(engine["name"], []):
            outcome, message = _outcome(record)
            suite.case(
                f"models.{engine['name']}",
                record["model"],
                float(record.get("seconds") or 0.0),
                outcome,
                message,
                _text(record) if outcome else "",
            )
        suite.close()
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for element in suites:
        for key in totals:
            totals[key] += int(element.get(key, "0"))
    for key, value in totals.items():
        suites.set(key, str(value))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
