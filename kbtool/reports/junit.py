"""JUnit XML for CI dashboards: one testsuite per backend, one testcase per op × case × mode.

Counted as the CLI counts (summary.ok, the exit code):

    pass                                  a passing testcase
    explained by a known difference       <skipped> with the reason (under --strict an unsupported one fails)
    unsupported, not explained            <failure> (a divergence, as the CLI says)
    fail                                  <failure>
    error, crash, timeout, could_not_start <error>
    not_reached                           <error> "not reached: <error>" (the case's inputs could not be made, so
                                          the op never ran); explained, <skipped> "not reached, known difference: ..."

A backend that could not start is an erroring testcase of its suite (beside the results it has, if any); one that
is not installed is a skipped testcase, so a dashboard shows it was not run. A stale known difference is a failing
testcase of the suite `kbtool.known_differences`; an interrupted check is an
erroring suite of its own. Each suite carries its time (the sum of its cases' seconds), the report's timestamp and
<properties>: the backend's pass as is (`pass_as_is`: pass / results that ran, as every view's headline), its
versions, python and module, the keras.json settings that ran, the seed, kbtool's version. What a backend or the reference printed while a case ran goes to that testcase's <system-out>.
"""

import datetime
import json
import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Optional, Tuple

from kbtool.reports.summary import pass_as_is, pass_as_is_text, release_pins, release_versions
from kbtool.results import DID_NOT_RUN, BackendStatus, Status
from kbtool.specs import call

Record = Dict[str, Any]  # a report, or one of its records, as JSON data

# XML 1.0 cannot carry most control characters (a backend's message may hold ANSI colours or a NUL)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: Any) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def _timestamp(created: Any) -> Optional[str]:
    """JUnit's timestamp: ISO 8601 without a zone (the schema's xs:dateTime pattern), in UTC."""
    try:
        moment = datetime.datetime.fromisoformat(str(created))
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment.isoformat(timespec="seconds")


def _seconds(value: float) -> str:
    return f"{value:.3f}"


class _Suite:
    """One <testsuite> being filled: its counts follow the testcases added."""

    def __init__(self, parent: ET.Element, name: str, timestamp: Optional[str]) -> None:
        self.element = ET.SubElement(parent, "testsuite", name=_text(name))
        if timestamp:
            self.element.set("timestamp", timestamp)
        self.properties = ET.SubElement(self.element, "properties")
        self.counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        self.time = 0.0

    def property(self, name: str, value: Any) -> None:
        if value is None or value == "":
            return
        if not isinstance(value, str):
            value = json.dumps(value, sort_keys=True)
        ET.SubElement(self.properties, "property", name=_text(name), value=_text(value))

    def case(
        self,
        classname: str,
        name: str,
        seconds: float = 0.0,
        outcome: Optional[str] = None,
        message: str = "",
        text: str = "",
        output: str = "",
    ) -> ET.Element:
        """A testcase; `outcome` is None (passed), "failure", "error" or "skipped"."""
        case = ET.SubElement(
            self.element, "testcase", classname=_text(classname), name=_text(name), time=_seconds(seconds)
        )
        self.counts["tests"] += 1
        self.time += seconds
        if outcome is not None:
            self.counts["skipped" if outcome == "skipped" else outcome + "s"] += 1
            child = ET.SubElement(case, outcome, message=_text(message))
            if text:
                child.text = _text(text)
        if output:
            ET.SubElement(case, "system-out").text = _text(output)
        return case

    def close(self) -> None:
        if not len(self.properties):
            self.element.remove(self.properties)
        for key, value in self.counts.items():
            self.element.set(key, str(value))
        self.element.set("time", _seconds(self.time))


def _outcome(record: Record, strict: bool) -> Tuple[Optional[str], str]:
    """(outcome, message) of one result, as the CLI counts it."""
    status = record["status"]
    if status == Status.PASS.value:
        return None, ""
    if status == Status.NOT_REACHED.value:
        if record.get("known"):
            return "skipped", "not reached, known difference: {}".format(record["known"])
        return "error", "not reached: {}".format(record["message"])
    if record.get("known"):
        if strict and status == Status.UNSUPPORTED.value:
            return "failure", "unsupported (--strict fails it, known difference or not): {}".format(record["message"])
        return "skipped", "known difference: {}".format(record["known"])
    if status == Status.CHANGED.value:
        change = record["changed"]
        return "failure", "changed known result (entry {}): recorded {}; now {}".format(
            change["entry"], change["recorded"], change["now"]
        )
    if status == Status.NONDETERMINISTIC.value:  # a divergence of the backend's own runs: a failure, not an error
        return "failure", "nondeterministic: {}".format(record["message"])
    if status in (Status.FAIL.value, Status.UNSUPPORTED.value):
        return "failure", record["message"] if status == Status.FAIL.value else "unsupported: {}".format(
            record["message"]
        )
    return "error", "{}: {}".format(status, record["message"])


def _text_of(record: Record, outcome: Optional[str]) -> str:
    """A non-passing testcase's text: the call its case made (every non-pass), then the repro (failures and
    errors: a known difference is skipped, nothing to rerun)."""
    lines = [call.text_of(record)] if outcome is not None else []
    if outcome in ("failure", "error"):
        lines.append(record.get("repro", ""))
    return "\n".join(line for line in lines if line)


def _output(record: Record) -> str:
    captured = record.get("captured") or {}
    return "\n".join(f"{side} printed:\n{captured[side]}" for side in ("reference", "backend") if captured.get(side))


def _common_properties(suite: _Suite, report: Record) -> None:
    suite.property("kbtool", report.get("kbtool"))
    suite.property("seed", report.get("seed"))
    suite.property("grid", report.get("grid"))
    if report.get("filters"):
        suite.property("filters", " ".join(report["filters"]))
    config = report.get("keras_config") or {}
    if config.get("override"):
        suite.property("keras_config.override", config["override"])
    for key, value in sorted((config.get("values") or {}).items()):
        suite.property(f"keras.json.{key}", value)
    for key, source in sorted((config.get("source") or {}).items()):
        suite.property(f"keras.json.{key}.source", source)
    if config.get("ran"):
        suite.property("keras_config.ran", config["ran"])
    if report.get("active_backend"):
        suite.property("active_backend", report["active_backend"])


def render(report: Record) -> str:
    strict = bool((report.get("summary") or {}).get("strict"))
    timestamp = _timestamp(report.get("created"))
    suites = ET.Element("testsuites", name="kbtool")
    by_backend: Dict[str, List[Record]] = {}
    for record in report["results"]:
        by_backend.setdefault(record["backend"], []).append(record)
    infos = {b["name"]: b for b in report["backends"]}
    names = [b["name"] for b in report["backends"]] + [n for n in by_backend if n not in infos]
    releases = release_versions(report)
    closed = []
    for backend in names:
        info = infos.get(backend, {"name": backend, "status": BackendStatus.AVAILABLE.value})
        suite = _backend_suite(suites, timestamp, report, info, releases)
        _backend_cases(suite, info, by_backend.get(backend, []), strict)
        closed.append(suite)
    closed.extend(_run_suites(suites, timestamp, report))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    time = 0.0
    for suite in closed:
        suite.close()
        for key in totals:
            totals[key] += suite.counts[key]
        time += suite.time
    for key, value in totals.items():
        suites.set(key, str(value))
    suites.set("time", _seconds(time))
    return ET.tostring(suites, encoding="unicode") + "\n"


def _on_device(info: Record) -> str:
    """' (gpu)' after a name on a device other than the CPU ('' on the CPU: a CPU run's names as they always were)."""
    device = info.get("device")
    return f" ({device})" if device and device != "cpu" else ""


def _backend_suite(
    suites: ET.Element, timestamp: Optional[str], report: Record, info: Record, releases: Dict[str, str]
) -> "_Suite":
    """A backend's testsuite with its properties: how it ran, its versions, the run's settings."""
    backend = info["name"]
    suite = _Suite(suites, f"kbtool.{backend}{_on_device(info)}", timestamp)
    suite.property("device", info.get("device"))
    suite.property("backend.status", info.get("status"))
    suite.property("python", info.get("python"))
    suite.property("module", info.get("module"))
    for package, version in sorted((info.get("versions") or {}).items()):
        suite.property(f"version.{package}", version)
    release = release_pins(backend)
    if release is not None:  # a release backend: its base and the versions that tell it from the base
        suite.property("release.base", release[0])
        suite.property("release.versions", releases.get(backend))
    for key in ("import_seconds", "restarts", "workers"):
        suite.property(key, info.get(key))
    _common_properties(suite, report)
    return suite


def _backend_cases(suite: "_Suite", info: Record, records: List[Record], strict: bool) -> None:
    """A backend's testcases: its start when it did not start or run, its unsupported modes, one per result."""
    backend, on_device = info["name"], _on_device(info)
    if records:  # the headline of every view: pass / results that ran, e.g. "57.4 % (752/1310)"
        ran = [r for r in records if r["status"] != Status.COULD_NOT_START.value]
        passed = sum(1 for r in ran if r["status"] == Status.PASS.value)
        suite.property("pass_as_is", pass_as_is_text(pass_as_is(passed, len(ran))))
    if info.get("status") == BackendStatus.BROKEN.value:  # could not start: never green, results or not
        suite.case(
            f"kbtool.{backend}",
            "start",
            outcome="error",
            message="could not start: {}".format(info.get("reason", "")),
            output=info.get("start_output", ""),
        )
    elif info.get("status") in DID_NOT_RUN and not records:
        suite.case(
            f"kbtool.{backend}", "start", outcome="skipped", message="not run: {}".format(info.get("reason", ""))
        )
    for mode, why in sorted((info.get("unsupported_modes") or {}).items()):  # one testcase, not one per case
        suite.case(f"kbtool.{backend}", f"{mode} mode", outcome="skipped", message=f"{mode} mode unsupported: {why}")
    for r in records:
        outcome, message = _outcome(r, strict)
        suite.case(
            "kbtool.{}.{}".format(backend, r["op"]),
            "{}[{}]{}".format(r["case"], r["mode"], on_device),
            r["seconds"],
            outcome,
            message,
            text=_text_of(r, outcome),
            output=_output(r),
        )


def _run_suites(suites: ET.Element, timestamp: Optional[str], report: Record) -> List["_Suite"]:
    """The run's own testsuites: its stale known differences (each a failure), and an interrupted check."""
    closed = []
    stale = report.get("stale_known_differences") or []
    if stale:
        suite = _Suite(suites, "kbtool.known_differences", timestamp)
        for entry in stale:
            suite.case(
                "kbtool.known_differences",
                "stale known difference: {} {} on {}".format(
                    _names(entry.get("op")), entry.get("case", "*"), _names(entry.get("backend"))
                ),
                outcome="failure",
                message="{} ({})".format(entry.get("reason", ""), entry.get("note", "")),
            )
        closed.append(suite)
    incomplete = report.get("incomplete")
    if incomplete:  # an interrupted check: a dashboard must not show the results that ran as the whole story
        suite = _Suite(suites, "kbtool.incomplete", timestamp)
        suite.case("kbtool.incomplete", "interrupted", outcome="error", message=incomplete["note"])
        closed.append(suite)
    return closed


def _names(value: Any) -> str:
    return ", ".join(value) if isinstance(value, list) else str(value)
