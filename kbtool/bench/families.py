"""Benchmark shape families: for each op and size (small / medium / large), the case `kbtool bench` times.

An op's family comes from its spec entry's `bench:` (kind "spec": inputs whose dims are expressions of n, a
cost model), or else from its first plain spec case, scaled along dim 0 until its inputs hold about
SCALED_ELEMENTS[size] elements (kind "scaled"; n counts input elements), or, where the NumPy reference
refuses every scaled form, that case as it is at every size (kind "fixed"). The reference is asked once per
op, on a small scaled case, so a family never sends a backend inputs kbtool's own reference cannot take.
"""

import copy
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, cast

from kbtool.specs import bench_cases, binding, cases

SIZES = bench_cases.SIZES
DEFAULT_SIZE = "medium"
# input elements of a scaled family per size: small shows per-call overhead; kept modest, as many such ops loop
# in Python per row (map_fn, foldl, ctc_*): the heavy ops have families of their own in the spec
SCALED_ELEMENTS = {"small": 2**8, "medium": 2**12, "large": 2**16}


Raw = Dict[str, Any]  # a raw spec case or entry, as parsed YAML
Positions = Tuple[int, ...]  # input positions (in bench_cases.inputs order)


def _expand_case(op: str, entry: Raw, raw: Raw, seed: int, **options: Any) -> Any:
    """specs/cases.py's expand_case (a Case), typed here (cases.py is not annotated), looked up at each call."""
    return cast(Callable[..., Any], cases.expand_case)(op, entry, raw, seed, **options)


class FamilyError(Exception):
    """An op has no case kbtool can bench (one line: why)."""


@dataclass
class Family:
    op: str
    kind: str  # "spec", "scaled" or "fixed"
    variable: str  # what n counts: "n" (the spec family's size parameter) or "elements"
    raw: Raw  # the raw spec case a size is made from
    scale: Dict[str, float] = field(default_factory=dict)  # size -> n (spec) or dim-0 factor (scaled)
    scaled_inputs: Positions = ()  # the input positions a scaled family grows
    base_case: Optional[str] = None
    about: str = ""
    flops: Optional[str] = None
    bytes: Optional[str] = None

    def raw_case(self, size: str) -> Raw:
        """The raw spec case of one size (id bench.<size>)."""
        if self.kind == "spec":
            return bench_cases.with_id(bench_cases.substitute(self.raw, {"n": self.scale[size]}), size)
        if self.kind == "scaled":
            return bench_cases.with_id(_scaled(self.raw, self.scaled_inputs, int(self.scale[size])), size)
        return bench_cases.with_id(self.raw, size)

    def describe(self, sizes_n: Dict[str, float]) -> Dict[str, Any]:
        out: Dict[str, Any] = {"kind": self.kind, "variable": self.variable, "sizes": dict(sizes_n)}
        for key in ("about", "flops", "bytes"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        if self.base_case:
            out["case"] = self.base_case
        return out


def benchable_ops(spec: Any) -> List[str]:
    """The ops bench times: every op with a case, not an alias (an alias runs its target's code)."""
    return sorted(
        name
        for name, entry in spec.ops.items()
        if not entry.get("alias_of")
        and not entry.get("not_checkable")
        and (entry.get("bench") or entry.get("cases") or any("case" in e for e in entry.get("examples", [])))
    )


def family_for_entry(op: str, entry: Raw) -> Family:
    """The family an op's `bench:` declares."""
    declared = entry["bench"]
    return Family(
        op=op,
        kind="spec",
        variable="n",
        raw=dict(declared["case"]),
        scale=dict(declared["sizes"]),
        about=declared.get("about", ""),
        flops=declared.get("flops"),
        bytes=declared.get("bytes"),
    )


def family_for(spec: Any, op: str) -> Family:
    entry = spec.ops[op]
    if entry.get("bench"):
        return family_for_entry(op, entry)
    base = _base_case(entry)
    if base is None:
        raise FamilyError(
            f"{op} has no case that runs as a plain call (every case raises, differentiates, is sparse "
            "or sets keras.json) and no bench: entry"
        )
    base_elements = _reference_output_elements(op, entry, base)
    for positions in _scaling_choices(op, entry, base):
        # the reference must take the grown case, and its output must not shrink (an empty result means the
        # case only got stranger, e.g. a window larger than its image)
        grown = _reference_output_elements(op, entry, _scaled(base, positions, 2))
        if grown is not None and grown >= (base_elements or 0) and (grown > 0 or not base_elements):
            elements = _elements(base, positions)
            scale: Dict[str, float] = {
                size: max(1, int(round(SCALED_ELEMENTS[size] / max(1, elements)))) for size in SIZES
            }
            return Family(
                op=op,
                kind="scaled",
                variable="elements",
                raw=base,
                scale=scale,
                scaled_inputs=positions,
                base_case=base.get("id"),
            )
    return Family(
        op=op,
        kind="fixed",
        variable="elements",
        raw=base,
        base_case=base.get("id"),
        about="its inputs do not grow: the reference refuses {} with dim 0 scaled".format(base.get("id")),
    )


def bench_case(spec: Any, family: Family, size: str, seed: int = 0) -> Tuple[Any, float]:
    """(the Case of `size`, its n): n is the spec family's n, or the input elements of a scaled/fixed one."""
    entry = spec.ops[family.op]
    raw = family.raw_case(size)
    case = _expand_case(family.op, entry, raw, seed, case_id=raw["id"])
    case.modes = list(raw.get("modes", cases.DEFAULT_MODES))
    if family.kind == "spec":
        return case, float(family.scale[size])
    return case, float(sum(a.size for a in case.arrays))


def _base_case(entry: Raw) -> Optional[Raw]:
    """The first spec case (then example) that is a plain call: no raise, gradient, sparse input or None dim."""
    candidates: List[Raw] = list(entry.get("cases", [])) + [
        dict(e["case"], id="example:" + e["id"]) for e in entry.get("examples", []) if "case" in e
    ]
    plain = [raw for raw in candidates if _plain(raw)]
    both = [raw for raw in plain if "modes" not in raw]  # runs in both modes
    chosen = both or plain
    return chosen[0] if chosen else None


def _plain(raw: Raw) -> bool:
    if raw.get("raises") or raw.get("grad") or raw.get("keras_config"):
        return False
    return not any(inp.get("sparse") or inp.get("none_dims") for inp in bench_cases.inputs(raw))


def _grows(inp: Raw) -> bool:
    """An input of rank >= 1: a shape, or a literal list (whose rows are repeated)."""
    return bool(inp.get("shape")) if "shape" in inp else isinstance(inp.get("value"), list) and bool(inp["value"])


def _weights(op: str, entry: Raw, raw: Raw) -> Set[int]:
    """Positions (in _inputs order) of the inputs a layer would own: kernels, biases, statistics never grow."""
    try:
        bound = cast(Callable[[str, Raw, Raw], Any], binding.bind)(op, entry, raw)
    except binding.BindingError:
        return set()
    indices: Set[int] = set()

    def visit(arg: Any) -> None:
        if isinstance(arg, dict):
            if arg.get("weight") and "tensor" in arg:
                indices.add(arg["tensor"])
            for value in arg.values():
                visit(value)
        elif isinstance(arg, list):
            for value in arg:
                visit(value)

    visit(bound.args)
    visit(list(bound.kwargs.values()))
    flat = bench_cases.inputs(raw)
    return {
        next(p for p, inp in enumerate(flat) if inp is bound.inputs[i])
        for i in indices
        if any(inp is bound.inputs[i] for inp in flat)
    }


def _scaling_choices(op: str, entry: Raw, raw: Raw) -> List[Positions]:
    """Which inputs to grow, most first: every input of rank >= 1 but the weights, then the first alone."""
    weights = _weights(op, entry, raw)
    shaped = tuple(i for i, inp in enumerate(bench_cases.inputs(raw)) if _grows(inp) and i not in weights)
    if not shaped:
        return []
    return [shaped] if len(shaped) == 1 else [shaped, shaped[:1]]


def _elements(raw: Raw, positions: Positions) -> int:
    count = cast(Callable[[Raw], int], binding.elements)
    return sum(count(inp) for i, inp in enumerate(bench_cases.inputs(raw)) if i in positions)


def _scaled(raw: Raw, positions: Positions, factor: int) -> Raw:
    raw = copy.deepcopy(raw)
    for i, inp in enumerate(bench_cases.inputs(raw)):  # the flattened specs are the raw case's own dicts
        if i in positions and "shape" in inp:
            inp["shape"] = [inp["shape"][0] * factor] + list(inp["shape"][1:])
        elif i in positions:
            inp["value"] = list(inp["value"]) * factor
    return raw


def _reference_output_elements(op: str, entry: Raw, raw: Raw) -> Optional[int]:
    """Elements of the NumPy reference's outputs for the raw case (None when it does not run as a plain call)."""
    from kbtool import reference
    from kbtool.capture import Captured
    from kbtool.worker import invoke, protocol

    try:
        case = _expand_case(op, entry, dict(raw, id="bench.probe"), 0)
        with cast(Any, Captured)():  # what the reference prints or warns is no concern of bench's
            header, arrays = cast(Any, invoke).evaluate(reference, case.request(case.modes[0]), case.arrays)
    except Exception:
        return None
    if header.get("status") != protocol.OK:
        return None
    return sum(int(a.size) for a in arrays) + sum(1 for o in header.get("outputs", []) if o.get("kind") == "python")
