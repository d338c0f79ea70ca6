"""Benchmark: divmeter's set-level lexical metrics against the peers a user would otherwise pick.

Run with the benchmark venv (it holds the peer libraries):

    .venv-bench/bin/python benchmarks/bench_lexical.py          # full: 1,000 sets, 10,000 docs
    .venv-bench/bin/python benchmarks/bench_lexical.py --quick  # 100 sets, 1,000 docs (< 1 min)

Workloads (seeded, generated text: Zipf-distributed pseudo-words, shared phrases planted in
some responses so there is cross-response repetition):

(a) sets: 1,000 sets x 20 responses of 10-60 words. Each metric is computed per set by divmeter
    and by the fastest peer computing the same quantity: the `diversity` package (Shaib et al.)
    where it has the metric, scikit-learn's CountVectorizer + cosine_similarity for n-gram
    cosine, and the reference algorithms of Tevet & Berant / Kirk et al. (plain Python sets and
    Counters, as in their released code) where no package exists.
(b) corpus: one corpus of 10,000 documents of ~200 words: compression ratio against `diversity`
    and against a bare ``zlib.compress(bytes, 9)`` on the same bytes (target: within 1.2x), and
    the n-gram diversity score against `diversity` (target: at least 3x faster).

(c) indices (``--indices [N ...]``, issue 32): every per-response lexical index of
    bench_response.py's table on N texts of ~95 tokens from Tevet & Berant's data (2,000 and
    100,000 by default), divmeter's ``score_many`` (and all indices in one engine run) against
    LexicalRichness, TAALED and lexical_diversity, one call per text, with the compiled
    kernels loaded (``divmeter[fast]``).

Times are CPU seconds of this process (``time.process_time``, best of 1-3 runs), since the
machine running it is shared. Every comparison first checks that both sides compute the same
number (or prints the named definitional difference and checks the number under the peer's
definition), then prints times and the ratio peer time / divmeter time (> 1: divmeter faster).
"""

from __future__ import annotations

import argparse
import lzma
import math
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from _common import best_time, best_times, load_diversity, zipf_probs

from divmeter.metrics.ngram import (
    compression_ratio,
    distinct_n,
    ead,
    entropy_n,
    ngram_cosine,
    ngram_diversity,
    self_repetition,
)

DIV: Any = None  # the `diversity` package, loaded by main() for the set and corpus workloads

# ---------------------------------------------------------------------------------------------
# data


def _vocab(rng: np.random.Generator, size: int) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lens = rng.integers(2, 9, size=size)
    words = {"".join(rng.choice(letters, size=k)) for k in lens}
    return sorted(words)


def make_sets(n_sets: int, k: int, seed: int = 0) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    vocab = _vocab(rng, 5000)
    p = zipf_probs(len(vocab), 1.1)
    phrases = [" ".join(rng.choice(vocab, size=6, p=p)) for _ in range(50)]
    out = []
    for _ in range(n_sets):
        lens = rng.integers(10, 61, size=k)
        words = rng.choice(vocab, size=int(lens.sum()), p=p)
        texts, pos = [], 0
        for m in lens:
            t = " ".join(words[pos:pos + m])
            pos += m
            if rng.random() < 0.3:
                t = t + " " + phrases[int(rng.integers(len(phrases)))]
            texts.append(t)
        out.append(texts)
    return out


def make_corpus(n_docs: int, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = _vocab(rng, 20000)
    p = zipf_probs(len(vocab), 1.05)
    lens = rng.integers(160, 241, size=n_docs)
    words = rng.choice(vocab, size=int(lens.sum()), p=p)
    docs, pos = [], 0
    for m in lens:
        docs.append(" ".join(words[pos:pos + m]))
        pos += m
    return docs


# ---------------------------------------------------------------------------------------------
# peers: reference algorithms of the papers' released code (no package exists for these)


def _tevet_ngrams(lines: list[str], n: int) -> list[list[tuple[str, ...]]]:
    out = []
    for s in lines:
        words = [e for e in s.replace(".", "").replace("\n", "").split(" ") if e != ""]
        out.append([tuple(words[i:i + n]) for i in range(len(words) - n + 1)])
    return out


def peer_distinct(texts: list[str]) -> float:
    """Tevet & Berant's averaged_distinct_ngrams (n = 1..5), their algorithm."""
    vals = []
    for n in range(1, 6):
        grams = [g for lst in _tevet_ngrams(texts, n) for g in lst]
        vals.append(len(set(grams)) / len(grams) if grams else 0.0)
    return sum(vals) / 5


def peer_entropy(texts: list[str]) -> float:
    """Shannon entropy (nats) of pooled n-gram counts with collections.Counter, mean n = 1..5."""
    vals = []
    for n in range(1, 6):
        c = Counter(g for lst in _tevet_ngrams(texts, n) for g in lst)
        total = sum(c.values())
        vals.append(-sum(v / total * math.log(v / total) for v in c.values()) if total else 0.0)
    return sum(vals) / 5


def peer_ead(texts: list[str], v: int = 50257) -> float:
    """Kirk et al.'s ead_averaged_distinct_ngrams (their fork of Tevet's code)."""
    vals = []
    for n in range(1, 6):
        grams = [g for lst in _tevet_ngrams(texts, n) for g in lst]
        c = len(grams)
        vals.append(len(set(grams)) / (v * (1 - ((v - 1) / v) ** c)) if c else 0.0)
    return sum(vals) / 5


def make_peer_cosine() -> Callable[[list[str]], float]:
    """scikit-learn: CountVectorizer on Tevet n-grams + cosine_similarity, per n."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    vecs = [CountVectorizer(analyzer=lambda s, n=n: _tevet_ngrams([s], n)[0]) for n in range(1, 6)]

    def peer(texts: list[str]) -> float:
        k = len(texts)
        iu = np.triu_indices(k, 1)
        vals = []
        for vec in vecs:
            try:
                x = vec.fit_transform(texts)
            except ValueError:  # empty vocabulary: every similarity is 0
                vals.append(0.0)
                continue
            vals.append(-float(cosine_similarity(x)[iu].mean()))
        return sum(vals) / 5

    return peer


# ---------------------------------------------------------------------------------------------
# timing


timed = best_time  # best CPU time of this process over ``repeat`` runs


ROWS: list[tuple[str, str, float, float, str]] = []


def report(metric: str, peer: str, t_ours: float, t_peer: float, agree: str) -> None:
    ROWS.append((metric, peer, t_ours, t_peer, agree))
    print(f"  {metric:<26} divmeter {t_ours:8.3f} s | {peer:<34} {t_peer:8.3f} s | "
          f"x{t_peer / t_ours:7.1f} | {agree}", flush=True)


def max_abs(a: list[float], b: list[float]) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


# ---------------------------------------------------------------------------------------------
# workloads


def sets_workload(n_sets: int, k: int) -> None:
    sets = make_sets(n_sets, k)
    n_words = sum(len(t.split()) for s in sets for t in s)
    print(f"\n(a) sets workload: {n_sets} sets x {k} responses ({n_words:,} words)")

    def run(fn: Callable[[list[str]], Any]) -> Callable[[], list[Any]]:
        return lambda: [fn(s) for s in sets]

    cases: list[tuple[str, Callable[[list[str]], float], str, Callable[[list[str]], float]]] = [
        ("distinct-n (1..5)", lambda s: distinct_n(s).value, "Tevet's algorithm (py sets)",
         peer_distinct),
        ("entropy-n (1..5, nats)", lambda s: entropy_n(s).value, "python Counter",
         peer_entropy),
        ("ead (1..5, V=50257)", lambda s: ead(s).value, "Kirk et al.'s algorithm (py)",
         peer_ead),
        ("ngram-cosine (1..5)", lambda s: ngram_cosine(s).value, "sklearn CountVectorizer+cos",
         make_peer_cosine()),
    ]
    for name, ours, peer_name, peer in cases:
        t_o, v_o = timed(run(ours), repeat=2)
        t_p, v_p = timed(run(peer))
        err = max_abs(v_o, v_p)
        report(name, peer_name, t_o, t_p, f"same value (max |diff| {err:.1e})")
        assert err < 1e-9, name

    # self-repetition: the diversity package, same definition
    t_o, v_o = timed(run(lambda s: self_repetition(s).value), repeat=2)
    t_p, v_p = timed(run(lambda s: DIV.self_repetition_score(s, n=4, verbose=False)))
    err = max_abs(v_o, v_p)
    report("self-repetition (n=4)", "diversity.self_repetition_score", t_o, t_p,
           f"same value (max |diff| {err:.1e})")
    assert err < 1e-9

    # n-gram diversity: the package joins documents (n-grams cross boundaries), rounds to 3 dp
    t_o, v_o = timed(run(lambda s: ngram_diversity(s).value), repeat=2)
    t_p, v_p = timed(run(lambda s: DIV.ngram_diversity_score(s, num_n=4)))
    joined = [round(ngram_diversity([" ".join(s)]).value, 3) for s in sets]  # type: ignore[arg-type]
    same = sum(a == b for a, b in zip(joined, v_p, strict=True))
    report("ngram-diversity (1..4)", "diversity.ngram_diversity_score", t_o, t_p,
           f"pkg crosses docs: ours on joined text = pkg in {same}/{len(sets)}; "
           f"mean |ours - pkg| {np.mean(np.abs(np.subtract(v_o, v_p))):.3f}")
    assert same == len(sets)

    # compression ratio: xz identical; gzip: the package compresses twice (see docstring)
    t_o, v_o = timed(run(lambda s: compression_ratio(s, algorithm="xz").value), repeat=2)
    t_p, v_p = timed(run(lambda s: DIV.compression_ratio(s, algorithm="xz")))
    same = sum(round(a, 3) == b for a, b in zip(v_o, v_p, strict=True))
    report("compression-ratio (xz)", "diversity.compression_ratio", t_o, t_p,
           f"same value (3 dp) in {same}/{len(sets)}")
    assert same == len(sets)
    t_o, v_o = timed(run(lambda s: compression_ratio(s).value), repeat=2)
    t_p, v_p = timed(run(lambda s: DIV.compression_ratio(s, algorithm="gzip")))
    recon = [round(_double_gzip_ratio(s), 3) for s in sets]
    same = sum(a == b for a, b in zip(recon, v_p, strict=True))
    report("compression-ratio (gzip)", "diversity.compression_ratio", t_o, t_p,
           f"pkg gzips twice: reconstructed {same}/{len(sets)}; "
           f"mean ours/pkg {np.mean(np.divide(v_o, v_p)):.3f}")
    assert same >= 0.99 * len(sets)
    t_z, _ = timed(run(lambda s: len(zlib.compress(" ".join(s).encode(), 9))), repeat=2)
    report("compression-ratio (gzip)", "bare zlib.compress(join, 9)", t_o, t_z,
           "same compressed stream (+18 B gzip container)")


def _double_gzip_ratio(texts: list[str]) -> float:
    """The `diversity` package's gzip number, rebuilt: gzip stream re-compressed into a gzip file
    whose header carries the name 'compressed'."""
    data = " ".join(texts).encode("utf-8")
    stream = zlib.compress(data, 9, wbits=31)
    co = zlib.compressobj(9, zlib.DEFLATED, -15)
    return len(data) / (10 + 11 + len(co.compress(stream) + co.flush()) + 8)


def corpus_workload(n_docs: int) -> None:
    docs = make_corpus(n_docs)
    data = " ".join(docs).encode("utf-8")
    print(f"\n(b) corpus workload: {n_docs:,} documents, "
          f"{sum(len(d.split()) for d in docs):,} words, {len(data) / 1e6:.1f} MB")

    # compression ratio (gzip): ours includes joining and encoding the texts
    t_o, r_o = timed(lambda: compression_ratio(docs), repeat=3)
    t_z, z = timed(lambda: zlib.compress(data, 9), repeat=3)
    t_p, r_p = timed(lambda: DIV.compression_ratio(docs, algorithm="gzip"))
    assert r_o.details["compressed_bytes"] == len(z) + 18 - 6  # gzip 18 B vs zlib 6 B container
    report("compression-ratio (gzip)", "bare zlib.compress(bytes, 9)", t_o, t_z,
           f"same stream; ours {r_o.value:.4f} (target: <= 1.2x zlib time)")
    recon = round(_double_gzip_ratio(docs), 3)
    report("compression-ratio (gzip)", "diversity.compression_ratio", t_o, t_p,
           f"ours {r_o.value:.4f}, pkg {r_p} (gzips twice; rebuilt {recon})")
    t_ox, r_ox = timed(lambda: compression_ratio(docs, algorithm="xz"))
    t_px, r_px = timed(lambda: DIV.compression_ratio(docs, algorithm="xz"))
    t_lx, _ = timed(lambda: lzma.compress(data))
    report("compression-ratio (xz)", "diversity.compression_ratio", t_ox, t_px,
           f"ours {r_ox.value:.4f}, pkg {r_px}")
    report("compression-ratio (xz)", "bare lzma.compress(bytes)", t_ox, t_lx, "same stream")

    # n-gram diversity: ours keeps documents apart; the package joins them
    t_o, r_o = timed(lambda: ngram_diversity(docs), repeat=2)
    t_p, r_p = timed(lambda: DIV.ngram_diversity_score(docs, num_n=4))
    t_j, r_j = timed(lambda: ngram_diversity([" ".join(docs)]))
    assert round(r_j.value, 3) == r_p
    report("ngram-diversity (1..4)", "diversity.ngram_diversity_score", t_o, t_p,
           f"ours {r_o.value:.4f} (docs apart), pkg {r_p}; ours joined {r_j.value:.4f} "
           "(target: >= 3x)")
    report("ngram-diversity joined", "diversity.ngram_diversity_score", t_j, t_p,
           "same definition as pkg (3 dp)")

    # self-repetition: the package concatenates per-document lists with sum(), quadratic in
    # the number of documents, so it is only run on small corpora
    t_o, r_o = timed(lambda: self_repetition(docs))
    if n_docs <= 2000:
        t_p, r_p = timed(lambda: DIV.self_repetition_score(docs, n=4, verbose=False))
        assert abs(r_o.value - r_p) < 1e-9
        report("self-repetition (n=4)", "diversity.self_repetition_score", t_o, t_p,
               f"same value ({r_o.value:.4f})")
    else:
        print(f"  {'self-repetition (n=4)':<26} divmeter {t_o:8.3f} s | diversity's is quadratic "
              f"in documents (sum of lists): not run at {n_docs:,}")

    # the other set metrics on the whole corpus, divmeter only (no peer scales to it)
    for name, fn in [("distinct-n (1..5)", distinct_n), ("entropy-n (1..5)", entropy_n),
                     ("ead (1..5)", ead), ("ngram-cosine (1..5)", ngram_cosine)]:
        t_o, r_o = timed(lambda fn=fn: fn(docs))
        print(f"  {name:<26} divmeter {t_o:8.3f} s | value {r_o.value:.6f} (no peer run: "
              f"pairwise peers are quadratic)" if name.startswith("ngram-cosine") else
              f"  {name:<26} divmeter {t_o:8.3f} s | value {r_o.value:.6f}")


# ---------------------------------------------------------------------------------------------
# (c) per-response lexical indices against LexicalRichness, TAALED and lexical_diversity (issue 32)


def tevet_texts(n: int, seed: int = 0) -> list[str]:
    """``n`` texts of about 95 tokens from Tevet & Berant's data: the ten responses of each
    decTest set joined with spaces, in file order; past the 2,000 such sets, passes over them
    again with 20% of the words replaced at random (seeded, as in ``corpus_data.py``)."""
    import random

    from corpus_data import tevet_sets

    base = [" ".join(s) for s in tevet_sets()
            if len(s) == 10 and all(s)]
    vocab = sorted({w for t in base for w in t.split()})
    rng = random.Random(seed)
    out = list(base[:n])
    while len(out) < n:
        for t in base:
            words = t.split(" ")
            for j, w in enumerate(words):
                if w and rng.random() < 0.2:
                    words[j] = rng.choice(vocab)
            out.append(" ".join(words))
            if len(out) == n:
                break
    return out


def indices_workload(n_texts: int, repeat: int, skip: Sequence[str] = ()
                     ) -> list[dict[str, Any]]:
    """Every lexical index of bench_response.py's table: divmeter (one ``score_many`` call on
    sets of 10 texts, and every index in one run of the engine, the per-index share of its
    time) against each peer (one call per text on its ``str.split()``), values compared."""
    from bench_response import CASES, SLOW, compare

    import divmeter
    from divmeter.engine.batch import evaluate, resolve_metrics

    texts = tevet_texts(n_texts)
    sets = [texts[i:i + 10] for i in range(0, len(texts), 10)]
    n_tok = sum(len(t.split()) for t in texts)
    print(f"\n(c) {n_texts} texts ({n_tok / n_texts:.0f} tokens each on average, "
          f"{sum(map(len, texts)) / 2**20:.1f} MB) in sets of 10")
    labels = [k for k in CASES if k not in skip]
    # the indices of one count pass (tokens, types, squared type counts) and MSTTR, asked for
    # together as `divmeter score -m ttr -m root-ttr ...` asks: the engine's one run over them
    group = [k for k in labels if CASES[k][0] in ONE_PASS]
    share = math.nan
    if group:  # (none where --skip leaves only the other indices)
        plans = resolve_metrics([(CASES[k][0], CASES[k][1]) for k in group])
        tsets = tuple(tuple(s) for s in sets)
        evaluate(tsets, plans)  # load every kernel once
        t_all, _ = best_time(lambda: evaluate(tsets, plans), repeat)
        share = t_all / len(group)
        print(f"{len(group)} indices in one run: {t_all:.4f} s, {share:.4f} s an index")
    rows = []
    for label in labels:
        metric, params, peers = CASES[label]
        ours = [v for r in divmeter.score_many(sets, metric, **params)
                for v in r.details["per_response"]]
        # divmeter and each peer timed in interleaved rounds (a slow spell of the machine hits
        # every side), best of `repeat` each; a slow peer once, on a fraction of the texts
        fns: dict[str, Callable[[], Any]] = {"divmeter": lambda metric=metric, params=params:
                                             divmeter.score_many(sets, metric, **params)}
        reps, parts = {"divmeter": repeat}, {}
        for name, run, _ in peers:
            slow = SLOW.get((label, name), 1)
            parts[name] = part = sets[:max(1, len(sets) // (slow * max(1, n_texts // 20000)))]
            fns[name] = lambda run=run, part=part: run(part)
            reps[name] = 1 if slow > 1 else repeat
        times, outs = best_times(fns, reps)
        t_ours = times["divmeter"]
        best_peer = None
        for name, _, how in peers:
            t_p, vals = times[name] * len(sets) / len(parts[name]), outs[name]
            n, bad, worst, _ = compare(ours[:len(vals)], vals)
            same = how != "same" or bad == 0
            row = {"n_texts": n_texts, "index": label, "peer": name, "peer_s": t_p,
                   "alone_s": t_ours, "one_run_s": share if label in group else None,
                   "scaled": len(parts[name]) < len(sets),
                   "values": "same" if how == "same" and not bad else how if same else
                   f"{bad} of {n} differ"}
            rows.append(row)
            if best_peer is None or t_p < best_peer["peer_s"]:
                best_peer = row
        assert best_peer is not None
        in_run = (f"x{best_peer['peer_s'] / share:6.1f}" if label in group else "     -")
        print(f"  {label:<22} fastest peer {best_peer['peer']:<24} {best_peer['peer_s']:8.4f} s"
              f"{'*' if best_peer['scaled'] else ' '} | divmeter alone {t_ours:8.4f} s "
              f"x{best_peer['peer_s'] / t_ours:6.1f} | in one run {in_run} | "
              f"{best_peer['values']}", flush=True)
    print("  * a peer timed on a fraction of the texts and scaled up (best of --repeat runs, "
          "interleaved with divmeter's; one run for a slow peer)")
    return rows


#: The indices computed from one count pass (and MSTTR), measured together in one engine run.
ONE_PASS = {"ttr", "root-ttr", "corrected-ttr", "log-ttr", "summer-s", "dugast-u", "maas-a2",
            "maas-log-v0", "yule-k", "yule-i", "herdan-vm", "simpson-d", "msttr"}


def main() -> None:
    global DIV
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100 sets and 1,000 documents")
    ap.add_argument("--indices", type=int, nargs="*", default=None, metavar="N_TEXTS",
                    help="run only (c), the per-response indices, at these sizes "
                    "(default 2000 100000)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip", nargs="*", default=[], help="indices left out of (c)")
    args = ap.parse_args()
    if args.indices is not None:
        from _common import compiled_path

        print(f"divmeter path: {compiled_path()}")
        for n in args.indices or [2000, 100000]:
            indices_workload(n, args.repeat, args.skip)
        return
    DIV = load_diversity()
    n_sets, n_docs = (100, 1000) if args.quick else (1000, 10000)
    print("divmeter lexical benchmark" + (" (quick)" if args.quick else ""))
    print("ratio = peer time / divmeter time (> 1: divmeter faster)")
    sets_workload(n_sets, 20)
    corpus_workload(n_docs)
    print("\nsummary")
    for metric, peer, t_o, t_p, _ in ROWS:
        print(f"  {metric:<26} vs {peer:<34} x{t_p / t_o:7.2f}")


if __name__ == "__main__":
    main()
