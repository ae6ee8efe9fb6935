"""The JSON Schemas kbtool ships (the check report's, the bench report's): read one, and list what a document breaks."""

import functools
import json
from typing import Any, Dict, List


def load(path: str) -> Dict[str, Any]:
    """The schema in `path` (a fresh copy: the caller may change it)."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


@functools.cache
def _validator(path: str) -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(load(path))


def problems(path: str, document: Any) -> List[str]:
    """Problems of `document` against the schema in `path`, as 'path: message' strings (empty when valid), in the
    order of their place in the document."""
    return [
        "{}: {}".format("/".join(str(p) for p in error.absolute_path) or "(top)", error.message)
        for error in sorted(_validator(path).iter_errors(document), key=lambda e: list(e.absolute_path))
    ]
