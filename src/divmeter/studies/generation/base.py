"""What every generation backend shares: decoding settings, per-sample seeds, the backend
protocol and argument checks (:mod:`divmeter.studies.generation` re-exports them; the backends
import them from here, so no module of the package imports its ``__init__``).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from divmeter.core.errors import InvalidInputError

__all__ = [
    "Decoding",
    "SampleGenerator",
    "sample_seeds",
    "derive_seed",
    "run_signature",
    "check_prompts",
    "check_n",
    "check_request",
    "DEFAULT_GENERATION_MODEL",
    "END_OF_TURN",
    "clean_server_text",
]

#: The model used when none is named: the packaged Gemma-3-270m base (as for Decan).
DEFAULT_GENERATION_MODEL = "gemma-3-270m"

#: Seeds are kept below 2**31 so every server accepts them.
_SEED_BITS = 31


def derive_seed(*parts: Any) -> int:
    """A seed in [0, 2**31) from any values (SHA-256 of their ``|``-joined ``repr``).

    Example:
        >>> derive_seed(0, "a prompt", 3)
        848582083
    """
    blob = "|".join(repr(p) for p in parts).encode("utf-8")
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big") >> (64 - _SEED_BITS)


def sample_seeds(seed: int, prompt: str, n: int, *, prompt_seed: int | None = None) -> list[int]:
    """The seeds of the ``n`` samples of one prompt.

    Args:
        seed: The call's seed.
        prompt: The prompt text (used unless ``prompt_seed`` is given).
        n: Number of samples.
        prompt_seed: A per-prompt seed chosen by the caller (e.g. from a prompt id, so that two
            identical prompts still get different samples).

    Returns:
        ``n`` seeds in [0, 2**31).
    """
    base = prompt_seed if prompt_seed is not None else derive_seed("prompt", seed, prompt)
    return [derive_seed("sample", base, j) for j in range(n)]


def _num(x: float) -> str:
    """Shortest stable text of a number for signatures: 1.0 -> '1', 0.25 -> '0.25'."""
    return f"{x:g}" if isinstance(x, float) else str(x)


@dataclass(frozen=True)
class Decoding:
    """Decoding parameters of one generation call.

    Attributes:
        temperature: Softmax temperature (> 0); 0 means greedy decoding.
        top_p: Nucleus sampling mass in (0, 1]; 1 keeps every token.
        top_k: Keep the k most probable tokens; 0 keeps every token.
        max_tokens: Most new tokens per sample (>= 1).
        stop: Strings that end a sample (the text is cut before the first one).

    Raises:
        InvalidInputError: A value out of its range.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    max_tokens: int = 64
    stop: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        t, p, k, m = self.temperature, self.top_p, self.top_k, self.max_tokens
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
            raise InvalidInputError(f"`temperature` must be a number >= 0; got {t!r}.")
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1:
            raise InvalidInputError(f"`top_p` must be a number in (0, 1]; got {p!r}.")
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidInputError(f"`top_k` must be an integer >= 0 (0 = off); got {k!r}.")
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise InvalidInputError(f"`max_tokens` must be an integer >= 1; got {m!r}.")
        if isinstance(self.stop, str):
            raise InvalidInputError(
                f"`stop` must be a list of strings; got a single str. Wrap it: [{self.stop!r}]."
            )
        stop = tuple(self.stop)
        if not all(isinstance(s, str) and s for s in stop):
            raise InvalidInputError(f"`stop` must hold non-empty strings; got {list(stop)!r}.")
        object.__setattr__(self, "stop", stop)
        object.__setattr__(self, "temperature", float(t))
        object.__setattr__(self, "top_p", float(p))

    def signature(self) -> str:
        """The settings that change the samples, in a stable order."""
        stop = ",".join(repr(s) for s in self.stop) if self.stop else "none"
        return (f"temp:{_num(self.temperature)}|top_p:{_num(self.top_p)}|top_k:{self.top_k}"
                f"|max_tokens:{self.max_tokens}|stop:{stop}")

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stop"] = list(self.stop)
        return d


@runtime_checkable
class SampleGenerator(Protocol):
    """What every backend provides.

    Attributes:
        signature: Model, revision and backend, e.g.
            ``"gen|model:gemma-3-270m@a5fd3b62230a|backend:transformers|chat:no|dtype:float32|v:0.1.0"``.
        provenance: Model, revision or package version, backend, device, library versions.
    """

    signature: str
    provenance: dict[str, Any]

    def generate(self, prompts: Sequence[str], n: int, *, temperature: float = 1.0,
                 top_p: float = 1.0, top_k: int = 0, max_tokens: int = 64,
                 stop: Sequence[str] = (), seed: int = 0,
                 prompt_seeds: Sequence[int] | None = None) -> list[list[str]]:
        """``n`` samples for each prompt (outer list: prompts, inner: samples)."""
        ...


def check_prompts(prompts: Any) -> list[str]:
    """Validate a list of prompt strings (a bare string is an error)."""
    from divmeter.inputs.data.model import as_texts

    return as_texts(prompts, what="prompts")


def check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InvalidInputError(f"`n` (samples per prompt) must be an integer >= 1; got {n!r}.")
    return n


def check_request(prompts: Any, n: Any, prompt_seeds: Sequence[int] | None) -> list[str]:
    """Validate the arguments of a backend's ``generate``: the prompts (returned as a list),
    ``n`` and the optional per-prompt seeds (one per prompt)."""
    texts = check_prompts(prompts)
    check_n(n)
    if prompt_seeds is not None and len(prompt_seeds) != len(texts):
        raise InvalidInputError(f"`prompt_seeds` must have one seed per prompt "
                                f"({len(texts)}); got {len(prompt_seeds)}.")
    return texts


def run_signature(gen: SampleGenerator, decoding: Decoding, n: int, seed: int) -> str:
    """The full recipe of a generated set: generator signature with decoding, n and seed
    inserted before the version.

    Example:
        >>> class G:
        ...     signature = "gen|model:m@abc|backend:openai|v:0.1.0"
        >>> run_signature(G(), Decoding(max_tokens=8), 5, 0)
        'gen|model:m@abc|backend:openai|temp:1|top_p:1|top_k:0|max_tokens:8|stop:none|n:5|seed:0|v:0.1.0'
    """
    head, _, version = gen.signature.rpartition("|")
    return f"{head}|{decoding.signature()}|n:{n}|seed:{seed}|{version}"


#: Special tokens that end a turn: a sample stops there, as at end-of-sequence.
END_OF_TURN = ("<end_of_turn>", "<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|endoftext|>",
               "<|end|>", "<|end_of_text|>", "<end_of_utterance>", "<EOT>")

#: Special-token text a server can leave in its answer (llama.cpp writes Gemma's
#: ``<start_of_image>``, a token its GGUF marks user-defined, into the text): ChatML/Llama-3
#: style ``<|...|>``, Gemma's turn, image and reserved tokens, and ``<bos>``-style names.
_SERVER_SPECIAL = re.compile(
    r"<\|[A-Za-z0-9_.:-]{1,40}\|>|<(?:start|end)_of_(?:turn|image)>|<image_soft_token>"
    r"|\[multimodal\]|<unused\d+>|<(?:bos|eos|pad|unk|mask)>")


def clean_server_text(text: str) -> str:
    """A server's generated text without special-token text: cut at the first end-of-turn
    marker (:data:`END_OF_TURN`), then every other special-token string removed.

    Example:
        >>> clean_server_text("selling flowers.<start_of_image>The old w")
        'selling flowers.The old w'
        >>> clean_server_text("Paris.<end_of_turn>\\n<start_of_turn>user")
        'Paris.'
    """
    ends = [i for i in (text.find(m) for m in END_OF_TURN) if i >= 0]
    if ends:
        text = text[: min(ends)]
    return _SERVER_SPECIAL.sub("", text)
