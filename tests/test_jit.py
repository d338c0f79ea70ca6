"""The compiled path (:mod:`divmeter.inputs.text.jit`, numba, ``divmeter[fast]``) against the numpy
and dictionary paths.

The compiled kernels tokenize (``whitespace``: ``str.split()``; ``tevet``: Tevet & Berant's split
on spaces after removing ``.`` and ``\\n``), intern with an exact hash table, and compute TTR
(Deshpande et al. 2025, eq. 4) and bidirectional MTLD (McCarthy & Jarvis 2010) in compiled
loops. Every number must be the one the numpy / dictionary path gives, bit for bit, on the
inputs where those paths differ most (non-ASCII text, tabs, ``\\x1c``-``\\x1f``, no-break
spaces, empty and whitespace-only responses, tokens of 8, 9 and over 64 bytes), on random texts
and on Tevet & Berant's released sets; where the numpy byte path declines (a NUL, a separator
character, a token over 64 bytes) the compiled path declines too. Skipped when numba is not
installed.
"""

from __future__ import annotations

import csv
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("numba")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import tevet_files  # noqa: E402
from divmeter.engine.registry import get_metric  # noqa: E402
from divmeter.inputs.text import intern, jit, tokenize  # noqa: E402
from divmeter.inputs.text.tokenize import get_tokenizer  # noqa: E402
from exact import same  # noqa: E402

END = {"whitespace": 0x1F, "tevet": 0}
PAD = {"whitespace": "\x1f", "tevet": "\x00"}

TEXTS = [
    "",
    "   ",
    "a b  a\tb\nc",
    "Aa aA AA aa aa.",
    "abcdefgh abcdefghi abcdefgh abcdefghi abcdefghij",  # 8 / 9 / 10 bytes
    "x" * 64 + " " + "x" * 63 + " " + "x" * 64,  # the longest tokens accepted
    "abcdefghX abcdefghY abcdefghX " + "q" * 40 + "1 " + "q" * 40 + "2 " + "q" * 40 + "1",
    "A man, a plan. A canal:\nPanama! 42 42.0 .. .",
    "caf\u00e9 \u2018quoted\u2019 na\u00efve \u2014 caf\u00e9 cafe",  # 2-3 byte characters
    "\u65e5\u672c\u8a9e \U0001f642 \U0001f642 \u00c9T\u00c9 \u00e9t\u00e9",
    "ctrl\x01char ctrl\x01char \x1b \x0e\x1b",  # control bytes inside tokens
    "a\x1cb\x1dc\x1ed a b c d",  # information separators: whitespace to str.split()
    " \t ",
    "\t\n",
    "\x0b\x0c",
    "a \t b \t a",  # a tab between spaces is a tevet word
    "\t.\t",
    "the cat the dog the cat a dog a cat the end " * 3,
]
#: lone surrogates (valid str, invalid UTF-8: the byte paths encode them with surrogatepass)
SURROGATES = ["\ud800 a \ud800 \udfff", "\ud83d\ude42 \U0001f642 \ud83d\ude42"]
#: non-ASCII whitespace: a space to the whitespace byte paths, tevet's keep it inside words
TEVET_TEXTS = [" \u00a0 ", "a \u00a0 b a", "\u3000\t", "\u00a0sat \u2003 \u00a0sat sat"]
SETS = [TEXTS[:4], [], [""], TEXTS[4:9], TEXTS[2:7], ["  "], TEXTS[9:], [" \t ", "\t\n"],
        TEXTS[-3:] * 2, SURROGATES]


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[], Any]], tuple[Any, Any]]:
    """Runs a function on the compiled path (every batch, in chunks of about 64 characters so
    that batches span several chunks), then with ``DIVMETER_NO_JIT=1`` (numpy / dictionary
    paths, every batch size) and returns both results."""
    monkeypatch.delenv("DIVMETER_NO_JIT", raising=False)
    monkeypatch.setattr(intern, "_JIT_MIN_CHARS", 0)
    monkeypatch.setattr(intern, "_JIT_LOAD_CHARS", 0)
    monkeypatch.setattr(intern, "_BYTE_MIN_CHARS", 0)
    monkeypatch.setattr(intern, "_JIT_CHUNK_CHARS", 64)
    monkeypatch.setattr(tokenize, "_warned", True)  # (the script warning has its own tests)
    assert intern.compiled() is jit

    def both(fn: Callable[[], Any]) -> tuple[Any, Any]:
        compiled = fn()
        monkeypatch.setenv("DIVMETER_NO_JIT", "1")
        try:
            other = fn()
        finally:
            monkeypatch.delenv("DIVMETER_NO_JIT")
        return compiled, other

    return both


def _scan(texts: list[str], name: str, max_len: int = 64
          ) -> tuple[list[int], list[int], list[float], int]:
    """ids, tokens per text, TTR per text (NaN: no token), number of types."""
    buf = np.frombuffer(PAD[name].join([*texts, *[""] * 9]).encode(), dtype=np.uint8)
    words = np.ndarray(buffer=buf, dtype="<u8", shape=(buf.size - 7,), strides=(1,))
    ids, lengths, n_types = jit.scan_tokens(buf, words, intern._SPACE_RANGES[name], END[name],
                                            0, len(texts), max_len)
    v, _ = jit.type_counts(ids, lengths, max(n_types, 0))
    ttr = [t / n if n else -1.0 for t, n in zip(v.tolist(), lengths.tolist(), strict=True)]
    return ids.tolist(), lengths.tolist(), ttr, n_types


# --------------------------------------------------------------------------------------------
# the kernels on hand-checked inputs


@pytest.mark.parametrize(("name", "texts", "ids", "lengths", "ttr", "n_types"), [
    ("whitespace", ["b a b", "cc  a", ""], [0, 1, 0, 2, 1], [3, 2, 0], [2 / 3, 1.0, -1.0], 3),
    ("whitespace", ["x\ty\x1cx\x0bz\x1e"], [0, 1, 0, 2], [4], [0.75], 3),  # 9-13, 28-30 split
    ("whitespace", ["abcdefghX abcdefghY abcdefghX"], [0, 1, 0], [3], [2 / 3], 2),  # 8 shared
    ("whitespace", ["\u00e9t\u00e9 ete \u00e9t\u00e9"], [0, 1, 0], [3], [2 / 3], 2),
    ("tevet", ["a\tb a  a\tb", "\x1fa\x1f a"], [0, 1, 0, 2, 1], [3, 2], [2 / 3, 1.0], 3),  # \t
    ("tevet", ["", " ", "a"], [0], [0, 0, 1], [-1.0, -1.0, 1.0], 1),
])
def test_scan_tokens_golden(name: str, texts: list[str], ids: list[int], lengths: list[int],
                            ttr: list[float], n_types: int) -> None:
    """Types numbered by first occurrence, equal ids iff equal tokens; tokens per text and TTR
    (types / tokens, Deshpande et al. 2025 eq. 4; -1 here for NaN, a text without tokens)."""
    assert _scan(texts, name) == (ids, lengths, ttr, n_types)


@pytest.mark.parametrize(("name", "texts", "why"), [
    ("whitespace", ["a\x00b a"], "NUL byte"),
    ("whitespace", ["a\x1fb a"], "the text separator inside a text"),
    ("tevet", ["a\x00b a"], "NUL byte (tevet's text separator)"),
    ("whitespace", ["y " + "x" * 65], "token over 64 bytes"),
    ("tevet", ["y " + "x" * 65], "token over 64 bytes"),
])
def test_scan_tokens_declines(name: str, texts: list[str], why: str) -> None:
    assert _scan(texts, name)[::3] == ([], -1), why


def test_scan_tokens_grows_its_table() -> None:
    """5,000 distinct tokens (the first table holds 1,024 types): every type keeps its id."""
    words = [f"w{i}" for i in range(5000)]
    ids, lengths, ttr, n_types = _scan([" ".join(words), " ".join(reversed(words))],
                                       "whitespace")
    assert n_types == 5000 and lengths == [5000, 5000] and ttr == [1.0, 1.0]
    assert ids == list(range(5000)) + list(range(4999, -1, -1))


def _local(texts: list[str], name: str, max_len: int = 64) -> tuple[Any, ...]:
    ids, lengths, types, squares, most = jit.local_types(*_bytes(texts, name), len(texts),
                                                         max_len, True)
    return ids.tolist(), lengths.tolist(), types.tolist(), squares.tolist(), most


@pytest.mark.parametrize("name", ["whitespace", "tevet"])
def test_local_types_equal_the_chunk_scan(name: str) -> None:
    """Each text's types counted in a table of its own: the tokens of ``scan_tokens``, ids
    renumbered by first occurrence in their text, ``type_counts``'s types and squares."""
    texts = [*TEXTS, *SURROGATES, " ".join(f"w{i}" for i in range(3000)), "a a b", ""]
    ids, lengths, n_types = jit.scan_tokens(*_bytes(texts, name), len(texts), 64)
    types, squares = jit.type_counts(ids, lengths, n_types)
    local, lengths2, types2, squares2, most = _local(texts, name)
    assert lengths2 == lengths.tolist() and most == max(types2) == 3000
    assert types2 == types.tolist() and squares2 == squares.tolist()
    at = 0
    for n in lengths.tolist():
        first: dict[int, int] = {}
        assert local[at:at + n] == [first.setdefault(g, len(first))
                                    for g in ids[at:at + n].tolist()]
        at += n


def test_local_types_golden_and_declines() -> None:
    # "b a b": types b, a; squares 2^2 + 1; "cc  a": 2 types; "": none
    assert _local(["b a b", "cc  a", ""], "whitespace") == (
        [0, 1, 0, 0, 1], [3, 2, 0], [2, 2, 0], [5, 2, 0], 2)
    # two 40-byte tokens equal but for their last byte; a 9-byte token inside a 10-byte one
    assert _local(["q" * 39 + "1 " + "q" * 39 + "2 " + "q" * 39 + "1 abcdefghi abcdefghij"],
                  "whitespace")[0] == [0, 1, 0, 2, 3]
    for name, texts in [("whitespace", ["a\x00b a"]), ("whitespace", ["a\x1fb a"]),
                        ("tevet", ["a\x00b a"]), ("whitespace", ["y " + "x" * 65])]:
        assert _local(texts, name)[::4] == ([], -1), texts


def _bytes(texts: list[str], name: str) -> tuple[Any, ...]:
    buf = np.frombuffer(PAD[name].join([*texts, *[""] * 9]).encode("utf-8", "surrogatepass"),
                        dtype=np.uint8)
    words = np.ndarray(buffer=buf, dtype="<u8", shape=(buf.size - 7,), strides=(1,))
    return buf, words, intern._SPACE_RANGES[name], END[name], 0


def test_set_local_ids_and_group_order() -> None:
    ids = np.array([0, 1, 0, 2, 1, 0], dtype=np.int64)  # texts [0 1 0] [2] | [1 0]
    raw, types = jit.set_local_ids(ids, np.array([3, 1, 2]), np.array([2, 0, 1]), 3)
    # set 0: a b a 0 c 0 -> 2 3 2 0 6 0; set 2: b a 0 -> 2 3 0
    assert raw.tolist() == [2, 3, 2, 0, 6, 0, 2, 3, 0] and types.tolist() == [3, 0, 2]
    order, same_type = jit.group_order(ids, 3)
    assert order.tolist() == [0, 2, 5, 1, 4, 3]
    assert same_type.tolist() == [True, True, False, True, False]


@pytest.mark.parametrize(("tokens", "threshold", "expected"), [
    ("a b a c a d", 0.72, 6.0),  # forward a b a | c a d: 6 / 1; backward d a c a b a: 6 / 1
    ("a a b b", 0.72, 2.0),  # two factors each way
    # forward a a | b c: 1 factor + partial 0; backward c b a a: TTR 3/4 left, partial
    ("a a b c", 0.72, (4 / 1.0 + 4 / ((1.0 - 3 / 4) / (1.0 - 0.72))) / 2.0),
    ("a b c a", 0.5, (4 / ((1.0 - 3 / 4) / (1.0 - 0.5)) + 4 / ((1.0 - 3 / 4) / (1.0 - 0.5))) / 2),
    ("one two three", 0.72, None),  # no repetition: no factor, undefined
    ("", 0.72, None),
])
def test_mtld_values_golden(tokens: str, threshold: float, expected: float | None) -> None:
    """McCarthy & Jarvis 2010: factors end at TTR <= threshold, the rest is a partial factor;
    the value is the mean of n / factors forward and backward."""
    words = tokens.split()
    vocab: dict[str, int] = {}
    ids = np.array([vocab.setdefault(w, len(vocab)) for w in words], dtype=np.int64)
    out = jit.mtld_values(ids, np.array([len(words)]), len(vocab), threshold)[0]
    assert (math.isnan(out) and expected is None) or out == expected
    assert _many("mtld", [[tokens]], threshold=threshold)[0].value == expected


# --------------------------------------------------------------------------------------------
# the compiled path equals the numpy / dictionary paths


def _many(name: str, sets: list[list[str]], **params: Any) -> list[Any]:
    """Metric ``name``'s formula on every set at once (no rule for degenerate sets)."""
    return get_metric(name).plan(params).score([tuple(s) for s in sets])


def _metrics(sets: list[list[str]], tokenizer: str, lowercase: bool) -> dict[str, Any]:
    tok = {"tokenizer": tokenizer, "lowercase": lowercase}
    texts = [t for s in sets for t in s]
    keys = intern.TokenKeys.from_texts(texts, get_tokenizer(tokenizer, lowercase))
    it = intern.intern_sets(sets, get_tokenizer(tokenizer, lowercase))
    return {
        "ttr": _many("ttr", sets, **tok),
        "mtld": _many("mtld", sets, **tok),
        "mtld-0.5": _many("mtld", sets, threshold=0.5, **tok),
        "yule-k": _many("yule-k", sets, **tok),
        "msttr": _many("msttr", sets, segment=3, **tok),
        "mattr": _many("mattr", sets, window=3, **tok),
        "hdd": _many("hdd", sets, sample_size=2, **tok),
        "self-repetition": _many("self-repetition", sets, n=2, **tok),
        "ngram-diversity": _many("ngram-diversity", sets, n_max=3, **tok),
        "distinct-n": _many("distinct-n", sets, n=2, **tok),
        "neighbours": keys.neighbours(),
        "type-counts": sorted(zip(*[x.tolist() for x in keys.type_counts()], strict=True)),
        "interned": (it.raw, it.n_words, it.n_texts, it.n_types, intern.longest_response(
            sets, get_tokenizer(tokenizer, lowercase))),
    }


def _assert_same(compiled: dict[str, Any], other: dict[str, Any]) -> None:
    for name in compiled:
        a, b = compiled[name], other[name]
        if name in ("ttr", "mtld", "mtld-0.5", "yule-k", "msttr", "mattr", "hdd",
                    "self-repetition",
                    "ngram-diversity", "distinct-n"):
            a = [(r.value, r.reason, r.signature, r.details) for r in a]
            b = [(r.value, r.reason, r.signature, r.details) for r in b]
        assert same(a, b), name


@pytest.mark.parametrize("tokenizer", ["whitespace", "tevet"])
@pytest.mark.parametrize("lowercase", [False, True])
def test_compiled_path_equals_the_numpy_path(fast: Any, tokenizer: str, lowercase: bool) -> None:
    sets = SETS + ([TEVET_TEXTS] if tokenizer == "tevet" else [])
    found = intern._jit_map([t for s in sets for t in s], tokenizer, lambda c, g0, g1: g1 - g0)
    assert found is not None and len(found) > 5  # the compiled path runs, in many chunks
    _assert_same(*fast(lambda: _metrics(sets, tokenizer, lowercase)))


def _ttr_of_chunk(chunk: Any) -> np.ndarray:
    """TTR of each text of a chunk of the compiled path, NaN without tokens."""
    v, _ = jit.type_counts(chunk.ids, chunk.lengths, chunk.n_types)
    with np.errstate(invalid="ignore"):
        out: np.ndarray = v / chunk.lengths
    return out


def test_per_text_runs_the_kernels(fast: Any) -> None:
    texts = ["a b a b", "", "x y z", "the cat the dog"]
    ttr, other = fast(lambda: intern.per_text(texts, get_tokenizer("whitespace"),
                                              _ttr_of_chunk))
    assert other is None  # DIVMETER_NO_JIT=1: no compiled path
    assert ttr[0] == 0.5 and math.isnan(ttr[1]) and ttr[2] == 1.0 and ttr[3] == 0.75
    assert intern.per_text(texts, get_tokenizer("word"), _ttr_of_chunk) is None


@pytest.mark.parametrize("texts", [
    ["a\x00b a", "a b"], ["a\x1fb a", "a b"], ["x" * 65 + " y", "a b"],
], ids=["nul", "separator", "long-token"])
def test_compiled_path_declines_where_the_byte_path_does(fast: Any, texts: list[str]) -> None:
    """A NUL or the separator in a text: both byte paths decline. A token over 64 bytes: the
    numpy byte path declines, the compiled scan (exact at any length) does not."""
    found = intern._jit_map(texts, "whitespace", lambda c, g0, g1: c.lengths.tolist())
    assert found == ([[2], [2]] if texts[0].startswith("x") else None)  # 64-character chunks
    assert intern._byte_tokens(texts, "whitespace") is None
    _assert_same(*fast(lambda: _metrics([texts, ["a a b"]], "whitespace", False)))


def test_non_ascii_whitespace_takes_the_compiled_path(fast: Any) -> None:
    """A no-break space is a space to ``str.split()``: the compiled and numpy byte paths read
    it as one (no longer declining the whole batch), with the dictionary path's numbers."""
    texts = ["a\u00a0b a", "a b\u3000b"]
    assert intern._jit_map(texts, "whitespace", lambda c, g0, g1: c.n_types) == [2]
    assert intern._byte_tokens(texts, "whitespace") is not None
    _assert_same(*fast(lambda: _metrics([texts, ["a a b"]], "whitespace", False)))


@pytest.mark.parametrize("tokenizer", ["whitespace", "tevet"])
def test_lone_surrogates_equal_the_dictionary_path(fast: Any, monkeypatch: pytest.MonkeyPatch,
                                                   tokenizer: str) -> None:
    """A lone surrogate is a valid str but not valid UTF-8: the byte paths encode it with
    ``surrogatepass`` (3 bytes of its own) and give the tokenizer's own answers."""
    sets = [SURROGATES, ["\ud800x \ud800x y", "\udfff"]]
    assert intern._jit_map(SURROGATES, tokenizer, lambda c, g0, g1: c.n_types) == [5]
    compiled = _metrics(sets, tokenizer, False)
    monkeypatch.setattr(intern, "_BYTE_SPLITS", {})  # the dictionary path
    dictionary = _metrics(sets, tokenizer, False)
    del compiled["interned"], dictionary["interned"]  # (ids equal up to renaming)
    _assert_same(compiled, dictionary)


def test_chunks_never_split_a_group(fast: Any) -> None:
    texts = ["w" * 30] * 12
    groups = np.array([5, 0, 4, 3])
    found = intern._jit_map(texts, "whitespace", lambda c, g0, g1: (g0, g1, c.lengths.size),
                            groups)
    # 64 characters a chunk: 150, 0, 120 and 90 characters of groups; cuts at group starts
    assert found == [(0, 1, 5), (1, 3, 4), (3, 4, 3)]


ALPHABET = st.sampled_from(["a", "b", "B", "\u00e9", "\u65e5", "\U0001f642", "\ud83d", " ", "  ",
                            "\t", "\n", ".", "\x1c", "\x1f", "\x0b", "\x01", "\u00a0", "\u3000",
                            "abcdefgh", "x" * 30, "x" * 60])


@settings(max_examples=150, deadline=None)
@given(sets=st.lists(st.lists(st.lists(ALPHABET, max_size=12).map("".join), max_size=5),
                     min_size=1, max_size=5),
       tokenizer=st.sampled_from(["whitespace", "tevet"]), lowercase=st.booleans())
def test_random_texts(sets: list[list[str]], tokenizer: str, lowercase: bool) -> None:
    """Random texts: either both paths decline (same dictionary-path numbers) or the compiled
    path gives the numpy path's numbers."""
    mp = pytest.MonkeyPatch()
    try:
        mp.delenv("DIVMETER_NO_JIT", raising=False)
        for attr, value in (("_JIT_MIN_CHARS", 0), ("_JIT_LOAD_CHARS", 0),
                            ("_BYTE_MIN_CHARS", 0), ("_JIT_CHUNK_CHARS", 16)):
            mp.setattr(intern, attr, value)
        mp.setattr(tokenize, "_warned", True)
        compiled = _metrics(sets, tokenizer, lowercase)
        mp.setenv("DIVMETER_NO_JIT", "1")
        _assert_same(compiled, _metrics(sets, tokenizer, lowercase))
    finally:
        mp.undo()


def _tevet_sets(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    cols = sorted((c for c in rows[0] if c.startswith("resp_")), key=lambda c: int(c[5:]))
    return [[r[c] for c in cols] for r in rows]


@pytest.mark.parametrize("path", tevet_files(), ids=lambda p: p.name)
def test_tevet_sets(fast: Any, monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    """Tevet & Berant's released sets (skipped without the shared data), 4,096-character
    chunks."""
    monkeypatch.setattr(intern, "_JIT_CHUNK_CHARS", 4096)
    sets = _tevet_sets(path)
    for tokenizer in ("whitespace", "tevet"):
        _assert_same(*fast(lambda tokenizer=tokenizer: _metrics(sets, tokenizer, False)))


# --------------------------------------------------------------------------------------------
# switching the compiled path off, and never importing numba for nothing


def test_no_jit_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIVMETER_NO_JIT", "1")
    assert intern.compiled() is None
    monkeypatch.setenv("DIVMETER_NO_JIT", "0")
    assert intern.compiled() is jit


def test_numba_is_not_imported_by_divmeter_or_small_batches() -> None:
    code = ("import sys, divmeter; divmeter.score(['a b a c'] * 3000, 'ttr'); "
            "divmeter.score(['a b a c'] * 3000, 'mtld'); print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"  # 21,000 characters: under the 16M before loading
