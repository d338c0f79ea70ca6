"""Benchmark: corpus statistics at scale (issue 32). Writes ``results_corpus.md`` (--out).

Corpora (``corpus_data.py``, seeded): JSONL sets of real Tevet & Berant responses, passed over
again and again with 20% of the words replaced at random, of 10 MB, 100 MB and 1 GB (60 MB for
the before/after row). Every measurement runs ``divmeter score --corpus FILE -m METRIC`` in a
fresh process (``os.wait4`` gives its peak resident memory and CPU time), nice'd:

* per metric and corpus: wall and CPU seconds, MB/s of input file (end to end: reading,
  tokenizing, counting, finishing), peak memory; with and without ``--memory-budget``;
* counting alone: the metric's corpus accumulator fed the corpus's texts already in memory
  (no reading) in the engine's batches, MB/s of text (and of file) per core (CPU time), best
  and median of 3 runs a process; ``--counting-against PATH`` alternates the processes with
  another checkout's (``--counting-rounds`` each);
* Ray: ``--engine ray`` on the corpus cut into 8 shards, on a local cluster of 1 and 2 CPUs;
* before/after: distinct-n on the 60 MB corpus, this checkout against commit 0fca95d (a
  ``git worktree`` of it, ``--before PATH``).

    PYTHONPATH=src python benchmarks/bench_corpus.py --sizes 10 100 --budget none 256 --counting \
        [--before /tmp/corpus_before]
    PYTHONPATH=src python benchmarks/bench_corpus.py --sizes 10 --budget --counting \
        --counting-rounds 3 --counting-against /tmp/before
    PYTHONPATH=src python benchmarks/bench_corpus.py --sizes 100 --metrics distinct-n --ray
    PYTHONPATH=src python benchmarks/bench_corpus.py --sizes 1024 --metrics distinct-n \
        --budget 3072 1024

Times are of a shared 2-core machine (the load average is printed with every row); CPU
seconds are the steadier measure there.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from corpus_data import build  # noqa: E402

METRICS = ["distinct-n", "entropy-n", "ead", "ngram-diversity", "self-repetition",
           "self-bleu", "distinct-n:approx=hll"]
CLI = ("import sys\ntry:\n    from divmeter.apps.cli import main\nexcept ImportError:  # before "
       "issue 30's folders\n    from divmeter.cli import main\nsys.exit(main())")


def corpus(folder: Path, megabytes: float) -> Path:
    path = folder / f"tevet-{megabytes:g}mb.jsonl"
    if not path.exists():
        t0 = time.perf_counter()
        info = build(path, megabytes, seed=0)
        print(f"built {path.name}: {info} in {time.perf_counter() - t0:.0f} s", flush=True)
    return path


def shards(path: Path, k: int) -> list[Path]:
    """The corpus cut into ``k`` files of whole lines (for the Ray rows)."""
    out = [path.with_name(f"{path.stem}.part{i}.jsonl") for i in range(k)]
    if all(p.exists() for p in out):
        return out
    lines = path.read_bytes().splitlines(keepends=True)
    step = -(-len(lines) // k)
    for i, p in enumerate(out):
        p.write_bytes(b"".join(lines[i * step:(i + 1) * step]))
    return out


def measure(argv: list[str], src: Path, env_extra: dict[str, str] | None = None
            ) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(src), **(env_extra or {})}
    t0 = time.perf_counter()
    p = subprocess.Popen(["nice", sys.executable, "-c", CLI, *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    out = p.stdout.read() if p.stdout else b""  # type: ignore[union-attr]
    err = p.stderr.read() if p.stderr else b""  # type: ignore[union-attr]
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status:
        raise SystemExit(f"failed: {' '.join(argv)}\n{err.decode()[-2000:]}")
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "peak_mb": ru.ru_maxrss / 1024,
            "records": [json.loads(x) for x in out.decode().splitlines() if x.strip()]}


def counting_only(path: Path, metric: str, src: Path, repeat: int = 3) -> dict[str, float]:
    """CPU seconds of the accumulator on texts already in memory (first pass only for the
    two-pass metrics: the counting), fed in the engine's batches (``DEFAULT_BATCH_BYTES``), a
    fresh accumulator each of ``repeat`` runs in one process: best and median; and the text's
    MB."""
    code = f"""
import json, statistics, time
from divmeter.engine.corpus.shards import iter_texts
from divmeter.engine.corpus.stats import make_accumulator
from divmeter.engine.batch import resolve_metrics
try:
    from divmeter.engine.corpus.shards import DEFAULT_BATCH_BYTES, _batches
except ImportError:  # older checkouts: slices of 100,000 texts
    DEFAULT_BATCH_BYTES = None
texts = list(iter_texts({str(path)!r}))
batches = (list(_batches(iter(texts), DEFAULT_BATCH_BYTES)) if DEFAULT_BATCH_BYTES else
           [texts[a:a + 100000] for a in range(0, len(texts), 100000)])
plan = resolve_metrics([{metric!r}])[0]
acc = make_accumulator(plan.name, plan.params)
acc.add(texts[:2000])  # load the compiled kernels
cpus = []
for _ in range({repeat}):
    acc = make_accumulator(plan.name, plan.params)
    t0 = time.process_time()
    for b in batches:
        acc.add(b)
    cpus.append(time.process_time() - t0)
print(json.dumps({{"cpu": min(cpus), "cpu_median": statistics.median(cpus),
                  "text_mb": sum(map(len, texts)) / 2**20}}))
"""
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(["nice", sys.executable, "-c", code], capture_output=True, env=env,
                         check=True)
    got: dict[str, float] = json.loads(out.stdout.decode().splitlines()[-1])
    return got


def counting_rows(path: Path, metric: str, trees: dict[str, Path], rounds: int
                  ) -> list[dict[str, object]]:
    """:func:`counting_only` of each checkout in ``trees``, alternating, ``rounds`` processes
    each (3 runs a process): the best and the median of all their runs' CPU seconds."""
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
    for _ in range(rounds):
        for label, where in trees.items():
            runs[label].append(counting_only(path, metric, where))
    mb = path.stat().st_size / 2**20
    out: list[dict[str, object]] = []
    for label, got in runs.items():
        best = min(g["cpu"] for g in got)
        med = sorted(g["cpu_median"] for g in got)[len(got) // 2]
        text = got[0]["text_mb"]
        out.append({"row": "counting", "side": label, "corpus_mb": round(mb, 1),
                    "metric": metric, "text_mb": round(text, 1), "cpu": round(best, 3),
                    "cpu_median": round(med, 3), "text_mb_s_cpu": round(text / best, 2),
                    "text_mb_s_cpu_median": round(text / med, 2),
                    "file_mb_s_cpu": round(mb / best, 2)})
    return out


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[10, 100])
    ap.add_argument("--metrics", nargs="+", default=METRICS)
    ap.add_argument("--budget", nargs="*", default=["none"],
                    help="memory budgets to run each metric with (MB; none: unbounded; "
                    "no value: no end-to-end rows)")
    ap.add_argument("--ray", action="store_true", help="also run --engine ray at 1 and 2 CPUs")
    ap.add_argument("--ray-only", action="store_true", help="only the Ray rows")
    ap.add_argument("--counting", action="store_true", help="also time counting alone")
    ap.add_argument("--counting-rounds", type=int, default=1,
                    help="processes per checkout for the counting rows (3 runs each)")
    ap.add_argument("--counting-against", type=Path, default=None,
                    help="another checkout whose counting rows alternate with this one's")
    ap.add_argument("--before", type=Path, default=None,
                    help="a checkout of 0fca95d: the 60 MB distinct-n row before/after")
    ap.add_argument("--data", type=Path, default=Path("/tmp/divmeter-bench-corpus"))
    ap.add_argument("--out", type=Path, default=HERE / "results_corpus.jsonl",
                    help="rows appended as JSON lines")
    a = ap.parse_args()
    a.data.mkdir(parents=True, exist_ok=True)
    src = ROOT / "src"
    rows = []

    def emit(row: dict[str, object]) -> None:
        row["load"] = load()
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(a.out, "a") as fh:
            fh.write(json.dumps(row) + "\n")

    if a.before is not None:
        c60 = corpus(a.data, 60)
        mb = c60.stat().st_size / 2**20
        for label, where in (("before (0fca95d)", a.before / "src"), ("after", src)):
            m = measure(["score", "--corpus", str(c60), "-m", "distinct-n", "-q", "--format",
                         "json"], where)
            emit({"row": "before-after", "side": label, "corpus_mb": round(mb, 1),
                  "metric": "distinct-n", "wall": round(m["wall"], 2), "cpu": round(m["cpu"], 2),
                  "mb_s_cpu": round(mb / m["cpu"], 2), "peak_mb": round(m["peak_mb"]),
                  "value": m["records"][0]["value"]})
    for size in a.sizes:
        path = corpus(a.data, size)
        mb = path.stat().st_size / 2**20
        for metric in [] if a.ray_only else a.metrics:
            for budget in [None if b == "none" else float(b) for b in a.budget]:
                argv = ["score", "--corpus", str(path), "-m", metric, "-q", "--format", "json"]
                if budget is not None:
                    argv += ["--memory-budget", str(budget)]
                m = measure(argv, src)
                emit({"row": "local", "corpus_mb": round(mb, 1), "metric": metric,
                      "budget_mb": budget, "wall": round(m["wall"], 2),
                      "cpu": round(m["cpu"], 2), "mb_s_wall": round(mb / m["wall"], 2),
                      "mb_s_cpu": round(mb / m["cpu"], 2), "peak_mb": round(m["peak_mb"]),
                      "value": m["records"][0]["value"]})
            if a.counting and not metric.endswith("hll"):
                trees = {"this checkout": src}
                if a.counting_against is not None:
                    trees = {"against": a.counting_against / "src", **trees}
                for row in counting_rows(path, metric, trees, a.counting_rounds):
                    emit(row)
        if a.ray or a.ray_only:
            parts = shards(path, 8)
            for cpus in (1, 2):
                for metric in a.metrics:
                    code_env = {"DIVMETER_RAY_CPUS": str(cpus)}
                    m = measure_ray(parts, metric, cpus, src, code_env)
                    emit({"row": "ray", "corpus_mb": round(mb, 1), "metric": metric,
                          "cpus": cpus, "wall": round(m["wall"], 2),
                          "mb_s_wall": round(mb / m["wall"], 2), "value": m["value"],
                          "driver_peak_mb": round(m["peak_mb"])})


def measure_ray(parts: list[Path], metric: str, cpus: int, src: Path,
                env_extra: dict[str, str]) -> dict[str, float]:
    """``score_corpus_ray`` on a fresh local cluster of ``cpus`` CPUs (start-up not timed)."""
    code = f"""
import json, resource, time, ray
ray.init(num_cpus={cpus}, include_dashboard=False, log_to_driver=False)
from divmeter.engine.ray import score_corpus_ray
t0 = time.perf_counter()
run = score_corpus_ray({[str(p) for p in parts]!r}, [{metric!r}], partitions={max(2, cpus)})
wall = time.perf_counter() - t0
print(json.dumps({{"wall": wall, "value": run.records[0]["value"],
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
ray.shutdown()
"""
    env = {**os.environ, "PYTHONPATH": str(src), **env_extra}
    out = subprocess.run(["nice", sys.executable, "-c", code], capture_output=True, env=env)
    if out.returncode:
        raise SystemExit(out.stderr.decode()[-3000:])
    got: dict[str, float] = json.loads(out.stdout.decode().strip().splitlines()[-1])
    return got


if __name__ == "__main__":
    main()
