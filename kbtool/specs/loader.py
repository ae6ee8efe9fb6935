"""Load specs/ops.yaml once into a registry: parse, validate, and point errors at file:line.

Validation has two layers: the JSON Schema (structure) and semantic checks the schema cannot
express (doc ids exist, shape-rule expressions parse, case ids are unique, aliases resolve,
examples name their doc versions, every case binds to its signature: binding.py). Every problem
carries `file:line: ops.NAME...: message`.
"""
import yaml

from .. import files, paths
from ..errors import KbtoolError
from . import binding, schema, shapes


try:  # the C loader is ~10x faster on the full spec
    _Loader = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader


class SpecError(KbtoolError):
    def __init__(self, problems):
        self.problems = problems
        super().__init__(problems[0] if len(problems) == 1 else "{} (and {} more problems; run `kbtool spec validate`)"
                         .format(problems[0], len(problems) - 1))


class Spec:
    """The parsed spec: `ops` maps name → entry dict, `docs` maps doc id → doc version."""

    def __init__(self, path, data):
        self.path = path
        self.docs = data["docs"]
        self.ops = data["ops"]

    def op(self, name):
        try:
            return self.ops[name]
        except KeyError:
            import difflib

            close = difflib.get_close_matches(name, self.ops, n=3)
            hint = "; did you mean {}?".format(", ".join(close)) if close else ""
            raise KbtoolError("no op {!r} in {}{}".format(name, self.path, hint))

    def canonical(self, name):
        return self.ops[name].get("alias_of", name)


def _node_line(root, path):
    """Line (1-based) of the YAML node at a JSON path, or of the deepest node that exists."""
    node, line = root, root.start_mark.line + 1
    for key in path:
        child = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == key:
                    child = v
                    line = k.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            child = node.value[key]
            line = child.start_mark.line + 1
        if child is None:
            break
        node = child
    return line


def _dotted(path):
    out = ""
    for key in path:
        out += "[{}]".format(key) if isinstance(key, int) else ("." if out else "") + str(key)
    return out or "(top)"


def _duplicate_keys(node, path, found):
    if isinstance(node, yaml.MappingNode):
        seen = set()
        for k, v in node.value:
            if k.value in seen:
                found.append((k.start_mark.line + 1, path + [k.value], "duplicate key {!r}".format(k.value)))
            seen.add(k.value)
            _duplicate_keys(v, path + [k.value], found)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _duplicate_keys(v, path + [i], found)


def load(path=None):
    path = path or paths.spec_file()
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise KbtoolError("cannot read spec {}: {}".format(path, exc.strerror))
    try:
        root = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        raise SpecError([str(files.yaml_error(path, exc, "invalid YAML"))])
    if root is None:
        raise SpecError(["{}:1: the spec is empty".format(path)])
    problems = [(line, p, msg) for line, p, msg in _find_problems(root, data)]
    if problems:
        problems.sort(key=lambda item: item[0])
        raise SpecError(["{}:{}: {}: {}".format(path, line, _dotted(p), msg) for line, p, msg in problems])
    return Spec(path, data)


def _find_problems(root, data):
    found = []
    _duplicate_keys(root, [], found)
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema.SPEC)
    for error in validator.iter_errors(data):
        # oneOf/anyOf errors are vague; their best sub-error names the real problem
        best = jsonschema.exceptions.best_match([error])
        p = list(best.absolute_path)
        found.append((_node_line(root, p), p, best.message))
    if found:
        return found
    for p, msg in _semantic_problems(data):
        found.append((_node_line(root, p), p, msg))
    return found


def _semantic_problems(data):
    doc_ids = set(data["docs"])
    ops = data["ops"]
    for name, entry in ops.items():
        base = ["ops", name]
        for key in ("documented_in",):
            for doc in entry.get(key, []):
                if doc not in doc_ids:
                    yield base + [key], "unknown doc id {!r} (known: {})".format(doc, ", ".join(sorted(doc_ids)))
        alias = entry.get("alias_of")
        if alias and alias not in ops:
            yield base + ["alias_of"], "alias_of names {!r}, which has no entry".format(alias)
        for i, rule in enumerate(entry.get("shape_rules", [])):
            for key in ("when", "shape"):
                if key in rule:
                    try:
                        shapes.parse(rule[key])
                    except shapes.ShapeExprError as exc:
                        yield base + ["shape_rules", i, key], str(exc)
            for key, expr in (rule.get("let") or {}).items():
                try:
                    shapes.parse(expr)
                except shapes.ShapeExprError as exc:
                    yield base + ["shape_rules", i, "let", key], str(exc)
        seen = set()
        for section in ("cases", "examples"):
            for i, item in enumerate(entry.get(section, [])):
                if item["id"] in seen:
                    yield base + [section, i, "id"], "duplicate case id {!r}".format(item["id"])
                seen.add(item["id"])
                for doc in item.get("docs", []):
                    if doc not in doc_ids:
                        yield base + [section, i, "docs"], "unknown doc id {!r}".format(doc)
                if section == "examples" and "case" not in item and "not_executable" not in item:
                    yield base + [section, i], "an example needs a `case` to run, or `not_executable` saying why"
        yield from _binding_problems(name, entry, base)


def _binding_problems(name, entry, base):
    """Each case (and example case) bound to the signature as cases.py will: unknown parameters and steps,
    inputs no parameter takes, kwargs that raw args make ignored, inputs whose arrays cannot be drawn."""
    raws = [(base + ["cases", i], case) for i, case in enumerate(entry.get("cases", []))]
    raws += [(base + ["examples", i, "case"], example["case"])
             for i, example in enumerate(entry.get("examples", [])) if "case" in example]
    for where, raw in raws:
        for problem in binding.problems(name, entry, raw):
            yield where + problem.path, problem.message
