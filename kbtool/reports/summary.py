"""What every view says of a report, computed once: per-backend counts, pass as is and conformance, the unexplained
failures grouped, known differences grouped by reason, a failure's numbers in one line, the settings line. Plain data
and plain strings: each renderer (terminal, Markdown, HTML, JUnit, GitHub) lays them out its own way.

Two figures per backend, and the words every view uses for them:

  pass as is   pass / results that ran: the parity a user gets with no known difference to lean on; the headline of
               every view, always shown with its counts (`57.5 % (752/1310)`). "Results that ran" are all of the
               backend's results but `could_not_start` ones (those cases never ran: a worker that could not start is
               a verdict of its own, counted in its column and failing the check). `unsupported`, `known` and every
               failure ran and did not pass as is: they count in the denominator, not in the numerator. A backend
               with no result that ran has no rate ("–", and `None` in the data). A backend that was not installed
               has no results at all and is not in the table.
  conformance  (pass + known) / results: what the gate judges (with unexplained = results - pass - known, which
               must be 0 for the exit code to be 0)."""

import math
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from kbtool.reports.text import megabytes, plain, plural
from kbtool.results import OPTIONAL_STATUSES, BackendStatus, Status
from kbtool.runners import names

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
    ("not_reached", "not reached"),
    ("crash", "crash"),
    ("timeout", "timeout"),
    ("could_not_start", "not run"),
]


def count_word(record: Mapping[str, Any]) -> str:
    """The count a result adds to: its status, or `known` when a known difference explains it; a `not_reached`
    result counts as not reached even when explained (it never ran its op: no known coverage)."""
    if record.get("known") and record["status"] != Status.NOT_REACHED.value:
        return "known"
    return str(record["status"])


def changed_results(report: Record) -> List[Record]:
    """The results a known difference recorded that fail differently now (status `changed`), in report order."""
    return [r for r in report["results"] if r.get("changed")]


def settings_line(report: Record) -> Optional[str]:
    """One line with the keras.json settings that ran and where each came from, when the report says so."""
    items = settings_items(report)
    return "keras.json settings: " + ", ".join(items) if items else None


def settings_items(report: Record) -> List[str]:
    """The settings line's items, each one that a view keeps whole when it wraps the line (`epsilon 1e-07` never
    splits): a setting's source follows the last setting from it (`floatx float32`, `epsilon 1e-07 (keras.json)`)."""
    config = report.get("keras_config") or {}
    sources = config.get("source")
    if not isinstance(sources, dict) or not sources:
        return []
    values = config.get("values") or {}
    items = []
    active = report.get("active_backend")
    if active and "backend" in sources:
        items.append("backend {} (active; {})".format(active, sources["backend"]))
    by_source: Dict[str, List[str]] = {}  # settings that come from the same place share it: one short line
    for key, source in sources.items():
        if key != "backend":
            by_source.setdefault(source, []).append("{} {}".format(key, values.get(key, "?")))
    for source, keys in by_source.items():
        items.extend(keys[:-1] + [f"{keys[-1]} ({source})"])
    ran = config.get("ran") or []
    if len(ran) > 1:
        items.append(f"{len(ran)} sets of settings ran (cases that read them)")
    return items


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
        own = versions.get(info.get("module") or names.split_custom(info["name"]).module)
        return str(own) if own and own != "unknown" and not str(own).startswith("unavailable") else "custom"
    own = versions.get(info["name"])
    return str(own if own is not None else next(iter(versions.values()), ""))


def release_pins(name: str) -> Optional[Tuple[str, List[Tuple[str, str]]]]:
    """(base, [(package, version), ...]) of a release backend's name (`tensorflow1[keras=2.2.4]`), None for another
    name. Read from the name alone, as written in the report (a view never needs the release's recipe)."""
    release = names.read_release(name)
    return (release.base, list(release.pins)) if release is not None else None


_normalised = names.normalise


def release_versions(report: Record) -> Dict[str, str]:
    """The versions that tell a sweep's backends apart, by backend name: a release backend's pinned packages (and
    those installed with them: tf-keras 2.16 comes with tensorflow 2.16), its base's versions of those packages when
    the base is in the report too. As each worker reported them (a release that did not start: as pinned). Only
    the release backends and their bases are keys: the views show any other backend's versions as before."""
    from kbtool.runners.registry import RECIPES

    infos = {b["name"]: b for b in report.get("backends") or []}
    packages: Dict[str, List[str]] = {}  # base -> the packages its releases here pin, in order
    pinned: Dict[str, List[Tuple[str, str]]] = {}
    for name in infos:
        parsed = release_pins(name)
        if parsed is None:
            continue
        base, pins = parsed
        recipe = RECIPES.get(base)
        couples = getattr(recipe, "release_couples", {}) or {}
        wanted = [p for p, _ in pins] + [c for p, _ in pins for c in couples.get(p, ()) if c not in dict(pins)]
        pinned[name] = pins
        for package in wanted:
            if package not in packages.setdefault(base, []):
                packages[base].append(package)
    out: Dict[str, str] = {}

    def words(name: str, wanted: List[str], fallback: Dict[str, str]) -> str:
        reported = {_normalised(k): str(v) for k, v in (infos[name].get("versions") or {}).items()}
        parts = [(p, reported.get(_normalised(p), fallback.get(p))) for p in wanted]
        return ", ".join(f"{p} {v}" for p, v in parts if v)

    for name, pins in pinned.items():
        base = names.base_of(name)
        own = [p for p in packages[base] if p in dict(pins)] + [p for p in packages[base] if p not in dict(pins)]
        out[name] = words(name, own, dict(pins))
    for base, wanted in packages.items():
        if base in infos:
            out[base] = words(base, wanted, {})
    return out


PASS_AS_IS_LEGEND = (
    "pass as is = pass / results that ran (all but could not start) · conformance = (pass + known) / results"
    " · the gate: unexplained = 0"
)


def pass_as_is(passed: int, ran: int) -> Dict[str, Any]:
    """{percent, pass, ran}: the pass-as-is rate in percent (None when nothing ran) with its counts."""
    return {"percent": 100.0 * passed / ran if ran else None, "pass": passed, "ran": ran}


def pass_as_is_record(per_backend: Mapping[str, Mapping[str, int]]) -> Record:
    """The report's summary.pass_as_is, from summary.per_backend's counts: the whole run's {percent, pass, ran} and
    `per_backend` the same for each backend (percent rounded down to 4 decimals; None where nothing ran). Views
    compute the figures from the counts (backend_counts), so a report written before this field reads the same."""

    def figure(passed: int, ran: int) -> Dict[str, Any]:
        out = pass_as_is(passed, ran)
        if out["percent"] is not None:
            out["percent"] = math.floor(out["percent"] * 10000 + 1e-6) / 10000
        return out

    figures = {
        name: figure(counts.get("pass", 0), sum(counts.values()) - counts.get(Status.COULD_NOT_START.value, 0))
        for name, counts in per_backend.items()
    }
    run = figure(sum(f["pass"] for f in figures.values()), sum(f["ran"] for f in figures.values()))
    return dict(run, per_backend=figures)


def pass_as_is_text(figure: Mapping[str, Any]) -> str:
    """A pass-as-is figure ({percent, pass, ran}) as every view writes it: `57.5 % (752/1310)`, `– (0/0)`."""
    return "{} ({}/{})".format(percent(figure.get("percent")), figure.get("pass", 0), figure.get("ran", 0))


def run_pass_as_is(report: Record) -> Dict[str, Any]:
    """The whole run's pass as is: every backend's passes over every backend's results that ran."""
    counts = backend_counts(report).values()
    return pass_as_is(sum(c.get("pass", 0) for c in counts), sum(c["ran"] for c in counts))


def pass_band(passed: int, total: int) -> str:
    """The shade of a matrix cell (passed of total results pass as is): `all`, `most` (at least 90 %), `half` (at
    least 50 %), `few` (some, under 50 %) or `none`; "" for an empty cell."""
    if not total:
        return ""
    if passed >= total:
        return "all"
    if not passed:
        return "none"
    return "most" if passed * 10 >= total * 9 else "half" if passed * 2 >= total else "few"


# the bands in order, with what each means (the legends)
PASS_BANDS = [("all", "100 %"), ("most", "≥ 90 %"), ("half", "≥ 50 %"), ("few", "< 50 %"), ("none", "0 %")]


def backend_counts(report: Record) -> Dict[str, Dict[str, Any]]:
    """Per backend: counts by status ('known' for explained results), results, `ran` (results less could_not_start),
    `pass_as_is` (percent of `ran` that passed; None when none ran), conformance and unexplained (percents as
    numbers: `percent` and `pass_as_is_text` write them)."""
    per_backend = (report.get("summary") or {}).get("per_backend")
    explained = (report.get("summary") or {}).get("not_reached_explained")
    if per_backend is None or explained is None:
        per_backend, explained = per_backend or {}, {}
        fill = not per_backend
        for r in report["results"]:
            if fill:
                counts = per_backend.setdefault(r["backend"], {})
                word = count_word(r)
                counts[word] = counts.get(word, 0) + 1
            if r.get("known") and r["status"] == Status.NOT_REACHED.value:
                explained[r["backend"]] = explained.get(r["backend"], 0) + 1
    out = {}
    for name, counts in per_backend.items():
        counts = {k: v for k, v in counts.items() if isinstance(v, int) and not isinstance(v, bool)}
        results = sum(counts.values())
        # an explained not-reached result does not fail the gate, though it is counted as not reached
        good = counts.get("pass", 0) + counts.get("known", 0) + explained.get(name, 0)
        ran = results - counts.get(Status.COULD_NOT_START.value, 0)
        out[name] = dict(
            counts,
            results=results,
            ran=ran,
            pass_as_is=pass_as_is(counts.get("pass", 0), ran)["percent"],
            unexplained=results - good,
            conformance=None if not results else 100.0 * good / results,
        )
    return out


def count_columns(report: Record) -> List[Tuple[str, str]]:
    """COUNT_COLUMNS, less a status only --repeat makes where no result has it (a check of one run: as before)."""
    found = {r["status"] for r in report["results"]}
    return [(key, h) for key, h in COUNT_COLUMNS if key not in OPTIONAL_STATUSES or key in found]


def percent(value: Optional[float]) -> str:
    """A percent to one decimal, rounded down (an imperfect backend never reads 100.0 %; the counts beside it say
    the rest); "–" for None. (The 1e-9 absorbs float noise: 100 * 29 / 100 is 28.999999999999996.)"""
    if value is None:
        return "–"
    return f"{math.floor(value * 10 + 1e-9) / 10:.1f} %"


def table_backends(report: Record, counts: Optional[Dict[str, Dict[str, Any]]] = None) -> List[str]:
    """The backends the per-backend table has a row for, in its order (backend_rows' rows): those with results or
    available, the active one first."""
    counts = backend_counts(report) if counts is None else counts
    infos = {b["name"]: b for b in report["backends"]}
    names = ordered(report, [b["name"] for b in report["backends"]] + [n for n in counts if n not in infos])
    return [
        n
        for n in names
        if n in counts and (counts[n]["results"] or infos.get(n, {}).get("status") == BackendStatus.AVAILABLE.value)
    ]


def backend_rows(report: Record, verbosity: int = 1) -> Tuple[List[str], List[List[str]]]:
    """The per-backend table as header and rows of plain strings (active backend first): backend, version(s), pass as
    is (`57.5 % (752/1310)`), results, a column per status, conformance, unexplained."""
    counts = backend_counts(report)
    infos = {b["name"]: b for b in report["backends"]}
    shown = table_backends(report, counts)
    columns = count_columns(report)
    releases = release_versions(report) if verbosity < 2 else {}  # a sweep's: the versions its releases differ in
    header = (
        ["backend", "versions" if verbosity >= 2 else "version", "pass as is", "results"]
        + [h for _, h in columns]
        + ["conform.", "unexpl."]
    )
    rows = []
    for name in shown:
        c = counts[name]
        rows.append(
            [
                backend_label(name, infos.get(name)) + (" (active)" if name == report.get("active_backend") else ""),
                plain(releases.get(name) or short_versions(infos.get(name, {"name": name}), verbosity)),
                pass_as_is_text(pass_as_is(c.get("pass", 0), c["ran"])),
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
    """The pool's worker slots and the peak memory, in words (kbtool/runners/pool.py measures them)."""
    return "{}, peak memory {} in the workers together, {} in the controller".format(
        plural(resources.get("jobs", "?"), "worker slot"),
        megabytes(resources.get("peak_workers_rss_mb")),
        megabytes(resources.get("peak_controller_rss_mb")),
    )


def _number(value: Any) -> str:
    """A detail's number to 4 significant digits; a report read back spells NaN and infinities as strings."""
    return format(value, ".4g") if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def self_test(report: Record) -> bool:
    """Only kbtool's own reference ran (--backend numpy): a self-test of kbtool, no parity result."""
    return bool((report.get("plan") or {}).get("self_test"))
