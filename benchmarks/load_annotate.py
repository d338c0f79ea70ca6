"""Full-size load test of ``divmeter annotate serve``: 20 annotators, 2,000 answers, one kill.

A study of 200 sets x 10 ratings (absHDS) = 2,000 answers; 20 concurrent scripted annotators
(threads speaking plain HTTP on loopback: GET page, POST warm-up, POST answer, each answer in its
own transaction). When ``--kill-at`` of the answers are acknowledged the server is SIGKILLed and
restarted on the same port; clients retry through the outage. Checks afterwards: every item has
exactly 10 answers from distinct annotators, every acknowledged answer is stored, 2,000 rows.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/load_annotate.py`` (writes
``benchmarks/results_load_annotate.md``; the short version is tests/test_annotate_load.py).
"""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from annotate_util import Annotator, serve  # noqa: E402
from divmeter.apps.web.store import Store, create_study  # noqa: E402
from divmeter.inputs.data.model import ResponseSet  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--annotators", type=int, default=20)
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--ratings", type=int, default=10)
    ap.add_argument("--kill-at", type=float, default=0.5, help="fraction of answers (0 = never)")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds, then fail")
    ap.add_argument("-o", "--output", default=str(HERE / "results_load_annotate.md"))
    args = ap.parse_args()
    total = args.items * args.ratings
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "load.sqlite"
        sets = [ResponseSet(f"s{i:04d}", [f"response {j} to {i}" for j in range(5)],
                            prompt=f"context {i}", label=i % 2) for i in range(args.items)]
        create_study(db, sets, kind="abs", ratings=args.ratings, name="load")
        store = Store(db)
        tokens = store.invite("load", args.annotators)
        deadline = time.monotonic() + args.timeout
        t0 = time.monotonic()
        kill_time = None
        with serve(db, Path(tmp) / "server.log") as (base, restart):
            clients = [Annotator(base, t, "abs", value=lambda a: 1 + a % 5, deadline=deadline)
                       for t in tokens]
            threads = [threading.Thread(target=c.run) for c in clients]
            for th in threads:
                th.start()
            acked_at_kill = None
            if args.kill_at > 0:
                while sum(len(c.acked) for c in clients) < total * args.kill_at:
                    if time.monotonic() > deadline:
                        raise SystemExit("no progress before the kill")
                    time.sleep(0.05)
                acked_at_kill = sum(len(c.acked) for c in clients)
                k0 = time.monotonic()
                restart()
                kill_time = time.monotonic() - k0
            for th in threads:
                th.join(max(0.0, deadline - time.monotonic()))
            wall = time.monotonic() - t0
        con = sqlite3.connect(db)
        per_item = con.execute("SELECT COUNT(*), COUNT(DISTINCT annotator_id) FROM answers "
                               "GROUP BY item_id").fetchall()
        stored = {a for (a,) in con.execute("SELECT assignment_id FROM answers")}
        rows = con.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
        con.close()
    acked = [a for c in clients for a in c.acked]
    checks = {
        "all annotators finished": all(c.finished for c in clients),
        "no request refused": not any(c.refused for c in clients),
        f"answers stored = {total}": rows == total,
        "every item exactly `ratings` answers, distinct annotators":
            per_item == [(args.ratings, args.ratings)] * args.items,
        "no answer acknowledged twice": len(acked) == len(set(acked)),
        "every acknowledged answer stored": set(acked) <= stored,
    }
    per_annotator = sorted(len(c.acked) for c in clients)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=HERE, check=False).stdout.strip()
    except OSError:
        commit = "?"
    lines = [
        "# Load test of `divmeter annotate serve` (loopback)", "",
        f"Command: `PYTHONPATH=src .venv/bin/python benchmarks/load_annotate.py` (commit {commit}; "
        "2 cores shared with 7 other jobs, so wall times are loose upper bounds).", "",
        f"- study: {args.items} absHDS items x {args.ratings} ratings = {total} answers; "
        f"{args.annotators} concurrent annotators; each answer = GET page, POST warm-up, GET "
        "page, POST answer (SQLite WAL, synchronous=FULL, one transaction per POST)",
        f"- server SIGKILLed and restarted when {acked_at_kill} answers were acknowledged "
        f"(restart took {kill_time:.2f} s)" if kill_time is not None else "- no kill",
        f"- wall time {wall:.1f} s, {rows / wall:.1f} answers/s; client retries through the "
        f"outage: {sum(c.retries for c in clients)}",
        f"- answers per annotator: min {per_annotator[0]}, max {per_annotator[-1]}", "",
        "| check | result |", "|---|---|",
        *[f"| {k} | {'pass' if v else 'FAIL'} |" for k, v in checks.items()], "",
    ]
    Path(args.output).write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    if not all(checks.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
