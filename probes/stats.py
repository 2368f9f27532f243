"""Exact small statistics for probe scoring: Wilson intervals, Pearson's chi-squared, Fisher's exact test.

Written out rather than importing scipy (≈40 MB for three formulas); each follows scipy's
definition so results match `scipy.stats.chi2_contingency` (Yates' correction on 2×2 tables)
and `scipy.stats.fisher_exact` (two-sided), and the tests check them against textbook values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054  # the standard normal's 97.5th percentile
# A table is "small" for chi-squared when an expected count falls below this (Cochran's rule).
MIN_EXPECTED = 5.0


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval for a proportion; None when n is 0."""
    if n == 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def chi2_sf(x: float, df: int) -> float:
    """P(X ≥ x) for a chi-squared variable with integer `df` degrees of freedom (closed forms)."""
    if x <= 0:
        return 1.0
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for k in range(1, df // 2):
            term *= (x / 2) / k
            total += term
        return min(1.0, math.exp(-x / 2) * total)
    root = math.sqrt(x)
    total = math.erfc(root / math.sqrt(2))
    term = root * math.sqrt(2 / math.pi) * math.exp(-x / 2)
    for k in range(1, (df + 1) // 2):
        total += term
        term *= x / (2 * k + 1)
    return min(1.0, total)


@dataclass(frozen=True)
class TestResult:
    test: str  # "chi-squared", "chi-squared (Yates)" or "Fisher's exact"; a chi-squared says when P is rough
    p_value: float
    statistic: float | None = None
    df: int | None = None


def _trimmed(table: list[list[int]]) -> list[list[int]]:
    """Drop empty rows and columns: they carry no information and would make expected counts zero."""
    rows = [row for row in table if sum(row)]
    keep = [j for j in range(len(rows[0]) if rows else 0) if any(row[j] for row in rows)]
    return [[row[j] for j in keep] for row in rows]


def difference_test(table: list[list[int]]) -> TestResult | None:
    """Whether the rows (ground-truth groups) differ in their columns (predicted labels).

    Fisher's exact test for a 2×2 table with an expected count below 5, otherwise Pearson's
    chi-squared (with Yates' correction on 2×2). None when there is nothing to compare.
    """
    table = _trimmed(table)
    if len(table) < 2 or len(table[0]) < 2:
        return None
    expected = _expected(table)
    if len(table) == 2 and len(table[0]) == 2 and min(min(row) for row in expected) < MIN_EXPECTED:
        return TestResult("Fisher's exact", fisher_exact(table))
    return chi_squared(table)


def _expected(table: list[list[int]]) -> list[list[float]]:
    total = sum(map(sum, table))
    columns = [sum(col) for col in zip(*table, strict=True)]
    return [[sum(row) * c / total for c in columns] for row in table]


def chi_squared(table: list[list[int]]) -> TestResult:
    """Pearson's chi-squared test of independence; Yates-corrected on 2×2 tables, as scipy does."""
    expected = _expected(table)
    df = (len(table) - 1) * (len(table[0]) - 1)
    yates = df == 1
    statistic = 0.0
    for observed_row, expected_row in zip(table, expected, strict=True):
        for o, e in zip(observed_row, expected_row, strict=True):
            gap = abs(o - e)
            if yates:
                gap = max(0.0, gap - 0.5)
            statistic += gap * gap / e
    name = "chi-squared (Yates)" if yates else "chi-squared"
    if min(min(row) for row in expected) < MIN_EXPECTED:  # only larger tables: a small 2×2 gets Fisher's test
        name += f", an expected count below {MIN_EXPECTED:g}: P is approximate"
    return TestResult(name, chi2_sf(statistic, df), statistic, df)


def fisher_exact(table: list[list[int]]) -> float:
    """Two-sided p-value of Fisher's exact test on a 2×2 table (tables no more likely than the one seen)."""
    (a, b), (c, d) = table
    row1, col1, n = a + b, a + c, a + b + c + d

    def probability(x: int) -> float:
        return math.comb(col1, x) * math.comb(n - col1, row1 - x) / math.comb(n, row1)

    observed = probability(a)
    low, high = max(0, row1 - (n - col1)), min(row1, col1)
    # The relative tolerance scipy uses, so ties of equal probability count as "as extreme".
    p = sum(q for x in range(low, high + 1) if (q := probability(x)) <= observed * (1 + 1e-7))
    return min(1.0, p)
