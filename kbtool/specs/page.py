"""`kbtool spec show OP`: one op's entry as a page to read at 80 columns.

The signature as a call, the doc summary and what it returns, its parameters, what it raises, how its values are
compared (tolerances, or an error bound), how many known differences name it, then each case as the call it makes
(kbtool/specs/call.py: the inputs drawn with the seed, summarised) with what it expects, the documented examples with
what each doc version shows, and the cases generated from the parameters' domains. The spec's own text (YAML) is
`spec show OP --yaml`; nothing here is lost from it that a reader of the page needs to find it there.
"""

import textwrap
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence

from kbtool.specs import call
from kbtool.specs.cases import Case
from kbtool.vocabulary import CASE_DEFAULTS

GRID_SHOWN = 8  # generated cases listed by call; the rest are counted
INDENT = "  "


@dataclass
class PageFacts:
    """What the page says that is not the entry's own: the known entries that name the op, how values compare."""

    known: Dict[str, int] = field(default_factory=dict)  # backend (or glob) -> entries naming the op for it
    known_entries: int = 0
    tolerance: Dict[str, Dict[str, float]] = field(default_factory=dict)  # dtype -> {rtol, atol}, defaults applied
    bound: str = ""  # the op's error bound's magnitude (kbtool/reference/magnitude.py), "" when it has none
    domains: Dict[str, List[Any]] = field(default_factory=dict)  # param -> its documented values (domains.py)


def signature(op: str, entry: Mapping[str, Any]) -> List[str]:
    """`K.op(x, y, axes=None)` as tokens (call.pack_tokens breaks between parameters)."""
    parts = []
    for param in entry.get("signature", []):
        text = param["name"]
        if "default" in param:
            text += "=" + call.literal(param["default"], as_tuple=bool(param.get("tuple")))
        parts.append(text)
    tokens = [p + "," for p in parts[:-1]] + parts[-1:]
    if not tokens:
        return [f"K.{op}()"]
    tokens[0] = f"K.{op}(" + tokens[0]
    tokens[-1] += ")"
    return tokens


def render(
    op: str, entry: Mapping[str, Any], cases: Sequence[Case], grid: Sequence[Case], facts: PageFacts, width: int
) -> List[str]:
    """The page's lines, none wider than `width` (at least 40)."""
    width = max(width, 40)
    out = call.pack_tokens(signature(op, entry), width, "", "    ")
    out += _wrap(entry.get("summary", ""), width, "")
    facts_lines = [
        ("category", entry.get("category", "")),
        ("alias of", entry.get("alias_of", "")),
        ("returns", entry.get("returns", "")),
        ("documented", ", ".join(entry.get("documented_in", []))),
        ("reads", ", ".join(entry.get("reads_config", []))),
    ]
    out.append("")
    for label, text in facts_lines:
        if text:
            out += _wrap(str(text), width, f"{label:<11}", " " * 11)
    out += _parameters(entry, facts.domains, width) + _raises(entry, width) + _comparison(entry, facts, width)
    out += _decisions(entry, width)
    tolerance = entry.get("tolerance", {})
    out += _cases(cases, tolerance, width)
    out += _examples(entry, cases, tolerance, width)
    out += _grid(op, grid, tolerance, width)
    out += ["", *_wrap(f"The spec's own text: kbtool spec show {op} --yaml", width, "")]
    return out


def _wrap(text: str, width: int, first: str, indent: str = "") -> List[str]:
    text = " ".join(str(text).split())
    if not text:
        return []
    from rich.cells import cell_len  # wide characters (the Japanese and Chinese docs' words) take two columns

    chars = width
    while True:
        lines = textwrap.wrap(
            text, chars, initial_indent=first, subsequent_indent=indent or " " * len(first), break_on_hyphens=False
        )
        if chars <= 20 or all(cell_len(line) <= width for line in lines):
            return lines
        chars -= 2


def _parameters(entry: Mapping[str, Any], domains: Mapping[str, List[Any]], width: int) -> List[str]:
    params = entry.get("signature", [])
    if not params:
        return []
    name_width = min(max(len(p["name"]) for p in params), 16)
    out = ["", "Parameters"]
    for p in params:
        words = [p.get("kind", "value") + (", a weight" if p.get("weight") else "")]
        if "default" in p:
            words.append("default " + call.literal(p["default"], as_tuple=bool(p.get("tuple"))))
        if p["name"] in domains:
            words.append("documented: " + ", ".join(call.literal(v, bool(p.get("tuple"))) for v in domains[p["name"]]))
        if p.get("free"):
            words.append("free: " + str(p["free"]))
        first = f"{INDENT}{p['name']:<{name_width}}  "
        out += _wrap("; ".join(words), width, first, " " * len(first))
    return out


def _decisions(entry: Mapping[str, Any], width: int) -> List[str]:
    """The doc errors and reference decisions whole: they say why the reference is what it is (never a count)."""
    out: List[str] = []
    errors = entry.get("doc_errors", [])
    if errors:
        out += ["", "Doc errors (what a doc version claims, and what Keras does)"]
    for error in errors:
        out += _wrap(error.get("claim", ""), width, f"{INDENT}{', '.join(error.get('docs', []))} says: ", INDENT * 2)
        out += _wrap(error.get("actual", ""), width, f"{INDENT}actual: ", INDENT * 2)
        out += _wrap(error.get("evidence", ""), width, f"{INDENT}evidence: ", INDENT * 2)
    decisions = entry.get("reference_decisions", [])
    if decisions:
        out += ["", "Reference decisions (where the docs are silent, what the reference does)"]
    for decision in decisions:
        out += _wrap(decision.get("decision", ""), width, f"{INDENT}- ", INDENT * 2)
        out += _wrap(decision.get("evidence", ""), width, f"{INDENT * 2}evidence: ", INDENT * 3)
        if decision.get("differs"):
            out += _wrap(", ".join(decision["differs"]), width, f"{INDENT * 2}differs: ", INDENT * 3)
    return out


def _raises(entry: Mapping[str, Any], width: int) -> List[str]:
    out = []
    for item in entry.get("raises", []):
        out += _wrap(f"{item.get('type', 'an error')} when {item.get('when', '')}", width, INDENT, INDENT * 2)
    return ["", "Raises"] + out if out else []


def _comparison(entry: Mapping[str, Any], facts: PageFacts, width: int) -> List[str]:
    out = ["", "Compared"]
    own = entry.get("tolerance", {})
    tolerances = "; ".join(
        "{} {}{}".format(
            dtype,
            "exact" if not tol["rtol"] and not tol["atol"] else "rtol {:g}, atol {:g}".format(tol["rtol"], tol["atol"]),
            " (this op's)" if dtype in own else "",
        )
        for dtype, tol in facts.tolerance.items()
    )
    out += _wrap(tolerances, width, f"{INDENT}{'tolerance':<12}", " " * 14)
    if facts.bound:  # verdicts/bounds.py: the larger of the bound and the tolerance
        text = f"k(n)·eps·{facts.bound} for float values, n the terms summed (the larger of it and the tolerance)"
        out += _wrap(text, width, f"{INDENT}{'error bound':<12}", " " * 14)
    for key in ("shape_rules", "signature_changes"):
        count = len(entry.get(key, []))
        if count:
            out += _wrap(f"{count} {key.replace('_', ' ')[: -1 if count == 1 else None]} (--yaml)", width, INDENT)
    if facts.known_entries:
        named = ", ".join(f"{name} {count}" for name, count in sorted(facts.known.items()))
        text = (
            f"{facts.known_entries} known-difference entr{'y' if facts.known_entries == 1 else 'ies'} name it: {named}"
        )
        out += _wrap(text, width, INDENT, INDENT * 2)
    else:
        out += _wrap("no known-difference entry names it", width, INDENT)
    return out


def _case_lines(case: Case, tolerance: Mapping[str, Any], width: int, label: str = "") -> List[str]:
    """A case: its id and what is particular to it (modes, settings, its own tolerance), its call, its about."""
    notes = [label or case.id]
    if list(case.modes) != ["eager", "symbolic"]:
        notes.append(" and ".join(case.modes) + " only")
    if case.grad:
        notes.append("gradient")
    if case.raises:
        notes.append(f"raises {case.raises}")
    if case.stats:
        notes.append("random: statistics")
    config = {k: v for k, v in case.keras_config.items() if CASE_DEFAULTS.get(k) != v}
    if config:
        notes.append("keras.json " + ", ".join(f"{k} {v}" for k, v in config.items()))
    if case.tolerance and case.tolerance != tolerance:  # the op's own tolerance is said once, above
        notes.append(
            "tolerance "
            + ", ".join(f"{k} {v}" if not isinstance(v, dict) else f"{k} {_tol(v)}" for k, v in case.tolerance.items())
        )
    out = _wrap(" · ".join(notes), width, INDENT, INDENT * 3)
    out += call.of_case(case).lines(width, INDENT * 2, INDENT * 4)
    if case.about:
        out += _wrap(case.about, width, INDENT * 2)
    return out


def _tol(value: Mapping[str, Any]) -> str:
    return " ".join(f"{k} {v:g}" if isinstance(v, (int, float)) else f"{k} {v}" for k, v in value.items())


def _cases(cases: Sequence[Case], tolerance: Mapping[str, Any], width: int) -> List[str]:
    own = [c for c in cases if not c.id.startswith("example:")]
    if not own:
        return []
    out = ["", f"Cases ({len(own)}; inputs drawn with seed 0)"]
    for case in own:
        out += _case_lines(case, tolerance, width)
    return out


def _examples(entry: Mapping[str, Any], cases: Sequence[Case], tolerance: Mapping[str, Any], width: int) -> List[str]:
    examples = entry.get("examples", [])
    if not examples:
        return []
    by_id = {c.id: c for c in cases}
    out = ["", f"Documented examples ({len(examples)})"]
    for example in examples:
        docs = ", ".join(example.get("docs", []))
        case = by_id.get("example:" + example["id"])
        if case is None:  # an example with nothing to run: what the docs say
            out += _wrap(f"{example['id']} ({docs}): not run", width, INDENT, INDENT * 3)
            continue
        out += _case_lines(case, tolerance, width, f"{example['id']} ({docs})")
        for shown in example.get("shown", []):
            what = ", ".join(f"{k} {call.literal(v)}" for k, v in shown.items() if k != "docs")
            out += _wrap(f"{', '.join(shown.get('docs', []))} show {what}", width, INDENT * 2, INDENT * 3)
    return out


def _grid(op: str, grid: Sequence[Case], tolerance: Mapping[str, Any], width: int) -> List[str]:
    if not grid:
        return []
    out = ["", f"Generated from the documented domains ({len(grid)}, every pair of values)"]
    for case in grid[:GRID_SHOWN]:
        out += _case_lines(case, tolerance, width)
    if len(grid) > GRID_SHOWN:
        more = f"... {len(grid) - GRID_SHOWN} more (kbtool check --op {op} --case 'grid*' runs them all)"
        out += _wrap(more, width, INDENT, INDENT * 2)
    return out
