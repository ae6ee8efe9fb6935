"""JSON: the report itself, stable key order."""

import json


def render(report):
    return json.dumps(report, indent=2, sort_keys=False) + "\n"
