"""Markdown: the parity matrix and the list of divergences, for PR comments and reports/.

Every text that comes from a backend (and every other field, for good measure) goes through text.markdown:
no raw HTML, no table pipes, no backticks, no control characters reach the page.
"""
from .matrix import SYMBOLS, build, doc_claims, problems
from .text import markdown as _escape


def _names(value):
    """An entry's op or backend field: a glob or a list of them."""
    return ", ".join(value) if isinstance(value, list) else str(value)


def render(report):
    backends, rows = build(report)
    lines = ["# kbtool parity report", ""]
    incomplete = report.get("incomplete")
    if incomplete:
        lines += ["**Incomplete: {}**".format(_escape(incomplete["note"])), ""]
    lines += ["Created {} · seed {} · {} results · {:.1f} s wall".format(
                  _escape(report["created"]), report["seed"], len(report["results"]), report["wall_seconds"]), "",
              "| backend | status | python | versions |", "|---|---|---|---|"]
    for b in report["backends"]:
        versions = ", ".join("{} {}".format(k, v) for k, v in b.get("versions", {}).items())
        lines.append("| {} | {} | {} | {} |".format(
            _escape(b["name"]), _escape(b["status"] + (": " + b["reason"] if b.get("reason") else "")),
            _escape(b.get("python") or ""), _escape(versions)))
    lines += ["", "| op | " + " | ".join(_escape(b) for b in backends) + " |", "|---" * (len(backends) + 1) + "|"]
    for row in rows:
        cells = []
        for name in backends:
            cell = row["cells"][name]
            cells.append("" if cell["status"] is None else "{} {}/{}".format(SYMBOLS[cell["status"]], cell["passed"], cell["total"]))
        lines.append("| {} | {} |".format(_escape(row["op"]), " | ".join(cells)))
    lines += ["", "Legend: " + ", ".join("{} {}".format(v, k) for k, v in SYMBOLS.items()), ""]
    issues = problems(report)
    if issues:
        lines += ["## Divergences", "", "| op | case | backend | mode | status | message | known reason |", "|---|---|---|---|---|---|---|"]
        for r in issues:
            lines.append("| {} | {} | {} | {} | {} | {} | {} |".format(
                *(_escape(v) for v in (r["op"], r["case"], r["backend"], r["mode"], r["status"], r["message"][:300],
                                       r.get("known", "")))))
    claims = doc_claims(report)
    if claims:
        lines += ["", "## Documentation examples", "", "| op | example | doc versions | shown | holds on | not on |",
                  "|---|---|---|---|---|---|"]
        for c in claims:
            lines.append("| {} | {} | {} | {} | {} | {} |".format(
                *(_escape(v) for v in (c["op"], c["case"], ", ".join(c["docs"]), c["shown"],
                                       ", ".join(c["holds"]) or ("(not judged)" if not c["fails"] else ""),
                                       ", ".join(c["fails"])))))
    counts = report.get("known_differences", [])
    if counts:
        lines += ["", "## Known differences", "",
                  "Results each entry explained in this run, and the count recorded in the file. An entry that "
                  "explains more than recorded (**grew**) may hide a new failure under an old reason.", "",
                  "| entry | op | backend | recorded | explained | grew | reason |", "|---|---|---|---|---|---|---|"]
        for row in counts:
            cells = [_escape(v) for v in (row["entry"], _names(row["op"]), _names(row["backend"]),
                                          row.get("count", ""), row["explained"])]
            cells.append("**+{}**".format(row["grown_by"]) if row.get("grown") else "")  # a number: nothing to escape
            lines.append("| {} | {} |".format(" | ".join(cells), _escape(row["reason"])))
    if report["stale_known_differences"]:
        lines += ["", "## Stale known differences", ""]
        for e in report["stale_known_differences"]:
            lines.append("- {} {} on {}: {} ({})".format(*(_escape(v) for v in (
                e["op"], e.get("case", "*"), e["backend"], e["reason"], e["note"]))))
    return "\n".join(lines) + "\n"
