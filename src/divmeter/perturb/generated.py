"""Generator-based builders of the commonsense paper: Para-k (section 4.2.1) and Nonsensical
(section 4.2.2); prompts in ``templates/`` (written for divmeter after the paper's Figures 6-7).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from divmeter.data.model import ResponseSet
from divmeter.errors import InvalidInputError
from divmeter.perturb.generator import Generator, Template, clean_output, load_template
from divmeter.perturb.shuffle import _as_set, _check_seed, set_rng

__all__ = ["PARA_K", "nonsensical", "para_k", "para_layout"]

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


def _checked(got: Any, n_prompts: int, n: int, signature: str) -> list[list[str]]:
    """The generator's answer, checked: one list of ``n`` strings per prompt."""
    ok = isinstance(got, list) and len(got) == n_prompts and all(
        isinstance(g, list) and len(g) == n and all(isinstance(t, str) for t in g) for g in got)
    if not ok:
        raise InvalidInputError(
            f"generator {signature} must return {n_prompts} lists of {n} strings; got "
            f"{type(got).__name__} of {len(got) if isinstance(got, list) else '?'} items."
        )
    return got


def _check_generator(generator: Any) -> None:
    if not isinstance(generator, Generator):
        raise InvalidInputError(
            "`generator` must have .generate(prompts, n, *, temperature, max_tokens, seed) and "
            f".signature (e.g. divmeter.generation.get_generator(...)); got "
            f"{type(generator).__name__}."
        )


def para_k(
    sets: Iterable[ResponseSet | Sequence[str]], generator: Generator, *, k: int = 1,
    seed: int = 0, temperature: float = 0.7, max_tokens: int = 64,
    template: Template | None = None,
) -> list[ResponseSet]:
    """Para-k (commonsense paper, section 4.2.1): replace sentences by paraphrases of others,
    so the set's diversity falls with k while its quality stays high.

    The sentences A, B are drawn at random per set (:func:`~divmeter.perturb.shuffle.set_rng`
    ``("para-k", seed, set_id)``); the layout is :func:`para_layout`. Paraphrases come from
    ``generator`` with the ``paraphrase`` template (``{sentence}``), cleaned by
    :func:`~divmeter.perturb.generator.clean_output`; the paraphrase requests of all sets go in
    one ``generate`` call.

    Args:
        sets: Response sets (or lists of texts); Para-1 needs >= 2 responses, Para-2/3 >= 4.
        generator: A :class:`~divmeter.perturb.generator.Generator`.
        k: 1, 2 or 3.
        seed: Seed of the random choice of A/B and of the generator.
        temperature: Sampling temperature of the paraphrases.
        max_tokens: Longest paraphrase in tokens.
        template: Prompt template (default: the packaged ``paraphrase.txt``).

    Returns:
        One set per input, same ``set_id``/``prompt``/``label``; ``metadata`` holds ``builder``
        (``para-k``) and ``layout`` (the ``(index, copy)`` pairs of :func:`para_layout`).

    Raises:
        InvalidInputError: Bad k/seed/decoding, a set too small for Para-k, or no generator.
        ServerError: The generator's server fails for good.
    """
    if k not in PARA_K:
        raise InvalidInputError(f"`k` of para-k must be 1, 2 or 3; got {k!r}.")
    seed = _check_seed(seed)
    _check_decoding(temperature, max_tokens)
    _check_generator(generator)
    tpl = template or load_template("paraphrase")
    items = [_as_set(raw, i) for i, raw in enumerate(sets)]
    layouts = []
    for s in items:
        m = len(s.responses)
        if m < PARA_K[k]:
            raise InvalidInputError(
                f"set {s.set_id!r}: para-{k} needs at least {PARA_K[k]} responses; got {m}."
            )
        order = set_rng(f"para-{k}", seed, s.set_id).sample(range(m), m)
        layouts.append(para_layout(k, m, order))
    n = 2 if k == 3 else 1
    wanted = [(si, i) for si, lay in enumerate(layouts) for i, c in lay if c == 1]
    prompts = [tpl.fill(sentence=items[si].responses[i]) for si, i in wanted]
    samples = _checked(generator.generate(prompts, n, temperature=temperature,
                                          max_tokens=max_tokens, seed=seed),
                       len(prompts), n, generator.signature) if prompts else []
    para = {key: [clean_output(t) for t in got] for key, got in zip(wanted, samples, strict=True)}
    out = []
    for si, (s, lay) in enumerate(zip(items, layouts, strict=True)):
        texts = [s.responses[i] if c == 0 else para[(si, i)][c - 1] for i, c in lay]
        out.append(ResponseSet(s.set_id, texts, s.prompt, s.label,
                               {"builder": f"para-{k}", "layout": [list(p) for p in lay]}))
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
) -> list[ResponseSet]:
    """Nonsensical (commonsense paper, section 4.2.2 and Figure 7): as many sentences as the
    source set has, each covering the set's concepts while contradicting common sense.

    One prompt per set (the ``nonsensical`` template, ``{concepts}`` from :func:`concepts_of`),
    ``m`` samples of it, each cleaned by :func:`~divmeter.perturb.generator.clean_output`.

    Args:
        sets: Response sets with concepts or a prompt (see :func:`concepts_of`).
        generator: A :class:`~divmeter.perturb.generator.Generator`.
        seed: Generator seed.
        temperature: Sampling temperature.
        max_tokens: Longest sentence in tokens.
        template: Prompt template (default: the packaged ``nonsensical.txt``).
        concepts_field: Metadata field holding the concepts.

    Returns:
        One set per input with the same number of responses; ``metadata["builder"]``.

    Raises:
        InvalidInputError: Bad seed/decoding, an empty set, a set without concepts or prompt.
        ServerError: The generator's server fails for good.
    """
    seed = _check_seed(seed)
    _check_decoding(temperature, max_tokens)
    _check_generator(generator)
    tpl = template or load_template("nonsensical")
    items = [_as_set(raw, i) for i, raw in enumerate(sets)]
    prompts = [tpl.fill(concepts=concepts_of(s, concepts_field)) for s in items]
    sizes = {len(s.responses) for s in items}
    if 0 in sizes:
        bad = next(s for s in items if not s.responses)
        raise InvalidInputError(f"set {bad.set_id!r}: nonsensical needs >= 1 response; got 0.")
    out: list[ResponseSet | None] = [None] * len(items)
    for m in sorted(sizes):  # one generate call per set size
        idx = [i for i, s in enumerate(items) if len(s.responses) == m]
        got = _checked(generator.generate([prompts[i] for i in idx], m,
                                          temperature=temperature, max_tokens=max_tokens,
                                          seed=seed), len(idx), m, generator.signature)
        for i, texts in zip(idx, got, strict=True):
            s = items[i]
            out[i] = ResponseSet(s.set_id, [clean_output(t) for t in texts], s.prompt, s.label,
                                 {"builder": "nonsensical"})
    return [o for o in out if o is not None]
