"""The parity history: a JSON Lines file with one line per backend per check run, and the page that draws it.

A line (history.schema.json) holds what a run said of one backend: the report's date, the backend and its base (a
release `tensorflow1[keras=2.2.4]` has base `tensorflow1`), the versions its worker reported, counts by status, pass
as is and conformance, the spec's SHA-256, the kbtool version, and per op a digest: its counts by status and the
first 8 hex digits of the SHA-256 of its sorted (case, mode, status, message fingerprint) rows. Two runs whose op
digests differ behaved differently on that op even when the counts agree (a failure that fails in another way).

The file is only ever appended to (`append`), all or nothing and one run at a time: under a lock, the file as it is
plus the new lines replaces it atomically; earlier lines stay as they were. Reading it (`read`) keeps every valid
line and reports each bad one by its line number; a bad line (NaN or an infinity among them, which JSON has not)
never costs the page.

The page (`view`, then one renderer per format: terminal, markdown, json, html) has a section per base backend and
in it a series per track: its releases in version order (releases.version_key; runs of one release by date), and
plain runs of a backend over time by date. Each series: pass as is and conformance per point (an inline SVG line
chart and a table with the same numbers), then the changes by release: for each consecutive pair, the ops whose
digest changed with their counts before and after, and the first release where each op changed.
"""

import datetime
import hashlib
import json
import math
import os
import re
import stat
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kbtool import files, schemas
from kbtool.errors import KbtoolError
from kbtool.known.fingerprint import of_result
from kbtool.reports.summary import COUNT_COLUMNS, backend_counts, pass_as_is, percent
from kbtool.reports.text import cell, plain
from kbtool.runners import names
from kbtool.runners.names import base_of as base_name
from kbtool.runners.releases import version_key

Record = Dict[str, Any]

HISTORY_VERSION = 1
SCHEMA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "history.schema.json")
OP_COLUMNS = [key for key, _ in COUNT_COLUMNS]  # the statuses an op's digest counts, in order
FORMATS = ("terminal", "markdown", "json", "html")
EXTENSIONS = {".md": "markdown", ".json": "json", ".html": "html"}
MAX_PROBLEMS = 50  # bad lines named one by one
MAX_LINE = 16 * 1024 * 1024  # a line of the whole spec's ~400 ops is ~20 KB


# --- lines from a report --------------------------------------------------------------------------------------------


def _word(record: Record) -> str:
    return "known" if record.get("known") else str(record["status"])


def op_digest(records: Sequence[Record], columns: Sequence[str] = OP_COLUMNS) -> List[Any]:
    """One op's digest on one backend: its counts by `columns`, then sha8 of its sorted (case, mode, status,
    fingerprint) rows (known/fingerprint.py: the message's words without the numbers that vary from run to run)."""
    counts = [sum(1 for r in records if _word(r) == column) for column in columns]
    rows = sorted([r["case"], r["mode"], _word(r), of_result(r)] for r in records)
    sha8 = hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode("utf-8")).hexdigest()[:8]
    return counts + [sha8]


def lines_of(report: Record) -> List[Record]:
    """The history lines of a (validated) report: one per backend with results, in the report's backend order."""
    if report.get("incomplete"):
        raise KbtoolError("an interrupted run's report: its counts are of part of the run, so it has no history line")
    counts = backend_counts(report)
    infos = {b["name"]: b for b in report["backends"]}
    by_op: Dict[str, Dict[str, List[Record]]] = {}
    for record in report["results"]:
        by_op.setdefault(record["backend"], {}).setdefault(record["op"], []).append(record)
    names = [b["name"] for b in report["backends"]] + [n for n in by_op if n not in infos]
    lines = []
    for name in dict.fromkeys(names):
        if name not in by_op:
            info = infos.get(name) or {}
            if base_name(name) != name:  # a release that did not run: a sweep's gap is said, never skipped silently
                lines.append(_not_run_line(report, name, info))
            continue  # any other backend not installed here: nothing of it to draw
        c = counts[name]
        line = _line(report, name, infos.get(name) or {})
        line.update(
            counts={k: c[k] for k in OP_COLUMNS if c.get(k)},
            results=c["results"],
            pass_as_is=pass_as_is(c.get("pass", 0), c["ran"]),
            conformance=c["conformance"],
            ops={op: op_digest(records) for op, records in sorted(by_op[name].items())},
        )
        for key in ("percent",):  # floats as a report writes them: short, and the same on every machine
            if line["pass_as_is"][key] is not None:
                line["pass_as_is"][key] = round(line["pass_as_is"][key], 4)
        if line["conformance"] is not None:
            line["conformance"] = round(line["conformance"], 4)
        lines.append(line)
    return lines


def _line(report: Record, name: str, info: Record) -> Record:
    """A backend's line as far as the run, not its results, says it (no counts: a backend that did not run)."""
    return {
        "history": HISTORY_VERSION,
        "date": report["created"],
        "backend": name,
        "base": base_name(name),
        "versions": dict(info.get("versions") or {}),
        "counts": {},
        "results": 0,
        "pass_as_is": {"percent": None, "pass": 0, "ran": 0},
        "conformance": None,
        "spec": {"path": report["spec"]["path"], "sha256": report["spec"].get("sha256")},
        "kbtool": report["kbtool"],
        "seed": report["seed"],
        "grid": report.get("grid", "pairwise"),
        "filters": list(report.get("filters") or []),
        "op_columns": list(OP_COLUMNS),
        "ops": {},
    }


def _not_run_line(report: Record, name: str, info: Record) -> Record:
    """The line of a release that did not run (it could not be installed, or its worker did not start)."""
    reason = {"status": str(info.get("status") or "not run"), "reason": str(info.get("reason") or "")}
    return dict(_line(report, name, info), did_not_run=reason)


def problems(line: Any) -> List[str]:
    """What is wrong with a history line (the schema's problems, then the digests' lengths); empty when valid."""
    found = schemas.problems(SCHEMA_FILE, line)
    if found:
        return found
    odd = _not_finite(line)
    if odd:  # JSON has no NaN or infinity; a line that holds one (json.loads reads them) no view can draw
        return [f"{odd}: not a finite number"]
    width = len(line["op_columns"]) + 1
    for op, digest in line["ops"].items():
        if len(digest) != width or not isinstance(digest[-1], str) or any(isinstance(v, str) for v in digest[:-1]):
            found.append(f"ops/{op}: {len(line['op_columns'])} counts (one per op_columns status) then a sha8")
    return found


def _not_finite(value: Any, where: str = "") -> Optional[str]:
    """The path of the first NaN or infinity in `value` ("conformance", "pass_as_is/percent"), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "the line"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _not_finite(item, f"{where}/{key}" if where else str(key))
        if found:
            return found
    return None


def dumps(line: Record) -> str:
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# --- the file: append, read -----------------------------------------------------------------------------------------


def _identity(line: Record) -> Tuple[str, str]:
    return (line["date"], line["backend"])


def check_target(path: str) -> None:
    """A path history lines can be appended to: a new file (its folder made now), or a history file. A one-line
    KbtoolError otherwise (a directory; a file whose first line is not a history line: never appended to)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        folder = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise KbtoolError(f"cannot create {folder} for history {path}: {exc.strerror or exc}")
        if not os.access(folder, os.W_OK):
            raise KbtoolError(f"cannot write history {path}: {folder} is not writable")
        return
    except (OSError, ValueError) as exc:
        raise KbtoolError(f"cannot read history {path}: {getattr(exc, 'strerror', None) or exc}")
    if stat.S_ISDIR(info.st_mode):
        raise KbtoolError(f"history {path} is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise KbtoolError(f"history {path}: not a regular file")
    try:
        with open(path, "rb") as fh:
            first = fh.readline(MAX_LINE)
    except OSError as exc:
        raise KbtoolError(f"cannot read history {path}: {exc.strerror or exc}")
    if first.strip():
        try:
            data = json.loads(first.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            data = None
        if not isinstance(data, dict) or "history" not in data:
            raise KbtoolError(
                f"{path}: not a kbtool history file (its first line is not a history line); "
                "give a new file or one `kbtool report history-add` wrote"
            )


def append(path: str, lines: Sequence[Record]) -> Tuple[int, int]:
    """Append the lines a file does not hold yet (same date and backend). (written, skipped as already there).

    All or nothing, one run at a time: under the file's lock (files.locked: another history-add or check
    --history may append at once) the file is read again and the whole new file (its bytes as they were, then the
    new lines) replaces it atomically, so a write cut short (a full disk, `ulimit -f`) leaves it as it was and two
    runs never both add a line. A file whose last line has no newline gets one first, so no line joins it."""
    check_target(path)
    for line in lines:
        found = problems(line)
        if found:  # kbtool's own bug: never write a line the reader would refuse
            raise KbtoolError(f"history line for {line.get('backend')}: {found[0]}")
    with files.locked(path, "history"):
        return _append_locked(path, lines)


def _append_locked(path: str, lines: Sequence[Record]) -> Tuple[int, int]:
    """append's read-modify-write, with the lock held."""
    held = {_identity(entry) for entry, _ in read(path)[0]} if os.path.exists(path) else set()
    try:
        with open(path, "rb") as fh:
            before = fh.read()
    except FileNotFoundError:
        before = b""
    except OSError as exc:
        raise KbtoolError(f"cannot read history {path}: {exc.strerror or exc}")
    new: List[str] = []
    skipped = 0
    for line in lines:
        if _identity(line) in held:
            skipped += 1
            continue
        new.append(dumps(line) + "\n")
        held.add(_identity(line))
    if not new:
        return 0, skipped
    joint = b"\n" if before and not before.endswith(b"\n") else b""
    try:
        files.write_atomic(path, before + joint + "".join(new).encode("utf-8"))
    except OSError as exc:
        raise KbtoolError(f"cannot write history {path}: {exc.strerror or exc}; the file is as it was")
    return len(new), skipped


def _no_constant(name: str) -> Any:
    """json.loads reads NaN, Infinity and -Infinity, which JSON has not (and no view can draw): a bad line."""
    raise ValueError(f"{name} is not a JSON number")


def read(path: str) -> Tuple[List[Tuple[Record, int]], List[str]]:
    """([(line, its line number)], problems): every valid line of a history file, and a 'FILE:N: problem' for each
    bad one. A file that cannot be read at all is a one-line KbtoolError."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise KbtoolError(f"cannot read history {path}: {exc.strerror or exc}")
    except ValueError as exc:
        raise KbtoolError(f"cannot read history {path!r}: {exc}")
    if stat.S_ISDIR(info.st_mode):
        raise KbtoolError(f"cannot read history {path}: it is a directory")
    if not stat.S_ISREG(info.st_mode):
        raise KbtoolError(f"cannot read history {path}: not a regular file")
    entries: List[Tuple[Record, int]] = []
    found: List[str] = []
    try:
        with open(path, "rb") as fh:
            for number, raw in enumerate(fh, 1):
                if not raw.strip():
                    continue
                where = f"{path}:{number}"
                try:
                    data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
                except UnicodeDecodeError as exc:
                    found.append(f"{where}: not UTF-8 text ({exc.reason})")
                    continue
                except (ValueError, RecursionError) as exc:
                    found.append(f"{where}: not JSON ({plain(str(exc))[:120]})")
                    continue
                wrong = problems(data)
                if wrong:
                    more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
                    found.append(f"{where}: {plain(wrong[0])[:200]}{more}")
                    continue
                entries.append((data, number))
    except OSError as exc:
        raise KbtoolError(f"cannot read history {path}: {exc.strerror or exc}")
    if not entries and not found and info.st_size:
        found.append(f"{path}: holds no history line")
    if len(found) > MAX_PROBLEMS:  # a file that is not a history at all: its first lines say so
        found = found[:MAX_PROBLEMS] + [f"{path}: and {len(found) - MAX_PROBLEMS} more bad lines"]
    return entries, found


# --- the view: series, points, changes ------------------------------------------------------------------------------


def _pins(name: str) -> Optional[List[Tuple[str, str]]]:
    """A release name's pins [(package, version)], or None for any other name (read here without the registry: a
    history may name backends this machine does not have)."""
    release = names.read_release(name)
    return list(release.pins) if release is not None else None


def _when(date: str) -> Any:
    try:
        moment = datetime.datetime.fromisoformat(date.replace("Z", "+00:00"))
    except ValueError:
        return (1, date)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return (0, moment.timestamp())


def _short_date(date: str) -> str:
    return date[:16].replace("T", " ")


def _label(entry: Record, pins: Optional[List[Tuple[str, str]]]) -> str:
    if pins:
        return ", ".join(f"{p} {v}" for p, v in pins)
    own = entry["versions"].get(entry["backend"])
    return _short_date(entry["date"]) + (f" ({entry['backend']} {own})" if own else "")


def _anchor(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


def _counts(digest: Optional[List[Any]], columns: Sequence[str]) -> Optional[Dict[str, int]]:
    if digest is None:
        return None
    return {column: n for column, n in zip(columns, digest[:-1]) if n}


def _counts_text(counts: Optional[Dict[str, int]]) -> str:
    if counts is None:
        return "not run"
    return ", ".join(f"{n} {k}" for k, n in counts.items()) or "no results"


Pins = Optional[List[Tuple[str, str]]]
Track = List[Tuple[Any, Record, Pins]]  # (sort key, history entry, its release pins) of one series


def series_of(entries: Sequence[Record]) -> List[Record]:
    """The history's series, grouped by base backend (in order of first appearance): [{base, series: [...]}]. A
    series is a base's releases (in version order, runs of one release by date) or one backend's plain runs (by
    date); each with its points and its changes by release."""
    tracks: Dict[Tuple[str, str], Track] = {}
    for entry in entries:
        pins = _pins(entry["backend"])
        if pins is not None:
            key = (entry["base"], "releases")
            order: Any = ([(p, version_key(v)) for p, v in pins], _when(entry["date"]))
        else:
            key = (entry["backend"], "runs")
            order = _when(entry["date"])
        tracks.setdefault(key, []).append((order, entry, pins))
    bases: Dict[str, List[Record]] = {}
    for (name, kind), items in tracks.items():
        items.sort(key=lambda item: item[0])
        bases.setdefault(items[0][1]["base"], []).append(_series(name, kind, items))
    return [
        {
            "base": base,
            "anchor": _anchor(f"base-{base}"),
            "series": sorted(items, key=lambda s: s["kind"] != "releases"),
        }
        for base, items in bases.items()
    ]


def _series(name: str, kind: str, every: Track) -> Record:
    """One series (a base's releases, or one backend's runs) from its entries in order: its points, its changes."""
    gaps = [(entry, pins) for _, entry, pins in every if entry.get("did_not_run")]
    items = [item for item in every if not item[1].get("did_not_run")]
    ident = _anchor(f"{name}-{kind}")
    labels = [_label(entry, pins) for _, entry, pins in items]
    repeated = {label for label in labels if labels.count(label) > 1}
    points = [
        _point(entry, pins, label + (f" ({_short_date(entry['date'])})" if label in repeated else ""))
        for (_, entry, pins), label in zip(items, labels)
    ]
    changes = changes_of([entry for _, entry, _ in items], points, ident)
    order = [entry["backend"] for _, entry, _ in every]
    for change in changes:  # a release between the two that did not run may be the one that changed it
        old, new = items[change["index"] - 1][1], items[change["index"]][1]
        between = order[order.index(old["backend"]) + 1 : order.index(new["backend"])]
        skipped = [_label(e, p) for e, p in gaps if e["backend"] in between]
        if skipped:
            change["notes"].append(
                "did not run between them: {} (the change may have come with one of them)".format(", ".join(skipped))
            )
    first: Dict[str, str] = {}
    for change in changes:
        for op in change["ops"]:
            first.setdefault(op["op"], change["after"])
    return {
        "id": ident,
        "kind": kind,
        "title": f"{name} releases" if kind == "releases" else f"{name} runs over time",
        "points": points,
        "changes": changes,
        "first_changed": next((c["after"] for c in changes if c["ops"]), None),
        "first_changed_by_op": [{"op": op, "release": label} for op, label in sorted(first.items())],
        "not_run": [{"label": _label(entry, pins), "reason": entry["did_not_run"]["reason"]} for entry, pins in gaps],
    }


def _point(entry: Record, pins: Pins, label: str) -> Record:
    """One run in a series, as the views draw it."""
    figure = entry["pass_as_is"]
    return {
        "label": label,
        "tick": (", ".join(v for _, v in pins) if pins else entry["date"][:10])[:16],
        "backend": entry["backend"],
        "date": entry["date"],
        "versions": entry["versions"],
        "pass_as_is": figure["percent"],
        "pass": figure["pass"],
        "ran": figure["ran"],
        "conformance": entry["conformance"],
        "results": entry["results"],
        "counts": entry["counts"],
        "spec_sha256": entry["spec"]["sha256"],
        "kbtool": entry["kbtool"],
        "filters": entry.get("filters", []),
        "ops": len(entry["ops"]),
    }


def changes_of(entries: Sequence[Record], points: Sequence[Record], ident: str) -> List[Record]:
    """For each consecutive pair of a series: the ops whose digest changed (an op run on one side only too), each
    with its counts before and after and an anchor for the page."""
    changes = []
    for index in range(1, len(entries)):
        old, new = entries[index - 1], entries[index]
        ops = []
        for op in sorted(set(old["ops"]) | set(new["ops"])):
            before, after = old["ops"].get(op), new["ops"].get(op)
            if before is not None and after is not None and before[-1] == after[-1]:
                if _counts(before, old["op_columns"]) == _counts(after, new["op_columns"]):
                    continue
            ops.append(
                {
                    "op": op,
                    "anchor": _anchor(f"{ident}-{index}-{op}"),
                    "before": _counts(before, old["op_columns"]),
                    "after": _counts(after, new["op_columns"]),
                    "before_text": _counts_text(_counts(before, old["op_columns"])),
                    "after_text": _counts_text(_counts(after, new["op_columns"])),
                    "counts_same": _counts(before, old["op_columns"]) == _counts(after, new["op_columns"]),
                }
            )
        notes = []
        if old["spec"]["sha256"] != new["spec"]["sha256"]:
            notes.append("the spec differs between these runs: ops may have changed with it")
        if (old.get("filters") or []) != (new.get("filters") or []):
            notes.append("the runs were narrowed differently (filters)")
        changes.append(
            {
                "before": points[index - 1]["label"],
                "after": points[index]["label"],
                "index": index,
                "ops": ops,
                "notes": notes,
            }
        )
    return changes


def view(path: str, entries: Sequence[Tuple[Record, int]], found: Sequence[str]) -> Record:
    """The page's data: the file, its bad lines, and the series by base backend."""
    return {
        "history": HISTORY_VERSION,
        "file": path,
        "lines": len(entries),
        "problems": list(found),
        "bases": series_of([entry for entry, _ in entries]),
    }


# --- renderers: one per format --------------------------------------------------------------------------------------


def _figure(point: Record) -> str:
    return "{} ({}/{})".format(percent(point["pass_as_is"]), point["pass"], point["ran"])


def _text_lines(data: Record, markdown: bool, bullet: str, code: Any) -> List[str]:
    """The terminal and Markdown views' lines. Every text from the file (names, labels, reasons, ops) goes through
    `esc`: in Markdown, escaped on one line (a name's line break, `#`, `<iframe>` or `|` stays text); `code` makes
    an op's code span, which no backtick in it can close."""
    from kbtool.reports.text import markdown as md_escape

    esc = md_escape if markdown else cell
    lines: List[str] = []
    for base in data["bases"]:
        lines += [("## " if markdown else "") + esc(base["base"]), ""]
        for series in base["series"]:
            lines += [("### " if markdown else "") + esc(series["title"]), ""]
            header = ["release" if series["kind"] == "releases" else "run", "pass as is", "conformance", "results"]
            rows = [[p["label"], _figure(p), percent(p["conformance"]), str(p["results"])] for p in series["points"]]
            lines += _table(header, rows, markdown=markdown)
            lines.append("")
            for gap in series["not_run"]:
                lines.append(f"{bullet}did not run: {esc(gap['label'])}: {esc(gap['reason'])}")
            if series["not_run"]:
                lines.append("")
            if series["first_changed"]:
                lines.append(f"First changed release: {esc(series['first_changed'])}")
            elif len(series["points"]) > 1:
                lines.append("No op changed behaviour between consecutive points.")
            for change in series["changes"]:
                if not change["ops"] and not change["notes"]:
                    continue
                lines.append(
                    "{}{} -> {}: {} op{} changed".format(
                        bullet,
                        esc(change["before"]),
                        esc(change["after"]),
                        len(change["ops"]),
                        "" if len(change["ops"]) == 1 else "s",
                    )
                )
                for note in change["notes"]:
                    lines.append(f"  {bullet}note: {esc(note)}")
                for op in change["ops"]:
                    same = " (same counts, other results)" if op["counts_same"] else ""
                    lines.append(
                        f"  {bullet}{code(op['op'])}: {esc(op['before_text'])} -> {esc(op['after_text'])}{same}"
                    )
            lines.append("")
    return lines


def _code(text: Any) -> str:
    """A Markdown code span on one line that no backtick in `text` can close (a backtick shows as ')."""
    return "`{}`".format(plain(text).replace("\n", " ").replace("`", "'") or " ")


def _table(header: List[str], rows: List[List[str]], markdown: bool) -> List[str]:
    if markdown:
        from kbtool.reports.text import markdown as escape

        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return out + ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    return ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header] + rows]


def render_terminal(data: Record) -> str:
    lines = [f"Parity history: {data['file']} ({data['lines']} lines)", ""]
    lines += [f"bad line: {p}" for p in data["problems"]]
    if not data["bases"]:
        lines.append("No runs recorded yet (`kbtool check --history FILE` or `kbtool report history-add` add them).")
    lines += _text_lines(data, False, "- ", cell)
    return "\n".join(plain(line) for line in lines).rstrip() + "\n"


def render_markdown(data: Record) -> str:
    from kbtool.reports.text import markdown as escape

    lines = ["# Parity history", "", f"From {_code(data['file'])}: {data['lines']} lines.", ""]
    for problem in data["problems"]:
        lines.append(f"- bad line: {escape(problem)}")
    if not data["bases"]:
        lines.append("No runs recorded yet.")
    lines += _text_lines(data, True, "- ", _code)
    return "\n".join(lines).rstrip() + "\n"


def render_json(data: Record) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


CHART = {"width": 640, "height": 260, "left": 88, "right": 16, "top": 16, "bottom": 76}
MAX_TICKS = 12  # labelled points on the x axis (every k-th one past that; the table names them all)


def chart(points: Sequence[Record]) -> Record:
    """An SVG line chart's geometry: x per point (evenly spaced, in series order), y per percent (0 to 100)."""
    c = CHART
    inner_w = c["width"] - c["left"] - c["right"]
    inner_h = c["height"] - c["top"] - c["bottom"]
    step = inner_w / max(len(points) - 1, 1)

    def x(i: int) -> float:
        return round(c["left"] + (i * step if len(points) > 1 else inner_w / 2), 1)

    def y(value: float) -> float:
        return round(c["top"] + inner_h * (1 - value / 100.0), 1)

    lines = {}
    for key in ("pass_as_is", "conformance"):
        dots = [(x(i), y(p[key]), p) for i, p in enumerate(points) if p[key] is not None]
        lines[key] = {
            "path": " ".join(f"{px},{py}" for px, py, _ in dots),
            "dots": [{"x": px, "y": py, "title": "{}: {}".format(p["label"], percent(p[key]))} for px, py, p in dots],
        }
    return dict(
        c,
        grid=[{"y": y(v), "label": f"{v} %"} for v in (0, 25, 50, 75, 100)],
        ticks=[
            {"x": x(i), "y": c["height"] - c["bottom"] + 14, "label": p["tick"]}
            for i, p in enumerate(points)
            if i % -(-len(points) // MAX_TICKS) == 0 or i == len(points) - 1
        ],
        lines=lines,
    )


def render_html(data: Record) -> str:
    from kbtool.reports.html import _environment

    return _environment().get_template("history.html.j2").render(data=data, chart=chart, pct=percent, figure=_figure)


RENDERERS = {"terminal": render_terminal, "markdown": render_markdown, "json": render_json, "html": render_html}


def render(data: Record, fmt: str) -> str:
    if fmt not in RENDERERS:
        raise ValueError(fmt)
    return RENDERERS[fmt](data)


def format_of(path: str) -> str:
    fmt = EXTENSIONS.get(os.path.splitext(path)[1])
    if fmt is None:
        raise KbtoolError("cannot tell the format of {!r}: use one of {}".format(path, ", ".join(EXTENSIONS)))
    return fmt
