"""Read the "Keras backends" doc pages (KBTOOL_DOCS in the tests; not shipped) for the functions they document.

The pages come in several layouts (plain text, Markdown with `### name` headings) and their
headings have typos ("one-hot", "normalize_batch", a missing one), so a function is taken as
documented where a whole signature line `[keras.backend.]name(...)` stands on its own.
Example output such as `array([ 1., 2.], dtype=float32)` also looks like that; it is told apart
by the `>>>` prompt just before it.
"""

import os
import re
from typing import Dict, List

_SIGNATURE = re.compile(r"^(?:keras\.backend\.|backend\.)?([a-z_][a-z0-9_]*)\(")


def documented_functions(text: str) -> List[str]:
    """Function names documented in one page, in order of appearance."""
    lines = text.splitlines()
    names: List[str] = []
    for i, line in enumerate(lines):
        match = _SIGNATURE.match(line.strip().strip("`"))
        if not match:
            continue
        previous = [s.strip() for s in lines[max(0, i - 6) : i] if s.strip() and not s.strip().startswith("```")]
        if any(p.startswith(">>>") for p in previous[-2:]):
            continue  # the output of a doc example, not a signature
        if match.group(1) not in names:
            names.append(match.group(1))
    return names


def seed_files(seed_dir: str) -> List[str]:
    return sorted(os.path.join(seed_dir, f) for f in os.listdir(seed_dir) if f.endswith(".txt"))


def documented_union(seed_dir: str) -> Dict[str, List[str]]:
    """{name: [doc file basenames]} over every page in `seed_dir`."""
    union: Dict[str, List[str]] = {}
    for path in seed_files(seed_dir):
        with open(path, encoding="utf-8") as fh:
            for name in documented_functions(fh.read()):
                union.setdefault(name, []).append(os.path.basename(path))
    return union
