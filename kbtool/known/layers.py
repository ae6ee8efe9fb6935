"""The known-differences files a command applies, as layers: the shipped file (unless --no-shipped-known), then each
--known file in the order given, each adding its entries after the earlier ones'. An entry that says again what an
earlier file's entry says (the same `KnownEntry.id`, or a result both record) is a one-line error, unless it names
that entry in `overrides: ID`: it then takes that entry's place. Every entry knows its file (`KnownEntry.source`).

A report references the entries it applied (those that targeted one of its results) by id and content hash
(`reference`), and embeds them only when asked (`check --embed-known`); reading it back, `resolve` finds each
referenced entry among the known files at hand by its hash, or says in one line which file to pass.
"""

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from kbtool import paths
from kbtool.errors import KbtoolError
from kbtool.known.entry import SPEC_SOURCE, KnownEntry, KnownSource
from kbtool.known.load import load

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.specs.loader import Spec

Record = Dict[str, Any]


@dataclass(frozen=True)
class KnownFiles:
    """Which known-differences files a command applies: the shipped one unless `shipped` is False, then each of
    `paths` (--known, repeatable) in order."""

    paths: Tuple[str, ...] = ()
    shipped: bool = True

    def files(self) -> List[Tuple[str, bool]]:
        """(path, is the shipped file) of each layer, in order; a file given twice is a one-line KbtoolError (the
        shipped file named by --known is its own layer, once)."""
        shipped = paths.known_differences_file()
        out: List[Tuple[str, bool]] = [(shipped, True)] if self.shipped else []
        seen = {os.path.realpath(path): path for path, _ in out}
        for path in self.paths:
            real = os.path.realpath(path)
            if real in seen:
                if real == os.path.realpath(shipped) and self.shipped:
                    continue  # the shipped file, named: it applies already, first
                raise KbtoolError(f"--known {path}: given twice (each file is one layer; give it once)")
            seen[real] = path
            out.append((path, real == os.path.realpath(shipped)))
        return out

    @property
    def record_target(self) -> str:
        """The one file `kbtool known record` writes: the last --known, else the shipped file."""
        if self.paths:
            return self.paths[-1]
        if not self.shipped:
            raise KbtoolError("--no-shipped-known without --known leaves no file to record into: name one with --known")
        return paths.known_differences_file()


SHIPPED = KnownFiles()  # no --known, no --no-shipped-known


def load_layers(known_files: KnownFiles = SHIPPED, spec: Optional["Spec"] = None) -> List[KnownEntry]:
    """Every entry of the files `known_files` names, layered (see the module); each file beside the spec is checked
    against it (a file elsewhere is read, its entries for ops the spec lacks explain nothing)."""
    layers = []
    for layer, (path, shipped) in enumerate(known_files.files()):
        paired = spec is not None and os.path.dirname(os.path.realpath(spec.path)) == os.path.dirname(
            os.path.realpath(path)
        )
        source = KnownSource(paths.shown(path), layer, shipped)
        layers.append([replace(e, source=source) for e in load(path, spec if paired else None)])
    return layered(layers)


def layered(layers: Sequence[Sequence[KnownEntry]]) -> List[KnownEntry]:
    """The entries of each layer after the earlier layers' ones; an entry with `overrides` takes the place of the
    entries it names; a collision with an earlier layer's entry it does not name is a one-line KbtoolError."""
    out: List[KnownEntry] = []
    replaced: Dict[str, KnownEntry] = {}  # id -> the entry that overrode it
    for entries in layers:
        earlier = list(out)
        for entry in entries:
            named = [_overridden(entry, target, earlier, replaced) for target in entry.overrides or ()]
            for target in named:
                replaced[target.id] = entry
            rest = [e for e in earlier if all(e is not t for t in named)]
            clash = _clash(entry, rest)
            if clash is not None:
                raise KbtoolError(
                    f"{entry.where} ({entry.id}) says again what {clash.where} ({clash.id}) says ({_why(entry, clash)}): "
                    f"add `overrides: {clash.id}` to it to replace that entry, or remove it"
                )
            if named:
                at = min(i for i, e in enumerate(out) if any(e is t for t in named))
                out = (
                    [e for e in out[:at] if all(e is not t for t in named)]
                    + [entry]
                    + [e for e in out[at:] if all(e is not t for t in named)]
                )
                earlier = [e for e in earlier if all(e is not t for t in named)]
            else:
                out.append(entry)
    return out


def _overridden(
    entry: KnownEntry, target: str, earlier: Sequence[KnownEntry], replaced: Mapping[str, KnownEntry]
) -> KnownEntry:
    """The earlier file's entry `entry` overrides by id; a one-line KbtoolError when there is none."""
    found = [e for e in earlier if e.id == target and not e.from_spec]
    if found:
        return found[0]
    if target in replaced:
        raise KbtoolError(f"{entry.where}: overrides {target}, which {replaced[target].where} overrides already")
    raise KbtoolError(
        f"{entry.where}: overrides {target}: no entry of an earlier known file has that id "
        "(`kbtool known list` shows each entry's id and file)"
    )


def _clash(entry: KnownEntry, earlier: Sequence[KnownEntry]) -> Optional[KnownEntry]:
    """The first earlier entry that says what `entry` says: the same id, or a result both record."""
    mine = set(entry.results or {})
    for other in earlier:
        if other.from_spec:
            continue
        if other.id == entry.id or (mine and mine & set(other.results or {})):
            return other
    return None


def _why(entry: KnownEntry, other: KnownEntry) -> str:
    if entry.id == other.id:
        return "the same ops, backends, cases, modes, status and match"
    both = sorted(set(entry.results or {}) & set(other.results or {}))
    return f"both record {both[0]!r}"


# ---------------------------------------------------------------------------------------------- reports


def reference(entry: KnownEntry) -> Record:
    """How a report names an entry it applied: its id, its file and number there, its content hash."""
    return {
        "id": entry.id,
        "file": "spec" if entry.from_spec else (entry.source.path if entry.source is not None else "report"),
        "entry": entry.number,
        "sha256": entry.digest,
    }


def file_record(path: str, shipped: bool) -> Record:
    """A report's `known_files` item: the file as shown, the SHA-256 of its bytes (when it can be read)."""
    import hashlib

    record: Record = {"path": paths.shown(path)}
    try:
        with open(path, "rb") as fh:
            record["sha256"] = hashlib.sha256(fh.read()).hexdigest()
    except (OSError, ValueError):
        pass
    if shipped:
        record["shipped"] = True
    return record


def at_hand(name: str, report: Record) -> List[KnownEntry]:
    """The entries of the known files a report names that are at hand with the SHA-256 it recorded (each path as
    written, relative to the current directory, then beside the report); a file that does not load is skipped."""
    out: List[KnownEntry] = []
    for layer, said in enumerate(report.get("known_files") or []):
        path, digest = said.get("path"), said.get("sha256")
        if not path or not digest:
            continue
        candidates = (
            [path] if os.path.isabs(path) else [path, os.path.join(os.path.dirname(os.path.abspath(name)), path)]
        )
        for candidate in candidates:
            if file_record(candidate, False).get("sha256") == digest:
                try:
                    out += [replace(e, source=KnownSource(path, layer)) for e in load(candidate)]
                except KbtoolError:
                    pass
                break
    return out


def resolve(name: str, report: Record, pool: Sequence[KnownEntry]) -> List[KnownEntry]:
    """The entries a report references (`known_refs`), in its order: embedded ones (`known_entries`, held to the
    rules, each with the hash its reference says), else each found by its hash among `pool` (the known files at
    hand and the spec's alias entries); a one-line KbtoolError naming the first one found nowhere."""
    from kbtool.known.load import from_report

    refs = report.get("known_refs") or []
    layer_of = {said.get("path"): i for i, said in enumerate(report.get("known_files") or [])}
    if report.get("known_entries") is not None:
        embedded = from_report(report["known_entries"], name)
        if len(embedded) != len(refs) or any(e.digest != r["sha256"] for e, r in zip(embedded, refs)):
            raise KbtoolError(
                f"{name}: its known_entries are not the entries its known_refs name (their hashes differ); the report "
                "was edited, so its verdict cannot be trusted: run its check again"
            )
        found = embedded
    else:
        by_digest = {e.digest: e for e in pool}
        found = []
        for ref in refs:
            entry = by_digest.get(ref["sha256"])
            if entry is None:
                files = ", ".join(str(f.get("path")) for f in report.get("known_files") or []) or "none"
                raise KbtoolError(
                    f"{name}: known entry {ref['id']} ({ref['file']} entry {ref['entry']}, sha256 {ref['sha256']}) is in "
                    f"no known file at hand (the report applied {files}): pass that file with --known, or rerun the "
                    "check with --embed-known"
                )
            found.append(entry)
    return [
        replace(
            e,
            source=SPEC_SOURCE if r["file"] == "spec" else KnownSource(r["file"], layer_of.get(r["file"], 0)),
            number=r["entry"],
        )
        for e, r in zip(found, refs)
    ]


def in_order(entries: Sequence[KnownEntry]) -> List[KnownEntry]:
    """Entries of several reports, each once (by hash), in the order their files apply them: the spec's aliases,
    then each file's entries by number."""
    seen: Dict[str, KnownEntry] = {}
    for entry in entries:
        seen.setdefault(entry.digest, entry)
    return sorted(seen.values(), key=lambda e: (e.place[0], e.number if isinstance(e.number, int) else 0))
