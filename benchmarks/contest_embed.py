"""conTest / McDiv protocol (Tevet & Berant 2021) for divmeter's embedding-cosine metric.

For every task file, each response set gets ``embedding-cosine`` (``reduction=neg-mean``, i.e.
Tevet's sent-BERT reduction) with the chosen encoders; we report Spearman's rho between the
metric and the 0/1 content-diversity label, and OCA (Tevet's optimal single-threshold accuracy,
direction-blind, via :func:`divmeter.studies.meta.stats.oca`), next to the same statistics computed
from the ``metric_sent_bert`` column Tevet precomputed (bert-large-nli-stsb-mean-tokens) and the
figures printed in the paper. Nothing is tuned.

Run (needs divmeter[embed] and ../shared/data):

    .venv/bin/python benchmarks/contest_embed.py                 # conTest + McDiv, MiniLM + mpnet
    .venv/bin/python benchmarks/contest_embed.py --mpnet-on 'conTest:*,McDiv:prompt_gen'
    .venv/bin/python benchmarks/contest_embed.py --models minilm --datasets conTest
    .venv/bin/python benchmarks/contest_embed.py --quick          # conTest only, MiniLM

Writes a Markdown table to benchmarks/results_contest_embed.md (``--out`` to change).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import divmeter
from divmeter.backends.embed import get_encoder, resolve_model
from divmeter.studies.meta.stats import oca, spearman

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DIVMETER_SHARED", REPO.parent / "shared"))
DATA = SHARED / "data" / "tevet" / "with_metrics"
TASKS = ("prompt_gen", "resp_gen", "story_gen")
FILES = {
    "conTest": "conTest/con_test_200_with_hds_{task}.csv",
    "McDiv": "McDiv/mcdiv_all_no_hds_{task}.csv",
}
# Published sent-BERT figures (rho / OCA): conTest = Table 4, McDiv = Table 8 of the paper.
PUBLISHED = {
    ("conTest", "prompt_gen"): (0.68, 0.81),
    ("conTest", "resp_gen"): (0.59, 0.79),
    ("conTest", "story_gen"): (0.77, 0.90),
    ("McDiv", "prompt_gen"): (0.80, 0.90),
    ("McDiv", "resp_gen"): (0.68, 0.83),
    ("McDiv", "story_gen"): (0.75, 0.87),
}


def load(dataset: str, task: str) -> pd.DataFrame:
    df = pd.read_csv(DATA / FILES[dataset].format(task=task), keep_default_na=False)
    return df


def response_sets(df: pd.DataFrame) -> list[list[str]]:
    cols = [c for c in df.columns if c.startswith("resp_")]
    return [[str(x) for x in row] for row in df[cols].itertuples(index=False)]


def evaluate(values: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    ok = ~np.isnan(values)
    rho = spearman(values[ok], labels[ok]).values["rho"]
    acc = oca(values[ok], labels[ok]).values["oca"]
    return float(rho), float(acc)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="minilm,mpnet")
    ap.add_argument("--datasets", default="conTest,McDiv")
    ap.add_argument("--mpnet-on", default=None,
                    help="restrict mpnet to DATASET:TASK pairs, e.g. 'conTest:*,McDiv:prompt_gen' "
                    "(default: everything in --datasets)")
    ap.add_argument("--quick", action="store_true", help="conTest only, MiniLM only")
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results_contest_embed.md"))
    args = ap.parse_args()
    if not DATA.is_dir():
        print(f"shared data not found at {DATA}", file=sys.stderr)
        return 2
    models = ["minilm"] if args.quick else args.models.split(",")
    datasets = ["conTest"] if args.quick else args.datasets.split(",")
    rows = []
    for dataset in datasets:
        for task in TASKS:
            df = load(dataset, task)
            labels = df["label_value"].astype(float).to_numpy()
            sets = response_sets(df)
            tevet = df["metric_sent_bert"].astype(float).to_numpy()
            row = {"dataset": dataset, "task": task, "n_sets": len(sets),
                   "published": PUBLISHED[(dataset, task)],
                   "tevet_column": evaluate(tevet, labels)}
            for model in models:
                if model == "mpnet" and not _selected(args.mpnet_on, dataset, task):
                    row[model] = None
                    continue
                enc = get_encoder(model, progress=False)
                flat = [t for s in sets for t in s]
                t0 = time.perf_counter()
                enc.encode(flat)  # one batched pass (cached); per-set calls below hit memory
                t_embed = time.perf_counter() - t0
                vals = np.array([
                    float(divmeter.score(s, "embedding-cosine", model=model, reduction="neg-mean"))
                    for s in sets
                ])
                row[model] = evaluate(vals, labels)
                row[f"{model}_time"] = t_embed
                print(f"{dataset:8s} {task:11s} {model:7s} rho={row[model][0]:.3f} "
                      f"OCA={row[model][1]:.3f} embed {len(flat)} texts in {t_embed:.1f}s",
                      flush=True)
            rows.append(row)
    write_table(rows, models, Path(args.out))
    print(Path(args.out).read_text())
    return 0


def _selected(spec: str | None, dataset: str, task: str) -> bool:
    if spec is None:
        return True
    pairs = [p.split(":") for p in spec.split(",")]
    return any(d == dataset and t in ("*", task) for d, t in pairs)


def write_table(rows: list[dict], models: list[str], out: Path) -> None:
    names = {m: resolve_model(m).signature for m in models}
    head = ["dataset", "task", "sets", "published sent-BERT (paper)",
            "sent-BERT column (recomputed)"] + [f"divmeter `{m}`" for m in models]
    lines = [
        "# conTest / McDiv with `embedding-cosine` (neg-mean)",
        "",
        "Spearman rho / OCA between the metric and the content-diversity label (Tevet & Berant "
        "2021 conTest protocol; OCA = direction-blind optimal single-threshold accuracy). "
        "Published sent-BERT used bert-large-nli-stsb-mean-tokens (BERT-large, 1024-d, trained on "
        "NLI+STSb); the recomputed column applies the same rho/OCA code to Tevet's precomputed "
        "`metric_sent_bert` values; divmeter's encoders are smaller, different models, run "
        "offline, untuned.",
        "",
        "Models: " + "; ".join(f"`{m}` = {s}" for m, s in names.items()),
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        cells = [r["dataset"], r["task"], str(r["n_sets"]),
                 f"{r['published'][0]:.2f} / {r['published'][1]:.2f}",
                 f"{r['tevet_column'][0]:.3f} / {r['tevet_column'][1]:.3f}"]
        for m in models:
            v = r.get(m)
            cells.append("not run" if v is None else f"{v[0]:.3f} / {v[1]:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    version = divmeter.__version__
    lines += ["", f"Produced by `benchmarks/contest_embed.py` with divmeter {version}."]
    out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
