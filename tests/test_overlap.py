"""self-BLEU (corpus / sentence) and homogenization: golden values, parity fixtures, edges."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.metrics.overlap import (
    homogenization,
    lcs_length,
    rouge_tokenize,
    self_bleu,
)
from divmeter.testing import formula

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SELFBLEU = json.loads((FIXTURES / "overlap_selfbleu.json").read_text("utf-8"))
HOMOG = json.loads((FIXTURES / "overlap_homogenization.json").read_text("utf-8"))
TOL = 1e-9


# ------------------------------------------------------------------ self-BLEU: golden values


@pytest.mark.parametrize(
    ("texts", "n", "variant", "expected"),
    [
        # p1 = 6/8, p2 = 4/6, equal lengths: sqrt(0.5)
        (["a b c d", "a b c e"], 2, "corpus", math.sqrt(0.5)),
        (["a b c d", "a b c e"], 2, "sentence", math.sqrt(0.5)),
        # corpus: matches 2 + 2 over 5 unigrams; c = 5, r = 3 + 2 = 5 -> BP 1
        (["a b", "a b c"], 1, "corpus", 0.8),
        # sentence: "a b" p=1, BP exp(1 - 3/2); "a b c" p = 2/3, BP 1
        (["a b", "a b c"], 1, "sentence", (math.exp(-0.5) + 2 / 3) / 2),
        # clipping: "a a a" vs "a" clips to 1; "a" vs "a a a" is 1 -> 2/4; c = r = 4
        (["a a a", "a"], 1, "corpus", 0.5),
        # top-2 counts: each "a a" sees the other's 2; closest lengths 2, 2, 2 -> c=5, r=6
        (["a a", "a a", "a"], 1, "corpus", math.exp(1 - 6 / 5)),
        # closest-length tie (2 vs 4 for a 3-token hypothesis) goes to the shorter: c=9 > r=8
        (["x y z", "x y", "x y z w"], 1, "corpus", 8 / 9),
        (["x y z", "x y", "x y z w"], 1, "sentence", (1 + math.exp(-0.5) + 0.75) / 3),
        # identical responses: self-BLEU 1
        (["the cat sat on the mat"] * 3, 4, "corpus", 1.0),
        (["the cat sat on the mat"] * 3, 4, "sentence", 1.0),
        # no shared word at all
        (["a b c d", "e f g h"], 4, "corpus", 0.0),
        (["a b c d", "e f g h"], 4, "sentence", 0.0),
        # shorter than n, no smoothing: no 3-gram at all -> 0 (sacrebleu, nltk)
        (["a b", "a b"], 4, "corpus", 0.0),
        # shorter than n, method1 as nltk: p3 = p4 = 0.1 / max(1, 0) -> 0.1 ** 0.5
        (["a b", "a b"], 4, "sentence", math.sqrt(0.1)),
        # one response shorter than n, method1 as nltk: hypothesis "a b" (ref "a b c d"):
        # p1 = p2 = 1, p3 = p4 = 0.1 / max(1, 0), BP = exp(1 - 4/2) -> 0.1 ** 0.5 * exp(-1);
        # "a b c d" (ref "a b"): p1 = 2/4, p2 = 1/3, p3 = 0.1 / 2, p4 = 0.1 / 1, BP = 1
        (["a b", "a b c d"], 4, "sentence",
         (math.sqrt(0.1) * math.exp(-1) + (0.5 / 3 * 0.05 * 0.1) ** 0.25) / 2),
        # an empty response among others: hypothesis "" scores 0, and is a length-0 reference
        (["a b", "", "a b"], 1, "sentence", 2 / 3),
    ],
)
def test_self_bleu_golden(texts: list[str], n: int, variant: str, expected: float) -> None:
    r = self_bleu(texts, n=n, variant=variant)
    assert r.value == pytest.approx(expected, abs=1e-12)
    assert r.details["diversity"] == pytest.approx(1 - expected, abs=1e-12)


def test_self_bleu_reproduces_paper_figure_1() -> None:
    """Commonsense meta-evaluation, Figure 1: 1 - self-BLEU-3 = 0.486 (set 1), 0.593 (set 2)."""
    sets = {s["id"]: s["texts"] for s in SELFBLEU["sets"]}
    d1 = self_bleu(sets["paper-fig1-set1"], n=3).details["diversity"]
    d2 = self_bleu(sets["paper-fig1-set2"], n=3).details["diversity"]
    assert (round(d1, 3), round(d2, 3)) == (0.486, 0.593)


def test_self_bleu_corpus_sufficient_statistics() -> None:
    r = self_bleu(["a b c d", "a b c e"], n=2)
    assert r.details["matches"] == {1: 6, 2: 4}
    assert r.details["totals"] == {1: 8, 2: 6}
    assert r.details["precisions"] == {1: 0.75, 2: 4 / 6}
    assert (r.details["sys_len"], r.details["ref_len"], r.details["bp"]) == (8, 8, 1.0)


def test_self_bleu_sentence_per_response() -> None:
    r = self_bleu(["a b", "a b c"], n=1, variant="sentence")
    assert r.details["per_response"] == pytest.approx([math.exp(-0.5), 2 / 3], abs=1e-12)


@pytest.mark.parametrize(
    ("texts", "reason", "kernel_reason"),
    [  # the public function applies the rule for degenerate sets; the kernel keeps its own
        ([], "empty set", "empty set"),
        (["just one"], "fewer than two non-blank responses (got 1)",
         "one response: self-BLEU needs at least two"),
        (["", "  "], "fewer than two non-blank responses (got 0)", "no tokens in any response"),
    ],
)
@pytest.mark.parametrize("variant", ["corpus", "sentence"])
def test_self_bleu_degenerate(texts: list[str], reason: str, kernel_reason: str,
                              variant: str) -> None:
    r = self_bleu(texts, variant=variant)
    assert r.value is None
    assert r.reason == reason
    assert r.signature.startswith(f"self-bleu|n:4|variant:{variant}|")
    k = formula(self_bleu, texts, variant=variant)
    assert (k.value, k.reason, k.signature) == (None, kernel_reason, r.signature)


def test_self_bleu_signatures() -> None:
    assert self_bleu(["a b", "a c"]).signature == (
        "self-bleu|n:4|variant:corpus|smooth:none|tok:whitespace|case:mixed|v:0.1.0"
    )
    assert self_bleu(["a b", "a c"], n=3, variant="sentence", lowercase=True).signature == (
        "self-bleu|n:3|variant:sentence|smooth:method1|tok:whitespace|case:lc|v:0.1.0"
    )
    assert self_bleu(["a b", "a c"], tokenizer="rouge").signature == (
        "self-bleu|n:4|variant:corpus|smooth:none|tok:rouge|case:mixed|v:0.1.0"
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 0}, r"^`n` of self-bleu must be an integer >= 1 and <= 100; got 0\.$"),
        ({"n": 2.0}, r"^`n` of self-bleu must be an integer >= 1 and <= 100; got 2\.0\.$"),
        # the cost grows with n (one pass per order): bounded by MAX_ORDER (issue 16)
        ({"n": 101}, r"^`n` of self-bleu must be an integer >= 1 and <= 100; got 101\.$"),
        ({"n": 10**9},
         r"^`n` of self-bleu must be an integer >= 1 and <= 100; got 1000000000\.$"),
        (
            {"variant": "macro"},
            r"^`variant` of self-bleu must be one of corpus, sentence; got 'macro'\.$",
        ),
        (
            {"tokenizer": "nltk"},
            r"^unknown tokenizer 'nltk': `tokenizer` of self-bleu must be one of tevet, "
            r"whitespace, word, char, rouge\.$",
        ),
    ],
)
def test_self_bleu_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        self_bleu(["a b", "a c"], **kwargs)  # type: ignore[arg-type]


def test_self_bleu_bare_string_is_an_error() -> None:
    with pytest.raises(InvalidInputError, match="got a single str"):
        self_bleu("a b c")  # type: ignore[arg-type]


def test_self_bleu_through_score_api() -> None:
    r = divmeter.score(["a b", "a b c"], "self-bleu:n=1,variant=sentence")
    assert r.value == pytest.approx((math.exp(-0.5) + 2 / 3) / 2, abs=1e-12)
    with pytest.raises(InvalidInputError, match="has no parameter 'smoothing'"):
        divmeter.score(["a b", "a c"], "self-bleu", smoothing="method1")


@pytest.mark.parametrize("variant", ["corpus", "sentence"])
def test_self_bleu_order_invariant_and_batch_equal(variant: str) -> None:
    rng = random.Random(7)
    words = "a b c d e f".split()
    sets = [
        [" ".join(rng.choice(words) for _ in range(rng.randint(0, 9))) for _ in range(m)]
        for m in [0, 1, 2, 3, 5, 8, 1, 4]
    ]
    batch = divmeter.score_many(sets, "self-bleu", n=3, variant=variant)
    for s, b in zip(sets, batch, strict=True):
        single = self_bleu(s, n=3, variant=variant)
        assert (b.value, b.reason, b.signature) == (single.value, single.reason, single.signature)
        shuffled = list(s)
        rng.shuffle(shuffled)
        again = self_bleu(shuffled, n=3, variant=variant).value
        if single.value is None:
            assert again is None
        else:
            assert again == pytest.approx(single.value, abs=1e-12)


# ------------------------------------------------------------------ self-BLEU: frozen parity


def _parity_rows() -> list[tuple[str, list[str], bool, int, dict[str, object]]]:
    rows = []
    for s in SELFBLEU["sets"]:
        for key, lc in (("whitespace_mixed", False), ("whitespace_lc", True)):
            for n, ref in s[key].items():
                rows.append((s["id"], s["texts"], lc, int(n), ref))
    return rows


@pytest.mark.parametrize(("sid", "texts", "lc", "n", "ref"), _parity_rows())
def test_self_bleu_parity(
    sid: str, texts: list[str], lc: bool, n: int, ref: dict[str, object]
) -> None:
    corpus = self_bleu(texts, n=n, variant="corpus", lowercase=lc)
    sentence = self_bleu(texts, n=n, variant="sentence", lowercase=lc)
    # corpus variant == sacrebleu corpus_bleu (tokenize none, smooth none), always
    assert corpus.value == pytest.approx(ref["sacrebleu_corpus"], abs=TOL)
    # sentence variant == mean of nltk sentence_bleu with method1, hypothesis by hypothesis
    assert sentence.value == pytest.approx(ref["nltk_sentence_method1_mean"], abs=TOL)
    assert sentence.details["per_response"] == pytest.approx(
        ref["nltk_sentence_method1_per_response"], abs=TOL
    )
    # nltk corpus_bleu: identical unless a hypothesis is shorter than some order k, where
    # nltk counts max(1, 0) = 1 k-gram in the denominator (the one named difference)
    lengths = [len((t.lower() if lc else t).split()) for t in texts]
    if all(ln >= n for ln in lengths):
        assert corpus.value == pytest.approx(ref["nltk_corpus"], abs=TOL)
    else:
        d = corpus.details
        if d["matches"][1] == 0:
            expected = 0.0
        else:
            logs = 0.0
            for k in range(1, n + 1):
                den = d["totals"][k] + sum(1 for ln in lengths if ln < k)
                logs += math.log(d["matches"][k] / den) if d["matches"][k] else -745.0
            expected = d["bp"] * math.exp(logs / n)
        assert expected == pytest.approx(ref["nltk_corpus"], abs=TOL)


# ------------------------------------------------------------------ homogenization


@pytest.mark.parametrize(
    ("texts", "measure", "expected"),
    [
        # LCS / unigram overlaps: (1,2) 2 of 3+3, (1,3) 0, (2,3) 1 of 3+3
        (["the cat sat", "the cat ran", "a dog ran"], "rougeL", (4 / 6 + 0 + 2 / 6) / 3),
        (["the cat sat", "the cat ran", "a dog ran"], "rouge1", (4 / 6 + 0 + 2 / 6) / 3),
        (["the cat sat", "the cat ran", "a dog ran"], "rouge2", (2 / 4) / 3),
        # word order: ROUGE-1 sees everything, ROUGE-L one token in common
        (["a b c", "c b a"], "rouge1", 1.0),
        (["a b c", "c b a"], "rougeL", 1 / 3),
        # rouge tokenizer lowercases and splits punctuation
        (["The CAT, sat!", "the cat sat"], "rougeL", 1.0),
        (["a b c d", "a b c d", "a b c d"], "bleu", 1.0),
        (["a b c d", "e f g h"], "rougeL", 0.0),
        # one text empty: its pairs score 0
        (["a b", "", "a b"], "rouge1", 1 / 3),
    ],
)
def test_homogenization_golden(texts: list[str], measure: str, expected: float) -> None:
    r = homogenization(texts, measure=measure)
    assert r.value == pytest.approx(expected, abs=1e-12)
    assert r.details["diversity"] == pytest.approx(1 - expected, abs=1e-12)


def test_homogenization_bleu_is_ordered_pair_mean() -> None:
    # BLEU-4 of "a b c d" against the 8-token text: every p_k = 1, BP exp(1 - 8/4);
    # the reverse: p = 4/8, 3/7, 2/6, 1/5 and BP 1
    r = homogenization(["a b c d", "a b c d e f g h"], measure="bleu", tokenizer="whitespace")
    assert r.value == pytest.approx((math.exp(-1) + (1 / 70) ** 0.25) / 2, abs=1e-12)


def test_homogenization_similarity_matrix() -> None:
    r = homogenization(["the cat sat", "the cat ran", "a dog ran"], measure="rouge1")
    sim = r.details["similarity"]
    assert sim.shape == (3, 3)
    assert sim[0, 1] == sim[1, 0] == pytest.approx(2 / 3, abs=1e-12)
    assert sim[0, 2] == 0.0
    assert sim[1, 2] == pytest.approx(1 / 3, abs=1e-12)


def test_homogenization_case() -> None:
    texts = ["The Cat sat", "the cat sat"]
    assert homogenization(texts).value == 1.0
    mixed = homogenization(texts, lowercase=False)
    assert mixed.value == pytest.approx(1 / 3, abs=1e-12)
    assert mixed.signature == "homogenization|measure:rougeL|tok:rouge|case:mixed|stem:no|v:0.1.0"


@pytest.mark.parametrize(
    ("texts", "reason", "kernel_reason"),
    [  # the public function applies the rule for degenerate sets; the kernel keeps its own
        ([], "empty set", "empty set"),
        (["only"], "fewer than two non-blank responses (got 1)",
         "one response: homogenization needs at least two"),
        (["", "!!"], "fewer than two non-blank responses (got 1)", "no tokens in any response"),
        (["??", "!!"], "no tokens in any response", "no tokens in any response"),
    ],
)
def test_homogenization_degenerate(texts: list[str], reason: str, kernel_reason: str) -> None:
    r = homogenization(texts)
    assert (r.value, r.reason) == (None, reason)
    k = formula(homogenization, texts)
    assert (k.value, k.reason) == (None, kernel_reason)


def test_homogenization_signatures() -> None:
    assert homogenization(["a b", "a c"]).signature == (
        "homogenization|measure:rougeL|tok:rouge|case:lc|stem:no|v:0.1.0"
    )
    assert homogenization(["a b", "a c"], measure="bleu").signature == (
        "homogenization|measure:bleu|n:4|smooth:none|tok:rouge|case:lc|stem:no|v:0.1.0"
    )
    assert homogenization(["a b", "a c"], measure="rouge1", tokenizer="whitespace").signature == (
        "homogenization|measure:rouge1|tok:whitespace|case:lc|v:0.1.0"
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"measure": "rougeLsum"},
            r"^`measure` of homogenization must be one of rouge1, rouge2, rougeL, bleu, "
            r"bleu-hf; got 'rougeLsum'\.$",
        ),
        (
            {"use_stemmer": True, "tokenizer": "whitespace"},
            r"^`use_stemmer` of homogenization applies to the rouge tokenizer only",
        ),
        (
            {"use_stemmer": "yes"},
            r"^`use_stemmer` of homogenization must be true or false; got 'yes'\.$",
        ),
    ],
)
def test_homogenization_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        homogenization(["a b", "a c"], **kwargs)  # type: ignore[arg-type]


def _homog_rows() -> list[tuple[str, list[str], dict[str, object]]]:
    return [(s["id"], s["texts"], s) for s in HOMOG["sets"]]


@pytest.mark.parametrize(("sid", "texts", "ref"), _homog_rows())
def test_homogenization_parity(sid: str, texts: list[str], ref: dict[str, object]) -> None:
    nostem = ref["nostem"]
    for measure in ("rouge1", "rouge2", "rougeL"):
        # rouge-score F-measure, averaged over ordered pairs i != j
        assert homogenization(texts, measure=measure).value == pytest.approx(
            nostem[measure], abs=TOL
        )
    ours = homogenization(texts).value
    if ours == 0.0:
        # diversity.homogenization_score turns an all-zero set into 1.0 (named difference)
        assert nostem["diversity_rougel_rounded"] == 1.0
    else:
        # diversity rounds to 3 decimals; otherwise the same number
        assert round(ours, 3) == pytest.approx(nostem["diversity_rougel_rounded"], abs=1e-12)
    assert homogenization(texts, measure="bleu").value == pytest.approx(
        ref["bleu_rouge_tokens_nltk_ordered_mean"], abs=TOL
    )
    ws = homogenization(texts, measure="bleu", tokenizer="whitespace", lowercase=False).value
    assert ws == pytest.approx(ref["bleu_whitespace_nltk_ordered_mean"], abs=TOL)
    assert ws == pytest.approx(ref["bleu_whitespace_sacrebleu_ordered_mean"], abs=TOL)


@pytest.mark.stem  # nltk's Porter stemmer; skipped with the install line without divmeter[stem]
@pytest.mark.parametrize(("sid", "texts", "ref"), _homog_rows())
def test_homogenization_parity_stemmed(
    sid: str, texts: list[str], ref: dict[str, object]
) -> None:
    for measure in ("rouge1", "rouge2", "rougeL"):
        assert homogenization(texts, measure=measure, use_stemmer=True).value == pytest.approx(
            ref["stem"][measure], abs=TOL
        )


def test_rouge_tokenizer() -> None:
    assert rouge_tokenize("Ünïcödé ÉTÉ été, naïve 東京!") == ["n", "c", "d", "t", "t", "na", "ve"]
    assert rouge_tokenize("It's 2 o'clock") == ["it", "s", "2", "o", "clock"]


def _lcs_dp(a: list[int], b: list[int]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def test_lcs_bit_parallel_matches_dp() -> None:
    rng = random.Random(3)
    for _ in range(200):
        a = [rng.randrange(4) for _ in range(rng.randint(0, 150))]  # > 64: multi-word ints
        b = [rng.randrange(4) for _ in range(rng.randint(0, 150))]
        assert lcs_length(a, b) == _lcs_dp(a, b)
