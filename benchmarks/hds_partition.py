"""Human scores for the partition metrics: how distinct-k and semantic entropy agree with Tevet &
Berant's absolute human diversity scores (absHDS), beside distinct-n and the embedding metrics.

The sets are the shared files that carry absHDS (``../shared/data/tevet/with_metrics``):
decTest and conTest, 200-250 sets each of storyGen, respGen and promptGen (every ``resp_*``
column of a row is one response of its set), each with ``metric_abs_hds_mean``, the mean of
the crowd workers' 1-5 ratings. For each file:

1. ``divmeter score FILE -m ...`` (distinct-k and semantic-entropy with MiniLM equivalence at
   the calibrated threshold 0.35, distinct-n, embedding-cosine, vendi-embedding);
2. Spearman's rho (scipy) of each metric with ``metric_abs_hds_mean`` over the file's sets, and
   of the file's own published columns (``metric_averaged_distinct_ngrams``, ``metric_sent_bert``)
   as the reference the paper's metrics reach on the same sets.

Nothing is tuned on these sets. Run (needs divmeter[embed] and the shared data):

    PYTHONPATH=src .venv/bin/python benchmarks/hds_partition.py

Writes benchmarks/results_hds_partition.md (``--out``).
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "shared" / "data" / "tevet" / "with_metrics"
FILES = [f"{test}/{stem}_{task}.csv" for test, stem in (("decTest", "dec_test_200_with_hds"),
                                                       ("conTest", "con_test_200_with_hds"))
         for task in ("story_gen", "resp_gen", "prompt_gen")]
METRICS = ["distinct-k", "semantic-entropy", "distinct-n", "embedding-cosine", "vendi-embedding"]
PUBLISHED = ["metric_averaged_distinct_ngrams", "metric_sent_bert"]


def divmeter(*args: str) -> list[str]:
    return [sys.executable, "-c", "from divmeter.apps.cli import main; main()", *args]


def spearman(x: list[float], y: list[float]) -> tuple[float, int]:
    from scipy.stats import spearmanr

    pairs = [(a, b) for a, b in zip(x, y, strict=True) if a is not None and b is not None]
    rho = spearmanr([a for a, _ in pairs], [b for _, b in pairs]).statistic
    return float(rho), len(pairs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--out", default=str(HERE / "results_hds_partition.md"))
    args = ap.parse_args()
    if not Path(args.data).is_dir():
        print(f"needs Tevet & Berant's shared data at {args.data}; nothing to do")
        return
    mflags = [a for m in METRICS for a in ("-m", m)]
    rows, started = [], time.perf_counter()
    signatures: dict[str, str] = {}
    for name in FILES:
        path = Path(args.data) / name
        with path.open(newline="", encoding="utf-8") as f:
            table = list(csv.DictReader(f))
        hds = [float(r["metric_abs_hds_mean"]) for r in table]
        out = subprocess.run(divmeter("score", str(path), *mflags, "-f", "jsonl", "-q",
                                      "--signatures"),
                             check=True, capture_output=True, text=True).stdout
        scored = [json.loads(line) for line in out.splitlines() if line.strip()]
        assert [s["row"] for s in scored] == list(range(len(table))), name
        cells = {m: spearman([s[m] for s in scored], hds) for m in METRICS}
        cells |= {c: spearman([float(r[c]) for r in table], hds) for c in PUBLISHED}
        rows.append((name, len(table), cells))
        signatures |= {m: s["signatures"][m] for s in scored[:1] for m in METRICS
                       if m in s.get("signatures", {})}
        print(name, {k: round(v[0], 3) for k, v in cells.items()}, flush=True)
    cols = METRICS + PUBLISHED
    lines = ["# Partition metrics against human diversity scores (absHDS)", "",
             f"Spearman's rho of each metric with `metric_abs_hds_mean` over the sets of "
             f"each shared file (Tevet & Berant's absHDS). `{Path(__file__).name}`, "
             f"{time.perf_counter() - started:.0f} s on a 2-core CPU. The last two columns "
             f"are the file's own published metric columns on the same sets (the paper's "
             f"distinct-n and Sent-BERT).", "",
             "| file | sets | " + " | ".join(cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for name, n, cells in rows:
        lines.append(f"| {name} | {n} | " + " | ".join(
            f"{cells[c][0]:.3f}" + ("" if cells[c][1] == n else f" (n={cells[c][1]})")
            for c in cols) + " |")
    if signatures:
        lines += ["", "Signatures:", ""] + [f"- `{v}`" for v in signatures.values()]
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
