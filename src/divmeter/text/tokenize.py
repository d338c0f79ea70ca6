"""Tokenizers, each with a name that enters result signatures.

* ``tevet``: the tokenizer of Tevet & Berant's released code: remove every ``.`` and ``\\n``,
  split on single spaces, drop empty strings, keep case.
* ``whitespace``: ``str.split()`` (any run of Unicode whitespace).
* ``word``: Unicode word tokens ``\\w+`` (letters, digits, underscore; internal apostrophes and
  hyphens kept, as in ``don't`` or ``well-known``); punctuation dropped.
* ``char``: every character that is not whitespace is a token, for scripts written without
  spaces between words (Chinese, Japanese, Thai): distinct-n over characters is the usual
  measure there (character n-grams).

One contract for every tokenizer: a token is never empty, and a response made only of whitespace
has no token (so it never counts, as the rule for degenerate sets says: a set needs two
non-blank responses). ``whitespace``, ``word`` and ``char`` never give a whitespace-only token.
``tevet`` is the named exception inside a response: it reproduces Tevet & Berant's
``split(" ")`` exactly, so a tab or a no-break space between two spaces stays a word (``"a \\t
b"`` gives ``a``, ``\\t``, ``b``), as in their code and in the published numbers (Tevet &
Berant 2021, the ``metric_averaged_distinct_ngrams`` columns of their released data).

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
           "check_script", "check_scripts", "blank_whitespace_only"]

_WORD_RE = re.compile(r"\w+(?:['’\-]\w+)*")


def _tevet_words(text: str) -> list[str]:
    """Tevet's split before empty strings are dropped (runs of spaces leave ``""`` words)."""
    check_script(text, "tevet")
    return text.replace(".", "").replace("\n", "").split(" ")


def _tevet(text: str) -> list[str]:
    if text.isspace():  # the contract: a whitespace-only response has no token
        return []
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
#: :mod:`divmeter.text.intern` tokenize a whole set with one call. The caller first blanks the
#: whitespace-only texts (:func:`blank_whitespace_only`): ``tevet``'s split keeps a tab as a
#: word, but a response of whitespace has no token.
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


def blank_whitespace_only(texts: Sequence[str]) -> Sequence[str]:
    """``texts`` with every whitespace-only text made empty (``texts`` itself when there is
    none), for code that splits joined texts or their bytes without calling the tokenizer: a
    response made only of whitespace has no token under every tokenizer.

    Example:
        >>> blank_whitespace_only(["a \\t b", " \\t ", "\\u00a0"])
        ['a \\t b', '', '']
    """
    if not any(map(str.isspace, texts)):
        return texts
    return ["" if t.isspace() else t for t in texts]


def get_tokenizer(tokenizer: str | Tokenizer, lowercase: bool = False) -> Tokenizer:
    """Resolve a tokenizer name (or pass a :class:`Tokenizer` through)."""
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if not isinstance(tokenizer, str):
        raise InvalidInputError(
            f"`tokenizer` must be one of {', '.join(TOKENIZERS)}; got {type(tokenizer).__name__}."
        )
    return Tokenizer(tokenizer, bool(lowercase))
