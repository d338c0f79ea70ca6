"""Speed of the Decan metric on this CPU: sets/minute, and what batching + prefix reuse buy.

1. Sets/minute for n = 5 and n = 10 responses with 10 and 50 permutations (plus the n
   unconditional passes), on seeded generated sentences (~70 bytes each) after a one-line prompt.
2. The same permutation passes of one set scored three ways, with identical results checked:
   one forward pass per sequence (no shared prefix, no batching: the one-at-a-time baseline),
   right-padded batches, and batches + the shared prompt prefix run once (KV cache reused).

There is no peer library for this metric on PyPI (the authors' icl-diversity is not packaged);
the comparison is against our own one-at-a-time path, which computes the same quantity (the
check below asserts equal bits to 2e-3).

Run (needs divmeter[lm]; torch is not in .venv-bench):

    .venv/bin/python benchmarks/bench_decan.py            # full grid, float32, 1 thread
    .venv/bin/python benchmarks/bench_decan.py --quick    # n=5, 10 permutations only (< 1 min)
    .venv/bin/python benchmarks/bench_decan.py --dtype bfloat16 --threads 2
"""

from __future__ import annotations

import argparse
import random
import sys
import time

import numpy as np

from divmeter.backends.lm import get_scorer
from divmeter.metrics.decan import decan, format_responses, sample_permutations

SUBJ = ["The old fisherman", "A tired nurse", "My younger brother", "The city council",
        "A stray cat", "The night train", "Our neighbour", "The science teacher"]
VERB = ["quietly repaired", "accidentally painted", "proudly delivered", "slowly carried",
        "secretly rebuilt", "carefully measured", "happily sold", "nervously opened"]
OBJ = ["the broken lantern", "a wooden boat", "three letters", "the rusty gate",
       "a basket of plums", "the blue umbrella", "an empty piano", "the garden shed"]
TAIL = ["before the storm arrived.", "on a cold Sunday morning.", "while everyone was asleep.",
        "near the harbour wall.", "for the village festival.", "after the long winter."]
PROMPT = "Write one sentence about something that happened in a small town."


def make_set(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJ)} {rng.choice(VERB)} {rng.choice(OBJ)} {rng.choice(TAIL)}"
            for _ in range(n)]


def sets_per_minute(
    n: int, perms: int, reps: int, threads: int, dtype: str
) -> tuple[float, float]:
    """Sets per minute of wall time and per minute of this process's CPU time."""
    t, c = time.perf_counter(), time.process_time()
    for s in range(reps):
        r = decan(make_set(n, 100 + s), prompt=PROMPT, permutations=perms, threads=threads,
                  dtype=dtype, format="instruct")
        assert r.value is not None
    return 60.0 * reps / (time.perf_counter() - t), 60.0 * reps / (time.process_time() - c)


def batching_gain(
    n: int, perms: int, threads: int, dtype: str, fmt: str = "instruct"
) -> list[tuple[str, float, float, dict]]:
    sc = get_scorer(threads=threads, dtype=dtype)
    resp = make_set(n, 7)
    items = [format_responses(PROMPT, [resp[i] for i in p], fmt)
             for p in sample_permutations(n, perms, 0)]
    items += [format_responses(PROMPT, [r], fmt) for r in resp]  # the unconditional passes
    texts = [t for t, _ in items]
    spans = [s for _, s in items]
    out, ref = [], None
    for label, sharing, batch in [("one at a time", "none", False),
                                  ("batched", "none", True),
                                  ("batched + common prefix (KV cache)", "prefix", True),
                                  ("prefix tree (KV cache) + batched leaves", "tree", True)]:
        t, c = time.perf_counter(), time.process_time()
        bits = sc.span_bits(texts, spans, sharing=sharing, batch=batch)
        dt, dc = time.perf_counter() - t, time.process_time() - c
        if ref is None:
            ref = bits
        else:
            err = max(float(np.abs(a - b).max()) for a, b in zip(ref, bits, strict=True))
            assert err < 2e-3, f"{label} differs from one-at-a-time by {err} bits"
        out.append((label, dt, dc, sc.last_stats))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--gain-only", action="store_true", help="skip the sets/minute grid")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    args = ap.parse_args()
    t = time.perf_counter()
    sc = get_scorer(threads=args.threads, dtype=args.dtype)
    print(f"model {sc.signature}, dtype {args.dtype}, threads {args.threads}, "
          f"load {time.perf_counter() - t:.1f} s")
    grid = [(5, 10)] if args.quick else [(5, 10), (5, 50), (10, 10), (10, 50)]
    if args.gain_only:
        grid = []
    print("\n| n | permutations | sets/minute (wall) | sets/minute (CPU time) |\n|---|---|---|---|")
    for n, perms in grid:
        reps = 2 if perms <= 10 else 1
        spm, spc = sets_per_minute(n, perms, reps, args.threads, args.dtype)
        print(f"| {n} | {perms} | {spm:.2f} | {spc:.2f} |", flush=True)
    cases = [(5, 10, "instruct")] if args.quick else [
        (5, 10, "instruct"), (5, 50, "instruct"), (10, 10, "instruct"), (5, 50, "completion")]
    for n, perms, fmt in cases:
        print(f"\nOne set, n={n}, {perms} permutations + {n} unconditional passes, {fmt} format:")
        print("| path | wall s | CPU s | speed-up (CPU) | forward passes | token positions run "
              "| output-layer rows |\n|---|---|---|---|---|---|---|")
        rows = batching_gain(n, perms, args.threads, args.dtype, fmt)
        base = rows[0][2]
        for label, dt, dc, st in rows:
            print(f"| {label} | {dt:.2f} | {dc:.2f} | {base / dc:.2f}x | {st['passes']} "
                  f"| {st['tokens']} | {st['head_rows']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
