"""`kbtool report diff OLD.json NEW.json`: what changed between two runs, per op × backend, and whether it got worse
(the check before and after upgrading a backend).

A result's word is `known` when a known difference explains it, else its status; a result is unexplained when it
is neither a pass nor explained. Between the two reports each op × case × backend × mode is:

    new failure    pass or known before, unexplained now (or only in NEW, and unexplained)
    fixed          unexplained before, pass now
    changed        any other change of word (fail → error, pass → known, known → pass, unexplained → known)
    no longer run  only in OLD
    new            only in NEW, and pass or known

Besides: backend version and start-up changes, each known difference's explained count, entries stale in NEW
that were not in OLD. Worse (exit 1): a new failure (a known result that changed is one), a result no longer run,
a backend that no longer starts, a newly stale entry.
"""

import json
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from kbtool.reports.text import plain
from kbtool.results import BackendStatus, Status

Record = Dict[str, Any]  # a report, or one of its records, as JSON data

KINDS = ("new_failure", "fixed", "changed", "no_longer_run", "new")
TITLES = {
    "new_failure": "new failure",
    "fixed": "fixed",
    "changed": "changed",
    "no_longer_run": "no longer run",
    "new": "new",
}
LISTED = 10  # result lines per op × backend in the human output (--json lists all)


def word(record: Record) -> str:
    return "known" if record.get("known") else record["status"]


def unexplained(record: Record) -> bool:
    return record["status"] != Status.PASS.value and not record.get("known")


def _key(record: Record) -> Tuple[str, str, str, str]:
    return record["op"], record["case"], record["backend"], record["mode"]


def diff(old: Record, new: Record) -> Record:
    """The differences between two reports, as a JSON-able dict; `worse` says whether exit code 1 is due."""
    before = {_key(r): r for r in old["results"]}
    after = {_key(r): r for r in new["results"]}
    rows = []
    for key, record in after.items():
        previous = before.get(key)
        kind = _kind(previous, record)
        if kind:
            rows.append(_row(key, kind, previous, record))
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
    backends = _backend_changes(old, new)
    counts = _count_changes(old, new)
    stale = _new_items(old["stale_known_differences"], new["stale_known_differences"], _entry_key)
    worse = (
        any(row["kind"] in ("new_failure", "no_longer_run") for row in rows)
        or any(change["worse"] for change in backends)
        or bool(stale)
    )
    return {
        "worse": worse,
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


def _backend_changes(old: Record, new: Record) -> List[Record]:
    """Per backend: versions that changed, and whether it started in each run (not starting any more is worse)."""
    before = {b["name"]: b for b in old["backends"]}
    after = {b["name"]: b for b in new["backends"]}
    changes = []
    for name in dict.fromkeys(list(before) + list(after)):
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


def render_text(found: Record, old_name: str = "OLD", new_name: str = "NEW") -> str:
    """The human output: notes, then per op × backend its changes (at most LISTED lines each), then backends and
    known differences, then one verdict line."""
    lines = [f"note: {note}" for note in found["notes"]]
    if empty(found):
        return "\n".join(lines + [f"no difference between {old_name} and {new_name}"]) + "\n"
    groups: Dict[Tuple[str, str], List[Record]] = {}
    for row in found["results"]:
        groups.setdefault((row["op"], row["backend"]), []).append(row)
    for (op, backend), rows in groups.items():
        counts = {kind: sum(1 for r in rows if r["kind"] == kind) for kind in KINDS}
        lines.append(
            "{} on {}: {}".format(
                plain(op), plain(backend), ", ".join(f"{n} {TITLES[kind]}" for kind, n in counts.items() if n)
            )
        )
        if (
            len(rows) > 1
            and all(r["kind"] == rows[0]["kind"] for r in rows)
            and rows[0]["kind"] in ("no_longer_run", "new")
        ):
            continue  # a whole op that stopped or started running on a backend: its header says it
        for row in rows[:LISTED]:
            change = "{} → {}".format(row["old"] or "-", row["new"] or "-")
            message = " ".join(plain(row.get("message", "")).split())
            lines.append(
                "  {:<13} {} ({}): {}{}".format(
                    TITLES[row["kind"]],
                    plain(row["case"]),
                    row["mode"],
                    change,
                    ": " + message[:200] if message else "",
                )
            )
        if len(rows) > LISTED:
            lines.append(f"  ... {len(rows) - LISTED} more (--json lists every one)")
    lines.extend(_other_lines(found))
    tally = ", ".join(f"{n} {TITLES[kind]}" for kind, n in found["counts"].items() if n) or "no result changed"
    lines.append("{}: {}".format("worse" if found["worse"] else "not worse", tally))
    return "\n".join(lines) + "\n"


def _other_lines(found: Record) -> List[str]:
    """The lines on what changed besides results: the backends, the known differences' counts, the newly stale."""
    lines: List[str] = []
    for change in found["backends"]:
        parts = []
        if change["old_status"] != change["new_status"]:
            parts.append("{} → {}".format(change["old_status"], change["new_status"]))
        parts.extend("{} {} → {}".format(pkg, a or "-", b or "-") for pkg, (a, b) in change["versions"].items())
        lines.append(
            "backend {}: {}{}".format(
                plain(change["backend"]), "; ".join(parts), " (no longer starts)" if change["worse"] else ""
            )
        )
    for change in found["known_counts"]:
        lines.append(
            "known difference {} ({} on {}): explained {} → {}: {}".format(
                change["entry"],
                _names(change["op"]),
                _names(change["backend"]),
                change["old"],
                change["new"],
                plain(change["reason"])[:120],
            )
        )
    for entry in found["new_stale"]:
        lines.append(
            "newly stale known difference: {} on {}: {}".format(
                _names(entry["op"]), _names(entry["backend"]), plain(entry["reason"])[:120]
            )
        )
    return lines


def _names(value: Any) -> str:
    return plain(", ".join(value) if isinstance(value, list) else str(value))
