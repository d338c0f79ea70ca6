"""What a judge run produces: the samples of each item, the judged sets and pairs, and the run with
its counts (:class:`JudgeRun`, whose :meth:`~JudgeRun.summary` every front end prints).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from divmeter.backends.judge.bias import PositionBias
from divmeter.backends.judge.parse import PARSE_KINDS

__all__ = ["JudgeRun", "JudgedPair", "JudgedSet", "Sample", "VALID_RATE_DEFAULT",
           "valid_rate_problem"]

#: Default floor of a run's valid-answer rate (valid samples / samples) below which the command
#: line fails (``divmeter judge --min-valid``).
VALID_RATE_DEFAULT = 0.8
#: Failure kinds of answers that came back but gave no rating (besides the parse kinds).
ANSWER_KINDS = ("no_content", "no_logprobs", "no_rating_token")


@dataclass(frozen=True)
class Sample:
    """One of the N answers for an item (for pairs: in one presentation order).

    ``scores`` is ``(score,)`` (absolute) or ``(score of set1, score of set2)`` (pairwise, already
    mapped back from the presentation order), or ``None`` with ``reason`` and ``kind`` (a parse
    kind of :data:`~divmeter.backends.judge.parse.PARSE_KINDS`, one of :data:`ANSWER_KINDS`, or an
    HTTP failure kind). ``asks`` counts the answers requested for this sample (1 + re-asks; in the
    ``logprobs`` mode the requests its item needed).
    """

    sample: int
    order: str | None
    scores: tuple[int, ...] | None
    rationale: str | None
    reason: str | None = None
    kind: str | None = None
    asks: int = 1

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sample": self.sample}
        if self.order is not None:
            out["order"] = self.order
        if self.scores is not None and len(self.scores) == 1:
            out["score"] = self.scores[0]
        elif self.scores is not None:
            out["score1"], out["score2"] = self.scores
        out["rationale"] = self.rationale
        if self.reason is not None:
            out["reason"], out["kind"] = self.reason, self.kind
        out["asks"] = self.asks
        return out


def mean(values: Sequence[float]) -> float | None:
    """The mean, or ``None`` of nothing."""
    return float(sum(values) / len(values)) if values else None


def null_reason(samples: Sequence[Sample]) -> str:
    """Why an item has no rating: its most common failure kind, with an example."""
    kinds = Counter(s.kind for s in samples)
    kind = kinds.most_common(1)[0][0]
    first = next(s for s in samples if s.kind == kind)
    return f"no valid rating in {len(samples)} samples ({dict(kinds)}); e.g. {first.reason}"


@dataclass(frozen=True)
class JudgedSet:
    """The absolute rating of one set: the mean of the valid samples, or ``None`` with a
    reason. ``dist`` (``logprobs`` answers): the rating distribution read from the model,
    ``{"p": {"1": ..., "5": ...}, "mass": ...}`` (see :mod:`divmeter.backends.judge.logprobs`)."""

    value: float | None
    reason: str | None
    samples: tuple[Sample, ...]
    dist: dict[str, Any] | None = None

    @property
    def n_valid(self) -> int:
        return sum(s.scores is not None for s in self.samples)


@dataclass(frozen=True)
class JudgedPair:
    """The ratings of a pair's two sets (means over the valid samples of every presentation
    order) and the label ``divmeter meta pairwise`` reads: 0 = set1 more diverse, 1 = set2,
    2 = equal means; ``None`` with a reason when no sample is valid. ``by_order`` holds the same
    numbers per presentation order (``ab``: set1 shown first; ``ba``: set2 shown first), and in
    the ``logprobs`` mode each order's rating distributions of the set shown first and second
    (``dist_first``, ``dist_second``)."""

    rating1: float | None
    rating2: float | None
    label: int | None
    reason: str | None
    samples: tuple[Sample, ...]
    by_order: dict[str, dict[str, Any]]

    @property
    def n_valid(self) -> int:
        return sum(s.scores is not None for s in self.samples)


def label_of(r1: float | None, r2: float | None) -> int | None:
    """0 when set1's rating is higher, 1 when set2's, 2 when equal, ``None`` without both."""
    if r1 is None or r2 is None:
        return None
    return 0 if r1 > r2 else 1 if r2 > r1 else 2


@dataclass
class JudgeRun:
    """Everything a run produced: the items, the signature and the counts.

    ``summary()`` holds the items and nulls, valid samples and the valid-answer rate, answers
    that gave no rating by kind (every unparseable answer, re-asked or not; answers without
    log-probabilities or without a rating token), null samples by kind (those kinds and HTTP
    failure kinds), the mean probability the model gave the rating tokens (``logprobs``
    answers), and the client's requests, cache hits, retries and failures by kind and tokens.
    """

    signature: str
    items: list[Any]
    parse_failures: Counter[str]
    client_stats: dict[str, Any]
    bias: PositionBias | None = None
    answer: str = field(default="text")

    def summary(self) -> dict[str, Any]:
        samples = [s for it in self.items for s in it.samples]
        nulls = Counter(s.kind for s in samples if s.scores is None)
        valid = sum(s.scores is not None for s in samples)
        out: dict[str, Any] = {
            "items": len(self.items),
            "null_items": sum(getattr(it, "reason", None) is not None for it in self.items),
            "samples": len(samples),
            "valid_samples": valid,
            "valid_rate": valid / len(samples) if samples else None,
            "answer": self.answer,
            "unparseable_answers": {k: self.parse_failures[k] for k in (*PARSE_KINDS,
                                                                        *ANSWER_KINDS)
                                    if self.parse_failures[k]},
            "null_samples": dict(sorted(nulls.items())),
        }
        masses = [m for it in self.items for m in _masses(it)]
        if masses:
            out["rating_token_mass"] = sum(masses) / len(masses)
        out["client"] = self.client_stats
        out["signature"] = self.signature
        if self.bias is not None:
            out["position_bias"] = self.bias.to_dict()
        return out


def _masses(item: Any) -> list[float]:
    """The rating-token probability masses an item's answers had (``logprobs`` mode)."""
    if isinstance(item, JudgedSet):
        return [item.dist["mass"]] if item.dist else []
    out = []
    for o in getattr(item, "by_order", {}).values():
        for key in ("dist_first", "dist_second"):
            if o.get(key):
                out.append(o[key]["mass"])
    return out


def valid_rate_problem(summary: dict[str, Any], model: str, min_valid: float, *,
                       cli: bool = True) -> str | None:
    """The one-line error of a run whose valid-answer rate is below ``min_valid``, naming the
    rate, the model and what to try (as command-line options, or with ``cli=False`` as the
    ``judge`` metric's parameters); ``None`` when the rate is fine (or nothing was asked).

    Example:
        >>> s = {"samples": 36, "valid_samples": 0, "valid_rate": 0.0, "answer": "text"}
        >>> print(valid_rate_problem(s, "openai:m", 0.8).split(";")[0].replace(" with", "\\n"))
        judge: only 0% of the answers gave a valid rating (0 of 36)
         openai:m in the text answer mode, below --min-valid 0.8
    """
    rate = summary.get("valid_rate")
    if rate is None or rate >= min_valid:
        return None
    mode = summary.get("answer", "text")

    def opt(name: str, value: Any) -> str:
        return f"--{name.replace('_', '-')} {value}" if cli else f"{name}={value}"

    where = "the nulls file" if cli else "each result's details"
    head = (f"judge: only {rate:.0%} of the answers gave a valid rating "
            f"({summary['valid_samples']} of {summary['samples']}) with {model} in the {mode} "
            f"answer mode, below {opt('min_valid', f'{min_valid:g}')}; ")
    if mode == "logprobs":
        tip = ("check that the server returns `logprobs` on /completions (llama.cpp, vLLM, TGI "
               f"do; chat-only APIs do not: use {opt('answer', 'schema')} there), or use a "
               f"stronger model; the reasons are in {where}.")
    else:
        tip = (f"try {opt('answer', 'logprobs')} (the rating read from the log-probabilities "
               "of the tokens 1-5 on /completions: base and small models answer that way), "
               f"{opt('answer', 'schema')} (a JSON schema the server enforces), or a larger "
               f"instruction-tuned model; the unparseable answers are in {where}.")
    return head + tip
