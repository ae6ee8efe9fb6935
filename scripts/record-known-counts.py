#!/usr/bin/env python3
"""Record each known difference's result count from a full run: rewrites only the `count:` values of
specs/known_differences.yaml (a text edit: comments, order and layout stay), for review in the diff.

    kbtool check -o /tmp/full.json            # the whole spec, every case, all four backends, default settings
    python scripts/record-known-counts.py /tmp/full.json [--file specs/known_differences.yaml]

The count of an entry is the number of results it explained (the report's `explained`); an entry the report does
not list targeted nothing and gets 0. An entry without a `count:` gets one, as its last line. The report must come
from a run whose counts are comparable: not interrupted, no --case/--mode/--examples/--keras-config filter, the
whole spec, every built-in backend available, and entries that line up with the file's (same op, backend, reason).
Exit 0 when written (or already current), 2 with a one-line reason otherwise.
"""

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from kbtool import files  # noqa: E402  (the checkout's kbtool, whatever is installed)
from kbtool.errors import KbtoolError  # noqa: E402


def comparable_problem(report, spec_ops):
    """Why the report's counts cannot be recorded (None when they can)."""
    if report.get("incomplete"):
        return "the run was interrupted ({})".format(report["incomplete"].get("note", ""))
    if report.get("filters"):
        return "the run was filtered ({}); record counts from a default full run".format(", ".join(report["filters"]))
    override = (report.get("keras_config") or {}).get("override")
    if override:
        return "the run overrode keras.json settings ({}); record counts from a default full run".format(
            ", ".join(f"{k}={v}" for k, v in sorted(override.items()))
        )
    if report.get("grid", "pairwise") != "pairwise":
        return "the run expanded the grids as {!r}, not the default 'pairwise'".format(report["grid"])
    ran = {b["name"] for b in report.get("backends", []) if b.get("status") == "available"}
    missing = [name for name in ("numpy", "tensorflow", "theano", "cntk") if name not in ran]
    if missing:
        return "backends not available in that run: {}".format(", ".join(missing))
    if spec_ops is not None and report.get("spec", {}).get("ops") != spec_ops:
        return "the run checked {} ops, the whole spec has {}".format(report.get("spec", {}).get("ops"), spec_ops)
    return None


def new_counts(report, entries):
    """{entry number: count} for every entry of the file; a KbtoolError when the report's entries do not line up."""
    counts = dict.fromkeys(range(1, len(entries) + 1), 0)
    for row in report.get("known_differences", []):
        number = row.get("entry")
        if number == "spec alias":
            continue
        if not isinstance(number, int) or not 0 < number <= len(entries):
            raise KbtoolError(f"the report names entry {number}, the file has {len(entries)} entries")
        entry = entries[number - 1]
        if any(row.get(key) != entry.get(key) for key in ("op", "backend", "reason")):
            raise KbtoolError(
                "entry {} of the report ({} on {}) is not entry {} of the file ({} on {}): run the "
                "check again with this file".format(
                    number, row.get("op"), row.get("backend"), number, entry.get("op"), entry.get("backend")
                )
            )
        counts[number] = row["explained"]
    return counts


def rewrite(text, root, counts):
    """`text` with each entry's count value replaced (or a count line added), by the positions YAML gives."""
    edits = []  # (start, end, replacement), applied from the end
    for number, node in enumerate(root.value, 1):
        value = next((v for k, v in node.value if getattr(k, "value", None) == "count"), None)
        if value is not None:
            edits.append((value.start_mark.index, value.end_mark.index, str(counts[number])))
        elif node.flow_style:  # {op: ..., reason: ...}: before the closing brace
            end = node.end_mark.index - 1
            edits.append((end, end, f", count: {counts[number]}"))
        else:  # a block mapping: a last line at the keys' indentation
            last = node.value[-1][1].end_mark
            at = last.index if last.column == 0 else text.find("\n", last.index) + 1 or len(text)
            indent = " " * node.value[0][0].start_mark.column
            line = f"{indent}count: {counts[number]}\n"
            edits.append((at, at, line if text[at - 1 : at] in ("\n", "") else "\n" + line))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", help="the JSON report of a full default `kbtool check`")
    parser.add_argument("--file", default=os.path.join(ROOT, "specs", "known_differences.yaml"))
    args = parser.parse_args(argv)
    try:
        return _record(args.report, args.file)
    except KbtoolError as exc:
        print(f"record-known-counts: {exc}", file=sys.stderr)
        return 2


def _record(report_path, path):
    from kbtool.plan import select_ops
    from kbtool.specs import loader

    try:
        with open(report_path, encoding="utf-8") as fh:
            report = json.load(fh)
    except (OSError, ValueError) as exc:
        raise KbtoolError(f"cannot read the report {report_path}: {exc}")
    if not isinstance(report, dict) or "known_differences" not in report:
        raise KbtoolError(f"{report_path} is not a kbtool check report (no known_differences)")
    problem = comparable_problem(report, len(select_ops(loader.load())))
    if problem:
        raise KbtoolError(f"{report_path}: {problem}")
    text = files.read_text(path)
    root, entries = files.parse_yaml(path, text)
    if entries is None or not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise KbtoolError(f"{path}: expected a list of entries")
    updated = rewrite(text, root, new_counts(report, entries))
    changed = updated != text
    if changed:
        files.write_atomic(path, updated)
    print("{}: {} entries, counts {}".format(path, len(entries), "recorded" if changed else "already current"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
