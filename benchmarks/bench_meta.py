"""Benchmark: divmeter.studies.meta statistics and protocols against scipy / scikit-learn / plain
loops.

Run with the benchmark venv (it holds scikit-learn):

    .venv-bench/bin/python benchmarks/bench_meta.py          # 10,000 resamples, 6,000 sets
    .venv-bench/bin/python benchmarks/bench_meta.py --quick  # 2,000 resamples, fewer repeats

Workloads (seeded, generated scores shaped like McDiv: 6,000 sets, binary label, scores rounded
to 3 decimals as in Tevet's CSVs, so ties occur):

(a) bootstrap CI of Spearman rho with 10,000 resamples, on 200 sets (conTest size) and on
    6,000: divmeter's vectorised bootstrap (one (B, n) index matrix; ranks of every resample by
    counting, no sort) against a plain Python loop over resamples calling
    scipy.stats.spearmanr, and against scipy.stats.bootstrap (vectorised, paired). The same seed
    gives divmeter and scipy the same resamples: their intervals must be identical. The loop
    draws the same index matrix, so its interval must be identical too.
(b) bootstrap CI of OCA (Tevet's optimal classification accuracy) with 10,000 resamples:
    divmeter's row-vectorised OCA against a Python loop over resamples of the single-array OCA.
(c) single statistics on 6,000 sets against the reference they must equal: OCA vs Tevet &
    Berant's released loop (restated: every value as threshold, tol 1e-5); ROC AUC vs
    sklearn.metrics.roc_auc_score; Cohen's kappa vs sklearn.metrics.cohen_kappa_score.
(d) every protocol on 6,000 sets with precomputed scores (conTest with and without 10,000-sample
    CIs, decTest with 100 x 200 sub-sampling and pair accuracy, McDiv_nuggets re-sampling, paired
    contrasts, pairwise preference with CIs and kappa): wall times, which must be seconds.

Times are CPU seconds of this process (``time.process_time``, best of the runs), since the
machine is shared. Ratios are reference time / divmeter time (> 1: divmeter faster).
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import best_time
from scipy import stats

from divmeter.studies import meta
from divmeter.studies.meta import protocols as pr
from divmeter.studies.meta import stats as st

timed = best_time  # best CPU time of this process over ``repeat`` runs


def make_data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.repeat([0, 1], n // 2))
    scores = np.round(0.8 * labels + rng.normal(0, 0.6, n), 3)
    values = np.round(rng.uniform(0.2, 1.2, n), 2)
    return scores, labels, values


def tevet_oca(high: list[float], low: list[float]) -> float:
    """Tevet & Berant's released OCA loop, restated (O(n^2) Python)."""
    best = 0.0
    allv = high + low
    for t in allv:
        acc = (sum(v <= t + 1e-5 for v in high) + sum(v > t + 1e-5 for v in low)) / len(allv)
        best = max(best, acc if acc > 0.5 else 1 - acc)
    return best


def line(name: str, t_ref: float, t_dm: float, ref: str) -> None:
    print(f"  {name:<44} divmeter {t_dm:8.3f}s   {ref} {t_ref:8.3f}s   ratio {t_ref / t_dm:7.1f}x")


def bootstrap_section(n_sets: int, B: int, n_loop_oca: int) -> None:
    """(a) and (b) on n_sets generated sets."""
    scores, labels, values = make_data(n_sets, seed=n_sets)
    # (a) Spearman bootstrap -----------------------------------------------------------------
    print(f"(a) bootstrap CI of Spearman rho (percentile), {n_sets} sets")
    t_dm, r_dm = timed(lambda: meta.bootstrap_ci(st.spearman_stat, [scores, values],
                                                 n_resamples=B, seed=1, batch=1000))

    def loop() -> tuple[float, float]:
        idx = np.random.default_rng(1).integers(0, n_sets, size=(B, n_sets))
        rho = [stats.spearmanr(scores[i], values[i]).statistic for i in idx]
        return tuple(np.quantile(rho, [0.025, 0.975]))

    t_loop, r_loop = timed(loop)

    def scipy_boot() -> tuple[float, float]:
        res = stats.bootstrap((scores, values), st.spearman_stat, paired=True, vectorized=True,
                              n_resamples=B, method="percentile", batch=1000,
                              random_state=np.random.default_rng(1))
        return res.confidence_interval.low, res.confidence_interval.high

    t_sp, r_sp = timed(scipy_boot)
    assert np.allclose([r_dm.low, r_dm.high], r_loop, rtol=1e-12), (r_dm, r_loop)
    assert np.allclose([r_dm.low, r_dm.high], r_sp, rtol=1e-12), (r_dm, r_sp)
    print(f"  CI [{r_dm.low:.6f}, {r_dm.high:.6f}] identical for divmeter, loop and scipy")
    line("vectorised vs Python loop (spearmanr)", t_loop, t_dm, "loop ")
    line("vectorised vs scipy.stats.bootstrap", t_sp, t_dm, "scipy")

    # (b) OCA bootstrap ----------------------------------------------------------------------
    print(f"(b) bootstrap CI of OCA (percentile), {n_sets} sets")
    t_dm, r_dm = timed(lambda: meta.bootstrap_ci(st.oca_stat, [scores, labels], n_resamples=B,
                                                 seed=1, batch=500))
    idx = np.random.default_rng(1).integers(0, n_sets, size=(B, n_sets))

    def oca_loop(k: int) -> list[float]:
        return [st._oca_arrays(scores[i], labels[i], 1e-5, "blind")[0] for i in idx[:k]]

    t_part, part = timed(lambda: oca_loop(n_loop_oca))
    vec_part = st.oca_stat(scores[idx[:n_loop_oca]], labels[idx[:n_loop_oca]])
    assert np.array_equal(vec_part, part)
    t_loop = t_part * B / n_loop_oca
    print(f"  CI [{r_dm.low:.4f}, {r_dm.high:.4f}]; first {n_loop_oca} resamples identical "
          f"to the loop (loop time extrapolated from them)")
    line("row-vectorised OCA vs loop of single OCAs", t_loop, t_dm, "loop ")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller workload (< 1 minute)")
    args = ap.parse_args()
    n_sets = 6000
    B = 2000 if args.quick else 10_000
    n_loop_oca = 200 if args.quick else 1000  # resamples timed for the OCA loop (extrapolated)
    print(f"bench_meta: bootstrap resamples B={B}")

    for n_boot in (200, n_sets):
        bootstrap_section(n_boot, B, n_loop_oca)
    scores, labels, values = make_data(n_sets)

    # (c) single statistics ------------------------------------------------------------------
    print("(c) single statistics on 6,000 sets")
    from sklearn.metrics import cohen_kappa_score, roc_auc_score

    high = scores[labels == 1].tolist()
    low = scores[labels == 0].tolist()
    sub = slice(0, 1500) if args.quick else slice(None)
    hs, ls_ = scores[sub][labels[sub] == 1].tolist(), scores[sub][labels[sub] == 0].tolist()
    t_ref, ref = timed(lambda: tevet_oca(hs, ls_))
    t_dm, got = timed(lambda: meta.oca(scores[sub], labels[sub]).oca, repeat=3)
    assert got == ref, (got, ref)
    line(f"OCA vs Tevet loop ({len(hs) + len(ls_)} sets)", t_ref, t_dm, "tevet")
    t_ref, ref = timed(lambda: roc_auc_score(labels, scores), repeat=3)
    t_dm, got = timed(lambda: meta.roc_auc(scores, labels).auc, repeat=3)
    assert abs(got - ref) < 1e-12
    line("ROC AUC vs sklearn", t_ref, t_dm, "sklrn")
    rng = np.random.default_rng(5)
    r1 = rng.integers(0, 3, n_sets)
    r2 = np.where(rng.random(n_sets) < 0.6, r1, rng.integers(0, 3, n_sets))
    t_ref, ref = timed(lambda: cohen_kappa_score(r1, r2), repeat=3)
    t_dm, got = timed(lambda: meta.cohen_kappa(r1, r2), repeat=3)
    assert abs(got - ref) < 1e-12
    line("Cohen's kappa vs sklearn", t_ref, t_dm, "sklrn")
    del high, low

    # (d) protocols --------------------------------------------------------------------------
    print("(d) protocols on 6,000 sets (precomputed scores), CPU seconds")
    cols = {f"m{i}": np.round(scores + np.random.default_rng(i).normal(0, 0.3 * i, n_sets), 3)
            for i in range(5)}
    half = n_sets // 2
    runs = {
        "contest (5 metrics)": lambda: pr.contest(cols, labels),
        f"contest (1 metric, B={B} CIs)": lambda: pr.contest({"m0": cols["m0"]}, labels,
                                                             bootstrap=B),
        "dectest (5 metrics, 100 x 200, pairs)": lambda: pr.dectest(
            cols, values, subsample=200, repeats=100, pair_accuracy=True),
        "nuggets re-sampling": lambda: pr.nuggets_resample(cols["m0"], labels),
        "paired (5 metrics, 3,000 pairs)": lambda: pr.paired(
            {k: v[half:] for k, v in cols.items()}, {k: v[:half] for k, v in cols.items()}),
        f"pairwise (5 metrics, 3,000 pairs, B={B})": lambda: pr.pairwise(
            {k: v[half:] for k, v in cols.items()}, {k: v[:half] for k, v in cols.items()},
            np.where(values[half:] > values[:half], 0, 1), n_resamples=B),
    }
    for name, fn in runs.items():
        t, _ = timed(fn)
        print(f"  {name:<44} {t:8.3f}s")


if __name__ == "__main__":
    main()
