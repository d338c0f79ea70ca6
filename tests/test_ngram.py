"""Golden, hand-checked tests of the set-level lexical (n-gram) metrics, degenerate rows included.

Parity with the `diversity` package (Shaib et al. 2024) uses values frozen by
``tests/fixtures/make_lexical_fixtures.py`` into ``tests/fixtures/lexical_diversity_pkg.json``.
"""

from __future__ import annotations

import gzip
import json
import lzma
import math
import random
import zlib
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.engine.registry import get_metric
from divmeter.metrics import ngram as lexical
from divmeter.metrics.ngram import (
    compression_ratio,
    distinct_n,
    ead,
    entropy_n,
    ngram_cosine,
    ngram_diversity,
    self_repetition,
)
from divmeter.testing import formula

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LN2 = math.log(2)
EMPTY_SET = "empty set"
NO_TOKENS = "no tokens in any response"


def _value(fn: Any, texts: list[str], **kw: Any) -> float | None:
    return fn(texts, **kw).value  # type: ignore[no-any-return]


def _kernel(fn: Any) -> Any:
    """The registered function behind a public one: the formula on a set the rule for
    degenerate sets makes null (fewer than two non-blank responses) through the public one."""
    return lambda texts, **kw: formula(fn, texts, **kw)


RULE_1 = "fewer than two non-blank responses (got 1)"
RULE_0 = "fewer than two non-blank responses (got 0)"


# ---------------------------------------------------------------------------------------------
# golden values: (function, texts, params, expected value)

GOLDEN = [
    # distinct-n: "a b a b" + "a b c" -> unigrams a b a b a b c (3 distinct of 7);
    # bigrams ab ba ab | ab bc (3 distinct of 5)
    (distinct_n, ["a b a b", "a b c"], {"n": 1}, 3 / 7),
    (distinct_n, ["a b a b", "a b c"], {"n": 2}, 0.6),
    (distinct_n, ["a b a b", "a b c"], {"n_max": 2}, (3 / 7 + 0.6) / 2),
    # trigrams aba bab | abc (3 of 3), one 4-gram, no 5-gram
    (distinct_n, ["a b a b", "a b c"], {"n_max": 5}, (3 / 7 + 0.6 + 1 + 1 + 0) / 5),
    (_kernel(distinct_n), ["a b a"], {"n": 1}, 2 / 3),  # the kernel on one response
    (distinct_n, ["a. b\nc", "a bc"], {"n": 1}, 0.5),  # tevet: drop '.' and '\n' -> a bc | a bc
    (distinct_n, ["A a", "a"], {"n": 1, "lowercase": True}, 1 / 3),
    # entropy-n: unigrams of "a b" + "a c": p = (1/2, 1/4, 1/4) -> 1.5 bits
    (entropy_n, ["a b", "a c"], {"n": 1, "base": 2}, 1.5),
    (entropy_n, ["a b", "a c"], {"n": 1, "base": "bits"}, 1.5),
    (entropy_n, ["a b", "a c"], {"n": 1}, 1.5 * LN2),  # nats
    (entropy_n, ["a b", "a c"], {"n": 2, "base": 2}, 1.0),  # ab, ac
    (entropy_n, ["a b", "a c"], {"n_max": 2, "base": 2}, 1.25),
    (entropy_n, ["a b", "a c"], {"n": 1, "base": 10}, 1.5 * math.log10(2)),
    (entropy_n, ["a a", "a a"], {"n": 1}, 0.0),  # one type only
    (_kernel(entropy_n), ["a b c d"], {"n": 1, "base": 2}, 2.0),  # one response, 4 types
    # ead: N / (V (1 - ((V-1)/V)^C)); unigrams of "a b" + "a c": N=3, C=4
    (ead, ["a b", "a c"], {"n": 1, "vocab_size": 2}, 3 / (2 * (1 - 0.5**4))),
    (ead, ["a b", "a c"], {"n": 2, "vocab_size": 2}, 2 / (2 * (1 - 0.5**2))),
    (ead, ["a b", "a c"], {"n_max": 2, "vocab_size": 2}, (1.6 + 4 / 3) / 2),
    # exact rational value; the naive float form loses ~1e-12 relative to cancellation
    (ead, ["a b", "a c"], {"n": 1}, float(3 / (50257 * (1 - Fraction(50256, 50257) ** 4)))),
    (_kernel(ead), ["a b"], {"n": 1, "vocab_size": 1}, 2.0),  # V=1: expectation 1 for C >= 1
    # ngram-cosine: unigram vectors {a,b}, {a,c}, {d}: cosines 1/2, 0, 0
    (ngram_cosine, ["a b", "a c", "d"], {"n": 1}, -1 / 6),
    (ngram_cosine, ["a b", "a c", "d"], {"n": 1, "reduction": "one-minus-mean"}, 5 / 6),
    (ngram_cosine, ["a b", "a c", "d"], {"n": 2}, 0.0),  # no shared bigram
    (ngram_cosine, ["a b", "a c", "d"], {"n_max": 2}, -1 / 12),
    (ngram_cosine, ["a a b", "a b"], {"n": 1}, -3 / math.sqrt(10)),  # (2,1).(1,1)/(√5 √2)
    (ngram_cosine, ["x y", "x y"], {"n_max": 2}, -1.0),  # identical responses
    (_kernel(ngram_cosine), ["a b", ""], {"n": 1}, 0.0),  # empty response: similarity 0
    (ngram_cosine, ["a", "a"], {"n_max": 2}, -0.5),  # n=1: -1; n=2: no bigram -> 0
    # ngram-diversity: sum over n of unique/total, pooled, not crossing responses
    (ngram_diversity, ["a b a", "a b"], {"n_max": 2}, 2 / 5 + 2 / 3),
    (ngram_diversity, ["a b a", "a b"], {}, 2 / 5 + 2 / 3 + 1 + 0),  # n_max=4
    (ngram_diversity, ["a b", "a b"], {"n_max": 2}, 0.5 + 0.5),  # joined would give 0.5 + 2/3
    (_kernel(ngram_diversity), ["a"], {}, 1.0),
    # self-repetition: mean_d ln(1 + sum over distinct n-grams of (df - 1))
    (self_repetition, ["a b c", "a b d", "x y"], {"n": 2}, 2 * LN2 / 3),
    (self_repetition, ["a b a b", "a b"], {"n": 2}, LN2),  # "a b" counted once per response
    (self_repetition, ["a b c d e"] * 3, {}, math.log(5)),  # 2 four-grams, each in 2 others
    (_kernel(self_repetition), ["", ""], {}, 0.0),
    (self_repetition, ["A b c d", "a b c d"], {"lowercase": True}, LN2),
]


@pytest.mark.parametrize(
    ("fn", "texts", "params", "expected"), GOLDEN,
    ids=[f"{g[0].__name__}-{i}" for i, g in enumerate(GOLDEN)],
)
def test_golden_values(fn: Any, texts: list[str], params: dict[str, Any], expected: float
                       ) -> None:
    assert _value(fn, texts, **params) == pytest.approx(expected, rel=1e-12, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# degenerate sets: value None with the reason, or the documented value

DEGENERATE = [  # the public functions: the rule for degenerate sets first
    (distinct_n, [], EMPTY_SET),
    (distinct_n, ["", ""], RULE_0),
    (entropy_n, [], EMPTY_SET),
    (entropy_n, ["", " . \n"], RULE_1),
    (ead, [], EMPTY_SET),
    (ead, ["", ""], RULE_0),
    (ngram_cosine, [], EMPTY_SET),
    (ngram_cosine, ["only one response"], RULE_1),
    (ngram_cosine, ["", "", ""], RULE_0),
    (ngram_diversity, [], EMPTY_SET),
    (ngram_diversity, ["", "   "], RULE_0),
    (compression_ratio, [], EMPTY_SET),
    (compression_ratio, ["", ""], RULE_0),
    (self_repetition, [], EMPTY_SET),
    (self_repetition, ["a b c d e"], RULE_1),
    (entropy_n, [". .", ". ."], NO_TOKENS),  # two non-blank responses: the kernel's reason
]
# the kernels' own checks, for the sets the rule lets through (or a direct kernel call)
KERNEL_DEGENERATE = [
    (distinct_n, ["", ""], NO_TOKENS),
    (entropy_n, ["", " . \n"], NO_TOKENS),
    (ead, ["", ""], NO_TOKENS),
    (ngram_cosine, ["only one response"], "needs at least 2 responses (pairs); got 1"),
    (ngram_cosine, ["", "", ""], NO_TOKENS),
    (ngram_diversity, ["", "   "], NO_TOKENS),
    (compression_ratio, ["", ""], "every response is an empty string"),
    (self_repetition, ["a b c d e"],
     "needs at least 2 responses (repetition across responses); got 1"),
    (entropy_n, [". .", ". ."], NO_TOKENS),  # non-blank, but no tevet token
]


# a single order n longer than every response: null with the reason (issue 16), at once
BEYOND_LONGEST = [
    (distinct_n, ["a", "b"], {"n": 2}, "n = 2 is larger than the longest response (1 tokens): "
     "no 2-grams"),
    (entropy_n, ["a", "b"], {"n": 2}, "n = 2 is larger than the longest response (1 tokens): "
     "no 2-grams"),
    (ead, ["a", "b"], {"n": 2, "vocab_size": 10},
     "n = 2 is larger than the longest response (1 tokens): no 2-grams"),
    (self_repetition, ["a b", "a b"], {}, "n = 4 is larger than the longest response (2 tokens): "
     "no 4-grams"),
    (ngram_cosine, ["a b", "c"], {"n": 3}, "n = 3 is larger than the longest response (2 tokens): "
     "no 3-grams"),
    (distinct_n, ["a b c", "d"], {"n": 10**9}, "n = 1000000000 is larger than the longest "
     "response (3 tokens): no 1000000000-grams"),
]


@pytest.mark.parametrize(("fn", "texts", "params", "reason"), BEYOND_LONGEST,
                         ids=[f"{d[0].__name__}-{i}" for i, d in enumerate(BEYOND_LONGEST)])
def test_order_beyond_longest_response_is_null(fn: Any, texts: list[str],
                                               params: dict[str, Any], reason: str) -> None:
    res = fn(texts, **params)
    assert (res.value, res.reason) == (None, reason)


@pytest.mark.parametrize(("fn", "texts", "reason"), DEGENERATE,
                         ids=[f"{d[0].__name__}-{i}" for i, d in enumerate(DEGENERATE)])
def test_degenerate_sets_are_undefined_with_reason(fn: Any, texts: list[str], reason: str
                                                   ) -> None:
    res = fn(texts)
    assert res.value is None
    assert res.reason == reason
    assert res.signature == fn(["a b", "c d"]).signature  # same recipe, just no value


@pytest.mark.parametrize(("fn", "texts", "reason"), KERNEL_DEGENERATE,
                         ids=[f"{d[0].__name__}-{i}" for i, d in enumerate(KERNEL_DEGENERATE)])
def test_kernels_keep_their_own_degenerate_reasons(fn: Any, texts: list[str], reason: str
                                                   ) -> None:
    res = _kernel(fn)(texts)
    assert (res.value, res.reason) == (None, reason)
    assert res.signature == fn(["a b", "c d"]).signature


def test_one_response_is_null_by_the_rule_but_defined_for_the_kernels() -> None:
    """Diversity needs two texts: the public functions follow the one rule (as
    ``divmeter.score`` does); the pooled kernels still compute their formula on one text."""
    one = ["the cat sat on the mat"]
    for fn in (distinct_n, entropy_n, ead, ngram_diversity, compression_ratio):
        res = fn(one)
        assert (res.value, res.reason) == (None, RULE_1)
        assert res.signature == divmeter.score(one, get_metric_name(fn)).signature
    assert _kernel(distinct_n)(one, n=1).value == pytest.approx(5 / 6)
    for fn in (entropy_n, ead, ngram_diversity, compression_ratio):
        assert _kernel(fn)(one).value is not None


def get_metric_name(fn: Any) -> str:
    return next(s.name for s in divmeter.list_metrics() if s.load() is fn)


# ---------------------------------------------------------------------------------------------
# signatures (exact)

SIGNATURES = [
    (distinct_n, {}, "distinct-n|n:1..5|avg:mean|tok:tevet|case:mixed|v:0.1.0"),
    (entropy_n, {}, "entropy-n|n:1..5|avg:mean|base:e|tok:tevet|case:mixed|v:0.1.0"),
    (entropy_n, {"n": 2, "base": 2}, "entropy-n|n:2|base:2|tok:tevet|case:mixed|v:0.1.0"),
    (entropy_n, {"base": "bits"}, "entropy-n|n:1..5|avg:mean|base:2|tok:tevet|case:mixed|v:0.1.0"),
    (entropy_n, {"base": 1.5}, "entropy-n|n:1..5|avg:mean|base:1.5|tok:tevet|case:mixed|v:0.1.0"),
    (ead, {}, "ead|n:1..5|avg:mean|V:50257|tok:tevet|case:mixed|v:0.1.0"),
    (ead, {"n": 3, "vocab_size": 32000, "tokenizer": "word", "lowercase": True},
     "ead|n:3|V:32000|tok:word|case:lc|v:0.1.0"),
    (ngram_cosine, {},
     "ngram-cosine|n:1..5|avg:mean|sim:cosine-counts|red:neg-mean|tok:tevet|case:mixed|v:0.1.0"),
    (ngram_cosine, {"n_max": 3, "reduction": "one-minus-mean"},
     "ngram-cosine|n:1..3|avg:mean|sim:cosine-counts|red:one-minus-mean|tok:tevet|case:mixed"
     "|v:0.1.0"),
    (ngram_diversity, {}, "ngram-diversity|n:1..4|agg:sum|tok:whitespace|case:mixed|v:0.1.0"),
    (compression_ratio, {}, "compression-ratio|algo:gzip|level:9|sep:space|enc:utf-8|v:0.1.0"),
    (compression_ratio, {"algorithm": "xz", "separator": "\n"},
     "compression-ratio|algo:xz|level:6|sep:newline|enc:utf-8|v:0.1.0"),
    (compression_ratio, {"separator": " | "},
     "compression-ratio|algo:gzip|level:9|sep:U+0020,U+007C,U+0020|enc:utf-8|v:0.1.0"),
    (compression_ratio, {"separator": ""},
     "compression-ratio|algo:gzip|level:9|sep:none|enc:utf-8|v:0.1.0"),
    (self_repetition, {}, "self-repetition|n:4|log:ln|tok:whitespace|case:mixed|v:0.1.0"),
]


@pytest.mark.parametrize(("fn", "params", "sig"), SIGNATURES,
                         ids=[f"{s[0].__name__}-{i}" for i, s in enumerate(SIGNATURES)])
def test_signatures(fn: Any, params: dict[str, Any], sig: str) -> None:
    assert fn(["a b c", "a b d"], **params).signature == sig


def test_registered_under_public_names_in_form_family() -> None:
    names = {
        "entropy-n": entropy_n, "ead": ead, "ngram-cosine": ngram_cosine,
        "ngram-diversity": ngram_diversity, "compression-ratio": compression_ratio,
        "self-repetition": self_repetition, "distinct-n": distinct_n,
    }
    for name, fn in names.items():
        spec = get_metric(name)
        assert spec.family == "form"
        assert spec.load() is fn
    res = divmeter.score(["a b", "a c", "d"], "ngram-cosine:n=1")
    assert res.value == pytest.approx(-1 / 6)


# ---------------------------------------------------------------------------------------------
# errors


ERRORS = [
    (entropy_n, {"base": 1}, r"`base` of entropy-n must be 'e', 'bits' or a number > 0 other "
                             r"than 1; got 1\."),
    (entropy_n, {"base": "nat"}, r"`base` of entropy-n must be .*; got 'nat'\."),
    (entropy_n, {"n_max": 0},
     r"`n_max` of entropy-n must be an integer >= 1 and <= 100; got 0\."),
    (ead, {"vocab_size": 0}, r"`vocab_size` of ead must be an integer >= 1; got 0\."),
    (ead, {"n": 1.5}, r"`n` of ead must be an integer >= 1; got 1\.5\."),
    (ngram_cosine, {"reduction": "mean"},
     r"`reduction` of ngram-cosine must be one of neg-mean, one-minus-mean; got 'mean'\."),
    (ngram_cosine, {"tokenizer": "bpe"}, r"unknown tokenizer 'bpe'"),
    (ngram_diversity, {"n_max": -1}, r"`n_max` of ngram-diversity must be an integer >= 1"),
    (compression_ratio, {"algorithm": "zip"},
     r"`algorithm` of compression-ratio must be one of gzip, xz; got 'zip'\."),
    (compression_ratio, {"separator": 0},
     r"`separator` of compression-ratio must be a string; got int\."),
    (self_repetition, {"n": 0}, r"`n` of self-repetition must be an integer >= 1; got 0\."),
]


@pytest.mark.parametrize(("fn", "params", "match"), ERRORS,
                         ids=[f"{e[0].__name__}-{i}" for i, e in enumerate(ERRORS)])
def test_errors(fn: Any, params: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        fn(["a b", "c d"], **params)


def test_bare_string_and_non_string_items_are_errors() -> None:
    with pytest.raises(InvalidInputError, match="got a single str"):
        compression_ratio("abc")
    with pytest.raises(InvalidInputError, match=r"`responses\[1\]` must be a string; got float"):
        ngram_cosine(["a", float("nan")])  # type: ignore[list-item]


# ---------------------------------------------------------------------------------------------
# compression ratio: exact byte counts


def test_compression_ratio_bytes_gzip_and_xz() -> None:
    texts = ["the cat sat on the mat"] * 20
    data = " ".join(texts).encode("utf-8")
    assert len(data) == 20 * 22 + 19
    g = compression_ratio(texts)
    assert g.details == {"original_bytes": 459, "compressed_bytes": len(gzip.compress(data, 9))}
    assert g.value == 459 / len(gzip.compress(data, 9))
    x = compression_ratio(texts, algorithm="xz")
    assert x.details["compressed_bytes"] == len(lzma.compress(data))
    assert x.value == 459 / len(lzma.compress(data))


def test_compression_ratio_separator_and_utf8() -> None:
    assert compression_ratio(["ab", "cd"], separator="\n").details["original_bytes"] == 5
    assert compression_ratio(["ab", "cd"], separator="").details["original_bytes"] == 4
    assert compression_ratio(["é", "ü"]).details["original_bytes"] == 5  # 2 + 1 + 2 bytes
    # more repetition -> higher ratio
    assert compression_ratio(["same words here"] * 30).value > compression_ratio(  # type: ignore[operator]
        [f"text number {i} with token w{i * 7919 % 1000}" for i in range(30)]).value


# ---------------------------------------------------------------------------------------------
# n-gram cosine: the matrix, sparse and linear-time paths agree


def _random_set(seed: int, k: int) -> list[str]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(30)]
    return [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 12))) for _ in range(k)]


def _pairwise_reference(texts: list[str], n: int) -> float:
    """Tevet's definition written out pair by pair (Counter vectors, 0 when nothing shared)."""
    from collections import Counter

    grams = []
    for t in texts:
        toks = [w for w in t.replace(".", "").replace("\n", "").split(" ") if w]
        grams.append(Counter(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)))
    sims = []
    for i in range(len(texts)):
        for j in range(i):
            a, b = grams[i], grams[j]
            dot = sum(a[g] * b[g] for g in a.keys() & b.keys())
            na = math.sqrt(sum(v * v for v in a.values()))
            nb = math.sqrt(sum(v * v for v in b.values()))
            sims.append(dot / (na * nb) if dot else 0.0)
    return -sum(sims) / len(sims)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ngram_cosine_paths_agree(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _random_set(seed, 25)
    want = sum(_pairwise_reference(texts, n) for n in range(1, 6)) / 5
    dense = ngram_cosine(texts).value
    monkeypatch.setattr(lexical, "_DENSE_MAX_CELLS", 0)
    sparse = ngram_cosine(texts).value
    monkeypatch.setattr(lexical, "_COSINE_MATRIX_MAX", 1)
    linear = ngram_cosine(texts).value
    assert dense == pytest.approx(want, abs=1e-12)
    assert sparse == pytest.approx(want, abs=1e-12)
    assert linear == pytest.approx(want, abs=1e-12)


def test_ngram_cosine_large_set_uses_linear_path(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _random_set(7, 2100)  # above the matrix threshold: linear-time identity
    linear = ngram_cosine(texts, n_max=2).value
    monkeypatch.setattr(lexical, "_COSINE_MATRIX_MAX", 10_000)  # force the k x k matrix
    assert linear == pytest.approx(ngram_cosine(texts, n_max=2).value, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# entropy and EAD against direct formulas on random sets


@pytest.mark.parametrize("seed", [3, 4])
def test_entropy_and_ead_match_direct_formulas(seed: int) -> None:
    from collections import Counter

    texts = _random_set(seed, 15)
    for n in (1, 2, 3):
        grams: Counter[tuple[str, ...]] = Counter()
        for t in texts:
            toks = t.split(" ") if t else []
            grams.update(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))
        total = sum(grams.values())
        h = -sum(c / total * math.log2(c / total) for c in grams.values())
        assert entropy_n(texts, n=n, base=2).value == pytest.approx(h, rel=1e-12)
        v = 1000
        e = len(grams) / (v * (1 - ((v - 1) / v) ** total))
        assert ead(texts, n=n, vocab_size=v).value == pytest.approx(e, rel=1e-12)


def _self_repetition_reference(texts: list[str], n: int) -> float:
    """Shaib et al.'s score written out with Python sets."""
    from collections import Counter

    grams = [set(zip(*[t.split()[i:] for i in range(n)], strict=False)) for t in texts]
    df = Counter(g for gs in grams for g in gs)
    return sum(math.log(1 + sum(df[g] - 1 for g in gs)) for gs in grams) / len(texts)


@pytest.mark.parametrize(("vocab", "n"), [(30, 4), (128, 9)])  # direct keys / interned ids
def test_self_repetition_key_paths(vocab: int, n: int) -> None:
    rng = random.Random(vocab)
    words = [f"w{i}" for i in range(vocab)]
    base = [rng.choice(words) for _ in range(40)]
    texts = [" ".join(base[: rng.randint(5, 40)] if rng.random() < 0.5 else
                      [rng.choice(words) for _ in range(rng.randint(0, 40))]) for _ in range(12)]
    texts.append(" ".join(words))  # every token present, so V = vocab
    if n == 9:  # 9 * log2(128) = 63 bits: too wide for direct keys, falls back to NgramIndex
        assert n * math.log2(vocab) >= 62
    assert self_repetition(texts, n=n).value == pytest.approx(
        _self_repetition_reference(texts, n), abs=1e-12)


@pytest.mark.parametrize("n", [5, 9])  # 9 * log2(128) = 63 bits: interned ids, not direct keys
def test_pooled_counts_key_paths(n: int) -> None:
    from collections import Counter

    rng = random.Random(n)
    words = [f"w{i}" for i in range(128)]
    texts = [" ".join(words)] + [" ".join(rng.choice(words[:20]) for _ in range(30))
                                 for _ in range(6)]
    grams: Counter[tuple[str, ...]] = Counter()
    for t in texts:
        toks = t.split()
        grams.update(tuple(toks[i:i + n]) for i in range(len(toks) - n + 1))
    total = sum(grams.values())
    assert distinct_n(texts, n=n).value == pytest.approx(len(grams) / total, rel=1e-12)
    h = -sum(c / total * math.log(c / total) for c in grams.values())
    assert entropy_n(texts, n=n).value == pytest.approx(h, rel=1e-12)
    assert ead(texts, n=n, vocab_size=500).value == pytest.approx(
        len(grams) / (500 * (1 - (499 / 500) ** total)), rel=1e-12)


def test_ead_is_stable_for_huge_counts() -> None:
    # C much larger than V: the expectation tends to V, EAD to N / V
    texts = [" ".join(["a", "b"] * 50_000)]
    assert _kernel(ead)(texts, n=1, vocab_size=2).value == pytest.approx(1.0, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# parity with the `diversity` package (frozen values)


def _pkg() -> list[dict[str, Any]]:
    return json.loads((FIXTURES / "lexical_diversity_pkg.json").read_text())["sets"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("i", range(5))
def test_self_repetition_matches_diversity_package(i: int) -> None:
    rec = _pkg()[i]
    assert self_repetition(rec["texts"]).value == pytest.approx(rec["self_repetition_n4"],
                                                                abs=1e-12)
    assert self_repetition(rec["texts"], n=2).value == pytest.approx(rec["self_repetition_n2"],
                                                                     abs=1e-12)


@pytest.mark.parametrize("i", range(5))
def test_ngram_diversity_matches_package_on_joined_text(i: int) -> None:
    """The package joins documents (n-grams cross boundaries) and rounds to 3 decimals."""
    rec = _pkg()[i]
    joined = [" ".join(rec["texts"])]  # one text: the kernel (the rule makes it null)
    ngd = _kernel(ngram_diversity)
    assert round(ngd(joined).value, 3) == rec["ngram_diversity_n4"]
    assert round(ngd(joined, n_max=2).value, 3) == rec["ngram_diversity_n2"]
    # ours keeps documents apart: a different, named, number
    assert ngram_diversity(rec["texts"]).value != pytest.approx(rec["ngram_diversity_n4"],
                                                                abs=5e-4)


@pytest.mark.parametrize("i", range(5))
def test_compression_ratio_vs_diversity_package(i: int) -> None:
    rec = _pkg()[i]
    texts = rec["texts"]
    # xz: the same number (the package rounds to 3 decimals)
    assert round(compression_ratio(texts, algorithm="xz").value, 3) == rec["compression_xz"]  # type: ignore[arg-type]
    # gzip: the package compresses twice (gzip stream written into a GzipFile named
    # "compressed.gz": 10-byte header + b"compressed\0" + deflate of the stream + 8-byte trailer)
    ours = compression_ratio(texts)
    data = " ".join(texts).encode("utf-8")
    stream = zlib.compress(data, 9, wbits=31)
    assert ours.details["compressed_bytes"] == len(stream)
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    twice = 10 + len(b"compressed\0") + len(co.compress(stream) + co.flush()) + 8
    assert round(len(data) / twice, 3) == rec["compression_gzip"]
    assert ours.value > rec["compression_gzip"]
