"""The spec's shape rules (documented output shapes) applied to a result that otherwise passed: the evaluated shape
in every mode, and in symbolic mode the static shape the backend infers before running the graph (K.int_shape)."""

from typing import List, Optional, Sequence

from kbtool.results import Details, Status, Verdict
from kbtool.specs import shapes
from kbtool.specs.cases import Case
from kbtool.verdicts.replies import Header, array_shapes

Rules = Optional[Sequence[shapes.Rule]]  # the op's shape rules (None: it has none)


def _applies(rules: Rules, case: Case, header: Header) -> bool:
    """Rules apply to plain calls with one array output: not to raises, gradients or observed updates, whose outputs
    are not the op's result."""
    return bool(rules) and not case.raises and not case.grad and not case.observe and len(array_shapes(header)) == 1


def judge_shape_rules(rules: Rules, case: Case, header: Header) -> Optional[Verdict]:
    """A failing Verdict when the documented shape disagrees with the one array output, else None."""
    if not rules or not _applies(rules, case, header):
        return None
    outputs = array_shapes(header)
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


def _text(shape: Optional[List[Optional[int]]]) -> str:
    return "unknown (int_shape returned None)" if shape is None else str(tuple(shape))


def judge_static_shape(rules: Rules, case: Case, header: Header) -> Optional[Verdict]:
    """In symbolic mode: a failing Verdict when the backend's K.int_shape of the one array output disagrees with the
    static shape the spec's shape rule predicts from the placeholders' shapes, else None.

    A dim the inputs determine must be that size (None is a lost dim); a dim they leave unknown may be None or the
    real size (a backend may know more, e.g. an unknown dim broadcast against a known one), never another size.
    A backend with no int_shape, or one that raises, is not judged here (the reply says so; the case stands).
    """
    if not rules or not _applies(rules, case, header):
        return None
    (output,) = [o for o in header.get("outputs", []) if o["kind"] == "array"]
    if "static_shape" not in output:
        return None
    static = output["static_shape"]
    try:
        predicted, index, determined = shapes.expected_static_shape(rules, case.shape_names, case.static_names)
    except shapes.ShapeExprError:
        return None  # judge_shape_rules has said so already
    if predicted is None:
        return None
    real = list(output.get("shape", []))
    problem = _static_problem(static, predicted, determined, real)
    if problem is None:
        return None
    return Verdict(
        Status.FAIL,
        "static shape {} != predicted {} (shape rule {}{}): {}".format(
            _text(static), tuple(predicted), index, "" if determined else "; any dim may be None", problem
        ),
        Details(static_shape=static, predicted_static_shape=predicted),
    )


def _static_problem(
    static: Optional[List[Optional[int]]], predicted: List[Optional[int]], determined: bool, real: List[int]
) -> Optional[str]:
    """What is wrong with `static` against the prediction, in words (every wrong dim, in order); None when nothing is."""
    if static is None:
        return "the backend infers no static shape at all"
    if len(static) != len(predicted):
        return f"rank {len(static)} where the inputs determine rank {len(predicted)}"
    problems = []
    for dim, (got, want) in enumerate(zip(static, predicted)):
        size = real[dim] if dim < len(real) else want
        if got is None:
            if want is not None and determined:
                problems.append(f"dim {dim} is None where the inputs determine {want}")
        elif want is not None and determined:
            if got != want:
                problems.append(f"dim {dim} is {got} where the inputs determine {want}")
        elif got != size:
            problems.append(f"dim {dim} is {got}, unknown from the inputs and {size} when run")
    return "; ".join(problems) or None
