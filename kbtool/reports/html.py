"""HTML: the scoreboard page, one self-contained file that works offline.

The server side (this module and templates/report.html.j2, autoescaped) renders what is small and worth having
without JavaScript: the run's metadata and verdict, a card per backend, the unexplained divergences, the known
differences and the documentation examples. The op × backend matrix and every result behind its cells are embedded
once as JSON (`<script type="application/json">`) and drawn by templates/report.js.j2 (filters, sorting, the
cells' details, the URL hash), so the page never holds 10,000 rows of DOM up front.

Every text shown, embedded or not, goes through text.plain first (no ANSI escape, no control character, no lone
surrogate); the embedded JSON escapes < > & so no text can close its <script> element, and the script sets text
with textContent only.
"""

import json
import math
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, cast

import jinja2
import markupsafe

from kbtool.reports.matrix import build, doc_claims, present, symbols
from kbtool.reports.summary import (
    PASS_AS_IS_LEGEND,
    PASS_BANDS,
    backend_label,
    changed_results,
    pass_as_is,
    pass_band,
    percent,
    release_versions,
)
from kbtool.reports.summary import pass_as_is_text as _pass_as_is_text
from kbtool.reports.text import plain, plural
from kbtool.reports.verdict import strict_reasons, summarize
from kbtool.results import OPTIONAL_STATUSES, SEVERITY, Status
from kbtool.specs import call
from kbtool.vocabulary import CASE_DEFAULTS, MODES

MAX_MESSAGE = 4000  # characters of one message kept on the page (the JSON report keeps all of it)
MAX_LISTED = 200  # unexplained divergences listed as HTML; the matrix reaches the rest
RESULT_STATUSES = [s.value for s in Status]  # a result's status, by its code in the embedded data
CELL_STATUSES = [str(s) for s in SEVERITY]  # a cell's worst status, mildest first
_SCRIPT_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)

Record = Dict[str, Any]  # a report, or one of its records, as JSON data


def _finalize(value: Any) -> Any:
    return plain(value) if isinstance(value, str) and not isinstance(value, markupsafe.Markup) else value


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("kbtool.reports", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        finalize=_finalize,
    )


def render(report: Record) -> str:
    env = _environment()
    summary = report.get("summary") or summarize(report)
    order = backend_order(report)
    data = page_data(report, order, op_info(report))
    info = {b["name"]: b for b in report["backends"]}
    unexplained = [r for r in report["results"] if r["status"] != Status.PASS.value and not r.get("known")]
    unexplained.sort(
        key=lambda r: (
            r["op"],
            order.index(r["backend"]) if r["backend"] in order else len(order),
            -CELL_STATUSES.index(r["status"]),
            r["case"],
            r["mode"],
        )
    )
    script = _asset(env, "report.js.j2")
    run = run_figure(summary)
    releases = release_versions(report)
    return env.get_template("report.html.j2").render(
        report=report,
        filters=run_filters(report),
        summary=summary,
        reasons=verdict_reasons(report, summary),
        cards=[card(info[name], summary, report.get("active_backend"), releases.get(name)) for name in order],
        run_pass_as_is=run,
        run_band=pass_band(run["pass"], run["ran"]),
        run_conformance=run_conformance(summary),
        pct=percent,
        pass_as_is_text=_pass_as_is_text,
        legend=PASS_AS_IS_LEGEND,
        bands=PASS_BANDS,
        unexplained=unexplained[:MAX_LISTED],
        unexplained_total=len(unexplained),
        known_groups=known_groups(report.get("known_differences", [])),
        changed=changed_results(report),
        claims=doc_claims(report),
        symbols=symbols(report),
        cell_statuses=present(report, CELL_STATUSES),
        categories=sorted({op["category"] for op in data["ops"]}),
        settings=_settings,
        names=_names,
        clip=_clip,
        call_text=call.text_of,
        percent=_percent,
        plural=plural,
        data=markupsafe.Markup(script_json(data)),
        css=_asset(env, "report.css.j2"),
        script=script,
        script_hash=markupsafe.Markup(script_hash(script)),  # base64 and quotes: nothing to escape
    )


def script_hash(script: str) -> str:
    """The CSP source that allows exactly this inline script: 'sha256-' + base64 of the SHA-256 of its text (the page
    is one offline file, so the script is inline; no other inline script may run)."""
    import base64
    import hashlib

    return "'sha256-{}'".format(base64.b64encode(hashlib.sha256(str(script).encode("utf-8")).digest()).decode("ascii"))


def _asset(env: jinja2.Environment, name: str) -> markupsafe.Markup:
    """A static file of the page, inlined as is (not a Jinja template: JavaScript and CSS braces stay literal)."""
    assert env.loader is not None  # _environment gives it one
    return markupsafe.Markup(env.loader.get_source(env, name)[0])


# --- what the page shows -----------------------------------------------------------------------------------------


def backend_order(report: Record) -> List[str]:
    """The report's backends, the active one (the user's configured Keras backend) first."""
    names = [b["name"] for b in report["backends"]]
    active = report.get("active_backend")
    return ([active] if active in names else []) + [n for n in names if n != active]


def run_filters(report: Record) -> List[str]:
    """What narrowed the run, as flags: the ops and backends it was asked for (its plan), then the report's
    filters (--case, --mode, --shard, ...); empty for a run of the whole spec on every built-in backend."""
    plan = report.get("plan") or {}
    ops = list(plan.get("ops") or [])
    words: List[str] = []
    if ops and not plan.get("whole_spec", True) and not plan.get("last_failed"):  # --last-failed chose its ops
        checkable = plan.get("checkable_ops")
        if len(ops) <= 5:
            words += ["--op " + op for op in ops]
        else:
            words.append(f"{len(ops)} of {len(checkable)} ops" if checkable else f"{len(ops)} ops")
    words += ["--backend " + name for name in plan.get("backends") or []]
    return words + [str(f) for f in report.get("filters") or []]


def op_info(report: Record) -> Dict[str, Tuple[str, str]]:
    """op → (category, summary) from the spec the check ran: the recorded file, else the shipped spec, whichever
    has the recorded sha256 (so a report rendered on another machine or checkout gets the same page); failing that
    the first that loads; {} when none does (the page then says 'unknown')."""
    from kbtool import paths
    from kbtool.reports.assemble import sha256_of
    from kbtool.specs import loader

    spec_file = paths.spec_file
    load = cast(Callable[[str], Any], loader.load)

    spec = report.get("spec") or {}
    candidates = [p for p in dict.fromkeys([spec.get("path"), spec_file()]) if p]
    if spec.get("sha256"):
        candidates.sort(key=lambda p: sha256_of(p).get("sha256") != spec["sha256"])  # stable: recorded first
    for path in candidates:
        try:
            ops = load(path).ops
            break
        except Exception:
            continue
    else:
        return {}
    return {name: (str(entry.get("category", "unknown")), str(entry.get("summary", ""))) for name, entry in ops.items()}


def verdict_reasons(report: Record, summary: Record) -> List[str]:
    """Why the check is not ok, one phrase each (empty when it is)."""
    reasons = []
    incomplete = report.get("incomplete")
    if incomplete:  # its note is the banner above the reasons
        reasons.append(
            "incomplete ({})".format(incomplete.get("signal", "interrupted"))
            + (
                ": {} of the {} planned results ran".format(incomplete["ran"], incomplete["planned"])
                if "ran" in incomplete and "planned" in incomplete
                else ""
            )
        )
    if not report["results"]:
        reasons.append("no result: nothing was checked")
    if summary.get("divergences"):
        reasons.append(plural(summary["divergences"], "unexplained divergence"))
    if summary.get("stale"):
        reasons.append(plural(summary["stale"], "stale known difference"))
    for name in summary.get("could_not_start", []):
        reasons.append(f"{name} could not start")
    if report.get("summary") is summary:
        reasons.extend(strict_reasons(report))  # --strict: unsupported results, unrecorded entries
    return reasons


def run_figure(summary: Record) -> Record:
    """The whole run's pass as is ({percent, pass, ran}) from the summary's counts."""
    figures = [_figure(counts) for counts in (summary.get("per_backend") or {}).values()]
    return pass_as_is(sum(f["pass"] for f in figures), sum(f["ran"] for f in figures))


def run_conformance(summary: Record) -> Optional[float]:
    """The whole run's conformance, (pass + known) / results, as a fraction."""
    per_backend = (summary.get("per_backend") or {}).values()
    total = sum(sum(c.values()) for c in per_backend)
    good = sum(c.get("pass", 0) + c.get("known", 0) for c in per_backend)
    good += sum((summary.get("not_reached_explained") or {}).values())  # counted as not reached, not failing
    return good / total if total else None


def _figure(counts: Record) -> Record:
    ran = sum(counts.values()) - counts.get(Status.COULD_NOT_START.value, 0)
    return pass_as_is(counts.get("pass", 0), ran)


def card(backend: Record, summary: Record, active: Optional[str], release: Optional[str] = None) -> Record:
    """A backend's card: its pass as is (the big number: pass / results that ran, with the counts and its band),
    conformance and unexplained (the gate) beside it, a count per status; in a sweep, `release` (the versions that
    tell a release backend, or its base, apart: summary.release_versions) under its name."""
    counts = (summary.get("per_backend") or {}).get(backend["name"]) or {}
    total = sum(counts.values())
    # an explained not-reached result is counted as not reached, and does not fail the gate
    not_reached_explained = (summary.get("not_reached_explained") or {}).get(backend["name"], 0)
    explained = counts.get("pass", 0) + counts.get("known", 0) + not_reached_explained
    figure = _figure(counts)
    return {
        "info": backend,
        "release": release,
        "active": backend["name"] == active,
        "total": total,
        "conformance": explained / total if total else None,
        "unexplained": total - explained,
        "pass_as_is": figure,
        "band": pass_band(figure["pass"], figure["ran"]),
        "counts": [
            (status, counts.get(status, 0))
            for status in CELL_STATUSES
            if status not in OPTIONAL_STATUSES or status in counts  # --repeat's, where the summary counts it
        ],
        "seconds": (summary.get("case_seconds") or {}).get(backend["name"]),
    }


def known_groups(rows: Iterable[Record]) -> List[Record]:
    """Known-difference entries grouped by reason, the group that explained most first."""
    groups: Dict[str, List[Record]] = {}
    for row in rows:
        groups.setdefault(row["reason"], []).append(row)
    out = [
        {
            "reason": reason,
            "entries": entries,
            "explained": sum(e["explained"] for e in entries),
            "changed": any(e.get("changed") for e in entries),
        }
        for reason, entries in groups.items()
    ]
    out.sort(key=lambda g: (not g["changed"], -g["explained"]))
    return out


def _names(value: Any) -> Any:
    """An entry's op or backend field: a glob or a list of them."""
    return ", ".join(value) if isinstance(value, list) else value


def _settings(config: Optional[Record]) -> str:
    return " · ".join(f"{k}={v}" for k, v in (config or {}).items()) or "(defaults)"


def _clip(value: Any, limit: int = 300) -> str:
    text = plain(value)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


def _percent(fraction: Optional[float]) -> str:
    """A fraction as every view writes a percent (summary.percent: rounded down, never a miss up to 100 %)."""
    return percent(None if fraction is None else fraction * 100)


# --- the embedded data -------------------------------------------------------------------------------------------


def page_data(report: Record, order: List[str], ops_info: Dict[str, Tuple[str, str]]) -> Record:
    """What the script draws, compact: the published run's 10,704 results are about 1.4 MB of it.

    ops[i].cells[b] is the matrix cell of backend order[b] ({s: worst status, p: passed, t: results} or null), and
    ops[i].r[b] its results, each [case, mode code, status code, seconds] and, when it did not pass,
    a fifth item {m: message, k: known-reason code, i: the base backend it is inherited from, r: repro, d: details,
    n: note, c: settings code, a: call code (the call as code, kbtool/specs/call.py, embedded once per case)}."""
    _, rows = build(report)
    infos = {b["name"]: b for b in report["backends"]}
    labels = [backend_label(name, infos.get(name)) for name in order]  # with the device where it is not the CPU
    reasons: List[str] = []
    settings: List[str] = []
    calls: List[str] = []
    grouped: Dict[Tuple[str, str], List[List[Any]]] = {}
    for record in report["results"]:
        grouped.setdefault((record["op"], record["backend"]), []).append(_result(record, reasons, settings, calls))
    ops = []
    for row in rows:
        category, summary = ops_info.get(row["op"], ("unknown", ""))
        cells = [row["cells"][name] if row["cells"][name]["status"] else None for name in order]
        ops.append(
            {
                "op": row["op"],
                "category": category,
                "summary": summary,
                "cells": [{"s": c["status"], "p": c["passed"], "t": c["total"]} if c else None for c in cells],
                "r": [grouped.get((row["op"], name), []) for name in order],
            }
        )
    data: Record = _clean(
        {
            "backends": order,
            "active": report.get("active_backend"),
            "ops": ops,
            "resultStatuses": present(report, RESULT_STATUSES),  # optional ones last: the codes stay
            "cellStatuses": present(report, CELL_STATUSES),
            "modes": MODES,
            "symbols": symbols(report),
            "reasons": reasons,
            "settings": settings,
            **({"calls": calls} if calls else {}),  # a report from before calls were stored has none
            # the backends' names with their device (only when one is not the CPU: a CPU run's page is unchanged)
            **({"labels": labels} if labels != order else {}),
        }
    )
    return data


def _result(record: Record, reasons: List[str], settings: List[str], calls: List[str]) -> List[Any]:
    item = [
        record["case"],
        MODES.index(record["mode"]) if record["mode"] in MODES else 0,
        RESULT_STATUSES.index(record["status"]),
        record.get("seconds", 0),
    ]
    if record["status"] == Status.PASS.value:
        return item
    extra: Record = {"m": _clip(record.get("message", ""), MAX_MESSAGE)}
    for key, short in (("repro", "r"), ("details", "d"), ("note", "n")):
        if record.get(key) is not None:
            extra[short] = record[key]
    if record.get("known"):
        extra["k"] = _code(reasons, record["known"])
        if record.get("inherits"):  # a custom module's op explained by its base backend's entry
            extra["i"] = record["inherits"]
    if record.get("keras_config") not in (None, CASE_DEFAULTS):  # the documented defaults go without saying
        extra["c"] = _code(settings, _settings(record["keras_config"]))
    code = call.text_of(record)
    if code:  # one case's call is the same on every backend and mode: embedded once
        extra["a"] = _code(calls, code)
    item.append(extra)
    return item


def _code(table: List[str], value: str) -> int:
    """The index of `value` in `table`, appended when new (a reason shared by 500 results is embedded once)."""
    try:
        return table.index(value)
    except ValueError:
        table.append(value)
        return len(table) - 1


MAX_DEPTH = 20  # levels of a result's details the page shows; deeper ones are one truncated string


def _clean(value: Any, texts: Optional[Dict[str, str]] = None, depth: int = 0) -> Any:
    """JSON-safe and display-safe: text made plain, non-finite numbers (which JSON cannot carry) spelt out, nesting
    past MAX_DEPTH levels shown as a truncated string. (`texts` remembers each text made plain: a case id recurs on
    every backend and mode.)"""
    texts = {} if texts is None else texts
    if depth >= MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        return "{} … (nested deeper than {} levels: see the JSON report)".format(
            "{" if isinstance(value, dict) else "[", MAX_DEPTH
        )
    if isinstance(value, str):
        if value not in texts:
            texts[value] = plain(value)
        return texts[value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {_clean(str(k), texts): _clean(v, texts, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v, texts, depth + 1) for v in value]
    return value


def script_json(data: Any) -> str:
    """JSON that can sit inside <script type="application/json">: no '<' can end the element early."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.translate(_SCRIPT_ESCAPES)
