"""The statistics match textbook values (and scipy's definitions)."""

from __future__ import annotations

import math

import pytest

from probes.stats import chi2_sf, chi_squared, difference_test, fisher_exact, wilson


@pytest.mark.parametrize(
    ("x", "df"),
    # The 95th percentiles of the chi-squared distribution from any printed table.
    [(3.841458820694124, 1), (5.991464547107979, 2), (7.814727903251178, 3), (9.487729036781154, 4),
     (11.070497693516351, 5)],
)
def test_chi2_survival_at_the_95th_percentile_is_five_percent(x, df):
    assert chi2_sf(x, df) == pytest.approx(0.05, rel=1e-9)


def test_chi2_survival_of_zero_is_one():
    assert chi2_sf(0.0, 3) == 1.0


def test_wilson_intervals_match_published_values():
    # Wilson (1927) / Newcombe (1998): 0 of 10 → [0, 0.2775]; 5 of 10 → [0.2366, 0.7634].
    low, high = wilson(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    low, high = wilson(5, 10)
    assert (low, high) == (pytest.approx(0.2366, abs=1e-4), pytest.approx(0.7634, abs=1e-4))
    assert wilson(0, 0) is None


def test_fisher_exact_on_the_lady_tasting_tea():
    # Fisher's own example: 3 of 4 cups right; the two-sided p is 34/70.
    assert fisher_exact([[3, 1], [1, 3]]) == pytest.approx(34 / 70, rel=1e-12)
    assert fisher_exact([[4, 0], [0, 4]]) == pytest.approx(2 / 70, rel=1e-12)


def test_chi_squared_on_a_two_by_two_table_uses_yates_correction():
    result = chi_squared([[10, 20], [20, 10]])
    # Expected 15 everywhere; (|10-15| - 0.5)² / 15 × 4 = 5.4, one degree of freedom.
    assert result.statistic == pytest.approx(5.4)
    assert result.df == 1
    assert result.p_value == pytest.approx(math.erfc(math.sqrt(5.4 / 2)))


def test_chi_squared_on_a_larger_table_has_no_correction():
    result = chi_squared([[10, 20, 30], [30, 20, 10]])
    # Expected 20 everywhere: (100 + 0 + 100) × 2 / 20 = 20, two degrees of freedom.
    assert result.statistic == pytest.approx(20.0)
    assert result.p_value == pytest.approx(math.exp(-10))


def test_small_two_by_two_tables_get_fishers_exact_test():
    assert difference_test([[3, 1], [1, 3]]).test == "Fisher's exact"
    assert difference_test([[10, 20], [20, 10]]).test == "chi-squared (Yates)"


def test_a_larger_table_with_small_expected_counts_says_its_p_is_approximate():
    # Row totals 4 and 4, column totals 3, 3, 2 over 8: every expected count is 1.5 or 1.
    assert difference_test([[3, 1, 0], [0, 2, 2]]).test == "chi-squared, an expected count below 5: P is approximate"
    assert difference_test([[10, 20, 30], [30, 20, 10]]).test == "chi-squared"


def test_nothing_to_compare_gives_no_test():
    assert difference_test([[5, 0], [7, 0]]) is None  # everyone predicted the same label
    assert difference_test([[5, 3]]) is None  # one group only
