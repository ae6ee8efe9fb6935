"""The spec's shape rules (documented output shapes) applied to a result that otherwise passed."""

from ..results import Details, Status, Verdict
from ..specs import shapes
from .replies import array_shapes


def judge_shape_rules(rules, case, header):
    """A failing Verdict when the documented shape disagrees with the one array output, else None.

    Rules apply to plain calls with one array output: not to raises, gradients or observed updates,
    whose outputs are not the op's result.
    """
    if not rules or case.raises or case.grad or case.observe:
        return None
    outputs = array_shapes(header)
    if len(outputs) != 1:
        return None
    try:
        want, index = shapes.expected_shape(rules, case.shape_names)
    except shapes.ShapeExprError as exc:
        return Verdict(Status.FAIL, f"spec shape rule error: {exc}")
    if want is not None and outputs[0] != want:
        return Verdict(
            Status.FAIL,
            f"shape {tuple(outputs[0])} but the spec's shape rule {index} says {tuple(want)}",
            Details(expected_shape=want, actual_shape=outputs[0]),
        )
    return None
