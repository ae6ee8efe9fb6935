"""JUnit XML: one testcase per op × case × backend × mode, for CI dashboards."""
import xml.etree.ElementTree as ET


def render(report):
    suites = ET.Element("testsuites", name="kbtool")
    by_backend = {}
    for record in report["results"]:
        by_backend.setdefault(record["backend"], []).append(record)
    for backend, records in by_backend.items():
        suite = ET.SubElement(suites, "testsuite", name="kbtool.{}".format(backend), tests=str(len(records)))
        failures = errors = skipped = 0
        for r in records:
            case = ET.SubElement(suite, "testcase", classname="kbtool.{}.{}".format(backend, r["op"]),
                                 name="{}[{}]".format(r["case"], r["mode"]), time="{:.4f}".format(r["seconds"]))
            if r["status"] == "pass":
                continue
            if r.get("known"):
                skipped += 1
                ET.SubElement(case, "skipped", message="known difference: {}".format(r["known"]))
            elif r["status"] == "unsupported":
                skipped += 1
                ET.SubElement(case, "skipped", message=r["message"])
            elif r["status"] == "fail":
                failures += 1
                ET.SubElement(case, "failure", message=r["message"]).text = r.get("repro", "")
            else:
                errors += 1
                ET.SubElement(case, "error", message="{}: {}".format(r["status"], r["message"])).text = r.get("repro", "")
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        suite.set("skipped", str(skipped))
    return ET.tostring(suites, encoding="unicode") + "\n"
