"""divmeter.studies.meta statistics: golden cases, degenerate inputs, parity with scipy and
sklearn."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import divmeter.studies.meta as meta
from conftest import FIXTURES
from divmeter.core.errors import InvalidInputError
from divmeter.studies.meta import stats as st

REF = json.loads((FIXTURES / "meta_reference.json").read_text())["cases"]


def tevet_oca_loop(scores: list[float], labels: list[int]) -> tuple[float, float]:
    """Tevet & Berant's reference loop (utils.optimal_classification_accuracy), restated."""
    high = [s for s, y in zip(scores, labels, strict=True) if y == 1]
    low = [s for s, y in zip(scores, labels, strict=True) if y == 0]
    best, thr = -1.0, math.nan
    for t in sorted(set(high + low)):
        acc = (sum(v <= t + 1e-5 for v in high) + sum(v > t + 1e-5 for v in low)) / len(scores)
        acc = acc if acc > 0.5 else 1 - acc
        if acc > best:
            best, thr = acc, t
    return best, thr


# --------------------------------------------------------------------------------------------
# OCA


@pytest.mark.parametrize(
    ("scores", "labels", "expected", "threshold"),
    [
        ([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1], 1.0, 0.2),  # perfect, high above
        ([0.1, 0.2, 0.3, 0.4], [1, 1, 0, 0], 1.0, 0.2),  # perfect, reversed: blind OCA = 1
        ([0.5, 0.5, 0.5, 0.5], [0, 1, 1, 1], 0.75, 0.5),  # all equal: majority share
        ([0.1, 0.2, 0.2, 0.3], [0, 0, 1, 1], 0.75, 0.1),  # a cross-class tie costs one
        ([0.1, 0.100001, 0.3, 0.4], [1, 0, 0, 0], 0.75, 0.1),  # within tol (1.0 without)
        ([0.3, 0.1, 0.4, 0.2, 0.5, 0.6], [1, 0, 0, 1, 1, 1], 5 / 6, 0.1),
    ],
)
def test_oca_golden(scores, labels, expected, threshold):
    r = meta.oca(scores, labels)
    assert r.oca == pytest.approx(expected)
    assert r.threshold == pytest.approx(threshold)
    assert r.n == len(scores)


def test_oca_directional_penalises_reversed_metric():
    assert meta.oca([0.1, 0.2, 0.3, 0.4], [1, 1, 0, 0], direction="higher").oca == 0.5
    assert meta.oca([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1], direction="higher").oca == 1.0


def test_oca_signature_exact():
    assert meta.oca([0, 1], [0, 1]).signature == "oca|direction:blind|tol:1e-05|nan:error|v:0.1.0"
    assert (
        meta.oca([0, 1], [0, 1], direction="higher", tol=0.0, nan="omit").signature
        == "oca|direction:higher|tol:0|nan:omit|v:0.1.0"
    )


@pytest.mark.parametrize("case", range(3))
def test_oca_matches_reference_loop_and_vectorised_form(case):
    c = REF[case]
    expected, thr = tevet_oca_loop(c["scores"], c["labels"])
    r = meta.oca(c["scores"], c["labels"])
    assert r.oca == expected
    assert r.threshold == thr
    vec = st.oca_stat(np.array([c["scores"]] * 2), np.array([c["labels"]] * 2))
    assert vec.tolist() == [expected, expected]


def test_oca_one_class_only_is_an_error():
    with pytest.raises(InvalidInputError, match="must contain both classes.*only class 1"):
        meta.oca([0.1, 0.2, 0.3], [1, 1, 1])


def test_oca_labels_must_be_binary():
    with pytest.raises(InvalidInputError, match=r"`labels` must be 0 \(low\) or 1 \(high\); got 2"):
        meta.oca([0.1, 0.2, 0.3], [0, 1, 2])


def test_nan_is_an_error_by_default_and_omitted_with_count():
    with pytest.raises(InvalidInputError, match=r"`scores` holds 1 NaN.*first at index 2.*omit"):
        meta.oca([0.1, 0.2, float("nan"), 0.4], [0, 0, 1, 1])
    r = meta.oca([0.1, 0.2, float("nan"), 0.4], [0, 0, 1, 1], nan="omit")
    assert (r.oca, r.n, r.n_excluded) == (1.0, 3, 1)
    r = meta.spearman([0.1, None, 0.3, 0.4], [1, 2, 3, 5], nan="omit")
    assert (r.rho, r.n, r.n_excluded) == (pytest.approx(1.0), 3, 1)


def test_nan_policy_value_checked():
    with pytest.raises(InvalidInputError, match="`nan` must be one of error, omit; got 'drop'"):
        meta.spearman([1, 2], [1, 2], nan="drop")


def test_length_mismatch_and_bare_string():
    with pytest.raises(InvalidInputError, match=r"`values` must have the same length as `scores` \(3\); got 2"):  # noqa: E501
        meta.spearman([1, 2, 3], [1, 2])
    with pytest.raises(InvalidInputError, match="got a single str"):
        meta.spearman("123", [1, 2, 3])


# --------------------------------------------------------------------------------------------
# correlations and AUC against scipy / sklearn


@pytest.mark.parametrize("case", range(3))
def test_correlations_match_scipy(case):
    c = REF[case]
    e = c["expected"]
    r = meta.spearman(c["scores"], c["values"])
    assert (r.rho, r.p) == pytest.approx(tuple(e["spearman"]), rel=1e-12, abs=1e-15)
    r = meta.pearson(c["scores"], c["values"])
    assert (r.r, r.p) == pytest.approx(tuple(e["pearson"]), rel=1e-12, abs=1e-15)
    r = meta.kendall(c["scores"], c["values"])
    assert (r.tau, r.p) == pytest.approx(tuple(e["kendall"]), rel=1e-12, abs=1e-15)
    assert float(st.spearman_stat(np.array(c["scores"]), np.array(c["values"]))) == (
        pytest.approx(e["spearman"][0], rel=1e-12)
    )


@pytest.mark.parametrize("case", range(3))
def test_auc_matches_sklearn(case):
    c = REF[case]
    assert meta.roc_auc(c["scores"], c["labels"]).auc == pytest.approx(c["expected"]["auc"])
    assert float(st.auc_stat(np.array(c["scores"]), np.array(c["labels"]))) == pytest.approx(
        c["expected"]["auc"]
    )


def test_auc_ties_count_half():
    assert meta.roc_auc([0.5, 0.5, 0.5, 0.5], [0, 1, 0, 1]).auc == 0.5
    assert meta.roc_auc([0.1, 0.2, 0.2, 0.4], [0, 0, 1, 1]).auc == 0.875


def test_constant_input_gives_nan_with_reason():
    r = meta.spearman([0.5, 0.5, 0.5], [1, 2, 3])
    assert math.isnan(r.rho) and math.isnan(r.p)
    assert r.details["reason"] == "`scores` are constant: the correlation is undefined"
    assert r.signature == "spearman|nan:error|v:0.1.0"


# --------------------------------------------------------------------------------------------
# paired contrasts and multiple testing


def test_paired_contrast_golden():
    r = meta.paired_contrast([0.9, 0.8, 0.7, 0.6], [0.5, 0.6, 0.4, 0.7])
    d = np.array([0.4, 0.2, 0.3, -0.1])
    assert r.n == 4
    assert r.mean_diff == pytest.approx(0.2)
    assert r.sum_diff == pytest.approx(0.8)
    assert r.cohen_d == pytest.approx(d.mean() / d.std(ddof=1))
    assert r.sign_accuracy == 0.75
    # exact Wilcoxon, n = 4: ranks of |d| = 4, 2, 3, 1 -> W+ = 9 of 10; P(W+ >= 9) = 2/16
    assert r.p_greater == pytest.approx(0.125)
    assert r.p_two_sided == pytest.approx(0.25)
    assert r.signature == (
        "paired-contrast|test:wilcoxon|zeros:wilcox|d:mean/sd|nan:error|v:0.1.0"
    )


@pytest.mark.parametrize("case", range(3))
def test_wilcoxon_matches_scipy(case):
    c = REF[case]
    e = c["expected"]
    r = meta.paired_contrast(c["a"], c["b"])
    assert (r.wilcoxon_w, r.p_two_sided) == pytest.approx(tuple(e["wilcoxon_two_sided"]))
    assert r.p_greater == pytest.approx(e["wilcoxon_greater"])


def test_paired_contrast_ties_and_all_zero():
    r = meta.paired_contrast([1.0, 2.0, 3.0], [1.0, 1.0, 1.0])
    assert (r.sign_accuracy, r.n_ties) == (pytest.approx(2 / 3), 1)
    z = meta.paired_contrast([1.0, 2.0], [1.0, 2.0])
    assert math.isnan(z.p_two_sided) and math.isnan(z.cohen_d)
    assert z.details["reason_p"] == "every difference is zero: the Wilcoxon test is undefined"
    assert z.sign_accuracy == 0.0


def test_paired_contrast_bad_zero_method():
    with pytest.raises(InvalidInputError, match="`zero_method` must be one of wilcox, pratt"):
        meta.paired_contrast([1, 2], [0, 1], zero_method="drop")


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("bonferroni", [0.04, 0.16, 0.12, 1.0]),
        ("holm", [0.04, 0.09, 0.09, 0.5]),
        ("none", [0.01, 0.04, 0.03, 0.5]),
    ],
)
def test_adjust_pvalues(method, expected):
    got = meta.adjust_pvalues([0.01, 0.04, 0.03, 0.5], method)
    assert got.tolist() == pytest.approx(expected)


def test_adjust_pvalues_nan_not_counted():
    got = meta.adjust_pvalues([0.01, float("nan"), 0.02], "bonferroni")
    assert got[0] == pytest.approx(0.02) and math.isnan(got[1]) and got[2] == pytest.approx(0.04)
    with pytest.raises(InvalidInputError, match="`method` must be one of bonferroni, holm, none"):
        meta.adjust_pvalues([0.1], "fdr")


# --------------------------------------------------------------------------------------------
# pairwise preference and kappa

S1 = [3.0, 1.0, 2.0, 5.0, 1.0, 4.0]
S2 = [1.0, 2.0, 2.0, 4.0, 1.0, 6.0]
LAB = [0, 1, 0, 1, 2, 1]  # metric: 0, 1, tie, 0, tie, 1


@pytest.mark.parametrize(
    ("metric_ties", "label_ties", "accuracy", "n"),
    [
        ("miss", "drop", 3 / 5, 5),  # correct: pairs 0, 1, 5; tie at 2 is a miss
        ("half", "drop", 3.5 / 5, 5),
        ("drop", "drop", 3 / 4, 4),
        ("match", "drop", 3 / 5, 5),
        ("miss", "keep", 3 / 6, 6),  # the label tie at 4 meets a metric tie: still a miss
        ("match", "keep", 4 / 6, 6),  # ... but a hit under "match"
    ],
)
def test_preference_accuracy_tie_policies(metric_ties, label_ties, accuracy, n):
    r = meta.preference_accuracy(S1, S2, LAB, metric_ties=metric_ties, label_ties=label_ties,
                                 n_resamples=200)
    assert r.accuracy == pytest.approx(accuracy)
    assert r.n == n


def test_preference_accuracy_rating_filter_and_signature():
    r = meta.preference_accuracy(
        S1, S2, LAB, rating1=[4, 2, 3, 1, 3, 2], rating2=[2, 4, 2.8, 3, 3, 4], min_rating_diff=0.5,
        n_resamples=200, seed=3,
    )
    # pair 2 (|3 - 2.8| < 0.5) and pair 4 (equal ratings) are filtered; of pairs 0, 1, 3, 5
    # the metric gets pair 3 wrong
    assert (r.accuracy, r.n, r.n_filtered) == (0.75, 4, 2)
    assert r.signature == (
        "preference-accuracy|metric-ties:miss|label-ties:drop|min-rating-diff:0.5|"
        "ci:percentile,clopper-pearson|level:0.95|resamples:200|seed:3|nan:error|v:0.1.0"
    )
    with pytest.raises(InvalidInputError, match="`min_rating_diff` needs the annotator ratings"):
        meta.preference_accuracy(S1, S2, LAB, min_rating_diff=0.5)


def test_preference_accuracy_cis():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=200), rng.normal(size=200)
    lab = np.where(a - b + rng.normal(0, 0.8, 200) > 0, 0, 1)
    r = meta.preference_accuracy(a, b, lab, n_resamples=2000, seed=1)
    k = int(round(r.accuracy * r.n))
    from scipy.stats import binomtest

    cp = binomtest(k, r.n).proportion_ci(method="exact")
    assert (r.cp_low, r.cp_high) == pytest.approx((cp.low, cp.high))
    assert r.ci_low < r.accuracy < r.ci_high
    again = meta.preference_accuracy(a, b, lab, n_resamples=2000, seed=1)
    assert (again.ci_low, again.ci_high) == (r.ci_low, r.ci_high)


def test_preference_accuracy_errors():
    with pytest.raises(InvalidInputError, match=r"`labels` must be 0 \(set1 more diverse\)"):
        meta.preference_accuracy([1], [2], [3])
    with pytest.raises(InvalidInputError, match="`metric_ties` must be one of miss, half"):
        meta.preference_accuracy([1], [2], [1], metric_ties="ignore")
    with pytest.raises(InvalidInputError, match="no pairs left after filtering"):
        meta.preference_accuracy([1], [2], [2])


@pytest.mark.parametrize("case", range(3))
def test_kappa_matches_sklearn(case):
    c = REF[case]
    assert meta.cohen_kappa(c["rater1"], c["rater2"]) == pytest.approx(c["expected"]["kappa"])


def test_kappa_golden_and_matrix():
    assert meta.cohen_kappa([0, 1, 0, 1], [0, 1, 0, 1]) == 1.0
    assert meta.cohen_kappa([0, 0, 0], [0, 0, 0]) == 1.0  # one category, full agreement
    assert meta.cohen_kappa([0, 1, 0, 1], [1, 0, 1, 0]) == -1.0
    m = meta.kappa_matrix({"a": [0, 1, 1], "b": [0, 1, 0], "c": [0, 1, 1]})
    assert m.names == ["a", "b", "c"]
    assert m.matrix == [[1.0, 0.4, 1.0], [0.4, 1.0, 0.4], [1.0, 0.4, 1.0]]


# --------------------------------------------------------------------------------------------
# bootstrap


@pytest.mark.parametrize("case", range(3))
@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_matches_scipy(case, method):
    c = REF[case]
    e = c["expected"]["bootstrap_spearman"]
    r = meta.bootstrap_ci(st.spearman_stat, [c["scores"], c["values"]],
                          n_resamples=e["n_resamples"], method=method, seed=e["seed"])
    assert (r.low, r.high) == pytest.approx(tuple(e[method]), rel=1e-9)
    assert r.signature == (
        f"bootstrap|statistic:statistic|method:{method}|level:0.95|resamples:2000|seed:7|v:0.1.0"
    )


def test_bootstrap_batches_do_not_change_the_result():
    x = np.arange(30.0)
    y = x**2 % 7
    a = meta.bootstrap_ci(st.spearman_stat, [x, y], n_resamples=500, seed=2)
    b = meta.bootstrap_ci(st.spearman_stat, [x, y], n_resamples=500, seed=2, batch=64)
    assert (a.low, a.high, a.se) == (b.low, b.high, b.se)


def test_bootstrap_errors():
    with pytest.raises(InvalidInputError, match="`n_resamples` must be an integer >= 2; got 1"):
        meta.bootstrap_ci(np.mean, [[1.0, 2.0]], n_resamples=1)
    with pytest.raises(InvalidInputError, match="`method` must be percentile or bca"):
        meta.bootstrap_ci(np.mean, [[1.0, 2.0]], method="basic")


@pytest.mark.parametrize("stat", [st.spearman_stat, st.auc_stat, st.oca_stat])
def test_bootstrap_by_counting_equals_the_plain_statistic(stat):
    rng = np.random.default_rng(11)
    y = rng.permutation(np.repeat([0, 1], 40))
    s = np.round(y * 0.5 + rng.normal(0, 0.5, 80), 1)  # many ties
    s[:15] += 4e-6  # values closer than OCA's tolerance to others
    other = y if stat is not st.spearman_stat else np.round(rng.normal(size=80), 1)
    fast = meta.bootstrap_ci(stat, [s, other], n_resamples=300, seed=5, batch=70)

    def plain(a, b, axis=-1):
        return stat(a, b, axis=axis)

    slow = meta.bootstrap_ci(plain, [s, other], n_resamples=300, seed=5)
    assert (fast.low, fast.high, fast.se) == pytest.approx((slow.low, slow.high, slow.se),
                                                           rel=1e-12, abs=1e-15)
    assert fast.estimate == slow.estimate
