"""The `kbtool known` commands, which edit the known-differences file (`known record` writes the results each entry
explains)."""

import dataclasses
import os
from typing import Any, Optional

import click

from kbtool import options
from kbtool.errors import KbtoolError


@click.group()
def known() -> None:
    """Known differences: record them from a run.

    \b
    Examples:
      kbtool known record full.json
    """


@known.command("record")
@click.argument("report_path", metavar="REPORT.json", type=click.Path(dir_okay=False))
@options.KNOWN
def known_record(report_path: str, known_path: Optional[str]) -> None:
    """Record the results each known difference explains.

    Writes, for every entry of the known-differences file, the key and fingerprint of each result it explains
    in REPORT.json (`kbtool check -o REPORT.json`), and their count: from then on the entry explains exactly those
    results, each while its fingerprint holds (a known result that fails differently is `changed`).

    The file is edited in place as text (comments and layout stay) for review in the diff. A report of part of
    the spec records the op and backend pairs it ran and keeps the rest; an interrupted one, the pairs it ran whole
    (the others are named). Exit code: 0 written (or already current), 2 a report that cannot be recorded (filtered
    by case or mode, other settings, interrupted before a pair ran whole), an entry
    that is stale or dead in it, or a file that cannot be read or written.

    \b
    Examples:
      kbtool check -o full.json
      kbtool known record full.json
      kbtool known record full.json --known my_known.yaml
    """
    from kbtool import files, paths
    from kbtool.known import record as record_mod
    from kbtool.reports.report import Report
    from kbtool.specs import loader

    path = known_path or paths.known_differences_file()
    files.refuse_output_over_input([path], [report_path])
    report = Report.load(report_path)
    problem = record_mod.settings_problem(report.to_dict())
    if problem:
        raise KbtoolError(f"{report_path}: {problem}")
    spec = loader.load()
    results, skipped = record_mod.whole_pairs(report, spec)  # an interrupted run: the pairs it ran whole
    if skipped:
        click.echo(
            f"kbtool: note: {report_path} was interrupted; not recorded, ran in part: {', '.join(skipped)}", err=True
        )
    report = dataclasses.replace(report, results=results)
    with files.locked(path, "known-differences file"):  # another `known record` may update the file at once
        _record_locked(path, spec, report)


def _record_locked(path: str, spec: Any, report: Any) -> None:
    """known record's read-modify-write of the known file `path`, with its lock held: read here, not before, so an
    update another run made while this one waited is kept."""
    from kbtool import files
    from kbtool import known as known_mod
    from kbtool.check.run import known_entries_for
    from kbtool.known import record as record_mod
    from kbtool.runners import envs

    entries, _ = known_entries_for(spec, path)
    if not entries:
        raise KbtoolError(f"{path}: no known-difference entries to record")
    text = files.read_text(path)
    assert text is not None  # not missing_ok: a missing file is a KbtoolError
    root, _ = files.parse_yaml(path, text)
    done = record_mod.record(
        text,
        root,
        known_mod.numbered(entries),
        report.results,
        versions=known_mod.lookup(report.results, known_mod.reported_versions(report.backends), envs.read_lock),
        precision=str((report.plan or {}).get("precision", "default")),
    )
    _, written = files.parse_yaml(path, done.text)
    problems = known_mod.validate(
        written,
        spec if os.path.dirname(os.path.realpath(spec.path)) == os.path.dirname(os.path.realpath(path)) else None,
    )
    if problems:  # pragma: no cover - the record is made from validated entries
        raise KbtoolError(f"{path}: the recorded file would not load ({problems[0]}); nothing written")
    if done.text != text:
        try:
            files.write_atomic(path, done.text)
        except OSError as exc:  # a full disk, a file over its size limit: one line, the old file is left whole
            raise KbtoolError(f"{path}: cannot write: {exc.strerror or exc}; the file was left as it was")
    click.echo(
        "{}: {} entries, {} results recorded; {}".format(
            path,
            done.entries,
            done.results,
            f"{len(done.changed_entries)} entries changed" if done.text != text else "already current",
        )
    )
