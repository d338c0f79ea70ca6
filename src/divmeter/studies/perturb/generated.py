"""Generator-based builders of the commonsense paper: Para-k (section 4.2.1) and Nonsensical
(section 4.2.2); prompts in ``templates/`` (written for divmeter after the paper's Figures 6-7).

Every generated text passes the quality gate (:mod:`divmeter.studies.perturb.gate`) before it enters
a set: a text that fails is generated again with a new seed, and a set whose text still fails is
left out, with the reason, in :attr:`Outcome.rejected`. A source set with no non-blank response
(or, for Para-k, too few) is skipped the same way. A generator that does not chat (a base model:
its ``chat`` attribute is false) gets the few-shot completion templates
(``paraphrase_completion.txt``, ``nonsensical_completion.txt``) and stops at the end of the line.
"""

from __future__ import annotations

import inspect
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.model import ResponseSet
from divmeter.studies.perturb.gate import Gate
from divmeter.studies.perturb.gate import generate as gated_generate
from divmeter.studies.perturb.generator import (
    Generator,
    Template,
    clean_output,
    is_chat,
    load_template,
)
from divmeter.studies.perturb.shuffle import _as_set, _check_seed, set_rng

__all__ = ["PARA_K", "Outcome", "nonsensical", "para_k", "para_layout", "prompt_style"]


@dataclass
class Outcome:
    """What a generator builder made.

    Attributes:
        sets: The accepted sets, in input order.
        sources: Their source sets, in the same order.
        rejected: One row per source set left out: ``{"set_id", "status", "reason"}`` with
            ``status`` ``rejected`` (a generated text failed the gate after every retry; its
            ``texts`` hold each failing text with its reason) or ``skipped`` (the source set
            cannot be built from: no non-blank response, too few for Para-k).
        retried: Texts generated again after failing the gate.
    """

    sets: list[ResponseSet] = field(default_factory=list)
    sources: list[ResponseSet] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    retried: int = 0


def prompt_style(generator: Any) -> str:
    """``chat`` or ``completion``: the template style a generator gets
    (:func:`~divmeter.studies.perturb.generator.is_chat`)."""
    return "chat" if is_chat(generator) else "completion"


def _decoding(generator: Any, style: str, temperature: float, max_tokens: int
              ) -> dict[str, Any]:
    """Decoding keywords of a builder's ``generate`` calls: a completion prompt ends where the
    answer's line starts, so the answer stops at the line's end (when the generator takes
    ``stop``)."""
    kw: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
    if style == "completion" and "stop" in inspect.signature(generator.generate).parameters:
        kw["stop"] = ["\n"]
    return kw


def _skip(s: ResponseSet, reason: str) -> dict[str, Any]:
    return {"set_id": s.set_id, "status": "skipped", "reason": reason}


def _instructions(builder: str) -> str:
    """The fixed text of a builder's packaged templates (chat and completion, fields taken
    out): what a model must not echo whichever of them it was sent."""
    texts = []
    for style in ("chat", "completion"):
        tpl = load_template(builder, style=style)
        texts.append(tpl.fill(**dict.fromkeys(tpl.fields, " ")))
    return "\n".join(texts)


def _in_order(rows: list[dict[str, Any]], ids: list[str]) -> list[dict[str, Any]]:
    """The rejected rows in the order of their sets in the input."""
    pos = {sid: i for i, sid in reversed(list(enumerate(ids)))}
    return sorted(rows, key=lambda r: pos.get(r["set_id"], len(ids)))


def _reject(s: ResponseSet, failed: list[tuple[str, str]]) -> dict[str, Any]:
    """The row of a set left out: the first failure's check as its reason, every failing text."""
    return {"set_id": s.set_id, "status": "rejected",
            "reason": f"{failed[0][1]} (after every retry)",
            "texts": [{"text": t, "reason": r} for t, r in failed]}

#: Minimum set size of each Para-k variant.
PARA_K = {1: 2, 2: 4, 3: 4}


def para_layout(k: int, m: int, order: Sequence[int]) -> list[tuple[int, int]]:
    """Where the Para-k set's sentences come from: ``(index, copy)`` pairs, ``copy`` 0 for the
    original sentence and ``c >= 1`` for its c-th paraphrase.

    With ``order`` a random permutation of the m responses (A = ``order[0]``, B = ``order[1]``,
    ...), section 4.2.1's four-sentence variants, extended to m sentences by keeping the next
    originals: Para-1 = {A, A*, B, C, ...}, Para-2 = {A, A*, B, B*, C, ...},
    Para-3 = {A, A*, A**, B, C, ...}; the set keeps its size m.

    Example:
        >>> para_layout(3, 5, [4, 0, 1, 2, 3])
        [(4, 0), (4, 1), (4, 2), (0, 0), (1, 0)]
        >>> para_layout(2, 4, [0, 1, 2, 3])
        [(0, 0), (0, 1), (1, 0), (1, 1)]
    """
    a, b = order[0], order[1 % m]  # b unused by Para-1 on two sentences
    if k == 1:
        head = [(a, 0), (a, 1)]
        rest = order[1:m - 1]
    elif k == 2:
        head = [(a, 0), (a, 1), (b, 0), (b, 1)]
        rest = order[2:m - 2]
    else:
        head = [(a, 0), (a, 1), (a, 2), (b, 0)]
        rest = order[2:m - 2]
    return head + [(i, 0) for i in rest]


def _check_decoding(temperature: Any, max_tokens: Any) -> None:
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or \
            temperature < 0:
        raise InvalidInputError(f"`temperature` must be a number >= 0; got {temperature!r}.")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidInputError(f"`max_tokens` must be an integer >= 1; got {max_tokens!r}.")


def _check_generator(generator: Any) -> None:
    if not isinstance(generator, Generator):
        raise InvalidInputError(
            "`generator` must have .generate(prompts, n, *, temperature, max_tokens, seed) and "
            f".signature (e.g. divmeter.studies.generation.get_generator(...)); got "
            f"{type(generator).__name__}."
        )


def _setup(builder: str, seed: Any, temperature: Any, max_tokens: Any, generator: Any,
           gate: Gate | None, template: Template | None) -> tuple[int, Gate, str, Template]:
    """What Para-k and Nonsensical check and choose before any text is asked for: the seed, the
    decoding, the generator, the gate, the prompt style (chat or completion) and the template."""
    seed = _check_seed(seed)
    _check_decoding(temperature, max_tokens)
    _check_generator(generator)
    style = prompt_style(generator)
    return seed, gate or Gate(), style, template or load_template(builder, style=style)


def para_k(
    sets: Iterable[ResponseSet | Sequence[str]], generator: Generator, *, k: int = 1,
    seed: int = 0, temperature: float = 0.7, max_tokens: int = 64,
    template: Template | None = None, gate: Gate | None = None,
) -> Outcome:
    """Para-k (commonsense paper, section 4.2.1): replace sentences by paraphrases of others,
    so the set's diversity falls with k while its quality stays high.

    The sentences A, B are drawn at random per set among its non-blank responses
    (:func:`~divmeter.studies.perturb.shuffle.set_rng` ``("para-k", seed, set_id)``); the layout is
    :func:`para_layout`. Paraphrases come from ``generator`` with the ``paraphrase`` template
    (``{sentence}``; the completion template for a generator that does not chat), cleaned by
    :func:`~divmeter.studies.perturb.generator.clean_output` and checked by the gate (the sentence
    is the source: no copy of it, a length within the gate's factor of it); the paraphrase requests
    of all sets go in one ``generate`` call (and one per retry).

    Args:
        sets: Response sets (or lists of texts); Para-1 needs >= 2 non-blank responses,
            Para-2/3 >= 4; sets with fewer are skipped.
        generator: A :class:`~divmeter.studies.perturb.generator.Generator`.
        k: 1, 2 or 3.
        seed: Seed of the random choice of A/B and of the generator.
        temperature: Sampling temperature of the paraphrases.
        max_tokens: Longest paraphrase in tokens.
        template: Prompt template (default: the packaged one of the generator's style).
        gate: The quality gate (default :class:`~divmeter.studies.perturb.gate.Gate()`).

    Returns:
        An :class:`Outcome`; each accepted set has its source's ``set_id``/``prompt``/``label``,
        and ``metadata`` holding ``builder`` (``para-k``) and ``layout`` (the ``(index, copy)``
        pairs of :func:`para_layout`).

    Raises:
        InvalidInputError: Bad k/seed/decoding or no generator.
        ServerError: The generator's server fails for good.
    """
    if k not in PARA_K:
        raise InvalidInputError(f"`k` of para-k must be 1, 2 or 3; got {k!r}.")
    seed, gate, style, tpl = _setup("paraphrase", seed, temperature, max_tokens, generator, gate,
                                    template)
    out = Outcome()
    kept: list[tuple[ResponseSet, list[tuple[int, int]]]] = []
    given = [_as_set(raw, i) for i, raw in enumerate(sets)]
    for s in given:
        good = [i for i, t in enumerate(s.responses) if t.strip()]
        if len(good) < PARA_K[k]:
            out.rejected.append(_skip(s, "no non-blank response" if not good else
                                      f"para-{k} needs at least {PARA_K[k]} non-blank "
                                      f"responses; got {len(good)}"))
            continue
        blank = [i for i in range(len(s.responses)) if i not in good]
        order = set_rng(f"para-{k}", seed, s.set_id).sample(good, len(good)) + blank
        kept.append((s, para_layout(k, len(s.responses), order)))
    n = 2 if k == 3 else 1
    wanted = [(si, i) for si, (_, lay) in enumerate(kept) for i, c in lay if c == 1]
    sources = [kept[si][0].responses[i] for si, i in wanted]
    prompts = [tpl.fill(sentence=src) for src in sources]
    fixed = _instructions("paraphrase")
    got = gated_generate(
        generator, prompts, n, gate=gate, seed=seed, clean=clean_output,
        keys=[f"para-{k}|{kept[si][0].set_id}|{i}" for si, i in wanted],
        check=lambda q, text: gate.check(
            text, source=sources[q],
            instruction=prompts[q].replace(sources[q], " ") + "\n" + fixed),
        **_decoding(generator, style, temperature, max_tokens))
    out.retried = got.retried
    para = {key: q for q, key in enumerate(wanted)}
    for si, (s, lay) in enumerate(kept):
        mine = [para[(si, i)] for i, c in lay if c == 1]
        failed = [(t, r) for q in mine for _, r, t in got.failed(q)]
        if failed:
            out.rejected.append(_reject(s, failed))
            continue
        texts = [s.responses[i] if c == 0 else str(got.texts[para[(si, i)]][c - 1])
                 for i, c in lay]
        out.sets.append(ResponseSet(s.set_id, texts, s.prompt, s.label,
                                    {"builder": f"para-{k}", "layout": [list(p) for p in lay]}))
        out.sources.append(s)
    out.rejected = _in_order(out.rejected, [s.set_id for s in given])
    return out


def concepts_of(s: ResponseSet, field: str = "concepts") -> str:
    """The concept words a Nonsensical set must cover: ``metadata[field]`` (a list is joined
    by ", "), else the set's prompt.

    Raises:
        InvalidInputError: The set has neither.

    Example:
        >>> concepts_of(ResponseSet("1", ["x"], metadata={"concepts": ["dog", "frisbee"]}))
        'dog, frisbee'
    """
    value = s.metadata.get(field)
    if isinstance(value, (list, tuple)) and value:
        return ", ".join(str(v) for v in value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    if s.prompt and s.prompt.strip():
        return s.prompt.strip()
    raise InvalidInputError(
        f"set {s.set_id!r}: nonsensical needs concepts (metadata field {field!r}) or a prompt; "
        "got neither."
    )


def nonsensical(
    sets: Iterable[ResponseSet | Sequence[str]], generator: Generator, *,
    seed: int = 0, temperature: float = 1.0, max_tokens: int = 64,
    template: Template | None = None, concepts_field: str = "concepts",
    gate: Gate | None = None,
) -> Outcome:
    """Nonsensical (commonsense paper, section 4.2.2 and Figure 7): as many sentences as the
    source set has, each covering the set's concepts while contradicting common sense.

    One prompt per set (the ``nonsensical`` template, ``{concepts}`` from :func:`concepts_of`;
    the completion template for a generator that does not chat), ``m`` samples of it (seeded by
the set's id where the generator takes per-prompt seeds, so two sets with the same concepts get
their own sentences), each
    cleaned by :func:`~divmeter.studies.perturb.generator.clean_output` and checked by the gate (no
    copy of a source response or of the concept list, a length within the gate's factor of the
    median source response).

    Args:
        sets: Response sets with concepts or a prompt (see :func:`concepts_of`); sets without a
            non-blank response are skipped.
        generator: A :class:`~divmeter.studies.perturb.generator.Generator`.
        seed: Generator seed.
        temperature: Sampling temperature.
        max_tokens: Longest sentence in tokens.
        template: Prompt template (default: the packaged one of the generator's style).
        concepts_field: Metadata field holding the concepts.
        gate: The quality gate (default :class:`~divmeter.studies.perturb.gate.Gate()`).

    Returns:
        An :class:`Outcome`; each accepted set has as many responses as its source and
        ``metadata["builder"]``.

    Raises:
        InvalidInputError: Bad seed/decoding, a set without concepts or prompt.
        ServerError: The generator's server fails for good.
    """
    seed, gate, style, tpl = _setup("nonsensical", seed, temperature, max_tokens, generator,
                                    gate, template)
    out = Outcome()
    items: list[ResponseSet] = []
    given = [_as_set(raw, i) for i, raw in enumerate(sets)]
    for s in given:
        if not any(t.strip() for t in s.responses):
            out.rejected.append(_skip(s, "no non-blank response"))
        else:
            items.append(s)
    concepts = [concepts_of(s, concepts_field) for s in items]
    prompts = [tpl.fill(concepts=c) for c in concepts]
    lengths = [statistics.median(len(t.split()) for t in s.responses if t.strip())
               for s in items]
    fixed = _instructions("nonsensical")
    accepted: dict[int, ResponseSet] = {}
    def check(i: int, text: str) -> str | None:
        return gate.check(text, source=[*items[i].responses, concepts[i]],
                          instruction=prompts[i].replace(concepts[i], " ") + "\n" + fixed,
                          source_words=lengths[i])

    for m in sorted({len(s.responses) for s in items}):  # one generate call per set size
        idx = [i for i, s in enumerate(items) if len(s.responses) == m]
        got = gated_generate(
            generator, [prompts[i] for i in idx], m, gate=gate, seed=seed, clean=clean_output,
            keys=[f"nonsensical|{items[i].set_id}" for i in idx],
            check=lambda q, text, idx=idx: check(idx[q], text),  # type: ignore[misc]
            **_decoding(generator, style, temperature, max_tokens))
        out.retried += got.retried
        for q, i in enumerate(idx):
            failed = [(t, r) for _, r, t in got.failed(q)]
            if failed:
                out.rejected.append(_reject(items[i], failed))
                continue
            s = items[i]
            accepted[i] = ResponseSet(s.set_id, [str(t) for t in got.texts[q]], s.prompt,
                                      s.label, {"builder": "nonsensical"})
    for i in sorted(accepted):
        out.sets.append(accepted[i])
        out.sources.append(items[i])
    out.rejected = _in_order(out.rejected, [s.set_id for s in given])
    return out
