"""The quality gate: every text a model writes for ``divmeter build`` passes it before it is
written.

A generator can answer a builder's request with nothing, with the request itself, with the
sentence it was asked to rewrite, with chat-template or special tokens (``[/INST]``,
``<start_of_image>``, ``<|im_end|>``), or with a ramble. None of these is a paraphrase or a
nonsensical sentence, and a set built from them measures the generator's failure, not the
diversity the builder controls. :class:`Gate` names five checks, applied in this order to the
cleaned text (:func:`~divmeter.studies.perturb.generator.clean_output`); the first that fails is the
text's reason:

* ``blank``: nothing but whitespace.
* ``special_token``: a chat-template or special token: any ``<|...|>``, ``[INST]`` / ``[/INST]``,
  ``<<SYS>>``, ``<s>`` / ``</s>``, ``<bos>`` / ``<eos>`` / ``<pad>`` / ``<unk>`` / ``<mask>``,
  ``<start_of_...>`` / ``<end_of_...>``, ``<unusedN>``, or any special or added token of the
  generator's tokenizer when the generator exposes it.
* ``echo_instruction``: at least half of the text's word trigrams (bigrams for texts of fewer
  than three words) occur in the request with the source taken out (the instruction, its labels
  and its few-shot examples) or in the builder's other packaged template (a model must not echo
  the chat instruction, whichever prompt it was sent).
* ``echo_source``: the text is the source sentence again (para; compared lower-cased, on its
  words), one of the source set's responses (nonsensical), or the concept list.
* ``length``: the text has fewer than ``source / length_factor`` or more than
  ``source x length_factor`` words (``source``: the words of the sentence paraphrased, or the
  median of the source set's responses); off when there is no source length (generated pools).

A text that fails is generated again with a new seed (:func:`retry_seed`), at most ``retries``
times; a set with a text that still fails is left out, with the check's name and the last text,
in the ``.rejected`` file (see :class:`divmeter.studies.perturb.build.Built`). The gate's settings
are part of every built set's signature (:meth:`Gate.signature`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from divmeter.core.errors import InvalidInputError

__all__ = ["CHECKS", "Gate", "GatedTexts", "checked_samples", "generate", "key_seed",
           "retry_seed", "special_tokens_of"]

#: The checks, in the order they are applied.
CHECKS = ("blank", "special_token", "echo_instruction", "echo_source", "length")

_SPECIAL = re.compile(
    r"<\|[^|<>\n]{0,40}\|>"                      # <|im_end|>, <|eot_id|>, <|endoftext|>
    r"|\[/?INST\]|<</?SYS>>"                     # Llama-2 chat
    r"|</?s>|<(?:bos|eos|pad|unk|mask|sep|cls)>"  # sentence markers
    r"|<(?:start|end)_of_[a-z_]+>"               # Gemma: <start_of_turn>, <end_of_image>
    r"|<unused\d+>|<image_soft_token>",
    re.IGNORECASE)
_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _grams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def retry_seed(seed: int, attempt: int) -> int:
    """The seed of retry ``attempt`` (1, 2, ...) of a call made with ``seed``: a new draw per
    attempt, the same on every rerun, below 2**31 (every server accepts it).

    Example:
        >>> retry_seed(0, 1) == retry_seed(0, 1) != retry_seed(0, 2)
        True
    """
    digest = hashlib.sha256(f"divmeter-gate-retry|{seed}|{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 33


def key_seed(seed: int, key: str) -> int:
    """The seed of the prompt named ``key`` (e.g. a set id and a sentence index) in a call with
    ``seed``: two sets with the same prompt (the same concept list) get different samples.

    Example:
        >>> key_seed(0, "s1") == key_seed(0, "s1") != key_seed(0, "s2")
        True
    """
    digest = hashlib.sha256(f"divmeter-gate-key|{seed}|{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 33


def special_tokens_of(generator: Any) -> tuple[str, ...]:
    """The special and added tokens of a generator's tokenizer (``generator.lm.tokenizer`` of
    divmeter's local generator), or ``()`` when it exposes none (servers)."""
    tok = getattr(getattr(generator, "lm", None), "tokenizer", None)
    if tok is None:
        return ()
    found = set(getattr(tok, "all_special_tokens", None) or ())
    try:
        found |= set(tok.get_added_vocab())
    except (AttributeError, TypeError):
        pass
    # tokens that are ordinary text (a bare space, a newline) cannot mark a template leak
    return tuple(sorted(t for t in found if isinstance(t, str) and len(t.strip()) >= 3))


@dataclass(frozen=True)
class Gate:
    """The named checks of a generated text (module docstring) and the retry limit.

    Attributes:
        length_factor: A text's word count must be within ``source / f`` and ``source x f``.
        retries: New samples (each with a new seed) for a text that fails, before its set is
            rejected.
        echo_share: Share of the text's word n-grams found in the request that makes it an
            echo of the instruction.
        extra_tokens: More strings that must not appear (the generator's special tokens).

    Raises:
        InvalidInputError: A setting out of range.

    Example:
        >>> g = Gate()
        >>> g.check("A cat sat on the mat.", source="The cat sat on the mat.")
        >>> g.check("The cat sat on the mat.", source="The cat sat on the mat.")
        'echo_source: the text is the source again'
        >>> g.check("Sure![/INST] A cat.", source="The cat sat.")[:13]
        'special_token'
    """

    length_factor: float = 3.0
    retries: int = 3
    echo_share: float = 0.5
    extra_tokens: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        f = self.length_factor
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not f >= 1 or \
                not math.isfinite(f):
            raise InvalidInputError(f"`length_factor` of the gate must be a number >= 1; got "
                                    f"{f!r}.")
        r = self.retries
        if isinstance(r, bool) or not isinstance(r, int) or r < 0:
            raise InvalidInputError(f"`retries` of the gate must be an integer >= 0; got {r!r}.")
        e = self.echo_share
        if isinstance(e, bool) or not isinstance(e, (int, float)) or not 0 < e <= 1:
            raise InvalidInputError(f"`echo_share` of the gate must be in (0, 1]; got {e!r}.")

    def signature(self) -> str:
        """``gate:v1,len:3,echo:0.5,retries:3``: the settings that decide what is kept."""
        return (f"gate:v1,len:{self.length_factor:g},echo:{self.echo_share:g},"
                f"retries:{self.retries}")

    def check(self, text: str, *, source: str | Sequence[str] | None = None,
              instruction: str = "", source_words: float | None = None) -> str | None:
        """The first check ``text`` fails, as ``"name: why"``, or ``None`` when it passes.

        Args:
            text: The cleaned generated text.
            source: The text it must not repeat (a sentence, or several: a set's responses and
                its concept list).
            instruction: The request with the source taken out (its echo is refused).
            source_words: The word count the length check compares with (default: the words of
                ``source`` when it is one sentence; no length check when ``None`` then).
        """
        if not text.strip():
            return "blank: the text is empty"
        m = _SPECIAL.search(text)
        if m:
            return f"special_token: the text contains {m.group(0)!r}"
        for tok in self.extra_tokens:
            if tok in text:
                return f"special_token: the text contains {tok!r}"
        words = _words(text)
        if instruction and words:
            n = 3 if len(words) >= 3 else len(words)
            mine = _grams(words, n)
            theirs = set(_grams(_words(instruction), n))
            share = sum(g in theirs for g in mine) / len(mine)
            if share >= self.echo_share:
                return (f"echo_instruction: {share:.0%} of its word {n}-grams are in the "
                        "request")
        sources = [source] if isinstance(source, str) else list(source or [])
        if words and any(_words(s) == words for s in sources):
            return "echo_source: the text is the source again"
        if source_words is None and isinstance(source, str):
            source_words = len(_words(source))
        if source_words:
            lo, hi = source_words / self.length_factor, source_words * self.length_factor
            if not lo <= len(words) <= hi:
                return (f"length: {len(words)} words, outside {math.ceil(lo)}-{math.floor(hi)} "
                        f"({self.length_factor:g}x the source's {source_words:g})")
        return None


def checked_samples(got: Any, n_prompts: int, n: int, signature: str) -> list[list[str]]:
    """A generator's answer, checked: one list of ``n`` strings per prompt.

    Raises:
        InvalidInputError: Any other shape, naming the generator.
    """
    ok = isinstance(got, list) and len(got) == n_prompts and all(
        isinstance(g, list) and len(g) == n and all(isinstance(t, str) for t in g) for g in got)
    if not ok:
        raise InvalidInputError(
            f"generator {signature} must return {n_prompts} lists of {n} strings; got "
            f"{type(got).__name__} of {len(got) if isinstance(got, list) else '?'} items."
        )
    return got


@dataclass
class GatedTexts:
    """What :meth:`generate` kept: ``texts[i][j]`` (``None`` where every try failed),
    ``reasons[i][j]`` and ``last[i][j]`` (the last failing text) for those, and ``retried``
    (texts generated again)."""

    texts: list[list[str | None]]
    reasons: list[list[str | None]]
    last: list[list[str | None]]
    retried: int = 0

    def failed(self, i: int) -> list[tuple[int, str, str]]:
        """``(j, reason, last text)`` of prompt i's texts that failed for good."""
        return [(j, str(r), str(self.last[i][j])) for j, r in enumerate(self.reasons[i])
                if r is not None]


def _call(generator: Any, prompts: list[str], n: int, seed: int,
          keys: Sequence[str] | None, decoding: dict[str, Any]) -> list[list[str]]:
    """One ``generate`` call; with ``keys``, per-prompt seeds (:func:`key_seed`) for generators
    that take ``prompt_seeds`` (divmeter's), so equal prompts of different sets differ."""
    import inspect

    kw = dict(decoding)
    if keys is not None and "prompt_seeds" in inspect.signature(generator.generate).parameters:
        kw["prompt_seeds"] = [key_seed(seed, k) for k in keys]
    return checked_samples(generator.generate(prompts, n, seed=seed, **kw), len(prompts), n,
                           generator.signature)


def generate(generator: Any, prompts: Sequence[str], n: int, *, gate: Gate, seed: int,
             check: Callable[[int, str], str | None], clean: Callable[[str], str],
             keys: Sequence[str] | None = None, **decoding: Any) -> GatedTexts:
    """``n`` gated texts per prompt: generate, clean, check each (``check(i, text)`` -> reason
    or None), and generate the failing ones again with :func:`retry_seed` seeds, at most
    ``gate.retries`` times (one ``generate`` call per attempt, ``max`` failing slots per prompt).

    ``keys`` name the prompts (one each, e.g. ``set_id``): a generator that takes per-prompt
    seeds gets one per key, so two sets sharing a prompt get their own samples.

    The returned texts are those that passed; a slot that never passed is ``None`` with its last
    reason and text.
    """
    got = _call(generator, list(prompts), n, seed, keys, decoding) if prompts else []
    texts: list[list[str | None]] = [[None] * n for _ in prompts]
    reasons: list[list[str | None]] = [[None] * n for _ in prompts]
    last: list[list[str | None]] = [[None] * n for _ in prompts]

    def take(i: int, j: int, raw: str) -> None:
        text = clean(raw)
        why = check(i, text)
        texts[i][j], reasons[i][j], last[i][j] = (None, why, text) if why else (text, None, None)

    for i, samples in enumerate(got):
        for j, raw in enumerate(samples):
            take(i, j, raw)
    retried = 0
    for attempt in range(1, gate.retries + 1):
        bad: dict[int, list[int]] = {}
        for i, rs in enumerate(reasons):
            slots = [j for j, r in enumerate(rs) if r is not None]
            if slots:
                bad[i] = slots
        if not bad:
            break
        order = sorted(bad)
        k = max(len(v) for v in bad.values())
        again = _call(generator, [prompts[i] for i in order], k, retry_seed(seed, attempt),
                      None if keys is None else [keys[i] for i in order], decoding)
        for i, samples in zip(order, again, strict=True):
            for j, raw in zip(bad[i], samples, strict=False):
                retried += 1
                take(i, j, raw)
    return GatedTexts(texts, reasons, last, retried)
