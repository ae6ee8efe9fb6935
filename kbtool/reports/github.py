"""GitHub: a Markdown summary for $GITHUB_STEP_SUMMARY and a PR comment that always fits GitHub's limit.

GitHub refuses a comment body over 65,536 characters (reports/parity.md is several times that). This view spends a
budget of BUDGET characters (under half of that: a comment with room to spare) by priority: the verdict and the per-backend table (pass as is first), the unexplained
failures by group (what a PR author needs), stale known differences, known differences per backend, then per
reason (folded, the KNOWN_REASONS largest). What does not fit is left out, counted, and the last line says what was folded, what was left out
and where the whole report is (the run's artifacts; `kbtool report render` shows it all).

The counts come from summary.py (the same numbers as the terminal and Markdown views); text goes through
text.markdown, as in markdown.py.
"""

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kbtool.reports.matrix import SYMBOLS
from kbtool.reports.summary import (
    PASS_AS_IS_LEGEND,
    backend_counts,
    backend_label,
    failure_groups,
    known_groups,
    ordered,
    pass_as_is,
    pass_as_is_text,
    percent,
    self_test,
    unexplained,
)
from kbtool.reports.text import markdown as _escape
from kbtool.reports.text import plain, plural
from kbtool.reports.verdict import verdict_reasons
from kbtool.specs import call

Record = Dict[str, Any]  # a report, or one of its records, as JSON data

LIMIT = 65_536  # GitHub's limit on a comment body (and the step summary shows the same text)
BUDGET = 30_000  # what this view spends: under half of LIMIT (a PR comment with room to spare; summary_md is smaller)
FOOTER_RESERVE = 1_500  # kept for the closing lines (what was folded and left out, where the full report is)
OPEN_GROUPS = 20  # unexplained groups shown open; the next ones are folded
MESSAGE_CHARS = 240
REASON_CHARS = 240
NAMES_SHOWN = 8  # ops (or backends) named in one cell; the rest counted
KNOWN_REASONS = 30  # known-difference reasons listed (most results first); the rest are counted


class _Page:
    """Lines spent against a character budget (each line costs its length plus the newline)."""

    def __init__(self, budget: int) -> None:
        self.lines: List[str] = []
        self.budget = budget
        self.reserved = 0
        self.used = 0

    def left(self) -> int:
        return self.budget - self.reserved - self.used

    def add(self, lines: Sequence[str]) -> bool:
        """Add every line or none."""
        if sum(len(line) + 1 for line in lines) > self.left():
            return False
        self.lines.extend(lines)
        self.used += sum(len(line) + 1 for line in lines)
        return True

    def table(self, before: List[str], header: List[str], rows: List[List[str]], after: List[str]) -> int:
        """`before`, the table with as many rows as fit (in order), `after`: all of it or nothing. Returns the
        number of rows placed."""
        head = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        fixed = sum(len(line) + 1 for line in before + head + after)
        room = self.left() - fixed
        placed: List[str] = []
        for row in rows:
            line = "| " + " | ".join(row) + " |"
            if len(line) + 1 > room:
                break
            placed.append(line)
            room -= len(line) + 1
        if placed:
            self.add(before + head + placed + after)
        return len(placed)


def _names(names: Sequence[str], shown: int = NAMES_SHOWN) -> str:
    text = ", ".join(names[:shown])
    return text + (f" (+{len(names) - shown} more)" if len(names) > shown else "")


def _clip(text: Any, limit: int) -> str:
    line = plain(text).replace("\n", " ")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _code(text: Any) -> str:
    code = _clip(text, 300).replace("`", "'").replace("|", "\\|")
    return f"`{code}`" if code.strip() else ""


def _fold_open(summary: str) -> List[str]:
    return [f"<details><summary>{summary}</summary>", ""]


FOLD_CLOSE = ["", "</details>", ""]


def run_url() -> Optional[str]:
    """This workflow run's page (its artifacts are listed there), when running in GitHub Actions."""
    server, repo, run = (os.environ.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    return f"{server}/{repo}/actions/runs/{run}" if server and repo and run else None


def render(report: Record, budget: int = BUDGET, url: Optional[str] = None) -> str:
    """The summary in at most `budget` characters (LIMIT at most). `url`: where the run's artifacts are (default:
    this GitHub Actions run's page, from its environment variables)."""
    budget = min(budget, LIMIT)
    page = _Page(budget)
    page.reserved = FOOTER_RESERVE
    folded: List[str] = []
    left_out: List[str] = []
    counts = backend_counts(report)

    page.add(_verdict(report))
    _backends(page, report, counts, left_out)
    per_backend_known = _known_per_backend(report, counts)
    page.reserved += sum(len(line) + 1 for line in per_backend_known)  # small, and kept: reserve it now
    _failures(page, report, folded, left_out)
    _stale(page, report, left_out)
    page.reserved -= sum(len(line) + 1 for line in per_backend_known)
    page.add(per_backend_known)
    _known_per_reason(page, report, folded, left_out)
    page.reserved = 0
    page.add(_footer(folded, left_out, url or run_url(), budget - page.used))
    return "\n".join(page.lines).rstrip("\n") + "\n"


def verdict_line(report: Record, limit: int) -> str:
    """The verdict in Markdown, its reasons clipped to `limit` characters (summary.md says it too)."""
    reasons = verdict_reasons(report)
    if reasons:
        verdict = "**Not OK: {}**".format(_escape(_clip("; ".join(reasons), limit)))
    else:
        known = sum(c.get("known", 0) for c in backend_counts(report).values())
        verdict = "**OK**: {}".format("all pass" if not known else f"no unexplained divergence ({known} known)")
    if self_test(report):
        verdict = "**Self-test**: numpy (kbtool's own reference) against itself, no Keras backend checked. " + verdict
    return verdict


def _verdict(report: Record) -> List[str]:
    verdict = verdict_line(report, 1000)
    spec = report.get("spec") or {}
    facts = [
        "{} results".format(len(report["results"])),
        "{} ops, {} cases".format(spec.get("ops", "?"), spec.get("cases", "?")),
        "seed {}".format(report.get("seed", "?")),
        "kbtool {}".format(report.get("kbtool", "?")),
    ]
    if report.get("filters"):
        facts.append(_clip("filters: " + ", ".join(report["filters"]), 300))
    lines = ["## kbtool parity", "", verdict, "", _escape(" · ".join(facts)), ""]
    if report.get("incomplete"):
        lines[2:2] = ["**Incomplete: {}**".format(_escape(_clip(report["incomplete"].get("note", ""), 500))), ""]
    return lines


def _backends(page: _Page, report: Record, counts: Dict[str, Record], left_out: List[str]) -> None:
    infos = {b["name"]: b for b in report["backends"]}
    names = [n for n in ordered(report, list(infos) + [n for n in counts if n not in infos]) if n in counts]
    rows = []
    for name in names:
        c = counts[name]
        label = backend_label(name, infos.get(name)) + (" (active)" if name == report.get("active_backend") else "")
        rows.append(
            [
                _escape(label),
                f"**{pass_as_is_text(pass_as_is(c.get('pass', 0), c['ran']))}**",
                percent(c["conformance"]),
                str(c["unexplained"]),
                str(c.get("known", 0)),
            ]
        )
    before = [
        _escape(PASS_AS_IS_LEGEND) + ": pass as is is the parity a user gets.",
        "",
    ]
    placed = page.table(before, ["backend", "pass as is", "conformance", "unexplained", "known"], rows, [""])
    if placed < len(rows):
        left_out.append(f"{len(rows) - placed} of {len(rows)} backend rows")
    missing = [b for b in report["backends"] if b.get("status") != "available"]
    for i, b in enumerate(missing):
        line = "- **{}**: {}: {}".format(
            _escape(b["name"]), _escape(b.get("status", "")), _escape(_clip(b.get("reason", ""), 200))
        )
        if not page.add([line]):
            left_out.append(f"{len(missing) - i} backends' not-available lines")
            break
    if missing:
        page.add([""])


def _group_row(key: Tuple[str, str, Tuple[str, ...]], members: List[Record]) -> List[str]:
    backend, status, ops = key
    first = members[0]
    case = first["case"] if len(members) == 1 else "{} (+{} more)".format(first["case"], len(members) - 1)
    return [
        _escape(backend),
        "{} {}".format(SYMBOLS.get(status, "?"), _escape(status)),
        _escape(_names(list(ops))),
        str(len(members)),
        _escape(_clip(case, 120)),
        _escape(_clip(first.get("message", ""), MESSAGE_CHARS)),
        _code(call.text_of(first)),
        _code(first.get("repro", "")),
    ]


GROUP_HEADER = ["backend", "status", "ops", "results", "case", "message", "call (first result)", "repro"]


def _failures(page: _Page, report: Record, folded: List[str], left_out: List[str]) -> None:
    records = unexplained(report)
    if not records:
        return
    groups = failure_groups(report)
    rows = [_group_row(key, members) for key, members in groups]
    sizes = [len(members) for _key, members in groups]
    before = [
        "### Unexplained failures",
        "",
        f"{plural(len(records), 'result')} in {plural(len(groups), 'group')}, by backend × op × status (one message across ops is one "
        "group), larger groups first.",
        "",
    ]
    shown = page.table(before, GROUP_HEADER, rows[:OPEN_GROUPS], [""])
    if shown == OPEN_GROUPS and len(rows) > shown:
        rest = rows[shown:]
        summary = f"{plural(len(rest), 'more unexplained group')}"
        more = page.table(_fold_open(summary), GROUP_HEADER, rest, FOLD_CLOSE)
        if more:
            folded.append(f"{plural(more, 'unexplained group')} ({plural(sum(sizes[shown : shown + more]), 'result')})")
        shown += more
    if shown < len(rows):
        left_out.append(
            f"{plural(len(rows) - shown, 'unexplained group')} ({plural(sum(sizes[shown:]), 'result')})"
            if shown
            else f"every unexplained group ({plural(len(records), 'result')})"
        )


def _stale(page: _Page, report: Record, left_out: List[str]) -> None:
    stale = report.get("stale_known_differences") or []
    if not stale:
        return
    rows = [
        [
            _escape(_names(e["op"] if isinstance(e["op"], list) else [str(e["op"])])),
            _escape(e.get("case", "*")),
            _escape(_names(e["backend"] if isinstance(e["backend"], list) else [str(e["backend"])])),
            _escape(_clip(e.get("reason", ""), REASON_CHARS)),
            _escape(_clip(e.get("note", ""), 200)),
        ]
        for e in stale
    ]
    before = [
        "### Stale known differences",
        "",
        f"{len(stale)} entries explained nothing this run: the difference is gone (remove the entry) or the entry no "
        "longer matches it.",
        "",
    ]
    placed = page.table(before, ["op", "case", "backend", "reason", "note"], rows, [""])
    if placed < len(rows):
        left_out.append(f"{plural(len(rows) - placed, 'stale known difference')}")


def _known_per_backend(report: Record, counts: Dict[str, Record]) -> List[str]:
    groups = known_groups(report)
    if not groups:
        return []
    reasons: Dict[str, int] = {}
    for g in groups:
        for backend in g["backends"]:
            name = backend.split(" (")[0]
            reasons[name] = reasons.get(name, 0) + 1
    rows = [
        "| {} | {} | {} |".format(_escape(name), counts[name].get("known", 0), reasons.get(name, 0))
        for name in ordered(report, list(counts))
        if counts[name].get("known")
    ]
    total = sum(g["results"] for g in groups)
    return [
        "### Known differences",
        "",
        f"{plural(total, 'result')} explained by {plural(len(groups), 'recorded reason')}, re-checked this run.",
        "",
        "| backend | known results | reasons |",
        "|---|---|---|",
        *rows,
        "",
    ]


def _known_per_reason(page: _Page, report: Record, folded: List[str], left_out: List[str]) -> None:
    groups = known_groups(report)
    if not groups:
        return
    rows = [
        [
            str(g["results"]),
            _escape(_names(g["backends"], 4)),
            _escape(_names(g["ops"])),
            _escape(_clip(g["reason"], REASON_CHARS)),
        ]
        for g in groups
    ]
    summary = f"Known differences by reason ({len(groups)}), most results first"
    placed = page.table(_fold_open(summary), ["results", "backends", "ops", "reason"], rows[:KNOWN_REASONS], FOLD_CLOSE)
    if placed:
        folded.append(f"{plural(placed, 'known-difference reason')}")
    if placed < len(rows):
        left_out.append(
            "{} ({})".format(
                plural(len(rows) - placed, "known-difference reason"),
                plural(sum(g["results"] for g in groups[placed:]), "result"),
            )
        )


def _footer(folded: List[str], left_out: List[str], url: Optional[str], room: int) -> List[str]:
    where = (
        f"the JSON, HTML and JUnit reports in [this run's artifacts]({url})"
        if url
        else "the JSON, HTML and JUnit reports in this run's artifacts"
    )
    lines = ["---", ""]
    if folded:
        lines += ["Folded (click to open): " + "; ".join(folded) + ".", ""]
    if left_out:
        lines += [
            f"Left out to keep this comment short (GitHub's limit is {LIMIT:,} characters): "
            + "; ".join(left_out)
            + ".",
            "",
        ]
    lines.append(f"The full report: {where} (`kbtool report render REPORT.json` shows it all).")
    text = "\n".join(lines)
    if len(text) + 1 > room:  # never past the budget (FOOTER_RESERVE makes this rare)
        text = text[: max(0, room - 2)] + "…"
    return [text]
