"""Benchmark: batched scoring across sets (``divmeter.score_many``) against per-set calls and peers.

Run with the benchmark venv (it holds the peer libraries):

    .venv-bench/bin/python benchmarks/bench_batch.py          # 1,000 sets x 20 responses
    .venv-bench/bin/python benchmarks/bench_batch.py --quick  # 200 sets (< 1 min)

Workload: the issue's "sets" workload, the same seeded generated data as
``bench_lexical.py`` (1,000 sets x 20 responses of 10-60 Zipf-distributed pseudo-words, shared
phrases planted in some responses). For each metric with a batched implementation it times

* ``per-set``: ``[metric(s) for s in sets]`` (one call per set, as before batching);
* ``batched``: ``divmeter.score_many(sets, metric)`` (one call for all sets);
* ``peer``: the fastest peer computing the same quantity (Tevet & Berant's / Kirk et al.'s
  released algorithms in plain Python where no package exists, a ``collections.Counter``
  entropy, the ``diversity`` package of Shaib et al., scikit-learn's CountVectorizer +
  cosine_similarity);

checks that the batched results equal the per-set ones exactly (value, reason, signature,
details) and the peer's values (or names the definitional difference), and prints the ratios
peer time / divmeter time (> 1: divmeter faster). Last, ``divmeter score``'s engine
(:func:`divmeter.engine.batch.score_sets`) on all six metrics, batched (default) against one set at
a time (``chunk_size=1``).

Times are CPU seconds of this process (``time.process_time``), best of several interleaved
runs (divmeter: ``--repeat``, default 5; peers: 2, 1 with ``--quick``), since the machine is
shared.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import best_times, compiled_path  # noqa: E402
from bench_lexical import (  # noqa: E402  (the shared data and peers)
    DIV,
    make_peer_cosine,
    make_sets,
    peer_distinct,
    peer_ead,
    peer_entropy,
)

import divmeter  # noqa: E402
from divmeter.engine.batch import score_sets  # noqa: E402
from divmeter.inputs.data import ResponseSet  # noqa: E402
from divmeter.metrics.ngram import ngram_diversity  # noqa: E402


def max_abs(a: list[Any], b: list[Any]) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


ROWS: list[tuple[str, str, float, float, float]] = []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 sets instead of 1,000")
    ap.add_argument("--repeat", type=int, default=5, help="runs of divmeter per timing")
    args = ap.parse_args()
    n_sets = 200 if args.quick else 1000
    sets = make_sets(n_sets, 20)
    n_words = sum(len(t.split()) for s in sets for t in s)
    print(f"divmeter batched-scoring benchmark: {n_sets} sets x 20 responses ({n_words:,} words)")
    print(f"divmeter path: {compiled_path()}")
    print("ratio = peer time / divmeter time (> 1: divmeter faster)\n")
    rep = args.repeat

    def pkg_ngd(s: list[str]) -> float:
        return float(DIV.ngram_diversity_score(s, num_n=4))

    def pkg_selfrep(s: list[str]) -> float:
        return float(DIV.self_repetition_score(s, n=4, verbose=False))

    cases: list[tuple[str, str, str, Callable[[list[str]], float]]] = [
        ("distinct-n", "distinct-n (1..5)", "Tevet's algorithm (py sets)", peer_distinct),
        ("entropy-n", "entropy-n (1..5, nats)", "python Counter", peer_entropy),
        ("ead", "ead (1..5, V=50257)", "Kirk et al.'s algorithm (py)", peer_ead),
        ("self-repetition", "self-repetition (n=4)", "diversity.self_repetition_score",
         pkg_selfrep),
        ("ngram-diversity", "ngram-diversity (1..4)", "diversity.ngram_diversity_score",
         pkg_ngd),
        ("ngram-cosine", "ngram-cosine (1..5)", "sklearn CountVectorizer+cos",
         make_peer_cosine()),
    ]
    header = (f"  {'metric':<24} {'per-set':>8} {'batched':>8} {'speed-up':>8} | "
              f"{'peer':<32} {'peer':>7} {'vs per-set':>10} {'vs batched':>10}")
    print(header)
    print("  " + "-" * (len(header) - 2))
    for name, label, peer_name, peer in cases:
        fn = divmeter.get_metric(name).load()
        times, out = best_times(
            {
                "per-set": lambda fn=fn: [fn(s) for s in sets],
                "batched": lambda name=name: divmeter.score_many(sets, name),
                "peer": lambda peer=peer: [peer(s) for s in sets],
            },
            {"per-set": rep, "batched": rep, "peer": 1 if args.quick else 2},
        )
        per_set, batched, peer_vals = out["per-set"], out["batched"], out["peer"]
        assert batched == per_set, f"{name}: batched results differ from per-set results"
        ours = [r.value for r in batched]
        if name == "ngram-diversity":
            # the package joins the documents (n-grams cross them) and rounds to 3 dp
            joined = [round(ngram_diversity([" ".join(s)]).value or 0.0, 3) for s in sets]
            assert joined == peer_vals
            agree = "pkg joins docs: ours on joined text == pkg"
        else:
            err = max_abs(ours, peer_vals)
            assert err < 1e-9, (name, err)
            agree = f"same value (max |diff| {err:.1e})"
        t_s, t_b, t_p = times["per-set"], times["batched"], times["peer"]
        ROWS.append((label, peer_name, t_s, t_b, t_p))
        print(f"  {label:<24} {t_s:8.3f} {t_b:8.3f} {t_s / t_b:7.1f}x | {peer_name:<32} "
              f"{t_p:7.3f} {t_p / t_s:9.1f}x {t_p / t_b:9.1f}x   batched == per-set; {agree}",
              flush=True)

    # divmeter score's engine: every metric above, batched chunks vs one set at a time
    rsets = [ResponseSet(f"s{i}", s) for i, s in enumerate(sets)]
    metrics = [c[0] for c in cases]
    times, out = best_times(
        {
            "chunks": lambda: list(score_sets(rsets, metrics)),
            "one-by-one": lambda: list(score_sets(rsets, metrics, chunk_size=1)),
        },
        {"chunks": max(1, rep // 2), "one-by-one": max(1, rep // 2)},
    )
    assert out["chunks"] == out["one-by-one"]
    print(f"\n  score_sets, {len(metrics)} metrics: one set at a time {times['one-by-one']:.3f} s, "
          f"batched chunks of 256 {times['chunks']:.3f} s "
          f"(x{times['one-by-one'] / times['chunks']:.1f}); identical records")

    print("\nsummary (peer time / divmeter time)")
    for label, peer_name, t_s, t_b, t_p in ROWS:
        print(f"  {label:<24} vs {peer_name:<32} per-set x{t_p / t_s:5.1f}   "
              f"batched x{t_p / t_b:5.1f}")


if __name__ == "__main__":
    main()
