"""Benchmark self-BLEU and homogenization against nltk, sacrebleu and `diversity`.

    .venv-bench/bin/python benchmarks/bench_overlap.py [--quick]

Workloads (seeded, generated here):

* sets: 1,000 sets x 20 responses of 15-35 words (paraphrase-like: each set perturbs a base
  sentence, so n-grams are shared within a set).
  - self-BLEU sentence variant vs nltk ``sentence_bleu`` (method1) per response (Texygen);
  - self-BLEU corpus variant vs nltk ``corpus_bleu`` and sacrebleu ``corpus_score``
    (tokenize none, smooth none) per set;
  - homogenization ROUGE-L vs ``diversity.homogenization_score(..., 'rougel')``.
* corpus: ONE set of 10,000 documents of ~200 words. divmeter runs in full; the peers are
  quadratic (every hypothesis re-reads the 9,999 other documents), so they are timed on a few
  hypotheses and the full cost is extrapolated linearly in the number of hypotheses (said so in
  the output). Their per-hypothesis values are checked against divmeter's.

With ``--quick`` the peers run on 25 of the 1,000 sets (times extrapolated x40, marked ``~``)
and on 1 corpus hypothesis (nltk only); divmeter always runs the full workloads.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import best_time, load_diversity_homogenization
from _common import zipf_probs as _zipf_probs

import divmeter
from divmeter.metrics.overlap import homogenization, self_bleu

warnings.filterwarnings("ignore")  # nltk warns about zero higher-order matches
logging.getLogger("sacrebleu").setLevel(logging.ERROR)

SEED = 20261122


# ----------------------------------------------------------------------------- data


def make_sets(n_sets: int = 1000, size: int = 20, seed: int = SEED) -> list[list[str]]:
    """Paraphrase-like sets: each response edits a per-set base sentence of 15-35 words."""
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(5000)])
    p = _zipf_probs(vocab.size)
    sets = []
    for _ in range(n_sets):
        base = rng.choice(vocab.size, size=int(rng.integers(15, 36)), p=p)
        resp = []
        for _ in range(size):
            toks = base.copy()
            edit = rng.random(toks.size) < rng.uniform(0.1, 0.6)
            toks[edit] = rng.choice(vocab.size, size=int(edit.sum()), p=p)
            cut = int(rng.integers(0, 5))
            toks = toks[cut:] if rng.random() < 0.5 else toks[: toks.size - cut]
            resp.append(" ".join(vocab[toks]))
        sets.append(resp)
    return sets


def make_corpus(n_docs: int = 10_000, seed: int = SEED) -> list[str]:
    """~200-word documents mixing Zipf words with phrases from a shared pool (4-gram overlap)."""
    rng = np.random.default_rng(seed + 1)
    vocab = np.array([f"w{i}" for i in range(20_000)])
    p = _zipf_probs(vocab.size)
    pool = [
        vocab[rng.choice(vocab.size, size=int(rng.integers(3, 9)), p=p)].tolist()
        for _ in range(3000)
    ]
    segs = 120  # more segments than any document needs
    is_phrase = rng.random((n_docs, segs)) < 0.5
    phrase = rng.choice(len(pool), size=(n_docs, segs), p=_zipf_probs(len(pool), 1.0))
    n_free = rng.integers(1, 6, size=(n_docs, segs))
    free = vocab[rng.choice(vocab.size, size=int(n_free.sum()), p=p)].tolist()
    targets = rng.integers(150, 251, size=n_docs)
    docs = []
    pos = 0
    for d in range(n_docs):
        parts: list[str] = []
        for s in range(segs):
            if len(parts) >= targets[d]:
                break
            if is_phrase[d, s]:
                parts.extend(pool[phrase[d, s]])
            else:
                k = int(n_free[d, s])
                parts.extend(free[pos : pos + k])
                pos += k
        docs.append(" ".join(parts[: targets[d]]))
    return docs


# ----------------------------------------------------------------------------- peers


def nltk_self_bleu(texts: list[str], n: int, variant: str) -> float:
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu

    toks = [t.split() for t in texts]
    refs = [[t for j, t in enumerate(toks) if j != i] for i in range(len(toks))]
    w = tuple([1.0 / n] * n)
    if variant == "corpus":
        return float(corpus_bleu(refs, toks, weights=w))
    sm = SmoothingFunction().method1
    pairs = zip(refs, toks, strict=True)
    vals = [sentence_bleu(r, h, weights=w, smoothing_function=sm) for r, h in pairs]
    return float(sum(vals) / len(vals))


def sacrebleu_self_bleu(texts: list[str], n: int) -> float:
    import sacrebleu

    m = len(texts)
    streams = [[texts[j if j < i else j + 1] for i in range(m)] for j in range(m - 1)]
    bleu = sacrebleu.BLEU(tokenize="none", smooth_method="none", max_ngram_order=n)
    return float(bleu.corpus_score(texts, streams).score / 100.0)


# ----------------------------------------------------------------------------- helpers


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    return best_time(fn, 1, time.perf_counter)  # one run, wall time


ROWS: list[tuple[str, str, float, str, float, str]] = []


def report(task: str, peer: str, peer_s: float, ours: str, ours_s: float, agree: str) -> None:
    ROWS.append((task, peer, peer_s, ours, ours_s, agree))
    print(
        f"{task:<34} {peer:<34} {peer_s:>9.2f}s  {ours:<26} {ours_s:>7.3f}s "
        f"{peer_s / ours_s:>7.1f}x  {agree}",
        flush=True,
    )


def max_diff(a: list[float], b: list[float]) -> float:
    return float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float))))


# ----------------------------------------------------------------------------- workloads


def bench_sets(quick: bool) -> None:
    sets = make_sets()
    k = 25 if quick else len(sets)
    scale = len(sets) / k
    tag = "~" if quick else ""
    peer_sets = sets[:k]
    print(f"\n== sets: {len(sets)} x {len(sets[0])} responses; peers on {k} sets"
          + (f", times x{scale:g} (extrapolated)" if quick else ""))
    print(f"{'task':<34} {'peer':<34} {'peer':>10}  {'divmeter':<26} {'time':>8} {'ratio':>8}")

    t_ours, ours = timed(lambda: [self_bleu(s, variant="sentence").value for s in sets])
    t_many, many = timed(lambda: [r.value for r in divmeter.score_many(sets, "self-bleu",
                                                                        variant="sentence")])
    t_peer, peer = timed(lambda: [nltk_self_bleu(s, 4, "sentence") for s in peer_sets])
    d = max(max_diff(ours[:k], peer), max_diff(ours, many))
    agree = f"max|diff| {d:.1e}"
    report("self-BLEU-4 sentence (method1)", f"{tag}nltk sentence_bleu", t_peer * scale,
           "self_bleu per set", t_ours, agree)
    report("", f"{tag}nltk sentence_bleu", t_peer * scale, "score_many (batched)", t_many,
           agree)

    t_ours, ours = timed(lambda: [self_bleu(s).value for s in sets])
    t_many, many = timed(lambda: [r.value for r in divmeter.score_many(sets, "self-bleu")])
    t_peer, peer = timed(lambda: [nltk_self_bleu(s, 4, "corpus") for s in peer_sets])
    t_sacre, sacre = timed(lambda: [sacrebleu_self_bleu(s, 4) for s in peer_sets])
    d = max(max_diff(ours[:k], peer), max_diff(ours[:k], sacre), max_diff(ours, many))
    agree = f"max|diff| {d:.1e}"
    report("self-BLEU-4 corpus", f"{tag}nltk corpus_bleu", t_peer * scale,
           "self_bleu per set", t_ours, agree)
    report("", f"{tag}sacrebleu corpus_score", t_sacre * scale, "self_bleu per set", t_ours,
           agree)
    report("", f"{tag}sacrebleu corpus_score", t_sacre * scale, "score_many (batched)",
           t_many, agree)

    hs = load_diversity_homogenization()
    t_ours, ours = timed(lambda: [homogenization(s).value for s in sets])
    t_peer, peer = timed(lambda: [hs(s, "rougel", verbose=False) for s in peer_sets])
    # diversity rounds to 3 decimals (and maps an all-zero set to 1.0; none occurs here)
    d = max_diff([round(v, 3) for v in ours[:k]], peer)
    report("homogenization ROUGE-L F", f"{tag}diversity homogenization", t_peer * scale,
           "homogenization per set", t_ours, f"max|diff| {d:.1e} (peer rounds 3 dp)")


def bench_corpus(quick: bool) -> None:
    docs = make_corpus()
    n_words = sum(len(d.split()) for d in docs) / len(docs)
    n_hyp = 1 if quick else 3
    print(f"\n== corpus: ONE set of {len(docs):,} documents, {n_words:.0f} words on average")
    t_c, rc = timed(lambda: self_bleu(docs, variant="corpus"))
    t_s, rs = timed(lambda: self_bleu(docs, variant="sentence"))
    print(f"divmeter self-BLEU-4 corpus   {t_c:6.2f}s  value {rc.value:.6f}  (target < 10 s)")
    print(f"divmeter self-BLEU-4 sentence {t_s:6.2f}s  value {rs.value:.6f}")

    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    toks = [d.split() for d in docs]
    sm = SmoothingFunction().method1
    per_ours = rs.details["per_response"]
    t0 = time.perf_counter()
    per_peer = []
    for i in range(n_hyp):
        refs = toks[:i] + toks[i + 1 :]
        per_peer.append(sentence_bleu(refs, toks[i], smoothing_function=sm))
    t_peer = (time.perf_counter() - t0) / n_hyp * len(docs)
    d = max_diff(per_ours[:n_hyp], per_peer)
    report("corpus self-BLEU-4 sentence", f"~nltk ({n_hyp} hyp, extrapolated)", t_peer,
           "self_bleu sentence", t_s, f"per-hyp max|diff| {d:.1e}")

    if quick:
        return
    import sacrebleu

    bleu = sacrebleu.BLEU(tokenize="none", smooth_method="none")
    t0 = time.perf_counter()
    for i in range(n_hyp):
        others = docs[:i] + docs[i + 1 :]
        bleu.corpus_score([docs[i]], [[o] for o in others])
    t_peer = (time.perf_counter() - t0) / n_hyp * len(docs)
    report("corpus self-BLEU-4 corpus", f"~sacrebleu ({n_hyp} hyp, extrapolated)", t_peer,
           "self_bleu corpus", t_c, "stats checked via sentence")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="peers on subsamples (< 1 minute)")
    ap.add_argument("--only", choices=["sets", "corpus"], help="run one workload")
    args = ap.parse_args(argv)
    print(f"bench_overlap{' --quick' if args.quick else ''} (seed {SEED}); ratio = peer / divmeter")
    if args.only in (None, "sets"):
        bench_sets(args.quick)
    if args.only in (None, "corpus"):
        bench_corpus(args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
