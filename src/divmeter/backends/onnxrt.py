"""ONNX Runtime sentence encoders: the packaged sentence-transformers models, exported once.

``backend="onnx"`` runs a sentence-transformers model (transformer, pooling and normalisation
modules together) as one ONNX graph under ONNX Runtime, with the model's own fast tokenizer
(``tokenizers``), so encoding imports neither torch nor sentence-transformers. The graph is
exported **once** from the installed weights (no hub access) with ``torch.onnx.export`` into
``<cache>/models/onnx/<name>-<fingerprint>-<versions>/`` (``$DIVMETER_CACHE`` or
``~/.cache/divmeter``), keyed by the model fingerprint and the torch, sentence-transformers,
transformers and onnxruntime versions that made it; the folder is written under a temporary
name and renamed, so a crashed or concurrent export never leaves a half-written model. Later
loads read the folder (well under a second for MiniLM).

``minilm-int8`` / ``mpnet-int8`` are separately named models: the same export with part of its
weight matrices quantized to int8 by ONNX Runtime's dynamic quantization (see :func:`_quantize`
for which, and why not all). They change the numbers (cosine to the float model >= 0.99 on
McDiv story_gen responses; ``tests/test_onnx.py``), so their signature names them
(``all-MiniLM-L6-v2-int8@...``).

Inputs are sorted by token length and batched by a token budget (padded tokens per run), and
results are returned in input order. Padding is masked inside the graph, so a text's vector does
not depend on its batch beyond float rounding (cosine to the torch path >= 0.999).

Needs ``pip install 'divmeter[onnx]'`` (onnxruntime, onnx; the first export also needs the
``embed`` extra's torch and sentence-transformers).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import threading
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from divmeter.backends._common import (
    INT8_SUFFIX,
    TOKEN_BUDGET,
    ResolvedModel,
    cached_encode,
    length_batches,
    pkg_version,
    quiet_loading,
    resolve_model,
    resolve_threads,
    set_offline,
    split_quant,
)
from divmeter.backends.cache import EmbeddingCache, cache_root, get_cache
from divmeter.core._optional import require
from divmeter.core.errors import InvalidInputError

__all__ = ["INT8_SUFFIX", "OnnxSentenceEncoder", "split_quant", "export_folder",
           "length_batches"]

_EXPORT_LOCK = threading.Lock()
#: Bumped when what :func:`_export` writes changes (part of the export folder's name).
EXPORT_FORMAT = 1


def _versions() -> str:
    parts = []
    for short, dist in (("torch", "torch"), ("st", "sentence-transformers"),
                        ("tf", "transformers"), ("ort", "onnxruntime")):
        parts.append(f"{short}{pkg_version(dist) or 'none'}")
    return "-".join(parts)


def export_folder(resolved: ResolvedModel) -> Path:
    """Where the ONNX export of ``resolved`` lives (it may not exist yet)."""
    root = cache_root()
    base = root if root is not None else Path(os.environ.get("TMPDIR", "/tmp")) / "divmeter"
    slug = "".join(c if c.isalnum() or c in ".-_" else "_" for c in resolved.fingerprint)
    return base / "models" / "onnx" / f"{resolved.name}-{slug}-{_versions()}-x{EXPORT_FORMAT}"


def _export(resolved: ResolvedModel, folder: Path, progress: bool) -> None:
    """Export the sentence-transformers model (all modules) to ``folder/model.onnx``, plus its
    int8 variant, tokenizer and settings; written to a temporary folder and renamed."""
    set_offline()
    torch = require("torch", extra="embed")
    st = require("sentence_transformers", extra="embed", package="sentence-transformers")
    require("onnx", extra="onnx")
    quant = require("onnxruntime.quantization", extra="onnx", package="onnxruntime")
    with quiet_loading(progress):
        model = st.SentenceTransformer(resolved.location, device="cpu")
    model.eval()
    first = model[0]
    tokenizer = getattr(first, "tokenizer", None)
    if tokenizer is None or not getattr(tokenizer, "is_fast", False):
        raise InvalidInputError(
            f"model {resolved.name!r} has no fast tokenizer; backend='onnx' needs one "
            "(tokenizer.json); use backend='torch'."
        )
    # Two texts of different lengths, so the traced graph applies the padding mask (a batch
    # without padding could let transformers trace a mask-free attention path).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe = model.tokenize(["An export probe.", "A second, longer probe sentence."])
    names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in probe]

    class _Whole(torch.nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.st = model

        def forward(self, *args: Any) -> Any:
            return self.st(dict(zip(names, args, strict=True)))["sentence_embedding"]

    tmp = folder.parent / f".{folder.name}.{uuid.uuid4().hex}"
    tmp.mkdir(parents=True)
    root_log = logging.getLogger()
    level = root_log.level
    # the tracer's and quantizer's advice is for model authors, not for divmeter's users
    quiet = warnings.catch_warnings()
    quiet.__enter__()
    warnings.simplefilter("ignore")
    root_log.setLevel(logging.ERROR)
    try:
        axes = {k: {0: "batch", 1: "tokens"} for k in names}
        axes["sentence_embedding"] = {0: "batch"}
        with torch.inference_mode(False), torch.no_grad():
            torch.onnx.export(
                _Whole(), tuple(probe[k] for k in names), str(tmp / "model.onnx"),
                input_names=names, output_names=["sentence_embedding"], dynamic_axes=axes,
                opset_version=17, dynamo=False,
            )
        _quantize(quant, tmp / "model.onnx", tmp / "model-int8.onnx")
        tokenizer.backend_tokenizer.save(str(tmp / "tokenizer.json"))
        dim = model.get_sentence_embedding_dimension()
        meta = {
            "model": resolved.signature, "inputs": names, "dim": int(dim),
            "max_seq_length": int(model.max_seq_length),
            "do_lower_case": bool(getattr(first, "do_lower_case", False)),
            "versions": _versions(),
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        try:
            tmp.rename(folder)
        except OSError:  # another process exported it first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        root_log.setLevel(level)
        quiet.__exit__(None, None, None)


def _quantize(quant: Any, src: Path, dst: Path) -> None:
    """Dynamic int8 quantization (per output channel) of the feed-forward up-projections
    (``intermediate`` weight matrices) of every layer but the first and the last.

    Quantizing more costs accuracy on very short texts: on McDiv story_gen responses every weight
    matrix quantized gives a worst cosine of 0.969 to the float model ("I love it"), the
    up-projections of all layers 0.990 (just below), these 0.9900 and above (see
    ``tests/test_onnx.py``); activations are quantized per run, which short texts feel most.
    """
    onnx = require("onnx", extra="onnx")
    graph = onnx.load(str(src), load_external_data=False).graph
    weights = {i.name for i in graph.initializer}
    layer_of = {n.name: int(m.group(1)) for n in graph.node
                if (m := re.search(r"layer\.(\d+)/", n.name))}
    layers = sorted(set(layer_of.values()))
    inner = set(layers[1:-1])
    keep = {n.name for n in graph.node
            if n.op_type == "MatMul" and "/intermediate/" in n.name
            and any(x in weights for x in n.input) and layer_of.get(n.name) in inner}
    skip = [n.name for n in graph.node if n.op_type == "MatMul" and n.name not in keep]
    quant.quantize_dynamic(
        str(src), str(dst), weight_type=quant.QuantType.QInt8, per_channel=True,
        op_types_to_quantize=["MatMul"], nodes_to_exclude=skip,
    )


class OnnxSentenceEncoder:
    """A sentence-transformers model run by ONNX Runtime, with the on-disk embedding cache.

    Args:
        model: ``minilm``, ``mpnet``, a sentence-transformers folder or a cached hub name; the
            ``-int8`` aliases (``minilm-int8``, ``mpnet-int8``) load the quantized graph.
        threads: ONNX Runtime intra-op threads (default ``$DIVMETER_THREADS`` or its choice).
        cache: Use the embedding cache.
        progress: Show transformers' progress while exporting.
        token_budget: Padded tokens per run.

    Example:
        >>> enc = OnnxSentenceEncoder("minilm")
        >>> enc.encode(["a cat", "a dog"]).shape
        (2, 384)
    """

    def __init__(self, model: str = "minilm", *, threads: int | None = None,
                 cache: bool = True, progress: bool = False,
                 token_budget: int = TOKEN_BUDGET) -> None:
        base, self.quant = split_quant(model)
        self.resolved = resolve_model(base)
        if self.resolved.kind != "sentence":
            raise InvalidInputError(
                f"backend 'onnx' runs sentence-transformers models; {model!r} is a word-vector "
                "model: use backend='torch'."
            )
        self.threads = resolve_threads(threads)
        self.progress = progress
        self.token_budget = int(token_budget)
        self.signature = f"{model_signature(self.resolved, self.quant)}|pool:model|backend:onnx"
        self.cache: EmbeddingCache = get_cache(self.signature, "default" if cache else None)
        self._session: Any = None
        self._tokenizer: Any = None
        self.meta: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.resolved.name + (INT8_SUFFIX if self.quant else "")

    def load(self) -> Any:
        """Export (first time only) and load the graph; returns the ONNX Runtime session."""
        with self._lock:
            if self._session is None:
                ort = require("onnxruntime", extra="onnx")
                tokenizers = require("tokenizers", extra="onnx")
                folder = export_folder(self.resolved)
                if not (folder / "meta.json").is_file():
                    with _EXPORT_LOCK:
                        if not (folder / "meta.json").is_file():
                            folder.parent.mkdir(parents=True, exist_ok=True)
                            _export(self.resolved, folder, self.progress)
                self.meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
                tok = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
                tok.no_padding()
                tok.no_truncation()  # truncated per batch, so lengths beyond the window are seen
                self._tokenizer = tok
                opts = ort.SessionOptions()
                if self.threads is not None:
                    opts.intra_op_num_threads = self.threads
                opts.inter_op_num_threads = 1
                # no busy-waiting between runs: the machine is often shared
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                graph = "model-int8.onnx" if self.quant else "model.onnx"
                self._session = ort.InferenceSession(
                    str(folder / graph), opts, providers=["CPUExecutionProvider"]
                )
            return self._session

    @property
    def dim(self) -> int:
        self.load()
        return int(self.meta["dim"])

    @property
    def max_seq_length(self) -> int:
        """The encoder's window in tokens (special tokens included); longer texts are cut."""
        self.load()
        return int(self.meta["max_seq_length"])

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Untruncated token ids (special tokens included) of each text."""
        self.load()
        if self.meta.get("do_lower_case"):
            texts = [t.lower() for t in texts]
        return [e.ids for e in self._tokenizer.encode_batch(list(texts))]

    def count_truncated(self, texts: Sequence[str]) -> int:
        """How many texts are longer than the window (and so are cut before encoding)."""
        window = self.max_seq_length
        return sum(len(ids) > window for ids in self.token_ids(texts))

    def truncated_mask(self, texts: Sequence[str]) -> np.ndarray:
        """Per text, whether it is longer than the window (one tokenization for many sets)."""
        window = self.max_seq_length
        return np.array([len(ids) > window for ids in self.token_ids(texts)], dtype=bool)

    def _encode_raw(self, texts: list[str]) -> np.ndarray:
        session = self.load()
        window = self.max_seq_length
        ids = [x[:window - 1] + x[-1:] if len(x) > window else x for x in self.token_ids(texts)]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        names = self.meta["inputs"]
        # int8 graphs quantize activations with one scale per run: one text per run keeps a
        # text's vector independent of its batch (and padding out of the scale)
        budget = self.token_budget if self.quant is None else 1
        for rows in length_batches([len(x) for x in ids], budget):
            width = len(ids[rows[0]])
            arr = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(arr)
            for r, i in enumerate(rows):
                arr[r, : len(ids[i])] = ids[i]
                mask[r, : len(ids[i])] = 1
            feeds = {"input_ids": arr, "attention_mask": mask,
                     "token_type_ids": np.zeros_like(arr)}
            out[rows] = session.run(None, {k: feeds[k] for k in names})[0]
        return out

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (cached); returns a ``(len(texts), d)`` float32 array."""
        return cached_encode(self, list(texts))


def model_signature(resolved: ResolvedModel, quant: str | None) -> str:
    """``name@fingerprint``, the name carrying ``-int8`` for the quantized graph."""
    if quant is None:
        return resolved.signature
    return f"{resolved.name}{INT8_SUFFIX}@{resolved.fingerprint}"
