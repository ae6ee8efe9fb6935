"""The `kbtool known` commands: `list` and `show` the entries a run applies (the shipped file's, then each --known
file's, kbtool/known/layers.py), each with its id and the file it comes from; `record` writes the results each entry
explains into one known file."""

import dataclasses
import os
from typing import Any, Dict, List, Tuple

import click

from kbtool import options
from kbtool.errors import KbtoolError


@click.group()
def known() -> None:
    """Known differences: list them, show one, record them from a run.

    \b
    Examples:
      kbtool known list --op dot
      kbtool known list --known my_known.yaml --json
      kbtool known show dot-3fa9c1d2
      kbtool known record full.json
    """


def _layered(known_paths: Tuple[str, ...], no_shipped_known: bool) -> List[Any]:
    from kbtool import known as known_mod
    from kbtool.specs import loader

    return list(known_mod.load_layers(options.known_files(known_paths, no_shipped_known), loader.load()))


@known.command("list")
@options.KNOWN
@click.option("--op", "ops", multiple=True, metavar="OP", help="Only the entries about this op (repeatable).")
@click.option("--backend", "backends", multiple=True, metavar="NAME", help="Only the entries about this backend.")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON on stdout.")
def known_list(
    known_paths: Tuple[str, ...], no_shipped_known: bool, ops: Tuple[str, ...], backends: Tuple[str, ...], as_json: bool
) -> None:
    """List the known differences a check applies, each with its id and file.

    The shipped file's entries apply first (unless --no-shipped-known), then each --known file's, in order; an
    entry that says `overrides: ID` takes the place of that entry of an earlier file. Exit code: 0, or 2 for a file
    that cannot be read or entries that collide.

    \b
    Examples:
      kbtool known list --op dot
      kbtool known list --known my_known.yaml --backend my_pkg.mod@tensorflow
    """
    import json
    import shutil

    from kbtool.known.globs import backend_matches, matches

    entries = [
        e
        for e in _layered(known_paths, no_shipped_known)
        if (not ops or any(matches(op, e.op) for op in ops))
        and (not backends or any(backend_matches(b, e.backend) for b in backends))
    ]
    if as_json:
        click.echo(json.dumps([_listed(e) for e in entries], indent=2))
        return
    width = min(120, max(40, shutil.get_terminal_size((80, 24)).columns))
    current = None
    for entry in entries:  # grouped by file, in the order they apply (an override sits where its target was)
        if entry.source.path != current:
            current = entry.source.path
            click.echo(f"{current}:")
        click.echo(_line(entry, width))
    click.echo(_footer(entries), err=True)


def _listed(entry: Any) -> Dict[str, Any]:
    """An entry as `known list --json` gives it: its id, file and number, then what the file says (no record)."""
    said = {k: v for k, v in entry.to_dict().items() if k != "results"}
    if entry.results is not None:
        said["recorded"] = len(entry.results)
    return dict({"id": entry.id, "file": entry.source.path, "entry": entry.number}, **said)


def _line(entry: Any, width: int) -> str:
    """One entry in a line of at most `width` columns: its number in its file, id, ops on backends."""

    def words(globs: Any) -> str:
        items = [globs] if isinstance(globs, str) else list(globs)
        return ", ".join(items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")

    override = f" (overrides {', '.join(entry.overrides)})" if entry.overrides else ""
    head = f"  {entry.number:>4}  {entry.id:<20}  "
    text, room = f"{words(entry.op)} on {words(entry.backend)}{override}", max(10, width - len(head))
    return head + (text if len(text) <= room else text[: room - 1] + "…")


def _footer(entries: List[Any]) -> str:
    counts: Dict[str, int] = {}
    for entry in entries:
        counts[entry.source.path] = counts.get(entry.source.path, 0) + 1
    return "{} entries: {}".format(len(entries), ", ".join(f"{n} from {path}" for path, n in counts.items()) or "none")


@known.command("show")
@click.argument("entry_id", metavar="ID")
@options.KNOWN
def known_show(entry_id: str, known_paths: Tuple[str, ...], no_shipped_known: bool) -> None:
    """Show one known difference: its file, its number there, and what it says.

    ID is an entry's id as `kbtool known list` gives it. Exit code: 0, 2 for an id no entry has.

    \b
    Examples:
      kbtool known show dot-3fa9c1d2
    """
    import yaml

    entries = _layered(known_paths, no_shipped_known)
    found = [e for e in entries if e.id == entry_id]
    if not found:
        raise KbtoolError(f"no known entry has id {entry_id!r} (`kbtool known list` shows them)")
    entry = found[0]
    click.echo(f"{entry.id}: {entry.source.path} entry {entry.number}")
    said = _listed(entry)
    del said["id"], said["file"], said["entry"]
    click.echo(yaml.safe_dump(said, sort_keys=False, width=78, allow_unicode=True, default_flow_style=None).rstrip())


@known.command("record")
@click.argument("report_path", metavar="REPORT.json", type=click.Path(dir_okay=False))
@options.KNOWN
def known_record(report_path: str, known_paths: Tuple[str, ...], no_shipped_known: bool) -> None:
    """Record the results each known difference explains.

    Writes, for every entry of the known-differences file, the key and fingerprint of each result it explains
    in REPORT.json (`kbtool check -o REPORT.json`), and their count: from then on the entry explains exactly those
    results, each while its fingerprint holds (a known result that fails differently is `changed`).

    It writes one file: the last --known, else the shipped one (the line it prints names it); the entries of the
    files before it apply first, as in a check. The file is edited in place as text (comments and layout stay) for
    review in the diff. A report of part of the spec records the op and backend pairs it ran and keeps the rest; an
    interrupted one, the pairs it ran whole (the others are named). Exit code: 0 written (or already current), 2 a
    report that cannot be recorded (filtered by case or mode, other settings, interrupted before a pair ran whole), an
    entry that is stale or dead in it, or a file that cannot be read or written.

    \b
    Examples:
      kbtool check -o full.json
      kbtool known record full.json
      kbtool known record full.json --known my_known.yaml
    """
    from kbtool import files
    from kbtool.known import record as record_mod
    from kbtool.reports.report import Report
    from kbtool.specs import loader

    known_files = options.known_files(known_paths, no_shipped_known)
    known_files.files()  # a file given twice: one line
    path = known_files.record_target
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
        _record_locked(path, spec, report, known_files)


def _record_locked(path: str, spec: Any, report: Any, known_files: Any) -> None:
    """known record's read-modify-write of the known file `path`, with its lock held: read here, not before, so an
    update another run made while this one waited is kept."""
    from kbtool import files
    from kbtool import known as known_mod
    from kbtool.check.run import known_entries_for
    from kbtool.known import record as record_mod
    from kbtool.runners import envs

    layered = known_entries_for(spec, known_files)
    last = len(known_files.files()) - 1  # the file written is the last layer
    entries = [e for e in layered if e.source is not None and e.source.layer == last]
    entries.sort(key=lambda e: e.number)
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
        layered=layered,
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
    which = (
        "the last --known"
        if len(known_files.files()) > 1
        else "the only --known"
        if known_files.paths
        else "the shipped file"
    )
    click.echo(
        "recorded into {} ({}): {} entries, {} results recorded; {}".format(
            path,
            which,
            done.entries,
            done.results,
            f"{len(done.changed_entries)} entries changed" if done.text != text else "already current",
        )
    )
