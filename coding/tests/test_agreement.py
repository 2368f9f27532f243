"""Agreement statistics checked against values computed by hand and a published example."""

from __future__ import annotations

import pytest

from coding.agreement import cohen_kappa, kappa_chance_p_value, krippendorff_alpha_nominal, per_code_agreement


def test_cohen_kappa_by_hand():
    # 50 units: both yes 20, A only 5, B only 10, both no 15.
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    # p_o = 35/50 = 0.7; p_e = 25/50·30/50 + 25/50·20/50 = 0.5; κ = 0.2/0.5 = 0.4
    assert cohen_kappa(a, b) == pytest.approx(0.4)


def test_cohen_kappa_edges():
    assert cohen_kappa([1, 1, 0, 0], [1, 1, 0, 0]) == pytest.approx(1.0)
    assert cohen_kappa([1, 0], [0, 1]) == pytest.approx(-1.0)
    assert cohen_kappa([0, 0, 0], [0, 0, 0]) == 1.0
    assert cohen_kappa([], []) is None
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 0])


def test_the_chance_check_has_no_p_value_when_the_coders_share_no_label():
    # One coder coded every sentence it read, the other none (a short window): this raised ZeroDivisionError, and the
    # second reader's differences page answered 500.
    assert kappa_chance_p_value([0, 0], [1, 1]) is None
    assert kappa_chance_p_value([1], [0]) is None
    assert kappa_chance_p_value([1, 1], [1, 1]) is None
    assert 0 < kappa_chance_p_value([1, 0, 1, 0], [1, 0, 0, 1]) < 1


def test_krippendorff_alpha_published_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", nominal example: α = 0.743.
    A = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
    B = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
    C = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
    D = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
    units = list(zip(A, B, C, D, strict=True))
    assert krippendorff_alpha_nominal(units) == pytest.approx(0.743, abs=0.0005)


def test_krippendorff_alpha_by_hand_two_coders():
    # Units (1,1) (1,0) (0,0) (0,0): coincidences o11=2, o10=o01=1, o00=4; n1=3, n0=5, n=8.
    # D_o = 2/8... α = 1 − (n−1)·(o10+o01)/(2·n1·n0) = 1 − 7·2/(2·15) = 1 − 14/30 = 0.5333
    assert krippendorff_alpha_nominal([(1, 1), (1, 0), (0, 0), (0, 0)]) == pytest.approx(1 - 14 / 30)
    assert krippendorff_alpha_nominal([(1, None), (0, 0)]) == 1.0  # the single-valued unit is not pairable
    assert krippendorff_alpha_nominal([(1, None)]) is None


def test_per_code_agreement_uses_segments_as_units():
    units, coders = [1, 2, 3, 4], [10, 20]
    codings = {(1, 7, 10), (1, 7, 20), (2, 7, 10), (3, 8, 20)}
    rows = {r[0]: r for r in per_code_agreement(units, coders, codings, [7, 8])}
    # code 7: A = 1,1,0,0; B = 1,0,0,0 → p_o 3/4, p_e = (2·1 + 2·3)/16 = 0.5, κ = 0.5
    assert rows[7][1] == pytest.approx(0.5) and rows[7][3] == 2
    assert rows[8][1] == pytest.approx(0.0) and rows[8][3] == 1
