"""Seeded corpora of real Tevet responses for the corpus benchmarks (issue 32).

``build(path, megabytes, seed)`` writes a JSONL file of response sets (``{"set_id",
"responses"}`` a line) of about ``megabytes`` MB: every set of every Tevet & Berant CSV under
``../shared/data/tevet/with_metrics`` (files in sorted order, rows in file order), passed over
again and again, each word replaced with probability 0.2 by a word drawn uniformly from the
vocabulary of all Tevet responses (a seeded ``random.Random``), so that repeated passes are not
copies. Responses keep Tevet's spacing; a replaced word keeps none of the original.

    python benchmarks/corpus_data.py OUT.jsonl MEGABYTES [--seed 0]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
from pathlib import Path

TEVET = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tevet" / "with_metrics"


def tevet_sets(root: Path = TEVET) -> list[list[str]]:
    """Every response set of every Tevet CSV (the ``resp_*`` columns), files in sorted order."""
    files = sorted(root.glob("*/*.csv"))
    if not files:
        sys.exit(f"no Tevet data under {root} (needs ../shared)")
    csv.field_size_limit(1 << 24)
    out = []
    for f in files:
        with open(f, newline="", encoding="utf-8") as fh:
            for row in csv.DictReader(fh):
                texts = [v for k, v in row.items() if k.startswith("resp_") and v is not None]
                out.append(texts)
    return out


def build(path: str | Path, megabytes: float, seed: int = 0) -> dict[str, int]:
    """Write the corpus; returns its bytes, sets and responses."""
    sets = tevet_sets()
    vocab = sorted({w for s in sets for t in s for w in t.split()})
    rng = random.Random(seed)
    target = int(megabytes * (1 << 20))
    size = n_sets = n_resp = 0
    with open(path, "w", encoding="utf-8") as fh:
        p = 0
        while size < target:
            for i, texts in enumerate(sets):
                new = []
                for t in texts:
                    words = t.split(" ")
                    for j, w in enumerate(words):
                        if w and rng.random() < 0.2:
                            words[j] = rng.choice(vocab)
                    new.append(" ".join(words))
                line = json.dumps({"set_id": f"p{p}s{i}", "responses": new},
                                  ensure_ascii=False) + "\n"
                fh.write(line)
                size += len(line.encode("utf-8"))
                n_sets += 1
                n_resp += len(new)
                if size >= target:
                    break
            p += 1
    return {"bytes": size, "sets": n_sets, "responses": n_resp}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("megabytes", type=float)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    print(build(a.out, a.megabytes, a.seed))


if __name__ == "__main__":
    main()
