"""Benchmark: divmeter's embedding-geometry metrics against emb-diversity, measure by measure.

Also emb-diversity's mean pairwise distance, Chamfer distance and k-means inertia on raw vectors
(``remote-clique:norm=none``, ``chamfer`` with a ``distance``, ``kmeans-inertia:norm=none``), with
named distances and a Python function of two vectors (both sides call it once per pair).

Run with the venv that holds the peer (``pip install 'divmeter[bench]'``)::

    python benchmarks/bench_geometry.py            # 1,000 sets x 20 vectors (384-d)
    python benchmarks/bench_geometry.py --quick    # 100 sets
    python benchmarks/bench_geometry.py --only diameter energy

Workload: seeded Gaussian vectors, ``sets`` sets of 20 vectors of 384 dimensions (MiniLM's
width), scored as precomputed vectors by both sides (no encoder runs). divmeter scores the whole
list in one call, ``divmeter.score_many(sets, name, **params)`` (its public batched path: the
vector kernels over stacks of sets); emb-diversity has no batched path, so its measure function
(``emb_diversity.measures.<name>.<name>``, the fastest way in: no registry wrapper) is called per
set, as a user would. Its pairwise-distance cache (memory and ``.cache/pdist`` on disk) is
cleared before each measure, and the script runs in a temporary directory so it writes nothing
here.

Every row first checks that the two sides give the same number on every set (largest relative
difference printed, at most 1e-9 required), then times each side (CPU seconds of this process,
``time.process_time``, best of ``--repeat`` runs, as the other benchmarks; the wall time of
divmeter's run is printed too) and the ratio peer / divmeter (> 1: divmeter faster).

UMAP projections (``projection=umap``, the peer's default for ``bins_entropy`` and
``convex_hull_volume_3d`` on inputs that are not 3-D) run the same umap-learn call on both sides,
so they are timed on ``--umap-sets`` sets only (default 10) and reported apart; the hull is
compared at full size on 3-D vectors (``projection=none``, the peer's as-is path).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import tempfile
import time
import warnings
from collections.abc import Callable
from importlib import import_module
from importlib.metadata import version
from typing import Any

import numpy as np
from _common import best_time

import divmeter

#: (label, divmeter metric, divmeter params, peer measure, peer kwargs, input: "384" or "3").
CASES: list[tuple[str, str, dict[str, Any], str, dict[str, Any], str]] = [
    ("sum of pairwise distances", "sum-pairwise-distance", {}, "sum_pw_dist", {}, "384"),
    ("HAMDiv, greedy", "hamdiv", {}, "hamdiv", {"solver": "greedy"}, "384"),
    ("HAMDiv, Christofides", "hamdiv", {"solver": "christofides"}, "hamdiv", {}, "384"),
    ("diameter", "diameter", {}, "diameter", {}, "384"),
    ("bottleneck", "bottleneck", {}, "bottleneck", {}, "384"),
    ("sum-bottleneck", "sum-bottleneck", {}, "sum_bottleneck", {}, "384"),
    ("sum-diameter", "sum-diameter", {}, "sum_diameter", {}, "384"),
    ("energy", "energy", {}, "energy", {}, "384"),
    ("span to centroid", "span-centroid", {}, "span_centroid", {}, "384"),
    ("kNN distance (k=2)", "kth-neighbor-distance", {}, "knn", {}, "384"),
    ("convex hull volume, 3-D input", "convex-hull-volume", {"projection": "none"},
     "convex_hull_volume_3d", {}, "3"),
    ("geometric mean of std", "geo-mean-std", {}, "geo_mean_std", {}, "384"),
    ("span to medoid", "span-medoid", {}, "span_medoid", {}, "384"),
    ("Renyi entropy (alpha=2)", "renyi-entropy", {}, "renyi_entropy", {}, "384"),
    ("Renyi entropy (alpha=1)", "renyi-entropy", {"alpha": 1.0}, "renyi_entropy",
     {"alpha": 1.0}, "384"),
    ("DCScore", "dcscore", {}, "dcscore", {}, "384"),
    ("log-determinant", "log-determinant", {}, "log_determinant", {}, "384"),
    ("binned entropy, PCA", "binned-entropy", {}, "bins_entropy", {"projection": "pca"}, "384"),
    ("graph entropy", "graph-entropy", {}, "graph_entropy", {}, "384"),
    ("MST dispersion", "mst-dispersion", {}, "mst_dispersion", {}, "384"),
    ("sum of pairwise distances, euclidean", "sum-pairwise-distance", {"distance": "euclidean"},
     "sum_pw_dist", {"metric": "euclidean"}, "384"),
    ("DCScore, rbf kernel", "dcscore", {"kernel": "rbf:gamma=0.001"}, "dcscore",
     {"kernel_type": "rbf", "tau": 0.001}, "384"),
    # emb-diversity's measures on raw vectors with other distances (issue 30)
    ("mean pairwise distance (cosine)", "remote-clique", {"norm": "none", "distance": "cosine"},
     "mean_pw_dist", {}, "384"),
    ("mean pairwise distance, euclidean", "remote-clique",
     {"norm": "none", "distance": "euclidean"}, "mean_pw_dist", {"metric": "euclidean"}, "384"),
    ("mean pairwise distance, cityblock", "remote-clique",
     {"norm": "none", "distance": "cityblock"}, "mean_pw_dist", {"metric": "cityblock"}, "384"),
    ("Chamfer (cosine)", "chamfer", {}, "chamfer_dist", {}, "384"),
    ("Chamfer, euclidean", "chamfer", {"distance": "euclidean"}, "chamfer_dist",
     {"metric": "euclidean"}, "384"),
    ("Chamfer, cityblock", "chamfer", {"distance": "cityblock"}, "chamfer_dist",
     {"metric": "cityblock"}, "384"),
    ("k-means inertia (k=2), scikit-learn", "kmeans-inertia",
     {"norm": "none", "solver": "sklearn", "seed": 42, "n_init": 1}, "cluster_inertia",
     {"n_clusters": 2}, "384"),
]


def chebyshev(u: np.ndarray, v: np.ndarray) -> float:
    """A distance given as a Python function of two vectors (called once per pair)."""
    return float(np.abs(u - v).max())


#: The same measures with a Python function as the distance, on ``--function-sets`` sets.
FUNCTION_CASES: list[tuple[str, str, dict[str, Any], str, dict[str, Any]]] = [
    ("mean pairwise distance, a function", "remote-clique",
     {"norm": "none", "distance": chebyshev}, "mean_pw_dist", {"metric": chebyshev}),
    ("Chamfer, a function", "chamfer", {"distance": chebyshev}, "chamfer_dist",
     {"metric": chebyshev}),
]
UMAP_CASES: list[tuple[str, str, dict[str, Any], str, dict[str, Any]]] = [
    ("convex hull volume, UMAP", "convex-hull-volume", {"projection": "umap"},
     "convex_hull_volume_3d", {}),
    ("binned entropy, UMAP", "binned-entropy", {"projection": "umap"}, "bins_entropy", {}),
]


def _peer(name: str) -> Callable[..., dict[str, Any]]:
    fn: Callable[..., dict[str, Any]] = getattr(
        import_module(f"emb_diversity.measures.{name}"), name)
    return fn


def _quiet(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()

    return run


def _compare(ours: list[Any], theirs: list[float]) -> float:
    worst = 0.0
    for r, b in zip(ours, theirs, strict=True):
        a = r.value
        if a is None:
            raise SystemExit(f"divmeter gave null ({r.reason}) where the peer gave {b}")
        worst = max(worst, abs(a - b) / max(abs(b), 1e-300))
    return worst


def run_case(label: str, metric: str, params: dict[str, Any], peer: str,
             peer_kw: dict[str, Any], sets: list[np.ndarray], repeat: int) -> dict[str, Any]:
    from emb_diversity.measures.utils import clear_distance_cache

    fn = _peer(peer)

    def theirs() -> list[float]:
        clear_distance_cache()
        return [float(fn(X, **peer_kw)["value"]) for X in sets]

    def ours() -> list[Any]:
        return divmeter.score_many(sets, metric, **params)

    ref = _quiet(theirs)()
    got = _quiet(ours)()
    worst = _compare(got, ref)
    if worst > 1e-9:
        raise SystemExit(f"{label}: values differ from the peer (worst relative {worst:.2e})")
    t_ours, _ = best_time(_quiet(ours), repeat)
    w_ours, _ = best_time(_quiet(ours), repeat, clock=time.perf_counter)
    t_peer, _ = best_time(_quiet(theirs), repeat)
    return {"label": label, "sets": len(sets), "divmeter": t_ours, "wall": w_ours,
            "peer": t_peer, "ratio": t_peer / t_ours, "worst": worst}


def _arg(metric: str, params: dict[str, Any]) -> str:
    shown = [f"{k}={getattr(v, '__name__', v)}" for k, v in params.items()]
    return metric + (":" + ",".join(shown) if shown else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", type=int, default=1000)
    ap.add_argument("--quick", action="store_true", help="100 sets")
    ap.add_argument("--repeat", type=int, default=2, help="best of this many runs per side")
    ap.add_argument("--umap-sets", type=int, default=10, help="sets for the UMAP rows (0: skip)")
    ap.add_argument("--function-sets", type=int, default=100,
                    help="sets for the rows with a Python function as the distance (0: skip)")
    ap.add_argument("--only", nargs="*", help="divmeter metric names to run")
    args = ap.parse_args()
    n_sets = 100 if args.quick else args.sets
    rng = np.random.default_rng(2024)
    sets = {"384": [rng.normal(size=(20, 384)) for _ in range(n_sets)],
            "3": [rng.normal(size=(20, 3)) for _ in range(n_sets)]}
    print(f"emb-diversity {version('emb-diversity')}, divmeter {divmeter.__version__}, numpy "
          f"{np.__version__}, scipy {version('scipy')}, networkx {version('networkx')}, "
          f"umap-learn {version('umap-learn')}; Python {platform.python_version()}")
    print(f"load average at start: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{n_sets} sets x 20 vectors (384-d; 3-d where marked), CPU seconds, best of "
          f"{args.repeat}\n")
    rows = []
    head = "| measure | divmeter metric | divmeter s (wall s) | emb-diversity s | speed-up | " \
           "max rel. diff |"
    print(head)
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # the peer writes its distance cache under ./.cache
        todo = [c for c in CASES if not args.only or c[1] in args.only]
        for label, metric, params, peer, peer_kw, kind in todo:
            row = run_case(label, metric, params, peer, peer_kw, sets[kind], args.repeat)
            rows.append(row)
            arg = _arg(metric, params)
            print(f"| {label} | `{arg}` | {row['divmeter']:.3f} ({row['wall']:.3f}) | "
                  f"{row['peer']:.3f} | {row['ratio']:.1f}x | {row['worst']:.1e} |", flush=True)
        if args.function_sets:
            fn_sets = sets["384"][: args.function_sets]
            for label, metric, params, peer, peer_kw in FUNCTION_CASES:
                if args.only and metric not in args.only:
                    continue
                row = run_case(label, metric, params, peer, peer_kw, fn_sets, args.repeat)
                print(f"| {label} ({len(fn_sets)} sets) | `{_arg(metric, params)}` | "
                      f"{row['divmeter']:.3f} ({row['wall']:.3f}) | {row['peer']:.3f} | "
                      f"{row['ratio']:.1f}x | {row['worst']:.1e} |", flush=True)
        if args.umap_sets:
            umap_sets = sets["384"][: args.umap_sets]
            for label, metric, params, peer, peer_kw in UMAP_CASES:
                if args.only and metric not in args.only:
                    continue
                warm = _peer(peer)
                _quiet(lambda w=warm, kw=peer_kw: w(umap_sets[0], **kw))()  # numba compiles
                row = run_case(label, metric, params, peer, peer_kw, umap_sets, 1)
                arg = metric + ":" + ",".join(f"{k}={v}" for k, v in params.items())
                print(f"| {label} ({len(umap_sets)} sets) | `{arg}` | {row['divmeter']:.3f} "
                      f"({row['wall']:.3f}) | {row['peer']:.3f} | {row['ratio']:.1f}x | "
                      f"{row['worst']:.1e} |", flush=True)
    print(f"\nload average at end: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
