"""Degenerate and non-English text (issue 16, "Degenerate and non-English text"; parameter bounds).

1. One rule for degenerate sets, every registered metric (parametrized from the registry, as in
   tests/test_registry_complete.py): a set with fewer than two non-blank responses is null with
   the reason ``"fewer than two non-blank responses (got k)"`` (``"empty set"`` for no response),
   before the metric's kernel, through :func:`divmeter.score`, :func:`divmeter.score_many` and
   :func:`divmeter.engine.batch.score_sets` alike. Metrics of ``granularity="response"`` are defined
   on one text: they need one non-blank response.
2. One tokenizer contract: a response made only of whitespace has no token under every
   tokenizer (a tab used to be a ``tevet`` token of such a response, so distinct-n counted it
   where ttr and self-BLEU did not); ``whitespace``, ``word`` and ``char`` never give a
   whitespace-only token; ``tevet`` keeps Tevet & Berant's ``split(" ")`` inside a response
   (a tab between spaces is a word), for parity with their published numbers.
3. Scripts written without spaces: a ``char`` tokenizer for every form metric, with distinct-n
   values computed by hand on real Chinese sentences, and one warning per process when a
   space-splitting tokenizer meets such text.
4. Parameter bounds: a single order ``n`` of an n-gram count larger than the longest response
   is null at once (``n=10**9`` included; no timing is asserted); self-BLEU's ``n`` and every
   ``n_max`` are declared ``<= 100`` (refused before the first set above it); self-BLEU on
   responses shorter than ``n`` keeps BLEU's own conventions (a number, as sacrebleu, nltk and
   pycocoevalcap compute it) and the orders of ``n_max`` beyond the longest response count as 0
   (Tevet & Berant 2021's ``averaged_distinct_ngrams``).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.core.params import MAX_ORDER, TEXT_TOKENIZERS
from divmeter.engine.batch import degenerate_reason, score_sets
from divmeter.engine.registry import MetricSpec, column_name, list_metrics
from divmeter.inputs.data import ResponseSet
from divmeter.inputs.text import tokenize
from divmeter.inputs.text.tokenize import TOKENIZERS, Tokenizer, UnspacedScriptWarning

SPECS = list_metrics()

#: The degenerate sets of the rule and the reason every set-level metric gives on each.
DEGENERATE: list[tuple[list[str], str]] = [
    ([], "empty set"),
    ([""], "fewer than two non-blank responses (got 0)"),
    (["x"], "fewer than two non-blank responses (got 1)"),
    (["x", " \t"], "fewer than two non-blank responses (got 1)"),
]
#: The same for metrics defined on one text (``granularity="response"``): ``None`` = scored by
#: the metric's own definition.
DEGENERATE_ONE_TEXT = ["empty set", "no non-blank response", None, None]


def _marks(spec: MetricSpec) -> list[pytest.MarkDecorator]:
    return [getattr(pytest.mark, spec.extra)] if spec.extra else []


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dmcache")


def _params(spec: MetricSpec) -> dict[str, Any]:
    """Parameters that let every metric run offline; the judge points at a closed port, so a
    request (which the rule must prevent) would give a connection-failure reason instead."""
    if spec.family == "judge":
        return {"model": "openai:none", "base_url": "http://127.0.0.1:9", "cache": "none",
                "samples": 1, "max_attempts": 1}
    if spec.name == "decan":
        return {"prompt": "Weather:", "permutations": 2}
    return {}


def _input(spec: MetricSpec, texts: list[str]) -> Any:
    """CDM scores instantiations: each response becomes a one-phrase instantiation."""
    return [[t] for t in texts] if spec.input == "instantiations" else texts


@pytest.mark.parametrize(
    "spec", [pytest.param(s, id=s.name, marks=_marks(s)) for s in SPECS]
)
def test_every_metric_follows_the_one_rule(spec: MetricSpec, cache_dir: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Every registered metric, every entry point: null with the rule's reason and the metric's
    own signature (the one it gives on an empty input)."""
    monkeypatch.setenv("DIVMETER_CACHE", str(cache_dir))
    params = _params(spec)
    one_text = spec.granularity == "response"
    sig = divmeter.score(_input(spec, []), spec.name, **params).signature
    assert sig.startswith(f"{spec.name}|")
    sets = [_input(spec, texts) for texts, _ in DEGENERATE]
    many = divmeter.score_many(sets, spec.name, **params)
    if spec.input == "texts":
        records = list(score_sets([ResponseSet(f"s{i}", s) for i, s in enumerate(sets)],
                                  [(spec.name, params)], with_signatures=True))
    for i, ((texts, reason), want_one) in enumerate(
            zip(DEGENERATE, DEGENERATE_ONE_TEXT, strict=True)):
        want = want_one if one_text else reason
        got = divmeter.score(sets[i], spec.name, **params)
        assert (many[i].value, many[i].reason, many[i].signature) == (
            got.value, got.reason, got.signature), texts
        if want is None:
            continue
        assert got.value is None and got.reason == want, (texts, got)
        assert got.signature == sig
        if spec.input == "texts":
            col = column_name(spec.name, params)
            assert records[i][col] is None
            assert records[i]["reasons"][col] == want
            assert records[i]["signatures"][col] == sig


@pytest.mark.parametrize(
    ("texts", "granularity", "reason"),
    [
        ([], "set", "empty set"),
        (["", " ", "\t\n", "\u00a0\u3000"], "set", "fewer than two non-blank responses (got 0)"),
        (["x", "", "  "], "corpus", "fewer than two non-blank responses (got 1)"),
        (["x", "y"], "set", None),
        (["x", "x"], "set", None),  # two identical responses: diversity 0, not undefined
        ([], "response", "empty set"),
        (["", "\t"], "response", "no non-blank response"),
        (["x", ""], "response", None),
        ("not a list", "set", None),  # left to the metric, which reports it
        ([["a", ""], [" "]], "set", "fewer than two non-blank responses (got 1)"),  # CDM
        ([["a"], ["b", ""]], "set", None),
    ],
)
def test_degenerate_reason(texts: Any, granularity: str, reason: str | None) -> None:
    assert degenerate_reason(texts, granularity) == reason


def test_one_text_metrics_still_score_one_response() -> None:
    """TTR of one response is that response's TTR (defined on one text): 3 types / 4 tokens."""
    res = divmeter.score(["a b a c"], "ttr")
    assert res.value == 0.75
    assert res.details["per_response"] == [0.75]
    blank = divmeter.score(["", " \t"], "ttr")
    assert blank.value is None and blank.reason == "no non-blank response"
    assert blank.details["per_response"] == [None, None]


def test_rule_runs_before_the_kernel() -> None:
    """A set the rule refuses never reaches the metric: the judge on a closed port would answer
    a connection failure, not the rule's reason; a scorable set in the same batch does."""
    params = _params(divmeter.get_metric("judge"))
    got = divmeter.score_many([["only one"], ["a b", "c d"]], "judge", **params)
    assert got[0].reason == "fewer than two non-blank responses (got 1)"
    assert got[1].value is None and "connection" in str(got[1].reason)


# --------------------------------------------------------------------------- tokenizer contract


#: Responses made only of whitespace (Tevet's literal split would keep a word in each but the
#: first: a tab, a no-break space, an em space, a tab left when the newline is removed).
WHITESPACE_ONLY = ["   ", " \u00a0 ", " \u2003 ", "\t\n", " \t\u3000"]
WITH_WORDS = ["a \t b", "a\u3000 b\r\n", "x \x0b\x0c y", " \u00a0 sat.", "\t.\t"]


def _tevet_literal(text: str) -> list[str]:
    """Tevet & Berant's tokenizer as their code writes it (``run_metrics.py``)."""
    return [w for w in text.replace(".", "").replace("\n", "").split(" ") if w]


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@pytest.mark.parametrize("text", WHITESPACE_ONLY + WITH_WORDS)
def test_the_tokenizer_contract(name: str, text: str) -> None:
    """No empty token; no token at all in a whitespace-only response; no whitespace-only token
    but under ``tevet`` (the same through ``__call__``, ``many`` and ``each``)."""
    for lowercase in (False, True):
        toks = Tokenizer(name, lowercase)(text)
        assert all(toks), (name, text, toks)
        if text.isspace():
            assert toks == [], (name, text, toks)
        elif name != "tevet":
            assert not any(t.isspace() for t in toks), (name, text, toks)
        assert toks == Tokenizer(name, lowercase).many([text])[0]
        assert toks == next(Tokenizer(name, lowercase).each([text]))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a \t b", ["a", "\t", "b"]),  # the tab between two spaces is a word
        ("x \x0b\x0c y", ["x", "\x0b\x0c", "y"]),
        ("a\u3000 b\r\n", ["a\u3000", "b\r"]),  # "\n" removed, other whitespace kept
        (" \u00a0 sat.", ["\u00a0", "sat"]),  # the no-break space of Tevet's set ...::00274
        ("\t.\t", ["\t\t"]),  # not whitespace only (a dot): Tevet's split as it is
    ] + [(t, []) for t in WHITESPACE_ONLY],  # whitespace only: no token (Tevet: one or none)
)
def test_tevet_keeps_the_reference_split(text: str, expected: list[str]) -> None:
    """Tevet & Berant 2021's tokenizer inside a response, exactly (their published
    distinct-n column depends on it: tests/test_tevet_parity.py); a response made only of
    whitespace has no token, the one departure, so that it never counts."""
    assert Tokenizer("tevet")(text) == expected
    if not text.isspace():
        assert expected == _tevet_literal(text)


FORM_TEXT = [m.name for m in SPECS if m.family == "form" and "tokenizer" in m.params
             and m.name not in {"hdd", "mtld"}]  # these two need 42 tokens / a repeated word


@pytest.mark.parametrize("metric", FORM_TEXT)
@pytest.mark.parametrize("tok", list(TEXT_TOKENIZERS))
def test_whitespace_only_responses_change_no_value(metric: str, tok: str) -> None:
    """A whitespace-only response gives exactly the values of an empty one, for every form
    metric and tokenizer; so do tabs and no-break spaces between words, except under ``tevet``
    (they are words of Tevet's split: :func:`test_tevet_keeps_the_reference_split`)."""
    params = {"tokenizer": tok}
    clean = ["the cat sat", "the dog sat down", "", "a cat"]
    blank = ["the cat sat", "the dog sat down", " \t\u3000", "a cat"]
    messy = ["the cat \t sat", "the dog \u00a0 sat down \t", "\t\n", "a cat"]
    want = divmeter.score(clean, metric, **params)
    for texts in [blank] if tok == "tevet" else [blank, messy]:
        got = divmeter.score(texts, metric, **params)
        assert (got.value, got.reason, got.signature) == (want.value, want.reason,
                                                          want.signature)
        many = divmeter.score_many([texts, clean], metric, **params)
        assert many[0].value == many[1].value == want.value


@pytest.mark.parametrize(
    ("texts", "metric", "params", "expected"),
    [
        # tokens a b | a \t b: 3 types (a, b, \t) / 5 tokens
        (["a b", "a \t b"], "distinct-n", {"n": 1}, 3 / 5),
        # bigrams (a b) | (a \t) (\t b): 3 types / 3
        (["a b", "a \t b"], "distinct-n", {"n": 2}, 1.0),
        # counts a 2, b 2, \t 1 of 5: H = -(2 * 0.4 ln 0.4 + 0.2 ln 0.2)
        (["a b", "a \t b"], "entropy-n", {"n": 1},
         -(2 * 0.4 * math.log(0.4) + 0.2 * math.log(0.2))),
        # per response 2/2 and 3/4 (a \t \t b: types a, \t, b): mean 0.875
        (["a b", "a \t \t b"], "ttr", {"tokenizer": "tevet"}, (1 + 3 / 4) / 2),
        # the same set under whitespace: a b | a b, 2 types / 4
        (["a b", "a \t b"], "distinct-n", {"n": 1, "tokenizer": "whitespace"}, 2 / 4),
        # a whitespace-only response has no token: a b | a c, 3 types / 4
        (["a b", "\t \u00a0", "a c"], "distinct-n", {"n": 1}, 3 / 4),
    ],
)
def test_tevet_values_keep_the_reference_split(texts: list[str], metric: str,
                                               params: dict[str, Any], expected: float) -> None:
    """Values by hand under Tevet & Berant's split: the tab of ``"a \\t b"`` is a word of its
    own (as in their code), a whitespace-only response counts nothing."""
    got = divmeter.score(texts, metric, **params)
    assert got.value == pytest.approx(expected, rel=1e-15)
    assert divmeter.score_many([texts, ["x y", "y z"]], metric, **params)[0].value == got.value


# --------------------------------------------------------------------------- char tokenizer


ZH = ["今天天气很好。", "今天天气不好。"]


@pytest.mark.parametrize(
    ("texts", "params", "expected"),
    [
        # chars 今 天 天 气 很 好 。 / 今 天 天 气 不 好 。: 7 types (今天气很好。不) / 14
        (ZH, {"n": 1}, 7 / 14),
        # bigrams 今天 天天 天气 气很 很好 好。 / ... 气不 不好 ...: 8 types / 12
        (ZH, {"n": 2}, 8 / 12),
        # trigrams 今天天 天天气 天气很 气很好 很好。 / 天气不 气不好 不好。: 8 / 10
        (ZH, {"n": 3}, 8 / 10),
        # 我喜欢吃苹果。/ 我喜欢吃香蕉。: 9 types / 14 chars; bigrams 9 / 12
        (["我喜欢吃苹果。", "我喜欢吃香蕉。"], {"n": 1}, 9 / 14),
        (["我喜欢吃苹果。", "我喜欢吃香蕉。"], {"n": 2}, 9 / 12),
        # spaces and tabs are no characters of the tokenizer: same as without them
        (["今天 天气\t很好。", "今天天气 不好。"], {"n": 2}, 8 / 12),
        # mean over n = 1..3
        (ZH, {}, (7 / 14 + 8 / 12 + 8 / 10) / 3),
    ],
)
def test_char_distinct_n_on_chinese(texts: list[str], params: dict[str, Any], expected: float
                                    ) -> None:
    """Distinct-n (Li et al. 2016) over character n-grams, counted by hand."""
    p = {"n_max": 3, **params} if "n" not in params else params
    res = divmeter.score(texts, "distinct-n", tokenizer="char", **p)
    assert res.value == pytest.approx(expected, rel=1e-15)
    assert res.signature.endswith("|tok:char|case:mixed|v:0.1.0")
    # the batched kernel and the CLI's column agree
    assert divmeter.score_many([texts, ["x y", "y z"]], "distinct-n", tokenizer="char",
                               **p)[0].value == res.value


def test_space_splitting_tokenizers_see_one_token_per_chinese_sentence() -> None:
    """Why the char tokenizer is needed: under tevet each sentence is one token."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnspacedScriptWarning)
        assert divmeter.score(ZH, "distinct-n", n=1).value == 1.0
        two = divmeter.score(ZH, "distinct-n", n=2)
    assert two.value is None
    assert two.reason == "n = 2 is larger than the longest response (1 tokens): no 2-grams"


def test_char_is_a_tokenizer_of_every_form_metric() -> None:
    for spec in SPECS:
        if spec.family == "form" and "tokenizer" in spec.params:
            assert "char" in (spec.schema["tokenizer"].choices or ()), spec.name
    rec = next(score_sets([ResponseSet("zh", ZH)], ["distinct-n:n=2,tokenizer=char"]))
    assert rec["distinct-n:n=2,tokenizer=char"] == pytest.approx(8 / 12, rel=1e-15)


# --------------------------------------------------------------------------- the warning


@pytest.fixture
def fresh_warning(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The warning is issued once per process: let this test see a process that has not."""
    monkeypatch.setattr(tokenize, "_warned", False)
    yield


@pytest.mark.parametrize(
    ("metric", "tok", "texts"),
    [
        ("distinct-n", "tevet", ZH),  # the batched n-gram path (joined split)
        ("ttr", "whitespace", ZH),  # the numpy path of richness metrics (TokenKeys)
        ("self-bleu", "whitespace", ["彼は毎朝コーヒーを飲みます。", "彼女は毎晩お茶を飲みます。"]),
        ("vendi-ngram", "tevet", ["ฉันชอบกินข้าวผัด", "เขาชอบดื่มกาแฟ"]),
    ],
)
def test_warns_once_when_a_space_splitter_meets_unspaced_script(
        fresh_warning: None, metric: str, tok: str, texts: list[str]) -> None:
    with pytest.warns(UnspacedScriptWarning,
                      match=rf"^tokenizer '{tok}' splits on spaces but the text is mostly "
                            r"Chinese, Japanese or Thai .* use tokenizer=char") as rec:
        divmeter.score(texts, metric, tokenizer=tok)
    assert len([w for w in rec if w.category is UnspacedScriptWarning]) == 1
    assert "\n" not in str(rec[0].message)
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        divmeter.score(texts, metric, tokenizer=tok)
    assert not [w for w in again if w.category is UnspacedScriptWarning]


@pytest.mark.parametrize(
    ("tok", "texts"),
    [
        ("char", ZH),  # the right tokenizer
        ("word", ZH),
        ("tevet", ["Mr 李 went home.", "Ms Müller stayed, naïve café."]),  # a name: 1 char in 10
        ("whitespace", ["안녕하세요 만나서 반갑습니다", "오늘 날씨가 좋네요"]),  # Hangul has spaces
    ],
)
def test_no_warning_otherwise(fresh_warning: None, tok: str, texts: list[str]) -> None:
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        divmeter.score(texts, "distinct-n", tokenizer=tok)
        divmeter.score(texts, "ttr", tokenizer=tok)
    assert not [w for w in rec if w.category is UnspacedScriptWarning]


# --------------------------------------------------------------------------- parameter bounds


HUGE = 10**9
SINGLE_N = [("distinct-n", {}), ("entropy-n", {}), ("ead", {}), ("ngram-cosine", {}),
            ("self-repetition", {})]


@pytest.mark.parametrize(("metric", "params"), SINGLE_N)
def test_huge_n_is_null_at_once(metric: str, params: dict[str, Any]) -> None:
    """``n=10**9`` finishes (at once: no order is enumerated) with null and the reason."""
    texts = ["a b", "a c"]
    reason = f"n = {HUGE} is larger than the longest response (2 tokens): no {HUGE}-grams"
    got = divmeter.score(texts, metric, n=HUGE, **params)
    assert got.value is None and got.reason == reason
    assert divmeter.score_many([texts, texts], metric, n=HUGE, **params)[1].reason == reason


@pytest.mark.parametrize(
    ("texts", "n", "variant", "smooth", "expected"),
    [
        # hypotheses a b / a c, each against the other: 1 of 2 unigrams match, no bigram match
        (["a b", "a c"], 1, "corpus", None, 0.5),
        (["a b", "a c"], 2, "corpus", None, 0.0),
        # no response has 3 tokens: BLEU's conventions, a number (sacrebleu, nltk: 0)
        (["a b", "a c"], 3, "corpus", None, 0.0),
        # nltk method1: p1 = 1/2, p2 = 0.1 / 1, p3 = 0.1 / max(1, 0), BP = 1, both hypotheses
        (["a b", "a c"], 3, "sentence", None, (0.5 * 0.1 * 0.1) ** (1 / 3)),
        # pycocoevalcap: C = (2, 0, 0), T = (4, 2, 0), c = r = 4, ratio = 4 / (4 + 1e-9) < 1
        # so BP = exp(1 - 1 / ratio)
        (["a b", "a c"], 3, "corpus", "coco",
         ((2 + 1e-15) / (4 + 1e-9) * 1e-15 / (2 + 1e-9) * 1e-15 / 1e-9) ** (1 / 3)
         * math.exp(1 - (4 + 1e-9) / (4 + 1e-15))),
        # n = MAX_ORDER on 2-token responses: 0 unsmoothed; method1 p_3..p_100 = 0.1
        (["a b", "a b"], MAX_ORDER, "corpus", None, 0.0),
        (["a b", "a b"], MAX_ORDER, "sentence", None, 0.1 ** (98 / MAX_ORDER)),
    ],
)
def test_self_bleu_beyond_the_longest_response_is_a_number(
        texts: list[str], n: int, variant: str, smooth: str | None, expected: float) -> None:
    """Responses shorter than ``n`` keep BLEU's conventions, as sacrebleu / nltk /
    pycocoevalcap and the papers that report self-BLEU compute them (see
    :mod:`divmeter.metrics.overlap`); only the order is bounded."""
    got = divmeter.score(texts, "self-bleu", n=n, variant=variant, smooth=smooth)
    assert got.value == pytest.approx(expected, rel=1e-12, abs=0.0)
    assert divmeter.score_many([texts, ["x y z w", "x y z v"]], "self-bleu", n=n,
                               variant=variant, smooth=smooth)[0].value == got.value


@pytest.mark.parametrize("variant", ["corpus", "sentence"])
def test_huge_self_bleu_n_is_refused_before_any_set(variant: str) -> None:
    """self-BLEU costs one pass per order: ``n`` is declared ``<= MAX_ORDER`` and refused in
    one line before the first set, by every entry point."""
    msg = rf"`n` of self-bleu must be an integer >= 1 and <= {MAX_ORDER}; got {HUGE}\."
    with pytest.raises(InvalidInputError, match=rf"^{msg}$"):
        divmeter.score(["a b", "a c"], "self-bleu", n=HUGE, variant=variant)
    with pytest.raises(InvalidInputError, match=rf"^metric 'self-bleu:n={HUGE}': {msg}$"):
        list(score_sets([ResponseSet("s", ["a b", "a c"])], [f"self-bleu:n={HUGE}"]))
    with pytest.raises(InvalidInputError, match=rf"^{msg}$"):
        divmeter.get_metric("self-bleu").load()(["a b", "a c"], n=HUGE, variant=variant)
    with pytest.raises(InvalidInputError, match=rf"^{msg}$"):
        divmeter.get_metric("self-bleu").plan({"n": HUGE, "variant": variant})


N_MAX = [s.name for s in SPECS if "n_max" in s.params]


@pytest.mark.parametrize("metric", N_MAX)
def test_huge_n_max_is_refused_before_any_set(metric: str) -> None:
    with pytest.raises(InvalidInputError,
                       match=rf"`n_max` of {metric} must be an integer >= 1 and <= {MAX_ORDER}; "
                             rf"got {HUGE}\."):
        divmeter.score(["a b", "a c"], metric, n_max=HUGE)
    with pytest.raises(InvalidInputError, match=rf"metric '{metric}:n_max={HUGE}'"):
        list(score_sets([ResponseSet("s", ["a b", "a c"])], [f"{metric}:n_max={HUGE}"]))
    fn = divmeter.get_metric(metric).load()  # the public function checks it too
    with pytest.raises(InvalidInputError, match=rf"<= {MAX_ORDER}; got {HUGE}\."):
        fn(["a b", "a c"], n_max=HUGE)


@pytest.mark.parametrize("metric", ["ngram-cosine", "distinct-n", "vendi-ngram"])
def test_batch_of_sets_all_shorter_than_n_max(metric: str) -> None:
    """Regression: ngram-cosine's batched kernel crashed (scipy ValueError, a traceback in the
    CLI) when no set of a batch had an n-gram of some order <= n_max; each set must get
    :func:`divmeter.score`'s value (orders without n-grams: pair similarity 0)."""
    sets = [["the cat sat", "the dog sat down", "", "a cat"], ["a b", "a c"]]
    many = divmeter.score_many(sets, metric)
    for got, s in zip(many, sets, strict=True):
        want = divmeter.score(s, metric)
        assert (got.value, got.reason, got.signature) == (want.value, want.reason,
                                                          want.signature)
    if metric == "ngram-cosine":  # orders 2..5 of ["a b", "a c"]: no shared n-gram
        assert many[1].value == pytest.approx(-1 / 2 / 5, rel=1e-12)


@pytest.mark.parametrize(
    ("n_max", "expected"),
    [
        (2, (3 / 4 + 2 / 2) / 2),  # distinct-1 = 3/4 (a b a c), distinct-2 = 2/2
        (4, (3 / 4 + 2 / 2 + 0 + 0) / 4),  # orders 3 and 4 hold no n-gram: 0 (Tevet's rule)
        (MAX_ORDER, (3 / 4 + 2 / 2) / MAX_ORDER),
    ],
)
def test_orders_beyond_the_longest_response_count_as_zero(n_max: int, expected: float) -> None:
    """Tevet & Berant 2021 (averaged_distinct_ngrams): an order with no n-gram adds 0."""
    got = divmeter.score(["a b", "a c"], "distinct-n", n_max=n_max)
    assert got.value == pytest.approx(expected, rel=1e-15)
    if n_max > 2:
        assert got.details["per_n"][n_max] == 0.0


def test_the_cli_warns_in_one_line(tmp_path: Path) -> None:
    """What a user sees: one stderr line naming the tokenizer and the fix, once per run (two
    Chinese sets), and the scores still written."""
    src = tmp_path / "zh.jsonl"
    src.write_text("".join(json.dumps({"set_id": f"s{i}", "responses": ZH}, ensure_ascii=False)
                           + "\n" for i in range(2)), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-c", "from divmeter.apps.cli import main; main()", "score", str(src),
         "-m", "distinct-n:n=1", "-f", "jsonl"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONWARNINGS": ""})
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines == ["divmeter:0: UnspacedScriptWarning: tokenizer 'tevet' splits on spaces but "
                     "the text is mostly Chinese, Japanese or Thai (written without spaces): "
                     "each sentence is one token; use tokenizer=char for character n-grams."]
    assert [json.loads(ln)["distinct-n:n=1"] for ln in proc.stdout.splitlines()] == [1.0, 1.0]
