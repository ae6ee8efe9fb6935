"""The `kbtool report` commands, which render, merge and compare JSON reports, draw their parity history and write
the migration table."""

import json
import os
import shutil
import sys
from typing import Optional, Tuple

import click

from kbtool import options
from kbtool.errors import KbtoolError
from kbtool.files import refuse_output_over_input


@click.group()
def report() -> None:
    """Render, merge and compare JSON reports.

    A JSON report is what `kbtool check -o FILE.json` writes.

    \b
    Examples:
      kbtool report render all.json -o all.html
      kbtool report diff before.json after.json
    """


# render and merge: the files to write
_REPORT_OUTPUT = options.outputs("Write the report: .json, .md, .html or .xml (JUnit), by extension (repeatable).")


# judge and devices: the runs at --precision highest that confirm a TF32 difference
_HIGHEST = click.option(
    "--highest",
    "highest",
    multiple=True,
    type=click.Path(dir_okay=False),
    metavar="REPORT.json",
    help="A report of the same calls at --precision highest (repeatable): a device result that fails at default "
    "precision, passes there and fits the TF32 error bound is classified tf32.",
)


@report.command("render")
@click.argument("file", type=click.Path(dir_okay=False))
@_REPORT_OUTPUT
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["terminal", "json", "markdown", "html", "junit", "github", "annotations", "summary"]),
    help="Print this format on stdout (default: the terminal view, when no -o is given). github: a Markdown "
    "summary that fits a PR comment and $GITHUB_STEP_SUMMARY; annotations: ::error lines for GitHub Actions; "
    "summary: summary.md, a few lines for a PR comment (also -o summary.md or -o NAME.summary.md).",
)
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="STATUS",
    help="The terminal view shows only these results (as `check --status`).",
)
@click.option("-q", "--quiet", is_flag=True, help="The terminal view: the verdict line only.")
@click.option("-v", "--verbose", is_flag=True, help="The terminal view: everything (as `check -v`).")
def report_render(
    file: str, outputs: Tuple[str, ...], fmt: Optional[str], statuses: Tuple[str, ...], quiet: bool, verbose: bool
) -> None:
    """Render a JSON report again.

    Writes the same files `kbtool check -o` wrote from it.

    \b
    Examples:
      kbtool report render all.json
      kbtool report render all.json -o all.md -o all.xml
      kbtool report render reports/parity.json --status unexplained
    """
    verbosity = options.verbosity(quiet, verbose)
    from kbtool import reports
    from kbtool.reports import view
    from kbtool.reports.load import read_report
    from kbtool.reports.text import encodable

    statuses = view.check_statuses(statuses)
    fmt = fmt or (None if outputs else "terminal")
    if statuses and fmt != "terminal":
        raise KbtoolError(
            "--status filters the terminal view only; files and --format {} hold the whole report".format(fmt or "json")
        )
    refuse_output_over_input(outputs, [file])
    report = read_report(file)
    reports.prepare_outputs(outputs)
    failures = reports.write_all(report, outputs, echo=lambda line: click.echo(line, err=True))
    if fmt == "terminal":
        shown = view.filtered(report, statuses)
        reports.render(shown, "terminal", verbosity=verbosity)
        if statuses:
            click.echo(view.shown_line(report, shown, statuses), err=True)
    elif fmt:
        click.echo(encodable(reports.render(report, fmt, **({"source": file} if fmt == "summary" else {}))), nl=False)
    if failures:
        click.echo("kbtool: error: {}".format("; ".join(failures)), err=True)
    sys.exit(2 if failures else 0)


@report.command("merge")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_REPORT_OUTPUT
@click.option("--allow-incomplete", is_flag=True, help="Merge interrupted reports too (the merge is incomplete).")
@click.option("--strict", is_flag=True, help="Judge the merged report as `check --strict` does.")
@options.KNOWN
def report_merge(
    files: Tuple[str, ...],
    outputs: Tuple[str, ...],
    allow_incomplete: bool,
    strict: bool,
    known_paths: Tuple[str, ...],
    no_shipped_known: bool,
) -> None:
    """Merge shards' or backends' reports into one.

    The parts are the JSON reports of shards (`check --shard K/N`) or of backends run apart. They must come from the same spec, seed, grid, --keras-config and known differences and hold no result twice.
    With no -o the merged JSON goes to stdout. Exit code: 0 the merged run is ok, 1 it is not (as `check`),
    2 reports that cannot be merged or a file that could not be written.

    \b
    Examples:
      kbtool report merge part1.json part2.json -o all.json -o all.html
      kbtool report merge part*.json --strict -o all.json
    """
    from kbtool import reports
    from kbtool.reports import merge as merge_mod
    from kbtool.reports.load import read_report
    from kbtool.reports.verdict import exit_code, verdict_reasons

    refuse_output_over_input(outputs, (*files, *known_paths))
    parts = [(name, read_report(name)) for name in merge_mod.distinct_files(files)]
    known_files = options.known_files(known_paths, no_shipped_known)
    merged = merge_mod.merge(parts, allow_incomplete=allow_incomplete, strict=strict, known_files=known_files)
    reports.prepare_outputs(outputs)
    failures = reports.write_all(merged, outputs, echo=lambda line: click.echo(line, err=True))
    if not outputs:
        click.echo(reports.render(merged, "json"), nl=False)
    reasons = verdict_reasons(merged)
    click.echo(
        "kbtool: merged {} reports: {} results; {}".format(
            len(parts), len(merged["results"]), "ok" if merged["summary"]["ok"] else "not ok: " + ", ".join(reasons)
        ),
        err=True,
    )
    if failures:
        click.echo("kbtool: error: {}".format("; ".join(failures)), err=True)
    sys.exit(2 if failures else exit_code(merged))


@report.command("judge")
@click.argument("file", metavar="REPORT.json", type=click.Path(dir_okay=False))
@options.KNOWN
@_HIGHEST
@_REPORT_OUTPUT
@click.option("--strict", is_flag=True, help="Judge the report as `check --strict` does.")
def report_judge(
    file: str,
    known_paths: Tuple[str, ...],
    no_shipped_known: bool,
    highest: Tuple[str, ...],
    outputs: Tuple[str, ...],
    strict: bool,
) -> None:
    """Judge a stored report's results again against a known-differences file.

    The report (JSON, or gzipped JSON) keeps its verdicts; the known differences of --known (default: the shipped
    file) are applied anew, as `check` applies them: a result recorded elsewhere explained while its fingerprint
    holds, `changed` where it fails otherwise, stale entries named. This is how a report made on another machine
    (a GPU, another CI) is gated and then recorded (`kbtool known record`). A report made with another spec is
    judged by the entries it carries and the device entries of the known file. With --highest, a
    device's TF32 differences are named (`device_difference: tf32`, both runs' numbers). With no -o the judged
    JSON goes to stdout. Exit code: 0 ok, 1 not ok (as `check`), 2 a report that cannot be read or a file that
    could not be written.

    \b
    Examples:
      kbtool report judge gpu.json.gz -o judged.json -o judged.html
      kbtool report judge gpu.json.gz --highest gpu-highest.json.gz -o judged.json
      kbtool report judge ci.json --known my_known.yaml --strict
    """
    from kbtool import reports
    from kbtool.reports import judge as judge_mod
    from kbtool.reports.load import read_report
    from kbtool.reports.verdict import exit_code, verdict_reasons

    refuse_output_over_input(outputs, (file, *highest, *known_paths))
    stored = read_report(file)
    at_highest = [(name, read_report(name)) for name in highest]
    known_files = options.known_files(known_paths, no_shipped_known)
    judged = judge_mod.judge(file, stored, known_files, strict=strict, highest=at_highest)
    reports.prepare_outputs(outputs)
    failures = reports.write_all(judged, outputs, echo=lambda line: click.echo(line, err=True))
    if not outputs:
        click.echo(reports.render(judged, "json"), nl=False)
    counts = judge_mod.counts(judged)
    click.echo(
        "kbtool: judged {}: {} results, {} pass, {} known, {} unexplained ({} changed){}; {}".format(
            file,
            len(judged["results"]),
            counts["pass"],
            counts["known"],
            counts["unexplained"],
            counts["changed"],
            "".join(f", {n} classified {kind}" for kind, n in sorted(counts.items()) if kind.startswith("tf32")),
            "ok" if judged["summary"]["ok"] else "not ok: " + ", ".join(verdict_reasons(judged)),
        ),
        err=True,
    )
    if failures:
        click.echo("kbtool: error: {}".format("; ".join(failures)), err=True)
    sys.exit(2 if failures else exit_code(judged))


@report.command("devices")
@click.argument("cpu", metavar="CPU.json", type=click.Path(dir_okay=False))
@click.argument("device", metavar="DEVICE.json", type=click.Path(dir_okay=False))
@_HIGHEST
@options.outputs("Write the comparison: .json or .md, by extension (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def report_devices(cpu: str, device: str, highest: Tuple[str, ...], outputs: Tuple[str, ...], as_json: bool) -> None:
    """Show which results a device computes otherwise than the CPU.

    CPU.json and DEVICE.json are runs of the same calls (`check --device cpu`, `check --device gpu`). Each call
    both hold is compared by its verdict; one that differs is named: tf32 (a matmul or convolution within the
    TF32 error bound that passes at --precision highest, given by --highest), tf32-unconfirmed (no --highest
    report holds it), device only, passes on device, fails otherwise. Both sides' numbers are shown.

    Exit code: 1 when a call is `device only` or `fails otherwise` (a device difference no kind names), 0
    otherwise, 2 on a report that cannot be read or a file that cannot be written.

    \b
    Examples:
      kbtool report devices cpu.json gpu.json --highest gpu-highest.json
      kbtool report devices cpu.json gpu.json -o devices.md -o devices.json
    """
    from kbtool import files
    from kbtool.reports import devices as devices_mod
    from kbtool.reports.load import read_report

    writers = {".json": devices_mod.as_json, ".md": devices_mod.markdown}
    refuse_output_over_input(outputs, (cpu, device, *highest))
    for path in outputs:
        if os.path.splitext(path)[1].lower() not in writers:
            raise KbtoolError(f"cannot write {path}: the comparison is written as .json or .md")
        files.refuse_missing_folder(path)
    comparison = devices_mod.compare(
        (cpu, read_report(cpu)), (device, read_report(device)), [(name, read_report(name)) for name in highest]
    )
    for path in outputs:
        try:
            files.write_atomic(path, writers[os.path.splitext(path)[1].lower()](comparison))
        except OSError as exc:  # a full disk, a file-size limit (EFBIG), a folder in the way
            raise KbtoolError(f"cannot write {path}: {exc.strerror or exc}")
        click.echo(f"wrote {path}", err=True)
    if as_json:
        click.echo(devices_mod.as_json(comparison), nl=False)
    elif not outputs:
        click.echo(devices_mod.terminal(comparison, width=shutil.get_terminal_size((100, 24)).columns), nl=False)
    else:
        click.echo(devices_mod.summary(comparison), err=True)
    sys.exit(0 if comparison["ok"] else 1)


@report.command("diff")
@click.argument("old", metavar="BASELINE", type=click.Path(dir_okay=False))
@click.argument("new", metavar="RUN", type=click.Path(dir_okay=False))
@click.option(
    "--full",
    is_flag=True,
    help="Compare everything: a result only in BASELINE is `no longer run` (worse), every backend counts.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the differences as JSON.")
@options.outputs("Also write the differences, every one listed: .json or .md, by extension (repeatable).")
def report_diff(old: str, new: str, full: bool, as_json: bool, outputs: Tuple[str, ...]) -> None:
    """Show what changed from the BASELINE report to the RUN report.

    By default only what RUN ran is judged: the results both reports hold, the backends RUN names, and the
    results only RUN has; those only BASELINE has are counted (a partial run is not a regression). Per op ×
    backend: new failures, fixed, other status changes, new results; backend versions, known-difference counts,
    newly stale entries. Then a line of what was compared, and the verdict line (worse, not worse, or nothing
    compared). With --full a result only in BASELINE is `no longer run`, and worse.

    Exit code: 1 when something got worse (a result RUN and BASELINE both hold that is unexplained in RUN and
    was not in BASELINE, a result only in RUN that is unexplained, a backend that no longer starts, a newly stale
    known difference; with --full a result no longer run) or when the two share no result; 0 otherwise; 2 on
    unreadable reports or a file that could not be written.

    \b
    Examples:
      kbtool report diff reports/parity.json run.json
      kbtool report diff baseline.json run.json -o diff.md
      kbtool report diff before.json after.json --full --json
    """
    from kbtool import files
    from kbtool.reports import diff as diff_mod
    from kbtool.reports.load import read_report

    writers = {
        ".json": lambda found: json.dumps(found, indent=2) + "\n",
        ".md": lambda found: diff_mod.render_markdown(found, old, new),
    }
    refuse_output_over_input(outputs, (old, new))
    for path in outputs:
        if os.path.splitext(path)[1].lower() not in writers:
            raise KbtoolError(f"cannot write {path}: the differences are written as .json or .md")
    found = diff_mod.diff(read_report(old), read_report(new), full=full)
    for path in outputs:
        try:
            files.write_atomic(path, writers[os.path.splitext(path)[1].lower()](found))
        except OSError as exc:  # a full disk, a file-size limit (EFBIG), a folder in the way
            raise KbtoolError(f"cannot write {path}: {exc.strerror or exc}")
        click.echo(f"wrote {path}", err=True)
    if as_json:
        click.echo(json.dumps(found, indent=2))
    else:
        width = shutil.get_terminal_size((80, 24)).columns
        click.echo(diff_mod.render_text(found, old, new, width=max(width, 40)), nl=False)
    sys.exit(1 if found["worse"] else 0)


@report.command("history-add")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False), metavar="REPORT.json...")
@click.option(
    "--history",
    "history_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The history file (JSON Lines) to append to; made when missing.",
)
def report_history_add(files: Tuple[str, ...], history_path: str) -> None:
    """Append saved reports' runs to a parity history file.

    One line per backend per report: its date, versions, counts by status, pass as is, conformance, spec SHA-256
    and a digest per op. Earlier lines are never changed; the lines are added all or nothing, under a lock (FILE.lock:
    runs at once each add theirs); a run the file already holds (same date and backend) is skipped. Every report is read before anything is written. Exit code: 0 appended, 2 a report or the history
    file that cannot be used.

    \b
    Examples:
      kbtool report history-add k224.json k225.json --history parity.jsonl
      kbtool report history parity.jsonl -o history.html
    """
    from kbtool.reports import history
    from kbtool.reports.load import read_report
    from kbtool.reports.merge import distinct_files

    refuse_output_over_input([history_path], files)
    history.check_target(history_path)
    lines = []
    for name in distinct_files(files):
        try:
            lines.extend(history.lines_of(read_report(name)))
        except KbtoolError as exc:
            text = str(exc)
            raise KbtoolError(text if name in text else f"{name}: {text}")
    written, skipped = history.append(history_path, lines)
    click.echo(
        "kbtool: appended {} line{} to {}{}".format(
            written,
            "" if written == 1 else "s",
            history_path,
            f" ({skipped} already there)" if skipped else "",
        ),
        err=True,
    )


@report.command("history")
@click.argument("history_path", metavar="FILE", type=click.Path(dir_okay=False))
@click.option(
    "--output", "-o", "output", type=click.Path(dir_okay=False), help="Write the page here (.html, .md or .json)."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["terminal", "markdown", "json", "html"]),
    help="The format (default: by -o's extension, else the terminal view on stdout).",
)
def report_history(history_path: str, output: Optional[str], fmt: Optional[str]) -> None:
    """Draw a parity history file: parity per backend over releases, and the ops that changed.

    Per base backend: pass as is and conformance over its releases in version order (and a backend's plain runs
    by date), as a chart and a table, then the changes by release: for each consecutive pair the ops whose
    results changed, with their counts before and after. A bad line is named by its line number (stderr and the
    page) and left out. Exit code: 0 drawn, 2 a file that cannot be read or written.

    \b
    Examples:
      kbtool report history parity.jsonl
      kbtool report history parity.jsonl -o history.html
      kbtool report history parity.jsonl --format json
    """
    from kbtool.reports import check_writable, history
    from kbtool.reports.text import encodable

    refuse_output_over_input([output], [history_path])
    if output:
        by_extension = history.format_of(output)
        if fmt and fmt != by_extension:
            raise KbtoolError(f"--format {fmt} does not match {output!r}")
        fmt = by_extension
        check_writable(output)
    entries, problems = history.read(history_path)
    if problems and not entries:  # a check report, a bench report, any other file: not a history drawn empty, exit 0
        rest = problems[0][len(history_path) :]  # ":N: why" of a line, ": why" of the file
        first = "line " + rest[1:] if rest[1:2].isdigit() else rest.lstrip(": ")
        raise KbtoolError(
            f"{history_path}: not a parity history (no line of it is one; {first}); a check report goes into one "
            "with `kbtool report history-add REPORT.json --history FILE`"
        )
    for problem in problems:
        click.echo(f"kbtool: warning: bad history line: {problem}", err=True)
    text = encodable(history.render(history.view(history_path, entries, problems), fmt or "terminal"))
    _emit(text, output)


@report.command("migration")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the table here (.md or .html).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "html"]),
    help="The format (default: by -o's extension, else markdown on stdout).",
)
@options.MAP
@options.SPEC
def report_migration(
    files: Tuple[str, ...], output: Optional[str], fmt: Optional[str], map_path: Optional[str], spec_path: Optional[str]
) -> None:
    """Write the K.* -> Keras 3 migration table.

    Every function of the spec with its Keras 3 expression (or why there is none), and beside it the parity
    verdict of each keras3-* engine in the given check reports (none given: no verdicts).

    \b
    Examples:
      kbtool report migration reports/parity.json -o migration.md
      kbtool report migration reports/parity.json --format html
    """
    from kbtool.reports import check_writable, migration
    from kbtool.reports.load import read_report
    from kbtool.reports.merge import distinct_files
    from kbtool.reports.text import encodable
    from kbtool.specs import keras3_map as map_mod
    from kbtool.specs import loader

    refuse_output_over_input([output], (*files, map_path, spec_path))
    if output:
        extension = os.path.splitext(output)[1]
        by_extension = {".md": "markdown", ".html": "html"}.get(extension)
        if by_extension is None:
            raise KbtoolError(f"cannot tell the format of {output!r}: use .md or .html")
        if fmt and fmt != by_extension:
            raise KbtoolError(f"--format {fmt} does not match {output!r}")
        fmt = by_extension
        check_writable(output)
    keras3_map = map_mod.load(map_path, list(loader.load(spec_path).ops))
    reports = [read_report(name) for name in distinct_files(files)] if files else []
    text = encodable(migration.render(keras3_map, reports, fmt or "markdown"))
    _emit(text, output)


def _emit(text: str, output: Optional[str]) -> None:
    """A rendered view: to stdout, or written (atomically) to `output` and said on stderr."""
    from kbtool.files import write_atomic

    if not output:
        click.echo(text, nl=False)
        return
    try:
        write_atomic(output, text)
    except OSError as exc:
        raise KbtoolError(f"cannot write {output}: {exc.strerror or exc}")
    click.echo(f"wrote {output}", err=True)
