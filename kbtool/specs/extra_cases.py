"""Case files: spec cases kept outside the spec (`kbtool models --emit-cases FILE.yaml` writes them) and added to
its ops for one run (`kbtool check --cases FILE.yaml`, repeatable).

A case file is YAML: `cases:` maps an op of the spec to a list of cases written as the spec writes them (id, about,
inputs, kwargs, ...). Each case is validated as the spec's own are (the spec's case schema, binding to the op's
signature) and its id must be new to the op (the spec's cases and examples, and every other file's). The spec itself
is never changed: `extend` returns another Spec over a copy of its data. Every problem is one line naming the file.
"""

from typing import Any, Dict, List, Sequence, Set

from kbtool import files
from kbtool.errors import KbtoolError
from kbtool.specs import binding, schema
from kbtool.specs.loader import Spec
from kbtool.specs.records import RawCase

FILE_SCHEMA: Dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["cases"],
    "properties": {
        "cases": {
            "type": "object",
            "propertyNames": {"pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            "additionalProperties": {"type": "array", "items": schema.CASE},
        }
    },
}


def read(path: str) -> Dict[str, List[RawCase]]:
    """The cases of one file by op, checked against the file schema (not yet against a spec)."""
    import jsonschema

    try:
        text = files.read_text(path, "case file ")
        assert text is not None  # not missing_ok: a missing file is a FileProblem
        _, data = files.parse_yaml(path, text, "invalid YAML")
    except files.FileProblem as exc:
        raise KbtoolError(files.one_line(str(exc)))
    if data is None or (isinstance(data, dict) and "cases" not in data):
        what = "is empty" if data is None else "has no `cases:`"
        raise KbtoolError(f"{path}: the case file {what} (it holds `cases:`, a mapping of op to cases)")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(FILE_SCHEMA).iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        raise KbtoolError(files.one_line(f"{path}: {where}: {files.clip(error.message)}"))
    cases: Dict[str, List[RawCase]] = data["cases"]
    return cases


def extend(spec: Spec, paths: Sequence[str]) -> Spec:
    """The spec with each file's cases added to its ops (the spec unchanged when no file is given)."""
    if not paths:
        return spec
    ops = dict(spec.ops)
    added: Dict[str, Set[str]] = {}
    for path in paths:
        for op, raws in read(path).items():
            if op not in spec.ops:
                raise KbtoolError(f"{path}: cases.{op}: the spec has no op {op!r}")
            entry = dict(ops[op])
            taken = {c["id"] for c in entry.get("cases", [])} | {e["id"] for e in entry.get("examples", [])}
            for i, raw in enumerate(raws):
                where = f"{path}: cases.{op}[{i}]"
                if raw["id"] in taken or raw["id"] in added.get(op, set()):
                    raise KbtoolError(
                        f"{where}: duplicate case id {raw['id']!r} (the op already has a case of that id)"
                    )
                found = binding.problems(op, entry, raw, spec.ops)
                if found:
                    problem = found[0]
                    at = ".".join(str(p) for p in problem.path)
                    raise KbtoolError(files.one_line(f"{where}{'.' + at if at else ''}: {problem.message}"))
                added.setdefault(op, set()).add(raw["id"])
            entry["cases"] = list(entry.get("cases", [])) + list(raws)
            ops[op] = entry
    return Spec(spec.path, dict(spec.data, ops=ops))
