"""A pipelined sentence-transformers encode for GPUs (issue 23): tokenization on worker threads
overlapped with the forward passes, batches sorted by token length and sized by a token budget,
vectors gathered on the device and copied back once.

``SentenceTransformer.encode`` tokenizes each batch on the calling thread between forward
passes, so on a GPU the card waits for the tokenizer, and its default batch of 32-64 texts
leaves the card mostly idle. Here:

* the texts are cut into chunks; each chunk is tokenized by a worker thread with its own copy
  of the model's Rust tokenizer (``tokenizers`` releases the GIL, so the workers run in
  parallel), with no truncation, so the untruncated token count of every text comes for free
  (the ``truncated`` count of the embedding metrics then needs no second tokenization);
* the few texts longer than the window are tokenized again with truncation by the same Rust
  tokenizer (what ``SentenceTransformer.tokenize`` asks of it: its window, special tokens
  included);
* the main thread sorts each chunk by length, pads batches of at most ``token_budget`` padded
  tokens (and ``max_batch`` texts), and runs the model's modules (``SentenceTransformer.forward``:
  transformer, pooling, normalisation) on them while the workers tokenize the next chunks.

The inputs the model sees are those ``SentenceTransformer.encode`` gives it (stripped texts,
lowercased when the model's transformer module says so, the same token ids); only the batch
composition differs, which moves GPU results by float rounding (~1e-7). The first use checks
the pipeline against ``SentenceTransformer.encode`` on a few texts and falls back to it (with a
warning) if they disagree or the model is not a plain transformer + pooling pipeline.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import copy
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from divmeter.core._optional import require

__all__ = ["Pipeline", "TOKEN_BUDGET", "MAX_BATCH", "CHUNK"]

_LOG = logging.getLogger("divmeter")

#: Padded tokens per forward pass on a GPU.
TOKEN_BUDGET = 65_536
#: Texts per forward pass at most.
MAX_BATCH = 1024
#: Texts per tokenization task.
CHUNK = 2048


def _workers() -> int:
    n = os.cpu_count() or 1
    return max(1, min(8, n - 1))


class Pipeline:
    """The pipelined encode of one loaded ``SentenceTransformer`` (see the module docstring).

    Args:
        model: The loaded ``SentenceTransformer`` (on its device, in its dtype).
        token_budget: Padded tokens per forward pass.
        max_batch: Texts per forward pass at most.
    """

    def __init__(self, model: Any, *, token_budget: int = TOKEN_BUDGET,
                 max_batch: int = MAX_BATCH) -> None:
        self.model = model
        self.token_budget = int(token_budget)
        self.max_batch = int(max_batch)
        hf = model.tokenizer
        backend = getattr(hf, "backend_tokenizer", None)
        if backend is None:
            raise TypeError("the model's tokenizer is not a fast (Rust) tokenizer")
        first = model[0] if len(model) else None
        self.lower = bool(getattr(first, "do_lower_case", False))
        self.window = int(model.max_seq_length)
        self.names = list(getattr(hf, "model_input_names", ["input_ids", "attention_mask"]))
        pad = hf.pad_token_id
        self.pad_id = int(pad if pad is not None else 0)
        self._proto = copy.deepcopy(backend)
        self._proto.no_padding()
        self._proto.no_truncation()
        self._local = threading.local()
        #: Untruncated token counts (special tokens included) of the texts seen, for
        #: ``count_truncated``; keyed by the text as given.
        self.lengths: dict[str, int] = {}
        self._pool: cf.ThreadPoolExecutor | None = None

    # -- tokenization (worker threads) ------------------------------------------------------

    def _tokenizers(self) -> tuple[Any, Any]:
        loc = self._local
        if not hasattr(loc, "full"):
            loc.full = copy.deepcopy(self._proto)
            loc.cut = copy.deepcopy(self._proto)
            loc.cut.enable_truncation(self.window)
        return loc.full, loc.cut

    def prepare(self, text: str) -> str:
        """The text as ``SentenceTransformer.tokenize`` gives it to the tokenizer."""
        t = str(text).strip()
        return t.lower() if self.lower else t

    def _tokenize(self, texts: list[str]) -> tuple[list[list[int]], list[list[int]], list[int]]:
        """(ids, type ids, untruncated lengths) of ``texts`` (prepared)."""
        full, cut = self._tokenizers()
        encs = full.encode_batch(texts)
        ids = [e.ids for e in encs]
        types = [e.type_ids for e in encs]
        lengths = [len(x) for x in ids]
        long = [i for i, n in enumerate(lengths) if n > self.window]
        if long:
            for i, e in zip(long, cut.encode_batch([texts[i] for i in long]), strict=True):
                ids[i], types[i] = e.ids, e.type_ids
        return ids, types, lengths

    def _start_pool(self) -> cf.ThreadPoolExecutor:
        """The worker threads, each holding its tokenizer copies from the start: the copies
        (tens of ms each) are made by the first call, which is the pipeline's check on a few
        texts, rather than inside the first large encode."""
        n = _workers()
        pool = cf.ThreadPoolExecutor(n, thread_name_prefix="divmeter-tok")
        # the barrier holds each task on its own thread until all n threads exist
        ready = threading.Barrier(n)

        def start() -> None:
            self._tokenizers()
            with contextlib.suppress(threading.BrokenBarrierError):
                ready.wait(timeout=60)

        for job in [pool.submit(start) for _ in range(n)]:
            job.result()
        return pool

    # -- batches (main thread) -------------------------------------------------------------

    def _batches(self, lengths: list[int]) -> Iterator[list[int]]:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        cur: list[int] = []
        for i in order:
            width = lengths[cur[0]] if cur else lengths[i]
            if cur and ((len(cur) + 1) * width > self.token_budget
                        or len(cur) >= self.max_batch):
                yield cur
                cur = []
            cur.append(i)
        if cur:
            yield cur

    def _features(self, ids: list[list[int]], types: list[list[int]], rows: list[int],
                  device: str) -> dict[str, Any]:
        torch = require("torch", extra="embed")
        width = max(len(ids[i]) for i in rows)
        arr = np.full((len(rows), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        tt = np.zeros((len(rows), width), dtype=np.int64)
        for r, i in enumerate(rows):
            k = len(ids[i])
            arr[r, :k] = ids[i]
            mask[r, :k] = 1
            tt[r, :k] = types[i]
        feats = {"input_ids": arr, "attention_mask": mask, "token_type_ids": tt}
        return {k: torch.from_numpy(v).to(device, non_blocking=True)
                for k, v in feats.items() if k in self.names or k != "token_type_ids"}

    def encode(self, texts: list[str], *, record: bool = True) -> np.ndarray:
        """``(len(texts), d)`` float32 vectors of ``texts``, in input order."""
        torch = require("torch", extra="embed")
        model = self.model
        device = str(model.device)
        n = len(texts)
        if self._pool is None:
            self._pool = self._start_pool()
        starts = list(range(0, n, CHUNK))
        jobs = [self._pool.submit(self._tokenize, [self.prepare(t) for t in texts[a:a + CHUNK]])
                for a in starts]
        out: Any = None
        with torch.inference_mode():
            for a, job in zip(starts, jobs, strict=True):
                ids, types, lengths = job.result()
                if record:
                    for t, k in zip(texts[a:a + CHUNK], lengths, strict=True):
                        if t == t.strip():
                            self.lengths[t] = k
                for rows in self._batches([len(x) for x in ids]):
                    emb = model(self._features(ids, types, rows, device))["sentence_embedding"]
                    if out is None:
                        out = torch.empty((n, emb.shape[1]), dtype=torch.float32,
                                          device=emb.device)
                    idx = torch.as_tensor([a + r for r in rows], device=emb.device)
                    out.index_copy_(0, idx, emb.float())
            if out is None:
                return np.zeros((0, 0), dtype=np.float32)
            return np.ascontiguousarray(out.cpu().numpy())

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None


def check_pipeline(pipe: Pipeline, reference: Any, texts: list[str], atol: float) -> str | None:
    """``None`` if the pipeline's vectors of ``texts`` match ``reference(texts)`` to ``atol``,
    else why not (the caller falls back to ``SentenceTransformer.encode``)."""
    try:
        mine = pipe.encode(texts, record=False)
    except Exception as exc:  # noqa: BLE001 - any failure means: use the reference path
        return f"{type(exc).__name__}: {exc}"
    ref = np.asarray(reference(texts), dtype=np.float32)
    if mine.shape != ref.shape:
        return f"shape {mine.shape} != {ref.shape}"
    err = float(np.abs(mine - ref).max(initial=0.0))
    return None if err <= atol else f"max difference {err:.2e} > {atol:.0e}"
