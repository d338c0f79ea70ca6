"""Tokenizers, each with a name that enters result signatures.

* ``tevet``: the tokenizer of Tevet & Berant's released code: remove every ``.`` and ``\\n``,
  split on single spaces, drop empty strings, keep case.
* ``whitespace``: ``str.split()`` (any run of Unicode whitespace).
* ``word``: Unicode word tokens ``\\w+`` (letters, digits, underscore; internal apostrophes and
  hyphens kept, as in ``don't`` or ``well-known``); punctuation dropped.

Each can lowercase (``case:lc`` in the signature) or keep case (``case:mixed``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from divmeter.errors import InvalidInputError

__all__ = ["Tokenizer", "get_tokenizer", "TOKENIZERS", "SPACE_SPLITS"]

_WORD_RE = re.compile(r"\w+(?:['’\-]\w+)*")


def _tevet_words(text: str) -> list[str]:
    """Tevet's split before empty strings are dropped (runs of spaces leave ``""`` words)."""
    return text.replace(".", "").replace("\n", "").split(" ")


def _tevet(text: str) -> list[str]:
    return list(filter(None, _tevet_words(text)))


def _whitespace(text: str) -> list[str]:
    return text.split()


def _word(text: str) -> list[str]:
    return _WORD_RE.findall(text)


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "tevet": _tevet,
    "whitespace": _whitespace,
    "word": _word,
}

#: Tokenizers that split on spaces only, as a split that may leave empty strings (to be dropped
#: by the caller). On texts joined with a non-space separator character, such a split gives the
#: concatenation of the texts' words with the separator as a word between them, which lets
#: :mod:`divmeter.text.intern` tokenize a whole set with one call.
SPACE_SPLITS: dict[str, Callable[[str], list[str]]] = {
    "tevet": _tevet_words,
    "whitespace": _whitespace,
}


@dataclass(frozen=True)
class Tokenizer:
    """A named tokenizer with optional lowercasing.

    Example:
        >>> Tokenizer("tevet")("The cat sat.\\nOn  the mat.")
        ['The', 'cat', 'satOn', 'the', 'mat']
        >>> Tokenizer("word", lowercase=True)("Don't STOP, now!")
        ["don't", 'stop', 'now']
    """

    name: str = "tevet"
    lowercase: bool = False

    def __post_init__(self) -> None:
        if self.name not in TOKENIZERS:
            raise InvalidInputError(
                f"unknown tokenizer {self.name!r}; expected one of {', '.join(TOKENIZERS)}."
            )

    @property
    def case(self) -> str:
        """``lc`` when lowercasing, else ``mixed`` (the signature's ``case`` field)."""
        return "lc" if self.lowercase else "mixed"

    def __call__(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        return TOKENIZERS[self.name](text)

    def many(self, texts: Sequence[str]) -> list[list[str]]:
        """Tokenize every text."""
        return list(self.each(texts))

    def each(self, texts: Iterable[str]) -> Iterator[list[str]]:
        """The token lists one at a time (each can be dropped before the next is made)."""
        fn = TOKENIZERS[self.name]
        if self.lowercase:
            return (fn(t.lower()) for t in texts)
        return map(str.split if self.name == "whitespace" else fn, texts)


def get_tokenizer(tokenizer: str | Tokenizer, lowercase: bool = False) -> Tokenizer:
    """Resolve a tokenizer name (or pass a :class:`Tokenizer` through)."""
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if not isinstance(tokenizer, str):
        raise InvalidInputError(
            f"`tokenizer` must be one of {', '.join(TOKENIZERS)}; got {type(tokenizer).__name__}."
        )
    return Tokenizer(tokenizer, bool(lowercase))
