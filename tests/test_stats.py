"""The interval and test code against cases whose answers are known without it."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proactivebench.core.stats import (
    Interval,
    bootstrap_mean,
    cohen_kappa,
    fleiss_kappa,
    mcnemar_p,
    paired_bootstrap_difference,
    percentile,
    spearman_permutation_p,
    spearman_rho,
    wilson_interval,
    wilson_mean_of_proportions,
)


def test_all_correct_and_all_wrong_have_degenerate_intervals():
    assert bootstrap_mean([1.0] * 50) == Interval(1.0, 1.0, 1.0)
    assert bootstrap_mean([0.0] * 50) == Interval(0.0, 0.0, 0.0)
    assert bootstrap_mean([]) is None


Z95 = 1.959964  # the normal quantile of 0.975


def wilson_by_quadratic(k: int, n: int) -> tuple[float, float]:
    """Wilson's bounds written independently: the p with (k/n - p)^2 = z^2 p (1 - p) / n,
    i.e. the roots of (1 + z^2/n) p^2 - (2k/n + z^2/n) p + (k/n)^2 = 0."""
    phat, c = k / n, Z95 * Z95 / n
    a, b, const = 1 + c, -(2 * phat + c), phat * phat
    root = math.sqrt(b * b - 4 * a * const)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        (0, 4, 0.0, 0.4899),  # no success in 4: up to 49 %, not a certain 0
        (4, 4, 0.5101, 1.0),
        (1, 2, 0.0945, 0.9055),
        (3, 10, 0.1078, 0.6032),
        (0, 1, 0.0, 0.7935),  # z^2 / (1 + z^2)
    ],
)
def test_wilson_interval_of_hand_computed_cases(k: int, n: int, low: float, high: float):
    found = wilson_interval(k, n)
    assert found == pytest.approx((low, high), abs=1e-4)
    assert found == pytest.approx(wilson_by_quadratic(k, n), abs=1e-6)
    # At k = 0 the upper bound is z^2 / (n + z^2): 3.8415 / 7.8415 for n = 4.
    if k == 0:
        assert found[1] == pytest.approx(Z95**2 / (n + Z95**2), abs=1e-7)
    try:  # a third, outside opinion where SciPy is installed
        from scipy.stats import binomtest
    except ImportError:
        return
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert found == pytest.approx((ci.low, ci.high), abs=1e-9)


def test_wilson_interval_of_nothing_is_none():
    assert wilson_interval(0, 0) is None


def test_wilson_mean_of_proportions_at_kishs_effective_size():
    # Seven scenarios of 0 of 4: the mean of equal sizes is the pooled 0 of 28, [0, z^2/(28+z^2)].
    none = wilson_mean_of_proportions([(0.0, 4)] * 7)
    assert none == Interval(0.0, 0.0, pytest.approx(Z95**2 / (28 + Z95**2)))
    assert none.high == pytest.approx(0.1206, abs=1e-4)
    # 1 of 2 and 6 of 6: the mean 0.75 at K^2 / sum(1/n) = 4 / (1/2 + 1/6) = 6 outcomes,
    # 4.5 of 6; a scenario without outcomes is left out.
    mixed = wilson_mean_of_proportions([(0.5, 2), (1.0, 6), (0.0, 0)])
    phat, c = 0.75, Z95 * Z95 / 6
    root = math.sqrt((2 * phat + c) ** 2 - 4 * (1 + c) * phat * phat)
    low, high = ((2 * phat + c) - root) / (2 * (1 + c)), ((2 * phat + c) + root) / (2 * (1 + c))
    assert mixed == Interval(0.75, pytest.approx(low), pytest.approx(high))
    assert (mixed.low, mixed.high) == pytest.approx((0.3648, 0.9400), abs=1e-4)
    assert wilson_mean_of_proportions([(0.0, 0)]) is None


def test_interval_is_reproducible_by_seed_and_moves_with_it():
    values = [1.0] * 30 + [0.0] * 70
    first = bootstrap_mean(values, seed=7)
    assert first == bootstrap_mean(values, seed=7)
    counts = [float(i % 7) for i in range(53)]  # a ps-rate-like mean takes many values
    assert bootstrap_mean(counts, seed=7) != bootstrap_mean(counts, seed=8)
    assert first.estimate == pytest.approx(0.3)
    # Normal approximation of a proportion: 0.3 ± 1.96 * sqrt(0.3 * 0.7 / 100) = ±0.0898.
    assert first.low == pytest.approx(0.3 - 0.0898, abs=0.02)
    assert first.high == pytest.approx(0.3 + 0.0898, abs=0.02)


def test_a_larger_sample_gives_a_narrower_interval():
    small = bootstrap_mean([1.0, 0.0] * 10, seed=1)
    large = bootstrap_mean([1.0, 0.0] * 1000, seed=1)
    assert large.high - large.low < (small.high - small.low) / 5


def test_paired_difference_of_identical_runs_is_exactly_zero():
    run = [1.0, 0.0, 1.0, 1.0, 0.0]
    assert paired_bootstrap_difference(run, run) == Interval(0.0, 0.0, 0.0)


def test_paired_difference_cancels_shared_sample_difficulty():
    # The second run is right on exactly the samples the first is right on, plus 10 more of
    # 100: every resample's difference lies in [0, 1], and the point estimate is 0.1.
    first = [1.0] * 40 + [1.0] * 10 + [0.0] * 50
    second = [1.0] * 40 + [0.0] * 10 + [0.0] * 50
    diff = paired_bootstrap_difference(first, second, seed=3)
    assert diff.estimate == pytest.approx(0.10)
    assert 0.0 < diff.low < 0.10 < diff.high < 0.2
    assert diff == paired_bootstrap_difference(first, second, seed=3)
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap_difference([1.0], [1.0, 0.0])


def test_mcnemar_textbook_example():
    # Fagerland, Lydersen & Laake (2013), BMC Med Res Methodol 13:91, airway
    # hyper-responsiveness: 1 and 7 discordant pairs. Exact conditional p = 18/256 = 0.070;
    # with the continuity correction chi2 = (6 - 1)^2 / 8 = 3.125, p = 0.077.
    assert mcnemar_p(1, 7) == pytest.approx(18 / 256)
    assert mcnemar_p(7, 1) == pytest.approx(18 / 256)
    assert mcnemar_p(1, 7, exact=False) == pytest.approx(0.077, abs=5e-4)


def test_mcnemar_edge_cases_and_chi_square_table():
    assert mcnemar_p(0, 0) == 1.0
    assert mcnemar_p(5, 5) == 1.0  # no evidence either way
    assert mcnemar_p(0, 1) == 1.0  # 2 * (1/2), capped
    assert mcnemar_p(0, 10) == pytest.approx(2 / 1024)
    # Large counts use the chi-square; at |b-c|-1 = 0 the statistic is 0 and p = 1.
    assert mcnemar_p(50, 51) == pytest.approx(1.0)
    # The 5 % critical value of chi-square(1) is 3.841: (|b-c|-1)^2/(b+c) just above it is
    # significant, just below it is not. b=20, c=35: 14^2/55 = 3.56; b=18, c=35: 16^2/53 = 4.83.
    assert mcnemar_p(20, 35) > 0.05
    assert mcnemar_p(18, 35) < 0.05
    with pytest.raises(ValueError):
        mcnemar_p(-1, 3)


def test_spearman_textbook_example():
    # The IQ / hours of TV example of the Wikipedia article on Spearman's rho: -29/165.
    iq = [106, 100, 86, 101, 99, 103, 97, 113, 112, 110]
    tv = [7, 27, 2, 50, 28, 29, 20, 12, 6, 17]
    assert spearman_rho(iq, tv) == pytest.approx(-29 / 165)


def test_spearman_ties_monotone_and_degenerate():
    assert spearman_rho([1, 2, 3, 4], [10, 20, 30, 1000]) == pytest.approx(1.0)
    assert spearman_rho([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # Ties take their average rank: ranks x = 1, 2.5, 2.5, 4 against 1..4 -> rho = 0.9487.
    assert spearman_rho([1, 2, 2, 3], [1, 2, 3, 4]) == pytest.approx(3 / math.sqrt(10))
    assert spearman_rho([1, 2], [1, 2]) is None
    assert spearman_rho([1, 1, 1], [1, 2, 3]) is None


def test_percentile():
    assert percentile([], 50) is None
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile(list(range(101)), 95) == 95


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=1, max_size=60), st.integers(0, 10**6))
def test_interval_contains_the_estimate_and_stays_in_range(outcomes, seed):
    interval = bootstrap_mean(outcomes, seed=seed, n_resamples=200)
    assert 0.0 <= interval.low <= interval.estimate <= interval.high <= 1.0


def test_cohen_kappa_of_a_hand_computed_table():
    # 50 items: both yes 20, first yes second no 5, first no second yes 10, both no 15.
    # p_o = 35/50 = 0.7; yes rates 0.5 and 0.6, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5;
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    first = ["yes"] * 25 + ["no"] * 25
    second = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(first, second) == pytest.approx(0.4)
    assert cohen_kappa(first, first) == pytest.approx(1.0)
    # Opposite on every item of two equally frequent labels: p_o = 0, p_e = 0.5.
    assert cohen_kappa(["a", "b"] * 5, ["b", "a"] * 5) == pytest.approx(-1.0)
    # Undefined: no items, or both always gave one same label (chance agreement is certain).
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["a"] * 4, ["a"] * 4) is None
    with pytest.raises(ValueError):
        cohen_kappa(["a"], ["a", "b"])


def test_fleiss_kappa_of_a_hand_computed_table():
    # Three raters, three items. Per-item agreement: [A,A,A] 1, [A,A,B] (4+1-3)/6 = 1/3,
    # [B,B,C] 1/3; mean 5/9. Pooled labels A 5, B 3, C 1 of 9: p_e = 35/81.
    # kappa = (5/9 - 35/81) / (1 - 35/81) = 10/46.
    items = [["A", "A", "A"], ["A", "A", "B"], ["B", "B", "C"]]
    assert fleiss_kappa(items) == pytest.approx(10 / 46)
    assert fleiss_kappa([["A", "A", "A"], ["B", "B", "B"]]) == pytest.approx(1.0)
    assert fleiss_kappa([]) is None
    assert fleiss_kappa([["A", "A"], ["A", "A"]]) is None
    with pytest.raises(ValueError):
        fleiss_kappa([["A", "A"], ["A"]])


@pytest.mark.parametrize(
    ("x", "y", "p"),
    [
        ([1, 2, 3], [1, 2, 3], 2 / 6),  # in order, or reversed: 2 of the 6 orders
        ([1, 2, 3, 4], [4, 3, 2, 1], 2 / 24),
        ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], 2 / 120),
        ([1, 2, 3, 4], [1, 3, 2, 4], 8 / 24),  # |rho| >= 0.8: the two in order, six one swap off
    ],
)
def test_spearman_permutation_p_counts_the_orders_as_extreme(x, y, p) -> None:
    assert spearman_permutation_p(x, y) == pytest.approx(p)


def test_spearman_permutation_p_beyond_exact_is_seeded_and_agrees_with_scipy() -> None:
    x = list(range(10))
    y = [2, 0, 1, 4, 3, 6, 5, 9, 7, 8]
    found = spearman_permutation_p(x, y, seed=3, n_resamples=4000)
    assert found == spearman_permutation_p(x, y, seed=3, n_resamples=4000)
    assert found is not None and found < 0.01
    try:
        from scipy.stats import permutation_test, spearmanr
    except ImportError:
        return
    small = [5, 1, 4, 2, 3, 7, 8]  # exact on both sides: 7! orders
    exact = permutation_test(
        (small,),
        lambda yy: spearmanr(range(7), yy).statistic,
        permutation_type="pairings",
        alternative="two-sided",
    ).pvalue
    assert spearman_permutation_p(list(range(7)), small) == pytest.approx(exact)
