"""Protocols of divmeter.studies.meta on small hand-checkable inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from divmeter.core.errors import InvalidInputError
from divmeter.studies.meta import protocols as pr
from divmeter.studies.meta.pattr import length_bias


def test_contest_golden_row_and_signature():
    r = pr.contest({"m": [0.1, 0.5, 0.2, 0.9], "rev": [0.9, 0.2, 0.8, 0.1]}, [0, 1, 0, 1])
    m = r.results["m"].values
    assert (m["oca"], m["oca_directional"], m["auc"], m["n"]) == (1.0, 1.0, 1.0, 4)
    assert m["spearman"] == pytest.approx(2 / math.sqrt(5))
    rev = r.results["rev"].values
    # blind OCA rewards a backwards metric; the directional OCA and AUC do not
    assert (rev["oca"], rev["oca_directional"], rev["auc"]) == (1.0, 0.5, 0.0)
    assert r.results["m"].signature == (
        "contest|oca:blind|tol:1e-05|auc:mann-whitney|nan:error|v:0.1.0"
    )
    d = r.to_dict()
    assert d["m"]["nan"] == "error" and d["m"]["signature"] == r.results["m"].signature


def test_contest_bootstrap_cis_are_seeded():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 30)
    s = y + rng.normal(0, 1, 60)
    a = pr.contest({"m": s}, y, bootstrap=300, seed=4).results["m"]
    b = pr.contest({"m": s}, y, bootstrap=300, seed=4).results["m"]
    assert a.values["oca_ci"] == b.values["oca_ci"]
    lo, hi = a.values["auc_ci"]
    assert lo < a.values["auc"] < hi
    assert "|ci:percentile|level:0.95|resamples:300|seed:4|" in a.signature


def test_contest_nan_omitted_per_metric():
    r = pr.contest({"a": [0.1, float("nan"), 0.3, 0.4], "b": [1, 2, 3, 4]}, [0, 0, 1, 1],
                   nan="omit")
    assert (r.results["a"].values["n"], r.results["a"].values["n_excluded"]) == (3, 1)
    assert (r.results["b"].values["n"], r.results["b"].values["n_excluded"]) == (4, 0)
    with pytest.raises(InvalidInputError, match="`a` holds 1 NaN"):
        pr.contest({"a": [0.1, float("nan"), 0.3, 0.4]}, [0, 0, 1, 1])


def test_contest_needs_scores():
    with pytest.raises(InvalidInputError, match="`scores` must be a non-empty mapping"):
        pr.contest({}, [0, 1])


def test_dectest_pair_accuracy_ties_are_misses():
    # values 1,2,3,3: pairs with different values: (0,1) (0,2) (0,3) (1,2) (1,3) = 5
    # scores 0.1, 0.2, 0.2, 0.5: (1,2) is a metric tie -> miss; others agree -> 4/5
    r = pr.dectest({"m": [0.1, 0.2, 0.2, 0.5]}, [1, 2, 3, 3], pair_accuracy=True)
    v = r.results["m"].values
    assert (v["pair_accuracy"], v["n_pairs"]) == (0.8, 5)
    assert r.results["m"].signature == "dectest|pairs:ties-miss|nan:error|v:0.1.0"


def test_dectest_subsampling_matches_a_loop():
    rng = np.random.default_rng(1)
    v = rng.uniform(0.2, 1.2, 120)
    s = v + rng.normal(0, 0.3, 120)
    r = pr.dectest({"m": s}, v, subsample=40, repeats=25, seed=9).results["m"]
    gen = np.random.default_rng(9)
    idx = np.argsort(gen.random((25, 120)), axis=1)[:, :40]
    from scipy.stats import spearmanr

    rhos = [spearmanr(s[i], v[i]).statistic for i in idx]
    assert r.values["spearman_mean"] == pytest.approx(np.mean(rhos), rel=1e-12)
    assert r.values["spearman_std"] == pytest.approx(np.std(rhos), rel=1e-12)
    assert r.signature == "dectest|subsample:40|repeats:25|seed:9|nan:error|v:0.1.0"
    with pytest.raises(InvalidInputError, match=r"`subsample` \(500\) is larger"):
        pr.dectest({"m": s}, v, subsample=500)


def test_nuggets_resample_equalises_each_group():
    s = np.arange(12, dtype=float)
    y = np.array([0, 0, 0, 1, 0, 1, 1, 1, 1, 0, 1, 1])
    r = pr.nuggets_resample(s, y, group_size=4, seed=0)
    idx = r.details["indices"]
    # groups of 4 in sorted order: {0,1,2,3}: 1 high -> 1+1; {4..7}: 1 low -> 1+1; {8..11}: 1+1
    assert r.n_selected == 6 and r.n_groups == 3
    for g in range(3):
        sel = idx[(idx >= 4 * g) & (idx < 4 * g + 4)]
        assert (y[sel] == 1).sum() == (y[sel] == 0).sum() == 1
    again = pr.nuggets_resample(s, y, group_size=4, seed=0)
    assert again.details["indices"].tolist() == idx.tolist()
    with pytest.raises(InvalidInputError, match="`group_size` must be an integer >= 2"):
        pr.nuggets_resample(s, y, group_size=1)


def test_paired_family_correction():
    a = {"x": [3, 4, 5, 6, 7, 8], "y": [1, 2, 3, 4, 5, 6]}
    b = {"x": [1, 2, 6, 2, 3, 4], "y": [1.5, 2.5, 2.0, 4.5, 4.0, 6.5]}
    r = pr.paired(a, b, correction="holm")
    px, py = r.results["x"].values["p_greater"], r.results["y"].values["p_greater"]
    lo, hi = sorted([px, py])
    holm = {lo: min(1.0, 2 * lo), hi: min(1.0, max(2 * lo, hi))}
    assert r.results["x"].values["p_greater_adj"] == pytest.approx(holm[px])
    assert r.results["y"].values["p_greater_adj"] == pytest.approx(holm[py])
    assert px != py
    assert r.results["x"].signature == (
        "paired|correction:holm|family:2|test:wilcoxon|zeros:wilcox|d:mean/sd|nan:error|v:0.1.0"
    )
    with pytest.raises(InvalidInputError, match="must name the same metrics"):
        pr.paired({"x": [1]}, {"z": [1]})


def test_stages_decan_style():
    scores = {"base": [5, 6, 7, 8, 9], "sft": [4, 4, 6, 5, 7], "dpo": [3, 4, 5, 5, 6]}
    r = pr.stages(scores, ["base>sft", "sft>dpo", "dpo<base", "sft!=dpo"])
    assert list(r.results) == ["base>sft", "sft>dpo", "base>dpo", "sft!=dpo"]
    v = r.results["base>sft"].values
    assert v["delta"] == pytest.approx(1.8)
    assert v["p"] == pytest.approx(1 / 32)  # exact one-sided Wilcoxon, all 5 differences > 0
    assert v["p_adj"] == pytest.approx(4 / 32)
    assert r.results["sft!=dpo"].values["alternative"] == "two-sided"
    assert r.extra["stages"]["base"] == {"mean": 7.0, "std": pytest.approx(np.std(
        [5, 6, 7, 8, 9], ddof=1)), "n": 5}


@pytest.mark.parametrize("text", ["base", "base>", ">sft", "base=sft"])
def test_parse_contrast_errors(text):
    with pytest.raises(InvalidInputError, match="contrast must look like 'A>B'"):
        pr.parse_contrast(text)


def test_stages_unknown_stage():
    with pytest.raises(InvalidInputError, match="stage 'rl' not found; stages: base, sft"):
        pr.stages({"base": [1, 2], "sft": [0, 1]}, ["base>rl"])


def test_pairwise_kappa_matrix_includes_annotator():
    r = pr.pairwise({"m": [3, 1, 2, 5], "n": [1, 1, 1, 1]}, {"m": [1, 2, 0, 6], "n": [0, 2, 0, 0]},
                    [0, 1, 0, 1], n_resamples=100)
    k = r.extra["kappa"]
    assert k["names"] == ["m", "n", "annotator"]
    assert k["matrix"][0][2] == 1.0  # m agrees with the annotator on every pair
    assert r.settings["tie_policy"] == "metric:miss,label:drop"
    assert r.results["m"].values["accuracy"] == 1.0
    assert r.results["n"].values["accuracy"] == 0.75


def test_length_bias_golden():
    pools = [["a b", "a b c d e f", "a b c d", "z"], ["x", "x y z w", "x y", "q r s"]]
    # pool 0: lengths 2,6,4,1 -> 25th pct = 1.75; top score at "z" (1 word) -> win
    # pool 1: lengths 1,4,2,3 -> 25th pct = 1.75; top score at "x y z w" -> no win
    scores = {"m": [[0.1, 0.2, 0.3, 0.9], [0.1, 0.9, 0.3, 0.2]]}
    r = length_bias(pools, scores, top_k=[2])
    v = r.results["m"].values
    assert (v["short_win_rate"], v["n_pools"]) == (0.5, 2)
    # the corpus top-2 are "z" and "x y z w": ROUGE-1 P = 1/1, R = 1/4 -> F1 = 0.4; no bigram,
    # so BLEU (no smoothing) is 0
    assert (v["top2_rouge1"], v["top2_bleu"], v["top2_n_pairs"]) == (pytest.approx(0.4), 0.0, 1)
    assert v["top2_mean_length"] == 2.5
    assert r.results["m"].signature == (
        "length-bias|quantile:25|length:whitespace-words|top_k:2|pairs:1000|seed:0|v:0.1.0"
    )
    with pytest.raises(InvalidInputError, match="top-k must be between 2"):
        length_bias(pools, scores, top_k=[50])


def test_homogenization_samples_pairs_beyond_budget():
    from divmeter.studies.meta.homogenization import _pairs, mean_similarities

    texts = [f"w{i} common words here" for i in range(12)]  # 66 pairs
    full = mean_similarities(texts)
    assert full["n_pairs"] == 66
    part = mean_similarities(texts, n_pairs=10, seed=3)
    assert part["n_pairs"] == 10
    assert part["rouge1"] == pytest.approx(full["rouge1"])  # every pair shares 3 of 4 tokens
    pairs = _pairs(12, 10, 3)
    assert len(set(pairs)) == 10 and all(0 <= i < j < 12 for i, j in pairs)


def test_paired_bootstrap_cis():
    rng = np.random.default_rng(2)
    a = rng.normal(0.5, 1.0, 60)
    b = rng.normal(0.0, 1.0, 60)
    r = pr.paired({"m": a}, {"m": b}, bootstrap=400, seed=1).results["m"]
    for key in ("mean_diff", "cohen_d", "sign_accuracy"):
        lo, hi = r.values[f"{key}_ci"]
        assert lo <= r.values[key] <= hi
    assert r.values["mean_diff_ci"] == pr.paired({"m": a}, {"m": b}, bootstrap=400,
                                                 seed=1).results["m"].values["mean_diff_ci"]
    assert "|ci:percentile|level:0.95|resamples:400|seed:1|" in r.signature


def test_stable_python_interface_after_bare_import():
    import divmeter

    assert divmeter.studies.meta.oca([0.1, 0.9, 0.2, 0.8], [0, 1, 0, 1]).oca == 1.0
    assert divmeter.studies.meta.spearman([1, 2, 3], [1, 2, 4]).rho == pytest.approx(1.0)
    r = divmeter.studies.meta.paired_contrast([3, 4, 5], [1, 2, 6])
    assert {"p_two_sided", "p_greater", "cohen_d", "sign_accuracy", "mean_diff",
            "sum_diff"} <= set(r.values)


def test_pairwise_orients_lower_is_diverse_metrics():
    # "s" is a self-BLEU-like score: the lower set is the more diverse one
    s1, s2, labels = {"s": [0.1, 0.8, 0.3]}, {"s": [0.6, 0.2, 0.5]}, [0, 1, 0]
    raw = pr.pairwise(s1, s2, labels, n_resamples=100)
    assert raw.results["s"].values["accuracy"] == 0.0
    assert raw.results["s"].values["direction"] == "higher"
    turned = pr.pairwise(s1, s2, labels, n_resamples=100, directions={"s": "lower"})
    assert turned.results["s"].values["accuracy"] == 1.0
    assert turned.results["s"].values["direction"] == "lower"
    assert turned.extra["kappa"]["matrix"][0][1] == 1.0  # agrees with the annotator
    with pytest.raises(InvalidInputError, match="direction of 's' must be 'higher' or 'lower'"):
        pr.pairwise(s1, s2, labels, directions={"s": "up"})


def test_length_bias_top_scored_means_most_diverse():
    pools = [["a b", "a b c d e f", "a b c d", "z"], ["x", "x y z w", "x y", "q r s"]]
    scores = {"m": [[0.9, 0.8, 0.7, 0.1], [0.9, 0.1, 0.7, 0.8]]}  # lowest = most diverse
    v = length_bias(pools, scores, directions={"m": "lower"}).results["m"].values
    # most diverse: "z" (1 word, a short win) and "x y z w" (no win)
    assert (v["short_win_rate"], v["direction"]) == (0.5, "lower")
    raw = length_bias(pools, scores).results["m"].values
    # highest raw scores: "a b" (2 > 1.75: no win) and "x" (a win)
    assert (raw["short_win_rate"], raw["direction"]) == (0.5, "higher")
