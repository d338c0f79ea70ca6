"""Decan over llama.cpp's /v1/completions (echo + logprobs) vs the local transformers path.

Both score the same packaged Gemma-3-270m Q4_K_M GGUF: the server with llama.cpp's quantized
kernels, the local path dequantized to float32. Prints D, a_n, C of each and the relative
differences (Khoriaty et al. 2026, eqs. 4-6), and per-position bits/byte ratios.

    PYTHONPATH=src python benchmarks/decan_server.py --base-url http://127.0.0.1:PORT/v1

(start the server with ``python -m llama_cpp.server --model GGUF --model_alias gemma-3-270m
--logits_all true``, as tests/llama_server.py does).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from divmeter.metrics.decan import decan

SETS = [
    ("Describe the weather.",
     ["It rained all day.", "The sun came out at noon.", "Snow fell over the quiet town."]),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", default="gemma-3-270m")
    ap.add_argument("--permutations", type=int, default=3)
    a = ap.parse_args()
    for prompt, responses in SETS:
        t = time.perf_counter()
        r = decan(responses, prompt=prompt, permutations=a.permutations,
                  model=f"openai:{a.model}", base_url=a.base_url, format="instruct")
        tr = time.perf_counter() - t
        t = time.perf_counter()
        loc = decan(responses, prompt=prompt, permutations=a.permutations, format="instruct")
        tl = time.perf_counter() - t
        print(f"server {tr:.1f} s  {r.signature}")
        print(f"local  {tl:.1f} s  {loc.signature}")
        print("| quantity | server (llama.cpp Q4_K_M) | local (float32) | relative difference |")
        print("|---|---|---|---|")
        for k in ("D", "a_n", "C"):
            x, y = r.details[k], loc.details[k]
            print(f"| {k} | {x:.6f} | {y:.6f} | {x / y - 1:+.4%} |")
        pr = np.array(r.details["perm_bpb"]) / np.array(loc.details["perm_bpb"]) - 1
        ur = np.array(r.details["unconditional_bpb"]) / np.array(
            loc.details["unconditional_bpb"]) - 1
        print(f"per-position bits/byte, relative: max |diff| {np.abs(pr).max():.4%}; "
              f"unconditional: max |diff| {np.abs(ur).max():.4%}")


if __name__ == "__main__":
    main()
