"""Reading a worker reply (header, arrays): its values, and a few words on what it returned."""

from typing import Any

import numpy as np


def output_values(header: Any, arrays: Any) -> Any:
    """The outputs of a reply as a list of ndarray / Python values."""
    return [arrays[out["index"]] if out["kind"] == "array" else out["value"] for out in header.get("outputs", [])]


def array_shapes(header):
    return [list(o.get("shape", [])) for o in header.get("outputs", []) if o["kind"] == "array"]


def shape_note(header):
    """' of shape (2, 3)' for a reply with one array output, else ''."""
    shapes = array_shapes(header)
    return f" of shape {tuple(shapes[0])}" if len(shapes) == 1 else ""


def kind_of(value):
    return "an array" if isinstance(value, np.ndarray) else f"{value!r}"
