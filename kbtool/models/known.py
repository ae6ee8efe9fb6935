"""Known model findings (specs/known_models.yaml): the inconsistencies no spec case can carry, each explained by one
cause checked against its engine's source. Op level comes first (localise.py: a call that replays as a spec case is
known through specs/known_differences.yaml or emitted as a case); this file takes what is left: K.rnn with a layer's
own step function, a backend function that is not a documented K.* function, a Keras 3 layer that calls a keras.ops
function its K.* namesake is not, a model an engine refuses to build or train.

The file is parsed once into typed entries (`load`), each asked whether it explains a finding (`explains`); `apply`
turns the findings an entry explains into `known` and returns the entries a run judged and found explaining nothing
(stale: the run exits 1, as check does for its known differences). An entry is judged only by a run that had one of
its engines and every zoo model it names.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from kbtool.errors import KbtoolError
from kbtool.known.globs import Globs, backend_matches, matches
from kbtool.models.records import ModelResult

FILE = os.path.join("specs", "known_models.yaml")
STATUSES = ("unexplained", "error")  # the verdicts an entry can explain

_GLOBS = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
    ]
}
SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["engine", "reason"],
        "properties": {
            "engine": _GLOBS,
            "model": _GLOBS,
            "status": {"oneOf": [{"enum": list(STATUSES)}, {"type": "array", "items": {"enum": list(STATUSES)}}]},
            "call": _GLOBS,
            "match": {"type": "string", "minLength": 1},
            "reason": {"type": "string", "minLength": 20},
            "source": {"type": "string", "minLength": 1},
        },
    },
}


@dataclass(frozen=True)
class ModelKnown:
    """One entry: which findings it explains (engine, model, status, call globs and a regex on the finding's text)
    and why."""

    engine: Globs
    reason: str
    model: Optional[Globs] = None
    status: Optional[Globs] = None
    call: Optional[Globs] = None
    match: Optional[str] = None
    source: str = ""
    number: int = 0  # its place in the file, from 1

    @property
    def id(self) -> str:
        """`model-<call or status>-<hash>`: stable while the reason is reworded (the hash is of what it targets)."""
        scope = {k: getattr(self, k) for k in ("engine", "model", "status", "call", "match")}
        digest = hashlib.sha256(json.dumps(scope, sort_keys=True, default=list).encode("utf-8")).hexdigest()[:8]
        calls = [self.call] if isinstance(self.call, str) else list(self.call or ())
        return f"model-{(calls[0] if calls else 'finding').strip('*') or 'finding'}-{digest}"

    def explains(self, result: ModelResult) -> bool:
        """Whether the entry names this finding (a result that is unexplained or an error): its engine, model, status,
        the call the localiser named (or, where it named none, the entry must name one K.* function itself: every
        explained finding names its call) and its text."""
        if result.verdict not in STATUSES or not backend_matches(result.engine, self.engine):
            return False
        if self.model is not None and not matches(result.model, self.model):
            return False
        if self.status is not None and not matches(result.verdict, self.status):
            return False
        named = result.localisation.call if result.localisation is not None else None
        if named is None:  # what the localiser could not reach, the entry names (a single K.* function)
            if not isinstance(self.call, str) or any(c in self.call for c in "*?["):
                return False
        elif self.call is not None and not matches(named, self.call):
            return False
        return self.match is None or re.search(self.match, finding_text(result)) is not None

    def judged_by(self, engines: Sequence[str], results: Sequence[ModelResult], zoo: Sequence[str]) -> bool:
        """Whether a run can say the entry is stale: it had one of the entry's engines and every zoo model the entry
        names, and (an entry of K.gradients) each of those results had its gradients compared: without a gradient
        majority (a run of two engines that train) no gradient finding can arise."""
        if not any(backend_matches(e, self.engine) for e in engines):
            return False
        named = [m for m in zoo if self.model is None or matches(m, self.model)]
        if not named or not all(m in {r.model for r in results} for m in named):
            return False
        if self.call == "gradients":
            mine = [r for r in results if r.model in named and backend_matches(r.engine, self.engine)]
            return bool(mine) and all(r.gradient is not None for r in mine)
        return True


def finding_text(result: ModelResult) -> str:
    """What `match` is searched in: the result's reason, its localisation's why and the call as printed."""
    where = result.localisation
    parts = [result.reason]
    if where is not None:
        parts += [where.why_not, where.call_text]
    return " | ".join(p for p in parts if p)


def _globs(value: Any) -> Optional[Globs]:
    return None if value is None else (value if isinstance(value, str) else tuple(value))


def parse(data: Any, where: str = FILE) -> List[ModelKnown]:
    """The entries of a parsed file; a KbtoolError names the first problem (schema, or a regex that does not
    compile)."""
    import jsonschema

    data = [] if data is None else data
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data))
    if error is not None:
        at = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise KbtoolError(f"{where}: {at}: {error.message}")
    entries = []
    for number, raw in enumerate(data, start=1):
        if raw.get("match") is not None:
            try:
                re.compile(raw["match"])
            except re.error as exc:
                raise KbtoolError(f"{where}: entry {number}: match is no regex: {exc}")
        entries.append(
            ModelKnown(
                engine=_globs(raw["engine"]) or "",
                reason=" ".join(str(raw["reason"]).split()),
                model=_globs(raw.get("model")),
                status=_globs(raw.get("status")),
                call=_globs(raw.get("call")),
                match=raw.get("match"),
                source=raw.get("source", ""),
                number=number,
            )
        )
    return entries


def load(path: Optional[str] = None) -> List[ModelKnown]:
    """The shipped file's entries (beside specs/ops.yaml), or `path`'s; none when the file is absent."""
    import yaml

    from kbtool import paths

    path = path or paths.known_models_file()
    if not os.path.exists(path):
        return []
    try:
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as exc:
        raise KbtoolError(f"{path}: cannot be read: {str(exc).splitlines()[0]}")
    return parse(data, path)


@dataclass(frozen=True)
class Applied:
    """What `apply` did: how many findings each entry explained, and the judged entries that explained none."""

    explained: Dict[str, int]
    stale: Tuple[ModelKnown, ...]


def apply(
    results: List[ModelResult], entries: Sequence[ModelKnown], engines: Sequence[str], zoo: Sequence[str]
) -> Applied:
    """Each finding the first matching entry explains becomes `known` (its `known_model` names the entry); the
    entries this run judged that explained nothing are stale."""
    explained = {entry.id: 0 for entry in entries}
    for index, result in enumerate(results):
        entry = next((e for e in entries if e.explains(result)), None)
        if entry is not None:
            named = result.localisation is not None and result.localisation.call
            call = "" if named else str(entry.call)
            results[index] = replace(
                result, verdict="known", known_model=entry.id, known_reason=entry.reason, known_call=call
            )
            explained[entry.id] += 1
    stale = tuple(e for e in entries if explained[e.id] == 0 and e.judged_by(engines, results, zoo))
    return Applied(explained, stale)


def stale_record(entry: ModelKnown) -> Mapping[str, Any]:
    """A stale entry as the report lists it."""
    record: Dict[str, Any] = {"id": entry.id, "number": entry.number, "engine": entry.engine, "reason": entry.reason}
    if entry.call is not None:
        record["call"] = entry.call
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in record.items()}
