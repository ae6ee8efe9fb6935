"""What the docs promise about a random op's draws, tested against the arguments' documented values.

The reference's own draws are never the yardstick here: each case's call arguments (mean, stddev, minval, maxval,
p, level, noise_shape, ...) give the documented law, and the backend's draws are tested against it:

    random_normal, random_normal_variable  N(mean, stddev^2): mean, stddev, shape of the law, independence
    random_uniform, random_uniform_variable  within [minval, maxval] exactly (the docs: lower and upper boundary;
             a float32 draw may round up to maxval), uniform on it, independence
    truncated_normal  within mean +- 2 stddev exactly, a N(mean, stddev^2) cut there (re-picked, not clipped)
    random_binomial  every value 0 or 1, ones with probability p, independence
    dropout  each entry 0 or x / (1 - level); flags dropped with probability `level`; with noise_shape the flags
             are constant along its size-1 axes (whole slices kept or dropped together) and independent elsewhere

Tests: a z-test of the mean and an asymptotic test of the variance (the law's fourth moment), a Kolmogorov-Smirnov
test against the law, an exact binomial test for counts, and for independence the neighbours along each axis in
disjoint pairs (x[2i], x[2i+1]): Spearman's rank correlation (distribution-free) for continuous draws, Fisher's exact
test for 0/1 flags. Bounds and values (0/1, 0 or the scaled x) are exact, up to rounding the bound to the draws' dtype.

ALPHA is the false-alarm rate of each test. The spec has about 60 stats cases (about 930 results over 8 backends and
2 modes), each running at most about 10 tests, so a correct backend fails some test of a full run by chance with
probability about 1e-3 at most; seeded cases draw the same values on every run of one backend (a false alarm there
would be reproducible and would never come and go), and the 13 unseeded ones make the flicker about 2e-4 per run.

Power: every float case of random_normal, random_uniform and truncated_normal draws 100000 values, random_binomial's
p 0.2 and 0.3 cases 300000 flags (p 0.5: 100000), so that at ALPHA each test sees a 3 % (CHANGE) change of a
documented parameter with probability 0.99 or more: the mean moved by 3 % of stddev (z-test, power 0.99998), stddev
3 % off (variance test, power 1.0), minval or maxval moved by 3 % of the range (inward: KS test, D 0.03 against a
critical 0.0092, power 1.0; the moments say it too; outward: the exact bounds), p 3 % off (binomial test, power
0.998 at p 0.2). A failing test's message says its test, n and power (power_* below compute it). At the old 10000
draws the mean's z-test had power 0.01 and the variance test 0.17: a 3 % stddev error passed almost every case.
"""

import math
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np
from scipy import stats as sps

ALPHA = 1e-7  # per test; about 5.3 standard errors for a two-sided z-test
CHANGE = 0.03  # the parameter change every float case must see with power 0.99 (its sample size is chosen so)
MIN_PAIRS = 100  # fewer disjoint neighbour pairs than this along an axis: that axis' independence is not tested


class Law:
    """A documented law of one op's draws; `check` returns the first broken property's message, or None."""

    def check(self, draws: np.ndarray) -> Optional[str]:
        raise NotImplementedError

    def degenerate(self) -> bool:
        """True where every draw is the same value (then two draws are equal whatever the seed)."""
        return False

    def chance_equal(self, size: int) -> float:
        """The probability that two independent draws of `size` values are equal (continuous: 0 unless degenerate)."""
        return 1.0 if self.degenerate() or size == 0 else 0.0


def _p(value: float) -> str:
    return f"p {value:.2g} < alpha {ALPHA:g}"


def _g(value: float) -> str:
    return f"{value:.4g}"


def _z_crit() -> float:
    return float(sps.norm.isf(ALPHA / 2))


def power_mean(n: int, std: float, shift: float) -> float:
    """The two-sided z-test's chance to see the mean moved by `shift` (draws of standard deviation `std`)."""
    if n < 2 or std <= 0:
        return 0.0
    z = abs(shift) * math.sqrt(n) / std
    return float(sps.norm.cdf(z - _z_crit()) + sps.norm.cdf(-z - _z_crit()))


def power_variance(n: int, std: float, kurtosis: float, ratio: float = 1 + CHANGE) -> float:
    """The variance test's chance to see the standard deviation times `ratio` (the law's excess kurtosis)."""
    if n < 2 or std <= 0:
        return 0.0
    v0, v1 = std**2, (ratio * std) ** 2
    spread = math.sqrt((kurtosis + 2.0) / n)
    return float(sps.norm.cdf((abs(v1 - v0) - _z_crit() * v0 * spread) / (v1 * spread)))


def power_ks(n: int, distance: float) -> float:
    """A lower bound on the Kolmogorov-Smirnov test's chance to see a law `distance` (sup |F1 - F0|) away: the
    asymptotic critical value c = sqrt(ln(2 / alpha) / 2n), and Dvoretzky-Kiefer-Wolfowitz for the empirical CDF's
    distance from the true law, 2 exp(-2 n (distance - c)^2)."""
    if n < 2:
        return 0.0
    c = math.sqrt(math.log(2 / ALPHA) / (2 * n))
    return 0.0 if distance <= c else max(0.0, 1 - 2 * math.exp(-2 * n * (distance - c) ** 2))


def power_count(n: int, p: float, ratio: float = 1 + CHANGE) -> float:
    """The binomial test's chance (normal approximation) to see the probability `p` times `ratio` (or divided by
    it where that would pass 1)."""
    p1 = p * ratio if p * ratio <= 1 else p / ratio
    if n < 2 or p in (0.0, 1.0):
        return 0.0
    spread0, spread1 = math.sqrt(p * (1 - p)), math.sqrt(p1 * (1 - p1))
    return float(sps.norm.cdf((abs(p1 - p) * math.sqrt(n) - _z_crit() * spread0) / spread1))


def _power(test: str, n: int, chance: float, what: str) -> str:
    return f"{test}, n={n}, power {chance:.2f} to see {what}"


def _slack(dtype: Any, *bounds: float) -> float:
    """How far a bound computed in `dtype` may round: two ulps of the largest magnitude involved."""
    eps = float(np.finfo(dtype).eps) if np.dtype(dtype).kind == "f" else 0.0
    return 2 * eps * max([abs(b) for b in bounds] + [1e-30])


def _finite(draws: np.ndarray) -> Optional[str]:
    bad = int(np.sum(~np.isfinite(draws)))
    return f"values: {bad} of {draws.size} draws are not finite" if bad else None


def _moments(
    draws: np.ndarray, mean: float, std: float, kurtosis: float, names: Tuple[str, str], shift: Tuple[float, str]
) -> Optional[str]:
    """z-test of the mean; variance against its asymptotic normal law (Var s^2 = (mu4 - sigma^4) / n). The power
    said is for the mean moved by shift[0] (what a 3 % parameter change does, in words: shift[1]) and for a
    standard deviation 3 % off."""
    n = draws.size
    if n < 2 or std <= 0:
        return None
    values = draws.astype("float64")
    z = (values.mean() - mean) / (std / math.sqrt(n))
    p = 2 * sps.norm.sf(abs(z))
    if p < ALPHA:
        power = _power("z-test", n, power_mean(n, std, shift[0]), shift[1])
        return (
            f"{names[0]}: the draws' mean {_g(values.mean())} is {abs(z):.1f} standard errors from the documented "
            f"{_g(mean)} ({_p(p)}; {power})"
        )
    variance = values.var(ddof=1)
    se = std**2 * math.sqrt((kurtosis + 2.0) / n)  # mu4 = (excess kurtosis + 3) sigma^4
    z = (variance - std**2) / se
    p = 2 * sps.norm.sf(abs(z))
    if kurtosis == 0.0:  # a normal law: (n-1) s^2 / sigma^2 is chi-square, exactly; the normal tail is far too thin
        # at small n (6 draws of N(0, 1) with s = 2.08: p 7.5e-9 by the normal law, 1.2e-3 exactly)
        statistic = (n - 1) * variance / std**2
        p = min(1.0, 2 * min(float(sps.chi2.cdf(statistic, n - 1)), float(sps.chi2.sf(statistic, n - 1))))
    if p < ALPHA:
        power = _power("variance test", n, power_variance(n, std, kurtosis), "a 3 % stddev change")
        return (
            f"{names[1]}: the draws' standard deviation {_g(math.sqrt(variance))} where the documented law's is "
            f"{_g(std)} ({abs(z):.1f} standard errors; {_p(p)}; {power})"
        )
    return None


def _ks(
    draws: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray], what: str, distance: float, change: str
) -> Optional[str]:
    """Kolmogorov-Smirnov against the law; its power is said for `change`, a law `distance` away."""
    if draws.size < 2:
        return None
    result = sps.kstest(draws.astype("float64").ravel(), cdf)
    if result.pvalue < ALPHA:
        power = _power("KS test", draws.size, power_ks(draws.size, distance), change)
        return (
            f"distribution: the draws are not {what} (Kolmogorov-Smirnov D {result.statistic:.3g}, "
            f"{_p(result.pvalue)}; {power})"
        )
    return None


def _pairs(array: np.ndarray, axis: int) -> Tuple[np.ndarray, np.ndarray]:
    """Disjoint neighbour pairs along `axis`: (x[2i], x[2i+1]) of every lane, flattened."""
    moved = np.moveaxis(array, axis, -1)
    even = moved.shape[-1] // 2 * 2
    return moved[..., 0:even:2].ravel(), moved[..., 1:even:2].ravel()


def independence(array: np.ndarray, binary: bool, skip_axes: Sequence[int] = ()) -> Optional[str]:
    """Neighbouring draws along each axis (but `skip_axes`) must not be associated."""
    for axis in range(array.ndim):
        if axis in skip_axes or array.shape[axis] < 2:
            continue
        a, b = _pairs(array, axis)
        if a.size < MIN_PAIRS:
            continue
        if binary:
            a, b = a.astype(bool), b.astype(bool)
            table = [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
            if min(sum(table[0]), sum(table[1]), table[0][0] + table[1][0], table[0][1] + table[1][1]) == 0:
                continue  # a constant margin: nothing to test (the counts' own test judges it)
            p = sps.fisher_exact(table).pvalue
            measure = f"agree in {(table[0][0] + table[1][1]) / a.size:.1%} of {a.size} pairs"
        else:
            if np.all(a == a[0]) or np.all(b == b[0]):
                continue
            rho, p = sps.spearmanr(a, b)
            measure = f"Spearman rho {rho:.3f} over {a.size} pairs"
        if p < ALPHA:
            return f"independence: neighbouring draws along axis {axis} are associated ({measure}, {_p(p)})"
    return None


class Normal(Law):
    def __init__(self, mean: float, std: float, names: Tuple[str, str] = ("mean", "stddev")):
        self.mean, self.std, self.names = float(mean), float(std), names

    def degenerate(self) -> bool:
        return self.std == 0

    def check(self, draws: np.ndarray) -> Optional[str]:
        if self.std == 0:
            return _exactly(draws, self.mean, f"{self.names[1]} 0: every draw is the {self.names[0]}")
        law = sps.norm(self.mean, self.std)
        return (
            _finite(draws)
            or _moments(draws, self.mean, self.std, 0.0, self.names, (CHANGE * self.std, "the mean 3 % of stddev off"))
            or _ks(
                draws,
                law.cdf,
                f"N({_g(self.mean)}, {_g(self.std)}^2)",
                _distance(law.cdf, sps.norm(self.mean, self.std * (1 + CHANGE)).cdf, self.mean, self.std),
                "a 3 % stddev change",
            )
            or independence(draws, binary=False)
        )


class TruncatedNormal(Law):
    """N(mean, stddev^2) with draws beyond two stddev re-picked: within mean +- 2 stddev, cut, not clipped."""

    def __init__(self, mean: float, std: float):
        self.mean, self.std = float(mean), float(std)

    def degenerate(self) -> bool:
        return self.std == 0

    def check(self, draws: np.ndarray) -> Optional[str]:
        if self.std == 0:
            return _exactly(draws, self.mean, "stddev 0: every draw is the mean")
        low, high = self.mean - 2 * self.std, self.mean + 2 * self.std
        law = sps.truncnorm(-2.0, 2.0, loc=self.mean, scale=self.std)
        mean, var, _, kurtosis = (float(v) for v in law.stats(moments="mvsk"))
        return (
            _finite(draws)
            or _within(draws, low, high, "mean +- 2 stddev")
            or _moments(
                draws,
                mean,
                math.sqrt(var),
                kurtosis,
                ("mean", "stddev"),
                (CHANGE * self.std, "the mean 3 % of stddev off"),
            )
            or _ks(
                draws,
                law.cdf,
                f"N({_g(self.mean)}, {_g(self.std)}^2) re-picked beyond 2 stddev",
                _distance(law.cdf, sps.norm(self.mean + CHANGE * self.std, self.std).cdf, self.mean, self.std),
                "the mean 3 % of stddev off",
            )
            or independence(draws, binary=False)
        )


class Uniform(Law):
    def __init__(self, low: float, high: float, names: Tuple[str, str] = ("minval", "maxval")):
        self.low, self.high, self.names = float(low), float(high), names

    def degenerate(self) -> bool:
        return self.low == self.high

    def check(self, draws: np.ndarray) -> Optional[str]:
        if self.low == self.high:
            return _exactly(draws, self.low, f"{self.names[0]} == {self.names[1]}: every draw is {self.names[0]}")
        law = sps.uniform(self.low, self.high - self.low)
        return (
            _finite(draws)
            or _within(draws, self.low, self.high, "[{}, {}]".format(*self.names))
            or _ks(
                draws,
                law.cdf,
                f"uniform on [{_g(self.low)}, {_g(self.high)}]",
                CHANGE,
                f"{self.names[0]} or {self.names[1]} 3 % of the range off",
            )
            or _moments(
                draws,
                (self.low + self.high) / 2,
                (self.high - self.low) / math.sqrt(12),
                -1.2,
                ("{}/{}".format(*self.names), "{}/{}".format(*self.names)),
                (CHANGE * (self.high - self.low) / 2, f"{self.names[0]} or {self.names[1]} 3 % of the range off"),
            )
            or independence(draws, binary=False)
        )


def _chance_equal_flags(p: float, n: int) -> float:
    return float((p * p + (1 - p) * (1 - p)) ** n)


class Bernoulli(Law):
    def __init__(self, p: float):
        self.p = float(p)

    def degenerate(self) -> bool:
        return self.p in (0.0, 1.0)

    def chance_equal(self, size: int) -> float:
        return _chance_equal_flags(self.p, size)

    def check(self, draws: np.ndarray) -> Optional[str]:
        other = int(np.sum((draws != 0) & (draws != 1)))
        if other:
            return f"values: {other} of {draws.size} draws are neither 0 nor 1"
        return _count(int(np.sum(draws == 1)), draws.size, self.p, "p", "ones") or independence(draws, binary=True)


class Dropout(Law):
    """x's entries each 0 or x / (1 - level); keep/drop flags drawn with noise_shape, broadcast to x's shape."""

    def __init__(self, x: np.ndarray, level: float, noise_shape: Optional[Sequence[Optional[int]]]):
        self.x, self.level = np.asarray(x), float(level)
        self.noise_shape = None if noise_shape is None else [None if d is None else int(d) for d in noise_shape]

    def degenerate(self) -> bool:
        return self.level == 0 or not np.any(self.x)

    def chance_equal(self, size: int) -> float:
        visible = self.x != 0  # the flags that show: one per slice along the axes noise_shape broadcasts
        for axis in self.broadcast_axes():
            visible = np.take(visible, [0], axis=axis)
        return 1.0 if self.degenerate() else _chance_equal_flags(self.level, int(visible.sum()))

    def broadcast_axes(self) -> List[int]:
        """The axes of x whose flags noise_shape shares (its size-1 dims where x's dim is larger)."""
        if self.noise_shape is None or len(self.noise_shape) != self.x.ndim:
            return []
        return [i for i, d in enumerate(self.noise_shape) if d == 1 and self.x.shape[i] > 1]

    def check(self, draws: np.ndarray) -> Optional[str]:
        x = self.x.astype("float64")
        scaled = x / (1.0 - self.level)
        draws64 = draws.astype("float64")
        # rounding: the draws' dtype, and `level` held as a float32 constant (Theano types a Python float as
        # floatX: x / 0.8 is x * 1.2499999814 in float64), a relative change of 1e-8, not another scale
        tol = max(_slack(draws.dtype, 1.0), _slack("float32", 1.0)) * np.maximum(np.abs(scaled), 1.0)
        kept = np.abs(draws64 - scaled) <= tol
        dropped = (draws64 == 0) & (x != 0) & (self.level > 0)  # level 0: x itself, nothing dropped
        bad = ~(kept | dropped | (x == 0) & (draws64 == 0))
        if bad.any():
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            return (
                f"values: {int(bad.sum())} of {draws.size} entries are neither 0 nor x / (1 - level) "
                f"(first at {first}: {_g(draws64[first])} where x / (1 - {_g(self.level)}) = {_g(scaled[first])})"
            )
        if self.level == 0:
            return None
        if not np.all(x != 0):
            return None  # a flag is only visible where x is not 0: the structure is not tested
        flags = dropped
        for axis in self.broadcast_axes():
            mixed = np.any(flags != np.take(flags, [0], axis=axis), axis=axis)
            if mixed.any():
                return (
                    f"noise_shape: the flags differ along axis {axis} in {int(mixed.sum())} of {mixed.size} slices "
                    f"where noise_shape {tuple(self.noise_shape or ())} asks for whole slices kept or dropped together"
                )
            flags = np.take(flags, [0], axis=axis)
        return _count(int(flags.sum()), flags.size, self.level, "level", "dropped flags") or independence(
            flags, binary=True, skip_axes=self.broadcast_axes()
        )


def _exactly(draws: np.ndarray, value: float, what: str) -> Optional[str]:
    target = np.asarray(value, dtype=draws.dtype).astype("float64")
    bad = int(np.sum(draws.astype("float64") != target))
    return f"{what}: {bad} of {draws.size} draws are not {_g(value)}" if bad else None


def _within(draws: np.ndarray, low: float, high: float, what: str) -> Optional[str]:
    slack = _slack(draws.dtype, low, high)
    values = draws.astype("float64")
    bad = int(np.sum((values < low - slack) | (values > high + slack)))
    if bad:
        return (
            f"bounds: {bad} of {draws.size} draws outside {what} = [{_g(low)}, {_g(high)}] "
            f"(min {_g(values.min())}, max {_g(values.max())})"
        )
    return None


def _count(k: int, n: int, p: float, name: str, what: str) -> Optional[str]:
    if n == 0:
        return None
    result = sps.binomtest(k, n, p).pvalue
    if result < ALPHA:
        power = _power("binomial test", n, power_count(n, p), f"{name} 3 % off")
        return (
            f"{name}: {k} {what} of {n} where {name} = {_g(p)} expects {_g(n * p)} (binomial test {_p(result)}; "
            f"{power})"
        )
    return None


def _distance(
    cdf: Callable[[np.ndarray], np.ndarray], other: Callable[[np.ndarray], np.ndarray], centre: float, scale: float
) -> float:
    """sup |F - G| of two laws near `centre` (within 6 `scale`), on a fine grid."""
    grid = np.linspace(centre - 6 * scale, centre + 6 * scale, 4001)
    return float(np.max(np.abs(cdf(grid) - other(grid))))


def law_of(op: str, arguments: Any, x: Optional[np.ndarray] = None) -> Optional[Law]:
    """The documented law of `op` called with `arguments` (the bound call: name -> value); None if none is known."""
    a = dict(arguments or {})
    try:
        if op == "random_normal":
            return Normal(a.get("mean", 0.0), a.get("stddev", 1.0))
        if op == "random_normal_variable":
            return Normal(a["mean"], a["scale"], ("mean", "scale"))
        if op == "truncated_normal":
            return TruncatedNormal(a.get("mean", 0.0), a.get("stddev", 1.0))
        if op == "random_uniform":
            return Uniform(a.get("minval", 0.0), a.get("maxval", 1.0))
        if op == "random_uniform_variable":
            return Uniform(a["low"], a["high"], ("low", "high"))
        if op in ("random_binomial", "random_bernoulli"):
            return Bernoulli(a.get("p", 0.0))
        if op == "dropout" and x is not None:
            return Dropout(x, a["level"], a.get("noise_shape"))
    except (KeyError, TypeError, ValueError):
        return None
    return None
