"""Write docs/architecture.md's generated part from the layer table (tests/layers.py) and the modules' docstrings.

    python3 scripts/architecture.py           # rewrite the part between the markers
    python3 scripts/architecture.py --check   # exit 1 (and say what differs) when the page is not what it would write

The part holds the layer table (highest layer first: its rooms, what each is for, its modules) and every kbtool
module under its room with the first sentence of its docstring. A module without a docstring, or in no room, is an
error: the page names every module, so adding one means saying what it is for.
"""

import ast
import difflib
import os
import sys
from typing import Dict, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.layers import LAYERS, room_of  # noqa: E402  (the table lives with the test that enforces it)

PAGE = os.path.join(ROOT, "docs", "architecture.md")
BEGIN = "<!-- begin: written by scripts/architecture.py from tests/layers.py; do not edit by hand -->"
END = "<!-- end: written by scripts/architecture.py -->"


def _modules() -> Dict[str, str]:
    """{module name: path relative to the root} of every kbtool module."""
    found = {}
    for folder, dirs, names in os.walk(os.path.join(ROOT, "kbtool")):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        for name in names:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, name), ROOT)
                module = rel[: -len(".py")].replace(os.sep, ".")
                found[module[: -len(".__init__")] if module.endswith(".__init__") else module] = rel
    return found


def _summary(path: str) -> str:
    """The docstring's first sentence, on one line."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        doc = ast.get_docstring(ast.parse(f.read())) or ""
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    sentence = paragraph.split(". ", 1)[0].rstrip(".")
    if len(sentence) > 200:  # a long first sentence: its first clause
        sentence = sentence[:200].rsplit(" ", 1)[0] + " …"
    return sentence.replace("|", "\\|") + ("." if sentence and not sentence.endswith((":", "…")) else "")


def generated() -> Tuple[str, List[str]]:
    """(the generated part, the problems found)."""
    modules = _modules()
    problems: List[str] = []
    by_room: Dict[str, List[str]] = {}
    for module, path in sorted(modules.items()):
        try:
            by_room.setdefault(room_of(module)[2], []).append(module)
        except KeyError:
            problems.append(f"{path}: {module} is in no room of tests/layers.py")
        if not _summary(path):
            problems.append(f"{path}: no docstring (the architecture page says what each module is for)")
    lines = [BEGIN, "", "### Layers", ""]
    lines += ["| Layer | Room | For | Modules |", "| --- | --- | --- | --- |"]
    for layer, rooms in reversed(LAYERS):
        for room, names, purpose in rooms:
            listed = ", ".join(f"`{name}`" for name in names)
            lines.append(f"| {layer} | {room} | {purpose} | {listed} |")
    lines += ["", "### Modules", ""]
    for layer, rooms in reversed(LAYERS):
        for room, _, _ in rooms:
            lines.append(f"**{layer} / {room}**")
            lines.append("")
            for module in by_room.get(room, []):
                lines.append(f"- `{modules[module]}`: {_summary(modules[module])}")
            lines.append("")
    lines.append(END)
    return "\n".join(lines) + "\n", problems


def main(argv: List[str]) -> int:
    with open(PAGE, encoding="utf-8") as f:
        page = f.read()
    if BEGIN not in page or END not in page:
        print(f"{PAGE}: the markers of the generated part are missing")
        return 1
    head, rest = page.split(BEGIN, 1)
    tail = rest.split(END, 1)[1].lstrip("\n")
    part, problems = generated()
    new = head + part + ("\n" + tail if tail else "")
    for problem in problems:
        print(problem)
    if "--check" in argv:
        if new != page:
            sys.stdout.writelines(difflib.unified_diff(page.splitlines(True), new.splitlines(True), PAGE, "written"))
            print("docs/architecture.md is not what scripts/architecture.py writes: run it")
            return 1
        return 1 if problems else 0
    with open(PAGE, "w", encoding="utf-8") as f:
        f.write(new)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
