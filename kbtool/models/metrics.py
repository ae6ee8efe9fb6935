"""How far one engine's arrays are from the oracle's: the largest absolute and relative difference, CRADLE's mean
absolute deviation with an inconsistency threshold that grows with the model's depth, and CRADLE's rate of change
of the deviation from one layer to the next (what localises an inconsistency to a layer).

What CRADLE (Pham, Lutellier, Qi, Tan: "CRADLE: cross-backend validation to detect and localize bugs in deep
learning libraries", ICSE 2019) defines, and what is implemented here:

- the mean absolute deviation of two outputs O, O' of one input instance: delta(O, O') = mean_i |O_i - O'_i|
  (`mad`; over a batch, the mean of the instances' deviations, which for instances of one size is the mean over
  every element);
- its MAD-based distance of two backends A, B against the ground truth G of a regression model:
  D_MAD = |delta(O_A, G) - delta(O_B, G)| / (delta(O_A, G) + delta(O_B, G)), 0 when both are exact (`d_mad`), an
  inconsistency when it passes a threshold (THRESHOLD_D_MAD);
- its localisation metric, the inconsistency introduction rate of a layer L: R_L = (delta_L - delta_pre) /
  (delta_pre + epsilon), delta_L the deviation of the two backends' outputs of L, delta_pre the largest deviation of
  L's inbound layers' outputs (0 for a layer fed by the model's inputs alone), epsilon = 1e-7 (`introduction_rate`);
  the layer with the largest rate is where the inconsistency comes from.
Where the formulas and numbers come from: the CRADLE paper (the MAD-based distance, the rate of change of the
deviation between layers), as reimplemented by its follow-up LEMON (Wang et al., FSE 2020; github.com/Jacob-yen/LEMON
scripts/tools/utils.py: MetricsUtils.delta, MetricsUtils.D_MAD_metrics, ModelUtils.layer_divation with
epsilon=1e-7; config/experiments.conf: threshold = 0.4 for D_MAD, the value taken here). CRADLE's own threshold for
D_MAD could not be read from a stored copy of the paper; LEMON's is the one cited.

kbtool's models have no ground truth (seeded random weights and inputs, no labels), so D_MAD cannot judge them; a
model's outputs are judged against the oracle's directly: inconsistent when delta(engine, oracle) passes
`threshold` = atol + rtol * mean|oracle|, with float32's spec tolerance (verdicts/tolerances.py: rtol 1e-5, atol 1e-6)
multiplied by the layer's depth (`depth_tolerance`): float32 rounding compounds layer after layer, so the outputs of
a deep net on two engines are never bit-equal. A NaN or inf where the other side has none, or a shape that differs,
is inconsistent whatever the numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

from kbtool.models.records import Difference
from kbtool.verdicts.tolerances import tolerance_for

EPSILON = 1e-7  # CRADLE's epsilon in R_L (LEMON: ModelUtils.layer_divation)
THRESHOLD_D_MAD = 0.4  # an inconsistency when D_MAD is at least this (LEMON: config/experiments.conf `threshold`)
TINY = 1e-30  # a relative difference's floor: |b| of 0 gives |a - b| / TINY, not a division by zero


@dataclass(frozen=True)
class Tolerance:
    """How far two float32 arrays of a layer at some depth may be apart: mad <= atol + rtol * mean|oracle|."""

    rtol: float
    atol: float
    depth: int

    def threshold(self, expected: NDArray[Any]) -> float:
        """The MAD an engine's array may have against `expected` (its finite elements' mean magnitude)."""
        finite = expected[np.isfinite(expected)] if expected.size else expected
        scale = float(np.mean(np.abs(finite.astype(np.float64)))) if finite.size else 0.0
        return self.atol + self.rtol * scale


def depth_tolerance(depth: int, dtype: str = "float32") -> Tolerance:
    """The tolerance of a layer `depth` layers from the model's inputs (at least 1): the spec's tolerance of the
    dtype, times the depth."""
    base = tolerance_for(dtype)
    scale = max(1, int(depth))
    return Tolerance(rtol=float(base["rtol"]) * scale, atol=float(base["atol"]) * scale, depth=scale)


def mad(actual: NDArray[Any], expected: NDArray[Any]) -> float:
    """CRADLE's delta: the mean absolute deviation of two arrays of one shape (NaN when either has no element)."""
    a, b = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if a.size == 0:
        return 0.0
    return float(np.mean(np.abs(a - b)))


def d_mad(a: NDArray[Any], b: NDArray[Any], truth: NDArray[Any]) -> float:
    """CRADLE's MAD-based distance of two backends' outputs `a`, `b` of one input instance, against its ground
    truth: in [0, 1], 0 when both deviate from the truth alike (or are both exact)."""
    da, db = mad(a, truth), mad(b, truth)
    if da == 0.0 and db == 0.0:
        return 0.0
    return abs(da - db) / (da + db)


def introduction_rate(delta_layer: float, delta_inbound: Sequence[float], epsilon: float = EPSILON) -> float:
    """CRADLE's R_L: how much a layer grows the deviation it receives (delta_pre: its inbound layers' largest)."""
    before = max(delta_inbound) if delta_inbound else 0.0
    if not (math.isfinite(delta_layer) and math.isfinite(before)):
        return math.inf if not math.isfinite(delta_layer) and math.isfinite(before) else 0.0
    return (delta_layer - before) / (before + epsilon)


def difference(actual: Sequence[NDArray[Any]], expected: Sequence[NDArray[Any]], tolerance: Tolerance) -> Difference:
    """How far an engine's arrays (a model's outputs, a layer's, the gradients) are from the oracle's, all of them
    together: inconsistent when their MAD passes the tolerance's threshold, when their shapes differ, or when a NaN
    or inf stands where the other side has another value."""
    if len(actual) != len(expected) or any(np.shape(a) != np.shape(e) for a, e in zip(actual, expected)):
        return Difference(math.inf, math.inf, math.inf, 0.0, True)
    if not actual:
        return Difference(0.0, 0.0, 0.0, tolerance.atol, False)
    a = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in actual])
    e = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in expected])
    both = np.isfinite(a) & np.isfinite(e)
    # a non-finite value is equal only to the same non-finite value (NaN to NaN)
    odd = ~both & ~((a == e) | (np.isnan(a) & np.isnan(e)))
    threshold = tolerance.threshold(e)
    if (
        not both.any()
    ):  # nothing finite on both sides: a non-finite value where the other has another is as far as it gets
        return (
            Difference(math.inf, math.inf, 0.0, threshold, True)
            if odd.any()
            else Difference(0.0, 0.0, 0.0, threshold, False)
        )
    gap = np.abs(a[both] - e[both])
    max_abs = float(gap.max())
    max_rel = float((gap / np.maximum(np.abs(e[both]), TINY)).max())
    deviation = float(gap.mean())
    if odd.any():
        return Difference(math.inf, math.inf, deviation, threshold, True)
    return Difference(max_abs, max_rel, deviation, threshold, deviation > threshold)


def agree(actual: Sequence[NDArray[Any]], expected: Sequence[NDArray[Any]], tolerance: Tolerance) -> bool:
    """Whether two engines' arrays agree within the tolerance (what a majority vote counts)."""
    return not difference(actual, expected, tolerance).inconsistent


def deviation(actual: Sequence[NDArray[Any]], expected: Sequence[NDArray[Any]]) -> Optional[float]:
    """CRADLE's delta over several arrays (a layer's outputs); None when their shapes differ."""
    if len(actual) != len(expected) or any(np.shape(a) != np.shape(e) for a, e in zip(actual, expected)):
        return None
    if not actual:
        return 0.0
    a = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in actual])
    e = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in expected])
    return mad(np.nan_to_num(a), np.nan_to_num(e))
