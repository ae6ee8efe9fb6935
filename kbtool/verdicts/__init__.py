"""Verdicts: what one backend's outcome means against the reference's. One module per concern:

    raises.py       expected exceptions, and a backend raising where the reference did not
    stats.py        random ops: shape, dtype, statistics bounds, seeds' effect (same seed, other seed, no seed)
    distributions.py  random ops: the documented law of the draws (bounds, each argument's effect, independence)
    values.py       values, shapes, dtypes (NaN, inf, NumPy scalars against Python numbers)
    tolerances.py   per-dtype tolerances, the spec's overrides, gradients' looser bound
    bounds.py       dot, conv, reductions, rnn: each value within k eps times its computation's magnitude; margin
    shape_rules.py  the spec's documented output shapes; in symbolic mode the static shape (K.int_shape) too
    doc_claims.py   what each doc version shows for an example
    repeats.py      --repeat N: the runs of one case compared with each other, bit for bit (nondeterministic)

`judge` applies them in order; an outcome is a worker reply `(header, arrays)`.
"""

from typing import Optional, Sequence

from kbtool.results import Details, Status, Verdict
from kbtool.specs.cases import Case
from kbtool.specs.shapes import Rule
from kbtool.verdicts.bounds import compare_bounded, read_bounds
from kbtool.verdicts.doc_claims import doc_check
from kbtool.verdicts.raises import error_words, judge_backend_raised, judge_raises
from kbtool.verdicts.repeats import is_random, judge_runs
from kbtool.verdicts.replies import Reply, output_values
from kbtool.verdicts.shape_rules import judge_shape_rules, judge_static_shape
from kbtool.verdicts.stats import draws_of, judge_stats
from kbtool.verdicts.tolerances import case_overrides
from kbtool.verdicts.values import compare_outputs
from kbtool.worker import protocol

__all__ = ["doc_check", "is_random", "judge", "judge_runs", "output_values"]

# replies that are verdicts by themselves: the case never produced a value to compare
_REPLY_VERDICTS = {
    protocol.CRASH: Status.CRASH,
    protocol.TIMEOUT: Status.TIMEOUT,
    protocol.UNSUPPORTED: Status.UNSUPPORTED,
    protocol.UNAVAILABLE: Status.COULD_NOT_START,
}


def judge(case: Case, expected: Reply, actual: Reply, shape_rules: Optional[Sequence[Rule]] = None) -> Verdict:
    """The verdict on `actual` (a backend's reply) for `case`, against the reference's reply `expected`."""
    exp_header, exp_arrays = expected
    act_header, act_arrays = actual
    if act_header["status"] in _REPLY_VERDICTS:
        return Verdict(_REPLY_VERDICTS[act_header["status"]], act_header.get("message", ""))
    for side, header in (("", act_header), ("the reference: ", exp_header)):
        if header["status"] == protocol.NOT_REACHED:  # its inputs could not be made: the op never ran
            return Verdict(Status.NOT_REACHED, side + error_words(header["error"]))
    if case.raises:
        return judge_raises(case.raises, case.match, act_header)
    if exp_header["status"] == protocol.RAISED:
        # a case that expects a value can never pass because both sides raised: the spec (or the reference) is wrong
        error = exp_header["error"]
        return Verdict(
            Status.ERROR,
            "the reference raised {}: {} (a case that expects an error says `raises:`)".format(
                error["type"], error["message"][:200]
            ),
        )
    if act_header["status"] == protocol.RAISED:
        return judge_backend_raised(act_header["error"])
    if exp_header["status"] != protocol.OK:
        return Verdict(
            Status.ERROR,
            "reference did not produce a value: {}".format(exp_header.get("message", exp_header["status"])),
        )
    expected_values, actual_values = output_values(exp_header, exp_arrays), output_values(act_header, act_arrays)
    if case.stats:
        verdict = judge_stats(case.stats, expected_values, actual_values, draws_of(case))
        if not verdict.passed:
            verdict.details = verdict.details or Details()
            verdict.details.draws = True
    else:
        bounds = read_bounds(exp_header, exp_arrays)
        if bounds:  # an op whose error scales with its work: judged against its bound, its margin recorded
            verdict = compare_bounded(expected_values, actual_values, bounds, case_overrides(case))
        else:
            verdict = compare_outputs(expected_values, actual_values, case_overrides(case))
        if verdict.passed:
            verdict = judge_shape_rules(shape_rules, case, act_header) or verdict
    if verdict.passed:
        return judge_static_shape(shape_rules, case, act_header) or verdict
    return verdict
