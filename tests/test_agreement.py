"""Agreement statistics on hand-computed tables (commonsense meta-evaluation paper, section 4.3:
mean pairwise accuracy of annotators against the LLM judge, Fleiss' kappa among annotators).

Every expected value is worked out in the comments; Krippendorff's alpha is computed by hand
from the coincidence matrix and must equal what the ``krippendorff`` package returns."""

from __future__ import annotations

import json
import math

import pytest

from divmeter.core.errors import InvalidInputError
from divmeter.studies.meta.agreement import (
    agreement,
    fleiss_kappa,
    kappa_with_ci,
    krippendorff_alpha,
    pairwise_agreement,
)
from divmeter.studies.meta.stats import cohen_kappa

pytest.importorskip("krippendorff")

# Three raters, three items (rater-major).
THREE = [[1, 1, 2], [1, 2, 2], [1, 1, 2]]


def test_cohen_kappa_and_intervals_by_hand() -> None:
    # a = [1,1,2,2], b = [1,2,2,2]: p_o = 3/4; marginals a (2,2), b (1,3):
    # p_e = (2*1 + 2*3)/16 = 1/2; kappa = (3/4 - 1/2)/(1/2) = 1/2.
    # Cohen (1960) SE = sqrt(p_o (1-p_o) / (n (1-p_e)^2)) = sqrt(0.1875 / 1) = 0.4330127;
    # 95%: 0.5 -+ 1.959964 * 0.4330127 = [-0.348679, 1.348679], cut to [-0.348679, 1].
    # Clopper-Pearson for 3/4: upper = 0.975^(1/4) = 0.9936905 (Beta(4, 1) quantile), lower =
    # the 0.025 quantile of Beta(3, 2), the root of 4x^3 - 3x^4 = 0.025: 0.1941204.
    r = kappa_with_ci([1, 1, 2, 2], [1, 2, 2, 2])
    assert r["kappa"] == pytest.approx(0.5)
    assert r["kappa"] == pytest.approx(cohen_kappa([1, 1, 2, 2], [1, 2, 2, 2]))
    assert r["kappa_ci"] == pytest.approx([0.5 - 1.959964 * math.sqrt(0.1875), 1.0], abs=1e-6)
    assert r["accuracy"] == 0.75 and r["n"] == 4
    assert r["accuracy_ci"][1] == pytest.approx(0.975 ** 0.25)
    lo = r["accuracy_ci"][0]
    assert 4 * lo**3 - 3 * lo**4 == pytest.approx(0.025)
    assert lo == pytest.approx(0.1941204, abs=1e-6)


@pytest.mark.parametrize(
    ("a", "b", "kappa", "accuracy", "n"),
    [
        # perfect agreement on two categories: p_o = 1, p_e = 1/2, kappa = 1
        ([0, 1, 0, 1], [0, 1, 0, 1], 1.0, 1.0, 4),
        # total disagreement, balanced: p_o = 0, p_e = 1/2, kappa = -1
        ([0, 1, 0, 1], [1, 0, 1, 0], -1.0, 0.0, 4),
        # one category throughout (p_e = 1): kappa 1.0 by convention (as stats.cohen_kappa)
        ([2, 2, 2], [2, 2, 2], 1.0, 1.0, 3),
        # missing ratings are left out: items 1 and 3 remain, p_o = 1/2;
        # a (0, 1), b (0, 0): p_e = (1*2 + 1*0)/4 = 1/2 -> kappa 0
        ([0, None, 1, float("nan")], [0, 1, 0, 1], 0.0, 0.5, 2),
        # strings and numbers as numbers: "1" and 1.0 agree
        (["1", "2", "2"], [1.0, 2, 2], 1.0, 1.0, 3),
    ],
)
def test_kappa_table(a: list, b: list, kappa: float, accuracy: float, n: int) -> None:
    r = kappa_with_ci(a, b)
    assert (r["kappa"], r["accuracy"], r["n"]) == (pytest.approx(kappa), accuracy, n)


def test_fleiss_by_hand() -> None:
    # items (1,1,1), (1,2,1), (2,2,2): P_i = 1, (4+1-3)/6 = 1/3, 1 -> P_bar = 7/9;
    # p_1 = 5/9, p_2 = 4/9 -> P_e = 41/81; kappa = (63/81 - 41/81)/(40/81) = 22/40 = 0.55
    assert fleiss_kappa(THREE) == (pytest.approx(0.55), 3)


@pytest.mark.parametrize(
    ("ratings", "expected"),
    [
        # item 2 misses a rating: Fleiss uses items 1 and 3 only, both unanimous but in different
        # categories: P_bar = 1, p = (1/2, 1/2), P_e = 1/2 -> kappa 1
        ([[1, 1, 2], [1, None, 2]], (1.0, 2)),
        # one rater: undefined
        ([[1, 2, 3]], (None, 3)),
        # every rating the same category: P_e = 1 -> 1.0 by convention
        ([[3, 3], [3, 3]], (1.0, 2)),
        # two raters, always disagreeing across two categories: P_i = 0, P_e = 1/2 -> -1
        ([[0, 1], [1, 0]], (-1.0, 2)),
    ],
)
def test_fleiss_degenerate(ratings: list, expected: tuple) -> None:
    k, used = fleiss_kappa(ratings)
    assert (k if k is None else pytest.approx(k), used) == (
        expected[0] if expected[0] is None else pytest.approx(expected[0]), expected[1])


def test_krippendorff_by_hand_matches_package() -> None:
    import krippendorff

    # THREE: coincidences o11 = 3 + 1 = 4, o12 = o21 = 1, o22 = 3; n = 9, n_1 = 5, n_2 = 4.
    # nominal: D_o = 2/9, D_e = 2*5*4/(9*8) = 5/9, alpha = 1 - 2/5 = 0.6 (ordinal equals nominal
    # with two values).
    assert krippendorff_alpha(THREE, "nominal") == (pytest.approx(0.6), None)
    assert krippendorff_alpha(THREE, "ordinal") == (pytest.approx(0.6), None)
    # r1 = [1,2,3], r2 = [1,3,3]: o11 = 2, o23 = o32 = 1, o33 = 2; n = 6, n = (2, 1, 3).
    # nominal: D_o = 2/6, D_e = (36 - 14)/30 = 22/30 -> alpha = 1 - 10/22 = 12/22.
    # ordinal: delta^2(c,k) = (sum_{g=c..k} n_g - (n_c + n_k)/2)^2: (1,2) 2.25, (1,3) 12.25,
    # (2,3) 4. D_o = (1/6)(4 + 4) = 4/3; D_e = (2/30)(2*1*2.25 + 2*3*12.25 + 1*3*4) = 6;
    # alpha = 1 - (4/3)/6 = 7/9.
    two = [[1, 2, 3], [1, 3, 3]]
    assert krippendorff_alpha(two, "nominal") == (pytest.approx(12 / 22), None)
    assert krippendorff_alpha(two, "ordinal") == (pytest.approx(7 / 9), None)
    for data, level in ((THREE, "nominal"), (two, "nominal"), (two, "ordinal")):
        assert krippendorff_alpha(data, level)[0] == pytest.approx(
            krippendorff.alpha(reliability_data=data, level_of_measurement=level))


@pytest.mark.parametrize(
    ("ratings", "level", "reason"),
    [
        ([[1, 2, 3]], "nominal", "needs at least two raters"),
        ([["a", "b"], ["a", "a"]], "ordinal", "ordinal alpha needs numeric labels"),
        ([[2, 2], [2, 2]], "nominal", "every rating has the same value"),
        ([[1, None], [None, 2]], "nominal", "no item is rated by two raters"),
    ],
)
def test_krippendorff_undefined(ratings: list, level: str, reason: str) -> None:
    assert krippendorff_alpha(ratings, level) == (None, reason)


def test_krippendorff_strings_nominal() -> None:
    # same structure as THREE with labels renamed: alpha = 0.6
    assert krippendorff_alpha([["x", "x", "y"], ["x", "y", "y"], ["x", "x", "y"]]) == (
        pytest.approx(0.6), None)


def test_pairwise_agreement_by_hand() -> None:
    # pairs (r1, r2) 2/3, (r1, r3) 3/3, (r2, r3) 2/3 -> mean 7/9
    assert pairwise_agreement(THREE) == pytest.approx(7 / 9)
    assert pairwise_agreement([[1, 2]]) is None


def test_agreement_result_shape_and_values() -> None:
    # reference [0,1,1,1]; a = [0,1,1,0]: 3/4, b = [0,1,0,0]: 2/4 -> mean accuracy 0.625.
    # kappa(a, ref): p_o = 3/4, a (2,2), ref (1,3): p_e = (2+6)/16 = 1/2 -> 0.5;
    # kappa(b, ref): p_o = 1/2, b (3,1), ref (1,3): p_e = (3+3)/16 = 3/8 -> (1/8)/(5/8) = 0.2.
    # Fleiss between a and b: items (0,0) (1,1) (1,0) (0,0): P = 1,1,0,1 -> 3/4;
    # p_0 = 5/8, p_1 = 3/8 -> P_e = 34/64; kappa = (48/64 - 34/64)/(30/64) = 14/30.
    r = agreement({"a": [0, 1, 1, 0], "b": [0, 1, 0, 0]}, reference=[0, 1, 1, 1])
    d = r.to_dict()
    assert d["per_rater"]["a"]["accuracy"] == 0.75 and d["per_rater"]["b"]["accuracy"] == 0.5
    assert d["per_rater"]["a"]["kappa"] == pytest.approx(0.5)
    assert d["per_rater"]["b"]["kappa"] == pytest.approx(0.2)
    assert d["mean_accuracy"] == 0.625
    assert d["fleiss_kappa"] == pytest.approx(14 / 30)
    assert d["mean_pairwise_agreement"] == 0.75
    assert d["n_items"] == 4 and d["n_raters"] == 2
    assert d["signature"] == ("agreement|accuracy_ci:clopper-pearson|kappa_ci:cohen1960-normal|"
                              "level:0.95|fleiss:complete-items|alpha:krippendorff|v:0.1.0")
    json.dumps(d, allow_nan=False)


def test_agreement_without_reference() -> None:
    r = agreement({"x": THREE[0], "y": THREE[1], "z": THREE[2]})
    assert r.per_rater == {} and r.mean_accuracy is None
    assert r.fleiss_kappa == pytest.approx(0.55)
    assert r.krippendorff_alpha == pytest.approx(0.6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"ratings": {}}, "at least one rater"),
        ({"ratings": {"a": [1, 2], "b": [1]}}, "'a' has 2 ratings, 'b' has 1"),
        ({"ratings": {"a": [1, 2]}, "reference": [1]}, r"same items as the raters \(2\); got 1"),
        ({"ratings": {"a": [1, 2]}, "confidence": 95}, r"`confidence` must be a number in"),
    ],
)
def test_agreement_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        agreement(**kwargs)
