"""Speed of generation on this CPU.

1. Local (transformers, packaged Gemma-3-270m base, float32): new tokens per second for the same
   sequences decoded with every pass full (``batch_size`` = ``lanes``) and with one real
   sequence per pass (``batch_size=1``; the pass still runs ``lanes`` rows, so the samples are
   the same, which the script checks). Reported per wall-clock second and per CPU second of this
   process (the machine is shared; CPU time is the stabler number).
2. HTTP (llama-cpp-python's server on loopback serving the same GGUF, Q4_K_M): requests per
   second of ``/v1/completions`` at client concurrency 1, 4 and 16 (no cache, every request a
   distinct seed). llama.cpp's server handles one completion at a time, so concurrency mainly
   hides the client's and the HTTP round trip's latency.

Run (needs divmeter[generate] and, for part 2, llama-cpp-python[server]):

    PYTHONPATH=src .venv/bin/python benchmarks/bench_generate.py [--quick]

Writes benchmarks/results_generate.md (``--out``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

PROMPTS = ["Not the hacking", "How is our", "So that's the", "Do you listen",
           "I'm kidding. You", "What are you", "The first thing", "Why would anyone"]


def local(n_prompts: int, n: int, max_tokens: int) -> list[str]:
    from divmeter.studies.generation import get_generator

    gen = get_generator("gemma-3-270m", device="cpu")
    prompts = PROMPTS[:n_prompts]
    gen.generate(prompts[:1], 1, max_tokens=2)  # warm-up
    lines = ["| mode | sequences | passes | new tokens | wall s | CPU s | tokens / wall s | "
             "tokens / CPU s |", "|---|---|---|---|---|---|---|---|"]
    outs = []
    for label, bs in ((f"full passes ({gen.lanes} lanes)", gen.lanes),
                      (f"one sequence per pass ({gen.lanes} lanes)", 1)):
        gen.batch_size = bs
        w0, c0 = time.perf_counter(), time.process_time()
        outs.append(gen.generate(prompts, n, temperature=1.0, max_tokens=max_tokens, seed=0))
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        st = gen.last_stats
        lines.append(f"| {label} | {st['sequences']} | {st['passes']} | {st['tokens']} | "
                     f"{wall:.1f} | {cpu:.1f} | {st['tokens'] / wall:.1f} | "
                     f"{st['tokens'] / cpu:.1f} |")
    lines += ["", f"Same samples both ways: {outs[0] == outs[1]}."]
    return lines


def http(requests: int, max_tokens: int) -> list[str]:
    from divmeter.studies.generation import get_generator
    from llama_server import start_llama_server

    log_dir = Path(tempfile.mkdtemp(prefix="bench-llama-"))
    server = start_llama_server("gemma-3-270m", log_dir)
    lines = ["| concurrency | requests | wall s | requests / s | completion tokens |",
             "|---|---|---|---|---|"]
    try:
        for conc in (1, 4, 16):
            gen = get_generator("openai:gemma-3-270m", base_url=server.url, concurrency=conc,
                                cache=None)
            prompts = [f"{PROMPTS[i % len(PROMPTS)]} ({conc}-{i})" for i in range(requests)]
            t0 = time.perf_counter()
            gen.generate(prompts, 1, max_tokens=max_tokens, seed=conc)
            wall = time.perf_counter() - t0
            lines.append(f"| {conc} | {requests} | {wall:.1f} | {requests / wall:.2f} | "
                         f"{gen.last_stats['tokens']} |")
    finally:
        server.close()
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer sequences")
    ap.add_argument("--parts", default="local,http", help="local, http or both (comma)")
    ap.add_argument("--out", default=str(HERE / "results_generate.md"))
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    n_prompts, n, max_tokens, reqs = (4, 4, 16, 32) if not args.quick else (2, 2, 8, 8)
    cmd = "PYTHONPATH=src python benchmarks/bench_generate.py" + (" --quick" if args.quick
                                                                    else "")
    if parts != {"local", "http"}:
        cmd += f" --parts {args.parts}"
    out = ["# Generation speed", "", f"Command: `{cmd}`", "",
           f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared with other jobs), "
           f"Python {platform.python_version()}.", ""]
    if "local" in parts:
        out += [f"## Local: Gemma-3-270m base (float32), {n_prompts} prompts x {n} samples, "
                f"{max_tokens} new tokens, temperature 1", ""]
        out += local(n_prompts, n, max_tokens)
        out.append("")
    if "http" in parts:
        out += [f"## HTTP: llama-cpp-python server (Gemma-3-270m Q4_K_M GGUF), {reqs} "
                f"completions of {max_tokens} tokens", ""]
        if importlib.util.find_spec("llama_cpp") is None:
            out.append("Not run: llama-cpp-python[server] is not installed.")
        else:
            out += http(reqs, max_tokens)
    out.append("")
    Path(args.out).write_text("\n".join(out), encoding="utf-8")
    print("\n".join(out))


if __name__ == "__main__":
    main()
