"""Tokenizers, each with a name that enters result signatures.

* ``tevet``: the tokenizer of Tevet & Berant's released code: remove every ``.`` and ``\\n``,
  split on single spaces, drop empty strings, keep case.
* ``whitespace``: ``str.split()`` (any run of Unicode whitespace).
* ``word``: Unicode word tokens ``\\w+`` (letters, digits, underscore; internal apostrophes and
  hyphens kept, as in ``don't`` or ``well-known``); punctuation dropped.
* ``char``: every character that is not whitespace is a token, for scripts written without
  spaces between words (Chinese, Japanese, Thai): distinct-n over characters is the usual
  measure there (character n-grams).

One contract for every tokenizer: a token is never empty nor whitespace only (``tevet``, which
splits on the space character alone, drops the tab or no-break-space "words" its split leaves,
so a response of whitespace has no token under every tokenizer).

``tevet`` and ``whitespace`` split on spaces: on Chinese, Japanese or Thai text they give one
token per sentence. The first time in a process one of them meets text mostly written in such a
script, a :class:`UnspacedScriptWarning` (one line, naming the tokenizer and suggesting
``tokenizer=char``) is issued; it is not repeated.

Each can lowercase (``case:lc`` in the signature) or keep case (``case:mixed``).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from divmeter.errors import InvalidInputError

__all__ = ["Tokenizer", "get_tokenizer", "TOKENIZERS", "SPACE_SPLITS", "UnspacedScriptWarning",
           "check_script", "check_scripts"]

_WORD_RE = re.compile(r"\w+(?:['’\-]\w+)*")
#: Whitespace other than the space character (what Tevet's ``split(" ")`` keeps inside words).
_OTHER_SPACE = re.compile(r"[^\S ]")


def _tevet_words(text: str) -> list[str]:
    """Tevet's split before empty strings are dropped (runs of spaces leave ``""`` words);
    whitespace-only words (a tab, a no-break space) become ``""`` too, so they are dropped with
    them (the tokenizer contract: no whitespace-only token)."""
    check_script(text, "tevet")
    kept = text.replace(".", "").replace("\n", "")
    words = kept.split(" ")
    if _OTHER_SPACE.search(kept) is None:  # nearly always: no word can be whitespace only
        return words
    return ["" if w.isspace() else w for w in words]


def _tevet(text: str) -> list[str]:
    return list(filter(None, _tevet_words(text)))


def _whitespace(text: str) -> list[str]:
    check_script(text, "whitespace")
    return text.split()


def _word(text: str) -> list[str]:
    return _WORD_RE.findall(text)


def _char(text: str) -> list[str]:
    return [c for c in text if not c.isspace()]


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "tevet": _tevet,
    "whitespace": _whitespace,
    "word": _word,
    "char": _char,
}

#: Tokenizers that split on spaces only, as a split that may leave empty strings (to be dropped
#: by the caller). On texts joined with a non-space separator character, such a split gives the
#: concatenation of the texts' words with the separator as a word between them, which lets
#: :mod:`divmeter.text.intern` tokenize a whole set with one call.
SPACE_SPLITS: dict[str, Callable[[str], list[str]]] = {
    "tevet": _tevet_words,
    "whitespace": _whitespace,
}


# --------------------------------------------------------------------------------------------
# scripts written without spaces

#: Characters of scripts written without spaces between words: CJK ideographs (with extension
#: A and the compatibility block), Hiragana, Katakana, Thai, Lao, Khmer, Myanmar. (Hangul is
#: written with spaces.)
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
                       "\u0e00-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f]")
#: Share of a text's non-space characters in those scripts above which a space-splitting
#: tokenizer is warned about.
UNSPACED_SHARE = 0.3
_warned = False


class UnspacedScriptWarning(UserWarning):
    """A tokenizer that splits on spaces met text written without spaces (one token per
    sentence)."""


def check_script(text: str, tokenizer: str) -> None:
    """Warn once per process when ``text`` is mostly (:data:`UNSPACED_SHARE` of its non-space
    characters) in a script written without spaces and ``tokenizer`` splits on spaces.

    Costs nothing on ASCII text (``str.isascii`` is O(1)) and nothing after the warning.
    """
    global _warned
    if _warned or text.isascii() or _UNSPACED.search(text) is None:
        return
    scripts = len(_UNSPACED.findall(text))
    letters = len(text) - sum(map(str.isspace, text))
    if scripts < UNSPACED_SHARE * letters:
        return
    _warned = True
    # warn_explicit with no source line: Python shows the warning as one line on stderr
    warnings.warn_explicit(
        f"tokenizer {tokenizer!r} splits on spaces but the text is mostly Chinese, Japanese or "
        "Thai (written without spaces): each sentence is one token; use tokenizer=char for "
        "character n-grams.",
        UnspacedScriptWarning, "divmeter", 0)


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
        return map(_split_checked if self.name == "whitespace" else fn, texts)


def check_scripts(texts: Iterable[str], tokenizer: str) -> None:
    """:func:`check_script` on each text until it has warned (for code that splits texts without
    calling the tokenizer, e.g. :class:`divmeter.text.intern.TokenKeys`' numpy path)."""
    if tokenizer in SPACE_SPLITS:
        for t in texts:
            if _warned:
                return
            check_script(t, tokenizer)


def _split_checked(text: str) -> list[str]:
    """``str.split`` (the ``whitespace`` tokenizer), checking the script until it has warned."""
    if not _warned:
        check_script(text, "whitespace")
    return text.split()


def get_tokenizer(tokenizer: str | Tokenizer, lowercase: bool = False) -> Tokenizer:
    """Resolve a tokenizer name (or pass a :class:`Tokenizer` through)."""
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if not isinstance(tokenizer, str):
        raise InvalidInputError(
            f"`tokenizer` must be one of {', '.join(TOKENIZERS)}; got {type(tokenizer).__name__}."
        )
    return Tokenizer(tokenizer, bool(lowercase))
