"""Fidelity of BLEU variants to the papers that use them (issue 8).

* self-BLEU ``smooth="coco"``: the commonsense meta-evaluation (Zhang, Peng & Bollegala 2025,
  Section 3 "Form-based Diversity", footnote 1, Figure 1) computes self-BLEU with nlg-eval's
  ``pycocoevalcap`` BLEU scorer, whose corpus score is
  ``(prod_k (C_k + 1e-15) / (T_k + 1e-9)) ** (1/n) * BP`` with
  ``BP = exp(1 - 1/ratio)`` when ``ratio = (c + 1e-15) / (r + 1e-9) < 1``.
* homogenization ``measure="bleu-hf"``: the PATTR paper (Deshpande et al. 2025, Section 3.3,
  "Corpus Diversity") scores unique pairs with Hugging Face ``evaluate``'s BLEU at its defaults
  (13a tokens, case kept, max_order 4, no smoothing), one direction per pair.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path

import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.metrics.overlap import homogenization, self_bleu, tokenize_13a
from divmeter.testing import formula

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SELFBLEU = json.loads((FIXTURES / "overlap_selfbleu.json").read_text("utf-8"))
HF = json.loads((FIXTURES / "bleu_hf_13a.json").read_text("utf-8"))
TINY, SMALL = 1e-15, 1e-9


# ------------------------------------------------------------------ self-BLEU, smooth="coco"


def _coco_by_hand(matches: list[int], totals: list[int], c: int, r: int) -> float:
    """The scorer's formula on summed statistics, operation by operation."""
    prod = 1.0
    for m, t in zip(matches, totals, strict=True):
        prod *= (m + TINY) / (t + SMALL)
    ratio = (c + TINY) / (r + SMALL)
    bp = math.exp(1 - 1 / ratio) if ratio < 1 else 1.0
    return prod ** (1 / len(matches)) * bp


@pytest.mark.parametrize(
    ("texts", "n", "matches", "totals", "c", "r", "approx"),
    [
        # no shared n-gram: each 2-token hypothesis, its one reference 2 tokens long.
        # C = (0, 0), T = (2+2, 1+1) = (4, 2), c = r = 4.
        # prod = (1e-15 / (4 + 1e-9)) * (1e-15 / (2 + 1e-9)) ~= 1.25e-31; sqrt ~= 3.5355e-16;
        # ratio = 4 / (4 + 1e-9) < 1 -> BP = exp(1 - (4 + 1e-9) / 4) = exp(-2.5e-10).
        (["a b", "c d"], 2, [0, 0], [4, 2], 4, 4, 3.5355339e-16),
        # the same with 3-token texts: T = (6, 4): sqrt(1e-30 / 24) ~= 2.0412e-16, i.e. the
        # value depends on the lengths where exact BLEU gives 0 to both sets.
        (["a b c", "d e f"], 2, [0, 0], [6, 4], 6, 6, 2.0412415e-16),
        # one order unmatched only: C = (4, 0) of T = (6, 4):
        # (4/6 * 1e-15/4) ** 0.5 = (1.6667e-16) ** 0.5 = 1.29099e-8 (exact BLEU: 0)
        (["a b c", "b a d"], 2, [4, 0], [6, 4], 6, 6, 1.2909944e-8),
        # every order matches: C = (6, 4), T = (8, 6): sqrt(0.5) moved by ~2.7e-10 only
        (["a b c d", "a b c e"], 2, [6, 4], [8, 6], 8, 8, math.sqrt(0.5)),
        # identical responses: 1 - ~6.25e-10 (the +1e-9 in every denominator and in r)
        (["a b", "a b"], 2, [4, 2], [4, 2], 4, 4, 1.0),
        # texts shorter than n: T_3 = T_4 = 0, so p_3 = p_4 = 1e-15 / 1e-9 = 1e-6 and
        # BLEU-4 = (1 * 1 * 1e-6 * 1e-6) ** (1/4) = 1e-3 (exact BLEU: 0)
        (["a b", "a b"], 4, [4, 2, 0, 0], [4, 2, 0, 0], 4, 4, 1e-3),
        # a text shorter than n ("a b" adds no 3-gram): "a b c" vs "a b" and back give
        # C = (4, 2, 0), T = (5, 3, 1), c = r = 5:
        # BLEU-3 = (4/5 * 2/3 * 1e-15 / (1 + 1e-9)) ** (1/3) ~= 8.1e-6 (exact BLEU: 0)
        (["a b", "a b c"], 3, [4, 2, 0], [5, 3, 1], 5, 5, 8.1096027e-6),
    ],
)
def test_self_bleu_coco_hand_computed(
    texts: list[str], n: int, matches: list[int], totals: list[int], c: int, r: int,
    approx: float,
) -> None:
    """Commonsense meta-evaluation, Section 3 / footnote 1 (pycocoevalcap BLEU): hand values."""
    res = self_bleu(texts, n=n, smooth="coco")
    assert res.details["matches"] == dict(enumerate(matches, 1))
    assert res.details["totals"] == dict(enumerate(totals, 1))
    assert (res.details["sys_len"], res.details["ref_len"]) == (c, r)
    expected = _coco_by_hand(matches, totals, c, r)
    assert res.value == pytest.approx(expected, rel=1e-14)
    assert res.value == pytest.approx(approx, rel=1e-7)
    assert res.value > 0
    assert res.signature == (
        f"self-bleu|n:{n}|variant:corpus|smooth:coco|tok:whitespace|case:mixed|v:0.1.0"
    )


def test_self_bleu_coco_breaks_ties_that_exact_bleu_leaves() -> None:
    """Without shared bigrams exact BLEU ties at 0; the scorer's 1e-15 / 1e-9 order the sets by
    length, which is what changes rankings and pairwise accuracies in the paper's code."""
    short, long_ = ["a b", "c d"], ["a b c", "d e f"]
    assert self_bleu(short, n=2).value == self_bleu(long_, n=2).value == 0.0
    s, lg = self_bleu(short, n=2, smooth="coco").value, self_bleu(long_, n=2, smooth="coco").value
    assert s is not None and lg is not None and s > lg > 0
    # the order of two sets that do match in every order is unchanged
    a, b = ["a b c d", "a b c e"], ["a b c d", "a b x y"]
    none = [self_bleu(x, n=2).value for x in (a, b)]
    coco = [self_bleu(x, n=2, smooth="coco").value for x in (a, b)]
    assert (none[0] > none[1]) and (coco[0] > coco[1])
    assert coco[0] != none[0] and abs(coco[0] - none[0]) < 1e-9


def _cocoeval_self_bleu(texts: list[str], n: int) -> float:
    """A literal, per-hypothesis re-statement of the scorer's algorithm (dicts and loops)."""
    words = [t.split() for t in texts]
    counts = []
    for w in words:
        c: Counter[tuple[str, ...]] = Counter()
        for k in range(1, n + 1):
            for i in range(len(w) - k + 1):
                c[tuple(w[i:i + k])] += 1
        counts.append(c)
    correct, guess, testlen, reflen = [0] * n, [0] * n, 0, 0
    for i, w in enumerate(words):
        refs = [j for j in range(len(words)) if j != i]
        maxc: dict[tuple[str, ...], int] = {}
        for j in refs:
            for g, v in counts[j].items():
                maxc[g] = max(maxc.get(g, 0), v)
        testlen += len(w)
        reflen += min((abs(len(words[j]) - len(w)), len(words[j])) for j in refs)[1]
        for k in range(n):
            guess[k] += max(0, len(w) - k)
        for g, v in counts[i].items():
            correct[len(g) - 1] += min(maxc.get(g, 0), v)
    return _coco_by_hand(correct, guess, testlen, reflen)


def test_self_bleu_coco_matches_a_literal_scorer_on_random_sets() -> None:
    """pycocoevalcap ``compute_score(option='closest')`` arithmetic, on 60 random sets."""
    rng = random.Random(4)
    sets = [
        [" ".join(rng.choice("abcdef") for _ in range(rng.randint(0, 7)))
         for _ in range(rng.randint(2, 6))]
        for _ in range(60)
    ]
    sets = [s for s in sets if any(t.split() for t in s)]
    # the formula: the arithmetic on every set, those with one non-blank response included
    # (the public functions make those null by the rule for degenerate sets), all sets in one
    # call and each set alone
    metric = divmeter.get_metric("self-bleu").plan({"n": 3, "smooth": "coco"})
    batch = metric.score(tuple(tuple(s) for s in sets))
    for s, b in zip(sets, batch, strict=True):
        ref = _cocoeval_self_bleu(s, 3)
        one = formula(self_bleu, s, n=3, smooth="coco").value
        assert one == pytest.approx(ref, rel=1e-13, abs=1e-300)
        assert b.value == one


def test_self_bleu_coco_keeps_figure_1() -> None:
    """Commonsense meta-evaluation, Figure 1: 1 - self-BLEU-3 = 0.486 and 0.593 under coco too
    (the scorer moves them by ~2e-11 and ~8e-12)."""
    sets = {s["id"]: s["texts"] for s in SELFBLEU["sets"]}
    d = [self_bleu(sets[k], n=3, smooth="coco").details["diversity"]
         for k in ("paper-fig1-set1", "paper-fig1-set2")]
    e = [self_bleu(sets[k], n=3).details["diversity"]
         for k in ("paper-fig1-set1", "paper-fig1-set2")]
    assert [round(x, 3) for x in d] == [0.486, 0.593]
    assert all(0 < abs(x - y) < 1e-10 for x, y in zip(d, e, strict=True))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"variant": "sentence", "smooth": "coco"},
         r"^`smooth` of self-bleu with variant=sentence must be one of method1; got 'coco'\.$"),
        ({"smooth": "method1"},
         r"^`smooth` of self-bleu with variant=corpus must be one of none, coco; "
         r"got 'method1'\.$"),
        ({"smooth": "exp"}, r"must be one of none, coco; got 'exp'"),
    ],
)
def test_self_bleu_smooth_errors(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        self_bleu(["a b", "a c"], **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "signature"),
    [
        ({}, "self-bleu|n:4|variant:corpus|smooth:none|tok:whitespace|case:mixed|v:0.1.0"),
        ({"smooth": "none"},
         "self-bleu|n:4|variant:corpus|smooth:none|tok:whitespace|case:mixed|v:0.1.0"),
        ({"smooth": "coco"},
         "self-bleu|n:4|variant:corpus|smooth:coco|tok:whitespace|case:mixed|v:0.1.0"),
        ({"variant": "sentence"},
         "self-bleu|n:4|variant:sentence|smooth:method1|tok:whitespace|case:mixed|v:0.1.0"),
    ],
)
def test_self_bleu_smooth_signatures(kwargs: dict[str, str], signature: str) -> None:
    assert self_bleu(["a b c d e", "a b c d f"], **kwargs).signature == signature  # type: ignore[arg-type]


# ------------------------------------------------------------------ homogenization bleu-hf


def test_13a_tokens_match_frozen_sacrebleu() -> None:
    """sacrebleu's 13a tokens (as evaluate's copy returns them), frozen in a fixture."""
    for row in HF["tokens"]:
        assert tokenize_13a(row["text"]) == row["tokens"], row["text"]


def test_bleu_hf_matches_frozen_sentence_bleu() -> None:
    """PATTR Section 3.3: one prediction against one reference, evaluate's BLEU defaults."""
    for p in HF["pairs"]:
        v = homogenization([p["prediction"], p["reference"]], measure="bleu-hf").value
        assert v == pytest.approx(p["bleu"], abs=1e-12), (p["prediction"], p["reference"])
    assert sum(p["bleu"] > 0 for p in HF["pairs"]) >= 8


def test_bleu_hf_hand_computed_and_one_direction() -> None:
    """PATTR Section 3.3 (HF BLEU, unique pairs scored once).

    pred "the cat sat on the mat ." (7 tokens) vs ref "the cat sat on a mat today ." (8):
    p1 = 6/7 ("the" clipped to 1), p2 = 3/6, p3 = 2/5, p4 = 1/4; geometric mean
    (6/7 * 1/2 * 2/5 * 1/4) ** (1/4); ratio 7/8 <= 1 -> BP = exp(1 - 8/7).
    The other direction: p = 6/8, 3/7, 2/6, 1/5 and ratio 8/7 > 1 -> BP = 1.
    """
    a, b = "the cat sat on the mat.", "the cat sat on a mat today."
    ab = (6 / 7 * 1 / 2 * 2 / 5 * 1 / 4) ** 0.25 * math.exp(1 - 8 / 7)
    ba = (6 / 8 * 3 / 7 * 2 / 6 * 1 / 5) ** 0.25
    assert homogenization([a, b], measure="bleu-hf").value == pytest.approx(ab, rel=1e-12)
    assert homogenization([b, a], measure="bleu-hf").value == pytest.approx(ba, rel=1e-12)
    # three texts: mean over the pairs i < j, prediction = the earlier text
    c = "A DOG!"
    r = homogenization([a, b, c], measure="bleu-hf")
    assert r.value == pytest.approx((ab + 0 + 0) / 3, rel=1e-12)
    assert r.details["similarity"][0, 1] == r.details["similarity"][1, 0]
    # case is kept: "The" and "the" do not match, unlike measure="bleu" (rouge tokens, lowercase)
    assert homogenization(["The cat sat on", "the cat sat on"], measure="bleu-hf").value == 0.0
    assert homogenization(["The cat sat on", "the cat sat on"], measure="bleu").value == 1.0


def test_bleu_hf_signature_degenerate_and_errors() -> None:
    r = formula(homogenization, ["a b c d", ""], measure="bleu-hf")
    assert r.value == 0.0  # evaluate divides by zero here; divmeter's kernel scores the pair 0
    rule = homogenization(["a b c d", ""], measure="bleu-hf")  # one non-blank response
    assert (rule.value, rule.reason) == (None, "fewer than two non-blank responses (got 1)")
    assert rule.signature == r.signature
    assert r.signature == (
        "homogenization|measure:bleu-hf|n:4|smooth:none|tok:13a|case:mixed|v:0.1.0"
    )
    with pytest.raises(InvalidInputError, match=r"^measure bleu-hf of homogenization fixes its "
                       r"tokenization \(13a, case kept, no stemming\).*got tokenizer='whitespace'"):
        homogenization(["a b", "a c"], measure="bleu-hf", tokenizer="whitespace")
