"""The byte path of tokenize-and-intern (:mod:`divmeter.inputs.text.intern`) against the dictionary
path.

The byte path finds ``whitespace`` and ``tevet`` tokens in numpy from the UTF-8 bytes and groups
equal tokens by one sort; it must give the same tokens and the same equalities as the tokenizers
of :mod:`divmeter.inputs.text.tokenize` (``str.split()``; Tevet & Berant's split on spaces after
removing ``.`` and ``\\n``), and decline (``None``: the dictionary path runs) where it cannot be
exact.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from divmeter.core.result import MetricResult
from divmeter.engine.registry import get_metric
from divmeter.inputs.text import intern as intern_module
from divmeter.inputs.text import tokenize as tokenize_module
from divmeter.inputs.text.intern import _byte_tokens, intern_sets
from divmeter.inputs.text.tokenize import get_tokenizer


def _many(name: str, sets: list[list[str]], **params: Any) -> list[MetricResult]:
    """Metric ``name``'s formula on every set at once (no rule for degenerate sets)."""
    return get_metric(name).plan(params).score([tuple(t) for t in sets])


TEXTS = [
    "",
    "   ",
    "a b  a\tb\nc",
    "Aa aA AA aa aa.",
    "abcdefgh abcdefghi abcdefgh abcdefghi abcdefghij",  # 8 / 9 / 10 bytes
    "x" * 64 + " " + "x" * 63 + " " + "x" * 64,  # the longest packed tokens
    "A man, a plan. A canal:\nPanama! 42 42.0 .. .",
    "caf\u00e9 \u2018quoted\u2019 na\u00efve \u2014 caf\u00e9 cafe",  # 2-3 byte characters
    "\u65e5\u672c\u8a9e \U0001f642 \U0001f642 \u00c9T\u00c9 \u00e9t\u00e9",
    "ctrl\x01char ctrl\x01char \x1b",  # control bytes inside tokens (not whitespace)
    # whitespace only: no token under either tokenizer (Tevet's split alone would keep a tab)
    " \t ",
    "\t\n",
    "\x0b\x0c",
    # a tab between spaces is a tevet word inside a response with words
    "a \t b \t",
    "\t.\t",
]
SETS = [TEXTS[:4], [], [""], TEXTS[4:], TEXTS[2:7], ["  "], TEXTS[-5:], [" \t ", "\t\n"]]


@pytest.fixture(autouse=True)
def _byte_path_on_small_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The byte path runs from 8,192 characters on; these inputs are smaller."""
    monkeypatch.setattr(intern_module, "_BYTE_MIN_CHARS", 0)


def _dictionary_path(sets: list[list[str]], name: str, lowercase: bool
                     ) -> intern_module.InternedSets:
    """intern_sets with the byte path switched off."""
    saved = intern_module._BYTE_SPLITS
    intern_module._BYTE_SPLITS = {}
    try:
        return intern_module.intern_sets(sets, get_tokenizer(name, lowercase))
    finally:
        intern_module._BYTE_SPLITS = saved


def _sequences(it: intern_module.InternedSets) -> list[list[int]]:
    """Each set's stream with empty words dropped and ids renamed by first appearance."""
    out, pos = [], 0
    for w in it.n_words:
        ids = it.raw[pos:pos + w]
        pos += w
        names: dict[int, int] = {}
        out.append([0 if x == 0 else names.setdefault(x, len(names) + 1)
                     for x in ids.tolist() if x != 1])
    return out


@pytest.mark.parametrize("name", ["whitespace", "tevet"])
@pytest.mark.parametrize("lowercase", [False, True])
def test_byte_path_interns_as_the_dictionary_path(name: str, lowercase: bool) -> None:
    fast = intern_sets(SETS, get_tokenizer(name, lowercase))
    slow = _dictionary_path(SETS, name, lowercase)
    assert fast.longest is not None  # the byte path ran (it records the longest responses)
    assert _sequences(fast) == _sequences(slow)
    assert (fast.n_texts, fast.n_types) == (slow.n_texts, slow.n_types)
    assert fast.longest.tolist() == intern_module._longest(slow).tolist()
    if name == "whitespace":  # no empty words: the very same ids (2 + first occurrence)
        assert fast.raw.tolist() == slow.raw.tolist() and fast.n_words == slow.n_words


@pytest.mark.parametrize("name", ["whitespace", "tevet"])
def test_byte_tokens_are_the_tokenizer_tokens(name: str) -> None:
    bt = _byte_tokens(TEXTS, name)
    assert bt is not None
    tok = get_tokenizer(name)
    words = [w for t in TEXTS for w in tok(t)]
    assert bt.lengths.tolist() == [len(tok(t)) for t in TEXTS]
    # tokens in one group are equal, tokens in different groups differ
    groups = np.cumsum(np.concatenate(([0], ~bt.same)))
    got = {}
    for g, i in zip(groups.tolist(), bt.order.tolist(), strict=True):
        got.setdefault(g, set()).add(words[i])
    assert all(len(v) == 1 for v in got.values())
    assert len(got) == len(set(words))
    # within a group, positions ascend (first occurrence first)
    starts = np.flatnonzero(np.concatenate(([True], ~bt.same)))
    for a, b in zip(starts.tolist(), [*starts[1:].tolist(), len(words)], strict=True):
        assert bt.order[a:b].tolist() == sorted(bt.order[a:b].tolist())


@pytest.mark.parametrize("texts, why", [
    (["a\x00b a"], "NUL byte"),
    (["a\x1fb a"], "whitespace separator inside a text"),
    (["x" * 65 + " y"], "token over 64 bytes"),
])
def test_byte_path_declines_where_it_cannot_be_exact(texts: list[str], why: str) -> None:
    assert _byte_tokens(texts, "whitespace") is None, why
    sets = [texts, ["a a b", "a b"]]
    assert _sequences(intern_sets(sets, get_tokenizer("whitespace"))) == _sequences(
        _dictionary_path(sets, "whitespace", False))


def test_non_ascii_whitespace_splits_as_str_split() -> None:
    """Non-ASCII whitespace (no-break space, em space, ideographic space, NEL ...) becomes a
    space before the byte paths read the text (issue 32: one such character made a whole batch
    take the dictionary path): ``whitespace`` tokens stay ``str.split()``'s."""
    texts = ["a\u00a0b a", "\u3000x\u2003y\u0085z", "caf\u00e9 \u00a0\u2029 caf\u00e9", ""]
    assert _byte_tokens(texts, "whitespace") is not None
    sets = [texts, ["a a b", "a\u202fb"]]
    assert _sequences(intern_sets(sets, get_tokenizer("whitespace"))) == _sequences(
        _dictionary_path(sets, "whitespace", False))


#: Non-ASCII whitespace (a space to the whitespace byte path, as to str.split(); tevet's keeps it
#: inside words).
TEVET_TEXTS = [" \u00a0 ", "a \u00a0 b", "\u3000\t", "a \t b", " \t ", "\t\n", "x",
               "\u00a0sat \u2003 \u00a0sat"]


@pytest.mark.parametrize("lowercase", [False, True])
def test_tevet_whitespace_only_texts_have_no_token(lowercase: bool) -> None:
    """The tokenizer contract on the byte path: a whitespace-only text has no token; a tab or
    a no-break space between spaces in a text with words is a word (Tevet's split)."""
    bt = _byte_tokens(TEVET_TEXTS, "tevet")
    assert bt is not None
    tok = get_tokenizer("tevet", lowercase)
    # by hand: [], [a, \xa0, b], [], [a, \t, b], [], [], [x], [\xa0sat, \u2003, \xa0sat]
    assert bt.lengths.tolist() == [len(tok(t)) for t in TEVET_TEXTS] == [0, 3, 0, 3, 0, 0, 1, 3]
    sets = [TEVET_TEXTS[:4], TEVET_TEXTS[4:], [" \u00a0 ", "\u3000\t"]]
    fast = intern_sets(sets, tok)
    slow = _dictionary_path(sets, "tevet", lowercase)
    assert fast.longest is not None
    assert _sequences(fast) == _sequences(slow)
    assert (fast.n_texts, fast.n_types) == (slow.n_texts, slow.n_types) == (
        [4, 4, 2], [4, 3, 0])  # a \xa0 b \t | x \xa0sat \u2003 | none
    assert fast.longest.tolist() == intern_module._longest(slow).tolist() == [3, 3, 0]


def test_tevet_declines_on_nul_only() -> None:
    assert _byte_tokens(["a\x00b a"], "tevet") is None
    assert _byte_tokens(["a\x1fb\u00a0c a\x1fb\u00a0c"], "tevet") is not None


def test_hash_collisions_are_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every key forced to hash32 0 and every long token to its first 8 bytes: the exact
    argsort replaces the hash sort, and tokens over 8 bytes that share their first 8 bytes are
    told apart by comparing bytes (the byte path declines)."""
    texts = ["b a c a b", "abcdefghX abcdefghY abcdefghX"]
    monkeypatch.setattr(intern_module, "_MIX", np.zeros(8, dtype=np.uint64))
    bt = _byte_tokens(texts[:1], "whitespace")
    assert bt is not None
    assert bt.order.tolist() == [1, 3, 0, 4, 2] and bt.same.tolist() == [True, False, True,
                                                                         False]
    assert _byte_tokens(texts, "whitespace") is None
    assert [r.value for r in _many("self-repetition", [texts[1:] * 2], n=1)] == [
        pytest.approx(np.log(3))]  # the dictionary path: 2 distinct tokens, each in both


def test_small_batches_take_the_dictionary_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(intern_module, "_BYTE_MIN_CHARS", 8192)
    tok = get_tokenizer("whitespace")
    assert intern_sets([["a b"] * 10], tok).longest is None  # 30 characters: dictionary path
    assert intern_sets([["a b"] * 3000], tok).longest is not None  # 9,000: byte path


def test_kernels_agree_with_the_dictionary_path() -> None:
    """distinct counts and self-repetition from the byte path equal the dictionary path's."""
    sets = [list(s) for s in SETS if s] + [["p q r s", "p q r s t", "q r s t"]]
    fast = [(r.value, r.details) for r in _many("ngram-diversity", sets, n_max=3)]
    fast_rep = [(r.value, r.reason) for r in _many("self-repetition", sets, n=2)]
    saved = intern_module._BYTE_SPLITS
    intern_module._BYTE_SPLITS = {}
    try:
        slow = [(r.value, r.details) for r in _many("ngram-diversity", sets, n_max=3)]
        slow_rep = [(r.value, r.reason) for r in _many("self-repetition", sets, n=2)]
    finally:
        intern_module._BYTE_SPLITS = saved
    assert fast == slow and fast_rep == slow_rep


# --------------------------------------------------------------------------- non-ASCII bytes

_MIXED = ["a", " ", "\u00a0", "\u0085", "\u2003", "\u3000", "\u0e01", "\u00e9", "\u1680",
          "\u2028", "\u205f", "\u4e00", "\U0001f600", "\u200b", "\u202f", "\u200a", "\u0100"]


def _non_ascii_reference(data: bytes) -> tuple[bytes, list[int]]:
    """The definition, a character at a time: every non-ASCII whitespace character that
    ``str.split()`` splits on becomes as many spaces as it has bytes; the offsets of the
    characters of the scripts written without spaces."""
    out, unspaced, at = bytearray(), [], 0
    for ch in data.decode():
        enc = ch.encode()
        if ord(ch) > 127 and ch.isspace():
            enc = b" " * len(enc)
        if tokenize_module._UNSPACED.match(ch):
            unspaced.append(at)
        out += enc
        at += len(enc)
    return bytes(out), unspaced


def test_non_ascii_bytes_equal_their_definition() -> None:
    """The word-at-a-time search for lead bytes and the table lookups of space codes give what
    a character-by-character pass gives, at every length around the 8-byte words."""
    rng = np.random.default_rng(7)
    for size in [*range(1, 20), 31, 64, 257]:
        for _ in range(20):
            text = "".join(rng.choice(_MIXED, size=size).tolist())
            data = text.encode()
            want, offsets = _non_ascii_reference(data)
            got, unspaced = intern_module._non_ascii(data, True)
            assert got.tobytes() == want, text
            assert unspaced.tolist() == offsets, text


def test_byte_path_warns_of_an_unspaced_text_in_a_large_batch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The text that warns is found from the texts' lengths (non-ASCII texts before it move
    every later offset)."""
    monkeypatch.setattr(tokenize_module, "_warned", False)
    texts = [f"caf\u00e9 na\u00efve {i} \u00a0 x" for i in range(3000)]
    texts[1717] = "彼は毎朝コーヒーを飲みます。"
    with pytest.warns(tokenize_module.UnspacedScriptWarning):
        assert intern_module._joined_bytes(texts, "whitespace", check=False) is not None
    monkeypatch.setattr(tokenize_module, "_warned", False)
    texts[1717] = "caf\u00e9 \u4e00 a b c d e f"  # one CJK character among words: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", tokenize_module.UnspacedScriptWarning)
        intern_module._joined_bytes(texts, "whitespace", check=False)
