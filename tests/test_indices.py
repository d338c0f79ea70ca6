"""Lexical richness indices (divmeter.metrics.richness): golden values, parity with the peers.

Parity is against lexicalrichness, taaled and lexical-diversity given the same token lists:
frozen in tests/fixtures/indices_parity.json (made by make_indices_fixtures.py) so that these
tests run without the peers, and live where the peers are installed (``divmeter[bench]``).
Every deterministic index equals the peer to 1e-9 relative; where divmeter deliberately differs
(degenerate responses) the difference is named in :data:`NULL_PEER` / :data:`OURS_DEFINED` and
checked to be exactly that. vocd-D is random: divmeter's seeded runs are checked against the
peer's own run-to-run spread.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import divmeter
from conftest import FIXTURES, TEVET_DIR
from divmeter.core.errors import InvalidInputError
from divmeter.engine.registry import get_metric, parse_metric_arg
from divmeter.inputs.text import TokenKeys, get_tokenizer
from divmeter.metrics import richness as indices

FIX = json.loads((FIXTURES / "indices_parity.json").read_text(encoding="utf-8"))
TEXTS: list[tuple[str, list[str]]] = [(t["id"], t["tokens"]) for t in FIX["texts"]]
KEYS = list(FIX["values"])
#: The compiled loops run here (numba installed and not switched off).
JIT = (importlib.util.find_spec("numba") is not None
       and os.environ.get("DIVMETER_NO_JIT", "") in ("", "0"))
NAMES = ["root-ttr", "corrected-ttr", "log-ttr", "summer-s", "dugast-u", "maas-a2",
         "maas-log-v0", "yule-k", "yule-i", "herdan-vm", "simpson-d", "msttr", "vocd-d",
         "mtld-ma-bi", "mtld-ma-wrap"]


def per(texts: list[str], name: str, **params: Any) -> list[float | None]:
    """Per-response values of the metric's batched kernel on one set."""
    res = get_metric(name).plan(params).score((tuple(texts),))[0]
    return list(res.details["per_response"])


def test_every_index_is_registered_with_its_facts() -> None:
    for name in NAMES:
        spec = get_metric(name)
        assert spec.family == "form" and spec.granularity == "response", name
        assert spec.definition.batched, name
        assert spec.citation and spec.description, name
        assert "lexicalrichness" not in spec.citation.split(",")[0], name  # the original paper
    assert not get_metric("maas-a2").higher_is_more_diverse
    assert not get_metric("yule-k").higher_is_more_diverse
    assert get_metric("yule-i").higher_is_more_diverse


# --------------------------------------------------------------------------------------------
# golden values (hand-checked)

_L2, _L3 = math.log(2), math.log(3)


@pytest.mark.parametrize(
    ("name", "texts", "params", "expected"),
    [
        # N = 4, V = 2: 2 / sqrt(4); no token -> undefined
        ("root-ttr", ["a b a b", "x", ""], {}, [1.0, 1.0, None]),
        ("corrected-ttr", ["a b a b a b a b"], {}, [2 / 4]),
        # log V / log N; one token: log 1 = 0 -> undefined
        ("log-ttr", ["a b a b", "a a", "x"], {}, [0.5, 0.0, None]),
        # ln(ln 3) / ln(ln 4); one type: ln(ln 1) is -inf -> undefined
        ("summer-s", ["a b c a", "a a"], {}, [math.log(_L3) / math.log(2 * _L2), None]),
        # base 10 and N = 10: log10(log10 10) = 0 -> undefined
        ("summer-s", ["a b c d e f g h i a", "a b c a"], {"base": 10},
         [None, math.log(math.log10(3)) / math.log(math.log10(4))]),
        # (log2 4)^2 / (log2 4 - log2 1) = 4 / 2; no repeat -> undefined
        ("dugast-u", ["a a a a", "a b"], {"base": 2}, [2.0, None]),
        ("dugast-u", ["a a b b"], {}, [(2 * _L2) ** 2 / _L2]),
        # (log N - log V) / (log N)^2: log10 10 = 1
        ("maas-a2", ["a a a a a a a a a a", "x"], {}, [1.0, None]),
        ("maas-a2", ["a a b b"], {"base": "e"}, [_L2 / (2 * _L2) ** 2]),
        # log V / sqrt(1 - (log V / log N)^2): V = 2, N = 4 -> log10 2 / sqrt(3/4)
        ("maas-log-v0", ["a b a b", "a b"], {}, [math.log10(2) / math.sqrt(0.75), None]),
        # Yule's K: 10^4 (M2 - N) / N^2, M2 = 4 + 1 + 1 = 6
        ("yule-k", ["a a b c", "a b", ""], {}, [1250.0, 0.0, None]),
        # Yule's I: V^2 / (M2 - V) = 9 / 3
        ("yule-i", ["a a b c", "a b"], {}, [3.0, None]),
        # Herdan's Vm: sqrt(6/16 - 1/3); equal counts: exactly 0
        ("herdan-vm", ["a a b c", "a b a b"], {}, [math.sqrt(6 / 16 - 1 / 3), 0.0]),
        # Simpson's D: sum k(k-1) / (N(N-1)) = 2 / 12
        ("simpson-d", ["a a b c", "a a", "x"], {}, [2 / 12, 1.0, None]),
        # MSTTR, segment 2: aa bb | c -> (1/2 + 1/2) / 2; shorter than a segment: its TTR
        ("msttr", ["a a b b c", "a"], {"segment": 2}, [0.5, 1.0]),
        ("msttr", ["a a b b c", "a a b b", "a b"],
         {"segment": 2, "convention": "keep-remainder"}, [2 / 3, 0.5, 1.0]),
        # drop-last drops the last segment, partial or full; one segment -> undefined
        ("msttr", ["a a b c c", "a a b c", "a b"],
         {"segment": 2, "convention": "drop-last"}, [0.75, 0.5, None]),
        # MTLD-MA: factor lengths from every start (no partials)
        ("mtld-ma-bi", ["a b a b c"], {"min_length": 1}, [(3 + 11 / 3) / 2]),
        ("mtld-ma-bi", ["a b c d"], {"min_length": 1}, [None]),  # no factor
        # threshold 0.75: forward "a b a" (2/3); backward (c a b a) "c a b a" is 3/4, a factor
        # under "le" (TTR <= 0.75) but not under "lt", then "a b a"
        ("mtld-ma-bi", ["a b a c"], {"min_length": 1, "factor": "le", "threshold": 0.75},
         [(3 + (4 + 3) / 2) / 2]),
        ("mtld-ma-bi", ["a b a c"], {"min_length": 1, "threshold": 0.75}, [(3 + 3) / 2]),
        ("mtld-ma-bi", ["a b a c"], {"min_length": 4, "threshold": 0.75}, [None]),
        ("mtld-ma-wrap", ["a b c"], {"min_length": 1}, [5.0]),  # abcab bcabc cabca: 3/5
        ("mtld-ma-wrap", ["a b a"], {"min_length": 1}, [(3 + 3 + 2) / 3]),  # aba, baa, aa
    ],
)
def test_golden(name: str, texts: list[str], params: dict, expected: list) -> None:
    got = per(texts, name, **params)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        if e is None:
            assert g is None
        else:
            assert g == pytest.approx(e, rel=1e-12, abs=1e-15)


def test_mtld_ma_against_a_direct_loop() -> None:
    """Both readings of every start, token by token, on seeded texts (a second reference
    besides the frozen peer values)."""
    rng = np.random.default_rng(5)

    def first_factor(tokens: list[str], limit: int, thr: float, mn: int) -> int:
        seen: set[str] = set()
        for length, tok in enumerate(tokens[:limit], start=1):
            seen.add(tok)
            if length >= mn and len(seen) / length < thr:
                return length
        return 0

    def mean(lengths: list[int]) -> float | None:
        found = [x for x in lengths if x]
        return sum(found) / len(found) if found else None

    for n in (12, 40, 90):
        tokens = [f"w{i}" for i in rng.zipf(1.4, size=n) % 30]
        fwd = mean([first_factor(tokens[x:], n, 0.72, 10) for x in range(n)])
        rev = tokens[::-1]
        bwd = mean([first_factor(rev[x:], n, 0.72, 10) for x in range(n)])
        wrap = mean([first_factor((tokens + tokens)[x:], 2 * n, 0.72, 10) for x in range(n)])
        text = " ".join(tokens)
        assert per([text], "mtld-ma-bi") == [None if fwd is None else (fwd + bwd) / 2]
        assert per([text], "mtld-ma-wrap") == [wrap]


def test_value_is_mean_over_defined_responses() -> None:
    res = divmeter.score(["a a b c", "a b", "c"], "yule-i")
    assert res.details["per_response"] == [3.0, None, None]
    assert res.value == 3.0 and res.details["n_defined"] == 1
    res = divmeter.score(["a b", "c d"], "yule-i")
    assert res.value is None and res.reason == "no response has a repeated word"


# --------------------------------------------------------------------------------------------
# parity with the peers (frozen values, then live)

#: Where divmeter gives ``None`` and the peer a number, an error or a non-finite value: the
#: named difference and the peer's documented behaviour there (``raises``: an exception,
#: ``zero``: its ``safe_divide`` 0, ``nonfinite``: inf or nan).
NULL_PEER: dict[tuple[str, str], tuple[str, set[str]]] = {
    ("root-ttr", "lexicalrichness"): ("no token: 0 / 0", {"raises"}),
    ("root-ttr", "taaled"): ("no token", {"zero"}),
    ("root-ttr", "lexical-diversity"): ("no token", {"zero"}),
    ("corrected-ttr", "lexicalrichness"): ("no token", {"raises"}),
    ("log-ttr", "lexicalrichness"): ("fewer than 2 tokens: log 1 = 0", {"raises"}),
    ("log-ttr", "taaled"): ("fewer than 2 tokens", {"zero", "raises"}),
    ("log-ttr", "lexical-diversity"): ("fewer than 2 tokens", {"zero", "raises"}),
    ("summer-s", "lexicalrichness"): ("fewer than 2 types: log log 1", {"raises"}),
    ("dugast-u", "lexicalrichness"): ("no repeated word: V = N", {"raises"}),
    ("maas-a2", "taaled"): ("fewer than 2 tokens: (log N)^2 = 0", {"zero", "raises"}),
    ("maas-a2", "lexical-diversity"): ("fewer than 2 tokens", {"zero", "raises"}),
    ("maas-a2:base=e", "lexicalrichness"): ("fewer than 2 tokens", {"raises"}),
    ("yule-k", "lexicalrichness"): ("no token", {"raises", "nonfinite"}),
    ("yule-i", "lexicalrichness"): ("no repeated word: M2 = V", {"raises", "nonfinite"}),
    ("herdan-vm", "lexicalrichness"): ("no token", {"raises", "nonfinite"}),
    ("simpson-d", "lexicalrichness"): ("fewer than 2 tokens", {"raises", "nonfinite"}),
    ("msttr", "taaled"): ("no token", {"zero"}),
    ("msttr", "lexical-diversity"): ("no token", {"zero"}),
    ("msttr:segment=100,convention=drop-last", "lexicalrichness"): (
        "at most one segment", {"raises"}),
    ("msttr:segment=20,convention=drop-last", "lexicalrichness"): (
        "at most one segment", {"raises"}),
    ("msttr:segment=20,convention=keep-remainder", "lexicalrichness"): ("no token", {"raises"}),
    ("mtld-ma-bi", "lexical-diversity"): ("no factor", {"zero"}),
    ("mtld-ma-wrap", "lexical-diversity"): ("no factor", {"zero"}),
}
#: Where divmeter gives a number and the peer refuses: (key, peer) -> the difference.
OURS_DEFINED = {
    ("msttr:segment=20,convention=keep-remainder", "lexicalrichness"):
        "a response of at most `segment` tokens gets its TTR; lexicalrichness raises",
}


def _kind(peer_value: Any) -> str:
    if isinstance(peer_value, dict):
        return "raises"
    if isinstance(peer_value, str):
        return "nonfinite"
    return "zero" if peer_value == 0 else "number"


def _compare(key: str, peer: str, tokens: list[str], ours: float | None, theirs: Any) -> str:
    """``same``, or the named difference that holds; fails on anything else."""
    kind = _kind(theirs)
    where = f"{key} vs {peer} on {len(tokens)} tokens: ours {ours}, peer {theirs}"
    if ours is None:
        assert (key, peer) in NULL_PEER and kind in NULL_PEER[(key, peer)][1], where
        return NULL_PEER[(key, peer)][0]
    if kind in ("raises", "nonfinite"):
        if key.startswith("herdan-vm") and ours == 0.0:
            return "equal type counts: exactly 0 (lexicalrichness: rounding noise, NaN)"
        assert (key, peer) in OURS_DEFINED and len(tokens) <= int(key.split("=")[1].split(",")[0])
        return OURS_DEFINED[(key, peer)]
    if key.startswith("herdan-vm") and ours == 0.0:
        assert abs(theirs) < 1e-7, where  # the peer's sqrt of a rounding error
        return "equal type counts: exactly 0 (lexicalrichness: rounding noise, NaN)"
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12), where
    return "same"


def _check_all(token_lists: list[list[str]], values: dict[str, dict[str, list[Any]]],
               every_pair: bool = True) -> dict:
    """Compare divmeter with every frozen/live peer value; the tally of outcomes per (key,
    peer), each of which (``every_pair``) must have compared at least one equal value."""
    texts = [" ".join(t) for t in token_lists]
    tally: dict[tuple[str, str], dict[str, int]] = {}
    for key, peers in values.items():
        name, params = parse_metric_arg(key)
        ours = per(texts, name, **params)
        for peer, theirs in peers.items():
            out = tally.setdefault((key, peer), {})
            for tokens, o, t in zip(token_lists, ours, theirs, strict=True):
                verdict = _compare(key, peer, tokens, o, t)
                out[verdict] = out.get(verdict, 0) + 1
            assert out.get("same", 0) > 0 or not every_pair, (key, peer, out)
    return tally


def test_parity_frozen_generated_and_edge_texts() -> None:
    tally = _check_all([t for _, t in TEXTS], FIX["values"])
    assert set(KEYS) == {k for k, _ in tally}
    # the named differences did occur on the edge cases (so they are tested, not just listed)
    assert tally[("herdan-vm", "lexicalrichness")].get("same", 0) > 40
    assert tally[("mtld-ma-bi", "lexical-diversity")]["no factor"] >= 2
    assert tally[("msttr:segment=20,convention=keep-remainder", "lexicalrichness")][
        OURS_DEFINED[("msttr:segment=20,convention=keep-remainder", "lexicalrichness")]] >= 3
    assert tally[("dugast-u", "lexicalrichness")]["no repeated word: V = N"] >= 3


def _tevet_tokens(rows: list[list[Any]]) -> list[list[str]]:
    if not TEVET_DIR.is_dir():
        pytest.skip(f"shared Tevet data not found at {TEVET_DIR}")
    cache: dict[str, list[dict[str, str]]] = {}
    out = []
    for file, row, col, n_tokens in rows:
        if file not in cache:
            with (TEVET_DIR / file).open(newline="", encoding="utf-8") as fh:
                cache[file] = list(csv.DictReader(fh))
        tokens = cache[file][row][col].split()
        assert len(tokens) == n_tokens, (file, row, col)
        out.append(tokens)
    return out


def test_parity_frozen_tevet_responses() -> None:
    tevet = FIX["tevet"]
    tally = _check_all(_tevet_tokens(tevet["rows"]), tevet["values"], every_pair=False)
    assert sum(v.get("same", 0) for v in tally.values()) > 5000
    # Tevet's responses are short (these at most 20 tokens): no second segment, few factors
    short = {(f"msttr:segment={n},convention={c}", "lexicalrichness")
             for n, c in ((100, "drop-last"), (20, "drop-last"), (20, "keep-remainder"))}
    assert all(v.get("same", 0) > 0 for k, v in tally.items() if k not in short), tally


def _peers() -> Any:
    for mod in ("lexicalrichness", "taaled", "lexical_diversity"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"needs {mod} (pip install -e '.[bench]')")
    sys.path.insert(0, str(FIXTURES))
    import make_indices_fixtures

    return make_indices_fixtures


def _live_values(mod: Any, token_lists: list[list[str]]) -> dict[str, dict[str, list[Any]]]:
    rows = [mod.peer_values(t) for t in token_lists]
    return {key: {peer: [r[key][peer] for r in rows] for peer in peers}
            for key, peers in mod.PEERS.items()}


def test_parity_live_peers() -> None:
    """The peers as installed, on the fixture's texts and on Tevet responses the fixture does
    not hold (every 400th, from the 200th on)."""
    mod = _peers()
    token_lists = [t for _, t in mod.make_texts(mod.SEED)]
    assert token_lists == [t for _, t in TEXTS]  # the fixture was made from these texts
    _check_all(token_lists, _live_values(mod, token_lists))
    if TEVET_DIR.is_dir():
        others = _offset_tevet(TEVET_DIR, 2 * mod.TEVET_EVERY)
        assert len(others) > 200
        _check_all(others, _live_values(mod, others), every_pair=False)


def _offset_tevet(tevet_dir: Path, every: int) -> list[list[str]]:
    """The tokens of every ``every``-th response of each Tevet file, from the middle on."""
    out: list[list[str]] = []
    for path in sorted(tevet_dir.glob("*/*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            records = list(csv.DictReader(fh))
        cols = [c for c in records[0] if c.startswith("resp_")]
        flat = [rec[c] for rec in records for c in cols]
        out += [text.split() for text in flat[every // 2::every]]
    return out


# --------------------------------------------------------------------------------------------
# vocd-D

VOCD = FIX["vocd"]["runs"]
TOKENS = dict(TEXTS)


@pytest.fixture()
def fast_vocd(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled sampling loop where numba is installed (the numpy path gives the same
    counts: test_vocd_numpy_path_equals_compiled_loop), so the seeds below run quickly."""
    if JIT:
        monkeypatch.setattr(indices, "_VOCD_JIT_DRAWS", 0)


def _runs(values: list[Any]) -> np.ndarray:
    return np.array([v for v in values if isinstance(v, float)])


@pytest.mark.parametrize("text_id", [k for k in VOCD if k != "no-repeat-60"])
def test_vocd_within_the_peers_run_to_run_spread(fast_vocd: None, text_id: str) -> None:
    """lexicalrichness's vocd over seeds 0..19 against divmeter's over seeds 0..9 (both the
    original's 35..50 tokens, 100 samples, 3 fits): the means agree within 3.5 standard errors,
    the spreads within a factor of 2.5, and every divmeter run lies within the peer's range
    widened by two of its standard deviations; the exact-expectation variant within two."""
    peer = _runs(VOCD[text_id])
    text = " ".join(TOKENS[text_id])
    ours = np.array([indices.vocd_d([text], seed=s).value for s in range(10)], dtype=float)
    sd_p, sd_o = peer.std(ddof=1), ours.std(ddof=1)
    se = math.sqrt(sd_p ** 2 / peer.size + sd_o ** 2 / ours.size)
    assert abs(ours.mean() - peer.mean()) <= 3.5 * se + 1e-9 * peer.mean(), (ours, peer)
    if sd_p > 1e-6 * peer.mean():
        assert 1 / 2.5 <= sd_o / sd_p <= 2.5, (sd_o, sd_p)
    assert ((ours >= peer.min() - 2 * sd_p - 1e-9) & (ours <= peer.max() + 2 * sd_p + 1e-9)).all()
    expected = indices.vocd_d([text], sampling="expected").value
    assert expected is not None
    assert abs(expected - peer.mean()) <= 2 * sd_p + 1e-6 * peer.mean(), (expected, peer.mean())


def test_vocd_without_repetition_is_undefined() -> None:
    """Named difference: lexicalrichness's curve_fit stops at some huge D on a text without a
    repeated word (frozen: about 1e6); divmeter's D is infinite there, so undefined."""
    assert _runs(VOCD["no-repeat-60"]).min() > 1e5
    text = " ".join(TOKENS["no-repeat-60"])
    for sampling in ("random", "expected"):
        res = indices.vocd_d([text], sampling=sampling)
        assert res.value is None
        assert res.reason == "no response has 50 tokens or more with a repeated word"


def test_vocd_seed_signature_and_stream() -> None:
    text = " ".join(TOKENS["exactly-100"])
    other = " ".join(TOKENS["zipf80-0"])
    a = indices.vocd_d([text, other], seed=7)
    assert a.signature == ("vocd-d|sizes:35..50|samples:100|trials:3|sampling:random|seed:7|"
                           "rng:splitmix64|tok:whitespace|case:mixed|v:0.1.0")
    # a response's draws depend on the seed and its own tokens only: alone, in another order,
    # among other responses, with its types renamed
    alone = per([text], "vocd-d", seed=7)[0]
    assert a.details["per_response"][0] == alone
    assert per([other, "x y", text], "vocd-d", seed=7)[2] == alone
    renamed = " ".join("z" + t for t in TOKENS["exactly-100"])
    assert per([renamed], "vocd-d", seed=7)[0] == alone
    assert per([text], "vocd-d", seed=8)[0] != alone
    assert per([text], "vocd-d", seed=7, samples=50)[0] != alone
    # shorter than max_size: undefined (lexicalrichness refuses <= 50; 50 exactly is defined)
    assert per([" ".join(TOKENS["exactly-50"])], "vocd-d", max_size=51) == [None]
    assert per([" ".join(TOKENS["exactly-50"])], "vocd-d")[0] is not None


@pytest.mark.skipif(not JIT, reason="needs numba (and DIVMETER_NO_JIT unset)")
def test_vocd_numpy_path_equals_compiled_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same draws, shuffles and type counts: the numpy path (with row blocks small enough
    to split a response) and the compiled loop give identical counts."""
    texts = [" ".join(TOKENS[k]) for k in ("exactly-51", "zipf80-3", "late-repeats")]
    texts.append(" ".join(f"w{i % 97}" for i in range(700)))
    enc = TokenKeys.from_texts(texts, get_tokenizer("whitespace"))
    first, _ = indices._first_last(enc)
    local = first - enc.starts[enc.doc]
    lengths = enc.lengths.astype(np.int64)
    keys = indices._vocd_keys(local, enc.starts, lengths, 3)
    args = (local, enc.starts, lengths, keys, 35, 50, 20, 2)
    compiled = indices._vocd_compiled()
    assert compiled is not None
    want = compiled(*args)
    assert want.shape == (4, 2, 16) and (want > 0).all()
    assert np.array_equal(indices._vocd_counts_numpy(*args), want)
    monkeypatch.setattr(indices, "_VOCD_BLOCK", 5_000)
    assert np.array_equal(indices._vocd_counts_numpy(*args), want)


def test_vocd_fit_equals_scipy_curve_fit() -> None:
    """The fitted D is the least-squares D of McKee et al.'s curve: what scipy's curve_fit (as
    lexicalrichness calls it) finds, to its tolerance."""
    from scipy.optimize import curve_fit

    def ttr_nd(n: np.ndarray, d: float) -> np.ndarray:
        return (d / n) * (np.sqrt(1 + 2 * n / d) - 1)

    sizes = np.arange(35, 51)
    rng = np.random.default_rng(11)
    rows = []
    for d_true in (3.0, 12.0, 40.0, 150.0):
        rows.append(ttr_nd(sizes, d_true) + rng.normal(0, 0.01, sizes.size))
    rows.append(ttr_nd(sizes, 25.0))  # exactly on the curve
    got = indices._fit_d(np.array(rows), sizes)
    for y, d in zip(rows, got, strict=True):
        want = curve_fit(ttr_nd, sizes, y, p0=[1.0])[0][0]
        assert d == pytest.approx(want, rel=1e-6)
    assert got[-1] == pytest.approx(25.0, rel=1e-12)
    assert np.isinf(indices._fit_d(np.ones((1, 16)), sizes)[0])


# --------------------------------------------------------------------------------------------
# compiled MSTTR, signatures, errors


@pytest.mark.skipif(not JIT, reason="needs numba (and DIVMETER_NO_JIT unset)")
@pytest.mark.parametrize("convention", indices.CONVENTIONS)
def test_msttr_compiled_equals_numpy(convention: str) -> None:
    texts = [" ".join(t) for _, t in TEXTS]
    enc = TokenKeys.from_texts(texts, get_tokenizer("whitespace"))
    first, _ = indices._first_last(enc)  # first-occurrence positions: valid type ids
    for segment in (1, 7, 50):
        want = indices._msttr_values(enc, segment, convention)
        got = indices._msttr_compiled()(first, enc.lengths.astype(np.int64), enc.n_tokens,
                                        segment, indices.CONVENTIONS.index(convention))
        assert np.array_equal(got, want, equal_nan=True), segment


@pytest.mark.skipif(not JIT, reason="needs numba (and DIVMETER_NO_JIT unset)")
@pytest.mark.parametrize(("name", "params"), [
    ("root-ttr", {}), ("summer-s", {"base": 10}), ("yule-k", {"lowercase": True}),
    ("msttr", {"segment": 7}), ("msttr", {"segment": 20, "convention": "drop-last"}),
    ("msttr", {"convention": "keep-remainder", "tokenizer": "tevet"}),
    ("mtld-ma-bi", {}), ("mtld-ma-wrap", {"factor": "le", "min_length": 1}),
    ("vocd-d", {"samples": 10}),
])
def test_kernels_on_the_compiled_path(monkeypatch: pytest.MonkeyPatch, name: str,
                                      params: dict) -> None:
    """Every kernel through the compiled tokenizer (in 64-character chunks, so sets span
    chunks) gives the numbers of the numpy path (``DIVMETER_NO_JIT=1``), per set and per
    response."""
    from divmeter.inputs.text import intern

    monkeypatch.delenv("DIVMETER_NO_JIT", raising=False)
    for attr, value in (("_JIT_MIN_CHARS", 0), ("_JIT_LOAD_CHARS", 0), ("_BYTE_MIN_CHARS", 0),
                        ("_JIT_CHUNK_CHARS", 64)):
        monkeypatch.setattr(intern, attr, value)
    monkeypatch.setattr(indices, "_VOCD_JIT_DRAWS", 0)
    texts = [" ".join(t) for _, t in TEXTS] + ["The the. THE\n", "  ", "a\tb  a"]
    sets = [texts[i:i + 7] for i in range(0, len(texts), 7)] + [[]]
    metric = get_metric(name).plan(params)  # the formula itself (the rule is not under test)
    compiled = metric.score(tuple(tuple(s) for s in sets))
    monkeypatch.setenv("DIVMETER_NO_JIT", "1")
    numpy_path = metric.score(tuple(tuple(s) for s in sets))
    assert [(r.value, r.reason, r.signature, r.details) for r in compiled] == [
        (r.value, r.reason, r.signature, r.details) for r in numpy_path]
    assert sum(r.details["n_defined"] for r in compiled) > 10


@pytest.mark.skipif(not JIT, reason="needs numba (and DIVMETER_NO_JIT unset)")
@pytest.mark.parametrize("wrap", [False, True])
def test_mtld_ma_compiled_equals_numpy(wrap: bool) -> None:
    texts = [" ".join(t) for _, t in TEXTS]
    enc = TokenKeys.from_texts(texts, get_tokenizer("whitespace"))
    first, _ = indices._first_last(enc)
    numpy_values = indices._mtld_ma_wrap_values if wrap else indices._mtld_ma_bi_values
    for threshold, min_length, strict in ((0.72, 10, True), (0.72, 1, False), (0.5, 3, True)):
        want = numpy_values(enc, threshold, min_length, strict)
        got = indices._mtld_ma_compiled()(first, enc.lengths.astype(np.int64), enc.n_tokens,
                                          threshold, min_length, strict, wrap)
        assert np.array_equal(got, want, equal_nan=True), (threshold, min_length, strict)
        assert np.isfinite(want).sum() > 20


@pytest.mark.parametrize(
    ("name", "params", "signature"),
    [
        ("root-ttr", {}, "root-ttr|tok:whitespace|case:mixed|v:0.1.0"),
        ("summer-s", {"base": 10}, "summer-s|log:10|tok:whitespace|case:mixed|v:0.1.0"),
        ("dugast-u", {}, "dugast-u|log:e|tok:whitespace|case:mixed|v:0.1.0"),
        ("maas-a2", {"base": 10.0, "lowercase": True},
         "maas-a2|log:10|tok:whitespace|case:lc|v:0.1.0"),
        ("maas-log-v0", {"base": 2.5}, "maas-log-v0|log:2.5|tok:whitespace|case:mixed|v:0.1.0"),
        ("msttr", {"segment": 100, "convention": "drop-last", "tokenizer": "tevet"},
         "msttr|segment:100|convention:drop-last|tok:tevet|case:mixed|v:0.1.0"),
        ("mtld-ma-wrap", {},
         "mtld-ma-wrap|threshold:0.72|factor:lt|min:10|tok:whitespace|case:mixed|v:0.1.0"),
        ("vocd-d", {"sampling": "expected", "min_size": 30},
         "vocd-d|sizes:30..50|sampling:expected|tok:whitespace|case:mixed|v:0.1.0"),
    ],
)
def test_signatures(name: str, params: dict, signature: str) -> None:
    assert divmeter.score(["a b a"], name, **params).signature == signature


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        ("maas-a2", {"base": 1}, "`base` of maas-a2 must be 'e' or a number > 1; got 1."),
        ("dugast-u", {"base": "ten"}, "`base` of dugast-u must be 'e' or a number > 1"),
        ("msttr", {"segment": 0}, "`segment` of msttr must be an integer >= 1; got 0."),
        ("msttr", {"convention": "discard"}, "`convention` of msttr must be one of "
         "drop-remainder, drop-last, keep-remainder; got 'discard'."),
        ("mtld-ma-bi", {"threshold": 1.0}, "`threshold` of mtld-ma-bi must be a number strictly "
         "between 0 and 1; got 1.0."),
        ("mtld-ma-bi", {"factor": "lte"}, "`factor` of mtld-ma-bi must be one of lt, le"),
        ("vocd-d", {"min_size": 60}, "`max_size` of vocd-d must be >= min_size (60); got 50."),
        ("vocd-d", {"seed": -1}, "`seed` of vocd-d must be an integer >= 0; got -1."),
    ],
)
def test_errors(name: str, params: dict, message: str) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(message)):
        divmeter.score(["a b a"], name, **params)
    with pytest.raises(InvalidInputError):  # the definition checks, whoever calls it
        get_metric(name).plan(params)


def test_no_number_depends_on_the_rest_of_the_batch() -> None:
    texts = [" ".join(t) for _, t in TEXTS]
    for name in NAMES:
        params: dict[str, Any] = {"samples": 10, "trials": 1} if name == "vocd-d" else {}
        together = per(texts, name, **params)
        alone = [per([t], name, **params)[0] for t in texts[:: 7]]
        assert together[:: 7] == alone, name
        assert per(texts[::-1], name, **params) == together[::-1], name


def test_tokenizer_and_lowercase_apply() -> None:
    assert per(["The the THE"], "yule-k") == [0.0]
    assert per(["The the THE"], "yule-k", lowercase=True) == [pytest.approx(1e4 * 6 / 9)]
    assert per(["a, a."], "simpson-d", tokenizer="word") == [1.0]

