"""Local sequence-pair models from a folder the user provides: pair classifiers (NoveltyBench's
DeBERTa equivalence classifier, NLI cross-encoders) and reward models.

Loaded with ``transformers`` (``AutoTokenizer`` / ``AutoModelForSequenceClassification``) from
the folder only (``local_files_only``; divmeter never downloads a model), once per process and
settings. The signature is the folder's name and a cheap content fingerprint (config and
tokenizer files' bytes, weight files' sizes), as for local sentence encoders.

* :class:`PairModel` encodes a pair as NoveltyBench's classifier does: each text is cut to its
  first ``max_length`` tokens (no special tokens), then the pair is joined by the tokenizer's
  own pair template (``[CLS] a [SEP] b [SEP]`` for BERT/DeBERTa, with token types), and
  returns the softmax over the labels.
* :class:`RewardModel` scores ``(prompt, response)`` with a one-output head: through the
  tokenizer's chat template when it has one (``user: prompt``, ``assistant: response``),
  else as a text pair; the format is in the signature (``rmfmt:chat|pair``).

Needs the ``embed`` extra (torch, transformers).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from divmeter.core._optional import require
from divmeter.core.errors import InvalidInputError

__all__ = ["PairModel", "RewardModel", "get_pair_model", "get_reward_model"]

_LOCK = threading.Lock()
_MODELS: dict[tuple[Any, ...], Any] = {}


def _folder(path: str | None, what: str) -> Path:
    if not path:
        raise InvalidInputError(f"{what} needs a local model folder; got {path!r}.")
    p = Path(path).expanduser()
    if not p.is_dir():
        raise InvalidInputError(
            f"{what} must be a local model folder (divmeter never downloads models); "
            f"{str(p)!r} is not a folder."
        )
    if not (p / "config.json").is_file():
        raise InvalidInputError(f"{what}: {str(p)!r} has no config.json (not a transformers "
                                "model folder).")
    return p


def _load(folder: Path, device: str, dtype: str, num_labels: int | None = None
          ) -> tuple[Any, Any, str]:
    from divmeter.backends._common import _folder_fingerprint, quiet_loading, set_offline
    from divmeter.backends.device import resolve_device, torch_dtype
    from divmeter.backends.loading import timed_load

    set_offline()
    transformers = require("transformers", extra="embed")
    dev = resolve_device(device)
    kw: dict[str, Any] = {"local_files_only": True}
    if num_labels is not None:
        kw["num_labels"] = num_labels
    with timed_load(folder.name, folder), quiet_loading():
        tok = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            str(folder), dtype=torch_dtype(dtype), **kw)
    raw = getattr(tok, "_tokenizer", None)
    if raw is not None and hasattr(raw, "no_truncation"):  # pairs are cut text by text here
        raw.no_truncation()
        raw.no_padding()
    model.eval().to(dev)
    return tok, model, f"{folder.name}@{_folder_fingerprint(folder)}"


class PairModel:
    """A sequence-pair classifier folder.

    Args:
        path: The model folder (``config.json``, weights, tokenizer files).
        max_length: Tokens kept of each text (NoveltyBench: 128).
        device, dtype: Where and in which dtype it runs (dtype joins the signature unless
            float32).
        batch_size: Pairs per forward pass.
    """

    def __init__(self, path: str, *, max_length: int = 128, device: str = "cpu",
                 dtype: str = "float32", batch_size: int = 16) -> None:
        self.folder = _folder(path, "a pair classifier")
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
            raise InvalidInputError(f"`max_length` must be an integer >= 1; got {max_length!r}.")
        self.max_length, self.batch_size, self.dtype = max_length, batch_size, dtype
        self.tokenizer, self.model, sig = _load(self.folder, device, dtype)
        self.signature = sig + ("" if dtype == "float32" else f"+{dtype}")
        self.num_labels = int(self.model.config.num_labels)

    def label_names(self) -> str:
        names = getattr(self.model.config, "id2label", {}) or {}
        return ", ".join(f"{i}={names.get(i, i)}" for i in range(self.num_labels))

    def entailment_label(self) -> int:
        """The index of the label named ``entailment`` (any case) in ``id2label``."""
        names = getattr(self.model.config, "id2label", {}) or {}
        hits = [int(i) for i, n in names.items() if str(n).strip().lower() == "entailment"]
        if len(hits) != 1:
            raise InvalidInputError(
                f"{self.folder.name}: no single label named 'entailment' among its labels "
                f"({self.label_names()}); pass `label` (the entailment label's index)."
            )
        return hits[0]

    def encode_pair(self, a: str, b: str) -> dict[str, list[int]]:
        """NoveltyBench's encoding of one pair: each text cut to ``max_length`` tokens (no
        special tokens), then the tokenizer's own pair template (special tokens, token types).

        Example (a BERT tokenizer): ``[CLS] a_1..a_m [SEP] b_1..b_n [SEP]``, token types 0 up to
        the first ``[SEP]`` and 1 after it.
        """
        return _pair_ids(self.tokenizer, a, b, self.max_length)

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Raw logits ``(n, num_labels)`` of the pairs (float64)."""
        out = np.zeros((len(pairs), self.num_labels))
        for start in range(0, len(pairs), self.batch_size):
            chunk = [self.encode_pair(a, b) for a, b in pairs[start:start + self.batch_size]]
            out[start:start + len(chunk)] = _forward(self.model, self.tokenizer, chunk)
        return out

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Softmax over the labels, ``(n, num_labels)``."""
        z = self.logits(pairs)
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return np.asarray(e / e.sum(axis=1, keepdims=True))


class RewardModel:
    """A reward-model folder (one-output sequence classifier): ``rewards(prompt, responses)``.

    Args:
        path: The model folder.
        max_length: Tokens kept of the whole input.
        device, dtype: Where and in which dtype it runs.
    """

    def __init__(self, path: str, *, max_length: int = 2048, device: str = "cpu",
                 dtype: str = "float32", batch_size: int = 8) -> None:
        self.folder = _folder(path, "a reward model")
        self.max_length, self.batch_size = max_length, batch_size
        self.tokenizer, self.model, sig = _load(self.folder, device, dtype, num_labels=None)
        if int(self.model.config.num_labels) != 1:
            raise InvalidInputError(
                f"{self.folder.name}: a reward model has one output (num_labels=1); this one "
                f"has {self.model.config.num_labels}."
            )
        self.signature = sig + ("" if dtype == "float32" else f"+{dtype}")
        self.input_format = "chat" if getattr(self.tokenizer, "chat_template", None) else "pair"

    def _encode(self, prompt: str | None, response: str) -> dict[str, list[int]]:
        tok = self.tokenizer
        if self.input_format == "chat":
            conv = [{"role": "user", "content": prompt or ""},
                    {"role": "assistant", "content": response}]
            ids = tok.apply_chat_template(conv, tokenize=True, truncation=True,
                                          max_length=self.max_length)
            if isinstance(ids, dict) or hasattr(ids, "keys"):
                ids = ids["input_ids"]
            return {"input_ids": list(ids)}
        enc = tok(prompt or "", response, truncation=True, max_length=self.max_length)
        return {k: list(enc[k]) for k in ("input_ids", "token_type_ids") if k in enc}

    def rewards(self, prompt: str | None, responses: Sequence[str]) -> list[float]:
        """The raw reward of each response to ``prompt``."""
        out: list[float] = []
        for start in range(0, len(responses), self.batch_size):
            chunk = [self._encode(prompt, r) for r in responses[start:start + self.batch_size]]
            out.extend(_forward(self.model, self.tokenizer, chunk)[:, 0].tolist())
        return out


def _pair_ids(tok: Any, a: str, b: str, max_length: int) -> dict[str, list[int]]:
    """Each text encoded without special tokens and cut to ``max_length`` tokens, then joined
    by the tokenizer's pair post-processor (``tokenizers``-backed tokenizers, the transformers 5
    kind) or ``prepare_for_model`` (older Python tokenizers)."""
    raw = getattr(tok, "_tokenizer", None)
    if raw is not None and hasattr(raw, "post_process"):
        encs = []
        for t in (a, b):
            e = raw.encode(t, add_special_tokens=False)
            e.truncate(max_length)
            encs.append(e)
        pair = raw.post_process(encs[0], encs[1], add_special_tokens=True)
        return {"input_ids": list(pair.ids), "token_type_ids": list(pair.type_ids)}
    ids = [tok(t, add_special_tokens=False, truncation=True, max_length=max_length)["input_ids"]
           for t in (a, b)]
    enc = tok.prepare_for_model(ids[0], ids[1], add_special_tokens=True, truncation=False)
    return {k: list(enc[k]) for k in ("input_ids", "token_type_ids") if k in enc}


def _forward(model: Any, tok: Any, chunk: list[dict[str, list[int]]]) -> np.ndarray:
    """Logits of a padded batch (right padding with the tokenizer's pad id; token types only
    for models that take them)."""
    torch = require("torch", extra="embed")
    width = max(len(c["input_ids"]) for c in chunk)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    ids = torch.full((len(chunk), width), int(pad), dtype=torch.long)
    mask = torch.zeros((len(chunk), width), dtype=torch.long)
    types = torch.zeros((len(chunk), width), dtype=torch.long)
    for i, c in enumerate(chunk):
        n = len(c["input_ids"])
        ids[i, :n] = torch.tensor(c["input_ids"])
        mask[i, :n] = 1
        if "token_type_ids" in c:
            types[i, :n] = torch.tensor(c["token_type_ids"])
    kwargs = {"input_ids": ids.to(model.device), "attention_mask": mask.to(model.device)}
    if "token_type_ids" in getattr(tok, "model_input_names", ()):
        kwargs["token_type_ids"] = types.to(model.device)
    with torch.inference_mode():
        return np.asarray(model(**kwargs).logits.float().cpu().numpy(), dtype=np.float64)


def get_pair_model(path: str, *, max_length: int = 128, device: str = "cpu",
                   dtype: str = "float32") -> PairModel:
    """A process-wide :class:`PairModel` for a folder and settings (loaded once)."""
    key = ("pair", str(Path(path).expanduser().resolve()) if path else path, max_length,
           device, dtype)
    with _LOCK:
        if key not in _MODELS:
            _MODELS[key] = PairModel(path, max_length=max_length, device=device, dtype=dtype)
        return _MODELS[key]  # type: ignore[no-any-return]


def get_reward_model(path: str | None, *, device: str = "cpu", dtype: str = "float32"
                     ) -> RewardModel:
    """A process-wide :class:`RewardModel` for a folder and settings (loaded once)."""
    if not path:
        raise InvalidInputError("quality=rm needs `quality_model`: a local reward-model folder.")
    key = ("rm", str(Path(path).expanduser().resolve()), device, dtype)
    with _LOCK:
        if key not in _MODELS:
            _MODELS[key] = RewardModel(path, device=device, dtype=dtype)
        return _MODELS[key]  # type: ignore[no-any-return]
