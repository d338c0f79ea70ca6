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

Two more are reproduced from reference implementations for the metrics that follow them
(:data:`REFERENCE_TOKENIZERS`, not offered to every form metric): ``rouge`` (Google
rouge-score's tokenizer, with :func:`porter_stem` for its ``use_stemmer``) and ``13a``
(mteval-v13a, sacrebleu's and Hugging Face ``evaluate``'s BLEU tokenizer).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from divmeter.core.errors import InvalidInputError, MissingDependencyError

__all__ = ["Tokenizer", "get_tokenizer", "TOKENIZERS", "REFERENCE_TOKENIZERS", "SPACE_SPLITS",
           "UnspacedScriptWarning", "check_script", "check_scripts", "blank_whitespace_only",
           "rouge_tokenize", "tokenize_13a", "porter_stem"]

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
#: :mod:`divmeter.inputs.text.intern` tokenize a whole set with one call. The caller first blanks
#: the whitespace-only texts (:func:`blank_whitespace_only`): ``tevet``'s split keeps a tab as a
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
    letters = sum(map(len, text.split()))  # (the non-space characters: split skips the same)
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
        if self.name not in _ALL_TOKENIZERS:
            raise InvalidInputError(
                f"unknown tokenizer {self.name!r}; expected one of {', '.join(_ALL_TOKENIZERS)}."
            )

    @property
    def case(self) -> str:
        """``lc`` when lowercasing, else ``mixed`` (the signature's ``case`` field)."""
        return "lc" if self.lowercase else "mixed"

    def __call__(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        return _ALL_TOKENIZERS[self.name](text)

    def many(self, texts: Sequence[str]) -> list[list[str]]:
        """Tokenize every text."""
        return list(self.each(texts))

    def each(self, texts: Iterable[str]) -> Iterator[list[str]]:
        """The token lists one at a time (each can be dropped before the next is made)."""
        fn = _ALL_TOKENIZERS[self.name]
        if self.lowercase:
            return (fn(t.lower()) for t in texts)
        return map(_split_checked if self.name == "whitespace" else fn, texts)


def check_scripts(texts: Iterable[str], tokenizer: str) -> None:
    """:func:`check_script` on each text until it has warned (for code that splits texts without
    calling the tokenizer, e.g. :class:`divmeter.inputs.text.intern.TokenKeys`' numpy path)."""
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


# --------------------------------------------------------------------------------------------
# tokenizers of reference implementations (named; offered by the metrics that reproduce them)

_ROUGE_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_ROUGE_NON_ALNUM_MIXED = re.compile(r"[^A-Za-z0-9]+")
_ROUGE_VALID = re.compile(r"^[A-Za-z0-9]+$")


def _rouge(text: str) -> list[str]:
    """rouge-score's tokenizer with case kept (``Tokenizer("rouge", lowercase=True)`` is
    rouge-score's own: the text lowercased first)."""
    return _ROUGE_NON_ALNUM_MIXED.sub(" ", text).split()


def rouge_tokenize(text: str, stem: bool = False, lowercase: bool = True) -> list[str]:
    """Google ``rouge-score``'s default tokenizer (the ``rouge`` tokenizer).

    Lowercase, every run of characters outside ``[a-z0-9]`` becomes a space (so non-ASCII
    letters are separators), split; with ``stem``, nltk's Porter stemmer is applied to tokens
    longer than 3 characters (:func:`porter_stem`). ``lowercase=False`` is a divmeter variant
    (not rouge-score's): case is kept and ``[A-Za-z0-9]`` are the token characters.

    Example:
        >>> rouge_tokenize("The cat's café, 2 DOGS!")
        ['the', 'cat', 's', 'caf', '2', 'dogs']
        >>> rouge_tokenize("The DOGS!", lowercase=False)
        ['The', 'DOGS']
    """
    tokens = Tokenizer("rouge", lowercase)(text)
    return porter_stem(tokens) if stem else tokens


# mteval-v13a rules (the WMT tokenizer; sacrebleu's "13a", which Hugging Face evaluate's BLEU
# copies), written out: every character of the symbol class below becomes its own token; a period
# or comma becomes its own token unless it sits between digits (two passes, one per side); a
# dash after a digit becomes its own token.
_13A_SYMBOL = re.compile(r"([{|}~\[\\\]^_`!\"#$%&()*+:;<=>?@/])")
_13A_PUNCT_AFTER_NONDIGIT = re.compile(r"([^0-9])([.,])")
_13A_PUNCT_BEFORE_NONDIGIT = re.compile(r"([.,])([^0-9])")
_13A_DASH_AFTER_DIGIT = re.compile(r"([0-9])(-)")


def tokenize_13a(text: str) -> list[str]:
    """The ``13a`` tokenizer of mteval-v13a / sacrebleu, as Hugging Face ``evaluate``'s BLEU has it.

    Case is kept. Steps: drop ``<skipped>``; join words hyphenated over a line break (``-\\n``);
    newlines become spaces; when the text holds ``&``, unescape ``&quot;`` ``&amp;`` ``&lt;``
    ``&gt;`` (in that order); pad with a space on each side; then split off as separate tokens
    every ASCII symbol in ``{ | } ~ [ \\ ] ^ _ ` ! " # $ % & ( ) * + : ; < = > ? @ /`` (not
    ``'``, ``-``, ``.``, ``,``), a ``.`` or ``,`` preceded by a non-digit, a ``.`` or ``,``
    followed by a non-digit, and a ``-`` preceded by a digit; finally split on whitespace
    (``evaluate``'s copy returns the token list where sacrebleu joins it with single spaces).

    Example:
        >>> tokenize_13a("Hello, world! It's 3.5-4 km (approx.).")
        ['Hello', ',', 'world', '!', "It's", '3.5', '-', '4', 'km', '(', 'approx', '.', ')', '.']
    """
    line = text.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = (line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                .replace("&gt;", ">"))
    line = f" {line} "
    line = _13A_SYMBOL.sub(r" \1 ", line)
    line = _13A_PUNCT_AFTER_NONDIGIT.sub(r"\1 \2 ", line)
    line = _13A_PUNCT_BEFORE_NONDIGIT.sub(r" \1 \2", line)
    line = _13A_DASH_AFTER_DIGIT.sub(r"\1 \2 ", line)
    return line.split()


_PORTER: Any = None


def _porter() -> Any:
    global _PORTER
    if _PORTER is None:
        try:
            from nltk.stem import porter
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise MissingDependencyError(
                "Stemming (use_stemmer=True) uses nltk's Porter stemmer, as rouge-score does, and "
                "nltk is not installed. Install it with: pip install 'divmeter[stem]'"
            ) from exc
        _PORTER = porter.PorterStemmer()
    return _PORTER


def porter_stem(tokens: Sequence[str]) -> list[str]:
    """rouge-score's stemming step: nltk's Porter stemmer on tokens longer than 3 characters,
    then only tokens of ``[A-Za-z0-9]`` kept.

    Raises:
        MissingDependencyError: nltk is not installed (``pip install 'divmeter[stem]'``).
    """
    stemmer = _porter()
    stemmed = [stemmer.stem(t) if len(t) > 3 else t for t in tokens]
    return [t for t in stemmed if _ROUGE_VALID.match(t)]


#: Tokenizers of reference implementations, by name (each with the signature field
#: ``tok:NAME``): ``rouge`` (Google rouge-score's; its ``lowercase`` is rouge-score's default)
#: and ``13a`` (mteval-v13a / sacrebleu / Hugging Face ``evaluate``'s BLEU). The overlap metrics
#: offer them; they are not in :data:`TOKENIZERS`, the tokenizers of every form metric.
REFERENCE_TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "rouge": _rouge,
    "13a": tokenize_13a,
}
_ALL_TOKENIZERS = {**TOKENIZERS, **REFERENCE_TOKENIZERS}
