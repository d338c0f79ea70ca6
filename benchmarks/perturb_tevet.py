"""Perturbations on 100 Tevet sets (commonsense paper, section 4.2 / Table 4, on Tevet data).

Takes the first 100 response sets of conTest (``con_test_200_with_hds_resp_gen.csv``, 5
responses each), builds RndShuff and NounShuff (spaCy ``en_core_web_sm``) and, with
``--para``, Para-1/2/3 with SmolLM2-135M-Instruct (the packaged GGUF, served on loopback by
llama.cpp's server, through the shared HttpClient), and scores source and perturbed sets with
distinct-n, self-BLEU and embedding-cosine (divmeter defaults). Reports per builder and metric:
the mean over sets of the source and the perturbed score, the mean change, and in how many
sets the metric calls the perturbed set more / equally / less diverse (direction-aware:
self-BLEU is lower-is-more-diverse). Nothing is tuned.

The paper's point to check: form metrics barely notice shuffles (RndShuff keeps every word,
NounShuff every noun), content metrics should; Para-k should lower every metric.

Run (needs divmeter[build,embed], llama-cpp-python[server] for --para, ../shared/data):

    PYTHONPATH=src .venv/bin/python benchmarks/perturb_tevet.py --para
    PYTHONPATH=src .venv/bin/python benchmarks/perturb_tevet.py --n 20      # quick

Writes benchmarks/results_perturb_tevet.md (``--out`` to change).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import divmeter
from divmeter.inputs.data.readers import read_sets
from divmeter.studies.perturb import build

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DIVMETER_SHARED", REPO.parent / "shared"))
DATA = SHARED / "data" / "tevet" / "with_metrics" / "conTest" / "con_test_200_with_hds_{}.csv"
METRICS = {"distinct-n": True, "self-bleu": False, "embedding-cosine": True}  # higher = diverse?


def scores(sets: list, metric: str) -> np.ndarray:
    return np.array([r.value for r in divmeter.score_many(sets, metric)], dtype=float)


def summarize(name: str, src: dict[str, np.ndarray], out: list) -> list[str]:
    rows = []
    for metric, higher in METRICS.items():
        a, b = src[metric], scores(out, metric)
        d = (b - a) if higher else (a - b)  # > 0: the perturbed set looks more diverse
        more, tie, less = int((d > 1e-12).sum()), int((np.abs(d) <= 1e-12).sum()), int(
            (d < -1e-12).sum())
        rows.append(f"| {name} | {metric} | {a.mean():.4f} | {b.mean():.4f} | "
                    f"{(b - a).mean():+.4f} | {more} / {tie} / {less} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="resp_gen")
    ap.add_argument("--n", type=int, default=100, help="first N sets of the file")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--para", action="store_true", help="also Para-1/2/3 with SmolLM2")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results_perturb_tevet.md"))
    args = ap.parse_args()
    path = Path(str(DATA).format(args.task))
    if not path.exists():
        sys.exit(f"{path} not found (set DIVMETER_SHARED)")
    sets = list(read_sets(path))[: args.n]
    t0 = time.time()
    src = {m: scores(sets, m) for m in METRICS}
    table = ["| builder | metric | source mean | perturbed mean | mean change | "
             "sets more / equal / less diverse |", "|---|---|---|---|---|---|"]
    sigs, samples = [], {}
    builders: list[tuple[str, dict]] = [("rndshuff", {}), ("nounshuff", {})]
    server = None
    if args.para:
        sys.path.insert(0, str(REPO / "tests"))
        from divmeter.studies.perturb import ChatServerGenerator
        from llama_server import start_llama_server

        server = start_llama_server("smollm2-135m-instruct", Path(tempfile.mkdtemp()))
        gen = ChatServerGenerator(server.model, server.url, cache=None, concurrency=2)
        builders += [("para", {"k": k, "generator": gen, "max_tokens": 48}) for k in (1, 2, 3)]
    try:
        for name, kw in builders:
            t = time.time()
            b = build(name, sets, seed=args.seed, **kw)
            print(f"{b.builder}: built in {time.time() - t:.0f}s", file=sys.stderr)
            table += summarize(b.builder, src, b.sets)
            sigs.append(b.signature)
            samples[b.builder] = b.sets[0].responses
    finally:
        if server is not None:
            server.close()
    sig_metrics = [divmeter.score(sets[0].responses, m).signature for m in METRICS]
    cmd = "PYTHONPATH=src .venv/bin/python benchmarks/perturb_tevet.py" + (
        " --para" if args.para else "") + (f" --n {args.n}" if args.n != 100 else "")
    lines = [
        "# Perturbations on Tevet conTest sets (commonsense paper section 4.2)",
        "",
        f"First {len(sets)} sets of `conTest/{path.name}` (5 responses each), seed "
        f"{args.seed}. Command: `{cmd}` ({time.time() - t0:.0f} s on the 2-core CPU, shared).",
        "'more / equal / less' counts the sets in which the metric calls the perturbed set more "
        "diverse than its source (self-BLEU: lower = more diverse).",
        "",
        *table,
        "",
        "Builders: " + "; ".join(f"`{s}`" for s in sigs),
        "",
        "Metrics: " + "; ".join(f"`{s}`" for s in sig_metrics),
        "",
        "First set, source and built:",
        "",
        *[f"- source: {t!r}" for t in sets[0].responses],
        *[f"- {k}: {t!r}" for k, v in samples.items() for t in v],
        "",
    ]
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
