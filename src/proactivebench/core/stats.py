"""Uncertainty for the benchmark's comparisons: Wilson and bootstrap intervals, paired
differences, McNemar's test and Spearman's rank correlation; agreement between annotators
(Cohen's and Fleiss' kappa).

Pure functions of plain numbers (NumPy only), so that they can be tested against textbook
cases and reused by any report. Every resampling takes a seed: the same results and seed give
the same interval, so a report can be rebuilt and cited.

Why Wilson for a proportion (accuracy, open-ended ps, cp, aggregate: a mean of 0/1
outcomes): a percentile bootstrap of 4 failures resamples nothing but failures and gives
[0, 0], which reads as certainty; the Wilson score interval keeps its coverage at small n and
at 0 or 1 (0 of 4: [0, 0.49]). Why the bootstrap elsewhere: the ps rate is a mean of counts,
which no binomial describes, and the paired bootstrap resamples *samples* (not each run on its
own), so the variation shared by two runs over the same samples cancels out of their
difference.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

#: Resamples per interval: the percentile bounds move by well under 0.5 points between seeds.
DEFAULT_RESAMPLES = 2000
DEFAULT_LEVEL = 0.95


@dataclass(frozen=True)
class Interval:  # n_resamples=0 anywhere below: the estimate alone (low = high = estimate)
    """A point estimate and its confidence interval (`low` <= `estimate` <= `high` usually)."""

    estimate: float
    low: float
    high: float


def _resample_means(
    values: np.ndarray, n_resamples: int, seed: int, chunk: int = 256
) -> np.ndarray:
    """Means of `n_resamples` bootstrap resamples of the rows of `values` (n, k) -> (R, k).

    Drawn in chunks so that memory stays bounded for thousands of samples.
    """
    rng = np.random.default_rng(seed % 2**64)  # any int is a seed; NumPy takes only >= 0
    n = values.shape[0]
    means = np.empty((n_resamples, values.shape[1]))
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        index = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = values[index].mean(axis=1)
    return means


def _bounds(draws: np.ndarray, level: float) -> tuple[float, float]:
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(draws, [alpha, 1.0 - alpha])
    return float(low), float(high)


def bootstrap_mean(
    values: Sequence[float],
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
) -> Interval | None:
    """The mean of `values` with a percentile-bootstrap interval; None for no values."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return None
    estimate = float(data.mean())
    # Every resample has the same mean (no spread to estimate), or no interval is asked for.
    if n_resamples <= 0 or np.all(data == data[0]):
        return Interval(estimate, estimate, estimate)
    draws = _resample_means(data[:, None], n_resamples, seed)[:, 0]
    return Interval(estimate, *_bounds(draws, level))


def wilson_interval(
    successes: float, n: float, *, level: float = DEFAULT_LEVEL
) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion, `successes` of `n` (both may be fractional:
    an effective count, `wilson_mean_of_proportions`), on the 0-1 scale; None for n <= 0.

    (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), p = successes / n, z the normal
    quantile of the level (1.959964 at 95 %)."""
    if n <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    p = min(1.0, max(0.0, successes / n))
    z2n = z * z / n
    centre = p + z2n / 2.0
    spread = z * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n))
    # Clamped: at p = 0 (or 1) the bound is 0 (or 1) up to rounding.
    low = max(0.0, (centre - spread) / (1.0 + z2n))
    high = min(1.0, (centre + spread) / (1.0 + z2n))
    return (0.0 if p == 0.0 else low), (1.0 if p == 1.0 else high)


def wilson_mean_of_proportions(
    groups: Sequence[tuple[float, int]], *, level: float = DEFAULT_LEVEL
) -> Interval | None:
    """The unweighted mean of several proportions (the paper's average over scenarios), each
    given as (proportion on the 0-1 scale, its number of outcomes), with a Wilson interval at
    Kish's effective size K² / sum(1/n_i): the size whose binomial variance p(1-p)/n equals
    that of the mean of K proportions sharing one p. With equal sizes it is the total (the
    mean is then the pooled proportion); it needs no resampling, so 0 of 4 in each of seven
    scenarios is not [0, 0]. Groups without outcomes are left out; None when all are."""
    kept = [(p, n) for p, n in groups if n > 0]
    if not kept:
        return None
    estimate = sum(p for p, _ in kept) / len(kept)
    effective = len(kept) ** 2 / sum(1.0 / n for _, n in kept)
    bounds = wilson_interval(estimate * effective, effective, level=level)
    assert bounds is not None  # effective > 0
    return Interval(estimate, *bounds)


def paired_bootstrap_difference(
    first: Sequence[float],
    second: Sequence[float],
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
) -> Interval | None:
    """mean(first) - mean(second) over the same samples (position i of both is sample i),
    with an interval from resampling the samples; None for no samples."""
    a = np.asarray(first, dtype=float)
    b = np.asarray(second, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired values need the same length ({a.size} vs {b.size})")
    if a.size == 0:
        return None
    differences = a - b
    estimate = float(differences.mean())
    if n_resamples <= 0 or np.all(differences == differences[0]):
        return Interval(estimate, estimate, estimate)
    draws = _resample_means(differences[:, None], n_resamples, seed)[:, 0]
    return Interval(estimate, *_bounds(draws, level))


def bootstrap_mean_of_means(
    groups: Sequence[Sequence[float]],
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
) -> Interval | None:
    """The unweighted mean of the groups' means (the paper's average over scenarios), with an
    interval from resampling each group on its own (a stratified bootstrap: every resample
    keeps each scenario's size). Empty groups are left out; None when all are."""
    kept = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not kept:
        return None
    estimate = float(np.mean([g.mean() for g in kept]))
    if n_resamples <= 0 or all(np.all(g == g[0]) for g in kept):
        return Interval(estimate, estimate, estimate)
    draws = np.zeros(n_resamples)
    for offset, group in enumerate(kept):
        draws += _resample_means(group[:, None], n_resamples, seed + 7919 * offset)[:, 0]
    return Interval(estimate, *_bounds(draws / len(kept), level))


def mcnemar_p(only_first: int, only_second: int, *, exact: bool | None = None) -> float:
    """Two-sided p-value of McNemar's test from the discordant pairs: samples that only the
    first run got right (`only_first`) and only the second did (`only_second`).

    `exact` (the default below 25 discordant pairs, where the chi-square approximation is
    poor) uses the binomial distribution with p = 1/2; otherwise the chi-square statistic with
    Edwards' continuity correction, (|b - c| - 1)^2 / (b + c), on one degree of freedom.
    """
    b, c = int(only_first), int(only_second)
    if b < 0 or c < 0:
        raise ValueError("counts of discordant pairs cannot be negative")
    n = b + c
    if n == 0:
        return 1.0
    if exact is None:
        exact = n < 25
    if exact:
        tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2.0**n
        return min(1.0, 2.0 * tail)
    statistic = (abs(b - c) - 1.0) ** 2 / n if abs(b - c) >= 1 else 0.0
    # Survival function of chi-square with 1 degree of freedom: P(Z^2 > s) = erfc(sqrt(s / 2)).
    return math.erfc(math.sqrt(statistic / 2.0))


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing their average rank."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    start = 0
    while start < len(values):
        stop = start
        while stop + 1 < len(values) and sorted_values[stop + 1] == sorted_values[start]:
            stop += 1
        ranks[order[start : stop + 1]] = (start + stop) / 2.0 + 1.0
        start = stop + 1
    return ranks


def spearman_rho(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation: Pearson's correlation of the ranks (ties averaged).

    None with fewer than 3 pairs or when either side is constant (no ranking to correlate).
    """
    a = np.asarray(x, dtype=float)
    b = np.asarray(y, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"x and y need the same length ({a.size} vs {b.size})")
    if a.size < 3:
        return None
    ra, rb = _ranks(a), _ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    denominator = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    if denominator == 0.0:
        return None
    return float((ra * rb).sum() / denominator)


#: Up to this many points, a permutation test enumerates every order (8! = 40,320).
EXACT_PERMUTATIONS = 8


def spearman_permutation_p(
    x: Sequence[float], y: Sequence[float], *, seed: int = 0, n_resamples: int = 10_000
) -> float | None:
    """Two-sided p-value of Spearman's rho by permutation: the share of orders of `y` whose
    |rho| with `x` is at least the observed one. Exact (every order) up to
    EXACT_PERMUTATIONS points; beyond, `n_resamples` seeded shuffles, (hits + 1) / (n + 1).
    Why: over a handful of models a bootstrap interval of rho claims certainty (three models
    in perfect order give [1, 1]), while three points in order arise by chance one time in
    three, two-sided. None where rho is undefined."""
    if spearman_rho(x, y) is None:
        return None
    # Twice the ranks, centred: integers, so that every order's sum of products is exact and
    # compared without a tolerance; Spearman's denominator is the same for every order.
    n = len(x)
    a = 2.0 * _ranks(np.asarray(x, dtype=float)) - (n + 1)
    b = 2.0 * _ranks(np.asarray(y, dtype=float)) - (n + 1)
    observed = abs(float(a @ b))
    if n <= EXACT_PERMUTATIONS:
        orders = np.array(list(itertools.permutations(b)))
        return float(np.count_nonzero(np.abs(orders @ a) >= observed)) / len(orders)
    rng = np.random.default_rng(seed % 2**64)
    shuffled = np.array([rng.permutation(b) for _ in range(n_resamples)])
    hits = int(np.count_nonzero(np.abs(shuffled @ a) >= observed))
    return (hits + 1) / (n_resamples + 1)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100, linear interpolation); None for no values."""
    if len(values) == 0:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' labels of the same items: their agreement beyond what
    their own label frequencies give by chance, (p_o - p_e) / (1 - p_e). None when it is
    undefined: no items, or chance agreement is certain (both always gave one same label)."""
    if len(first) != len(second):
        raise ValueError("both raters must label the same items")
    if not first:
        return None
    n = len(first)
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    count_a, count_b = Counter(first), Counter(second)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def fleiss_kappa(items: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa of several raters (the same number per item, at least two) labelling
    items: the mean pairwise agreement per item beyond the chance agreement of the pooled
    label frequencies, (P - P_e) / (1 - P_e). None when undefined (no items, or one label
    only)."""
    if not items:
        return None
    raters = len(items[0])
    if raters < 2 or any(len(item) != raters for item in items):
        raise ValueError("every item needs the same number of raters, at least two")
    pooled: Counter[Hashable] = Counter()
    agreement = 0.0
    for item in items:
        counts = Counter(item)
        pooled.update(counts)
        agreement += (sum(c * c for c in counts.values()) - raters) / (raters * (raters - 1))
    mean_agreement = agreement / len(items)
    total = len(items) * raters
    expected = sum((c / total) ** 2 for c in pooled.values())
    if expected >= 1.0:
        return None
    return (mean_agreement - expected) / (1.0 - expected)
