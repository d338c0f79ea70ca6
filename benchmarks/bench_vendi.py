"""Vendi score: divmeter vs the `vendi-score` package (v0.0.3), same seeded data, one run.

(a) n-gram Vendi (VS-ngram-1, orders 1..4) of 1,000 sets x 20 generated responses:
    ``divmeter.score(set, "vendi-ngram", tokenizer="whitespace")`` vs
    ``vendi_score.text_utils.ngram_vendi_score(set, ns=[1, 2, 3, 4], tokenizer=str.split)``.
    Same quantity: every generated response has >= 5 tokens, so both kernels are the mean of the
    per-order cosine kernels with a unit diagonal (divmeter differs only for responses with fewer
    than n_max tokens; see ``vendi_ngram``). The package needs a one-line shim on scipy >= 1.14
    (it calls the removed sparse ``.A``); its default nltk tokenizer is replaced by ``str.split``
    so that both tokenize alike (and nltk's data is not needed).
(b) Vendi (q = 1) of 10,000 random 384-d embeddings: divmeter's dual path
    (``vendi_from_features``, one 384 x 384 eigendecomposition) vs ``vendi.score_dual`` on the
    same matrix, and vs ``vendi.score_K`` on the 10,000 x 10,000 kernel. ``score_K`` is O(n^3) in
    time and needs the n x n kernel in memory, so by default it is timed on a subset of
    ``--k-items`` items and extrapolated to 10,000 by (10000 / k)^3 (printed as an estimate);
    its value is checked against divmeter on that subset.

Run:
    .venv-bench/bin/python benchmarks/bench_vendi.py           # full (about a minute)
    .venv-bench/bin/python benchmarks/bench_vendi.py --quick   # 200 sets, score_K on 1,000
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
from _common import best_time, zipf_probs

import divmeter
from divmeter.metrics.vendi import vendi_from_features

if not hasattr(sp.csr_matrix, "A"):  # vendi-score 0.0.3 calls .A, removed in scipy 1.14
    sp.csr_matrix.A = property(lambda self: self.toarray())  # type: ignore[attr-defined]
warnings.filterwarnings("ignore", message="The parameter 'token_pattern'")

from vendi_score import text_utils, vendi  # noqa: E402


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[Any, float]:
    """Result and best wall time of ``repeat`` runs (the machine is shared; best-of is stabler)."""
    best, out = best_time(fn, repeat, time.perf_counter)
    return out, best


def make_sets(n_sets: int, size: int, seed: int) -> list[list[str]]:
    """Zipf-distributed words, 5..30 tokens per response, some near-duplicates in each set."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(5000)])
    p = zipf_probs(vocab.size, 1.0)
    sets = []
    for _ in range(n_sets):
        lengths = rng.integers(5, 31, size=size)
        resp = [" ".join(rng.choice(vocab, size=int(k), p=p)) for k in lengths]
        for i in range(2, size, 5):  # a near-duplicate: previous response with its tail dropped
            toks = resp[i - 1].split()
            resp[i] = " ".join(toks[: max(5, len(toks) - 2)])
        sets.append(resp)
    return sets


def bench_ngram(n_sets: int) -> None:
    sets = make_sets(n_sets, 20, seed=0)
    print(f"(a) n-gram Vendi (q=1, n=1..4), {n_sets} sets x 20 responses")
    ours, t_ours = timed(
        lambda: [divmeter.score(s, "vendi-ngram", tokenizer="whitespace").value for s in sets]
    )
    ref, t_ref = timed(
        lambda: [
            float(text_utils.ngram_vendi_score(s, ns=[1, 2, 3, 4], tokenizer=str.split))
            for s in sets
        ]
    )
    diff = float(np.max(np.abs(np.array(ours) - np.array(ref))))
    print(f"    divmeter vendi-ngram          {t_ours:8.3f} s")
    print(f"    vendi-score ngram_vendi_score {t_ref:8.3f} s   ratio {t_ref / t_ours:6.1f}x")
    print(f"    max |difference| of values: {diff:.2e} (same quantity)")
    # q is honoured by divmeter; the package's ngram_vendi_score has no q at all.
    qs = {q: divmeter.score(sets[0], "vendi-ngram", q=q, tokenizer="whitespace").value
          for q in (0.5, 1.0, float("inf"))}
    print("    divmeter q=0.5/1/inf on set 0: " + ", ".join(f"{v:.4f}" for v in qs.values()))


def bench_embeddings(n: int, d: int, k_items: int) -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, d)) + 0.3  # a shared direction, so the items are not near-orthogonal
    print(f"(b) Vendi of {n:,} random {d}-d embeddings (q=1); best of 3 runs")
    ours, t_ours = timed(lambda: vendi_from_features(X, 1.0), repeat=3)
    dual, t_dual = timed(lambda: float(vendi.score_dual(X, q=1)), repeat=3)
    print(f"    divmeter vendi_from_features (dual path) {t_ours:8.3f} s   value {ours:.10f}")
    print(
        f"    vendi-score score_dual                   {t_dual:8.3f} s   value {dual:.10f}"
        f"   ratio {t_dual / t_ours:6.1f}x"
    )
    Xk = X[:k_items] / np.linalg.norm(X[:k_items], axis=1, keepdims=True)
    K = Xk @ Xk.T
    sub_ref, t_k = timed(lambda: float(vendi.score_K(K, q=1)))
    sub_ours = vendi_from_features(X[:k_items], 1.0)
    est = t_k * (n / k_items) ** 3
    print(
        f"    vendi-score score_K on {k_items:,} items        {t_k:8.3f} s   value {sub_ref:.10f}"
        f" (divmeter {sub_ours:.10f})"
    )
    factor = (n / k_items) ** 3
    print(
        f"    score_K at {n:,} items, extrapolated (x{factor:.0f}, O(n^3)): ~{est:.0f} s"
        f"   ratio ~{est / t_ours:,.0f}x (estimate)"
    )
    rel = max(abs(ours - dual) / dual, abs(sub_ours - sub_ref) / sub_ref)
    print(f"    max relative difference of values: {rel:.2e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 sets; score_K on 1,000 items")
    ap.add_argument("--sets", type=int, default=None, help="number of response sets (1000)")
    ap.add_argument("--k-items", type=int, default=None, help="items for timing score_K (2000)")
    args = ap.parse_args()
    n_sets = args.sets or (200 if args.quick else 1000)
    k_items = args.k_items or (1000 if args.quick else 2000)
    bench_ngram(n_sets)
    bench_embeddings(10_000, 384, k_items)


if __name__ == "__main__":
    main()
