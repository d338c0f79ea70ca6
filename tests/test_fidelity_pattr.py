"""Fidelity of the length-bias protocol and PATTR's filtering protocol (issue 8).

PATTR paper: Deshpande et al. 2025, "A Penalty Goes a Long Way" -- Table 1 (Spearman of PATTR
with response length, raw sign), Section 3.3 (Hugging Face BLEU over unique pairs), Section 4.3
(length-range pre-filters before top-k selection), Section 4.4 / Table 4 / Table F.1
(independent t-tests of the L_T x W sensitivity analysis).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as ss

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.studies.meta.homogenization import mean_similarities, pair_similarities
from divmeter.studies.meta.pattr import (
    length_bias,
    parse_length_range,
    pattr_sensitivity,
    sensitivity_table,
    top_k_indices,
)

# texts of 1..8 distinct words: TTR = 1, so PATTR(L_T) = L / (L + |L - L_T|)
WORDS = "alpha beta gamma delta epsilon zeta eta theta".split()
LADDER = [" ".join(WORDS[:n]) for n in range(1, 9)]


# ------------------------------------------------------------------ Table 1: raw Spearman


@pytest.mark.parametrize(
    ("target", "rho"),
    [
        # L_T = 2: PATTR = 1/2, 1, 3/4, 4/6, 5/8, 6/10, 7/12, 8/14 -> ranks 1,8,7,6,5,4,3,2
        # against lengths 1..8: sum d^2 = 112 -> rho = 1 - 6*112 / (8*63) = -1/3 (negative,
        # like Table 1's L_T = 100 row)
        (2, -1 / 3),
        # L_T = 8: PATTR = L/8, increasing -> rho = +1 (Table 1's positive trend at L_T = 400)
        (8, 1.0),
    ],
)
def test_length_bias_reports_table_1_raw_spearman(target: int, rho: float) -> None:
    """PATTR Table 1: Spearman(PATTR, length) in the metric's own sign, with its p-value."""
    res = divmeter.score(LADDER, "pattr", target_length=target)
    scores = res.details["per_response"]
    pools = [LADDER[:4], LADDER[4:]]
    out = length_bias(pools, {"pattr": [scores[:4], scores[4:]]})
    v = out.results["pattr"].values
    ref = ss.spearmanr(scores, np.arange(1, 9))
    assert v["spearman_raw"] == pytest.approx(rho, abs=1e-12)
    assert v["spearman_raw"] == pytest.approx(ref.statistic, abs=1e-12)
    assert v["spearman_p"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert v["spearman_length"] == pytest.approx(rho, abs=1e-12)  # higher = more diverse


def test_length_bias_raw_and_oriented_spearman_differ_for_lower_metrics() -> None:
    """A lower-is-more-diverse score (compression ratio, self-BLEU): raw keeps the Table 1
    sign of the score itself; the oriented one is that of diversity (negated score)."""
    pools = [["a", "a b"], ["a b c", "a b c d"]]
    # score rises with length: raw rho = +1; as diversity (negated) it falls: -1
    out = length_bias(pools, {"cr": [[1.0, 2.0], [3.0, 4.0]]}, directions={"cr": "lower"})
    v = out.results["cr"].values
    assert (v["spearman_raw"], v["spearman_length"]) == (pytest.approx(1.0), pytest.approx(-1.0))
    assert v["direction"] == "lower"


# ------------------------------------------------------------------ Section 4.3: length range


POOLS = [["a b", "a b c d e f", "a b c d", "z"], ["x", "x y z w", "x y", "q r s"]]
SCORES = {"m": [[0.1, 0.2, 0.3, 0.9], [0.1, 0.9, 0.3, 0.2]]}


def test_length_bias_length_range_filters_before_top_k() -> None:
    """PATTR 4.3: responses outside the range are excluded *before* ranking.

    Without a range the top-2 are "z" (0.9, 1 word) and "x y z w" (0.9, 4 words); with 2-4
    words allowed, "z" is out and the top-2 are "x y z w" (0.9) and "a b c d" (0.3): mean
    length (4 + 4) / 2 = 4.
    """
    plain = length_bias(POOLS, SCORES, top_k=[2]).results["m"].values
    assert plain["top2_mean_length"] == 2.5
    r = length_bias(POOLS, SCORES, top_k=[2], length_range=(2, 4))
    v = r.results["m"].values
    assert v["n_in_range"] == 5  # "a b", "a b c d", "x y z w", "x y", "q r s"
    assert v["top2_mean_length"] == 4.0
    # ROUGE-1 of "x y z w" vs "a b c d": nothing shared
    assert v["top2_rouge1"] == 0.0
    assert r.results["m"].signature == (
        "length-bias|quantile:25|length:whitespace-words|top_k:2|pairs:1000|range:2-4|seed:0"
        "|v:0.1.0"
    )
    assert r.settings["length_range"] == [2.0, 4.0]
    # the win rate and correlations do not depend on the range
    assert (v["short_win_rate"], v["spearman_raw"]) == (plain["short_win_rate"],
                                                        plain["spearman_raw"])
    with pytest.raises(InvalidInputError, match=r"top-k must be between 2 and the number of "
                       r"scored responses of 5-6 words \(1\); got 2\."):
        length_bias(POOLS, SCORES, top_k=[2], length_range=(5, 6))
    with pytest.raises(InvalidInputError, match=r"0 <= low <= high \(words\); got 6-5\."):
        length_bias(POOLS, SCORES, top_k=[2], length_range=(6, 5))


def test_length_bias_hf_bleu_by_name() -> None:
    """PATTR 3.3: the homogenisation's BLEU in the paper's Hugging Face setting, by name."""
    pools = [["the cat sat on the mat.", "x"], ["the cat sat on a mat today.", "y"]]
    scores = {"m": [[0.9, 0.1], [0.8, 0.2]]}
    r = length_bias(pools, scores, top_k=[2], bleu="hf")
    v = r.results["m"].values
    # top-2 in rank order: prediction "the cat sat on the mat.", reference "... today."
    expected = (6 / 7 * 1 / 2 * 2 / 5 * 1 / 4) ** 0.25 * math.exp(1 - 8 / 7)
    assert v["top2_bleu-hf"] == pytest.approx(expected, rel=1e-12)
    assert "top2_bleu" not in v
    assert "|bleu:hf|" in r.results["m"].signature
    with pytest.raises(InvalidInputError, match=r"`bleu` must be 'bleu' or 'hf'; got 'nltk'\."):
        length_bias(pools, scores, top_k=[2], bleu="nltk")


@pytest.mark.parametrize(
    ("scores", "k", "lengths", "rng", "higher", "expected"),
    [
        ([0.9, 0.5, 0.7, 0.8], 2, None, None, True, [0, 3]),
        # bounds are inclusive (Figure 3: "200 <= word count <= 600")
        ([0.9, 0.5, 0.7, 0.8], 2, [1, 5, 6, 9], (5, 8), True, [2, 1]),
        ([0.9, 0.5, 0.7, 0.8], 3, [5, 5, 8, 9], (5, 8), True, [0, 2, 1]),
        # ties keep input order; NaN never selected
        ([0.5, math.nan, 0.5, 0.1], 2, None, None, True, [0, 2]),
        # lower is more diverse (compression ratio)
        ([0.9, 0.5, 0.7, 0.8], 2, None, None, False, [1, 2]),
    ],
)
def test_top_k_indices(scores: list[float], k: int, lengths: list[int] | None,
                       rng: tuple[int, int] | None, higher: bool, expected: list[int]) -> None:
    got = top_k_indices(scores, k, lengths=lengths, length_range=rng,
                        higher_is_more_diverse=higher)
    assert got.tolist() == expected


def test_top_k_and_range_errors() -> None:
    with pytest.raises(InvalidInputError, match=r"^top-3 needs at least 3 scored responses "
                       r"within 5-8 words; got 2\.$"):
        top_k_indices([1, 2, 3, 4], 3, lengths=[1, 5, 8, 9], length_range=(5, 8))
    with pytest.raises(InvalidInputError, match=r"needs the word counts"):
        top_k_indices([1, 2], 1, length_range=(0, 5))
    with pytest.raises(InvalidInputError, match=r"must look like LOW-HIGH, e.g. 200-600; "
                       r"got '200'\."):
        parse_length_range("200")
    assert parse_length_range("0-2048") == (0.0, 2048.0)


# ------------------------------------------------------------------ Section 4.4: t-tests


def test_sensitivity_table_hand_computed() -> None:
    """PATTR Table 4: independent t-test of the two selections' pair similarities.

    PATTR's top-3: "a b c d", "a b c e", "w x y z" -> ROUGE-1 pairs 0.75, 0, 0 (mean 1/4,
    sample variance ((1/2)^2 + 2 (1/4)^2) / 2 = 3/16). MATTR's top-3: "p q r s", "w x y z",
    "a b c d" -> 0, 0, 0. Pooled variance (2 * 3/16 + 0) / 4 = 3/32; standard error
    sqrt(3/32 * (1/3 + 1/3)) = 1/4; t = (1/4 - 0) / (1/4) = 1, df = 4.
    Lengths are 4 words everywhere: length_diff 0.
    """
    texts = ["a b c d", "a b c e", "w x y z", "p q r s", "a b c d"]
    r = sensitivity_table(texts, {4: [0.9, 0.8, 0.7, 0.6, 0.1]},
                          {2: [0.1, 0.2, 0.9, 0.95, 0.8]}, k=3)
    row = r.results["LT=4,W=2"].values
    assert row["t_rouge1"] == pytest.approx(1.0, abs=1e-12)
    assert row["p_rouge1"] == pytest.approx(2 * ss.t.sf(1.0, 4), rel=1e-12)
    assert (row["pattr_rouge1"], row["mattr_rouge1"]) == (pytest.approx(0.25), 0.0)
    assert (row["length_diff"], row["target_length"], row["window"]) == (0.0, 4, 2)
    assert r.results["LT=4,W=2"].signature == (
        "pattr-sensitivity|k:3|bleu:hf|pairs:1000|test:student|length:whitespace-words|seed:0"
        "|v:0.1.0"
    )


def test_sensitivity_table_against_scipy_directly() -> None:
    """PATTR Section 4.4 / Table F.1 on a synthetic corpus: every cell equals
    ``scipy.stats.ttest_ind`` on the pair similarities of the two top-k selections."""
    rng = np.random.default_rng(7)
    base = [f"w{i}" for i in range(20)]
    texts = []
    for _ in range(40):  # windows of one word sequence (shared n-grams), some words -> "the"
        start, size = int(rng.integers(0, 10)), int(rng.integers(3, 11))
        words = [w if rng.random() > 0.3 else "the" for w in base[start:start + size]]
        texts.append(" ".join(words))
    lengths = np.array([len(t.split()) for t in texts])
    pattr = {lt: divmeter.score(texts, "pattr", target_length=lt).details["per_response"]
             for lt in (5, 10)}
    mattr = {w: divmeter.score(texts, "mattr", window=w).details["per_response"]
             for w in (3, 6)}
    table = sensitivity_table(texts, pattr, mattr, k=6, length_range=(4, 12))
    assert list(table.results) == ["LT=5,W=3", "LT=5,W=6", "LT=10,W=3", "LT=10,W=6"]
    for lt in (5, 10):
        for w in (3, 6):
            row = table.results[f"LT={lt},W={w}"].values
            sel = {}
            for name, sc in (("p", pattr[lt]), ("m", mattr[w])):
                s = np.array([math.nan if v is None else v for v in sc], dtype=float)
                ok = np.flatnonzero(~np.isnan(s) & (lengths >= 4) & (lengths <= 12))
                sel[name] = ok[np.argsort(-s[ok], kind="stable")[:6]]
            assert row["length_diff"] == pytest.approx(
                lengths[sel["p"]].mean() - lengths[sel["m"]].mean())
            for measure in ("rouge1", "rouge2", "rougeL", "bleu-hf"):
                a = [divmeter.score([texts[i], texts[j]], "homogenization", measure=measure).value
                     for x, i in enumerate(sel["p"]) for j in sel["p"][x + 1:]]
                b = [divmeter.score([texts[i], texts[j]], "homogenization", measure=measure).value
                     for x, i in enumerate(sel["m"]) for j in sel["m"][x + 1:]]
                ref = ss.ttest_ind(a, b)
                assert len(a) == len(b) == 15 and np.std(a) > 0 and np.std(b) > 0
                assert row[f"t_{measure}"] == pytest.approx(ref.statistic, rel=1e-12), measure
                assert row[f"p_{measure}"] == pytest.approx(ref.pvalue, rel=1e-9), measure
    welch = sensitivity_table(texts, pattr, mattr, k=6, length_range=(4, 12), equal_var=False)
    assert "|test:welch|" in welch.results["LT=5,W=3"].signature


def test_pattr_sensitivity_uses_the_registry_metrics() -> None:
    texts = ["a b c d", "a b c e", "w x y z", "p q r s", "a b c d e"]
    r = pattr_sensitivity(texts, target_lengths=[4, 5], windows=[2], k=2, bleu="bleu")
    assert sorted(r.results) == ["LT=4,W=2", "LT=5,W=2"]
    assert "t_bleu" in r.results["LT=4,W=2"].values
    with pytest.raises(InvalidInputError, match=r"scores of PATTR L_T=1 must have one value "
                       r"per text \(5\); got shape \(2,\)\."):
        sensitivity_table(texts, {1: [0.1, 0.2]}, {2: [0.0] * 5}, k=2)


def test_pair_similarities_hf_and_homogenization_agree() -> None:
    texts = ["the cat sat on the mat.", "the cat sat on a mat today.", "A DOG!"]
    p = pair_similarities(texts)
    h = mean_similarities(texts, bleu="hf")
    assert set(p) == {"rouge1", "rouge2", "rougeL", "bleu-hf"}
    assert h["bleu-hf"] == pytest.approx(float(np.mean(p["bleu-hf"])), rel=1e-12)
    with pytest.raises(InvalidInputError, match=r"`bleu` of the homogenisation must be one "
                       r"of bleu, hf; got 'x'\."):
        mean_similarities(texts, bleu="x")


# ------------------------------------------------------------------ command line


def _cli(*args: str) -> dict:
    from typer.testing import CliRunner

    from divmeter.apps.cli import app

    res = CliRunner().invoke(app, ["meta", *args, "--format", "json"])
    assert res.exit_code == 0, (res.output, res.exception)
    return json.loads(res.stdout)


POOLS_FILE = Path(__file__).resolve().parent / "fixtures" / "meta_pools.jsonl"


def test_length_bias_cli_raw_spearman_range_and_hf_bleu() -> None:
    """PATTR Table 1 (raw rho), 4.3 (--length-range), 3.3 (--bleu hf) from the command line."""
    row = _cli("length-bias", str(POOLS_FILE), "-m", "pattr:target_length=2", "--top-k", "3",
               "--length-range", "2-8", "--bleu", "hf")["pattr:target_length=2"]
    texts = [t for line in POOLS_FILE.read_text().splitlines()
             for t in json.loads(line)["responses"]]
    scores = divmeter.score(texts, "pattr", target_length=2).details["per_response"]
    ref = ss.spearmanr(scores, [len(t.split()) for t in texts])
    assert row["spearman_raw"] == pytest.approx(ref.statistic, abs=1e-12)
    assert row["spearman_length"] == pytest.approx(ref.statistic, abs=1e-12)
    assert row["n_in_range"] == sum(2 <= len(t.split()) <= 8 for t in texts)
    assert "top3_bleu-hf" in row and "top3_bleu" not in row
    assert row["length_range"] == [2.0, 8.0] and row["bleu"] == "hf"
    assert "|range:2-8|bleu:hf|" in row["signature"]


def test_pattr_sensitivity_cli() -> None:
    out = _cli("pattr-sensitivity", str(POOLS_FILE), "--target-length", "4",
               "--target-length", "8", "--window", "2", "--top-k", "3")
    assert list(out) == ["LT=4,W=2", "LT=8,W=2"]
    row = out["LT=8,W=2"]
    assert row["target_length"] == 8 and row["window"] == 2 and row["test"] == "student"
    assert {"t_rouge1", "p_rougeL", "t_bleu-hf", "length_diff"} <= set(row)
