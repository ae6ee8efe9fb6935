"""Markdown, for PR comments and reports/: the run's pass as is (the headline), the verdict, one row per backend
(pass as is first, in bold), the unexplained failures with their numbers, call and repro, known differences by reason, then the details (matrix, entries, doc examples) folded away.

Every text that comes from a backend (and every other field, for good measure) goes through text.markdown:
no raw HTML, no table pipes, no backticks, no control characters reach the page. The only HTML is kbtool's own
<details> folds, which GitHub renders.
"""

from typing import Any, Dict, Iterable, List

from kbtool.reports.matrix import SYMBOLS, build, doc_claims, symbols
from kbtool.reports.summary import (
    PASS_AS_IS_LEGEND,
    backend_counts,
    backend_label,
    backend_rows,
    changed_results,
    claim_kind,
    details_text,
    failure_groups,
    known_groups,
    pass_as_is_text,
    percent,
    resources_line,
    run_pass_as_is,
    settings_line,
    unexplained,
)
from kbtool.reports.text import markdown as _escape
from kbtool.reports.text import plain, plural
from kbtool.reports.verdict import verdict_reasons
from kbtool.specs import call

Record = Dict[str, Any]  # a report, or one of its records, as JSON data

FAILURE_ROWS = 200  # unexplained results listed one per row; the rest are counted (the JSON has them all)
MESSAGE_CHARS = 300


def _names(value: Any) -> str:
    """An entry's op or backend field: a glob or a list of them."""
    return ", ".join(value) if isinstance(value, list) else str(value)


def _code(text: Any) -> str:
    """A code span a table cell can hold: no backtick can close it early, no pipe can split the cell."""
    text = plain(text).replace("\n", " ").replace("`", "'").replace("|", "\\|")
    return f"`{text}`" if text.strip() else ""


def _table(header: List[str], rows: Iterable[List[str]]) -> List[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _fold(summary: str, lines: List[str]) -> List[str]:
    return [f"<details><summary>{summary}</summary>", ""] + lines + ["", "</details>", ""]


def render(report: Record) -> str:
    lines = ["# kbtool parity report", ""] + _verdict(report) + _backends(report) + _failures(report)
    lines += _known(report) + _matrix(report) + _entries(report) + _doc_examples(report)
    return "\n".join(lines).rstrip("\n") + "\n"


def _verdict(report: Record) -> List[str]:
    reasons = verdict_reasons(report)
    n_known = sum(c.get("known", 0) for c in report["summary"]["per_backend"].values())
    if reasons:
        verdict = "**Not OK: {}**".format(_escape("; ".join(reasons)))
    else:
        verdict = "**OK**: {}".format("all pass" if not n_known else f"no unexplained divergence ({n_known} known)")
    spec = report.get("spec") or {}
    facts = [
        plural(len(report["results"]), "result"),
        "{:.1f} s wall".format(report["wall_seconds"]),
        "seed {}".format(report["seed"]),
        "grid {}".format(report.get("grid", "pairwise")),
        "{}, {}".format(plural(spec.get("ops", "?"), "op"), plural(spec.get("cases", "?"), "case")),
        "created {}".format(report["created"]),
        "kbtool {}".format(report.get("kbtool", "?")),
    ]
    if report.get("filters"):
        facts.append("filters: " + ", ".join(report["filters"]))
    if report.get("resources"):
        facts.append(resources_line(report["resources"]))
    lines = [headline(report), "", verdict, "", _escape(" · ".join(facts)), ""]
    if report.get("incomplete"):  # the results below are not the whole story
        lines[:0] = ["**Incomplete: {}**".format(_escape(report["incomplete"]["note"])), ""]
    settings = settings_line(report)
    if settings:
        lines += [_escape(settings), ""]
    return lines


def headline(report: Record) -> str:
    """The run's pass as is, in bold, with conformance and unexplained (the gate) beside it."""
    counts = backend_counts(report).values()
    results = sum(c["results"] for c in counts)
    good = results - sum(c["unexplained"] for c in counts)  # pass, known and explained not-reached results
    run = run_pass_as_is(report)
    conformance = percent(100.0 * good / results if results else None)
    return f"**Pass as is: {pass_as_is_text(run)}** of the results that ran · conformance {conformance} · {results - good} unexplained"


def _backends(report: Record) -> List[str]:
    header, rows = backend_rows(report)
    lines = [
        "## Backends",
        "",
        _escape(PASS_AS_IS_LEGEND.replace(" · ", "; "))
        + ". A known difference is a recorded, explained divergence: it is not a pass as is.",
        "",
    ]
    if rows:
        column = header.index("pass as is")
        cells = [[_escape(c) for c in row] for row in rows]
        for row in cells:  # the headline number in bold, its counts beside it
            pct, _, counts = row[column].partition(" (")
            row[column] = f"**{pct}** ({counts}" if counts else f"**{pct}**"
        lines += _table([_escape(h) for h in header], cells)
        lines.append("")
    for b in report["backends"]:
        if b["status"] != "available":
            lines.append(
                "- **{}**: {}: {}".format(_escape(b["name"]), _escape(b["status"]), _escape(b.get("reason", "")))
            )
        for mode, why in sorted((b.get("unsupported_modes") or {}).items()):
            lines.append(
                "- **{}**: {} mode unsupported, none of its cases ran in it: {}".format(
                    _escape(b["name"]), mode, _escape(why)
                )
            )
    versions = [
        "{}: {}".format(
            _escape(b["name"]), _escape(", ".join(f"{k} {v}" for k, v in (b.get("versions") or {}).items()))
        )
        for b in report["backends"]
        if b.get("versions")
    ]
    if versions:
        lines.append("Versions: " + "; ".join(versions))
    return lines + _margins(report) + [""]


def _margins(report: Record) -> List[str]:
    """One line: each backend's op nearest its error bound (margin = error / bound; drift shows before 1 fails)."""
    top: Dict[str, Any] = {}
    for r in report.get("results", []):
        if r.get("margin") is not None and r["margin"] > top.get(r["backend"], {}).get("margin", -1):
            top[r["backend"]] = r
    if not top:
        return []
    items = [f"{_escape(b)} {_escape(r['op'])} {r['margin']:.2g}" for b, r in sorted(top.items())]
    return ["", "Nearest the error bound (margin = error ÷ bound, 1 fails): " + " · ".join(items)]


def _failures(report: Record) -> List[str]:
    records = unexplained(report)
    if not records:
        return []
    groups = failure_groups(report)
    lines = [
        "## Unexplained failures",
        "",
        f"{plural(len(records), 'result')} in {plural(len(groups), 'group')} (by backend × op × status, or one message "
        "across ops). Each row: what "
        "differs, the numbers, and the command that runs it again.",
        "",
    ]
    rows: List[List[str]] = []
    for _key, members in groups:
        for r in members:
            if len(rows) >= FAILURE_ROWS:
                break
            rows.append(
                [
                    _escape(v)
                    for v in (
                        r["op"],
                        r["case"],
                        r["backend"],
                        r["mode"],
                        "{} {}".format(SYMBOLS.get(r["status"], "?"), r["status"]),
                        r.get("message", "")[:MESSAGE_CHARS],
                        details_text(r.get("details")),
                    )
                ]
                + [_code(call.text_of(r)), _code(r.get("repro", ""))]
            )
    lines += _table(["op", "case", "backend", "mode", "status", "message", "numbers", "call", "repro"], rows)
    if len(records) > len(rows):
        lines += ["", f"… {len(records) - len(rows)} more unexplained results: the JSON report has them all."]
    return lines + [""]


def _known(report: Record) -> List[str]:
    groups = known_groups(report)
    lines = []
    if groups:
        lines += [
            "## Known differences",
            "",
            "{} explained by {}, re-checked this run.".format(
                plural(sum(g["results"] for g in groups), "result"), plural(len(groups), "reason")
            ),
            "",
        ]
        lines += _table(
            ["results", "backends", "ops", "reason"],
            [
                [
                    str(g["results"]),
                    _escape(", ".join(g["backends"])),
                    _escape(", ".join(g["ops"])),
                    _escape(g["reason"]),
                ]
                for g in groups
            ],
        )
        lines.append("")
    stale = report.get("stale_known_differences") or []
    if stale:
        lines += [
            "## Stale known differences",
            "",
            "Entries that explained nothing this run: the difference is "
            "gone (remove the entry) or the entry no longer matches it.",
            "",
        ]
        for e in stale:
            lines.append(
                "- {} {} on {}: {} ({})".format(
                    *(
                        _escape(v)
                        for v in (_names(e["op"]), e.get("case", "*"), _names(e["backend"]), e["reason"], e["note"])
                    )
                )
            )
        lines.append("")
    return lines


def _matrix(report: Record) -> List[str]:
    backends, rows = build(report)
    if not rows:
        return []
    infos = {b["name"]: b for b in report["backends"]}
    table = _table(
        ["op"] + [_escape(backend_label(b, infos.get(b))) for b in backends],
        [
            [_escape(row["op"])]
            + [
                ""
                if row["cells"][b]["status"] is None
                else "{} {}/{}".format(
                    SYMBOLS[row["cells"][b]["status"]], row["cells"][b]["passed"], row["cells"][b]["total"]
                )
                for b in backends
            ]
            for row in rows
        ],
    )
    legend = "Legend: " + ", ".join(f"{v} {k}" for k, v in symbols(report).items())
    return _fold(
        f"Op × backend matrix ({len(rows)} ops): each cell is its worst result, passed/total", table + ["", legend]
    )


def _entries(report: Record) -> List[str]:
    counts = report.get("known_differences", [])
    if not counts:
        return []
    rows = []
    for row in counts:
        cells = [
            _escape(v)
            for v in (row["entry"], _names(row["op"]), _names(row["backend"]), row.get("count", ""), row["explained"])
        ]
        cells.append("**{}**".format(row["changed"]) if row.get("changed") else "")  # a number: nothing to escape
        rows.append(cells + [_escape(row["reason"])])
    lines = []
    changed = changed_results(report)
    if changed:
        lines += (
            [
                f"**{plural(len(changed), 'known result')} changed**: recorded by a known difference, they fail differently "
                "now:",
                "",
            ]
            + [
                "- {} {} on {} ({}), entry {}: recorded `{}`; now `{}`{}".format(
                    _escape(r["op"]),
                    _escape(r["case"]),
                    _escape(r["backend"]),
                    r["mode"],
                    _escape(r["changed"]["entry"]),
                    r["changed"]["recorded"].replace("`", "'"),
                    r["changed"]["now"].replace("`", "'"),
                    f"; call {_code(call.text_of(r))}" if call.text_of(r) else "",
                )
                for r in changed
            ]
            + [""]
        )
    return lines + _fold(
        f"Known-difference entries ({len(counts)}): results each explained, and the count recorded",
        _table(["entry", "op", "backend", "recorded", "explained", "changed", "reason"], rows),
    )


def _doc_examples(report: Record) -> List[str]:
    claims = doc_claims(report)
    if not claims:
        return []
    kinds = [claim_kind(c) for c in claims]
    rows = [
        [
            _escape(v)
            for v in (
                c["op"],
                c["case"],
                ", ".join(c["docs"]),
                c["shown"],
                ", ".join(c["holds"]) or ("(not judged)" if not c["fails"] else ""),
                ", ".join(c["fails"]),
            )
        ]
        for c in claims
    ]
    return _fold(
        "Documentation examples: {} hold on every backend, {} on some, {} on none, {} text (not judged)".format(
            kinds.count("holds"), kinds.count("some"), kinds.count("wrong"), kinds.count("text")
        ),
        _table(["op", "example", "doc versions", "shown", "holds on", "not on"], rows),
    )
