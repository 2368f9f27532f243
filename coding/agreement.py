"""Agreement statistics for codebook-style teams (off by default: reflexive TA does not use them).

Cohen's κ for two coders and Krippendorff's α (nominal, any number of coders, missing values
allowed), written out from the textbook formulas so they can be checked by hand.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from itertools import permutations


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Cohen's κ = (p_o − p_e) / (1 − p_e) for two coders' labels of the same units; None if undefined."""
    if len(a) != len(b):
        raise ValueError("both coders must label the same units")
    n = len(a)
    if n == 0:
        return None
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    if expected == 1:
        # Both coders used one and the same label throughout: agreement is perfect but κ is 0/0.
        return 1.0 if observed == 1 else None
    return (observed - expected) / (1 - expected)


def krippendorff_alpha_nominal(units: Iterable[Sequence[Hashable | None]]) -> float | None:
    """Krippendorff's α for nominal data: 1 − D_o / D_e from the coincidence matrix.

    `units` is one sequence of values per unit (one per coder, None where a coder gave none);
    units with fewer than two values are not pairable and are left out.
    """
    coincidences: Counter[tuple[Hashable, Hashable]] = Counter()
    for unit in units:
        values = [v for v in unit if v is not None]
        m = len(values)
        if m < 2:
            continue
        for x, y in permutations(values, 2):
            coincidences[(x, y)] += 1 / (m - 1)
    n_c: Counter[Hashable] = Counter()
    for (x, _y), w in coincidences.items():
        n_c[x] += w
    n = sum(n_c.values())
    if n <= 1:
        return None
    disagree_observed = sum(w for (x, y), w in coincidences.items() if x != y)
    disagree_expected = sum(n_c[x] * n_c[y] for x in n_c for y in n_c if x != y) / (n - 1)
    if disagree_expected == 0:
        return 1.0 if disagree_observed == 0 else None
    return 1 - disagree_observed / disagree_expected


def per_code_agreement(units: Sequence[int], coders: Sequence[int], codings: set[tuple[int, int, int]],
                       code_ids: Iterable[int]) -> list[tuple[int, float | None, float | None, int]]:
    """For each code: (code id, κ of the first two coders, α over all coders, units either coder applied it to).

    Each segment is a unit; a coder's value is 1 if they applied the code, else 0. `codings` holds
    (segment id, code id, coder id).
    """
    rows = []
    for code_id in code_ids:
        matrix = [[1 if (u, code_id, c) in codings else 0 for c in coders] for u in units]
        kappa = cohen_kappa([r[0] for r in matrix], [r[1] for r in matrix]) if len(coders) >= 2 else None
        alpha = krippendorff_alpha_nominal(matrix)
        used = sum(1 for r in matrix if any(r))
        rows.append((code_id, kappa, alpha, used))
    return rows


def gwet_ac1(a: Sequence[Hashable], b: Sequence[Hashable], categories: Sequence[Hashable] = (0, 1)) -> float | None:
    """Gwet's AC1 = (p_o − p_e) / (1 − p_e), p_e = Σ π_k (1 − π_k) / (K − 1), π_k the mean share of category k.

    Unlike κ it stays stable when one category is rare (most segments do not carry a given code).
    """
    if len(a) != len(b):
        raise ValueError("both coders must label the same units")
    n, k = len(a), len(categories)
    if n == 0 or k < 2:
        return None
    observed = sum(1 for x, y in zip(a, b, strict=True) if x == y) / n
    ca, cb = Counter(a), Counter(b)
    pi = [(ca[c] + cb[c]) / (2 * n) for c in categories]
    expected = sum(p * (1 - p) for p in pi) / (k - 1)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


def kappa_chance_p_value(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """One-sided p-value that κ > 0, with Cohen's (1960) standard error under no agreement beyond chance.

    A large p-value means the second coder's labels are indistinguishable from labels drawn at
    random with its own base rate (the randomness check of LLM-assisted content analysis).
    """
    n = len(a)
    kappa = cohen_kappa(a, b)
    if kappa is None or n == 0:
        return None
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    # Without a label both used (one coder coded every unit, the other none) chance agreement is 0, κ is 0 whatever
    # the units, and the standard error is 0: there is no test to make, as when chance agreement is 1.
    if not 0 < expected < 1:
        return None
    standard_error = math.sqrt(expected / (n * (1 - expected)))
    return 0.5 * math.erfc(kappa / standard_error / math.sqrt(2))


def span_iou(first: dict[int, int], second: dict[int, int]) -> float | None:
    """Intersection over union of coded text: each side maps the units it coded to their length in characters."""
    union = sum(({**first, **second}).values())
    if union == 0:
        return None
    return sum(length for unit, length in first.items() if unit in second) / union
