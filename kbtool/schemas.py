"""The JSON Schemas kbtool ships (the check report's, the bench report's): read one, and list what a document breaks."""

import functools
import json
from typing import Any, Dict, List, Sequence, Union


def load(path: str) -> Dict[str, Any]:
    """The schema in `path` (a fresh copy: the caller may change it)."""
    with open(path, encoding="utf-8") as fh:
        schema: Dict[str, Any] = json.load(fh)
    return schema


@functools.cache
def _validator(path: str, definition: str = "") -> Any:
    """A compiled validator for the whole schema, or for one of its $defs (which shares the schema's $defs)."""
    import jsonschema

    target = load(path)
    if definition:
        target = {k: v for k, v in target.items() if k in ("$schema", "$id", "$defs")}
        target["$ref"] = f"#/$defs/{definition}"
    return jsonschema.Draft202012Validator(target)  # no format checker: formats are not asserted


def problems(path: str, document: Any, definition: str = "", prefix: Sequence[Union[str, int]] = ()) -> List[str]:
    """Problems of `document` against the schema in `path` (or its $defs `definition`), as 'path: message' strings
    (empty when valid), in the order of their place in the document; `prefix` is where the document sits."""
    return [
        "{}: {}".format("/".join(str(p) for p in [*prefix, *error.absolute_path]) or "(top)", error.message)
        for error in sorted(
            _validator(path, definition).iter_errors(document), key=lambda e: [str(p) for p in e.absolute_path]
        )
    ]
