"""Homogenisation scores of a selected corpus: mean pairwise ROUGE-1/2/L F1 and BLEU.

Used by the length-bias protocol (PATTR paper, Sec. 3: the top-k responses selected by a diversity
metric should be *less* homogeneous). Written here on numpy-free Python counters so the core needs
no extra package; definitions:

* tokens for ROUGE: lowercase, every run of characters other than ``a-z0-9`` is a separator
  (the rouge-score package's default tokenizer, no stemming);
* ROUGE-N F1: clipped n-gram overlap, ``2PR/(P+R)`` (0 when either text has no n-gram);
* ROUGE-L F1: longest common subsequence, ``2PR/(P+R)``;
* BLEU: BLEU-4 of one text against the other as single reference, uniform weights, no smoothing
  (so 0 whenever a 4-gram precision is 0), brevity penalty; tokens split off punctuation
  (a simplification of sacrebleu's 13a), case kept. BLEU is not symmetric: the pair (a, b) scores
  a as hypothesis and b as reference.

Pairs: all unordered pairs when there are at most ``n_pairs``, else ``n_pairs`` distinct pairs
drawn with a seeded numpy Generator.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

__all__ = ["homogenization", "rouge_n", "rouge_l", "bleu"]

_ROUGE_SPLIT = re.compile(r"[^a-z0-9]+")
_BLEU_PUNCT = re.compile(r"([^\w\s])")


def _rouge_tokens(text: str) -> list[str]:
    return [t for t in _ROUGE_SPLIT.split(text.lower()) if t]


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def _f1(overlap: float, n_a: int, n_b: int) -> float:
    if n_a == 0 or n_b == 0 or overlap == 0:
        return 0.0
    p, r = overlap / n_a, overlap / n_b
    return 2 * p * r / (p + r)


def rouge_n(a: str, b: str, n: int = 1) -> float:
    """ROUGE-N F1 between two texts.

    Example:
        >>> rouge_n("the cat sat", "the cat ran", 1)
        0.6666666666666666
    """
    ga, gb = _ngrams(_rouge_tokens(a), n), _ngrams(_rouge_tokens(b), n)
    overlap = sum((ga & gb).values())
    return _f1(overlap, sum(ga.values()), sum(gb.values()))


def _lcs(x: Sequence[str], y: Sequence[str]) -> int:
    if not x or not y:
        return 0
    prev = [0] * (len(y) + 1)
    for xi in x:
        cur = [0]
        for j, yj in enumerate(y, 1):
            cur.append(prev[j - 1] + 1 if xi == yj else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(a: str, b: str) -> float:
    """ROUGE-L F1 (longest common subsequence) between two texts.

    Example:
        >>> round(rouge_l("the cat sat on the mat", "the cat on a mat"), 4)
        0.7273
    """
    ta, tb = _rouge_tokens(a), _rouge_tokens(b)
    return _f1(_lcs(ta, tb), len(ta), len(tb))


def bleu(hyp: str, ref: str, max_order: int = 4) -> float:
    """BLEU of ``hyp`` against the single reference ``ref`` (no smoothing).

    Example:
        >>> bleu("the cat sat on the mat", "the cat sat on the mat")
        1.0
    """
    th = _BLEU_PUNCT.sub(r" \1 ", hyp).split()
    tr = _BLEU_PUNCT.sub(r" \1 ", ref).split()
    if not th or not tr:
        return 0.0
    log_p = 0.0
    for n in range(1, max_order + 1):
        gh, gr = _ngrams(th, n), _ngrams(tr, n)
        total = sum(gh.values())
        match = sum((gh & gr).values())
        if total == 0 or match == 0:
            return 0.0
        log_p += math.log(match / total) / max_order
    bp = 1.0 if len(th) > len(tr) else math.exp(1 - len(tr) / len(th))
    return bp * math.exp(log_p)


def _pairs(n: int, n_pairs: int, seed: int) -> list[tuple[int, int]]:
    total = n * (n - 1) // 2
    if total <= n_pairs:
        return [(i, j) for i in range(n) for j in range(i + 1, n)]
    rng = np.random.default_rng(seed)
    flat = rng.choice(total, n_pairs, replace=False)
    # unrank flat index -> (i, j) with i < j in row-major upper-triangle order
    out = []
    for f in np.sort(flat):
        f = int(f)
        i = int(n - 2 - math.floor(math.sqrt(-8 * f + 4 * n * (n - 1) - 7) / 2.0 - 0.5))
        j = int(f + i + 1 - n * (n - 1) // 2 + (n - i) * ((n - i) - 1) // 2)
        out.append((i, j))
    return out


def homogenization(texts: Sequence[str], *, n_pairs: int = 1000, seed: int = 0) -> dict[str, float]:
    """Mean pairwise ROUGE-1, ROUGE-2, ROUGE-L F1 and BLEU of a corpus (higher = more homogeneous).

    Example:
        >>> h = homogenization(["a b c", "a b d", "x y z"])
        >>> round(h["rouge1"], 4), h["n_pairs"]
        (0.2222, 3)
    """
    pairs = _pairs(len(texts), n_pairs, seed)
    if not pairs:
        return {"rouge1": math.nan, "rouge2": math.nan, "rougeL": math.nan, "bleu": math.nan,
                "n_pairs": 0}
    r1 = r2 = rl = bl = 0.0
    for i, j in pairs:
        a, b = texts[i], texts[j]
        r1 += rouge_n(a, b, 1)
        r2 += rouge_n(a, b, 2)
        rl += rouge_l(a, b)
        bl += bleu(a, b)
    m = len(pairs)
    return {"rouge1": r1 / m, "rouge2": r2 / m, "rougeL": rl / m, "bleu": bl / m, "n_pairs": m}
