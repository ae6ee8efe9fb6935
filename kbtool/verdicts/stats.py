"""Random ops: judged by shape, dtype and statistics (never by value), and seeded draws by reproducibility."""

import numpy as np

from ..results import Details, Status, Verdict

MEASURES = ("mean", "std", "min", "max")


def judge_stats(stats, expected, values):
    """`stats` holds [low, high] bounds per measure and `reproducible`; `values` are the backend's draws."""
    if not values or not isinstance(values[0], np.ndarray):
        return Verdict(Status.FAIL, f"returned {values[:1]!r}, expected an array")
    exp, act = np.asarray(expected[0]), values[0]
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
    array = act.astype("float64")
    if array.size == 0:
        return Verdict(Status.FAIL, "empty output")
    measured = {"mean": array.mean(), "std": array.std(), "min": array.min(), "max": array.max()}
    for key in MEASURES:
        if key in stats and not stats[key][0] <= measured[key] <= stats[key][1]:
            return Verdict(Status.FAIL, "{} {:.4g} outside [{:g}, {:g}]".format(key, measured[key], *stats[key]))
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
