"""Bounded memory of pairwise and kernel metrics (issue 16) and n-gram Vendi at scale (issue 13).

* The memory estimate refuses a large synthetic set at a tiny ``max_memory`` with one exact
  message naming the set, the estimate and the option (nothing large is allocated).
* vendi-ngram's bounded exact path (above 2,000 responses) equals the original path to 1e-9
  relative for every order q of the commonsense meta-evaluation (appendix A, eq. 1-2: q = 0.5,
  1, inf; and q = 2), and the closed forms hold (n orthogonal responses -> n, identical -> 1).
* The approximate modes: SLQ is exact where Lanczos terminates (orthogonal items) and its
  q = inf is the top eigenvalue; Nystroem with every response as a landmark is exact.
* homogenization's row-block path equals the whole-matrix mean for every measure.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import divmeter
from divmeter.core import memory
from divmeter.core.errors import InvalidInputError
from divmeter.core.memory import MemoryLimitError
from divmeter.inputs.text import NgramIndex
from divmeter.metrics import overlap, vendi

INF = float("inf")
DIVMETER = Path(sys.executable).parent / "divmeter"
ORTHO = [f"w{i}" for i in range(2001)]  # 2,001 one-token responses, no shared n-gram


@pytest.mark.parametrize(
    ("given", "expected"),
    [("4G", 4 * 2**30), ("512M", 512 * 2**20), ("1.5kb", 1536), ("2GiB", 2 * 2**30),
     (1000, 1000), ("7", 7), (" 3 m ", 3 * 2**20)],
)
def test_parse_memory(given: object, expected: int) -> None:
    assert memory.parse_memory(given) == expected


@pytest.mark.parametrize("bad", ["lots", "", "-1G", "0", 0, True, "4X", float("nan")])
def test_parse_memory_rejects(bad: object) -> None:
    with pytest.raises(InvalidInputError, match=r"^max_memory must be a size such as 4G, 512M"):
        memory.parse_memory(bad)


def test_default_limit_and_context() -> None:
    assert memory.current_limit() == memory.DEFAULT_MAX_MEMORY == 4 * 2**30
    with memory.memory_limit("1M"):
        assert memory.current_limit() == 2**20
        with memory.memory_limit(None):
            assert memory.current_limit() == 2**20
    assert memory.current_limit() == 4 * 2**30


def test_chamfer_refused_before_any_work() -> None:
    """50,000 responses: the 3 x n^2 estimate (60 GB) is refused before the model loads."""
    texts = ["a response"] * 50_000
    with pytest.raises(MemoryLimitError) as err:
        divmeter.score(texts, "chamfer", max_memory="4G")
    assert str(err.value) == (
        "chamfer needs about 55.9 GB (3 x a 50,000 x 50,000 distance matrix), above the memory "
        "limit of 4.0 GB; raise it with --max-memory (library: max_memory=...)."
    )


def test_vendi_ngram_refused_with_exact_estimate() -> None:
    """2,001 distinct one-token responses: a 2,001 x 2,001 kernel, 8 * 2001^2 bytes."""
    with pytest.raises(MemoryLimitError) as err:
        divmeter.score(ORTHO, "vendi-ngram", max_memory="1M")
    assert str(err.value) == (
        "vendi-ngram needs about 30.5 MB (a 2,001 x 2,001 kernel matrix), above the memory "
        "limit of 1.0 MB; raise it with --max-memory (library: max_memory=...) or use "
        "vendi-ngram:dtype=float32 (half the memory) or vendi-ngram:approx=slq."
    )
    assert err.value.needed == 8 * 2001**2 and err.value.limit == 2**20
    with pytest.raises(MemoryLimitError) as half:
        divmeter.score(ORTHO, "vendi-ngram", max_memory="1M", dtype="float32")
    assert str(half.value) == (
        "vendi-ngram needs about 15.3 MB (a 2,001 x 2,001 float32 kernel matrix), above the "
        "memory limit of 1.0 MB; raise it with --max-memory (library: max_memory=...) or use "
        "vendi-ngram:approx=slq."
    )


def test_score_many_names_the_set() -> None:
    sets = [["a b", "a c"], ["x"] * 3000]
    with pytest.raises(MemoryLimitError, match=r"^sets\[1\]: ngram-cosine needs about 206\.0 MB"):
        divmeter.score_many(sets, "ngram-cosine", max_memory="100M", on_error="null")
    assert [r.value for r in divmeter.score_many(sets[:1], "ngram-cosine")] == [
        divmeter.score(sets[0], "ngram-cosine").value
    ]


def test_cli_max_memory(tmp_path: Path) -> None:
    src = tmp_path / "sets.jsonl"
    rows = [{"id": "ok", "responses": ["a b", "a c"]}, {"id": "big", "responses": ORTHO}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = subprocess.run([str(DIVMETER), "score", str(src), "-m", "vendi-ngram",
                          "--max-memory", "1M", "--format", "jsonl"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2
    assert out.stderr == (
        "divmeter: error: set 'big' (row 1): vendi-ngram needs about 30.5 MB (a 2,001 x 2,001 "
        "kernel matrix), above the memory limit of 1.0 MB; raise it with --max-memory "
        "(library: max_memory=...) or use vendi-ngram:dtype=float32 (half the memory) or "
        "vendi-ngram:approx=slq.\n"
    )
    ok = subprocess.run([str(DIVMETER), "score", str(src), "-m", "vendi-ngram",
                         "--max-memory", "31M", "--format", "jsonl"],
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout.splitlines()[1])["vendi-ngram"] == pytest.approx(2001, rel=1e-9)
    bad = subprocess.run([str(DIVMETER), "score", str(src), "-m", "ttr", "--max-memory", "lots"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr == ("divmeter: error: max_memory must be a size such as 4G, 512M or a "
                          "number of bytes; got 'lots'.\n")


# ------------------------------------------------------------------------------------------
# vendi-ngram: the bounded exact path equals the original one


def _sets() -> list[list[str]]:
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(40)]
    base = [" ".join(rng.choice(vocab, size=int(rng.integers(0, 12)))) for _ in range(250)]
    dup = base[:60] + base[:60] + ["the same text"] * 30 + base[60:]  # duplicates, empties
    few = [" ".join(rng.choice(vocab[:4], size=6)) for _ in range(200)]  # more items than D
    return [base, dup, few]


@pytest.mark.parametrize("q", [0.5, 1.0, 2.0, INF])
@pytest.mark.parametrize("which", [0, 1, 2])
def test_large_path_equals_original(monkeypatch: pytest.MonkeyPatch, q: float, which: int
                                    ) -> None:
    texts = _sets()[which]
    small = divmeter.score(texts, "vendi-ngram", q=q)
    monkeypatch.setattr(vendi, "_LARGE", 0)
    large = divmeter.score(texts, "vendi-ngram", q=q)
    assert large.value == pytest.approx(small.value, rel=1e-9)
    assert large.signature == small.signature
    np.testing.assert_allclose(large.details["eigenvalues"], small.details["eigenvalues"],
                               rtol=0, atol=1e-12)


def test_large_path_closed_forms() -> None:
    """Above 2,000 responses (the bounded path): orthogonal -> n, identical -> 1, every q
    (one eigendecomposition; the other orders from its eigenvalues)."""
    r = divmeter.score(ORTHO, "vendi-ngram")
    assert r.details["path"] == "kernel"
    for q in (0.5, 1.0, 2.0, INF):
        assert vendi.vendi_from_eigenvalues(r.details["eigenvalues"], q) == pytest.approx(
            2001, rel=1e-9)
        same = divmeter.score(["the cat sat on the mat"] * 2500, "vendi-ngram", q=q)
        assert same.value == pytest.approx(1.0, rel=1e-12)


def test_reductions_keep_the_nonzero_eigenvalues() -> None:
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    Z = sp.random(30, 80, density=0.08, random_state=4, format="csr")
    Z = sp.csr_matrix(sp.vstack([Z, Z[:5], Z[:5]]))
    Zr, _ = vendi._reduced_features(Z)
    assert Zr.shape[0] == 30 and Zr.shape[1] < 80
    full = np.linalg.eigvalsh((Z @ Z.T).toarray())
    red = np.linalg.eigvalsh((Zr @ Zr.T).toarray())
    np.testing.assert_allclose(np.sort(full)[-30:], np.sort(red), atol=1e-12)
    del rng


# ------------------------------------------------------------------------------------------
# approximate modes


@pytest.mark.parametrize("q", [0.5, 1.0, 2.0, INF])
def test_slq_small_sets_are_exact(q: float) -> None:
    """At most 200 distinct responses: SLQ decomposes exactly (closed forms included)."""
    texts = [f"w{i}" for i in range(50)]
    r = divmeter.score(texts, "vendi-ngram", q=q, approx="slq", probes=4, steps=10)
    assert r.value == pytest.approx(50.0, rel=1e-9)
    same = divmeter.score(["a b c"] * 400, "vendi-ngram", q=q, approx="slq")
    assert same.value == pytest.approx(1.0, rel=1e-9)
    some = _sets()[0][:150]
    exact = divmeter.score(some, "vendi-ngram", q=q).value
    assert divmeter.score(some, "vendi-ngram", q=q, approx="slq").value == pytest.approx(
        exact, rel=1e-9)


@pytest.mark.parametrize(("q", "tol"), [(INF, 1e-9), (0.5, 0.03), (1.0, 0.06), (2.0, 0.01)])
def test_slq_estimate(q: float, tol: float) -> None:
    """233 distinct short responses (the Lanczos path): q = inf exact (top eigenvalue), the
    other orders within the error measured here (seed 0; 200-word documents do better, see
    benchmarks/results_bench_vendi_scale.md)."""
    texts = _sets()[0]
    exact = divmeter.score(texts, "vendi-ngram", q=q).value
    approx = divmeter.score(texts, "vendi-ngram", q=q, approx="slq")
    assert approx.details["path"] == "slq"
    assert approx.value == pytest.approx(exact, rel=tol)
    again = divmeter.score(texts, "vendi-ngram", q=q, approx="slq")
    assert again.value == approx.value  # seeded: repeats exactly
    if not math.isinf(q):
        other = divmeter.score(texts, "vendi-ngram", q=q, approx="slq", seed=1)
        assert other.value != approx.value


@pytest.mark.parametrize("q", [0.5, 1.0, INF])
def test_nystroem_with_every_landmark_is_exact(q: float) -> None:
    texts = _sets()[0]
    exact = divmeter.score(texts, "vendi-ngram", q=q).value
    r = divmeter.score(texts, "vendi-ngram", q=q, approx="nystroem", k=len(texts))
    assert r.value == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize(
    ("params", "signature"),
    [({}, "vendi-ngram|q:1|n:1..4|tok:tevet|case:mixed|v:0.1.0"),
     ({"approx": "slq"},
      "vendi-ngram|q:1|n:1..4|tok:tevet|case:mixed|approx:slq|probes:16|steps:30|seed:0|v:0.1.0"),
     ({"approx": "slq", "probes": 8, "steps": 12, "seed": 3, "q": 0.5},
      "vendi-ngram|q:0.5|n:1..4|tok:tevet|case:mixed|approx:slq|probes:8|steps:12|seed:3|"
      "v:0.1.0"),
     ({"approx": "nystroem", "k": 50},
      "vendi-ngram|q:1|n:1..4|tok:tevet|case:mixed|approx:nystroem|k:50|seed:0|v:0.1.0")],
)
def test_signatures(params: dict[str, object], signature: str) -> None:
    assert divmeter.score(["a b", "a c", "d"], "vendi-ngram", **params).signature == signature


@pytest.mark.parametrize(
    ("params", "message"),
    [({"k": 5}, "`k` of vendi-ngram applies to approx=nystroem only; got k=5 with "
                "approx='none'."),
     ({"approx": "nystroem", "probes": 4},
      "`probes` of vendi-ngram applies to approx=slq only; got probes=4 with "
      "approx='nystroem'."),
     ({"seed": 2}, "`seed` of vendi-ngram applies to approx=nystroem or slq only; got seed=2 "
                   "with approx='none'."),
     ({"approx": "sketch"}, "`approx` of vendi-ngram must be one of none, nystroem, slq; got "
                            "'sketch'."),
     ({"approx": "slq", "steps": 1}, "`steps` of vendi-ngram must be an integer >= 2; got 1.")],
)
def test_bad_approx_parameters(params: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        divmeter.score(["a b", "c d"], "vendi-ngram", **params)
    assert str(err.value) == message
    with pytest.raises(InvalidInputError) as direct:
        vendi.vendi_ngram(["a b", "c d"], **params)  # type: ignore[arg-type]
    assert str(direct.value) == message


# ------------------------------------------------------------------------------------------
# homogenization in row blocks


def _homog_texts() -> list[str]:
    rng = np.random.default_rng(1)
    vocab = [f"w{i}" for i in range(4)]
    return [" ".join(rng.choice(vocab, size=int(rng.integers(0, 14)))) for _ in range(60)] + [
        "", "w1 w1 w1 w1"]


@pytest.mark.parametrize("measure", ["rouge1", "rouge2", "rougeL", "bleu", "bleu-hf"])
@pytest.mark.parametrize("block", [1, 7, None])
def test_homogenization_blocks_equal_whole_matrix(measure: str, block: int | None) -> None:
    texts = _homog_texts()
    dense = divmeter.score(texts, "homogenization", measure=measure).value
    assert dense is not None and dense > 0
    toks = overlap.Homogenization(measure=measure).tokens(texts)
    if measure == "bleu-hf":
        assert toks == [overlap.tokenize_13a(t) for t in texts]
    blocked = overlap._blocked_mean(NgramIndex.from_tokens(toks), measure, 4, block)
    assert blocked == pytest.approx(dense, rel=1e-12)


def test_homogenization_public_blocked_path(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _homog_texts()
    dense = divmeter.score(texts, "homogenization")
    monkeypatch.setattr(overlap, "_DENSE_MAX", 10)
    blocked = divmeter.score(texts, "homogenization")
    assert blocked.value == pytest.approx(dense.value, rel=1e-12)
    assert blocked.signature == dense.signature
    assert blocked.details["similarity"] is None
    assert blocked.details["diversity"] == pytest.approx(1 - dense.value, rel=1e-12)


def test_collector_paused_nests_and_leaves_the_collector_as_it_found_it() -> None:
    import gc

    assert gc.isenabled()
    with memory.collector_paused():
        assert not gc.isenabled()
        with memory.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still holds it
    assert gc.isenabled()
    gc.disable()  # a caller that turned it off itself keeps it off
    try:
        with memory.collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ValueError), memory.collector_paused():
        raise ValueError
    assert gc.isenabled()
    with memory.collector_paused(active=False):  # (a metric with a model or a client)
        assert gc.isenabled()


def test_form_metrics_run_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine pauses the collector around a form metric's batch, and only there."""
    import gc

    from divmeter.metrics import richness

    seen: list[bool] = []
    values = richness.TTR.values

    def watched(self: richness.TTR, texts: list[str]) -> np.ndarray:
        seen.append(gc.isenabled())
        return values(self, texts)

    monkeypatch.setattr(richness.TTR, "values", watched)
    got = divmeter.score_many([["a b", "a a"], ["c d", "c"]], "ttr")
    assert [r.value for r in got] == [0.75, 1.0]  # (1 + 1/2) / 2; (1 + 1) / 2
    assert seen and not any(seen)
    assert gc.isenabled()
