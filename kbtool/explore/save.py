"""`kbtool explore --save`: a found failure becomes a regular spec case of its op.

The case (literal `value:` inputs) is inserted as one flow-style line at the end of the op's `cases:` list (or a
new `cases:` key at the end of the op), so the rest of the file keeps its formatting and comments. The new text
is loaded and validated as a whole before it replaces the file atomically; a case that would not validate is
refused with the first problem, and the file is left as it was.
"""

import os
import tempfile
from types import ModuleType
from typing import Any, Dict, Optional, Set

import yaml

from kbtool import files
from kbtool.errors import KbtoolError
from kbtool.explore.strategies import spec_case_id


def save_case(spec_path: str, op: str, raw: Dict[str, Any], about: Optional[str] = None) -> str:
    """Insert `raw` into `op`'s cases in the spec file; returns the id it got (made unique within the op)."""
    from kbtool.specs import loader

    text = files.read_text(spec_path, "spec ")
    assert text is not None  # not missing_ok: a missing file raises
    root, data = files.parse_yaml(spec_path, text)
    op_node = _child(_child(root, "ops"), op)
    if op_node is None or not isinstance(op_node, yaml.MappingNode):
        raise KbtoolError(f"{spec_path}: no op {op!r} to save a case into")
    case = dict(raw)
    taken = {c.get("id") for c in data["ops"][op].get("cases", [])}
    case["id"] = unique_id(spec_case_id(raw["id"]), taken)
    if about:
        case["about"] = about
    case = _ordered(case)
    new_text = _inserted(text, op_node, case)
    try:
        problem = _validation_problem(loader, spec_path, new_text)
        if problem:
            raise KbtoolError(files.one_line(f"not saved: the case would not validate in {spec_path}: {problem}"))
        files.write_atomic(spec_path, new_text)
    except OSError as exc:  # a read-only or full folder: the file is left as it was
        where = exc.filename if exc.filename and exc.filename != spec_path else None
        raise KbtoolError(
            files.one_line(
                "not saved: cannot write {}{}: {}".format(
                    spec_path, f" (writing {where})" if where else "", exc.strerror or exc
                )
            )
        )
    saved: str = case["id"]
    return saved


def unique_id(wanted: str, taken: Set[Any]) -> str:
    if wanted not in taken:
        return wanted
    number = 2
    while f"{wanted}.n{number}" in taken:
        number += 1
    return f"{wanted}.n{number}"


def _ordered(case: Dict[str, Any]) -> Dict[str, Any]:
    """id first, then the keys in the order the spec's own cases write them."""
    order = ["id", "about", "inputs", "kwargs", "keras_config", "modes", "tolerance"]
    return dict([(k, case[k]) for k in order if k in case] + [(k, v) for k, v in case.items() if k not in order])


def _flow(case: Dict[str, Any]) -> str:
    """The case as one line of flow-style YAML."""
    return yaml.safe_dump(
        case, default_flow_style=True, sort_keys=False, width=float("inf"), allow_unicode=True
    ).strip()


def _inserted(text: str, op_node: yaml.MappingNode, case: Dict[str, Any]) -> str:
    lines = text.splitlines(keepends=True)
    cases_node = _child(op_node, "cases")
    if cases_node is None:  # no cases yet: a `cases:` key after the op's last line
        indent = op_node.value[0][0].start_mark.column
        addition = "{}cases:\n{}  - {}\n".format(" " * indent, " " * indent, _flow(case))
        after = _last_line(op_node)
    elif isinstance(cases_node, yaml.SequenceNode) and not cases_node.flow_style and cases_node.value:
        indent = cases_node.start_mark.column
        addition = "{}- {}\n".format(" " * indent, _flow(case))
        after = _last_line(cases_node)
    else:
        raise KbtoolError(
            f"the cases of this op are written as a flow list ([...]); add the case by hand: {files.clip(_flow(case))}"
        )
    if after < len(lines) and not lines[after].endswith("\n"):
        lines[after] += "\n"
    lines.insert(after + 1, addition)
    return "".join(lines)


def _last_line(node: yaml.Node) -> int:
    """0-based index of the last line that holds `node`'s content (a block collection's end mark lies past blank
    lines and comments, so the last item's content is followed down)."""
    while isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style and node.value:
        last = node.value[-1]
        node = last[1] if isinstance(node, yaml.MappingNode) else last
    mark = node.end_mark
    return mark.line - 1 if mark.column == 0 and mark.line > node.start_mark.line else mark.line


def _child(node: Optional[yaml.Node], key: str) -> Optional[yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            found: yaml.Node = value_node
            return found
    return None


def _validation_problem(loader: ModuleType, spec_path: str, text: str) -> Optional[str]:
    """The first problem the loader finds in `text` read as the spec file (None when it validates)."""
    folder = os.path.dirname(os.path.realpath(spec_path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(spec_path) + ".", suffix=".check", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        loader.load(tmp)
    except loader.SpecError as exc:
        first: str = exc.problems[0]
        return first.replace(tmp, spec_path)
    except KbtoolError as exc:
        return str(exc).replace(tmp, spec_path)
    finally:
        os.unlink(tmp)
    return None
