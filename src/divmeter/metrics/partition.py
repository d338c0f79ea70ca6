"""Functional and semantic diversity: how many *meaningfully different* responses a set holds.

A set of ``k`` responses is partitioned into classes of equivalent responses with NoveltyBench's
greedy representative comparison (Zhang et al. 2025, arXiv:2504.05228, section 3): the responses
are visited in order; each is compared with the representative (first member) of every existing
class, in the order the classes were opened, and joins the first class it is equivalent to, or
opens a new one. Three metrics are read off the partition:

* ``distinct-k``: classes / k (NoveltyBench's ``distinct_k`` is the count, in ``details``);
* ``novelty-utility``: NoveltyBench's ``utility_k`` (eq. 2), the patience-discounted quality of
  the responses that open a new class;
* ``semantic-entropy``: the entropy over classes (Kuhn, Gal & Farquhar 2023), from class sizes
  (``discrete``) or from the responses' sequence probabilities (``weighted``).

Equivalence is pluggable, and every choice is written into the signature (``eq:...`` and its
settings):

* ``embedding`` (default): cosine of sentence embeddings (packaged MiniLM through the encoder
  backend and its cache) at or above ``threshold``;
* ``judge``: an LLM behind an OpenAI-compatible server says *same* or *different*, both orders,
  read from the log-probabilities of the two answers (:mod:`divmeter.backends.pairjudge`);
* ``classifier``: a local sequence-pair classifier folder (NoveltyBench's DeBERTa equivalence
  classifier), probability of the equivalent label above ``threshold``;
* ``entailment``: bidirectional entailment under a local NLI model folder (Kuhn et al.'s
  semantic-equivalence test);
* in Python, any function ``f(a, b) -> bool`` (:func:`partition`).

The algorithm (:func:`greedy_partition`, :func:`partition_many`) and the three values
(:func:`utility_value`, :func:`entropy_value`) are plain functions, testable with no model;
models load inside the equivalence objects, from ``backends/``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np

from divmeter.backends.device import DEVICE, DTYPE
from divmeter.core import memory
from divmeter.core.errors import InvalidInputError, UnavailableError
from divmeter.core.params import Param
from divmeter.core.result import MetricResult, make_signature
from divmeter.engine.definition import Metric, SetContext
from divmeter.engine.public import public_function, register
from divmeter.inputs.data.model import as_texts
from divmeter.metrics._common import entropy_base

__all__ = [
    "EQUIVALENCES",
    "EMBEDDING_THRESHOLD",
    "NOVELTYBENCH_CLASSIFIER_THRESHOLD",
    "Verdict",
    "Partition",
    "Equivalence",
    "EmbeddingEquivalence",
    "JudgeEquivalence",
    "ClassifierEquivalence",
    "EntailmentEquivalence",
    "CallableEquivalence",
    "make_equivalence",
    "greedy_partition",
    "partition",
    "partition_many",
    "utility_value",
    "entropy_value",
    "noveltybench_short_rule",
    "noveltybench_quality",
    "NOVELTYBENCH_REWARD_THRESHOLDS",
    "NOVELTYBENCH_REWARD_THRESHOLDS_QWEN3",
    "EQUIVALENCE_PARAMS",
    "PartitionMetric",
    "DistinctK",
    "NoveltyUtility",
    "SemanticEntropy",
    "distinct_k",
    "novelty_utility",
    "semantic_entropy",
]

NOVELTYBENCH = (
    "Zhang, Diddee, Holm, Liu, Liu, Samuel, Wang & Ippolito 2025, NoveltyBench: Evaluating "
    "Language Models for Humanlike Diversity (arXiv:2504.05228)"
)
KUHN = (
    "Kuhn, Gal & Farquhar 2023, Semantic Uncertainty: Linguistic Invariances for Uncertainty "
    "Estimation in Natural Language Generation (ICLR); discrete form: Farquhar, Kossen, Kuhn & "
    "Gal 2024 (Nature)"
)

EQUIVALENCES: tuple[str, ...] = ("embedding", "judge", "classifier", "entailment")

#: Default cosine threshold of ``equivalence=embedding`` with MiniLM, calibrated on Tevet &
#: Berant's conTest (benchmarks/calibrate_partition.py, results_calibrate_partition.md): within-set
#: pairs of low-content-diversity sets taken as "same", of high ones as "different"; the
#: threshold with the best balanced accuracy on the worst of the three tasks (0.36; per task the
#: optima are 0.27 / 0.25 / 0.61 for prompt / resp / story: longer texts have higher cosines),
#: rounded to 0.05. Calibrate on your own data where you can.
EMBEDDING_THRESHOLD = 0.35

#: NoveltyBench's decision threshold on its classifier's probability of "equivalent" (label 1).
NOVELTYBENCH_CLASSIFIER_THRESHOLD = 0.102

#: Default threshold on the judge's mean probability of "same" over both orders.
JUDGE_THRESHOLD = 0.5

#: NoveltyBench's reward-model calibration: the raw rewards of Skywork-Reward-Gemma-2-27B-v0.2
#: that separate the 1-10 quality scores (a raw reward r gets 1 + the number of thresholds
#: below it, ties going down). From NoveltyBench's own scorer (novelty-bench d60518d,
#: ``src/score.py``), as inspect-evals keeps them (``novelty_bench.score.
#: REWARD_THRESHOLDS_GEMMA``, its ``quality_model="large"``); ``rm_scale=novelty-bench``.
NOVELTYBENCH_REWARD_THRESHOLDS: tuple[float, ...] = (
    -7.71875, -6.28125, -6.0, -5.71875, -5.5, -5.0, -4.375, -3.4375, -2.046875,
)

#: The same 1-10 scale for inspect-evals' default, small quality model,
#: Skywork-Reward-V2-Qwen3-1.7B (``novelty_bench.score.REWARD_THRESHOLDS_QWEN``, its
#: ``quality_model="small"``): inspect-evals derived them from 96 sample generations scored with
#: that model, calibrated to match the distribution of the scores NoveltyBench published for
#: gemini-1.5-pro on nb-wildchat. ``rm_scale=novelty-bench-qwen3``.
NOVELTYBENCH_REWARD_THRESHOLDS_QWEN3: tuple[float, ...] = (
    -0.43671875, 0.95773633, 1.07054688, 1.52291016, 1.6730625, 2.36985938, 3.19824219,
    4.24545312, 6.41390625,
)

#: ``rm_scale`` -> its thresholds.
REWARD_THRESHOLDS: dict[str, tuple[float, ...]] = {
    "novelty-bench": NOVELTYBENCH_REWARD_THRESHOLDS,
    "novelty-bench-qwen3": NOVELTYBENCH_REWARD_THRESHOLDS_QWEN3,
}


# --------------------------------------------------------------------------------------------
# the algorithm


@dataclass(frozen=True)
class Verdict:
    """One comparison's outcome: ``same`` (or ``None`` when it failed, with ``reason``) and the
    score it was decided on (cosine, probability of *same*, ...; ``None`` for a rule)."""

    same: bool | None
    score: float | None = None
    reason: str | None = None


def _greedy(n: int) -> Generator[tuple[int, int], bool, list[list[int]]]:
    """NoveltyBench's greedy partition as a coroutine: yields ``(representative, i)`` queries,
    receives whether they are equivalent, returns the classes (lists of indices, in order)."""
    classes: list[list[int]] = []
    for i in range(n):
        for c in classes:
            if (yield c[0], i):
                c.append(i)
                break
        else:
            classes.append([i])
    return classes


def greedy_partition(n: int, same: Callable[[int, int], bool]) -> list[list[int]]:
    """Partition items ``0..n-1`` with NoveltyBench's greedy representative comparison.

    Item ``i`` is compared with the first member of each existing class, in the order the
    classes were opened, as ``same(representative, i)``; it joins the first class for which that
    is true, or opens a new class. ``same`` is called at most ``n (n - 1) / 2`` times (all
    different) and ``n - 1`` times when everything is equivalent.

    Args:
        n: Number of items.
        same: The equivalence test on indices.

    Returns:
        The classes, each a list of indices in increasing order, ordered by their first member.

    Example:
        >>> greedy_partition(5, lambda a, b: a % 2 == b % 2)
        [[0, 2, 4], [1, 3]]
    """
    gen = _greedy(n)
    try:
        query = next(gen)
        while True:
            query = gen.send(bool(same(*query)))
    except StopIteration as stop:
        return list(stop.value)


@dataclass(frozen=True)
class Partition:
    """A set's partition into classes of equivalent responses.

    Attributes:
        classes: Lists of response indices, in the order the classes were opened.
        labels: The class of each response (``labels[i]`` indexes ``classes``).
        signature: The equivalence test's settings (``eq:embedding|model:...|thr:...``).
        comparisons: ``(representative, i, score, same)`` for every comparison made, in order.
    """

    classes: tuple[tuple[int, ...], ...]
    labels: tuple[int, ...]
    signature: str
    comparisons: tuple[tuple[int, int, float | None, bool], ...] = field(default=(), repr=False)

    @property
    def distinct(self) -> int:
        """The number of classes (NoveltyBench's ``distinct_k``)."""
        return len(self.classes)

    def texts(self, responses: Sequence[str]) -> list[list[str]]:
        """The classes as lists of the responses themselves."""
        return [[responses[i] for i in c] for c in self.classes]


def _labels(classes: Sequence[Sequence[int]], n: int) -> tuple[int, ...]:
    labels = [0] * n
    for c, members in enumerate(classes):
        for i in members:
            labels[i] = c
    return tuple(labels)


# --------------------------------------------------------------------------------------------
# equivalence tests


Query = tuple[str | None, str, str]


class Equivalence:
    """An equivalence test between two responses to one prompt.

    Subclasses give ``items`` (the settings that change a decision, for the signature) and
    :meth:`decide`, which answers many ``(prompt, representative, candidate)`` queries at once
    (so model calls and HTTP requests are batched across sets).
    """

    name = "equivalence"

    def items(self) -> list[tuple[str, Any]]:
        """The settings that can change a decision, in signature order (``eq`` first)."""
        return [("eq", self.name)]

    @property
    def signature(self) -> str:
        return "|".join(f"{k}:{_fmt(v)}" for k, v in self.items() if v is not None)

    def prepare(self, texts: Sequence[str]) -> None:
        """Called once with every text about to be partitioned (e.g. to embed them together)."""

    def decide(self, queries: Sequence[Query]) -> list[Verdict]:
        raise NotImplementedError


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    return str(v)


class CallableEquivalence(Equivalence):
    """Any function ``f(a, b) -> bool`` (or ``f(prompt, a, b)`` with ``with_prompt=True``) as the
    equivalence test; the signature names the function (``eq:callable|fn:module.name``)."""

    name = "callable"

    def __init__(self, fn: Callable[..., Any], *, with_prompt: bool = False) -> None:
        if not callable(fn):
            raise InvalidInputError(f"`equivalence` must be a name or a callable; got {fn!r}.")
        self.fn = fn
        self.with_prompt = with_prompt

    def items(self) -> list[tuple[str, Any]]:
        mod = getattr(self.fn, "__module__", None) or "?"
        qual = getattr(self.fn, "__qualname__", None) or type(self.fn).__name__
        return [("eq", "callable"), ("fn", f"{mod}.{qual}".replace("|", "/"))]

    def decide(self, queries: Sequence[Query]) -> list[Verdict]:
        out = []
        for prompt, a, b in queries:
            same = self.fn(prompt, a, b) if self.with_prompt else self.fn(a, b)
            out.append(Verdict(bool(same)))
        return out


class EmbeddingEquivalence(Equivalence):
    """Equivalent when the cosine of the two responses' sentence embeddings is at least
    ``threshold`` (embeddings from :func:`divmeter.metrics.embedding.embed_texts`: the encoder
    backend and its on-disk cache)."""

    name = "embedding"

    def __init__(self, model: str = "minilm", threshold: float = EMBEDDING_THRESHOLD, *,
                 base_url: str | None = None, device: str = "cpu", dtype: str = "float32"
                 ) -> None:
        from divmeter.metrics.embedding import _model_sig

        self.model, self.threshold, self.base_url = model, float(threshold), base_url
        self.device, self.dtype = device, dtype
        self._model_field, self._window = _model_sig(model, base_url)
        self._vectors: dict[str, np.ndarray] = {}

    def items(self) -> list[tuple[str, Any]]:
        return [("eq", "embedding"), ("model", self._model_field), ("win", self._window),
                ("dtype", None if self.dtype == "float32" else self.dtype),
                ("sim", "cosine"), ("thr", self.threshold)]

    def prepare(self, texts: Sequence[str]) -> None:
        from divmeter.metrics.embedding import embed_texts, normalize_rows

        todo = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if todo:
            X = normalize_rows(embed_texts(todo, self.model, self.base_url, "torch",
                                           self.device, self.dtype))
            self._vectors.update(zip(todo, X, strict=True))

    def decide(self, queries: Sequence[Query]) -> list[Verdict]:
        self.prepare([t for _, a, b in queries for t in (a, b)])
        out = []
        for _, a, b in queries:
            cos = float(np.clip(self._vectors[a] @ self._vectors[b], -1.0, 1.0))
            out.append(Verdict(cos >= self.threshold, cos))
        return out


def noveltybench_short_rule(a: str, b: str) -> bool | None:
    """NoveltyBench's rule for short responses, applied before its classifier: when the longer
    of the two has at most 5 lower-cased whitespace words, they are equivalent iff they share at
    least half as many distinct words as the longer one has words; otherwise ``None`` (ask the
    classifier).

    Example:
        >>> noveltybench_short_rule("Paris", "paris"), noveltybench_short_rule("Red", "Blue")
        (True, False)
        >>> noveltybench_short_rule("one two three four five six", "x") is None
        True
    """
    wa, wb = a.strip().lower().split(), b.strip().lower().split()
    longest = max(len(wa), len(wb))
    if longest > 5:
        return None
    return len(set(wa) & set(wb)) * 2 >= longest


class ClassifierEquivalence(Equivalence):
    """A local sequence-pair classifier folder (NoveltyBench's DeBERTa equivalence classifier,
    or any ``AutoModelForSequenceClassification``): equivalent when the probability of label
    ``label`` on ``(representative, candidate)`` is above ``threshold`` (NoveltyBench: label 1,
    0.102). With ``short_rule`` (NoveltyBench's), pairs of at most 5 words are decided by
    :func:`noveltybench_short_rule` instead."""

    name = "classifier"

    def __init__(self, model: str, threshold: float = NOVELTYBENCH_CLASSIFIER_THRESHOLD, *,
                 label: int = 1, short_rule: bool = True, max_length: int = 128,
                 device: str = "cpu", dtype: str = "float32") -> None:
        from divmeter.backends.pairs import get_pair_model

        self.pm = get_pair_model(model, max_length=max_length, device=device, dtype=dtype)
        if not 0 <= label < self.pm.num_labels:
            raise InvalidInputError(
                f"`label` must index one of the classifier's {self.pm.num_labels} labels "
                f"({self.pm.label_names()}); got {label}."
            )
        self.threshold, self.label, self.short_rule = float(threshold), label, short_rule

    def items(self) -> list[tuple[str, Any]]:
        return [("eq", "classifier"), ("model", self.pm.signature),
                ("maxlen", self.pm.max_length), ("label", self.label),
                ("short", "novelty-bench" if self.short_rule else "none"),
                ("thr", self.threshold)]

    def decide(self, queries: Sequence[Query]) -> list[Verdict]:
        out: list[Verdict | None] = []
        ask: list[tuple[str, str]] = []
        for _, a, b in queries:
            rule = noveltybench_short_rule(a, b) if self.short_rule else None
            if rule is None:
                ask.append((a, b))
            out.append(None if rule is None else Verdict(rule))
        probs = iter(self.pm.probabilities(ask)[:, self.label].tolist() if ask else [])
        return [v if v is not None else _above(next(probs), self.threshold) for v in out]


def _above(p: float, threshold: float) -> Verdict:
    return Verdict(p > threshold, p)


class EntailmentEquivalence(Equivalence):
    """Bidirectional entailment under a local NLI model folder (Kuhn, Gal & Farquhar 2023):
    equivalent when the model's most probable label is *entailment* both for
    (representative, candidate) and for (candidate, representative). The entailment label is
    found by name in the model's ``id2label`` (or given as ``label``)."""

    name = "entailment"

    def __init__(self, model: str, *, label: int | None = None, max_length: int = 128,
                 device: str = "cpu", dtype: str = "float32") -> None:
        from divmeter.backends.pairs import get_pair_model

        self.pm = get_pair_model(model, max_length=max_length, device=device, dtype=dtype)
        self.label = self.pm.entailment_label() if label is None else label
        if not 0 <= self.label < self.pm.num_labels:
            raise InvalidInputError(
                f"`label` must index one of the NLI model's {self.pm.num_labels} labels "
                f"({self.pm.label_names()}); got {self.label}."
            )

    def items(self) -> list[tuple[str, Any]]:
        return [("eq", "entailment"), ("model", self.pm.signature),
                ("maxlen", self.pm.max_length), ("label", self.label), ("rule", "both-argmax")]

    def decide(self, queries: Sequence[Query]) -> list[Verdict]:
        if not queries:
            return []
        pairs = [(a, b) for _, a, b in queries] + [(b, a) for _, a, b in queries]
        P = self.pm.probabilities(pairs)
        n = len(queries)
        top = P.argmax(axis=1)
        out = []
        for q in range(n):
            both = bool(top[q] == self.label and top[n + q] == self.label)
            out.append(Verdict(both, float(min(P[q, self.label], P[n + q, self.label]))))
        return out


class JudgeEquivalence(Equivalence):
    """An LLM behind an OpenAI-compatible server says whether two responses are the same or
    different, in both orders; the probability of *same* in each order is read from the
    log-probabilities of the two answer words (so even small models answer), and the pair is
    equivalent when their mean is above ``threshold``. Byte-identical responses are equivalent
    without a request (``ident:same``). See :mod:`divmeter.backends.pairjudge`."""

    name = "judge"

    def __init__(self, model: str, threshold: float = JUDGE_THRESHOLD, *,
                 base_url: str | None = None, cache: str | None = "default",
                 top_logprobs: int = 20, concurrency: int = 4, timeout: float = 60.0,
                 max_attempts: int = 5) -> None:
        from divmeter.backends.pairjudge import SameJudge

        self.judge = SameJudge(model, base_url, cache=cache, top_logprobs=top_logprobs,
                               concurrency=concurrency, timeout=timeout,
                               max_attempts=max_attempts)
        self.threshold = float(threshold)

    def items(self) -> list[tuple[str, Any]]:
        return [("eq", "judge"), *self.judge.items(), ("orders", "both"), ("ident", "same"),
                ("thr", self.threshold)]

    def decide(self, queries: Sequence[Query]) -> list[Verdict]:
        out: list[Verdict | None] = [Verdict(True) if a == b else None for _, a, b in queries]
        ask = [q for q, v in zip(queries, out, strict=True) if v is None]
        asked = self.judge.p_same(
            [(p, a, b) for p, a, b in ask] + [(p, b, a) for p, a, b in ask])
        n = len(ask)
        answers = iter(range(n))
        result = []
        for v in out:
            if v is not None:
                result.append(v)
                continue
            j = next(answers)
            first, second = asked[j], asked[n + j]
            bad = next((x for x in (first, second) if isinstance(x, str)), None)
            if bad is not None:
                result.append(Verdict(None, None, bad))
                continue
            p = (float(first) + float(second)) / 2.0
            result.append(Verdict(p > self.threshold, p))
        return result


def make_equivalence(
    equivalence: str | Equivalence | Callable[..., Any] = "embedding", *,
    model: str | None = None, threshold: float | None = None, base_url: str | None = None,
    device: str = "cpu", dtype: str = "float32", cache: str | None = "default",
    label: int | None = None,
) -> Equivalence:
    """The equivalence test named ``equivalence``, with its settings resolved.

    Args:
        equivalence: ``embedding``, ``judge``, ``classifier``, ``entailment``, an
            :class:`Equivalence`, or a function ``f(a, b) -> bool``.
        model: ``embedding``: a sentence encoder (default ``minilm``); ``judge``:
            ``openai:NAME``; ``classifier`` / ``entailment``: a local model folder (required).
        threshold: ``None``: the test's default (embedding :data:`EMBEDDING_THRESHOLD`, judge
            0.5, classifier NoveltyBench's 0.102); ``entailment`` has none (argmax).
        base_url: The judge's server (``/v1``); also ``model="openai:NAME"`` embeddings.
        device, dtype: Where and in which dtype local models run.
        cache: The judge's request cache (``default``, ``none`` or a folder).
        label: The classifier's "equivalent" label (default 1) or the NLI model's entailment
            label (default: found by name).

    Raises:
        InvalidInputError: An unknown name, a missing model, a setting that does not apply.

    Example:
        >>> make_equivalence(lambda a, b: a == b).signature.split("|")[0]
        'eq:callable'
    """
    if isinstance(equivalence, Equivalence):
        return equivalence
    if callable(equivalence):
        return CallableEquivalence(equivalence)
    if equivalence not in EQUIVALENCES:
        raise InvalidInputError(
            f"`equivalence` must be one of {', '.join(EQUIVALENCES)} or a function; "
            f"got {equivalence!r}."
        )
    if equivalence == "embedding":
        return EmbeddingEquivalence(model or "minilm",
                                    EMBEDDING_THRESHOLD if threshold is None else threshold,
                                    base_url=base_url, device=device, dtype=dtype)
    if model is None or model == "minilm":  # the embedding default names no judge or folder
        need = "openai:NAME (with base_url)" if equivalence == "judge" else "a local model folder"
        raise UnavailableError(f"equivalence={equivalence!r} needs `model`: {need}.")
    if equivalence == "judge":
        return JudgeEquivalence(model, JUDGE_THRESHOLD if threshold is None else threshold,
                                base_url=base_url, cache=None if cache == "none" else cache)
    if equivalence == "classifier":
        return ClassifierEquivalence(
            model, NOVELTYBENCH_CLASSIFIER_THRESHOLD if threshold is None else threshold,
            label=1 if label is None else label, device=device, dtype=dtype)
    if threshold is not None:
        raise InvalidInputError(
            "`threshold` does not apply to equivalence='entailment' (both directions' most "
            f"probable label must be entailment); got {threshold!r}."
        )
    return EntailmentEquivalence(model, label=label, device=device, dtype=dtype)


def partition_many(sets: Sequence[Sequence[str]], equivalence: Equivalence,
                   prompts: Sequence[str | None] | None = None, *,
                   comparisons: bool = True, steps: Any = None) -> list[Partition | str]:
    """Partition many sets with one equivalence test, in lock-step: each round asks every
    unfinished set's next comparison in one :meth:`Equivalence.decide` call (one embedding
    pass, one batch of model calls or concurrent HTTP requests).

    ``comparisons=False`` keeps no record of the comparisons (``Partition.comparisons`` is
    empty: up to ``n (n - 1) / 2`` of them per set); ``steps`` (a
    :class:`divmeter.core.memory.Steps`) is told the comparisons made after each round.

    Returns:
        Per set, its :class:`Partition`, or the reason it could not be made (a comparison that
        failed: the judge's server gave no usable answer).

    Example:
        >>> eq = CallableEquivalence(lambda a, b: a[0] == b[0])
        >>> [p.classes for p in partition_many([["ab", "ac", "b"], ["x"]], eq)]
        [((0, 1), (2,)), ((0,),)]
    """
    equivalence.prepare([t for s in sets for t in s])
    sig = equivalence.signature
    results: list[Partition | str | None] = [None] * len(sets)
    gens: dict[int, Generator[tuple[int, int], bool, list[list[int]]]] = {}
    pending: dict[int, tuple[int, int]] = {}
    logs: dict[int, list[tuple[int, int, float | None, bool]]] = {}

    def finish(i: int, classes: list[list[int]]) -> None:
        results[i] = Partition(tuple(tuple(c) for c in classes), _labels(classes, len(sets[i])),
                               sig, tuple(logs[i]))

    for i in range(len(sets)):
        gens[i] = _greedy(len(sets[i]))
        logs[i] = []
        try:
            pending[i] = next(gens[i])
        except StopIteration as stop:
            finish(i, stop.value)
    done = 0
    while pending:
        keys = list(pending)
        p = [None if prompts is None else prompts[i] for i in keys]
        verdicts = equivalence.decide(
            [(p[j], sets[i][pending[i][0]], sets[i][pending[i][1]]) for j, i in enumerate(keys)])
        done += len(keys)
        if steps is not None:
            steps(done)
        for i, v in zip(keys, verdicts, strict=True):
            rep, new = pending.pop(i)
            if v.same is None:
                results[i] = f"comparison of responses {rep} and {new} failed: {v.reason}"
                gens[i].close()
                continue
            if comparisons:
                logs[i].append((rep, new, v.score, v.same))
            try:
                pending[i] = gens[i].send(v.same)
            except StopIteration as stop:
                finish(i, stop.value)
    return [r if r is not None else "not partitioned" for r in results]


def partition(responses: Sequence[str],
              equivalence: str | Equivalence | Callable[..., Any] = "embedding", *,
              prompt: str | None = None, **options: Any) -> Partition:
    """Partition a set into classes of equivalent responses (NoveltyBench's greedy algorithm).

    Args:
        responses: The set, in generation order (the order decides representatives).
        equivalence: ``embedding`` (default), ``judge``, ``classifier``, ``entailment``, an
            :class:`Equivalence` or a function ``f(a, b) -> bool`` (called as
            ``f(representative, candidate)``).
        prompt: The prompt the responses answer (shown to the judge).
        **options: Settings of the named test (:func:`make_equivalence`): ``model``,
            ``threshold``, ``base_url``, ``device``, ``dtype``, ``cache``, ``label``.

    Returns:
        The :class:`Partition`: ``classes``, ``labels``, ``signature``, ``comparisons``.

    Raises:
        InvalidInputError: Bad settings, or a comparison that failed (the judge's server).

    Example:
        >>> p = partition(["red", "Red!", "blue"], lambda a, b: a[0].lower() == b[0].lower())
        >>> p.classes, p.distinct
        (((0, 1), (2,)), 2)
    """
    texts = as_texts(responses)
    eq = make_equivalence(equivalence, **options)
    out = partition_many([texts], eq, [prompt])[0]
    if isinstance(out, str):
        raise InvalidInputError(out)
    return out


# --------------------------------------------------------------------------------------------
# values on a partition


def utility_value(labels: Sequence[int], qualities: Sequence[float] | None = None,
                  patience: float = 0.8) -> float:
    """NoveltyBench's cumulative utility (section 3, eq. 2) of generations in order::

        utility_k = (1 - p) / (1 - p^k) * sum_{i=1..k} p^(i-1) * [c_i != c_j for all j < i] * u_i

    the patience-discounted mean of the qualities ``u_i`` of the generations that open a new
    class (a generation equivalent to an earlier one is worth 0). ``(1 - p) / (1 - p^k)``
    normalises the weights ``p^(i-1)`` to sum to 1 (``p = 1``: the plain mean, ``1/k``).

    Args:
        labels: Each generation's class, in generation order.
        qualities: ``u_i`` per generation (NoveltyBench: 1-10 from a reward model); ``None``:
            every ``u_i = 1``, so the value is the discounted share of novel generations.
        patience: ``p`` in [0, 1] (NoveltyBench: 0.8).

    Example:
        >>> round(utility_value([0, 0, 1], [5, 9, 7], patience=0.8), 6)  # (5 + 0 + 0.64*7) / 2.44
        3.885246
    """
    k = len(labels)
    if k == 0:
        raise InvalidInputError("utility needs at least one generation; got 0.")
    u = np.ones(k) if qualities is None else np.asarray(qualities, dtype=np.float64)
    seen: set[int] = set()
    novel = np.zeros(k)
    for i, c in enumerate(labels):
        if c not in seen:
            seen.add(c)
            novel[i] = 1.0
    w = np.power(float(patience), np.arange(k, dtype=np.float64))  # 0**0 = 1
    with np.errstate(over="ignore", invalid="ignore"):
        value = float((w * novel * u).sum() / w.sum())
    if not math.isfinite(value) and np.isfinite(u).all():  # the sum overflowed (u ~ 1e308):
        top = float(np.abs(u).max())  # the same weighted mean, of qualities scaled to <= 1
        value = float((w / w.sum() * novel * (u / top)).sum()) * top
    return value


def entropy_value(labels: Sequence[int], logprobs: Sequence[float] | None = None,
                  base: float = math.e) -> tuple[float, np.ndarray]:
    """Semantic entropy over classes, and the class probabilities.

    ``discrete`` (``logprobs=None``; Farquhar et al. 2024): ``p(c) = |c| / k``.
    ``weighted`` (Kuhn et al. 2023): ``p(c) = sum_{s in c} p(s) / sum_s p(s)`` with ``p(s) =
    exp(logprobs[s])``, the sampled sequences' probabilities (summed in log space, so long
    sequences do not underflow). Then ``SE = -sum_c p(c) log p(c)``, in nats (``base=e``).

    Example:
        >>> round(entropy_value([0, 0, 1, 2])[0], 6)   # p = 1/2, 1/4, 1/4
        1.039721
        >>> round(entropy_value([0, 1], [math.log(0.3), math.log(0.1)], base=2)[0], 6)
        0.811278
    """
    lab = np.asarray(labels, dtype=np.int64)
    if lab.size == 0:
        raise InvalidInputError("semantic entropy needs at least one response; got 0.")
    m = int(lab.max()) + 1
    if logprobs is None:
        p = np.bincount(lab, minlength=m).astype(np.float64) / lab.size
    else:
        lp = np.asarray(logprobs, dtype=np.float64)
        top = lp.max()
        mass = np.bincount(lab, weights=np.exp(lp - top), minlength=m)
        p = mass / mass.sum()
    nz = p[p > 0]
    h = float(-(nz * np.log(nz)).sum()) / math.log(base)
    return max(h, 0.0) + 0.0, p  # one class: 0.0, not -0.0


# --------------------------------------------------------------------------------------------
# declared parameters shared by the three metrics


def _threshold_relation(value: Any, params: Mapping[str, Any]) -> str | None:
    if value is None:
        return None
    if params.get("equivalence") == "entailment":
        return "does not apply to equivalence=entailment (argmax of both directions)"
    if params.get("equivalence", "embedding") == "embedding" and not -1.0 <= value <= 1.0:
        return "is a cosine for equivalence=embedding: it must lie in [-1, 1]"
    if params.get("equivalence") in ("judge", "classifier") and not 0.0 <= value <= 1.0:
        return "is a probability for this equivalence: it must lie in [0, 1]"
    return None


def _label_relation(value: Any, params: Mapping[str, Any]) -> str | None:
    if value is not None and params.get("equivalence", "embedding") not in (
            "classifier", "entailment"):
        return "applies to equivalence=classifier or entailment only"
    return None


EQUIVALENCE_PARAMS: dict[str, Param] = {
    "equivalence": Param(str, choices=EQUIVALENCES, default="embedding",
                         doc="how two responses are judged equivalent: embedding (cosine >= "
                         "threshold), judge (LLM same/different), classifier (local pair "
                         "classifier folder), entailment (local NLI folder, both directions)"),
    "threshold": Param(float, allow_none=True, default=None, relation=_threshold_relation,
                       doc=f"decision threshold; none: embedding {EMBEDDING_THRESHOLD} "
                       f"(calibrated on conTest), judge {JUDGE_THRESHOLD}, classifier "
                       f"{NOVELTYBENCH_CLASSIFIER_THRESHOLD} (NoveltyBench)"),
    "model": Param(str, default="minilm",
                   doc="embedding: sentence encoder (minilm, mpnet, a folder...); judge: "
                   "openai:NAME; classifier/entailment: a local model folder",
                   alternative="glove"),
    "base_url": Param(str, allow_none=True, default=None, runtime=True,
                      relation=lambda v, p: _server_url(p.get("model"), v),
                      doc="server API root for equivalence=judge (or openai:NAME embeddings)"),
    "label": Param(int, ge=0, allow_none=True, default=None, relation=_label_relation,
                   doc="classifier: the 'equivalent' label (none: 1, NoveltyBench's); "
                   "entailment: the entailment label (none: found by name)"),
    "prompt": Param(str, allow_none=True, default=None, alternative="Describe the weather.",
                    applies_with={"equivalence": "judge"},
                    doc="the set's prompt, shown to the judge (divmeter score passes each set's)"),
    "cache": Param(str, default="default", runtime=True,
                   doc="the judge's request cache: default, none or a folder"),
    "device": DEVICE,
    "dtype": DTYPE,
    "comparisons": Param(bool, default=False, runtime=True,
                         doc="keep every comparison [representative, i, score, same] in the "
                         "result's details (up to n (n - 1) / 2 of them; the value is the same)"),
}


def _server_url(model: Any, base_url: Any) -> str | None:
    from divmeter.backends.http import server_url_problem

    return server_url_problem(model, base_url)


def _eq_options(params: Mapping[str, Any]) -> dict[str, Any]:
    return {k: params.get(k, EQUIVALENCE_PARAMS[k].default)
            for k in ("model", "threshold", "base_url", "device", "dtype", "cache", "label")}


#: Rough seconds per comparison of each equivalence on one CPU core (the embedding one measured
#: on the project's machine: 3,000 responses, 4.5 million comparisons in 62 s), and per text
#: encoded by the embedding one; the others are one model call or one server request (both
#: orders or directions) per comparison.
COMPARISON_SECONDS = {"embedding": 1.4e-5, "classifier": 2e-2, "entailment": 4e-2,
                      "judge": 0.5, "callable": 1e-6}
ENCODE_SECONDS = 5e-3
#: Bytes of one comparison kept in a result (``comparisons=true``: a list of four numbers).
COMPARISON_BYTES = 280


def partition_cost(metric: str, n: int, params: Mapping[str, Any]) -> memory.Cost:
    """The cost of a partition metric on a set of ``n`` responses: up to ``n (n - 1) / 2``
    comparisons (every response new; ``n - 1`` when all are equivalent), the embeddings, and
    the comparisons themselves when kept (``comparisons=true``).

    Example:
        >>> c = partition_cost("distinct-k", 10_000, {})
        >>> c.pairs, c.what
        (49995000, 'the embeddings of 10,000 responses')
    """
    eq = params.get("equivalence", "embedding")
    pairs = n * (n - 1) // 2
    needed, what = 4 * 384 * n, f"the embeddings of {n:,} responses"
    if params.get("comparisons", False):
        needed += COMPARISON_BYTES * pairs
        what += f" and up to {pairs:,} comparisons kept in the result"
    seconds = pairs * COMPARISON_SECONDS.get(str(eq), 1e-3) + (
        n * ENCODE_SECONDS if eq == "embedding" else 0.0)
    cheaper = ("score a random sample of the responses" if eq == "embedding" else
               "equivalence=embedding (no model call per pair), or score a random sample")
    return memory.Cost(f"{metric} (equivalence={eq})", n, needed, what, pairs, seconds, cheaper)


def _partitions(metric: str, eq: Equivalence, sets: list[list[str]],
                prompts: Sequence[str | None], params: Mapping[str, Any]
                ) -> list[Partition | str]:
    """Every set partitioned in lock-step, with progress over the comparisons (the note came
    before, from the metric's declared cost)."""
    live = [i for i, s in enumerate(sets) if len(s) >= 1]
    costs = [partition_cost(metric, len(sets[i]), params) for i in live]
    steps = memory.NO_STEPS
    if costs:
        whole = memory.Cost(costs[0].metric, sum(c.n for c in costs), 0, "",
                            sum(c.pairs for c in costs), sum(c.seconds for c in costs))
        steps = memory.announce(whole, note=False)
        steps.stage("comparisons (at most)", whole.pairs)
    parts = partition_many([sets[i] for i in live], eq, [prompts[i] for i in live],
                           comparisons=bool(params.get("comparisons", False)), steps=steps)
    out: list[Partition | str] = ["empty set"] * len(sets)
    for i, p in zip(live, parts, strict=True):
        out[i] = p
    return out


def _partition_details(p: Partition, comparisons: bool = False) -> dict[str, Any]:
    """The partition in a result's details; every comparison only when asked for."""
    out = {"distinct": p.distinct, "k": len(p.labels), "labels": list(p.labels),
           "classes": [list(c) for c in p.classes]}
    if comparisons:
        out["comparisons"] = [list(c) for c in p.comparisons]
    return out


def _field(fields: Mapping[str, Any] | None, name: str, k: int, metric: str) -> list[float]:
    """One number per response from the set's field ``name``."""
    if fields is None or name not in fields:
        raise UnavailableError(
            f"{metric} needs the set's field {name!r} (one number per response); the set has "
            f"{'no fields' if not fields else 'only ' + ', '.join(map(repr, sorted(fields)))}."
        )
    values = fields[name]
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) != k:
        got = f"{len(values)} values" if isinstance(values, Sequence) and not isinstance(
            values, (str, bytes)) else type(values).__name__
        raise InvalidInputError(
            f"field {name!r} of {metric} must hold one number per response ({k}); got {got}."
        )
    out = []
    for j, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InvalidInputError(
                f"field {name!r} of {metric}: value {j} must be a finite number; got {v!r}."
            )
        out.append(float(v))
    return out


FIELDS = Param(dict, allow_none=True, default=None,
               predicate=lambda v: v is None or isinstance(v, Mapping),
               expect="a mapping of the set's field names to values", alternative={},
               doc="the set's other fields (a JSONL record's extra keys, passed by divmeter "
               "score): where quality / log-probability columns are read from")


class PartitionMetric(Metric):
    """What the partition metrics share: the equivalence test (:data:`EQUIVALENCE_PARAMS`,
    resolved once by :func:`make_equivalence`), the signature (the metric's name, the test's
    settings, then the metric's own :meth:`settings`), and the partition of every set in
    lock-step (:func:`partition_many`); each metric reads its value off a set's partition
    (:meth:`value`). Each set's ``prompt`` (and ``fields``, for the metrics that read them) comes
    from the set when the call does not fix it."""

    family = "content"
    granularity = "set"
    higher_is_more_diverse = True
    extra = "embed"
    context: ClassVar[tuple[str, ...]] = ("prompt",)
    params: ClassVar[Mapping[str, Param]] = EQUIVALENCE_PARAMS

    def setup(self) -> None:
        self.eq = self.equivalence()

    def equivalence(self) -> Equivalence:
        """The equivalence test of the resolved parameters (a new one: an embedding test keeps
        the vectors of the texts it has seen, so each call of :meth:`score` gets its own)."""
        return make_equivalence(self.p["equivalence"], **_eq_options(self.p))

    def settings(self) -> dict[str, Any]:
        """The metric's own signature items, after the equivalence test's."""
        return {}

    def signature(self) -> str:
        return make_signature(self.name, **dict(self.eq.items()), **self.settings())

    def of_set(self, key: str, ctx: SetContext | None) -> Any:
        """Parameter ``key`` as given, else the set's own (its context), else the default."""
        if key not in self.given and ctx is not None and ctx.get(key) is not None:
            return ctx[key]
        return self.p[key]

    def score(self, sets: Sequence[Any], context: Sequence[SetContext] | None = None
              ) -> list[MetricResult]:
        texts = [list(s) for s in sets]
        ctx: list[SetContext | None] = list(context) if context is not None else [None] * len(
            texts)
        prompts = [self.of_set("prompt", c) for c in ctx]
        parts = _partitions(self.name, self.equivalence(), texts, prompts, self.p)
        return [self.result(None, p) if isinstance(p, str) else self.value(t, p, prompt, c)
                for t, p, prompt, c in zip(texts, parts, prompts, ctx, strict=True)]

    def cost(self, n: int, items: Sequence[Any] | None = None) -> memory.Cost:
        return partition_cost(self.name, n, self.p)

    def details(self, p: Partition) -> dict[str, Any]:
        """The partition in a result's details (every comparison with ``comparisons=true``)."""
        return _partition_details(p, bool(self.p["comparisons"]))

    def value(self, texts: list[str], p: Partition, prompt: str | None,
              ctx: SetContext | None) -> MetricResult:
        """The metric's result on one set's partition."""
        raise NotImplementedError


# --------------------------------------------------------------------------------------------
# distinct-k


@register
class DistinctK(PartitionMetric):
    """Functional diversity: the number of equivalence classes over the number of responses.

    The set is partitioned with NoveltyBench's greedy algorithm (:func:`partition`) under the
    chosen equivalence; ``distinct_k`` (the count) is in ``details["distinct"]``, the value is
    ``distinct_k / k`` in (0, 1] (1: every response is meaningfully new).

    Args:
        responses: The set, in generation order.
        equivalence, threshold, model, base_url, label, prompt, cache, device, dtype: The
            equivalence test (:data:`EQUIVALENCE_PARAMS`, :func:`make_equivalence`).

    Returns:
        MetricResult with ``details``: ``distinct``, ``k``, ``labels``, ``classes`` (and with
        ``comparisons=True``, ``comparisons``: ``[representative, i, score, same]`` of every
        comparison made). ``value`` is ``None`` with the reason when a comparison failed (the
        judge's server).

    Example:
        >>> r = distinct_k(["The cat sat.", "The cat sat.", "Stocks fell sharply today."])
        >>> r.value, r.details["distinct"]
        (0.6666666666666666, 2)
    """

    name = "distinct-k"
    bounds = (0.0, 1.0)
    citation = f"{NOVELTYBENCH}, section 3 (distinct_k), greedy partition of section 3"
    description = ("Share of meaningfully different responses: equivalence classes / k "
                   "(NoveltyBench's distinct_k is the count, in details)")

    def value(self, texts: list[str], p: Partition, prompt: str | None,
              ctx: SetContext | None) -> MetricResult:
        return self.result(p.distinct / len(p.labels), details=self.details(p))


distinct_k = public_function(DistinctK)


# --------------------------------------------------------------------------------------------
# novelty-utility

QUALITIES = ("uniform", "field", "judge", "rm")

#: ``rm_scale``: how a raw reward becomes NoveltyBench's 1-10 quality (1 plus the number of
#: thresholds below it), per reward model; ``raw`` keeps the reward.
RM_SCALES = ("novelty-bench", "novelty-bench-qwen3", "raw")


def _quality_relation(value: Any, params: Mapping[str, Any]) -> str | None:
    q = params.get("quality", "uniform")
    if value is not None and q not in ("judge", "rm"):
        return "applies to quality=judge (openai:NAME) or quality=rm (a reward-model folder)"
    return None


@register
class NoveltyUtility(PartitionMetric):
    """NoveltyBench's cumulative utility of the set's generations, in order (:func:`utility_value`).

    Args:
        responses: The generations, in the order they were sampled.
        patience: ``p`` (0.8 in NoveltyBench).
        quality: Where ``u_i`` comes from: ``uniform`` (1 each), ``field`` (the set's
            ``quality_field``), ``judge`` (an LLM's 1-10 rating, expected value from its
            log-probabilities), ``rm`` (a reward-model folder, mapped to 1-10 with NoveltyBench's
            thresholds under ``rm_scale``).
        quality_field: The field read by ``quality=field``.
        quality_model: ``openai:NAME`` for ``quality=judge`` (default: the judge of
            ``equivalence=judge``), a folder for ``quality=rm``.
        rm_scale: ``novelty-bench`` (the thresholds of NoveltyBench's reward model,
            Skywork-Reward-Gemma-2-27B-v0.2), ``novelty-bench-qwen3`` (inspect-evals' thresholds
            for its default small reward model, Skywork-Reward-V2-Qwen3-1.7B) or ``raw``.
        fields: The set's other fields (``divmeter score`` passes them).
        equivalence, threshold, model, base_url, label, prompt, cache, device, dtype: The
            equivalence test (:func:`make_equivalence`).

    Returns:
        MetricResult with ``details``: the partition's (``distinct``, ``labels``, ...),
        ``qualities`` and ``novel`` (which generations opened a class).

    Example:
        >>> texts = ["The cat sat.", "The cat sat.", "Stocks fell sharply today."]
        >>> r = novelty_utility(texts, quality="field", fields={"quality": [5, 9, 7]})
        >>> r.details["novel"], round(r.value, 6)  # (5 + 0 + 0.64 * 7) / (1 + 0.8 + 0.64)
        ([1, 0, 1], 3.885246)
    """

    name = "novelty-utility"
    order_invariant = False  # the utility discounts classes in the order generations came
    bounds = (0.0, None)
    citation = f"{NOVELTYBENCH}, section 3, eq. 2 (utility_k, patience p = 0.8)"
    description = ("NoveltyBench's utility_k: patience-discounted quality of the generations "
                   "that are new (equivalent repeats count 0)")
    context = ("prompt", "fields")
    params = {
        **EQUIVALENCE_PARAMS,
        "patience": Param(float, ge=0, le=1, default=0.8,
                          doc="p: chance the user asks for one more generation (NoveltyBench: "
                          "0.8)"),
        "quality": Param(str, choices=QUALITIES, default="uniform",
                         doc="u_i: uniform (1 each: discounted share of novel generations), field "
                         "(from the set's quality_field), judge (LLM 1-10 from log-probs), rm "
                         "(reward-model folder, NoveltyBench's 1-10 scale)"),
        "quality_field": Param(str, default="quality", alternative="score",
                               applies_with={"quality": "field"},
                               doc="the set's field holding one quality per response "
                               "(quality=field)"),
        "quality_model": Param(str, allow_none=True, default=None, relation=_quality_relation,
                               alternative="openai:quality-judge",
                               applies_with={"quality": "judge"},
                               doc="quality=judge: openai:NAME (none: the equivalence's judge); "
                               "quality=rm: a local reward-model folder"),
        "rm_scale": Param(str, choices=RM_SCALES, default="novelty-bench",
                          applies_with={"quality": "rm"},
                          doc="quality=rm: NoveltyBench's thresholds to 1-10 (novelty-bench: set "
                          "for Skywork-Reward-Gemma-2-27B-v0.2; novelty-bench-qwen3: "
                          "inspect-evals' for Skywork-Reward-V2-Qwen3-1.7B) or the raw reward"),
        "fields": replace(FIELDS, applies_with={"quality": "field"}),
    }

    def setup(self) -> None:
        super().setup()
        if self.p["quality"] in ("judge", "rm"):  # what the ratings need, before any set
            self._sig()

    def signature(self) -> str:
        return _utility_signature(self.eq, self.p)

    def value(self, texts: list[str], p: Partition, prompt: str | None,
              ctx: SetContext | None) -> MetricResult:
        q = _qualities(texts, prompt, self.p, self.of_set("fields", ctx))
        if isinstance(q, str):
            return self.result(None, q)
        low = next((j for j, u in enumerate(q or ()) if u < 0), None)
        if low is not None and q is not None:  # a repeat is worth 0: qualities start at 0
            return self.result(None, (
                f"quality {q[low]!r} of response {low} is negative; the utility counts a repeat "
                "as 0, so qualities must be >= 0 (NoveltyBench's 1-10 scale: "
                "rm_scale=novelty-bench, or shift the field's values)"))
        value = utility_value(p.labels, q, self.p["patience"])
        novel = [int(p.classes[lab][0] == i) for i, lab in enumerate(p.labels)]
        return self.result(value, details={
            **self.details(p), "qualities": q, "novel": novel})


novelty_utility = public_function(NoveltyUtility)


def _utility_signature(eq: Equivalence, params: Mapping[str, Any]) -> str:
    quality = params["quality"]
    qsig: dict[str, Any] = {"quality": quality}
    if quality == "field":
        qsig["qfield"] = params["quality_field"]
    elif quality == "judge":
        from divmeter.backends.pairjudge import quality_judge_items

        qmodel = params["quality_model"] or (params["model"] if params["equivalence"] == "judge"
                                             else None)
        if qmodel is None:
            raise UnavailableError(
                "quality=judge needs `quality_model` (openai:NAME), or equivalence=judge whose "
                "model then rates quality too."
            )
        qsig.update({f"q{k}": v for k, v in quality_judge_items(qmodel, params["base_url"])})
    elif quality == "rm":
        from divmeter.backends.pairs import get_reward_model

        if params["quality_model"] is None:
            raise UnavailableError("`quality_model` of novelty-utility is required with "
                                   "quality=rm: a local reward-model folder")
        rm = get_reward_model(params["quality_model"], device=params["device"],
                              dtype=params["dtype"])
        qsig.update({"rm": rm.signature, "rmfmt": rm.input_format,
                     "scale": params["rm_scale"]})
    return make_signature("novelty-utility", **dict(eq.items()), p=params["patience"], **qsig)


def _qualities(texts: list[str], prompt: str | None, params: Mapping[str, Any],
               fields: Mapping[str, Any] | None) -> list[float] | None | str:
    quality = params["quality"]
    if quality == "uniform":
        return None
    if quality == "field":
        return _field(fields, params["quality_field"], len(texts), "novelty-utility")
    if quality == "judge":
        from divmeter.backends.pairjudge import QualityJudge

        qmodel = params["quality_model"] or params["model"]
        qj = QualityJudge(qmodel, params["base_url"],
                          cache=None if params["cache"] == "none" else params["cache"])
        got = qj.ratings([(prompt, t) for t in texts])
        bad = next((g for g in got if isinstance(g, str)), None)
        if bad is not None:
            return f"quality rating failed: {bad}"
        return [float(g) for g in got]
    from divmeter.backends.pairs import get_reward_model

    rm = get_reward_model(params["quality_model"], device=params["device"],
                          dtype=params["dtype"])
    raw = rm.rewards(prompt, texts)
    if params["rm_scale"] == "raw":
        return [float(r) for r in raw]
    return [float(noveltybench_quality(r, params["rm_scale"])) for r in raw]


def noveltybench_quality(reward: float, scale: str = "novelty-bench") -> int:
    """A raw reward on NoveltyBench's 1-10 scale: 1 plus the number of the scale's thresholds
    strictly below it (NoveltyBench's ``bisect_left``).

    Args:
        reward: The reward model's raw reward.
        scale: ``novelty-bench``: :data:`NOVELTYBENCH_REWARD_THRESHOLDS`, NoveltyBench's own,
            for Skywork-Reward-Gemma-2-27B-v0.2; ``novelty-bench-qwen3``:
            :data:`NOVELTYBENCH_REWARD_THRESHOLDS_QWEN3`, inspect-evals' for its default small
            reward model Skywork-Reward-V2-Qwen3-1.7B.

    Example:
        >>> noveltybench_quality(-9.0), noveltybench_quality(-6.0), noveltybench_quality(0.0)
        (1, 3, 10)
        >>> noveltybench_quality(0.0, "novelty-bench-qwen3")
        2
    """
    import bisect

    return bisect.bisect_left(REWARD_THRESHOLDS[scale], reward) + 1


# --------------------------------------------------------------------------------------------
# semantic-entropy


@register
class SemanticEntropy(PartitionMetric):
    """Semantic entropy of a set (Kuhn, Gal & Farquhar 2023): partition the responses into
    meaning classes, then ``-sum_c p(c) log p(c)`` (:func:`entropy_value`).

    Kuhn et al. cluster with bidirectional entailment (``equivalence=entailment`` with an NLI
    model folder) and weight classes by the sampled sequences' probabilities
    (``estimator=weighted``); the discrete form of Farquhar et al. 2024 counts responses. The
    default here is the discrete form over the ``embedding`` equivalence; the signature names
    both.

    Args:
        responses: The set.
        estimator: ``discrete`` or ``weighted``.
        logprob_field: The set's field with one sequence log-probability per response
            (``weighted``), e.g. as an inference server reports it.
        base: ``e`` (nats), ``bits`` or a number.
        fields: The set's other fields (``divmeter score`` passes them).
        equivalence, threshold, model, base_url, label, prompt, cache, device, dtype: The
            equivalence test (:func:`make_equivalence`).

    Returns:
        MetricResult with ``details``: the partition's, and ``class_probabilities``. 0 when
        every response is equivalent; ``log k`` at most.

    Example:
        >>> r = semantic_entropy(["The cat sat.", "The cat sat.", "Stocks fell sharply today."])
        >>> round(r.value, 6)  # p = 2/3, 1/3
        0.636514
    """

    name = "semantic-entropy"
    bounds = (0.0, None)
    citation = KUHN
    description = ("Entropy over classes of equivalent responses (semantic entropy): class "
                   "sizes, or sequence probabilities")
    context = ("prompt", "fields")
    params = {
        **EQUIVALENCE_PARAMS,
        "estimator": Param(str, choices=("discrete", "weighted"), default="discrete",
                           doc="discrete: class sizes / k; weighted: sums of the responses' "
                           "sequence probabilities (from the set's logprob_field)"),
        "logprob_field": Param(str, default="logprobs", alternative="logprob",
                               applies_with={"estimator": "weighted"},
                               doc="the set's field holding each response's sequence "
                               "log-probability (estimator=weighted)"),
        # a base below 1 turns every entropy negative (outside [0, inf)): refused
        "base": Param(float, default="e", alternative="bits",
                      doc="logarithm base: e (nats), bits, or a number > 1",
                      predicate=lambda b: b in ("e", "nats", "bits") or (
                          isinstance(b, (int, float)) and not isinstance(b, bool)
                          and 1 < b < float("inf")),
                      expect="'e', 'bits' or a number > 1"),
        "fields": replace(FIELDS, applies_with={"estimator": "weighted"}),
    }

    def setup(self) -> None:
        super().setup()
        self.b, self.blabel = entropy_base(self.p["base"])

    def settings(self) -> dict[str, Any]:
        weighted = self.p["estimator"] == "weighted"
        return {"est": self.p["estimator"], "lp": self.p["logprob_field"] if weighted else None,
                "base": self.blabel}

    def value(self, texts: list[str], p: Partition, prompt: str | None,
              ctx: SetContext | None) -> MetricResult:
        lp = _field(self.of_set("fields", ctx), self.p["logprob_field"], len(texts),
                    "semantic-entropy") if self.p["estimator"] == "weighted" else None
        h, probs = entropy_value(p.labels, lp, self.b)
        return self.result(h, details={
            **self.details(p), "class_probabilities": probs.tolist()})


semantic_entropy = public_function(SemanticEntropy)
