"""Core: registry, signatures, tokenizers, n-gram interning, errors, import weight."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

import divmeter
from divmeter.core.errors import InvalidInputError, UnknownMetricError
from divmeter.core.result import Signature, make_signature
from divmeter.engine.registry import column_name, get_metric, parse_metric_arg
from divmeter.inputs.text import NgramIndex, Tokenizer, get_tokenizer


def test_import_does_not_load_heavy_modules() -> None:
    code = (
        "import sys, divmeter; divmeter.list_metrics(); "
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers', 'pandas', "
        "'matplotlib') if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_signature_format() -> None:
    sig = Signature("self-bleu", (("n", 4), ("variant", "corpus"), ("q", float("inf"))), "0.1.0")
    assert str(sig) == "self-bleu|n:4|variant:corpus|q:inf|v:0.1.0"
    assert make_signature("x", a=1.0, b=None, c=True, d=0.5) == "x|a:1|c:yes|d:0.5|v:0.1.0"
    assert sig.as_dict() == {"name": "self-bleu", "n": 4, "variant": "corpus", "q": float("inf"),
                             "version": "0.1.0"}


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("distinct-n", ("distinct-n", {})),
        ("self-bleu:n=3,variant=sentence", ("self-bleu", {"n": 3, "variant": "sentence"})),
        ("vendi-ngram:q=inf", ("vendi-ngram", {"q": float("inf")})),
        ("x:lowercase=true,q=0.5", ("x", {"lowercase": True, "q": 0.5})),
    ],
)
def test_parse_metric_arg(arg: str, expected: tuple[str, dict]) -> None:
    assert parse_metric_arg(arg) == expected


def test_parse_metric_arg_error() -> None:
    with pytest.raises(InvalidInputError, match=r"k=v separated by commas.*got 'n3'"):
        parse_metric_arg("self-bleu:n3")


def test_unknown_metric_suggests() -> None:
    with pytest.raises(UnknownMetricError, match=r"Unknown metric 'distinct'\. Did you mean "
                       r"'distinct-n' or 'distinct-k'\? See `divmeter list`"):
        get_metric("distinct")


def test_unknown_param_rejected() -> None:
    with pytest.raises(InvalidInputError, match=r"has no parameter 'm'; its parameters are: n,"):
        divmeter.score(["a b"], "distinct-n", m=2)


def test_column_name_non_default_params_only() -> None:
    assert column_name("distinct-n", {"n": 2, "n_max": 5}) == "distinct-n:n=2"
    assert column_name("distinct-n", {}) == "distinct-n"


def test_bare_string_rejected() -> None:
    with pytest.raises(InvalidInputError, match=r"list of strings; got a single str"):
        divmeter.score("the cat sat", "distinct-n")
    with pytest.raises(InvalidInputError, match=r"`responses\[1\]` must be a string; got int"):
        divmeter.score(["a", 3], "distinct-n")


@pytest.mark.parametrize(
    ("name", "lower", "text", "tokens"),
    [
        ("tevet", False, "The cat.\nSat  on. the mat", ["The", "catSat", "on", "the", "mat"]),
        ("tevet", True, "A b A", ["a", "b", "a"]),
        ("whitespace", False, "a\tb\n c  d.", ["a", "b", "c", "d."]),
        ("word", False, "Don't stop—well-known, café 3!", ["Don't", "stop", "well-known", "café",
                                                            "3"]),
        ("word", False, "", []),
    ],
)
def test_tokenizers(name: str, lower: bool, text: str, tokens: list[str]) -> None:
    tok = get_tokenizer(name, lower)
    assert tok(text) == tokens
    assert tok.many([text, text]) == [tokens, tokens]
    assert tok.case == ("lc" if lower else "mixed")


def test_unknown_tokenizer() -> None:
    with pytest.raises(InvalidInputError, match=r"unknown tokenizer 'spacy'; expected one of"):
        Tokenizer("spacy")


def _naive_ngrams(docs: list[list[str]], n: int) -> list[tuple[int, tuple[str, ...]]]:
    return [(d, tuple(toks[i:i + n])) for d, toks in enumerate(docs)
            for i in range(len(toks) - n + 1)]


def test_ngram_index_matches_naive_counting() -> None:
    rng = np.random.default_rng(0)
    words = ["a", "b", "c", "d"]
    docs = [[words[i] for i in rng.integers(0, 4, size=int(rng.integers(0, 9)))]
            for _ in range(30)]
    idx = NgramIndex.from_tokens(docs)
    for n in (1, 2, 3, 5, 8):
        ids, doc, m = idx.order(n)
        naive = _naive_ngrams(docs, n)
        assert doc.tolist() == [d for d, _ in naive]
        # same partition of occurrences into equal n-grams
        grams = [g for _, g in naive]
        assert m == len(set(grams))
        mapping: dict[int, tuple[str, ...]] = {}
        for i, g in zip(ids.tolist(), grams, strict=True):
            assert mapping.setdefault(i, g) == g
        assert sorted(Counter(grams).values()) == sorted(idx.pooled_counts(n).tolist())
        assert idx.doc_totals(n).tolist() == [max(len(t) - n + 1, 0) for t in docs]


def test_ngram_index_no_cross_document_ngrams() -> None:
    idx = NgramIndex.from_tokens([["a", "b"], ["c"], [], ["d", "e"]])
    ids, doc, m = idx.order(2)
    assert doc.tolist() == [0, 3] and m == 2
    ids3, doc3, m3 = idx.order(3)
    assert ids3.size == 0 and m3 == 0


def test_ngram_index_order_beyond_every_text_is_empty_at_once() -> None:
    """Issue 16: an order longer than every text has no n-gram; it must not build the orders in
    between (n=10**9 used to run for ever)."""
    idx = NgramIndex.from_tokens([["a", "b", "c"], ["a", "b", "d"]])
    ids, doc, m = idx.order(10**9)
    assert (ids.size, doc.size, m) == (0, 0, 0)
    assert max(idx._orders) == 10**9 and len(idx._orders) == 5  # orders 1..4, then 10**9
    assert idx.order(2)[2] == 3 and idx.pooled_counts(10**9).size == 0


@pytest.mark.parametrize(("old", "new"), [("lexical", "ngram"), ("response", "richness"),
                                          ("icl", "decan")])
def test_renamed_metric_modules_warn_once_and_are_the_same_module(old: str, new: str) -> None:
    """Issue 9 renamed lexical.py -> ngram.py, response.py -> richness.py, icl.py -> decan.py;
    the old paths are the same module objects (``divmeter.metrics.icl.decan_from_surprisal``
    works) and warn with a DeprecationWarning once per process (issue 22)."""
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        f"    import divmeter.metrics.{old} as a\n"
        f"    import divmeter.metrics.{old} as b\n"
        f"    from divmeter.metrics.{old} import __name__ as name\n"
        f"print(a is b is importlib.import_module('divmeter.metrics.{new}'), name)\n"
        "print([(w.category.__name__, str(w.message), w.filename) for w in seen\n"
        "       if issubclass(w.category, DeprecationWarning)])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == f"True divmeter.metrics.{new}"
    assert out[1] == str([("DeprecationWarning", f"divmeter.metrics.{old} is deprecated; "
                           f"import divmeter.metrics.{new} (the same module).", "<string>")])


@pytest.mark.parametrize("granularity", ["set", "response"])
def test_reasons_of_sets_is_the_rule_set_by_set(granularity: str) -> None:
    """The batch verdict (one pass over every text, a verdict per size where no text is blank)
    equals the rule applied to each set alone, with and without blank texts in the batch."""
    from divmeter.core.degenerate import degenerate_reason, reasons_of_sets

    rng = np.random.default_rng(7)
    pool = ["a b", "c", "", " ", "\t\n", "x y z", "\u3000", "d"]
    for blank_ok in (False, True):
        words = pool if blank_ok else [t for t in pool if t.strip()]
        sets = [None if rng.random() < 0.1 else
                [words[j] for j in rng.integers(0, len(words), rng.integers(0, 5))]
                for _ in range(300)]
        got = reasons_of_sets(sets, granularity)
        want = [None if s is None else degenerate_reason(s, granularity) for s in sets]
        assert got == want
        assert any(r is not None for r in got)  # (sizes 0 and 1 are drawn)
