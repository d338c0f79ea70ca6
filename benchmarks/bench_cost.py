"""The cost note of one large set against the time it really takes (issue 27).

Before the work on a set whose rough time reaches ``divmeter.core.memory.ANNOUNCE_SECONDS``,
``divmeter score`` prints one line with the set's responses, pairs, memory and rough time
(:class:`divmeter.core.memory.Cost`). This script scores one large set per case with progress
reporting on (every report taken, so its overhead is in the measured time), reads the rough
time of the note and prints it next to the measured time and their ratio (the estimate is meant
to be within a factor of about 2).

Data: seeded Zipf-distributed words (5,000-word vocabulary), responses of 10..60 words.

Run (results go to benchmarks/results_speed.md by hand):
    PYTHONPATH=src /work/main/.venv/bin/python benchmarks/bench_cost.py [--quick]
"""

from __future__ import annotations

import argparse
import re
import time
from typing import Any

import numpy as np
from _common import zipf_probs

import divmeter
from divmeter.core import memory

#: (metric, parameters, responses) of the full run; --quick divides the responses by 4.
CASES: list[tuple[str, dict[str, Any], int]] = [
    ("homogenization", {"measure": "rouge1"}, 20_000),
    ("homogenization", {"measure": "rouge2"}, 20_000),
    ("homogenization", {"measure": "bleu"}, 10_000),
    ("homogenization", {"measure": "bleu-hf"}, 10_000),
    ("homogenization", {"measure": "rougeL"}, 4_000),
    ("vendi-ngram", {}, 10_000),
    ("vendi-ngram", {"approx": "slq"}, 20_000),
    ("vendi-ngram", {"approx": "nystroem"}, 20_000),
]

_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0}


def texts(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(5000)])
    words = rng.choice(vocab, size=70 * n, p=zipf_probs(vocab.size, 1.0))
    lengths = rng.integers(10, 61, size=n)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    return [" ".join(words[s : s + k]) for s, k in zip(starts, lengths, strict=True)]


def rough_seconds(note: str) -> float:
    m = re.search(r"roughly ([0-9.]+) (s|min|h)", note)
    return float(m.group(1)) * _UNITS[m.group(2)] if m else 0.5


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a quarter of the responses")
    ap.add_argument("--only", nargs="*", default=None, metavar="METRIC[:k=v]",
                    help="only these cases, as in the table's first column")
    args = ap.parse_args()
    divmeter.score(texts(50), "homogenization")  # imports and first-call setup, not timed
    divmeter.score(texts(50), "vendi-ngram")
    print("| metric | responses | pairs / matrix | note: rough time | measured | "
          "measured / rough | progress reports |")
    print("|---|---|---|---|---|---|---|")
    for name, params, n in CASES:
        label = name + "".join(f":{k}={v}" for k, v in params.items())
        if args.only is not None and label not in args.only:
            continue
        n = n // 4 if args.quick else n
        data = texts(n)
        notes: list[str] = []
        reports: list[int] = []
        def heard(what: str, done: int, total: int | None, reports: list[int] = reports) -> None:
            reports.append(done)

        with memory.reporting(notes.append, heard, above=0, every=0.0):
            start = time.perf_counter()
            divmeter.score(data, name, **params)
            took = time.perf_counter() - start
        note = notes[0] if notes else ""
        rough = rough_seconds(note)
        what = re.search(r"responses: ([0-9,]+ pairs, about [^;]+?), roughly", note)
        print(f"| {label} | {n:,} | {what.group(1) if what else '?'} | "
              f"{note.split('roughly ')[1].split(';')[0] if note else '?'} | {took:.1f} s | "
              f"{took / rough:.2f} | {len(reports)} |", flush=True)


if __name__ == "__main__":
    main()
