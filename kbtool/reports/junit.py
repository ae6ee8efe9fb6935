"""JUnit XML: one testcase per op × case × backend × mode, for CI dashboards.

Known differences and unsupported functions are skipped (with the reason); a backend that could not start is a
suite with one erroring testcase, so a dashboard never shows it green; so is an interrupted (incomplete) check.
"""
import re
import xml.etree.ElementTree as ET

from ..results import BackendStatus, Status

# XML 1.0 cannot carry most control characters (a backend's message may hold ANSI colours or a NUL)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value):
    return _NOT_XML.sub("\ufffd", str(value))


def render(report):
    suites = ET.Element("testsuites", name="kbtool")
    by_backend = {}
    for record in report["results"]:
        by_backend.setdefault(record["backend"], []).append(record)
    for backend, records in by_backend.items():
        suite = ET.SubElement(suites, "testsuite", name="kbtool.{}".format(backend), tests=str(len(records)))
        failures = errors = skipped = 0
        for r in records:
            case = ET.SubElement(suite, "testcase", classname=_text("kbtool.{}.{}".format(backend, r["op"])),
                                 name=_text("{}[{}]".format(r["case"], r["mode"])), time="{:.4f}".format(r["seconds"]))
            if r["status"] == Status.PASS.value:
                continue
            if r.get("known"):
                skipped += 1
                ET.SubElement(case, "skipped", message=_text("known difference: {}".format(r["known"])))
            elif r["status"] == Status.UNSUPPORTED.value:
                skipped += 1
                ET.SubElement(case, "skipped", message=_text(r["message"]))
            elif r["status"] == Status.FAIL.value:
                failures += 1
                ET.SubElement(case, "failure", message=_text(r["message"])).text = _text(r.get("repro", ""))
            else:
                errors += 1
                ET.SubElement(case, "error", message=_text("{}: {}".format(r["status"], r["message"]))).text = _text(
                    r.get("repro", ""))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        suite.set("skipped", str(skipped))
    for backend in report["backends"]:
        if backend["status"] == BackendStatus.BROKEN.value and backend["name"] not in by_backend:
            suite = ET.SubElement(suites, "testsuite", name=_text("kbtool.{}".format(backend["name"])), tests="1",
                                  failures="0", errors="1", skipped="0")
            case = ET.SubElement(suite, "testcase", classname=_text("kbtool.{}".format(backend["name"])), name="start")
            ET.SubElement(case, "error", message=_text("could not start: {}".format(backend.get("reason", ""))))
    incomplete = report.get("incomplete")
    if incomplete:  # an interrupted check: a dashboard must not show the results that ran as the whole story
        suite = ET.SubElement(suites, "testsuite", name="kbtool.incomplete", tests="1", failures="0", errors="1",
                              skipped="0")
        case = ET.SubElement(suite, "testcase", classname="kbtool.incomplete", name="interrupted")
        ET.SubElement(case, "error", message=_text(incomplete["note"]))
    return ET.tostring(suites, encoding="unicode") + "\n"
