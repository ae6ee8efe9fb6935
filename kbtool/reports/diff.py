"""`kbtool report diff OLD.json NEW.json`: what changed between two runs, per op × backend, and whether it got worse
(the check before and after upgrading a backend).

OLD is the baseline, NEW the run. By default only what the run ran is judged: the results both reports hold (by op ×
case × backend × mode), the backends both name, and the results only the run has; the results only the baseline has
are counted, not compared (a partial run is not a regression). `full` compares everything, as a whole run should.

A result's word is `known` when a known difference explains it, else its status; a result is unexplained when it
is neither a pass nor explained. Between the two reports each op × case × backend × mode is:

    new failure    pass or known before, unexplained now (or only in NEW, and unexplained)
    fixed          unexplained before, pass now
    changed        any other change of word (fail → error, pass → known, known → pass, unexplained → known)
    no longer run  only in OLD (compared with `full` only)
    new            only in NEW, and pass or known

Besides: backend version and start-up changes, each known difference's explained count (by default: over the
shared results), entries stale in NEW that were not in OLD. Worse (exit 1): a new failure (a known result that
changed is one; so is a result only in NEW that is unexplained: no baseline vouches for it), a backend that no
longer starts, a newly stale entry, and with `full` a result no longer run. Two reports that share no result are
never compared: the verdict is `nothing compared`, and exit 1.
"""

import json
import textwrap
from collections import Counter
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from kbtool.reports.text import markdown, plain, plural
from kbtool.results import BackendStatus, Status

Record = Dict[str, Any]  # a report, or one of its records, as JSON data
Key = Tuple[str, str, str, str]  # (op, case, backend, mode): one result in both reports

KINDS = ("new_failure", "fixed", "changed", "no_longer_run", "new")
TITLES = {
    "new_failure": "new failure",  # (tallies say "new failures" for more than one)
    "fixed": "fixed",
    "changed": "changed",
    "no_longer_run": "no longer run",
    "new": "new",
}
LISTED = 10  # result lines per op × backend in the human output (-o diff.md and --json list all)
GROUPS = 30  # op × backend pairs listed in the human output (those with a new failure first)
ROWS = 40  # result lines listed in the human output, all pairs together
MESSAGE_LINES = 2  # lines of a result's message in the human output
ENTRIES = 10  # known differences whose counts changed, listed in the human output
WORSE, NOT_WORSE, NOTHING = "worse", "not worse", "nothing compared"  # the verdicts


def word(record: Record) -> str:
    return "known" if record.get("known") else record["status"]


def unexplained(record: Record) -> bool:
    return record["status"] != Status.PASS.value and not record.get("known")


def _key(record: Record) -> Key:
    return record["op"], record["case"], record["backend"], record["mode"]


def diff(old: Record, new: Record, full: bool = False) -> Record:
    """The differences between two reports, as a JSON-able dict; `worse` says whether exit code 1 is due, `verdict`
    says why in words (worse, not worse, nothing compared), `scope` what was compared."""
    before = {_key(r): r for r in old["results"]}
    after = {_key(r): r for r in new["results"]}
    shared = before.keys() & after.keys()
    rows = []
    for key, record in after.items():
        previous = before.get(key)
        kind = _kind(previous, record)
        if kind:
            rows.append(_row(key, kind, previous, record))
    if full:
        rows.extend(_row(key, "no_longer_run", record, None) for key, record in before.items() if key not in after)
    order = _backend_order(old, new)
    rows.sort(
        key=lambda row: (
            row["op"],
            order.get(row["backend"], len(order)),
            KINDS.index(row["kind"]),
            row["case"],
            row["mode"],
        )
    )
    backends = _backend_changes(old, new, full)
    counts = _count_changes(old, new) if full else _shared_count_changes(old, new, before, after, shared)
    stale = _new_items(old["stale_known_differences"], new["stale_known_differences"], _entry_key)
    worse = (
        any(row["kind"] in ("new_failure", "no_longer_run") for row in rows)
        or any(change["worse"] for change in backends)
        or bool(stale)
    )
    return {
        "worse": worse or not shared,  # two reports that share no result are never green
        "verdict": NOTHING if not shared else WORSE if worse else NOT_WORSE,
        "scope": {
            "full": full,
            "compared": len(shared),
            "baseline_only": len(before) - len(shared),
            "run_only": len(after) - len(shared),
        },
        "notes": _notes(old, new),
        "results": rows,
        "counts": {kind: sum(1 for row in rows if row["kind"] == kind) for kind in KINDS},
        "backends": backends,
        "known_counts": counts,
        "new_stale": stale,
    }


def _kind(previous: Optional[Record], record: Record) -> Optional[str]:
    if previous is None:
        return "new_failure" if unexplained(record) else "new"
    if word(previous) == word(record):
        return None
    if unexplained(record) and not unexplained(previous):
        return "new_failure"
    if unexplained(previous) and record["status"] == Status.PASS.value:
        return "fixed"
    return "changed"


def _row(key: Tuple[str, str, str, str], kind: str, previous: Optional[Record], record: Optional[Record]) -> Record:
    op, case, backend, mode = key
    row = {
        "op": op,
        "case": case,
        "backend": backend,
        "mode": mode,
        "kind": kind,
        "old": word(previous) if previous else None,
        "new": word(record) if record else None,
    }
    latest: Record = record or previous or {}  # one of them is a record
    if latest["status"] != Status.PASS.value:
        row["message"] = latest.get("message", "")
    return row


def _backend_order(old: Record, new: Record) -> Dict[str, int]:
    names = [b["name"] for b in new["backends"]] + [b["name"] for b in old["backends"]]
    return {name: i for i, name in enumerate(dict.fromkeys(names))}


def _backend_changes(old: Record, new: Record, full: bool) -> List[Record]:
    """Per backend: versions that changed, and whether it started in each run (not starting any more is worse).
    Without `full`, the backends the run names: one only the baseline names was not run, not lost."""
    before = {b["name"]: b for b in old["backends"]}
    after = {b["name"]: b for b in new["backends"]}
    changes = []
    for name in dict.fromkeys(list(before) + list(after)) if full else after:
        a, b = before.get(name), after.get(name)
        status_a = a["status"] if a else "absent"
        status_b = b["status"] if b else "absent"
        versions_a = (a or {}).get("versions") or {}
        versions_b = (b or {}).get("versions") or {}
        started_a = status_a == BackendStatus.AVAILABLE.value
        started_b = status_b == BackendStatus.AVAILABLE.value
        versions = {
            pkg: [versions_a.get(pkg), versions_b.get(pkg)]
            for pkg in dict.fromkeys(list(versions_a) + list(versions_b))
            if versions_a.get(pkg) != versions_b.get(pkg) and started_a and started_b
        }
        if status_a != status_b or versions:
            changes.append(
                {
                    "backend": name,
                    "old_status": status_a,
                    "new_status": status_b,
                    "versions": versions,
                    "worse": started_a and not started_b,
                }
            )
    return changes


def _entry_key(row: Record) -> str:
    return json.dumps([row.get("op"), row.get("backend"), row.get("case"), row.get("reason")], sort_keys=True)


def _count_changes(old: Record, new: Record) -> List[Record]:
    """Known differences whose explained count changed (an entry only in one report counts 0 in the other)."""
    before, after = _numbered(old.get("known_differences", [])), _numbered(new.get("known_differences", []))
    changes = []
    for key in dict.fromkeys(list(after) + list(before)):
        a, b = before.get(key), after.get(key)
        was, now = (a or {}).get("explained", 0), (b or {}).get("explained", 0)
        if was != now:
            row: Record = b or a or {}  # one of them is a row
            changes.append(
                {
                    "entry": row["entry"],
                    "op": row["op"],
                    "backend": row["backend"],
                    "reason": row["reason"],
                    "old": was,
                    "new": now,
                }
            )
    return changes


def _shared_count_changes(
    old: Record, new: Record, before: Dict[Key, Record], after: Dict[Key, Record], shared: Iterable[Key]
) -> List[Record]:
    """Known differences whose explained count changed over the results both reports hold: each result counts
    for the known difference it names (its `known`), which is described by the first entry of either report with
    that reason (the baseline's counts span what the run did not run, so its stored counts are not compared)."""
    was: Counter[str] = Counter()
    now: Counter[str] = Counter()
    labels: Dict[str, Any] = {}
    for key in shared:
        for counter, record in ((was, before[key]), (now, after[key])):
            if record.get("known"):
                label = _label(record["known"])
                labels[label] = record["known"]
                counter[label] += 1
    rows = {_label(row.get("reason")): row for row in old.get("known_differences", [])}
    rows.update({_label(row.get("reason")): row for row in new.get("known_differences", [])})
    changes = []
    for label in sorted(set(was) | set(now)):
        if was[label] != now[label]:
            row = rows.get(label) or {}
            changes.append(
                {
                    "entry": row.get("entry", "?"),
                    "op": row.get("op", "?"),
                    "backend": row.get("backend", "?"),
                    "reason": row.get("reason", labels[label]),
                    "old": was[label],
                    "new": now[label],
                }
            )
    return changes


def _label(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _numbered(rows: Iterable[Record]) -> Dict[Tuple[str, int], Record]:
    """Rows by entry key; rows with the same key (entries that differ only in case or match) by occurrence."""
    out: Dict[Tuple[str, int], Record] = {}
    seen: Dict[str, int] = {}
    for row in rows:
        key = _entry_key(row)
        seen[key] = seen.get(key, 0) + 1
        out[(key, seen[key])] = row
    return out


def _new_items(old_items: Iterable[Any], new_items: Iterable[Any], key: Callable[[Any], Any]) -> List[Any]:
    seen = {key(item) for item in old_items}
    return [item for item in new_items if key(item) not in seen]


def _notes(old: Record, new: Record) -> List[str]:
    notes = []
    if (old.get("spec") or {}).get("sha256") != (new.get("spec") or {}).get("sha256"):
        notes.append("the spec differs between the runs")
    for field, what in (("seed", "seed"), ("grid", "grid")):
        if old.get(field) != new.get(field):
            notes.append(f"the {what} differs: {old.get(field)} vs {new.get(field)}")
    if (old.get("keras_config") or {}).get("override") != (new.get("keras_config") or {}).get("override"):
        notes.append("the --keras-config override differs")
    return notes


def empty(found: Record) -> bool:
    return not (found["results"] or found["backends"] or found["known_counts"] or found["new_stale"])


def scope_line(found: Record) -> str:
    """What was compared, in one line: the results both reports hold, and those only one of them has."""
    scope = found["scope"]
    if scope["full"]:
        return "compared all: {} both ran, {} only in the baseline, {} only in the run".format(
            scope["compared"], scope["baseline_only"], scope["run_only"]
        )
    return "compared {} both ran; {} more in the baseline, {} more in the run".format(
        plural(scope["compared"], "result"), scope["baseline_only"], scope["run_only"]
    )


def verdict_line(found: Record) -> str:
    """The last line: `worse: ...`, `not worse: ...` or `nothing compared: ...`."""
    scope = found["scope"]
    if found["verdict"] == NOTHING:
        return "{}: the run ({}) shares none with the baseline ({})".format(
            NOTHING, plural(scope["compared"] + scope["run_only"], "result"), scope["baseline_only"]
        )
    if empty(found):
        return "{}: no difference in the {} both ran".format(found["verdict"], plural(scope["compared"], "result"))
    tally = _counted(found["counts"]) or "no result changed"
    return "{}: {}".format(found["verdict"], tally)


def render_text(found: Record, old_name: str = "OLD", new_name: str = "NEW", width: int = 80) -> str:
    """The human output, no line wider than `width`: notes, per op × backend its changes (at most GROUPS pairs,
    those with a new failure first, and LISTED lines each; whole pairs no longer run or new are one line per
    backend), backends and known differences, the scope line, then one verdict line. Two reports that share no
    result: the verdict line alone. `old_name` and `new_name` are kept for callers; the lines say baseline and
    run, which fit."""
    if found["verdict"] == NOTHING:
        return _fitted([verdict_line(found)], width)
    lines = [f"note: {note}" for note in found["notes"]]
    if not empty(found):
        lines.extend(_result_lines(found, width))
        lines.extend(_other_lines(found, width))
    lines.extend([scope_line(found), verdict_line(found)])
    return _fitted(lines, width)


def _groups(rows: Iterable[Record]) -> Dict[Tuple[str, str], List[Record]]:
    groups: Dict[Tuple[str, str], List[Record]] = {}
    for row in rows:
        groups.setdefault((row["op"], row["backend"]), []).append(row)
    return groups


def _whole(rows: List[Record]) -> Optional[str]:
    """The kind of a pair whose results all stopped or started running (its header says it all), else None."""
    kind = rows[0]["kind"]
    return kind if kind in ("no_longer_run", "new") and all(r["kind"] == kind for r in rows) else None


def _tally(rows: Iterable[Record]) -> str:
    counts = Counter(row["kind"] for row in rows)
    return _counted(counts)


def _counted(counts: Dict[str, int]) -> str:
    """`2 new failures, 1 fixed`: the kinds that occur, in KINDS order."""
    return ", ".join(
        plural(counts[kind], TITLES[kind]) if kind == "new_failure" else f"{counts[kind]} {TITLES[kind]}"
        for kind in KINDS
        if counts.get(kind)
    )


def _result_lines(found: Record, width: int) -> List[str]:
    """Per op × backend its changes; pairs that stopped or started running whole are summed per backend."""
    lines: List[str] = []
    listed: List[Tuple[Tuple[str, str], List[Record]]] = []
    whole: Dict[Tuple[str, str], List[Tuple[str, int]]] = {}  # (kind, backend) → [(op, results)]
    for (op, backend), rows in _groups(found["results"]).items():
        kind = _whole(rows)
        if kind:
            whole.setdefault((kind, backend), []).append((op, len(rows)))
        else:
            listed.append(((op, backend), rows))
    listed.sort(key=lambda group: not any(r["kind"] == "new_failure" for r in group[1]))  # stable: failures first
    budget = ROWS
    for shown, ((op, backend), rows) in enumerate(listed):
        if shown == GROUPS or budget <= 0:
            lines.append(f"... {len(listed) - shown} more op × backend pairs changed (-o diff.md lists them)")
            break
        lines.append(f"{plain(op)} on {plain(backend)}: {_tally(rows)}")
        for row in rows[: min(LISTED, budget)]:
            lines.extend(_result_lines_of(row, width))
        if len(rows) > min(LISTED, budget):
            lines.append(f"  ... {len(rows) - min(LISTED, budget)} more (-o diff.md lists every one)")
        budget -= len(rows)
    for (kind, backend), ops in whole.items():
        lines.append(
            "{} on {}: {} of {}{}".format(
                TITLES[kind],
                plain(backend),
                plural(sum(n for _, n in ops), "result"),
                plural(len(ops), "op"),
                ": " + ", ".join(plain(op) for op, _ in ops) if len(ops) <= 3 else "",
            )
        )
    return lines


def _result_lines_of(row: Record, width: int) -> List[str]:
    """One result's change: its line and its message when they fit, else the message wrapped beneath (at most MESSAGE_LINES lines; the whole
    message is in -o diff.md and --json)."""
    head = "  {:<13} {} ({}): {} → {}".format(
        TITLES[row["kind"]], plain(row["case"]), row["mode"], row["old"] or "-", row["new"] or "-"
    )
    message = " ".join(plain(row.get("message", "")).split())
    if not message:
        return [_cut(head, width)]
    if len(head) + 2 + len(message) <= width:
        return [f"{head}: {message}"]
    body = textwrap.wrap(message, width - 4, break_on_hyphens=False) or [message]
    if len(body) > MESSAGE_LINES:
        body = body[: MESSAGE_LINES - 1] + [_cut(" ".join(body[MESSAGE_LINES - 1 :]), width - 4)]
    return [_cut(head, width)] + ["    " + line for line in body]


def _other_lines(found: Record, width: int) -> List[str]:
    """The lines on what changed besides results: the backends, the known differences' counts (at most ENTRIES),
    the newly stale."""
    lines: List[str] = []
    for change in found["backends"]:
        lines.append(
            "backend {}: {}{}".format(
                plain(change["backend"]), _backend_change(change), " (no longer starts)" if change["worse"] else ""
            )
        )
    for change in found["known_counts"][:ENTRIES]:
        head = "known difference {} ({} on {}): explained {} → {}".format(
            change["entry"], _few(change["op"], "op"), _few(change["backend"], "backend"), change["old"], change["new"]
        )
        lines.append(head)
        lines.append(_cut("  " + " ".join(plain(change["reason"]).split()), width))
    if len(found["known_counts"]) > ENTRIES:
        more = len(found["known_counts"]) - ENTRIES
        lines.append(f"... {more} more known differences' counts changed (-o diff.md lists them)")
    for entry in found["new_stale"]:
        lines.append(
            "newly stale known difference: {} on {}".format(_few(entry["op"], "op"), _few(entry["backend"], "backend"))
        )
        lines.append(_cut("  " + " ".join(plain(entry["reason"]).split()), width))
    return lines


def _backend_change(change: Record) -> str:
    parts = []
    if change["old_status"] != change["new_status"]:
        parts.append("{} → {}".format(change["old_status"], change["new_status"]))
    parts.extend("{} {} → {}".format(pkg, a or "-", b or "-") for pkg, (a, b) in change["versions"].items())
    return plain("; ".join(parts))


def _names(value: Any) -> str:
    return plain(", ".join(value) if isinstance(value, list) else str(value))


def _few(value: Any, what: str) -> str:
    """Names, or when more than three the first two and how many more: an entry may name 40 ops."""
    if isinstance(value, list) and len(value) > 3:
        return f"{plain(value[0])}, {plain(value[1])} and {len(value) - 2} more {what}s"
    return _names(value)


def _cut(line: str, width: int) -> str:
    """One line of a listing, cut to the width (the whole text is in -o diff.md and --json)."""
    return line if len(line) <= width else line[: max(width - 1, 1)] + "…"


def _fitted(lines: List[str], width: int) -> str:
    """The lines, each wider than `width` broken between words (continuations indented)."""
    out: List[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * min(len(line) - len(line.lstrip()) + 2, width // 2)
        out.extend(textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False) or [line[:width]])
    return "\n".join(out) + "\n"


def render_markdown(found: Record, old_name: str, new_name: str) -> str:
    """The whole comparison as Markdown (-o diff.md): the verdict, what was compared, and every change listed
    (a pair that stopped or started running whole is one row)."""
    lines = [
        "# kbtool report diff",
        "",
        f"Baseline {markdown(old_name)}, run {markdown(new_name)}.",
        "",
        f"**{markdown(verdict_line(found))}**",
        "",
        markdown(scope_line(found)),
        "",
    ]
    lines.extend(f"- note: {markdown(note)}" for note in found["notes"])
    rows = []
    for (op, backend), group in _groups(found["results"]).items():
        kind = _whole(group)
        if kind:
            rows.append([TITLES[kind], op, backend, f"all {len(group)}", "", "", ""])
            continue
        rows.extend(
            [
                TITLES[r["kind"]],
                op,
                backend,
                r["case"],
                r["mode"],
                f"{r['old'] or '-'} → {r['new'] or '-'}",
                r.get("message", ""),
            ]
            for r in group
        )
    if rows:
        lines.extend(["", "| change | op | backend | case | mode | word | message |", "|---|---|---|---|---|---|---|"])
        lines.extend("| " + " | ".join(markdown(cell) for cell in row) + " |" for row in rows)
    lines.extend(_markdown_others(found))
    return "\n".join(lines) + "\n"


def _markdown_others(found: Record) -> List[str]:
    lines: List[str] = []
    if found["backends"]:
        lines.extend(["", "## Backends", ""])
        lines.extend(
            "- {}: {}{}".format(
                markdown(c["backend"]), markdown(_backend_change(c)), " (no longer starts)" if c["worse"] else ""
            )
            for c in found["backends"]
        )
    if found["known_counts"]:
        lines.extend(["", "## Known differences whose counts changed", ""])
        lines.extend(
            "- {} ({} on {}): explained {} → {}: {}".format(
                c["entry"],
                markdown(_names(c["op"])),
                markdown(_names(c["backend"])),
                c["old"],
                c["new"],
                markdown(c["reason"]),
            )
            for c in found["known_counts"]
        )
    if found["new_stale"]:
        lines.extend(["", "## Newly stale known differences", ""])
        lines.extend(
            "- {} on {}: {}".format(markdown(_names(e["op"])), markdown(_names(e["backend"])), markdown(e["reason"]))
            for e in found["new_stale"]
        )
    return lines
