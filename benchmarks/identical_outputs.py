"""Prove that a refactor changed no number: `divmeter score` output, byte for byte.

Runs `divmeter score` with a fixed list of metrics on the bundled example and on every Tevet &
Berant file in $DIVMETER_SHARED/data/tevet/ (default: ../shared; form metrics: no model
needed), and compares the SHA-256 of each output with the digests recorded before the refactor
in `identical_outputs.json`.

    python benchmarks/identical_outputs.py            # check (exit 1 on any difference)
    python benchmarks/identical_outputs.py --record   # record the digests of the current code
    python benchmarks/identical_outputs.py --quick    # the bundled example and 3 Tevet files

The digests were recorded at commit 8084fd7 (divmeter 0.1.0, before issue 9), re-recorded after
issue 16 (its only changes on these files are checked record by record in the commit message
that re-recorded them), and re-recorded from commit 74f78f3 (before issues 21-27) on the
machine of stop 20, where the earlier digests matched none of the 19 outputs of 74f78f3 itself
(they depend on the machine's environment, not only on divmeter's code): main after issues
21-27 gives those 74f78f3 digests byte for byte, 19 of 19.

Since issue 33 `divmeter score` carries the input's own fields into its records (the prompt,
Tevet's `metric_*` columns, and any field a record already names as `input.<name>`): those
values are the input file's, not numbers divmeter computes, so they are taken out of each record
(`_without_input_fields`, re-serialised as the writer does) before the digest; everything else
is compared byte for byte against the same recorded digests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEVET = (Path(os.environ.get("DIVMETER_SHARED", ROOT.parent / "shared")) / "data" / "tevet"
         / "with_metrics")
DIGESTS = Path(__file__).with_name("identical_outputs.json")

#: Every form metric, at its defaults and at the variants users name most often.
METRICS = [
    "distinct-n",
    "distinct-n:n=2",
    "entropy-n",
    "ead",
    "ngram-cosine",
    "ngram-diversity",
    "self-repetition",
    "self-bleu",
    "self-bleu:variant=sentence,n=3",
    "homogenization:measure=rougeL",
    "homogenization:measure=bleu",
    "vendi-ngram:q=0.5",
    "compression-ratio",
    "ttr",
    "mattr:window=10",
    "pattr:target_length=50",
    "mtld",
    "hdd",
    "response-compression",
    "length",
]


def _inputs(quick: bool) -> list[Path]:
    files = [ROOT / "examples" / "stories.jsonl"]
    if TEVET.is_dir():
        tevet = sorted(TEVET.rglob("*.csv"))
        files += tevet[:3] if quick else tevet
    return files


def _digest(path: Path, metrics: list[str], out_dir: Path) -> str:
    out = out_dir / (path.stem + ".jsonl")
    cmd = [sys.executable, "-c", "from divmeter.apps.cli import main; main()", "score", str(path),
           "-o", str(out), "-q", "--signatures"]
    for m in metrics:
        cmd += ["-m", m]
    subprocess.run(cmd, check=True, cwd=ROOT)
    return hashlib.sha256(_without_input_fields(out.read_text(encoding="utf-8"))).hexdigest()


def _without_input_fields(text: str) -> bytes:
    """The JSONL records without the input fields carried since issue 33 (the prompt, Tevet's
    `metric_*` columns, `input.*`), each line written back as the JSONL writer writes it."""
    lines = []
    for line in text.splitlines():
        rec = json.loads(line)
        rec = {k: v for k, v in rec.items()
               if k != "prompt" and not k.startswith(("metric_", "input."))}
        lines.append(json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n")
    return "".join(lines).encode("utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", action="store_true", help="record digests of the current code")
    ap.add_argument("--quick", action="store_true", help="only the example and 3 Tevet files")
    args = ap.parse_args()
    recorded = json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}
    found: dict[str, str] = {}
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in _inputs(args.quick):
            key = (f"tevet/{path.relative_to(TEVET)}" if TEVET in path.parents
                   else str(path.relative_to(ROOT)))
            t0 = time.perf_counter()
            found[key] = _digest(path, METRICS, Path(tmp))
            took = time.perf_counter() - t0
            if args.record:
                print(f"recorded {key}  {found[key][:16]}  ({took:.1f} s)")
                continue
            want = recorded.get(key)
            status = "same" if want == found[key] else ("NEW" if want is None else "DIFFERENT")
            bad += status != "same"
            print(f"{status:9s} {key}  ({took:.1f} s)")
    if args.record:
        DIGESTS.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        return 0
    print(f"{len(found) - bad} of {len(found)} outputs byte-identical to the recorded ones")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
