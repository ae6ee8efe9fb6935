"""What every view says of a report, computed once: per-backend counts and conformance, the unexplained failures
grouped, known differences grouped by reason, a failure's numbers in one line, the settings line. Plain data and
plain strings: each renderer (terminal, Markdown) lays them out its own way."""

import math
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..results import OPTIONAL_STATUSES, BackendStatus, Status
from .text import megabytes, plain, plural

Record = Dict[str, Any]  # a report, or one of its records, as JSON data

# the per-backend table's count columns: (count key, header); "known" is explained results of any status
COUNT_COLUMNS = [
    ("pass", "pass"),
    ("known", "known"),
    ("unsupported", "unsup."),
    ("changed", "changed"),
    ("nondeterministic", "nondet."),
    ("fail", "fail"),
    ("error", "error"),
    ("crash", "crash"),
    ("timeout", "timeout"),
    ("could_not_start", "not run"),
]


def changed_results(report: Record) -> List[Record]:
    """The results a known difference recorded that fail differently now (status `changed`), in report order."""
    return [r for r in report["results"] if r.get("changed")]


def settings_line(report: Record) -> Optional[str]:
    """One line with the keras.json settings that ran and where each came from, when the report says so."""
    config = report.get("keras_config") or {}
    sources = config.get("source")
    if not isinstance(sources, dict) or not sources:
        return None
    values = config.get("values") or {}
    parts = []
    active = report.get("active_backend")
    if active and "backend" in sources:
        parts.append("backend {} (active; {})".format(active, sources["backend"]))
    by_source: Dict[str, List[str]] = {}  # settings that come from the same place share it: one short line
    for key, source in sources.items():
        if key != "backend":
            by_source.setdefault(source, []).append("{} {}".format(key, values.get(key, "?")))
    parts.extend("{} ({})".format(", ".join(keys), source) for source, keys in by_source.items())
    ran = config.get("ran") or []
    if len(ran) > 1:
        parts.append(f"{len(ran)} sets of settings ran (cases that read them)")
    return "keras.json settings: " + ", ".join(parts)


def ordered(report: Record, names: Iterable[str]) -> List[str]:
    """Backends in report order, the user's active backend first."""
    active = report.get("active_backend")
    return sorted(names, key=lambda name: name != active)


def backend_label(name: str, info: Optional[Record]) -> str:
    """A backend's name as views show it: with its device where that is not the CPU (`keras3-jax (gpu)`), so a CPU
    run's views read as they always did."""
    device = (info or {}).get("device")
    return f"{name} ({device})" if device and device != "cpu" else name


def short_versions(info: Record, verbosity: int) -> str:
    versions = info.get("versions") or {}
    if verbosity >= 2:
        text = ", ".join(f"{k} {v}" for k, v in versions.items())
        return "{} · py{}".format(text, info["python"]) if info.get("python") else text
    # the backend's own version (-v gives every version); a custom module's own __version__, else "custom" (its
    # other versions are its environment's: NumPy's is not the module's)
    if not versions:  # it did not start: nothing to show
        return ""
    if info.get("kind") == "custom":
        own = versions.get(info.get("module") or info["name"].split("@", 1)[0])
        return str(own) if own and own != "unknown" and not str(own).startswith("unavailable") else "custom"
    own = versions.get(info["name"])
    return str(own if own is not None else next(iter(versions.values()), ""))


def backend_counts(report: Record) -> Dict[str, Dict[str, Any]]:
    """Per backend: counts by status ('known' for explained results), results, conformance and unexplained."""
    per_backend = (report.get("summary") or {}).get("per_backend")
    if per_backend is None:
        per_backend = {}
        for r in report["results"]:
            counts = per_backend.setdefault(r["backend"], {})
            word = "known" if r.get("known") else r["status"]
            counts[word] = counts.get(word, 0) + 1
    out = {}
    for name, counts in per_backend.items():
        results = sum(counts.values())
        good = counts.get("pass", 0) + counts.get("known", 0)
        out[name] = dict(
            counts,
            results=results,
            unexplained=results - good,
            conformance=None if not results else 100.0 * good / results,
        )
    return out


def count_columns(report: Record) -> List[Tuple[str, str]]:
    """COUNT_COLUMNS, less a status only --repeat makes where no result has it (a check of one run: as before)."""
    found = {r["status"] for r in report["results"]}
    return [(key, h) for key, h in COUNT_COLUMNS if key not in OPTIONAL_STATUSES or key in found]


def percent(value: Optional[float]) -> str:
    if value is None:
        return "–"
    return f"{math.floor(value * 10) / 10:.1f}%"  # never round an imperfect backend up to 100%


def backend_rows(report: Record, verbosity: int = 1) -> Tuple[List[str], List[List[str]]]:
    """The per-backend table as header and rows of plain strings (active backend first)."""
    counts = backend_counts(report)
    infos = {b["name"]: b for b in report["backends"]}
    names = ordered(report, [b["name"] for b in report["backends"]] + [n for n in counts if n not in infos])
    shown = [
        n
        for n in names
        if n in counts and (counts[n]["results"] or infos.get(n, {}).get("status") == BackendStatus.AVAILABLE.value)
    ]
    columns = count_columns(report)
    header = (
        ["backend", "versions" if verbosity >= 2 else "version", "results"]
        + [h for _, h in columns]
        + ["conform.", "unexpl."]
    )
    rows = []
    for name in shown:
        c = counts[name]
        rows.append(
            [
                backend_label(name, infos.get(name)) + (" (active)" if name == report.get("active_backend") else ""),
                plain(short_versions(infos.get(name, {"name": name}), verbosity)),
                str(c["results"]),
            ]
            + [str(c.get(key, 0)) for key, _ in columns]
            + [percent(c["conformance"]), str(c["unexplained"])]
        )
    return header, rows


def unexplained(report: Record) -> List[Record]:
    return [r for r in report["results"] if r["status"] != Status.PASS.value and not r.get("known")]


def failure_groups(report: Record) -> List[Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]]]:
    """Unexplained results grouped: [((backend, status, ops), [records])].

    Results on one backend with one status and the very same message in several ops are one group (a backend
    that lacks a feature says so the same way everywhere); the others are grouped by backend × op × status.
    Backends in report order (the active one first), then the larger groups first."""
    order = {name: i for i, name in enumerate(ordered(report, [b["name"] for b in report["backends"]]))}
    records = unexplained(report)
    ops_of: Dict[Tuple[str, str, str], set[str]] = {}
    for r in records:
        ops_of.setdefault((r["backend"], r["status"], r.get("message", "")), set()).add(r["op"])
    groups: Dict[Tuple[str, ...], List[Record]] = {}
    for r in records:
        same = (r["backend"], r["status"], r.get("message", ""))
        key: Tuple[str, ...] = (
            ("message",) + same if len(ops_of[same]) > 1 else ("op", r["backend"], r["status"], r["op"])
        )
        groups.setdefault(key, []).append(r)
    items: List[Tuple[Tuple[str, str, Tuple[str, ...]], List[Record]]] = []
    for key, members in groups.items():
        ops = list(dict.fromkeys(r["op"] for r in members))
        items.append(((key[1], key[2], tuple(ops)), members))
    return sorted(items, key=lambda item: (order.get(item[0][0], len(order)), -len(item[1]), item[0][2]))


def details_text(details: Optional[Record]) -> str:
    """A failure's numbers in one line: shapes, dtypes, how many values differ, by how much, where."""
    if not details:
        return ""
    d = details
    parts = []
    if "expected_shape" in d or "actual_shape" in d:
        parts.append("shape {} vs {}".format(shape(d.get("expected_shape")), shape(d.get("actual_shape"))))
    if "static_shape" in d or "predicted_static_shape" in d:
        parts.append(
            "static shape {} vs predicted {}".format(
                shape(d.get("static_shape")), shape(d.get("predicted_static_shape"))
            )
        )
    if "expected_dtype" in d or "actual_dtype" in d:
        parts.append("dtype {} vs {}".format(d.get("expected_dtype", "?"), d.get("actual_dtype", "?")))
    if "mismatched" in d:
        parts.append("{} of {} values differ".format(d["mismatched"], d.get("size", "?")))
    if d.get("non_finite"):
        parts.append("{} of them NaN or inf".format(d["non_finite"]))
    if "max_abs_diff" in d:
        parts.append("max abs diff {}".format(_number(d["max_abs_diff"])))
    if "max_rel_diff" in d:
        parts.append("max rel diff {}".format(_number(d["max_rel_diff"])))
    if "first_index" in d:
        parts.append(
            "first at {}: {} vs {}".format(
                shape(d["first_index"]), value(d.get("expected_value")), value(d.get("actual_value"))
            )
        )
    elif "expected_value" in d or "actual_value" in d:
        parts.append("{} vs {}".format(value(d.get("expected_value")), value(d.get("actual_value"))))
    if "rtol" in d or "atol" in d:
        parts.append("rtol {} atol {}".format(d.get("rtol", "?"), d.get("atol", "?")))
    return "expected vs actual: " + ", ".join(parts) if parts else ""


def shape(shape: Optional[Sequence[Any]]) -> str:
    if shape is None:
        return "?"
    return "({})".format(", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else ""))


def value(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def known_groups(report: Record) -> List[Record]:
    """Explained results grouped by reason, most results first: [{reason, results, ops, backends}] (a backend that
    inherits the reason from its base: "mymod@tensorflow (inherited from tensorflow)")."""
    order = {name: i for i, name in enumerate(ordered(report, [b["name"] for b in report["backends"]]))}
    groups: Dict[str, Record] = {}
    for r in report["results"]:
        if r.get("known"):
            group = groups.setdefault(r["known"], {"reason": r["known"], "results": 0, "ops": [], "backends": []})
            group["results"] += 1
            if r["op"] not in group["ops"]:
                group["ops"].append(r["op"])
            # a custom module's op explained by its base backend's entry says so
            backend = f"{r['backend']} (inherited from {r['inherits']})" if r.get("inherits") else r["backend"]
            if backend not in group["backends"]:
                group["backends"].append(backend)
    for group in groups.values():
        group["backends"].sort(key=lambda name: order.get(name.split(" (")[0], len(order)))
    return sorted(groups.values(), key=lambda g: -g["results"])


def claim_kind(claim: Record) -> str:
    if not claim["fails"] and not claim["holds"]:
        return "text"
    if not claim["fails"]:
        return "holds"
    if not claim["holds"]:
        return "wrong"
    return "some"


def resources_line(resources: Record) -> str:
    """The pool's worker slots and the peak memory, in words (kbtool/pool.py measures them)."""
    return "{}, peak memory {} in the workers together, {} in the controller".format(
        plural(resources.get("jobs", "?"), "worker slot"),
        megabytes(resources.get("peak_workers_rss_mb")),
        megabytes(resources.get("peak_controller_rss_mb")),
    )


def _number(value: Any) -> str:
    """A detail's number to 4 significant digits; a report read back spells NaN and infinities as strings."""
    return format(value, ".4g") if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
