"""GPU benchmark of issue 23: every model-backed path against its reference, on one card, in one
run (rows printed as soon as measured; JSON written after each row).

Rows (divmeter vs the reference on the same card):

* ``encode-<dtype>``: MiniLM (all-MiniLM-L6-v2 architecture) raw encode of the 10,000 McDiv
  story_gen responses: divmeter's ``SentenceEncoder(device="cuda")`` against
  sentence-transformers' ``encode`` at its best batch size, and its tokenizer alone;
* ``parity-encode``: the same weights on the CPU (``SentenceTransformer.encode``) and on the GPU
  (divmeter's pipelined path): largest relative row difference;
* ``score-many`` / ``cli-score``: ``score_many(..., "embedding-cosine", device="cuda")`` and
  ``divmeter score`` on the 2,000 sets (10,000 responses), end to end, fresh cache;
  ``score-many`` also times the raw encode of the same texts (``ratio_vs_raw_encode``, target
  0.8), the warm-cache rerun per set (the many-set path) against one ``score`` call per set,
  and checks that both give the same values; ``score-host``: the host's own work in the same
  call with the encode taken out (precomputed vectors), fresh and warm cache;
* ``vendi-ngram``: exact n-gram Vendi of 10,000 documents of 200 words (Tevet responses), on
  the GPU in float64 and float32, against the CPU's float64 value; reference:
  ``torch.linalg.eigvalsh`` of a random 10,000 x 10,000 matrix;
* ``pairwise``: vendi-embedding, embedding-cosine, chamfer, chamfer-sqeuclidean, remote-clique
  on one set of 2,048 embeddings and BERTScore's matching on 256 texts, numpy vs the device;
* ``decan-<model>-<dtype>``: Decan, 24 decTest sets, permutations=10: per-set ``decan`` calls
  and ``Decan.score`` on all the sets, sets/min; the CPU and the GPU on 2 sets for parity;
  ``host_profile``: the host's own time per function over 4 per-set calls (cProfile), to attribute
  the host work;
* ``generate-<dtype>``: local generation, 8 prompts x 16 samples x 64 tokens, model loaded once,
  the dynamic KV cache against ``kv_cache="static"`` (CUDA graphs), the same samples checked.

``--real-curves FILE`` (JSON of real-weight Decan surprisals, computed on a CPU with the packaged
model) adds the sigmoid fit's cost on real curves to the decan rows: random weights give flat,
noisy curves whose fits cost up to ~1 s each, so the end-to-end decan rows measure the fit on
curves no real model makes.

Models: no weights travel to the GPU machine (it has no network), so the MiniLM and Gemma
models are the real architectures (their config and tokenizer files, ``--models``) with random
weights made at run time; a Gemma-3-1B-shaped model is the 1B+ row. Timings do not depend on
the weights' values; parity rows compare the same weights on both devices.

Run (GPU):  PYTHONPATH=src python benchmarks/bench_gpu.py --models .gpu/models --data DATA \
                --out $OUT
CPU check:  PYTHONPATH=src python benchmarks/bench_gpu.py --cpu-check   (every path, tiny sizes,
            device=cpu through the torch code; checks numbers, no timings worth reading)
CPU rows:   PYTHONPATH=src python benchmarks/bench_gpu.py --cpu [--rows score]   (full size on
            the CPU with the packaged minilm: the host-side work of the score row)
Without CUDA and without --cpu-check / --cpu it prints that it needs a GPU and exits 0.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROWS: list[dict[str, Any]] = []
OUT: Path | None = None
#: Real-weight Decan surprisals (``--real-curves``): the sigmoid fit's cost on real curves.
REAL_CURVES: Path | None = None


def emit(row: dict[str, Any]) -> None:
    """Print one row and rewrite the JSON file."""
    ROWS.append(row)
    print("ROW " + json.dumps(row, default=float), flush=True)
    if OUT is not None:
        (OUT / "bench_gpu.json").write_text(json.dumps(ROWS, indent=1, default=float))


def guarded(name: str, fn: Callable[[], None]) -> None:
    t0 = time.perf_counter()
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - one failed row must not stop the others
        traceback.print_exc()
        emit({"row": name, "error": f"{type(exc).__name__}: {exc}"})
    print(f"-- {name}: {time.perf_counter() - t0:.1f} s", flush=True)


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best, out


# ------------------------------------------------------------------------------------ data


def tevet_rows(data: Path, folder: str, stem: str, task: str) -> list[dict[str, str]]:
    with open(data / "with_metrics" / folder / f"{stem}_{task}.csv", encoding="utf-8",
              newline="") as fh:
        return list(csv.DictReader(fh))


def resp(row: dict[str, str]) -> list[str]:
    return [v for k, v in row.items() if k.startswith("resp_") and v.strip()]


def mcdiv_sets(data: Path) -> list[list[str]]:
    return [resp(r) for r in tevet_rows(data, "McDiv", "mcdiv_all_no_hds", "story_gen")]


def dectest_sets(data: Path, k: int) -> list[tuple[str, list[str]]]:
    rows = tevet_rows(data, "decTest", "dec_test_1000_no_hds", "story_gen")
    return [(r["context"], resp(r)) for r in rows[:k]]


def documents(data: Path, n_docs: int, words: int = 200, seed: int = 0) -> list[str]:
    """As benchmarks/bench_vendi_scale.py: documents cut from a shuffled response stream."""
    pool: list[str] = []
    for folder, stem in (("decTest", "dec_test_1000_no_hds"), ("McDiv", "mcdiv_all_no_hds")):
        for task in ("prompt_gen", "resp_gen", "story_gen"):
            for r in tevet_rows(data, folder, stem, task):
                pool.extend(resp(r))
    rng = np.random.default_rng(seed)
    stream: list[str] = []
    while len(stream) < n_docs * words:
        for i in rng.permutation(len(pool)):
            stream.extend(pool[i].split())
    return [" ".join(stream[i * words: (i + 1) * words]) for i in range(n_docs)]


# ---------------------------------------------------------------------------------- models


def make_minilm(src: Path, dst: Path) -> Path:
    """A sentence-transformers folder: MiniLM's config, tokenizer and modules, random weights."""
    import torch
    import transformers

    if (dst / "model.safetensors").exists():
        return dst
    shutil.copytree(src, dst, dirs_exist_ok=True)
    torch.manual_seed(0)
    cfg = transformers.AutoConfig.from_pretrained(str(dst))
    transformers.AutoModel.from_config(cfg).save_pretrained(str(dst))
    return dst


def make_gemma(tok: Path, dst: Path, *, size: str) -> Path:
    """A Gemma-3 causal LM folder with random weights: ``270m`` (the packaged model's config),
    ``1b`` (Gemma-3-1B's shape), or ``tiny`` (2 layers, for the CPU check)."""
    import torch
    import transformers

    if (dst / "config.json").exists() and any(dst.glob("*.safetensors")):
        return dst
    dst.mkdir(parents=True, exist_ok=True)
    for f in tok.iterdir():
        if f.is_file() and f.name.endswith(".gz"):
            import gzip

            with gzip.open(f, "rb") as src, open(dst / f.name[:-3], "wb") as out:
                shutil.copyfileobj(src, out)
        elif f.is_file() and f.name != "config.json":
            shutil.copy(f, dst / f.name)
    cfg = transformers.AutoConfig.from_pretrained(str(tok / "config.json"))
    text = getattr(cfg, "text_config", cfg)
    if size == "1b":
        for k, v in {"hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
                     "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
                     "sliding_window": 512}.items():
            setattr(text, k, v)
    elif size == "tiny":
        for k, v in {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 32}.items():
            setattr(text, k, v)
        if hasattr(text, "layer_types"):
            text.layer_types = text.layer_types[:2]
    if hasattr(text, "layer_types") and size == "1b":
        text.layer_types = [("full_attention" if (i + 1) % 6 == 0 else "sliding_attention")
                            for i in range(text.num_hidden_layers)]
    torch.manual_seed(0)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(dev):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    with torch.no_grad():  # a realistic logit scale: random init gives near-uniform outputs
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
    model.save_pretrained(str(dst))
    del model
    if dev == "cuda":
        torch.cuda.empty_cache()
    return dst


# ------------------------------------------------------------------------------------ rows


def row_encode(folder: Path, texts: list[str], device: str, small: bool) -> None:
    import sentence_transformers as st
    import torch

    from divmeter.backends.embed import SentenceEncoder

    warm = texts[:512]
    for dtype in ("float32", "float16", "bfloat16"):
        enc = SentenceEncoder(str(folder), cache=False, device=device, dtype=dtype,
                              pipelined=True)
        enc._encode_raw(warm)
        t_div, _ = timed(lambda enc=enc: enc._encode_raw(texts), 2)
        model = st.SentenceTransformer(str(folder), device=device)
        if dtype != "float32":
            model.to(getattr(torch, dtype))
        ref = {}
        for bs in ((64, 256) if small else (256, 1024, 2048)):
            model.encode(warm, batch_size=bs)
            ref[bs], _ = timed(lambda bs=bs, m=model: m.encode(texts, batch_size=bs), 2)
        best = min(ref, key=lambda b: ref[b])

        tok = getattr(model, "tokenize", None) or model.preprocess

        def tokenize_only(tok: Any = tok) -> None:
            for a in range(0, len(texts), 2048):
                tok(texts[a:a + 2048])

        t_tok, _ = timed(tokenize_only)
        emit({"row": f"encode-{dtype}", "texts": len(texts),
              "divmeter_texts_s": len(texts) / t_div,
              "st_best_batch": best, "st_texts_s": len(texts) / ref[best],
              "st_by_batch_texts_s": {b: len(texts) / t for b, t in ref.items()},
              "st_tokenizer_texts_s": len(texts) / t_tok,
              "ratio_vs_st": ref[best] / t_div})
        del model, enc
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def row_parity_encode(folder: Path, texts: list[str], device: str) -> None:
    import sentence_transformers as st

    from divmeter.backends.embed import SentenceEncoder

    cpu = st.SentenceTransformer(str(folder), device="cpu").encode(texts, batch_size=64)
    gpu = SentenceEncoder(str(folder), cache=False, device=device, pipelined=True)._encode_raw(
        texts)
    rel = np.linalg.norm(cpu - gpu, axis=1) / np.linalg.norm(cpu, axis=1)
    emit({"row": "parity-encode", "texts": len(texts), "max_rel_row_diff": float(rel.max())})


def row_score_many(model: str, sets: list[list[str]], device: str, cpu_sets: int,
                   repeat: int = 2) -> None:
    """``score_many(..., "embedding-cosine")`` end to end against the raw encode of the same
    texts (issue 23's target: >= 80% of its rate), the per-set overhead on a warm cache (the
    many-set path against one ``score`` call per set, the path before it), and parity."""
    import divmeter
    from divmeter.backends.embed import SentenceEncoder, get_encoder
    from divmeter.metrics.embedding import embed_texts

    os.environ["DIVMETER_CACHE"] = tempfile.mkdtemp(prefix="divmeter-cache-")
    warm = [["warm up one", "warm up two", "warm up three"]]
    divmeter.score_many(warm, "embedding-cosine", model=model, device=device)
    texts = [t for s in sets for t in s]
    n = len(texts)
    uniq = list(dict.fromkeys(texts))
    raw = SentenceEncoder(model, cache=False, device=device)
    raw._encode_raw(uniq[:256])
    t_raw, _ = timed(lambda: raw._encode_raw(uniq), repeat)
    t, res = timed(lambda: divmeter.score_many(sets, "embedding-cosine", model=model,
                                               device=device))
    t2, again = timed(lambda: divmeter.score_many(sets, "embedding-cosine", model=model,
                                                  device=device), 3)
    t_lookup, _ = timed(lambda: embed_texts(texts, model, device=device), 3)
    from divmeter.backends import cache as cache_mod

    os.environ["DIVMETER_CACHE"] = tempfile.mkdtemp(prefix="divmeter-cache-")
    cache_mod._CACHES.clear()
    enc: Any = get_encoder(model, device=device)
    enc.cache = cache_mod.get_cache(enc.signature)
    profile = host_profile(lambda: divmeter.score_many(sets, "embedding-cosine", model=model,
                                                       device=device), top=15)
    t_loop, one = timed(lambda: [divmeter.score(s, "embedding-cosine", model=model,
                                                device=device) for s in sets])
    same = all((a.value, a.signature, a.reason) == (b.value, b.signature, b.reason)
               for a, b in zip(again, one, strict=True))
    row: dict[str, Any] = {
        "row": "score-many", "device": device, "model": model, "sets": len(sets),
        "texts": n, "distinct_texts": len(uniq), "seconds": t, "texts_s": n / t,
        "raw_encode_seconds": t_raw, "raw_encode_texts_s": len(uniq) / t_raw,
        "ratio_vs_raw_encode": (n / t) / (len(uniq) / t_raw), "target_ratio": 0.8,
        "seconds_cached_rerun": t2, "overhead_us_per_set_cached": 1e6 * t2 / len(sets),
        "cache_lookup_seconds": t_lookup,
        "per_set_calls_cached_seconds": t_loop,
        "per_set_calls_us_per_set": 1e6 * t_loop / len(sets),
        "many_equals_per_set_calls": same, "host_profile_fresh_cache_with_encode": profile}
    if device != "cpu":
        cpu = divmeter.score_many(sets[:cpu_sets], "embedding-cosine", model=model,
                                  device="cpu")
        row.update({"same_signature_as_cpu": res[0].signature == cpu[0].signature,
                    "max_rel_diff_vs_cpu": max(
                        abs(a.value - b.value) / max(abs(b.value), 1e-12)
                        for a, b in zip(res[:cpu_sets], cpu, strict=True)
                        if a.value is not None and b.value is not None),
                    "cpu_sets_compared": cpu_sets})
    emit(row)


def row_score_host(model: str, sets: list[list[str]], device: str, repeat: int = 5) -> None:
    """The host's own work in ``score_many(..., "embedding-cosine")`` with the encode taken
    out: the encoder's ``_encode_raw`` answers from vectors computed beforehand (its time is
    measured and subtracted), on a fresh cache folder each time (hashing, cache writes, the
    many-set path) and on a warm one; the score row's ratio is bounded by raw encode / (raw
    encode + this)."""
    import divmeter
    from divmeter.backends import cache as cache_mod
    from divmeter.backends.embed import get_encoder
    from divmeter.metrics.embedding import embed_texts

    os.environ["DIVMETER_CACHE"] = tempfile.mkdtemp(prefix="divmeter-cache-")
    flat = [t for s in sets for t in s]
    table = dict(zip(flat, embed_texts(flat, model, device=device), strict=True))
    enc: Any = get_encoder(model, device=device)
    enc.count_truncated(flat)  # the token counts, as the pipelined encode records them
    inside = [0.0]

    def lookup(texts: list[str]) -> np.ndarray:
        t0 = time.perf_counter()
        out = np.stack([table[t] for t in texts])
        inside[0] += time.perf_counter() - t0
        return out

    real, enc._encode_raw = enc._encode_raw, lookup
    fresh = []
    try:
        for _ in range(repeat):
            os.environ["DIVMETER_CACHE"] = tempfile.mkdtemp(prefix="divmeter-cache-")
            cache_mod._CACHES.clear()
            enc.cache = cache_mod.get_cache(enc.signature)
            inside[0] = 0.0
            t, _ = timed(lambda: divmeter.score_many(sets, "embedding-cosine", model=model,
                                                     device=device))
            fresh.append(t - inside[0])
            enc.cache.flush()
        os.environ["DIVMETER_CACHE"] = tempfile.mkdtemp(prefix="divmeter-cache-")
        cache_mod._CACHES.clear()
        enc.cache = cache_mod.get_cache(enc.signature)
        profile = host_profile(lambda: divmeter.score_many(sets, "embedding-cosine", model=model,
                                                           device=device), top=15)
        enc.cache.flush()
    finally:
        enc._encode_raw = real
    t_warm, _ = timed(lambda: divmeter.score_many(sets, "embedding-cosine", model=model,
                                                  device=device), repeat)
    emit({"row": "score-host", "device": device, "sets": len(sets), "texts": len(flat),
          "host_seconds_fresh_cache_best": min(fresh),
          "host_seconds_fresh_cache_median": sorted(fresh)[len(fresh) // 2],
          "host_seconds_warm_cache_best": t_warm, "host_profile_fresh_cache": profile})


def row_cli(folder: Path, sets: list[list[str]], device: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="divmeter-cli-"))
    big, small = tmp / "sets.jsonl", tmp / "two.jsonl"
    with big.open("w") as fh:
        for i, s in enumerate(sets):
            fh.write(json.dumps({"id": str(i), "responses": s}) + "\n")
    with small.open("w") as fh:
        for i, s in enumerate([["one a", "one b"], ["two a", "two b"]]):
            fh.write(json.dumps({"id": str(i), "responses": s}) + "\n")
    env = dict(os.environ, DIVMETER_CACHE=str(tmp / "cache"))
    out = {}
    for name, f in (("two_sets", small), ("all_sets", big)):
        cmd = [sys.executable, "-c", "from divmeter.apps.cli import main; main()", "score", str(f),
               "-m", f"embedding-cosine:model={folder},device={device}", "-o",
               str(tmp / f"{name}.out.jsonl")]
        t0 = time.perf_counter()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        out[name] = time.perf_counter() - t0
        if p.returncode != 0:
            raise RuntimeError(f"divmeter score failed: {p.stderr[-800:]}")
    n = sum(len(s) for s in sets)
    emit({"row": "cli-score", "texts": n, "seconds": out["all_sets"],
          "seconds_two_sets": out["two_sets"],
          "texts_s_net": n / max(out["all_sets"] - out["two_sets"], 1e-9)})


def row_vendi(docs: list[str], device: str, cpu_too: bool) -> None:
    import torch

    import divmeter

    divmeter.score(docs[:300], "vendi-ngram", device=device)  # warm-up (CUDA context, kernels)
    t64, r64 = timed(lambda: divmeter.score(docs, "vendi-ngram", device=device))
    t32, r32 = timed(lambda: divmeter.score(docs, "vendi-ngram", device=device,
                                            dtype="float32"))
    row: dict[str, Any] = {"row": "vendi-ngram", "docs": len(docs), "device_float64_s": t64,
                           "device_float32_s": t32, "value_float64": r64.value,
                           "value_float32": r32.value, "path": r64.details["path"],
                           "signature": r64.signature}
    if cpu_too:
        tc, rc = timed(lambda: divmeter.score(docs, "vendi-ngram", max_memory="64G"))
        row.update({"cpu_float64_s": tc, "cpu_value": rc.value,
                    "rel_float64_vs_cpu": abs(r64.value - rc.value) / rc.value,
                    "rel_float32_vs_cpu": abs(r32.value - rc.value) / rc.value,
                    "same_signature": rc.signature == r64.signature})
        wq = {}
        for q in (0.5, 2.0, float("inf")):
            from divmeter.metrics.vendi import vendi_from_eigenvalues

            a = vendi_from_eigenvalues(r64.details["eigenvalues"], q)
            b = vendi_from_eigenvalues(rc.details["eigenvalues"], q)
            wq[str(q)] = abs(a - b) / b
        row["rel_float64_vs_cpu_other_q"] = wq
    m = len(docs)
    if torch.cuda.is_available():
        g = torch.Generator(device="cuda").manual_seed(0)
        for dt in (torch.float32, torch.float64):
            a = torch.randn((m, m), device="cuda", dtype=dt, generator=g)
            a = (a + a.T) / 2
            torch.linalg.eigvalsh(a[:256, :256])
            t, _ = timed(lambda a=a: torch.linalg.eigvalsh(a))
            row[f"ref_eigvalsh_{str(dt).split('.')[-1]}_s"] = t
            del a
    emit(row)


def row_pairwise(device: str, n: int, n_bert: int) -> None:
    from divmeter.backends import torch_linalg as tl
    from divmeter.metrics import embedding as E
    from divmeter.metrics.vendi import vendi_from_features

    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 384)).astype(np.float32).astype(np.float64)
    cases = {
        "vendi-embedding": (lambda: vendi_from_features(X), lambda: vendi_from_features(
            X, device=device)),
        "cosine": (lambda: E.cosine_diversity(X), lambda: float(
            -tl.cosine_matrix(X, device)[np.triu_indices(n, 1)].mean())),
        "chamfer-sqeuclidean": (lambda: float(E._sqeuclidean_nearest(X).mean()),
                                lambda: float(tl.sqeuclidean_nearest(X, device).mean())),
        "remote-clique": (lambda: E.remote_clique_value(X),
                          lambda: tl.pair_distances_mean(X, "euclidean", device)),
    }
    row: dict[str, Any] = {"row": "pairwise", "n": n}
    for name, (cpu_fn, dev_fn) in cases.items():
        dev_fn()
        tc, vc = timed(cpu_fn)
        td, vd = timed(dev_fn)
        row[name] = {"cpu_s": tc, "device_s": td, "rel": abs(vc - vd) / max(abs(vc), 1e-300)}
    toks = [rng.standard_normal((int(rng.integers(5, 40)), 384)) for _ in range(n_bert)]
    tl.bertscore_matrices(toks[:4], None, device)
    tc, (pc, _, fc) = timed(lambda: E.bertscore_matrices(toks))
    td, (pd, _, fd) = timed(lambda: tl.bertscore_matrices(toks, None, device))
    row["bertscore-matching"] = {"texts": n_bert, "cpu_s": tc, "device_s": td,
                                 "max_abs_f1": float(np.nanmax(np.abs(fc - fd)))}
    emit(row)


def row_decan(folder: Path, label: str, sets: list[tuple[str, list[str]]], device: str,
              dtypes: tuple[str, ...], parity: int, perms: int) -> None:
    import torch

    from divmeter.backends import lm
    from divmeter.metrics.decan import Decan, decan

    for dtype in dtypes:
        kw = {"model": str(folder), "permutations": perms, "dtype": dtype, "device": device}
        decan(sets[0][1], prompt=sets[0][0], **kw)  # load + warm-up
        t_loop, r_loop = timed(lambda kw=kw: [decan(s, prompt=p, **kw) for p, s in sets])
        # the definition on all the sets at once (sets share scorer calls on an accelerator)
        t_many, r_many = timed(lambda kw=kw: Decan(**kw).score(
            [tuple(s) for _, s in sets], [{"prompt": p} for p, _ in sets]))
        ok = [(a.value, b.value) for a, b in zip(r_loop, r_many, strict=True)
              if a.value is not None and b.value is not None]
        rel = max((abs(a - b) / max(abs(a), 1e-12) for a, b in ok), default=None)
        row: dict[str, Any] = {"row": f"decan-{label}-{dtype}", "sets": len(sets),
                               "permutations": perms,
                               "sets_min_per_set_calls": 60 * len(sets) / t_loop,
                               "sets_min_decan_many": 60 * len(sets) / t_many,
                               "max_rel_loop_vs_many": rel,
                               "fast_head": lm.get_scorer(str(folder), dtype=dtype,
                                                          device=device)._fast_head}
        # the LM part alone (surprisal) and the curve fit alone, per set and across sets
        from divmeter.metrics.decan import _surprisal_inputs, decan_from_surprisal, decan_surprisal

        t_lm, outs = timed(lambda kw=kw: [decan_surprisal(
            s, prompt=p, permutations=perms, model=kw["model"], dtype=kw["dtype"],
            device=device) for p, s in sets])
        t_fit, _ = timed(lambda outs=outs: [decan_from_surprisal(a, b, c) for a, b, c, _ in outs])
        fit_each = []
        for a, b, c, _ in outs:  # which curves cost the time (random weights: a few do)
            f0 = time.perf_counter()
            decan_from_surprisal(a, b, c)
            fit_each.append(round(1e3 * (time.perf_counter() - f0), 1))
        scorer = lm.get_scorer(str(folder), dtype=dtype, device=device)
        inputs = [_surprisal_inputs(s, p, perms, "completion", 0) for p, s in sets]
        t_lm_many, _ = timed(lambda inputs=inputs, scorer=scorer: scorer.span_bits(
            [t for i in inputs for t in i[0]], [x for i in inputs for x in i[1]]))
        row.update({"sets_min_lm_only_per_set": 60 * len(sets) / t_lm,
                    "sets_min_lm_only_cross_set": 60 * len(sets) / t_lm_many,
                    "fit_seconds_all_sets": t_fit, "fit_ms_each_set": fit_each,
                    "last_stats": dict(scorer.last_stats)})
        sharing = getattr(scorer, "default_sharing", "tree")
        row["sharing_default"] = sharing
        if sharing != "tree":  # the same cross-set call through the prefix tree (the old path)
            t_tree, _ = timed(lambda inputs=inputs, scorer=scorer: scorer.span_bits(
                [t for i in inputs for t in i[0]], [x for i in inputs for x in i[1]],
                sharing="tree"))
            row.update({"sets_min_lm_only_cross_set_tree": 60 * len(sets) / t_tree,
                        "last_stats_tree": dict(scorer.last_stats)})
        if REAL_CURVES is not None:  # the fit on real-weight curves, on this host
            real = json.loads(REAL_CURVES.read_text())["sets"]
            t_real, _ = timed(lambda real=real: [decan_from_surprisal(
                np.array(c["perm_bits"]), np.array(c["perm_bytes"]), np.array(c["uncond"]))
                for c in real], 3)
            per_set = t_real / len(real)
            row.update({"fit_real_curves_sets": len(real),
                        "fit_real_curves_ms_per_set": 1e3 * per_set,
                        "fit_random_curves_ms_per_set": 1e3 * t_fit / len(sets),
                        "sets_min_lm_cross_set_plus_real_fit":
                            60 * len(sets) / (t_lm_many + per_set * len(sets)),
                        "sets_min_lm_per_set_plus_real_fit":
                            60 * len(sets) / (t_lm + per_set * len(sets))})
        if parity and dtype == "float32":
            cpu = [decan(s, prompt=p, **dict(kw, device="cpu")) for p, s in sets[:parity]]
            pairs = [(a.value, b.value) for a, b in zip(r_loop[:parity], cpu, strict=True)
                     if a.value is not None and b.value is not None]
            row["max_rel_vs_cpu"] = max((abs(a - b) / max(abs(b), 1e-12) for a, b in pairs),
                                        default=None)
            row["cpu_sets_compared"] = len(pairs)
        row["host_profile"] = host_profile(
            lambda kw=kw: [decan(s, prompt=p, **kw) for p, s in sets[:4]])
        emit(row)
        if torch.cuda.is_available():
            profile_decan(sets[0], kw)
        lm._SCORERS.clear()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def host_profile(fn: Callable[[], Any], top: int = 12) -> list[dict[str, Any]]:
    """Where the host's time goes in ``fn()`` (cProfile, own time per function, largest
    first; a CUDA wait shows up in the call that waits, e.g. ``.cpu()`` or ``item``)."""
    import cProfile
    import pstats

    prof = cProfile.Profile()
    sync()
    prof.enable()
    fn()
    sync()
    prof.disable()
    stats = pstats.Stats(prof)
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]  # type: ignore[attr-defined]
    out = [{"function": f"{Path(f).name}:{line}({name})", "calls": nc, "own_s": tt,
            "cumulative_s": ct} for (f, line, name), (_, nc, tt, ct, _) in rows]
    print("host profile (own time):\n" + "\n".join(
        f"  {r['own_s']:8.3f} s {r['cumulative_s']:8.3f} s {r['calls']:7d}  {r['function']}"
        for r in out), flush=True)
    return out


def profile_decan(one: tuple[str, list[str]], kw: dict[str, Any]) -> None:
    """Where one set's Decan time goes on the GPU (top operators by device time)."""
    import torch

    from divmeter.metrics.decan import decan

    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            decan(one[1], prompt=one[0], **kw)
            torch.cuda.synchronize()
        print(f"profile decan {kw['dtype']}:\n" + prof.key_averages().table(
            sort_by="self_cuda_time_total", row_limit=12, max_name_column_width=50), flush=True)
    except Exception as exc:  # noqa: BLE001 - a profile is a bonus
        print(f"profile failed: {exc}", flush=True)


def row_generate(folder: Path, device: str, prompts: int, n: int, tokens: int) -> None:
    """Local generation, model loaded once (as ``measure_throughput``): the dynamic KV cache
    (the path measured at 4,150 tokens/s, float32, 128 lanes) against ``kv_cache="static"``
    (CUDA graphs on a GPU), the same samples checked (both paths, and the first prompt alone)."""
    import torch

    from divmeter.studies.generation.local import TransformersGenerator

    ps = [f"Write a short story about topic number {i}." for i in range(prompts)]
    kw: dict[str, Any] = {"temperature": 1.0, "max_tokens": tokens, "seed": 0}
    for dtype in ("float32", "bfloat16"):
        row: dict[str, Any] = {"row": f"generate-{dtype}", "prompts": prompts, "samples": n,
                               "max_tokens": tokens}
        outs = {}
        for kv in ("dynamic", "static"):
            gen = TransformersGenerator(str(folder), device=device, dtype=dtype, kv_cache=kv)
            gen.generate(ps[:1], 1, max_tokens=2)  # warm-up
            t, outs[kv] = timed(lambda gen=gen: gen.generate(ps, n, **kw))
            toks = gen.last_stats["tokens"]
            row[kv] = {"seconds": t, "tokens": toks, "tokens_s": toks / t,
                       "passes": gen.last_stats["passes"], "lanes": gen.lanes,
                       "signature": gen.signature}
            if kv == "static":  # the first call captured the graph; time a replayed call too
                t2, again = timed(lambda gen=gen: gen.generate(ps, n, **kw))
                row[kv].update({
                    "seconds_first_call": t, "seconds": t2, "tokens_s": toks / t2,
                    "repeat_same": again == outs[kv], "decoded_by": gen.last_graph,
                    "same_alone": gen.generate(ps[:1], n, **kw)[0] == outs[kv][0]})
                row[kv]["host_profile"] = host_profile(lambda gen=gen: gen.generate(ps, n, **kw))
            del gen
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        pairs = [(a, b) for pa, pb in zip(outs["dynamic"], outs["static"], strict=True)
                 for a, b in zip(pa, pb, strict=True)]
        row["static_same_samples_as_dynamic"] = sum(a == b for a, b in pairs)
        row["samples_compared"] = len(pairs)
        row["speedup_static"] = row["dynamic"]["seconds"] / row["static"]["seconds"]
        emit(row)


# ------------------------------------------------------------------------------------- main


def main() -> None:
    global OUT, REAL_CURVES
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cpu-check", action="store_true",
                    help="run every path on the CPU at tiny sizes (torch code, device=cpu)")
    ap.add_argument("--cpu", action="store_true",
                    help="run the rows (default: score) at full size on the CPU, with the "
                    "CPU's own code paths and the packaged minilm model (real weights): the "
                    "host-side part of a GPU row, measured without a GPU")
    ap.add_argument("--models", type=Path, default=HERE.parent / ".gpu" / "models",
                    help="folder with minilm/ (config + tokenizer) and gemma-tok/")
    ap.add_argument("--data", type=Path,
                    default=Path(os.environ.get("DIVMETER_SHARED", "/work/shared")) / "data"
                    / "tevet")
    ap.add_argument("--out", type=Path, default=None, help="folder for bench_gpu.json")
    ap.add_argument("--rows", default=None, help="comma-separated rows to run, in this order "
                    "(default: encode,score,score-host,vendi,decan,generate,parity,pairwise,cli,"
                    "decan1b; with --cpu: score)")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "divmeter-gpu")
    ap.add_argument("--real-curves", type=Path, default=None,
                    help="JSON of real-weight Decan surprisals ({'sets': [{perm_bits, "
                    "perm_bytes, uncond}]}): the decan rows also time the sigmoid fit on them")
    args = ap.parse_args()
    import torch

    cuda = torch.cuda.is_available()
    if not cuda and not args.cpu_check and not args.cpu:
        print("bench_gpu.py needs a CUDA GPU (torch sees none); nothing measured. "
              "Use --cpu-check to run every path on the CPU at tiny sizes, or --cpu for the "
              "full-size rows on the CPU.")
        return
    if args.rows is None:
        args.rows = ("score" if args.cpu else "encode,score,score-host,vendi,decan,generate,"
                     "parity,pairwise,cli,decan1b")
    OUT = args.out
    REAL_CURVES = args.real_curves
    if OUT is not None:
        OUT.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    device = "cuda" if cuda and not args.cpu_check and not args.cpu else "cpu"
    small = args.cpu_check
    if small:  # every torch path on the CPU, down to tiny sets
        from divmeter.backends import embed, torch_linalg

        torch_linalg.CPU_THROUGH_TORCH = True
        torch_linalg.DEVICE_MIN_ITEMS = 2
        embed.PIPELINED_ON_CPU = True
    import sentence_transformers
    import transformers

    import divmeter

    card = (torch.cuda.get_device_name(0) if device != "cpu"
            else "none (CPU run)" if args.cpu else "none (CPU check)")
    emit({"row": "machine", "card": card, "device": device, "torch": torch.__version__,
          "transformers": transformers.__version__,
          "sentence_transformers": sentence_transformers.__version__,
          "divmeter": divmeter.__version__, "cpus": os.cpu_count()})
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    minilm = (Path("minilm") if args.cpu  # the packaged model: no --models folder needed
              else make_minilm(args.models / "minilm", work / "minilm-random"))
    sets = mcdiv_sets(args.data)
    if small:
        sets = sets[:12]
    texts = [t for s in sets for t in s]
    dsets = dectest_sets(args.data, 3 if small else 24)
    perms = 2 if small else 10
    size = "tiny" if small else "270m"
    gemma = work / f"gemma-{size}-random"

    def decan270() -> None:
        g = make_gemma(args.models / "gemma-tok", gemma, size=size)
        row_decan(g, size, dsets, device, ("float32", "bfloat16"), 2, perms)

    def decan1b() -> None:
        if small:
            return
        g = make_gemma(args.models / "gemma-tok", work / "gemma-1b-random", size="1b")
        row_decan(g, "1b", dsets, device, ("bfloat16", "float32"), 0, perms)

    def vendi() -> None:
        row_vendi(documents(args.data, 600 if small else 10_000), device, True)

    table: dict[str, Callable[[], None]] = {
        "encode": lambda: row_encode(minilm, texts, device, small),
        "parity": lambda: row_parity_encode(minilm, texts[:500], device),
        "score": lambda: row_score_many(str(minilm), sets, device, 4 if small else 100,
                                        1 if device == "cpu" else 2),
        "score-host": lambda: row_score_host(str(minilm), sets, device),
        "cli": lambda: row_cli(minilm, sets, device),
        "vendi": vendi,
        "pairwise": lambda: row_pairwise(device, 300 if small else 2048, 40 if small else 256),
        "decan": decan270,
        "decan1b": decan1b,
        "generate": lambda: row_generate(make_gemma(args.models / "gemma-tok", gemma, size=size),
                                         device, 2 if small else 8, 2 if small else 16,
                                         4 if small else 64),
    }
    for name in args.rows.split(","):
        if name not in table:
            raise SystemExit(f"unknown row {name!r}; rows: {', '.join(table)}")
        if args.cpu and name not in {"score", "score-host", "cli", "vendi", "pairwise"}:
            raise SystemExit(f"row {name!r} needs the --models folders (a GPU run or "
                             "--cpu-check); --cpu runs score, score-host, cli, vendi, pairwise")
        guarded(name, table[name])
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
