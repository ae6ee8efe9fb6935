#!/usr/bin/env python3
"""Record each case's time from a full run, for `kbtool check --shard K/N` to balance its parts by.

    kbtool check -o /tmp/full.json                  # the whole spec, every backend you shard over
    python scripts/record-timings.py /tmp/full.json [--file specs/timings.json]

Writes {op: {case: seconds}} (sorted, 4 decimals): a case's seconds are the sum of its results' over backends and
modes, its backend variants included (Theano's `.kernel_flipped` results run in the shard of their case). The
partition depends only on this file and the planned cases, so every machine of a sharded run must use the same
file: commit it. Exit 0 when written, 2 with a one-line reason otherwise (an interrupted or filtered run, a file
that is not a kbtool report).
"""

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kbtool import files  # noqa: E402  (the checkout's kbtool, whatever is installed)
from kbtool.errors import KbtoolError  # noqa: E402
from kbtool.known import variant_suffixes  # noqa: E402
from kbtool.reports.load import read_report  # noqa: E402


def timings(report):
    """{op: {case: seconds}} of a report's results, variants counted in their case."""
    per_op = {}
    for record in report["results"]:
        op, case = record["op"], record["case"]
        for suffix in variant_suffixes(op):
            if case.endswith(suffix):
                case = case[: -len(suffix)]
                break
        cases = per_op.setdefault(op, {})
        cases[case] = cases.get(case, 0.0) + float(record["seconds"])
    return {op: {case: round(s, 4) for case, s in sorted(cases.items())} for op, cases in sorted(per_op.items())}


def problem(report):
    """Why the report's times would mislead the partition (None when they would not)."""
    if report.get("incomplete"):
        return "the run was interrupted ({})".format(report["incomplete"].get("note", ""))
    if report.get("filters"):
        return "the run was filtered ({}); record times from a full run".format(", ".join(report["filters"]))
    if not report["results"]:
        return "the report holds no result"
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", help="a full run's JSON report (kbtool check -o FILE.json)")
    parser.add_argument("--file", default=os.path.join(ROOT, "specs", "timings.json"), help="the timings file")
    args = parser.parse_args(argv)
    try:
        report = read_report(args.report)
        why = problem(report)
        if why:
            raise KbtoolError(f"{args.report}: {why}")
        data = timings(report)
        files.write_atomic(args.file, json.dumps(data, indent=1, sort_keys=True) + "\n")
    except (KbtoolError, OSError) as exc:
        print(f"record-timings: error: {exc}", file=sys.stderr)
        return 2
    print(
        f"{args.file}: {sum(len(c) for c in data.values())} cases of {len(data)} ops, {sum(sum(c.values()) for c in data.values()):.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
