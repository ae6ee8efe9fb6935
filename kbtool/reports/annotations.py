"""GitHub Actions annotations: one `::error` workflow command per unexplained group (summary.failure_groups),
pointing at the spec case that failed (`file=specs/ops.yaml,line=N`; the op's line when the case's is unknown; no
file when the spec is not in the workspace), so that GitHub shows it on the run and in the PR's diff.

GitHub shows at most 10 error annotations per step and 50 per job: the first MAX_ANNOTATIONS groups (active
backend first, larger groups first) are annotated and a last `::warning` counts the rest. Text is escaped by
GitHub's rules for workflow commands: `%`, CR and LF in the message; also `:` and `,` in a property.
"""

import hashlib
import os
from typing import Any, Dict, List, Optional, Tuple

from kbtool import paths
from kbtool.reports.summary import failure_groups, unexplained
from kbtool.reports.text import plain, plural
from kbtool.specs import call
from kbtool.specs.lines import Lines, case_line, spec_lines

Record = Dict[str, Any]  # a report, or one of its records, as JSON data

MAX_ANNOTATIONS = 50
MESSAGE_CHARS = 1_000


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, **properties: Optional[str]) -> str:
    """One workflow command line: `::kind prop=value,...::message` (properties that are None are left out)."""
    props = ",".join(f"{k}={escape_property(v)}" for k, v in properties.items() if v is not None)
    return "::{}{}::{}".format(kind, " " + props if props else "", escape_data(message))


def spec_file(report: Record) -> Optional[str]:
    """The spec file the report was run from, here: its recorded path, else the shipped spec, either only when
    its sha256 is the recorded one (other lines would point at the wrong case)."""
    spec = report.get("spec") or {}
    recorded, digest = spec.get("path"), spec.get("sha256")
    for path in (recorded, paths.spec_file()):
        if not isinstance(path, str) or not os.path.isfile(path):
            continue
        if digest is None:
            return path if path == recorded else None
        try:
            with open(path, "rb") as fh:
                if hashlib.sha256(fh.read()).hexdigest() == digest:
                    return path
        except OSError:
            continue
    return None


def workspace_path(path: str, workspace: Optional[str] = None) -> Optional[str]:
    """`path` relative to the workspace (GITHUB_WORKSPACE, else the current directory), or None outside it: GitHub
    places an annotation only on a file of the repository."""
    root = workspace or os.environ.get("GITHUB_WORKSPACE") or os.getcwd()
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    return None if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel.replace(os.sep, "/")


def _where(report: Record, workspace: Optional[str]) -> Tuple[Optional[str], Optional[Lines]]:
    path = spec_file(report)
    if path is None:
        return None, None
    file = workspace_path(path, workspace)
    return (file, spec_lines(path)) if file else (None, None)


def render(report: Record, limit: int = MAX_ANNOTATIONS, workspace: Optional[str] = None) -> str:
    """The annotation lines (empty when nothing is unexplained)."""
    groups = failure_groups(report)
    if not groups:
        return ""
    file, lines = _where(report, workspace)
    out: List[str] = []
    for (backend, status, ops), members in groups[:limit]:
        first = members[0]
        line = case_line(lines, first["op"], first["case"]) if lines else None
        title = "kbtool: {} {} on {}".format(first["op"], first["case"], backend)
        if len(members) > 1:
            title += " (+{} more{})".format(len(members) - 1, f" in {len(ops)} ops" if len(ops) > 1 else "")
        message = "{}: {}".format(status, plain(first.get("message", "")) or "(no message)")
        if len(message) > MESSAGE_CHARS:
            message = message[: MESSAGE_CHARS - 1] + "…"
        if len(ops) > 1:
            message += "\nops: " + ", ".join(ops)
        if call.text_of(first):
            message += "\ncall: " + plain(call.text_of(first))
        if first.get("repro"):
            message += "\nrepro: " + plain(first["repro"])
        out.append(
            command(
                "error",
                message,
                file=file if line else None,  # no line found: no file either (the case's, else the op's)
                line=str(line) if file and line else None,
                title=plain(title).replace("\n", " "),
            )
        )
    if len(groups) > limit:
        rest = groups[limit:]
        out.append(
            command(
                "warning",
                f"{plural(len(rest), 'more unexplained group')} ({sum(len(m) for _k, m in rest)} of {len(unexplained(report))} unexplained results) not annotated: the job summary and the "
                "JSON report list them",
                title=f"kbtool: {plural(len(rest), 'group')} not annotated",
            )
        )
    return "\n".join(out) + "\n"
