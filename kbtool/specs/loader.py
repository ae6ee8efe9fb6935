"""Load specs/ops.yaml once into a registry: parse, validate, and point errors at file:line.

Validation has two layers: the JSON Schema (structure) and semantic checks the schema cannot
express (doc ids exist, shape-rule expressions parse and name only parameters and earlier `let`s,
case ids are unique, aliases resolve, examples name their doc versions, `match` regexes compile,
every case binds to its signature and its raw args and then-calls name ops of the spec: binding.py,
and the inputs of the whole spec stay within MAX_SPEC_ELEMENTS). Every problem is one line,
`file:line: ops.NAME...: message`, quoting at most ~100 characters of the file's text.

The file itself is read within kbtool/files.py's limits: a regular file of at most 20 MB of UTF-8, YAML of at
most 150,000 values once aliases are expanded and 50 levels deep, so that no spec can hang or exhaust kbtool.
"""

import hashlib
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple

import regex
import yaml

from kbtool import files, paths
from kbtool.errors import KbtoolError
from kbtool.specs import bench_cases, binding, schema, shapes
from kbtool.specs.records import Entry, KeyPath, RawCase

MAX_SPEC_ELEMENTS = 10**8  # the elements of every input of every case together (the shipped spec: 160,000)
MAX_MATCH_CHARS = 1000  # a case's `match` regex
MAX_PROBLEMS = 200  # problems listed; the rest are counted

# A problem found in the data: (its key path within the spec, message); with the line it is at, once located.
Problem = Tuple[KeyPath, str]
LocatedProblem = Tuple[int, KeyPath, str]
# id of a YAML mapping node → {key: (key node, value node)}
NodeKeys = Dict[int, Dict[Any, Tuple[yaml.Node, yaml.Node]]]


class SpecError(KbtoolError):
    def __init__(self, problems: List[str], total: Optional[int] = None) -> None:
        self.problems = problems  # the lines to list (past MAX_PROBLEMS, the last one counts the rest)
        total = len(problems) if total is None else total
        super().__init__(
            problems[0] if total == 1 else f"{problems[0]} (and {total - 1} more problems; run `kbtool spec validate`)"
        )


class Spec:
    """The parsed spec: `ops` maps name → entry dict, `docs` maps doc id → doc version."""

    def __init__(self, path: str, data: Dict[str, Any]) -> None:
        self.path = path
        self.data = data
        self.docs: Dict[str, Any] = data["docs"]
        self.ops: Dict[str, Entry] = data["ops"]

    def op(self, name: str) -> Dict[str, Any]:
        try:
            return self.ops[name]
        except KeyError:
            import difflib

            close = difflib.get_close_matches(name, self.ops, n=3)
            hint = "; did you mean {}?".format(", ".join(close)) if close else ""
            raise KbtoolError(f"no op {name!r} in {self.path}{hint}")

    def canonical(self, name: str) -> str:
        canonical: str = self.ops[name].get("alias_of", name)
        return canonical


def _node_line(root: yaml.Node, path: Sequence[Any], keys: Optional[NodeKeys] = None) -> int:
    """Line (1-based) of the YAML node at a JSON path, or of the deepest node that exists.

    `keys` caches each mapping's keys (id of the node → {key: (key node, value node)}), so that many problems in
    one large mapping cost one pass over it, not one each."""
    keys = {} if keys is None else keys
    node, line = root, root.start_mark.line + 1
    for key in path:
        child: Optional[yaml.Node] = None
        if isinstance(node, yaml.MappingNode):
            index = keys.get(id(node))
            if index is None:
                index = keys[id(node)] = {}
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode):
                        index.setdefault(k.value, (k, v))  # the first of duplicate keys, as a scan finds it
            if isinstance(key, str) and key in index:
                k, child = index[key]
                line = k.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            child = node.value[key]
            line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


def _dotted(path: Sequence[Any]) -> str:
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else ("." if out else "") + str(key)
    return out or "(top)"


def _duplicate_keys(node: yaml.Node, path: KeyPath, found: List[LocatedProblem]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: Set[Any] = set()
        for k, v in node.value:
            if k.value in seen:
                found.append((k.start_mark.line + 1, path + [k.value], f"duplicate key {k.value!r}"))
            seen.add(k.value)
            _duplicate_keys(v, path + [k.value], found)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _duplicate_keys(v, path + [i], found)


# sha256 of the text → validated data: a process that loads the same spec again (tests; a copy of the shipped spec
# elsewhere) parses it once. The data never depends on the path: a problem, which names it, is never cached.
_CACHE: Dict[str, Any] = {}


def load(path: Optional[str] = None) -> Spec:
    """The validated spec at `path` (default: the shipped one); a SpecError lists its problems."""
    path = path or paths.spec_file()
    try:  # unreadable (missing, a directory, a device): a KbtoolError; read but refused: a SpecError
        text = files.read_text(path, "spec ")
    except files.FileProblem as exc:
        raise SpecError([str(exc)])
    assert text is not None  # read_text returns None only for a missing file it was told may be missing
    key = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if key not in _CACHE:
        _CACHE.clear()  # one spec at a time is what a process uses
        _CACHE[key] = _load(path, text).data
    return Spec(path, _CACHE[key])


def _load(path: str, text: str) -> Spec:
    try:
        root, data = files.parse_yaml(path, text, "invalid YAML")
    except files.FileProblem as exc:
        raise SpecError([str(exc)])
    if root is None:
        raise SpecError([f"{path}:1: the spec is empty"])
    problems = [(line, p, msg) for line, p, msg in _find_problems(root, data)]
    if problems:
        problems.sort(key=lambda item: item[0])
        listed = [
            files.one_line(f"{path}:{line}: {files.clip(_dotted(p))}: {msg}")
            for line, p, msg in problems[:MAX_PROBLEMS]
        ]
        if len(problems) > MAX_PROBLEMS:
            listed.append(
                f"{path}: {len(problems) - MAX_PROBLEMS} more problems not listed (the first {MAX_PROBLEMS} are)"
            )
        raise SpecError(listed, total=len(problems))
    return Spec(path, data)


def _validator() -> Any:
    """The schema's validator, with a linear uniqueItems: jsonschema's own compares every pair of items when
    they are not all strings, which a long list in a hostile spec turns into minutes."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    slow = base.VALIDATORS["uniqueItems"]

    def unique_items(validator: Any, unique: Any, instance: Any, schema_: Any) -> Iterator[Any]:
        if not (unique and validator.is_type(instance, "array")):
            return
        if all(isinstance(item, str) for item in instance):
            if len(set(instance)) != len(instance):
                yield jsonschema.ValidationError(f"{files.quote(instance)} has non-unique elements")
        elif len(instance) <= 100:
            yield from slow(validator, unique, instance, schema_)
        # a long list of non-strings: the items' own type errors say what is wrong

    return jsonschema.validators.extend(base, {"uniqueItems": unique_items})(schema.SPEC)


def _schema_message(error: Any) -> str:
    """jsonschema's message, quoting at most ~100 characters of the offending value."""
    message: str = error.message
    if len(message) > files.QUOTE_CHARS:
        text = repr(error.instance)
        if len(text) > files.QUOTE_CHARS and text in message:
            message = message.replace(text, files.quote(error.instance))
    return message


def _find_problems(root: yaml.Node, data: Dict[str, Any]) -> List[LocatedProblem]:
    found: List[LocatedProblem] = []
    keys: NodeKeys = {}
    _duplicate_keys(root, [], found)
    import jsonschema

    for error in _validator().iter_errors(data):
        # oneOf/anyOf errors are vague; their best sub-error names the real problem
        best = jsonschema.exceptions.best_match([error])
        p = list(best.absolute_path)
        found.append((_node_line(root, p, keys), p, _schema_message(best)))
    if found:
        return found
    for p, msg in _semantic_problems(data):
        found.append((_node_line(root, p, keys), p, msg))
    return found


def _rule_problems(base: KeyPath, rule: Dict[str, Any], params: Sequence[str]) -> Iterator[Problem]:
    """Each expression parses, and reads only the op's parameters and the `let`s before it."""
    known = set(params)
    exprs: List[Tuple[KeyPath, Optional[str], Any]]
    exprs = [(["let", key], key, expr) for key, expr in (rule.get("let") or {}).items()]
    exprs += [([key], None, rule[key]) for key in ("when", "shape") if key in rule]
    for where, let, expr in exprs:
        try:
            node = shapes.parse(expr)
        except shapes.ShapeExprError as exc:
            yield base + where, str(exc)
        else:
            unknown = sorted(shapes.names(node) - known)
            if unknown:
                yield (
                    base + where,
                    "unknown name {} in {} (known: {})".format(
                        ", ".join(unknown), files.quote(expr), ", ".join(sorted(known)) or "none"
                    ),
                )
        if let is not None:
            known.add(let)


def _regex_problem(pattern: Any) -> Optional[str]:
    """Why a case's `match` cannot be searched (kbtool/verdicts/raises.py uses the `regex` engine)."""
    if not isinstance(pattern, str):
        return "match must be a regex (a string)"
    if len(pattern) > MAX_MATCH_CHARS:
        return f"match is longer than {MAX_MATCH_CHARS} characters"
    try:
        regex.compile(pattern)
    except (regex.error, ValueError, OverflowError, RecursionError, MemoryError) as exc:
        return f"match is not a valid regex: {files.clip(exc)}"
    return None


def _semantic_problems(data: Dict[str, Any]) -> Iterator[Problem]:
    doc_ids = set(data["docs"])
    ops = data["ops"]
    elements = 0
    for name, entry in ops.items():
        base = ["ops", name]
        for key in ("documented_in",):
            for doc in entry.get(key, []):
                if doc not in doc_ids:
                    yield base + [key], "unknown doc id {!r} (known: {})".format(doc, ", ".join(sorted(doc_ids)))
        yield from _doc_version_problems(base, name, entry, ops)
        alias = entry.get("alias_of")
        if alias and alias not in ops:
            yield base + ["alias_of"], f"alias_of names {alias!r}, which has no entry"
        params = [p["name"] for p in entry.get("signature", []) if not p["name"].startswith("*")]
        for i, rule in enumerate(entry.get("shape_rules", [])):
            yield from _rule_problems(base + ["shape_rules", i], rule, params)
        for i, decision in enumerate(entry.get("reference_decisions", [])):
            for key in decision.get("values", {}):
                if key not in params and key not in entry.get("reads_config", []):
                    yield (
                        base + ["reference_decisions", i, "values", key],
                        f"{key!r} is not a parameter of {name} nor a keras.json setting it reads",
                    )
        seen: Set[Any] = set()
        for section in ("cases", "examples"):
            for i, item in enumerate(entry.get(section, [])):
                if item["id"] in seen:
                    yield base + [section, i, "id"], "duplicate case id {!r}".format(item["id"])
                seen.add(item["id"])
                for doc in item.get("docs", []):
                    if doc not in doc_ids:
                        yield base + [section, i, "docs"], f"unknown doc id {doc!r}"
                if section == "examples" and "case" not in item and "not_executable" not in item:
                    yield base + [section, i], "an example needs a `case` to run, or `not_executable` saying why"
        yield from _grid_problems(data, name, entry, base)
        yield from _bench_problems(name, entry, base, ops)
        for where, raw in _raw_cases(entry, base):
            found = binding.problems(name, entry, raw, ops)
            for problem in found:
                yield where + problem.path, problem.message
            if "match" in raw:
                bad_match = _regex_problem(raw["match"])
                if bad_match:
                    yield where + ["match"], bad_match
            count = 0 if found else sum(binding.elements(inp) for inp in binding.case_inputs(raw))
            if elements <= MAX_SPEC_ELEMENTS < elements + count:
                yield (
                    where + ["inputs"],
                    f"the spec's inputs pass {MAX_SPEC_ELEMENTS:,} elements in all here; kbtool allows at "
                    "most that many in one spec",
                )
            elements += count


def _doc_version_problems(base: KeyPath, name: str, entry: Entry, ops: Dict[str, Entry]) -> Iterator[Problem]:
    """A doc error, a raise, a signature change or a parameter names only doc versions that document the op
    (under its own name or a Keras 1.x alias's)."""
    documented = set(entry.get("documented_in", []))
    for other in ops.values():
        if other.get("alias_of") == name:
            documented.update(other.get("documented_in", []))
    for section in ("doc_errors", "raises", "signature_changes", "signature"):
        for i, item in enumerate(entry.get(section, [])):
            for doc in item.get("docs", []):
                if doc not in documented:
                    yield (
                        base + [section, i, "docs"],
                        "doc version {} does not document this op (documented_in: {})".format(
                            files.quote(doc), ", ".join(sorted(documented))
                        ),
                    )


def _bench_problems(name: str, entry: Entry, base: KeyPath, ops: Dict[str, Entry]) -> Iterator[Problem]:
    """A declared bench family's case must bind at every size, and its cost expressions must parse."""
    if "bench" not in entry:
        return
    for key in ("flops", "bytes"):
        if key in entry["bench"]:
            try:
                shapes.parse(entry["bench"][key])
            except shapes.ShapeExprError as exc:
                yield base + ["bench", key], str(exc)
    for size in bench_cases.SIZES:
        try:
            raw = bench_cases.declared_case(entry, size)
        except (shapes.ShapeExprError, ValueError, TypeError) as exc:
            yield base + ["bench", "case"], f"at size {size}: {exc}"
            continue
        for problem in binding.problems(name, entry, raw, ops):
            yield base + ["bench", "case"] + problem.path, f"at size {size}: {problem.message}"


def _grid_problems(data: Dict[str, Any], name: str, entry: Entry, base: KeyPath) -> Iterator[Problem]:
    """Domains resolve, grid rules read only the op's dimensions, and every generated case binds."""
    from kbtool.specs import domains

    named = data.get("domains") or {}
    for i, param in enumerate(entry.get("signature", [])):
        if isinstance(param.get("domain"), str) and param["domain"] not in named:
            yield (
                base + ["signature", i, "domain"],
                "unknown domain {!r} (the spec's domains: {})".format(
                    param["domain"], ", ".join(sorted(named)) or "none"
                ),
            )
            return
    if "grid" not in entry:
        return
    grid = entry["grid"]
    shim = _SpecView(data)
    dims = domains.all_domains(shim, name)
    for j, param in enumerate(grid.get("params", [])):
        if param not in dims:
            yield (
                base + ["grid", "params", j],
                "{!r} has no documented domain (the op's: {})".format(param, ", ".join(dims) or "none"),
            )
    known = set(dims) | {"fmt"}
    for key in ("exclude", "raises"):
        for j, rule in enumerate(grid.get(key, [])):
            try:
                unknown = sorted(shapes.names(shapes.parse(rule["when"])) - known)
            except shapes.ShapeExprError as exc:
                yield base + ["grid", key, j, "when"], str(exc)
                continue
            if unknown:
                yield (
                    base + ["grid", key, j, "when"],
                    "unknown name {} (a grid rule reads the op's dimensions: {})".format(
                        ", ".join(unknown), ", ".join(sorted(known))
                    ),
                )
    try:
        generated = domains.grid_cases(shim, name)
    except domains.DomainError as exc:
        yield base + ["grid"], str(exc)
        return
    if not generated:
        yield base + ["grid"], "the grid generates no case (every row is excluded, or no parameter has a domain)"
    for raw in generated:
        for problem in binding.problems(name, entry, raw, data["ops"]):
            yield base + ["grid", raw["id"]] + problem.path, problem.message
            break


class _SpecView:
    """What specs/domains.py reads of a spec, over data not yet wrapped in a Spec."""

    def __init__(self, data: Dict[str, Any]) -> None:
        self.data: Dict[str, Any] = data
        self.ops: Dict[str, Entry] = data["ops"]


def _raw_cases(entry: Entry, base: KeyPath) -> List[Tuple[KeyPath, RawCase]]:
    """Each case and example case of an entry, with its path: bound to the signature as cases.py will (unknown
    parameters and steps, inputs no parameter takes, kwargs that raw args make ignored, inputs whose arrays
    cannot be drawn or are too large, raw args and then-calls the worker would trip on)."""
    raws = [(base + ["cases", i], case) for i, case in enumerate(entry.get("cases", []))]
    raws += [
        (base + ["examples", i, "case"], example["case"])
        for i, example in enumerate(entry.get("examples", []))
        if "case" in example
    ]
    return raws
