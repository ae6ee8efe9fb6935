"""Names for the spec's parsed data, shared by the modules of kbtool/specs (and the verdicts that read cases).

The spec is YAML validated against kbtool/specs/schema.py: its values are whatever the file says, so these are
aliases of plain mappings that say which mapping a value is. The typed records built from them are loader.Spec (the
whole spec), binding.Binding (a case bound to its signature) and cases.Case (a runnable case).
"""

from typing import Any, Dict, List

Entry = Dict[str, Any]  # one op's entry of ops.yaml: signature, cases, examples, grid, shape_rules, tolerance, ...
Param = Dict[str, Any]  # one parameter of an entry's signature: name, kind, default, domain, tuple, weight, ...
RawCase = Dict[str, Any]  # a case as ops.yaml writes it (or a grid generates it): id, inputs, kwargs, raises, ...
InputSpec = Dict[str, Any]  # one input of a case: {shape, dtype, dist, low, high, fill, ...} or {value: ...}
ArgSpec = Dict[str, Any]  # one worker ARG spec (kbtool/worker/invoke.py): {tensor: 0}, {value: 3}, {list: [...]}, ...
KeyPath = List[Any]  # a key path within the spec or a case: names and list indices (a YAML key may be any scalar)
