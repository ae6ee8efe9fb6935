"""summary.md: the few lines of a report a PR comment needs (`--format summary`, `-o summary.md` / `NAME.summary.md`).

GitHub refuses a comment over 65,536 characters; this view stays far under it by what it shows, whatever the run:
the verdict (a self-test, numpy alone, says so), the run's facts, a row per backend (pass as is first), the backends
that did not run (by reason), the unexplained failures by group (at most FAILURE_GROUPS, then "and N more"), stale
known differences and changed known results (at most STALE_SHOWN each), one line of known differences, and where
the full report is. Messages and names are cut, so a run of 14 backends and 41,008 results is some 3,000 characters
and the worst case stays under MAX_CHARS (a test holds it). The github view spends a larger budget on more detail.
"""

from typing import Any, Dict, List, Optional, Sequence

from kbtool.reports.github import verdict_line
from kbtool.reports.matrix import SYMBOLS
from kbtool.reports.summary import (
    PASS_AS_IS_LEGEND,
    backend_counts,
    backend_label,
    changed_results,
    failure_groups,
    known_groups,
    ordered,
    pass_as_is,
    pass_as_is_text,
    percent,
    run_pass_as_is,
    short_versions,
    unexplained,
)
from kbtool.reports.text import markdown as _escape
from kbtool.reports.text import plain, plural

Record = Dict[str, Any]  # a report, or one of its records, as JSON data

FAILURE_GROUPS = 10  # unexplained groups listed; the rest are counted
STALE_SHOWN = 5  # stale known differences (and changed known results) listed; the rest are counted
BACKENDS_SHOWN = 40  # backend rows (a release sweep may have many); the rest are counted
MESSAGE_CHARS = 160
NAME_CHARS = 60
VERSION_CHARS = 24
MAX_CHARS = 20_000  # what the view never exceeds (under a third of GitHub's 65,536), whatever the report


def _clip(text: Any, limit: int) -> str:
    line = plain(text).replace("\n", " ")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _code(text: Any, limit: int) -> str:
    code = _clip(text, limit).replace("`", "'")
    return f"`{code}`" if code.strip() else ""


def _names(names: Sequence[str], shown: int = 4) -> str:
    text = ", ".join(names[:shown])
    return _clip(text, NAME_CHARS) + (f" (+{len(names) - shown} more)" if len(names) > shown else "")


def render(report: Record, source: Optional[str] = None, url: Optional[str] = None) -> str:
    """The summary as Markdown. `source`: the JSON report's path (named at the end as the full report); `url`: where
    the run's artifacts are (default: this GitHub Actions run's page, when there is one)."""
    from kbtool.reports.github import run_url

    counts = backend_counts(report)
    lines = _verdict(report) + _backends(report, counts) + _failures(report) + _known(report)
    lines += _footer(report, source, url or run_url())
    text = "\n".join(lines).rstrip("\n") + "\n"
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 2] + "…\n"


def _verdict(report: Record) -> List[str]:
    verdict = verdict_line(report, 600)
    spec = report.get("spec") or {}
    run = run_pass_as_is(report)
    facts = [
        plural(len(report["results"]), "result"),
        "{}, {}".format(plural(spec.get("ops", "?"), "op"), plural(spec.get("cases", "?"), "case")),
        "seed {}".format(report.get("seed", "?")),
        "{:.0f} s".format(float(report.get("wall_seconds") or 0)),
        "kbtool {}".format(report.get("kbtool", "?")),
    ]
    if run["ran"]:
        facts.insert(1, "pass as is " + pass_as_is_text(run))
    if report.get("filters"):
        facts.append(_clip("filters: " + ", ".join(report["filters"]), 200))
    lines = ["## kbtool parity summary", "", verdict, "", _escape(" · ".join(facts)), ""]
    if report.get("incomplete"):
        lines[3:3] = ["**Incomplete**: {}".format(_escape(_clip(report["incomplete"].get("note", ""), 300))), ""]
    return lines


def _backends(report: Record, counts: Dict[str, Record]) -> List[str]:
    infos = {b["name"]: b for b in report["backends"]}
    names = [n for n in ordered(report, list(infos) + [n for n in counts if n not in infos]) if n in counts]
    lines = []
    if names:
        lines += [
            "| backend | version | pass as is | conformance | known | unexplained |",
            "|---|---|---:|---:|---:|---:|",
        ]
    for name in names[:BACKENDS_SHOWN]:
        c, info = counts[name], infos.get(name, {"name": name})
        label = backend_label(name, infos.get(name)) + (" (active)" if name == report.get("active_backend") else "")
        lines.append(
            "| {} | {} | **{}** | {} | {} | {} |".format(
                _escape(_clip(label, NAME_CHARS)),
                _escape(_clip(short_versions(info, 1), VERSION_CHARS)),
                pass_as_is_text(pass_as_is(c.get("pass", 0), c["ran"])),
                percent(c["conformance"]),
                c.get("known", 0),
                "**{}**".format(c["unexplained"]) if c["unexplained"] else "0",
            )
        )
    if len(names) > BACKENDS_SHOWN:
        lines += ["", "and {}".format(plural(len(names) - BACKENDS_SHOWN, "more backend"))]
    if names:
        lines += ["", _escape(PASS_AS_IS_LEGEND), ""]
    down: Dict[str, List[str]] = {}  # the backends that did not run, by status
    for b in report["backends"]:
        if b.get("status") != "available":
            down.setdefault(b.get("status", "?"), []).append(b["name"])
    for status, which in down.items():
        lines.append(f"- {_escape(status)}: {_escape(_names(which, 8))}")
    return lines + ([""] if down else [])


def _failures(report: Record) -> List[str]:
    records = unexplained(report)
    if not records:
        return []
    groups = failure_groups(report)
    lines = [f"### Unexplained failures: {plural(len(records), 'result')} in {plural(len(groups), 'group')}", ""]
    for (backend, status, ops), members in groups[:FAILURE_GROUPS]:
        first = members[0]
        lines.append(
            "- {} **{}** {} on {} ({}): {}".format(
                SYMBOLS.get(status, "?"),
                _escape(status),
                _escape(_names(list(ops))),
                _escape(_clip(backend, NAME_CHARS)),
                plural(len(members), "result"),
                _escape(_clip(first.get("message", ""), MESSAGE_CHARS)),
            )
        )
        if first.get("repro"):
            lines.append("  " + _code(first["repro"], 200))
    rest = groups[FAILURE_GROUPS:]
    if rest:
        lines.append(
            "- and {} ({})".format(
                plural(len(rest), "more group"), plural(sum(len(members) for _, members in rest), "result")
            )
        )
    return lines + [""]


def _known(report: Record) -> List[str]:
    lines: List[str] = []
    stale = report.get("stale_known_differences") or []
    if stale:
        lines += [f"### Stale known differences: {len(stale)}", ""]
        for entry in stale[:STALE_SHOWN]:
            ops = entry["op"] if isinstance(entry["op"], list) else [str(entry["op"])]
            backends = entry["backend"] if isinstance(entry["backend"], list) else [str(entry["backend"])]
            lines.append(
                "- {} on {}: {}".format(
                    _escape(_names(ops)), _escape(_names(backends)), _escape(_clip(entry.get("note", ""), 200))
                )
            )
        if len(stale) > STALE_SHOWN:
            lines.append(f"- and {len(stale) - STALE_SHOWN} more")
        lines.append("")
    changed = changed_results(report)
    if changed:
        lines += [f"**{plural(len(changed), 'known result')} changed** since recorded:", ""]
        for r in changed[:STALE_SHOWN]:
            lines.append(
                "- {} {} on {} ({})".format(
                    _escape(_clip(r["op"], NAME_CHARS)),
                    _escape(_clip(r["case"], NAME_CHARS)),
                    _escape(r["backend"]),
                    r["mode"],
                )
            )
        if len(changed) > STALE_SHOWN:
            lines.append(f"- and {len(changed) - STALE_SHOWN} more")
        lines.append("")
    groups = known_groups(report)
    if groups:
        lines += [
            "Known differences: {} explained by {}, re-checked this run.".format(
                plural(sum(g["results"] for g in groups), "result"), plural(len(groups), "recorded reason")
            ),
            "",
        ]
    return lines


def _footer(report: Record, source: Optional[str], url: Optional[str]) -> List[str]:
    if url:
        where = f"the JSON, Markdown and HTML reports in [this run's artifacts]({url})"
    elif source:
        shown = _clip(source, 200).replace("`", "'")
        where = f"`{shown}` (`kbtool report render {shown}` shows it all)"
    else:
        where = "the JSON report this was rendered from (`kbtool report render REPORT.json` shows it all)"
    return ["---", "", f"Every result, message and repro: {where}."]
