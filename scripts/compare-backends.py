#!/usr/bin/env python3
"""Where two backends of one report disagree: a Markdown table of every (op, case, mode) that passes on one and not
the other, or fails on both for different reasons, grouped by what each side's result says.

    python scripts/compare-backends.py reports/parity.json tensorflow1 tensorflow > reports/tensorflow1-vs-tensorflow.md

A result explained by a known difference is grouped under that entry's reason (its cause, checked against the
backend's source); an unexplained one under its status. Exit 2 with one line when the report lacks a backend.
"""

import argparse
import collections
import json
import sys


def outcome(result):
    """What a side says of one (op, case, mode): 'pass', or its known reason, or its status."""
    if result is None:
        return "not run"
    if result["status"] == "pass":
        return "pass"
    return result.get("known") or "{} (unexplained)".format(result["status"])


def disagreements(report, first, second):
    by_key = {}
    for r in report["results"]:
        if r["backend"] in (first, second):  # a case only one side runs (Theano's variants) has no counterpart
            by_key.setdefault((r["op"], r["case"], r["mode"]), {})[r["backend"]] = r
    groups = collections.OrderedDict()
    for key in sorted(by_key):
        a, b = by_key[key].get(first), by_key[key].get(second)
        if a is None or b is None:
            continue
        said = (outcome(a), outcome(b))
        if said[0] == said[1] or (a["status"] == b["status"] == "pass"):
            continue
        if a["status"] != "pass" and b["status"] != "pass" and a.get("known") and a.get("known") == b.get("known"):
            continue  # one entry names both: the same cause
        groups.setdefault(said, []).append(key)
    return groups


def render(groups, first, second, source):
    only_first = {k: v for k, v in groups.items() if k[1] == "pass"}
    only_second = {k: v for k, v in groups.items() if k[0] == "pass"}
    both = {k: v for k, v in groups.items() if "pass" not in k}
    total = sum(len(v) for v in groups.values())
    lines = [
        f"# {first} vs {second}",
        "",
        f"From `{source}`: {total} (op, case, mode) where the two disagree: {sum(map(len, only_first.values()))} do not pass on {first} only, {sum(map(len, only_second.values()))} on {second} only, {sum(map(len, both.values()))} on "
        "both for different reasons. Each side says `pass`, the reason of the known difference that explains its "
        "result, or its status.",
        "",
    ]
    for title, part, _side in (
        (f"Not passing on {first} only", only_first, 0),
        (f"Not passing on {second} only", only_second, 1),
        ("Not passing on either, for different reasons", both, None),
    ):
        if not part:
            continue
        lines += [
            f"## {title} ({sum(map(len, part.values()))})",
            "",
            f"| results | ops | {first} | {second} |",
            "|---|---|---|---|",
        ]
        for said, keys in sorted(part.items(), key=lambda item: -len(item[1])):
            ops = sorted({op for op, _, _ in keys})
            cells = [cell(text) for text in said]
            lines.append(
                "| {} | {} | {} | {} |".format(len(keys), ", ".join(ops[:6]) + (" …" if len(ops) > 6 else ""), *cells)
            )
        lines.append("")
    return "\n".join(lines)


def cell(text):
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text if len(text) <= 240 else text[:239] + "…"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("first")
    parser.add_argument("second")
    args = parser.parse_args(argv)
    try:
        with open(args.report) as fh:
            report = json.load(fh)
    except (OSError, ValueError) as exc:
        print(f"compare-backends: cannot read {args.report}: {exc}", file=sys.stderr)
        return 2
    names = {b["name"] for b in report.get("backends", [])}
    missing = [n for n in (args.first, args.second) if n not in names]
    if missing:
        print(
            "compare-backends: {} has no backend {} (it has {})".format(
                args.report, ", ".join(missing), ", ".join(sorted(names))
            ),
            file=sys.stderr,
        )
        return 2
    print(render(disagreements(report, args.first, args.second), args.first, args.second, args.report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
