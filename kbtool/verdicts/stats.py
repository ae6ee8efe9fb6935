"""Random ops: judged by shape, dtype and statistics (never by value), and by seeds' effect on the draws.

Order: shape, dtype (a difference is the verdict, and the draws are measured all the same: its message says whether
the statistics agree), the spec's `stats` bounds, the documented law's properties (distributions.py: tested against
the call's documented argument values, not the reference's draws), then seeds (`Draws`): another seed draws other
values, an unseeded call new values each time, and the same seed twice the same values (`reproducible`).
"""

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from kbtool.results import Details, Status, Verdict
from kbtool.specs.cases import Case
from kbtool.verdicts.distributions import ALPHA, Law, law_of


@dataclass
class Draws:
    """What the worker drew for one stats case, in order: the call `repeat` times, then once with `reseed` if set."""

    law: Optional[Law] = None
    repeat: int = 1
    seed: Optional[int] = None  # the call's seed (None: unseeded)
    reseed: Optional[int] = None  # the other seed of the last draw


MEASURES = ("mean", "std", "min", "max")


def draws_of(case: Case) -> Draws:
    """The documented law of a stats case's call (its bound arguments, x for dropout) and how it was drawn."""
    x = None
    for arg in list(case.args) + list(case.kwargs.values()):
        if isinstance(arg, dict) and "tensor" in arg:
            x = case.arrays[arg["tensor"]]
            break
    plan = case.random_plan()
    return Draws(law_of(case.op, case.shape_names, x), plan["repeat"], plan["seed"], plan["reseed"])


def judge_stats(
    stats: Mapping[str, Any], expected: Sequence[Any], values: Sequence[Any], draws: Optional[Draws] = None
) -> Verdict:
    """`stats` holds [low, high] bounds per measure and `reproducible`; `values` are the backend's draws;
    `draws` (when known) the documented law and how the values were drawn."""
    if not values or not isinstance(values[0], np.ndarray):
        return Verdict(Status.FAIL, f"returned {values[:1]!r}, expected an array")
    exp, act = np.asarray(expected[0]), values[0]
    structure = _structure(exp, act)
    if structure is not None and act.size == 0:
        return structure
    # the draws are measured whatever their shape or dtype: a known dtype difference never hides a wrong law
    measured = _measured(stats, act, values, draws or Draws())
    if structure is None:
        return measured
    words = "statistics agree" if measured.passed else "statistics also differ: " + measured.message
    structure.message = f"{structure.message} ({words})"
    return structure


def _structure(exp: np.ndarray, act: np.ndarray) -> Optional[Verdict]:
    """A shape or dtype difference from the reference's draws, or None."""
    if exp.shape != act.shape:
        return Verdict(
            Status.FAIL,
            f"shape {tuple(act.shape)} != reference {tuple(exp.shape)}",
            Details(expected_shape=list(exp.shape), actual_shape=list(act.shape)),
        )
    if exp.dtype != act.dtype:
        return Verdict(
            Status.FAIL,
            f"dtype {act.dtype} != reference {exp.dtype}",
            Details(expected_dtype=str(exp.dtype), actual_dtype=str(act.dtype)),
        )
    return None


def _measured(stats: Mapping[str, Any], act: np.ndarray, values: Sequence[Any], draws: Draws) -> Verdict:
    """The spec's bounds, the documented law, the seeds and reproducibility of the backend's draws `act`."""
    if act.dtype.kind not in "biuf":
        return Verdict(Status.FAIL, f"draws of dtype {act.dtype}: not numbers")
    array = act.astype("float64")
    if array.size == 0:
        return Verdict(Status.FAIL, "empty output")
    measured = {"mean": array.mean(), "std": array.std(), "min": array.min(), "max": array.max()}
    for key in MEASURES:
        if key in stats and not stats[key][0] <= measured[key] <= stats[key][1]:
            return Verdict(Status.FAIL, "{} {:.4g} outside [{:g}, {:g}]".format(key, measured[key], *stats[key]))
    if draws.law is not None:
        broken = draws.law.check(act)
        if broken:
            return Verdict(Status.FAIL, broken)
    # another seed and no seed before the same seed: a backend whose repeated draws differ (TF2 eager) still has its
    # other-seed draw compared
    seeds = _seeds(act, values, draws)
    if seeds:
        return seeds
    if stats.get("reproducible"):
        second = np.asarray(values[1]) if len(values) > 1 else None
        if second is None or second.shape != act.shape or not np.array_equal(act, second):
            differing = int(np.sum(act != second)) if second is not None and second.shape == act.shape else array.size
            return Verdict(
                Status.FAIL,
                f"not reproducible: the same seed drew different values ({differing} of {array.size} differ)",
                Details(mismatched=differing, size=int(array.size)),
            )
    return Verdict(Status.PASS)


def _seeds(act: np.ndarray, values: Sequence[Any], draws: Draws) -> Optional[Verdict]:
    """Another seed draws other values; unseeded calls draw new values each time (not all `repeat` draws equal)."""
    if draws.law is None or draws.law.chance_equal(act.size) > ALPHA:
        return None  # draws that may well be equal by chance are not compared
    others = [np.asarray(v) for v in values[1:]]
    if draws.reseed is not None and len(others) >= draws.repeat:
        other = others[draws.repeat - 1]
        if other.shape == act.shape and np.array_equal(act, other):
            return Verdict(
                Status.FAIL,
                f"seed: seed {draws.seed} and seed {draws.reseed} drew the same {act.size} values (the seed is ignored)",
            )
    if draws.seed is None and draws.repeat > 1 and len(others) >= draws.repeat - 1:
        if all(o.shape == act.shape and np.array_equal(act, o) for o in others[: draws.repeat - 1]):
            return Verdict(
                Status.FAIL,
                f"seed: {draws.repeat} unseeded calls drew the same {act.size} values (seed None is not random)",
            )
    return None
