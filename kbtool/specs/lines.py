"""Where a case is written in a spec file: (op, case id) → its 1-based line, for annotations that point at it.

The spec's YAML is composed once (node marks, nothing validated or constructed) within kbtool/files.py's limits.
A case id finds its line as the runner names it: `ID` (a `cases:` item), `ID.variant` (a variant made from that
case, e.g. Theano's `.kernel_flipped`), `example:ID` (an `examples:` item), `grid.…` (the op's `grid:` key);
anything else falls back to the op's own line.
"""

from typing import Dict, Optional, Tuple

import yaml

from kbtool import files
from kbtool.errors import KbtoolError

Lines = Dict[Tuple[str, str], int]  # (op, case id or "" for the op itself) → line


def spec_lines(path: str) -> Optional[Lines]:
    """The lines of every op and case in the spec at `path`, or None when it cannot be read or parsed."""
    try:
        text = files.read_text(path, "spec ")
        if text is None:
            return None
        loader = files.BoundedLoader(text)
        try:
            root = loader.get_single_node()
        finally:
            loader.dispose()
    except (KbtoolError, OSError, yaml.YAMLError, ValueError, RecursionError):
        return None
    ops = _value(root, "ops")
    if not isinstance(ops, yaml.MappingNode):
        return None
    lines: Lines = {}
    for key, entry in ops.value:
        if not isinstance(key, yaml.ScalarNode) or (key.value, "") in lines:
            continue
        op = key.value
        lines[(op, "")] = key.start_mark.line + 1
        grid = _key(entry, "grid")
        if grid is not None:
            lines[(op, "grid")] = grid.start_mark.line + 1
        for section, prefix in (("cases", ""), ("examples", "example:")):
            items = _value(entry, section)
            if not isinstance(items, yaml.SequenceNode):
                continue
            for item in items.value:
                case_id = _value(item, "id")
                if isinstance(case_id, yaml.ScalarNode):
                    lines.setdefault((op, prefix + case_id.value), item.start_mark.line + 1)
    return lines


def case_line(lines: Lines, op: str, case: str) -> Optional[int]:
    """The line of `case` of `op` (see the module's docstring for the names it knows), else the op's, else None."""
    for candidate in (case, case.split(".", 1)[0], "grid" if case.startswith("grid.") else None, ""):
        if candidate is not None and (op, candidate) in lines:
            return lines[(op, candidate)]
    return None


def _entry(node: Optional[yaml.Node], name: str) -> Optional[Tuple[yaml.Node, yaml.Node]]:
    """The (key, value) nodes of `name` in a mapping node, else None."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == name:
                return k, v
    return None


def _key(node: Optional[yaml.Node], name: str) -> Optional[yaml.Node]:
    found = _entry(node, name)
    return found[0] if found else None


def _value(node: Optional[yaml.Node], name: str) -> Optional[yaml.Node]:
    found = _entry(node, name)
    return found[1] if found else None
