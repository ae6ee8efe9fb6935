"""One known-differences entry (`KnownEntry`): what it targets (op, case, backend, mode, device, the backend's
versions) and explains (status and message regex), numbered as in its file, with the file it came from (`source`, a
`KnownSource`), its identity (`id`: what it targets and explains, stable while the file is edited around it) and its
content hash (`digest`: what a report references it by); and the spec's alias entries."""

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from kbtool.known.fingerprint import Recorded
from kbtool.known.globs import Globs, backend_matches, backend_of, device_of, matches
from kbtool.known.regexes import Number, search
from kbtool.known.versions import BackendVersions, Ranges, Versions, satisfies, versions_of
from kbtool.results import Result, Status

if TYPE_CHECKING:  # pragma: no cover
    from kbtool.specs.loader import Spec

ENTRY_FIELDS = (
    "op",
    "case",
    "backend",
    "mode",
    "device",
    "precision",
    "status",
    "versions",
    "match",
    "reason",
    "count",
    "verified_by",
    "every_call",
    "overrides",
    "source",
    "results",
)
# what an entry's identity is made of: what it targets and how it explains (not its reason, count or record)
IDENTITY_FIELDS = ("op", "case", "backend", "mode", "device", "precision", "status", "versions", "match", "verified_by")
DIGEST_CHARS = 16  # hex digits of an entry's content hash a report keeps (64 bits)
# the backends that implement Keras 2 names only (the reference, numpy, answers the Keras 1.x names too; so do the
# keras3-* engines, whose port defines each alias as its specs/keras3_map.yaml row says); "*.*" is any custom
# backend module
KERAS2_BACKENDS = ["tensorflow", "tensorflow1", "theano", "cntk", "mxnet", "plaidml", "keras3", "*.*"]
# the other form earlier kbtools wrote alias entries in (while the port left the aliases out): their reports still load
EARLIER_KERAS2_BACKENDS = [
    ["tensorflow", "tensorflow1", "theano", "cntk", "mxnet", "plaidml", "keras3", "keras3-*", "*.*"]
]


def _frozen_globs(value: Any) -> Optional[Globs]:
    return None if value is None else value if isinstance(value, str) else tuple(value)


def plain(value: Optional[Globs]) -> Any:
    """Globs as the file spells them (a list, or one string)."""
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class KnownSource:
    """Where an entry comes from: a known-differences file (`path` as shown, its place `layer` among the files a run
    applies, 0 first; `shipped` for kbtool's own file), or the spec's aliases (`SPEC_SOURCE`)."""

    path: str
    layer: int = 0
    shipped: bool = False

    @property
    def is_spec(self) -> bool:
        return self.path == "spec" and self.layer < 0


SPEC_SOURCE = KnownSource(path="spec", layer=-1)


@dataclass(frozen=True)
class KnownEntry:
    """One validated entry: built once from the file's (or a report's) validated dict, then asked whether it
    targets or explains a result; nothing else reads entries by key. Absent optional keys are None; `number` is
    the entry's number in its file (counted from 1, as problems name it), or 'spec alias'."""

    op: Globs
    backend: Globs
    reason: str
    case: Optional[Globs] = None
    mode: Optional[Globs] = None
    # the devices its results ran on (--device; a glob or a list); None: any device, as before devices existed
    device: Optional[Globs] = None
    # the --precision its results ran at ("default": TF32 where the device has it, "highest"); None: either
    precision: Optional[str] = None
    status: Optional[Globs] = None
    # the releases of its backends' packages it is about ({package: PEP 440 specifiers}); None: every release
    versions: Optional[Ranges] = None
    match: Optional[str] = None
    count: Optional[int] = None
    verified_by: Optional[str] = None
    # the calls its backends get wrong every time, for its reason: {dimension: [documented values]} (a call holding
    # one of the values of each dimension), a list of such mappings (the calls of each), or "any" (every call of its
    # ops in its modes); a blind spot it names has no passing sibling to find (kbtool/specs/coverage.py: Claim)
    every_call: Optional[Union[str, Mapping[str, List[Any]], List[Mapping[str, List[Any]]]]] = field(
        default=None, compare=False
    )
    # the ids of entries of earlier files it replaces (`overrides: ID`, or a list): it takes the first one's place
    overrides: Optional[Tuple[str, ...]] = field(default=None, compare=False)
    source: Optional[KnownSource] = field(default=None, compare=False)
    # the machine part `kbtool known record` writes: {result key: fingerprint} of every result the entry explained
    # in the recorded run (None: never recorded, the entry explains by status and regex alone)
    # 'op case backend mode [device]' -> its fingerprint, or the fingerprints it may have (fingerprint.holds)
    results: Optional[Mapping[str, Recorded]] = field(default=None, compare=False, repr=False)
    number: Number = field(default=0, compare=False)
    keys: Tuple[str, ...] = field(default=(), compare=False, repr=False)  # the dict's key order, kept for to_dict

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any], number: Number = 0) -> "KnownEntry":
        """From a dict that passed `validate` (or an alias entry of the spec)."""
        return cls(
            op=_frozen_globs(entry["op"]) or "",
            backend=_frozen_globs(entry["backend"]) or "",
            reason=entry["reason"],
            case=_frozen_globs(entry.get("case")),
            mode=_frozen_globs(entry.get("mode")),
            device=_frozen_globs(entry.get("device")),
            precision=entry.get("precision"),
            status=_frozen_globs(entry.get("status")),
            versions=tuple((str(k), str(v)) for k, v in entry["versions"].items())
            if isinstance(entry.get("versions"), dict)
            else None,
            match=entry.get("match"),
            count=entry.get("count"),
            verified_by=entry.get("verified_by"),
            every_call=entry.get("every_call"),
            overrides=_frozen_ids(entry.get("overrides")),
            source=SPEC_SOURCE if entry.get("source") == "spec" else None,
            results=dict(entry["results"]) if isinstance(entry.get("results"), dict) else None,
            number=number,
            keys=tuple(str(key) for key in entry),
        )

    def to_dict(self) -> Dict[str, Any]:
        """The entry as the file (or the report's known_entries) spells it: keys in the file's order."""
        out: Dict[str, Any] = {}
        order = self.keys + tuple(k for k in ENTRY_FIELDS if k not in self.keys)
        for key in order:
            value = getattr(self, key) if key in ENTRY_FIELDS else None
            if key == "source":  # said only of the spec's alias entries (a file's entry is from its file)
                value = "spec" if self.from_spec else None
            if value is not None:
                out[key] = dict(value) if key in ("results", "versions") or isinstance(value, Mapping) else plain(value)
        return out

    @property
    def from_spec(self) -> bool:
        return self.source is not None and self.source.is_spec

    @property
    def id(self) -> str:
        """The entry's identity: its first op and a hash of what it targets and how it explains (IDENTITY_FIELDS),
        e.g. `dot-3fa9c1d2`. It stays while `known record` rewrites its record or its reason is reworded; two
        entries of two files with one id are the same difference said twice (`overrides: ID` replaces one)."""
        scope = {key: _normal(getattr(self, key)) for key in IDENTITY_FIELDS}
        digest = hashlib.sha256(json.dumps(scope, sort_keys=True).encode("utf-8")).hexdigest()
        first = self.op if isinstance(self.op, str) else (self.op[0] if self.op else "")
        return f"{first}-{digest[:8]}"

    @property
    def digest(self) -> str:
        """The hash of the entry's whole content as its file spells it (`to_dict`): what a report references it by."""
        text = json.dumps(self.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_CHARS]

    @property
    def place(self) -> Tuple[int, Number]:
        """(its file's layer, its number there): unique among the entries a run applies."""
        return (self.source.layer if self.source is not None else 0, self.number)

    @property
    def where(self) -> str:
        """'FILE entry N' (or 'spec alias'), as a line names it."""
        if self.from_spec:
            return "spec alias"
        return f"{self.source.path} entry {self.number}" if self.source is not None else f"entry {self.number}"

    @property
    def recorded(self) -> bool:
        """Whether `kbtool known record` recorded the results the entry explains (then it explains those alone)."""
        return self.results is not None

    def targets(self, result: Any, versions: "Union[Versions, BackendVersions, None]" = None) -> bool:
        """Whether the entry is about this result (op, case, backend, mode, device, and the backend's versions),
        whatever its outcome. `result` is a Result or anything with op, case, backend and mode (and device: the CPU
        when it has none). A derived backend's result of a function it shares with its base backend (`inherits`) is
        the base's result: the base's entries are about it. A base backend's entries are about its releases too
        (`backend_matches`); an entry with `versions` only about results of a backend whose versions (`versions`:
        the caller's lookup, or the versions the workers reported by backend name) satisfy them."""
        return self.names(result) and self.in_range(result, versions)

    def names(self, result: Any) -> bool:
        """The globs alone (op, case, backend, mode, device): whether the entry names this result, whatever the
        versions of its backend."""
        return (
            matches(result.op, self.op)
            and matches(result.case, "*" if self.case is None else self.case)
            and backend_matches(backend_of(result), self.backend)
            and matches(result.mode, "*" if self.mode is None else self.mode)
            and (self.device is None or matches(device_of(result), self.device))
        )

    def in_range(self, result: Any, versions: "Union[Versions, BackendVersions, None]" = None) -> bool:
        """Whether the versions of the result's backend satisfy the entry's `versions` (always, without them)."""
        if not self.versions:
            return True
        return satisfies(versions_of(result, versions), self.versions)

    def explains(self, result: Result, versions: "Union[Versions, BackendVersions, None]" = None) -> bool:
        """Whether the entry targets the result (`versions` as for `targets`) and the result is a non-passing one
        with the entry's status and message (a regex search that times out does not match)."""
        return self.targets(result, versions) and self.judge(result) is True

    def judge(self, result: Result, timeout: Optional[float] = None) -> Optional[bool]:
        """The status and match condition alone: True, False, or None when the regex timed out on the message."""
        status = Status(result.status)
        if status == Status.PASS or not matches(status.value, "*" if self.status is None else self.status):
            return False
        return True if not self.match else search(self.match, result.message, timeout)


def _frozen_ids(value: Any) -> Optional[Tuple[str, ...]]:
    return None if value is None else (value,) if isinstance(value, str) else tuple(str(v) for v in value)


def _normal(value: Any) -> Any:
    """A field's value for the identity hash: globs as sorted lists (their order says nothing)."""
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):  # versions: ((package, specifiers), ...)
        return sorted([list(pair) for pair in value])
    if isinstance(value, (tuple, list)):
        return sorted(str(v) for v in value)
    return value


def entry_of(entry: Union[KnownEntry, Mapping[str, Any]]) -> KnownEntry:
    """A KnownEntry, from a validated dict where need be."""
    return entry if isinstance(entry, KnownEntry) else KnownEntry.from_dict(entry)


def numbered(entries: Iterable[Union[KnownEntry, Mapping[str, Any]]]) -> List[KnownEntry]:
    """Entries as KnownEntry, numbered as in their file (the spec's alias entries are 'spec alias' and are not
    counted; an entry read from a file keeps the number it has there): the one place entries are numbered. Dicts
    must have passed `validate`."""
    out: List[KnownEntry] = []
    numbers: Dict[Optional[KnownSource], int] = {}
    for entry in entries:
        if isinstance(entry, KnownEntry) and entry.source is not None and not entry.from_spec and entry.number != 0:
            out.append(entry)  # numbered in its file when it was read (layers may interleave files)
            continue
        source = entry.source if isinstance(entry, KnownEntry) else None
        from_spec = (
            (source is not None and source.is_spec) if isinstance(entry, KnownEntry) else entry.get("source") == "spec"
        )
        numbers[source] = numbers.get(source, 0) + (0 if from_spec else 1)
        label: Number = "spec alias" if from_spec else numbers[source]
        if isinstance(entry, KnownEntry):
            out.append(entry if entry.number == label else replace(entry, number=label))
        else:
            out.append(KnownEntry.from_dict(entry, label))
    return out


def alias_entries(spec: "Spec") -> List[KnownEntry]:
    """One entry per Keras 1.x alias in the spec: Keras 2 backends do not have the old name."""
    return [
        KnownEntry(
            op=name,
            backend=tuple(KERAS2_BACKENDS),
            status=Status.UNSUPPORTED.value,
            reason="Keras 1.x name, renamed to {} in Keras 2".format(entry["alias_of"]),
            source=SPEC_SOURCE,
            number="spec alias",
        )
        for name, entry in sorted(spec.ops.items())
        if entry.get("alias_of")
    ]
