"""Reading a worker reply (header, arrays): its values, and a few words on what it returned."""

from typing import Any, List, Mapping, Sequence, Tuple

import numpy as np

Header = Mapping[str, Any]  # a worker reply's header (parsed JSON: status, outputs, error, ...)
Reply = Tuple[Header, Sequence[Any]]  # (header, arrays): the arrays a header's outputs index
Values = List[Any]  # a reply's outputs: ndarrays and Python values


def output_values(header: Header, arrays: Sequence[Any]) -> Values:
    """The outputs of a reply as a list of ndarray / Python values."""
    return [arrays[out["index"]] if out["kind"] == "array" else out["value"] for out in header.get("outputs", [])]


def array_shapes(header: Header) -> List[List[int]]:
    return [list(o.get("shape", [])) for o in header.get("outputs", []) if o["kind"] == "array"]


def shape_note(header: Header) -> str:
    """' of shape (2, 3)' for a reply with one array output, else ''."""
    shapes = array_shapes(header)
    return f" of shape {tuple(shapes[0])}" if len(shapes) == 1 else ""


def kind_of(value: Any) -> str:
    return "an array" if isinstance(value, np.ndarray) else f"{value!r}"
