"""The versioned JSON of a bench (the source of truth), its validation, and the views rendered from it."""

import datetime
import json
import os

from .. import __version__, files
from ..errors import KbtoolError

EXTENSIONS = {".json": "json", ".md": "markdown", ".html": "html"}


def schema():
    with open(os.path.join(os.path.dirname(__file__), "bench.schema.json")) as fh:
        return json.load(fh)


def validate(report):
    """Problems of a bench report against its schema, as 'path: message' strings (empty when valid)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    return [
        "{}: {}".format("/".join(str(p) for p in e.absolute_path) or "(top)", e.message)
        for e in sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
    ]


def assemble(
    command,
    machine,
    peak,
    settings,
    families,
    backends,
    results,
    scaling,
    wall_seconds,
    comparison=None,
    incomplete=None,
    notes=(),
):
    failed = [r for r in results if r["status"] not in ("ok", "unsupported")]
    measured = [r for r in results if r["status"] == "ok"]
    report = {
        "format": "kbtool-bench",
        "schema_version": 1,
        "kbtool": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        "command": command,
        "machine": machine,
        "peak": peak,
        "settings": settings,
        "families": families,
        "backends": backends,
        "results": results,
        "scaling": scaling,
        "wall_seconds": round(wall_seconds, 3),
        "summary": {
            "measured": len(measured),
            "failed": len(failed),
            "unsupported": sum(r["status"] == "unsupported" for r in results),
            "unstable": sum(bool(r.get("unstable")) for r in measured),
            "ok": bool(measured) and not incomplete and not (comparison and comparison["failed"]),
            "notes": list(notes),
        },
    }
    if comparison is not None:
        report["comparison"] = comparison
    if incomplete:
        report["incomplete"] = incomplete
    return report


def exit_code(report):
    """0 when something was measured and no gate failed; 1 otherwise (nothing measured, a significant slowdown
    beyond --fail-over, or an interrupted run)."""
    return 0 if report["summary"]["ok"] else 1


def load(path):
    """A bench report from a file (a baseline for --compare), or a one-line KbtoolError."""
    text = files.read_text(path, "bench report ")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise KbtoolError(f"{path}: not JSON ({exc})")
    if not isinstance(data, dict) or data.get("format") != "kbtool-bench":
        raise KbtoolError(f"{path}: not a kbtool bench report (a `kbtool bench -o FILE.json` file)")
    problems = validate(data)
    if problems:
        raise KbtoolError(
            "{}: not a valid bench report: {}{}".format(
                path, problems[0], f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            )
        )
    return data


def format_of(path):
    fmt = EXTENSIONS.get(os.path.splitext(path)[1])
    if fmt is None:
        raise KbtoolError("cannot tell the format of {!r}: use one of {}".format(path, ", ".join(EXTENSIONS)))
    return fmt


def render(report, fmt):
    if fmt == "json":
        return json.dumps(report, indent=1, sort_keys=False) + "\n"
    if fmt == "markdown":
        from . import markdown_view

        return markdown_view.render(report)
    if fmt == "html":
        from . import html_view

        return html_view.render(report)
    raise KbtoolError(f"unknown bench format {fmt!r}")


def prepare_outputs(paths):
    """Check the -o paths before a bench (a long run never ends in an unwritable file)."""
    from ..reports import check_writable

    for path in paths:
        format_of(path)
        check_writable(path)


def write_all(report, paths):
    """Write every -o file atomically; returns the failures' messages (each costs only its own file)."""
    from ..reports import encodable

    failures = []
    for path in paths:
        try:
            files.write_atomic(path, encodable(render(report, format_of(path))))
        except (KbtoolError, OSError, UnicodeError, ValueError) as exc:
            failures.append(str(exc) if isinstance(exc, KbtoolError) else f"cannot write {path}: {exc}")
    return failures
