"""n-gram Vendi on 10,000 documents of 200 words, and homogenization on 2,000 responses:
wall time and peak memory, one fresh process per measurement.

Corpus: every response of the Tevet & Berant files (decTest and McDiv, three tasks each), in a
seeded shuffle, joined into one word stream and cut into documents of 200 words; when the
stream runs out it is reshuffled and repeated, so documents mix responses and (for large
corpora) repeat some. ``--unique`` reports how many documents are distinct.

Each case runs in a child process (``python bench_vendi_scale.py --child CASE N``) that prints
its value, wall time, CPU time (all threads of the process; on a shared machine the fairer
number) and peak RSS (``resource.getrusage(RUSAGE_SELF).ru_maxrss``, the process's
whole peak, Python and the corpus included).

Cases:
    exact      vendi-ngram (q=1, n=1..4, tevet tokens), exact; q=0.5, 2 and inf from the same
               eigenvalues (``details["eigenvalues"]``)
    exact32    the same with ``dtype=float32`` (error against exact)
    slq        vendi-ngram approx=slq, P probes and M steps (K = 1000 P + M on the command line;
               q = 1, 0.5 and inf each a separate run), error against exact
    nystroem   vendi-ngram approx=nystroem with k landmarks (error against exact)
    homog      homogenization (rougeL and rouge1) on the first N responses of the pool

Run (takes a few minutes on a shared 2-core machine):
    PYTHONPATH=src .venv/bin/python benchmarks/bench_vendi_scale.py [--docs 10000]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SHARED = Path(os.environ.get("DIVMETER_SHARED", "/work/shared")) / "data" / "tevet"
FILES = [
    f"{folder}/{stem}_{task}.csv"
    for folder, stem in (("decTest", "dec_test_1000_no_hds"), ("McDiv", "mcdiv_all_no_hds"))
    for task in ("prompt_gen", "resp_gen", "story_gen")
]


def responses() -> list[str]:
    """Every non-blank response of the Tevet files, in file order."""
    out: list[str] = []
    for f in FILES:
        with open(SHARED / "with_metrics" / f, encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                out.extend(v for k, v in row.items() if k.startswith("resp_") and v.strip())
    return out


def documents(n_docs: int, words: int = 200, seed: int = 0) -> list[str]:
    """``n_docs`` documents of ``words`` words cut from a shuffled, repeated response stream."""
    pool = responses()
    rng = np.random.default_rng(seed)
    stream: list[str] = []
    while len(stream) < n_docs * words:
        for i in rng.permutation(len(pool)):
            stream.extend(pool[i].split())
    return [" ".join(stream[i * words : (i + 1) * words]) for i in range(n_docs)]


def child(case: str, n: int, k: int) -> None:
    import divmeter

    if case == "homog":
        texts = responses()[:n]
    else:
        texts = documents(n)
    load = [round(x, 2) for x in os.getloadavg()]
    before = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    t0, c0 = time.perf_counter(), time.process_time()
    out: dict[str, object] = {"case": case, "n": n, "load_1_5_15": load}
    if case in ("exact", "exact32"):
        r = divmeter.score(texts, "vendi-ngram",
                           dtype="float32" if case == "exact32" else "float64")
        eig = r.details["eigenvalues"]
        from divmeter.core.linalg import solver_name
        from divmeter.metrics.vendi import vendi_from_eigenvalues

        out.update(value=r.value, path=r.details["path"], q05=vendi_from_eigenvalues(eig, 0.5),
                   q2=vendi_from_eigenvalues(eig, 2.0),
                   qinf=vendi_from_eigenvalues(eig, float("inf")), unique=len(set(texts)),
                   signature=r.signature,
                   solver=solver_name("float32" if case == "exact32" else "float64"))
    elif case == "nystroem":
        r = divmeter.score(texts, "vendi-ngram", approx="nystroem", k=k)
        out.update(value=r.value, signature=r.signature)
    elif case == "slq":
        probes, steps = divmod(k, 1000)
        sets = {"value": 1.0, "q05": 0.5, "qinf": float("inf")}
        for key, q in sets.items():
            r = divmeter.score(texts, "vendi-ngram", q=q, approx="slq", probes=probes,
                               steps=steps)
            out[key] = r.value
        out["signature"] = r.signature
    else:
        out.update(rougeL=divmeter.score(texts, "homogenization").value,
                   rouge1=divmeter.score(texts, "homogenization", measure="rouge1").value)
    out["seconds"] = round(time.perf_counter() - t0, 2)
    out["cpu_seconds"] = round(time.process_time() - c0, 2)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["rss_before_mb"] = before  # the corpus built, nothing scored yet
    print(json.dumps(out))


def run(case: str, n: int, k: int = 0) -> dict[str, object]:
    cmd = [sys.executable, __file__, "--child", case, str(n), str(k)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        return {"case": case, "n": n, "error": res.stderr.strip().splitlines()[-1:]}
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--homog", type=int, default=2_000)
    ap.add_argument("--k", type=int, nargs="*", default=[1000, 2000])
    ap.add_argument("--slq", type=int, nargs="*", default=[16030, 32030],
                    help="probes * 1000 + steps")
    ap.add_argument("--exact-from", metavar="JSON",
                    help="reuse the exact case's JSON line from an earlier run (it is slow)")
    ap.add_argument("--child", nargs=3, metavar=("CASE", "N", "K"))
    a = ap.parse_args()
    if a.child:
        child(a.child[0], int(a.child[1]), int(a.child[2]))
        return
    exact = json.loads(a.exact_from) if a.exact_from else run("exact", a.docs)
    print(json.dumps(exact))
    cases = ([("exact32", 0)] + [("slq", k) for k in a.slq] + [("nystroem", k) for k in a.k])
    for case, k in cases:
        r = run(case, a.docs, k)
        for key in ("value", "q05", "q2", "qinf"):
            if key in exact and key in r:
                r[f"rel_error_{key}"] = (float(r[key]) - float(exact[key])) / float(exact[key])
        print(json.dumps(r))
    print(json.dumps(run("homog", a.homog)))


if __name__ == "__main__":
    main()
