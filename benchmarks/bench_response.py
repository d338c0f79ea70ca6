"""Benchmark: response-level lexical diversity (TTR, MATTR, MTLD, HD-D and the richness indices
of divmeter.metrics.indices) against the peer libraries.

    .venv-bench/bin/python benchmarks/bench_response.py [--quick] [--sets N] [--responses K]
    .venv-bench/bin/python benchmarks/bench_response.py --only indices   # the issue-24 indices

Same seeded generated data for everyone: N sets x K responses (default 1,000 x 20) of 50-130
words drawn from a Zipf-like vocabulary. Every library gets the same tokens (``str.split()``,
divmeter's ``whitespace`` tokenizer); the timed loop starts from the raw strings for all, so
tokenisation is paid by everyone. divmeter is called the way users call it,
``divmeter.score(set, name)`` once per set, and batched: the metric's many-set formula (the
definition's ``score``) once on the whole list, as ``divmeter.score_many`` runs it; peers are
called once per response (their API).

The per-response values of every run are compared (|diff| <= 1e-9 relative) where the definitions
agree, over the responses both define (divmeter's undefined responses, where a peer returns 0 or
raises, are counted apart); where they do not (MTLD of taaled / lexical-diversity), the
difference is named and measured. vocd-D is random: divmeter (seed 0) is compared with
lexicalrichness (its default seed 42) by the mean relative difference, next to the peer's own
difference between seeds 42 and 43 on the same responses. Slow peers run on a fraction of the
sets and their time is scaled up (marked ``*``).
Contenders run in interleaved rounds and keep their best time. Times are this process's CPU time
by default (``--clock wall`` for elapsed time): the machine is shared with other jobs, and every
contender is single-threaded.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import math
import random
import time
import warnings
from collections.abc import Callable
from typing import Any

from _common import best_time, compiled_path, pkg_resources_shim

pkg_resources_shim()
with contextlib.redirect_stdout(io.StringIO()):  # taaled prints a plotnine notice on import
    from taaled import ld as taaled_ld
from lexical_diversity import lex_div  # noqa: E402
from lexicalrichness import LexicalRichness  # noqa: E402

import divmeter  # noqa: E402

Sets = list[list[str]]


def make_sets(n_sets: int, n_resp: int, seed: int = 0) -> Sets:
    """Seeded sets of responses of 50-130 words over a Zipf-like 5,000-word vocabulary."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = sorted({"".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(6000)})[:5000]
    rng.shuffle(vocab)
    cum: list[float] = []
    acc = 0.0
    for r in range(len(vocab)):
        acc += 1.0 / (r + 2.7)
        cum.append(acc)
    return [
        [" ".join(rng.choices(vocab, cum_weights=cum, k=rng.randint(50, 130)))
         for _ in range(n_resp)]
        for _ in range(n_sets)
    ]


CLOCK: Callable[[], float] = time.process_time


def timeit(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    return best_time(fn, repeat, CLOCK)


def ours(name: str, **params: Any) -> Callable[[Sets], list[float | None]]:
    def run(sets: Sets) -> list[float | None]:
        out: list[float | None] = []
        for s in sets:
            out.extend(divmeter.score(s, name, **params).details["per_response"])
        return out

    return run


def ours_batched(name: str, **params: Any) -> Callable[[Sets], list[float | None]]:
    """The metric's formula on every set of the whole list at once (what ``divmeter.score_many``
    runs after the rule for degenerate sets)."""
    metric = divmeter.get_metric(name).plan(params)

    def run(sets: Sets) -> list[float | None]:
        out: list[float | None] = []
        for r in metric.score([tuple(s) for s in sets]):
            out.extend(r.details["per_response"])
        return out

    return run


def peer(fn: Callable[[list[str]], Any]) -> Callable[[Sets], list[float | None]]:
    """The peer on every response's ``str.split()``; a response it refuses (raises) or gives a
    non-finite value is ``None``."""
    def one(tokens: list[str]) -> float | None:
        try:
            value = float(fn(tokens))
        except (ValueError, ZeroDivisionError, RuntimeError):
            return None
        return value if math.isfinite(value) else None

    def run(sets: Sets) -> list[float | None]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [one(t.split()) for s in sets for t in s]

    return run


def _first(value: Any) -> Any:  # taaled's MATTR returns a tuple for texts of <= W tokens
    return value[0] if isinstance(value, tuple) else value


def _lr(toks: list[str]) -> LexicalRichness:
    return LexicalRichness(toks, preprocessor=None, tokenizer=None)


_TL = taaled_ld.lexdiv()
W = 50

#: How a peer's values are compared: ``same`` (equal to 1e-9), ``differs`` (a named definitional
#: difference, measured), ``random`` (vocd-D: compared by the spread).
Case = tuple[str, dict[str, Any], list[tuple[str, Callable[[Sets], list], str]]]
# label -> (divmeter metric, its parameters, [(peer name, runner, comparison)])
CASES: dict[str, Case] = {
    "ttr": ("ttr", {}, [
        ("lexical-diversity", peer(lex_div.ttr), "same"),
        ("taaled", peer(_TL.TTR), "same"),
        ("lexicalrichness", peer(lambda t: _lr(t).ttr), "same"),
    ]),
    "mattr": ("mattr", {"window": W}, [
        ("lexical-diversity", peer(lambda t: lex_div.mattr(t, W)), "same"),
        ("taaled", peer(lambda t: _first(_TL.MATTR(t, W))), "same"),
        ("lexicalrichness", peer(lambda t: _lr(t).mattr(window_size=W)), "same"),
    ]),
    "hdd": ("hdd", {}, [
        ("taaled", peer(lambda t: _TL.HDD(t, 42)), "same"),
        ("lexical-diversity", peer(lex_div.hdd), "same"),
        ("lexicalrichness", peer(lambda t: _lr(t).hdd(draws=42)), "same"),
    ]),
    "mtld": ("mtld", {}, [
        ("lexicalrichness", peer(lambda t: _lr(t).mtld(threshold=0.72)), "same"),
        # Kyle's variant: factor ends on TTR < .72 and needs >= 10 tokens (named difference)
        ("taaled (MTLD-original)", peer(lambda t: _TL.MTLD(t, 10, 0.72, outputs=True)[2]),
         "differs"),
        ("lexical-diversity", peer(lex_div.mtld), "differs"),
    ]),
    # the richness indices of divmeter.metrics.indices (issue 24)
    "root-ttr": ("root-ttr", {}, [
        ("lexical-diversity", peer(lex_div.root_ttr), "same"),
        ("taaled", peer(_TL.RTTR), "same"),
        ("lexicalrichness", peer(lambda t: _lr(t).rttr), "same"),
    ]),
    "corrected-ttr": ("corrected-ttr", {}, [
        ("lexicalrichness", peer(lambda t: _lr(t).cttr), "same")]),
    "log-ttr": ("log-ttr", {}, [
        ("lexical-diversity", peer(lex_div.log_ttr), "same"),
        ("taaled", peer(_TL.LTTR), "same"),
        ("lexicalrichness", peer(lambda t: _lr(t).Herdan), "same"),
    ]),
    "summer-s": ("summer-s", {}, [("lexicalrichness", peer(lambda t: _lr(t).Summer), "same")]),
    "dugast-u": ("dugast-u", {}, [("lexicalrichness", peer(lambda t: _lr(t).Dugast), "same")]),
    "maas-a2": ("maas-a2", {}, [
        ("lexical-diversity", peer(lex_div.maas_ttr), "same"),
        ("taaled", peer(_TL.MAAS), "same"),
    ]),
    "maas-a2 base=e": ("maas-a2", {"base": "e"}, [
        ("lexicalrichness", peer(lambda t: _lr(t).Maas), "same")]),
    "yule-k": ("yule-k", {}, [("lexicalrichness", peer(lambda t: _lr(t).yulek), "same")]),
    "yule-i": ("yule-i", {}, [("lexicalrichness", peer(lambda t: _lr(t).yulei), "same")]),
    "herdan-vm": ("herdan-vm", {}, [
        ("lexicalrichness", peer(lambda t: _lr(t).herdanvm), "same")]),
    "simpson-d": ("simpson-d", {}, [
        ("lexicalrichness", peer(lambda t: _lr(t).simpsond), "same")]),
    "msttr": ("msttr", {}, [
        ("lexical-diversity", peer(lex_div.msttr), "same"),
        ("taaled", peer(lambda t: _TL.MSTTR(t, 50)), "same"),
    ]),
    "msttr 100 drop-last": ("msttr", {"segment": 100, "convention": "drop-last"}, [
        ("lexicalrichness", peer(lambda t: _lr(t).msttr(100)), "same")]),
    "mtld-ma-bi": ("mtld-ma-bi", {}, [
        ("lexical-diversity", peer(lex_div.mtld_ma_bid), "same")]),
    "mtld-ma-wrap": ("mtld-ma-wrap", {}, [
        ("lexical-diversity", peer(lex_div.mtld_ma_wrap), "same")]),
    "vocd-d": ("vocd-d", {}, [("lexicalrichness", peer(lambda t: _lr(t).vocd()), "random")]),
}
INDICES = [k for k in CASES if k not in ("ttr", "mattr", "hdd", "mtld")]
# slow peers run on a fraction of the sets in full mode (time scaled up, marked with *)
SLOW = {("hdd", "lexicalrichness"): 10, ("mtld", "lexical-diversity"): 10,
        ("mtld", "taaled (MTLD-original)"): 10, ("vocd-d", "lexicalrichness"): 100,
        **{(k, "lexicalrichness"): 10 for k in ("yule-k", "yule-i", "herdan-vm", "simpson-d")},
        ("mtld-ma-bi", "lexical-diversity"): 20, ("mtld-ma-wrap", "lexical-diversity"): 20}


def compare(a: list[float | None], b: list[float | None]) -> tuple[int, int, float, int]:
    """(n compared, n mismatching at 1e-9 relative, max |diff|, n undefined in divmeter only)
    over the responses defined in both."""
    n = bad = only_peer = 0
    worst = 0.0
    for x, y in zip(a, b, strict=True):
        if x is None or y is None:
            only_peer += x is None and y is not None
            continue
        n += 1
        d = abs(x - y)
        worst = max(worst, d)
        bad += d > 1e-9 * max(abs(y), 1.0)
    return n, bad, worst, only_peer


def spread(a: list[float | None], b: list[float | None]) -> tuple[int, float]:
    """(n compared, mean |a - b| / b) over the responses defined in both."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    return len(pairs), sum(abs(x - y) / abs(y) for x, y in pairs) / max(len(pairs), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="100 sets (runs in well under a minute)")
    ap.add_argument("--sets", type=int, default=None)
    ap.add_argument("--responses", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5,
                    help="interleaved rounds; best time of each contender (peers over 5 s: one)")
    ap.add_argument("--only", nargs="*", default=None, help="metrics to run (default: all)")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                    help="cpu: this process's CPU time (default; robust to other load on a "
                    "shared machine, everything here is single-threaded); wall: elapsed time")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.clock == "cpu" else time.perf_counter
    n_sets = args.sets or (100 if args.quick else 1000)
    sets = make_sets(n_sets, args.responses)
    n_tok = sum(len(t.split()) for s in sets for t in s)
    print(f"data: {n_sets} sets x {args.responses} responses, {n_tok} words "
          f"(seed 0; 50-130 words each); divmeter {divmeter.__version__}; clock: {args.clock}")
    divmeter.score(sets[0], "ttr")  # import / registry warm-up
    print(f"divmeter path: {compiled_path()}")
    only = set(args.only or CASES)
    if "indices" in only:
        only |= set(INDICES)
    print(f"{'metric':<20} {'peer':<24} {'peer s':>9} {'divmeter s':>11} {'speed-up':>9} "
          f"{'batched s':>9} {'speed-up':>9}  values")
    for label, (metric, params, peers) in CASES.items():
        if label not in only:
            continue
        ours_batched(metric, **params)(sets[:1])  # compile / load this metric's kernels once
        # interleaved rounds (divmeter, then every peer), best time of each: on a shared,
        # loaded machine this keeps a burst of load from favouring one side
        runs = [("divmeter", ours(metric, **params), sets, 1.0),
                ("divmeter batched", ours_batched(metric, **params), sets, 1.0)]
        for name, run, _ in peers:
            frac = SLOW.get((label, name), 1) if not args.quick else 1
            data = sets[: max(1, n_sets // frac)]
            runs.append((name, run, data, len(sets) / len(data)))
        best = {name: math.inf for name, *_ in runs}
        values: dict[str, list] = {}
        for r in range(args.repeat):
            for name, run, data, scale in runs:
                if r and best[name] * scale > 5.0:
                    continue  # slow contender: one run is enough
                t, values[name] = timeit(lambda run=run, data=data: run(data), 1)
                best[name] = min(best[name], t)
        t_ours, t_batch = best["divmeter"], best["divmeter batched"]
        assert values["divmeter batched"] == values["divmeter"], metric
        for name, _run, how in peers:
            scale, data = next((sc, d) for nm, _r, d, sc in runs if nm == name)
            t_peer = best[name] * scale
            mine = values["divmeter"][: len(values[name])]
            n, bad, worst, only_peer = compare(mine, values[name])
            if how == "same":
                verdict = f"same on {n - bad}/{n}" + (f" (max |d| {worst:.1e})" if worst else "")
                if only_peer:
                    verdict += f"; {only_peer} undefined in divmeter (peer: 0)"
            elif how == "random":
                again = peer(lambda t: _lr(t).vocd(seed=43))(data)
                n, ours_vs = spread(mine, values[name])
                _, own = spread(again, values[name])
                verdict = (f"random: |divmeter (seed 0) - peer (seed 42)| / peer {ours_vs:.2%} "
                           f"on {n}; peer seed 43 vs 42: {own:.2%}")
            else:
                verdict = f"definition differs (min factor 10, TTR < .72): max |d| {worst:.2f}"
            star = "*" if scale != 1.0 else " "
            print(f"{label:<20} {name:<24} {t_peer:>8.3f}{star} {t_ours:>11.3f} "
                  f"{t_peer / t_ours:>8.1f}x {t_batch:>9.3f} {t_peer / t_batch:>8.1f}x  "
                  f"{verdict}", flush=True)
    # no peer computes per-response PATTR / truncated CR / length / log V0; divmeter's own times
    t_gz, _ = timeit(lambda: [len(gzip.compress(" ".join(t.split()[:128]).encode()))
                              for s in sets for t in s], 1)
    for metric in ("pattr", "length", "response-compression", "maas-log-v0"):
        if args.only is not None and metric not in only and not (
                metric == "maas-log-v0" and "indices" in only):
            continue
        t, _ = timeit(lambda metric=metric: ours(metric)(sets), args.repeat)
        tb, _ = timeit(lambda metric=metric: ours_batched(metric)(sets), args.repeat)
        extra = f"  (bare gzip.compress loop {t_gz:.3f} s)" if metric.startswith("resp") else ""
        print(f"{metric:<20} {'(no peer)':<24} {'':>9} {t:>11.3f}{'':>10} {tb:>9.3f}{extra}")
    if not args.quick:
        print("* slow peer timed on a fraction of the sets (1/10; vocd-d 1/100; mtld-ma 1/20) "
              "and scaled up")

if __name__ == "__main__":
    main()
