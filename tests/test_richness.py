"""Response-level lexical diversity: ttr, mattr, pattr, response-compression, mtld, hdd, length.

Golden values are worked out by hand in the comments; parity is against the frozen outputs of
lexicalrichness, taaled and lexical-diversity (tests/fixtures/response_parity.json, made by
make_response_fixtures.py) on the same pre-tokenized texts.
"""

from __future__ import annotations

import gzip
import json
import lzma
import math
import random
from math import comb
from pathlib import Path

import numpy as np
import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.text import encode_tokens, get_tokenizer
from divmeter.inputs.text import intern as intern_module
from divmeter.metrics import richness as response_module
from divmeter.metrics.richness import (
    _Encoded,
    hdd,
    length,
    mattr,
    mtld,
    pattr,
    response_compression,
    ttr,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PARITY = json.loads((FIXTURES / "response_parity.json").read_text(encoding="utf-8"))
TEXTS = [row["text"] for row in PARITY["rows"]]
NAMES = ["ttr", "mattr", "pattr", "response-compression", "mtld", "hdd", "length"]


def per(res: divmeter.MetricResult) -> list[float | None]:
    return list(res.details["per_response"])


# --------------------------------------------------------------------------------------------
# golden values (hand-checked)


@pytest.mark.parametrize(
    ("metric", "texts", "params", "expected"),
    [
        # TTR = types / tokens
        ("ttr", ["a b a b", "a b c"], {}, [0.5, 1.0]),
        ("ttr", ["The the", "x"], {}, [1.0, 1.0]),  # case kept by default
        ("ttr", ["The the", "x"], {"lowercase": True}, [0.5, 1.0]),
        ("ttr", ["a, a."], {"tokenizer": "word"}, [0.5]),  # word: ["a", "a"]
        # MATTR: windows of W; texts shorter than W get their TTR
        ("mattr", ["a a b a"], {"window": 3}, [2 / 3]),  # aab 2/3, aba 2/3
        ("mattr", ["a b c a b c"], {"window": 3}, [1.0]),  # every window distinct
        ("mattr", ["a b c a b c"], {"window": 4}, [0.75]),  # abca, bcab, cabc: 3/4 each
        ("mattr", ["a a a a"], {"window": 2}, [0.5]),
        ("mattr", ["a a b b"], {"window": 1}, [1.0]),
        ("mattr", ["a a b b"], {"window": 4}, [0.5]),  # N == W: one window
        ("mattr", ["a a b"], {"window": 50}, [2 / 3]),  # shorter than W: TTR
        ("mattr", ["a b a c c d"], {"window": 3}, [0.75]),  # aba 2/3, bac 1, acc 2/3, ccd 2/3
        # PATTR = types / (L + |L - L_T|)
        ("pattr", ["a b c d"], {"target_length": 5}, [4 / 5]),
        ("pattr", ["a b a b c d"], {"target_length": 5}, [4 / 7]),
        ("pattr", ["a b c"], {"target_length": 3}, [1.0]),
        ("pattr", ["", "a b c"], {"target_length": 3}, [0.0, 1.0]),  # 0 / (0 + 3), 3 / 3
        ("pattr", ["a b"], {}, [2 / 400]),  # default L_T = 400: 2 / (2 + 398)
        # MTLD, threshold 0.72, forward and backward averaged
        # a b a | c a d : factor at "a b a" (2/3 <= .72), rest "c a d" has TTR 1 -> partial 0
        ("mtld", ["a b a c a d"], {}, [6.0]),
        # a a | a a : two factors each way -> 4 / 2
        ("mtld", ["a a a a"], {}, [2.0]),
        # a b c a b | c a b c : 3/5 <= .72 ends a factor; rest TTR 3/4 -> (1 - .75) / .28
        ("mtld", ["a b c a b c a b c"], {}, [9 / (1 + 0.25 / 0.28)]),
        # threshold .5: no factor; partial (1 - 4/6) / .5 = 2/3 each way -> 9
        ("mtld", ["a b a c a d"], {"threshold": 0.5}, [9.0]),
        ("mtld", ["x y z", "a b a"], {}, [None, 3.0]),  # no repetition -> undefined
        # HD-D: sum over types of (1 - C(N-k, n) / C(N, n)) / n
        ("hdd", ["a a b"], {"sample_size": 2}, [(1 + 2 / 3) / 2]),
        ("hdd", ["a b"], {"sample_size": 2}, [1.0]),
        # a:3 b:2 c,d,e:1, N=8, n=3: (1-10/56) + (1-20/56) + 3(1-35/56) = 145/56, / 3
        ("hdd", ["a a a b b c d e"], {"sample_size": 3}, [145 / 168]),
        ("hdd", ["a b"], {"sample_size": 3}, [None]),  # N < n
        # length
        ("length", ["a  b c", "été", ""], {}, [3.0, 1.0, 0.0]),
        ("length", ["a  b c", "été", ""], {"unit": "bytes"}, [6.0, 5.0, 0.0]),
        ("length", ["don't stop"], {"tokenizer": "word"}, [2.0]),
    ],
)
def test_golden(metric: str, texts: list[str], params: dict, expected: list) -> None:
    res = divmeter.score(texts, metric, **params)
    got = per(res)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        if e is None:
            assert g is None
        else:
            assert g == pytest.approx(e, rel=1e-12, abs=1e-15)


def test_hdd_matches_exact_combinatorics() -> None:
    rng = random.Random(3)
    words = rng.choices("abcdefghijklmnop", weights=range(16, 0, -1), k=90)
    res = hdd([" ".join(words)])
    n_tok, n = len(words), 42
    expected = sum(
        (1 - comb(n_tok - k, n) / comb(n_tok, n)) / n
        for k in (words.count(w) for w in set(words))
    )
    assert per(res)[0] == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("algorithm", ["gzip", "xz"])
def test_response_compression_against_stdlib(algorithm: str) -> None:
    texts = ["the cat sat on the mat " * 30, "a b c d e f g", "x"]
    res = response_compression(texts, algorithm=algorithm, truncate=None)

    def ratio(s: str) -> float:
        b = " ".join(s.split()).encode("utf-8")
        c = gzip.compress(b) if algorithm == "gzip" else lzma.compress(b)
        return len(b) / len(c)

    assert per(res) == [ratio(t) for t in texts]


def test_response_compression_truncates_to_first_words() -> None:
    text = " ".join(f"w{i}" for i in range(300))
    first = " ".join(f"w{i}" for i in range(128))
    assert per(response_compression([text])) == per(response_compression([first],
                                                                          truncate=None))
    assert per(response_compression(["a b c d"], truncate=2)) == per(
        response_compression(["a   b"], truncate=None))  # tokens re-joined by single spaces


# --------------------------------------------------------------------------------------------
# set value, alignment, degenerate rows


def test_value_is_mean_of_defined_responses_and_aligned() -> None:
    res = ttr(["a a", "", "a b c d"])
    assert per(res) == [0.5, None, 1.0]
    assert res.value == 0.75
    assert res.details["n_defined"] == 2


def test_per_response_value_does_not_depend_on_the_rest_of_the_set() -> None:
    # MATTR, MTLD and HD-D process the whole set at once; each response must come out the same
    alone = {name: [per(divmeter.score([t], name))[0] for t in TEXTS]
             for name in ("mattr", "mtld", "hdd")}
    for name, values in alone.items():
        assert per(divmeter.score(TEXTS, name)) == values, name
        assert per(divmeter.score(TEXTS[::-1], name)) == values[::-1], name


DEGENERATE = {
    # metric: (empty strings -> value, one word -> value); blank responses only: null for every
    # metric by the one rule for degenerate sets (issue 16, divmeter.engine.batch)
    "ttr": (None, 1.0),
    "mattr": (None, 1.0),
    "pattr": (None, 1 / 400),  # 1 / (1 + 399)
    "response-compression": (None, 1 / len(gzip.compress(b"a"))),
    "mtld": (None, None),
    "hdd": (None, None),
    "length": (None, 1.0),
}


@pytest.mark.parametrize("metric", NAMES)
def test_degenerate_rows(metric: str) -> None:
    empty = divmeter.score([], metric)
    assert empty.value is None and empty.reason == "empty set"
    assert empty.details["per_response"] == []
    blank_value, one_word_value = DEGENERATE[metric]
    blank = divmeter.score(["", "  "], metric)
    one = divmeter.score(["a"], metric)
    for res, want in ((blank, blank_value), (one, one_word_value)):
        if want is None:
            assert res.value is None and res.reason
        else:
            assert res.value == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize(
    ("metric", "texts", "reason"),
    [
        ("ttr", ["", ""], "no non-blank response"),  # the rule of divmeter.engine.batch (issue 16)
        ("mtld", ["a b c", "d"], "no response has a repeated word (MTLD is undefined without "
         "a repetition)"),
        ("hdd", ["a b c"], "every response has fewer than sample_size=42 tokens"),
    ],
)
def test_undefined_reasons(metric: str, texts: list[str], reason: str) -> None:
    res = divmeter.score(texts, metric)
    assert res.value is None
    assert res.reason == reason


def test_mattr_short_texts_are_counted() -> None:
    res = mattr(["a b a", "a b " * 30, ""], window=5)
    assert res.details["n_short"] == 1  # the empty response is undefined, not short
    assert per(res)[0] == pytest.approx(2 / 3)
    assert per(res)[1] == pytest.approx(0.4)  # every window of "a b a b a ..." has 2 types
    assert per(res)[2] is None


def test_bare_string_is_rejected() -> None:
    for fn in (ttr, mattr, pattr, response_compression, mtld, hdd, length):
        with pytest.raises(InvalidInputError, match="list of strings; got a single str"):
            fn("one text")  # type: ignore[operator]


# --------------------------------------------------------------------------------------------
# signatures and errors


@pytest.mark.parametrize(
    ("metric", "params", "signature"),
    [
        ("ttr", {}, "ttr|tok:whitespace|case:mixed|v:0.1.0"),
        ("ttr", {"tokenizer": "word", "lowercase": True}, "ttr|tok:word|case:lc|v:0.1.0"),
        ("mattr", {}, "mattr|window:50|short:ttr|tok:whitespace|case:mixed|v:0.1.0"),
        ("mattr", {"window": 32}, "mattr|window:32|short:ttr|tok:whitespace|case:mixed|v:0.1.0"),
        ("pattr", {}, "pattr|target_length:400|tok:whitespace|case:mixed|v:0.1.0"),
        ("pattr", {"target_length": 200, "tokenizer": "tevet"},
         "pattr|target_length:200|tok:tevet|case:mixed|v:0.1.0"),
        ("response-compression", {},
         "response-compression|algo:gzip|level:9|trunc:128|tok:whitespace|case:mixed|v:0.1.0"),
        ("response-compression", {"algorithm": "xz", "truncate": None},
         "response-compression|algo:xz|level:6|trunc:all|tok:whitespace|case:mixed|v:0.1.0"),
        ("mtld", {}, "mtld|threshold:0.72|dir:bi|tok:whitespace|case:mixed|v:0.1.0"),
        ("mtld", {"threshold": 0.5}, "mtld|threshold:0.5|dir:bi|tok:whitespace|case:mixed|v:0.1.0"),
        ("hdd", {}, "hdd|sample:42|tok:whitespace|case:mixed|v:0.1.0"),
        ("length", {}, "length|unit:words|tok:whitespace|case:mixed|v:0.1.0"),
        ("length", {"unit": "bytes"}, "length|unit:bytes|v:0.1.0"),
    ],
)
def test_signatures(metric: str, params: dict, signature: str) -> None:
    assert divmeter.score(["a b a"], metric, **params).signature == signature


@pytest.mark.parametrize(
    ("metric", "params", "message"),
    [
        ("mattr", {"window": 0}, r"^`window` of mattr must be an integer >= 1; got 0\.$"),
        ("mattr", {"window": 2.5}, r"^`window` of mattr must be an integer >= 1; got 2\.5\.$"),
        ("pattr", {"target_length": 0},
         r"^`target_length` of pattr must be an integer >= 1; got 0\.$"),
        ("response-compression", {"algorithm": "zip"},
         r"^`algorithm` of response-compression must be one of gzip, xz; got 'zip'\.$"),
        ("response-compression", {"truncate": 0},
         r"^`truncate` of response-compression must be an integer >= 1; got 0\.$"),
        ("mtld", {"threshold": 1.0},
         r"^`threshold` of mtld must be a number strictly between 0 and 1; got 1\.0\.$"),
        ("mtld", {"threshold": True},
         r"^`threshold` of mtld must be a number strictly between 0 and 1; got True\.$"),
        ("hdd", {"sample_size": 0}, r"^`sample_size` of hdd must be an integer >= 1; got 0\.$"),
        ("length", {"unit": "chars"},
         r"^`unit` of length must be one of words, bytes; got 'chars'\.$"),
        ("ttr", {"tokenizer": "spacy"}, r"^unknown tokenizer 'spacy'"),
        ("ttr", {"window": 5}, r"metric 'ttr' has no parameter 'window'"),
    ],
)
def test_errors(metric: str, params: dict, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        divmeter.score(["a b"], metric, **params)


def test_registry_metadata() -> None:
    specs = {s.name: s for s in divmeter.list_metrics() if s.name in NAMES}
    assert set(specs) == set(NAMES)
    for spec in specs.values():
        assert spec.family == "form" and spec.granularity == "response"
        assert spec.params["tokenizer"] == "whitespace" and spec.params["lowercase"] is False
    assert specs["response-compression"].higher_is_more_diverse is False
    assert "a length, not a diversity" in specs["length"].description
    assert specs["mattr"].params["window"] == 50
    assert specs["pattr"].params["target_length"] == 400
    assert specs["response-compression"].params["truncate"] == 128


def test_cli_style_metric_argument() -> None:
    res = divmeter.score(["a b c d"], "pattr:target_length=5")
    assert res.value == pytest.approx(0.8)


# --------------------------------------------------------------------------------------------
# parity with the peer libraries (frozen fixture, same tokens)


def _peer_rows() -> list[tuple[int, int, dict]]:
    return [(i, len(row["text"].split()), row["peers"]) for i, row in enumerate(PARITY["rows"])]


def test_parity_ttr() -> None:
    ours = per(ttr(TEXTS))
    for i, _, peers in _peer_rows():
        assert ours[i] == pytest.approx(peers["lexicalrichness"]["ttr"], abs=1e-9)
        assert ours[i] == pytest.approx(peers["lexical_diversity"]["ttr"], abs=1e-9)


@pytest.mark.parametrize("window", PARITY["windows"])
def test_parity_mattr(window: int) -> None:
    """Same definition in all three; for texts shorter than W (no full window) we give the TTR
    of the whole text like taaled and lexical-diversity, while lexicalrichness raises."""
    ours = per(mattr(TEXTS, window=window))
    n_checked = 0
    for i, n, peers in _peer_rows():
        assert ours[i] == pytest.approx(peers["taaled"]["mattr"][str(window)], abs=1e-9)
        assert ours[i] == pytest.approx(peers["lexical_diversity"]["mattr"][str(window)], abs=1e-9)
        lr = peers["lexicalrichness"]["mattr"][str(window)]
        if n >= window:
            assert ours[i] == pytest.approx(lr, abs=1e-9)
            n_checked += 1
        else:
            assert lr is None
    assert n_checked >= 20


def test_parity_hdd() -> None:
    """Same definition in all three for texts of >= 42 tokens. Shorter texts: we give None,
    lexicalrichness raises, taaled and lexical-diversity return 0 (a swallowed division by
    zero)."""
    ours = per(hdd(TEXTS))
    n_checked = 0
    for i, n, peers in _peer_rows():
        if n >= 42:
            for lib in ("lexicalrichness", "taaled", "lexical_diversity"):
                assert ours[i] == pytest.approx(peers[lib]["hdd"], abs=1e-9), lib
            n_checked += 1
        else:
            assert ours[i] is None
            assert peers["lexicalrichness"]["hdd"] is None
            assert peers["taaled"]["hdd"] == 0.0 and peers["lexical_diversity"]["hdd"] == 0.0
    assert n_checked >= 20


def test_parity_mtld_lexicalrichness() -> None:
    """Ours is McCarthy & Jarvis's MTLD as lexicalrichness implements it (factor ends when TTR
    <= 0.72, no minimum factor length, partial last factor, mean of both directions). Texts
    without any repetition have no factor at all: we return None (MTLD is unbounded there),
    lexicalrichness falls back to the text length."""
    ours = per(mtld(TEXTS))
    n_checked = 0
    for i, n, peers in _peer_rows():
        lr = peers["lexicalrichness"]["mtld"]
        if ours[i] is None:
            assert len(set(TEXTS[i].split())) == n
            assert lr == n
        else:
            assert ours[i] == pytest.approx(lr, abs=1e-9)
            n_checked += 1
    assert n_checked >= 40


def test_mtld_differs_from_taaled_and_lexical_diversity_variant() -> None:
    """taaled (MTLD-original) and lexical-diversity end a factor only when TTR < 0.72 *and* it
    has >= 10 tokens (Kyle's variant), so they differ from McCarthy & Jarvis's definition on
    repetitive texts; both agree with each other."""
    ours = per(mtld(TEXTS))
    differs = 0
    for i, _, peers in _peer_rows():
        tl, ld = peers["taaled"]["mtld_original"], peers["lexical_diversity"]["mtld"]
        assert tl == pytest.approx(ld, abs=1e-9)
        if ours[i] is not None and not math.isclose(ours[i], tl, abs_tol=1e-9):
            differs += 1
    assert differs >= 10


# --------------------------------------------------------------------------------------------
# the whitespace fast path (numpy, from UTF-8 bytes) gives exactly the dictionary encoding's answers

FAST_TEXTS = [
    "a  b\tc\nd\x0be\x0cf\rg\x1ch\x1di\x1ej k a b",  # ASCII whitespace str.split() knows
    "  leading and trailing  ",
    "",
    "   ",
    "Aa aA AA aa aa",
    "supercalifragilistic supercalifragilisticX supercalifragilistic x x",
    "abcdefgh abcdefghi abcdefgh abcdefghi",  # 8 vs 9 bytes: one and two packed words
    "A man, a plan, a canal: Panama! 42 42.0",
    "caf\u00e9 \u2018quoted\u2019 na\u00efve \u2014 caf\u00e9 cafe",  # UTF-8, 2-3 byte characters
    "\u65e5\u672c\u8a9e \u30c6\u30ad\u30b9\u30c8 \u65e5\u672c\u8a9e "
    "\U0001f642 \U0001f642 \u00c9T\u00c9",  # CJK, an emoji (4 bytes), case
]


def _python_path(texts: list[str], lowercase: bool) -> _Encoded:
    ids, lengths, _ = encode_tokens(get_tokenizer("whitespace", lowercase).many(texts))
    return _Encoded(ids, lengths)


@pytest.mark.parametrize("lowercase", [False, True])
def test_fast_path_matches_dictionary_encoding(lowercase: bool) -> None:
    fast = _Encoded._fast(FAST_TEXTS, "whitespace", lowercase)
    assert fast is not None
    slow = _python_path(FAST_TEXTS, lowercase)
    assert fast.lengths.tolist() == [len((t.lower() if lowercase else t).split())
                                     for t in FAST_TEXTS]
    for a, b in zip(fast.neighbours(), slow.neighbours(), strict=True):
        assert a.tolist() == b.tolist()
    assert sorted(zip(*[x.tolist() for x in fast.type_counts()], strict=True)) == sorted(
        zip(*[x.tolist() for x in slow.type_counts()], strict=True))


def test_fast_path_declines_and_the_fallback_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    for space in ("\u00a0", "\u3000", "\u2009", "\x85"):  # non-ASCII whitespace: a space
        assert _Encoded._fast([f"a{space}b a"], "whitespace", False) is not None
        assert per(ttr([f"a{space}b a"])) == per(mattr([f"a{space}b a"], window=3)) == [2 / 3]
    assert _Encoded._fast(["x" * 65 + " y"], "whitespace", False) is None  # token over 64 bytes
    assert _Encoded._fast(["a\x00 a a\x00"], "whitespace", False) is None  # NUL byte
    assert _Encoded._fast(["a\x1fb a"], "whitespace", False) is None  # the text separator
    assert per(mattr(["a\x00 a a\x00", "a\x1fb a"], window=3)) == [2 / 3, 2 / 3]  # fallback
    # identical keys for different tokens (forced collision): detected, dictionary path used
    texts = ["abcdefghX abcdefghY abcdefghX"]
    before = per(mattr(texts, window=2))
    monkeypatch.setattr(intern_module, "_MIX", np.zeros(8, dtype=np.uint64))
    assert _Encoded._fast(texts, "whitespace", False) is None
    assert per(mattr(texts, window=2)) == before == [1.0]


@pytest.mark.parametrize("rounds", [0, 1, 2])
def test_mtld_scalar_finish_gives_the_same_values(monkeypatch: pytest.MonkeyPatch,
                                                   rounds: int) -> None:
    """After _MTLD_ROUNDS vectorised rounds the rest is finished token by token: same numbers."""
    expected = per(mtld(TEXTS))
    monkeypatch.setattr(response_module, "_MTLD_ROUNDS", rounds)
    assert per(mtld(TEXTS)) == expected


def test_mtld_very_repetitive_long_response() -> None:
    # a b a | b a b | ... : a factor every 3 tokens both ways, 6000 tokens -> exactly 3
    assert per(mtld(["a b " * 3000, "x y x"])) == [3.0, 3.0]


def test_hdd_large_sample_closed_form_matches_combinatorics() -> None:
    rng = random.Random(5)
    words = rng.choices([f"w{i}" for i in range(120)], weights=range(120, 0, -1), k=1500)
    n = 300  # above the product form's limit: log-gamma closed form
    expected = sum((1 - comb(1500 - k, n) / comb(1500, n)) / n
                   for k in (words.count(w) for w in set(words)))
    assert per(hdd([" ".join(words)], sample_size=n))[0] == pytest.approx(expected, rel=1e-11)


@pytest.mark.parametrize("collide", [False, True])
def test_hash32_sort_is_the_stable_sort(monkeypatch: pytest.MonkeyPatch, collide: bool) -> None:
    rng = np.random.default_rng(7)
    key = rng.integers(0, 50, 400).astype(np.int64)
    enc = _Encoded(key, np.array([150, 0, 250]))
    if collide:  # every key gets hash32 0: detected, exact stable sort used instead
        monkeypatch.setattr(intern_module, "_MIX", np.zeros(8, dtype=np.uint64))
        assert enc._sort_by_hash32() is None
    order, same = enc.sorted_keys()
    ref_order, ref_same = enc._sort_stable()
    # same grouping (groups may come in another order): every token's next occurrence agrees
    got = dict(zip(order[:-1][same].tolist(), order[1:][same].tolist(), strict=True))
    ref = dict(zip(ref_order[:-1][ref_same].tolist(), ref_order[1:][ref_same].tolist(),
                   strict=True))
    assert got == ref and len(got) == 400 - 50
    assert sorted(order.tolist()) == list(range(400))
