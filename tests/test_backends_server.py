"""Server backends (issue 14): embeddings from /v1/embeddings and Decan over /v1/completions.

Fault tests run against tests/faultserver.py on loopback (wrong dimension, NaN, missing
logprobs, server down); the number tests run real models: the local MiniLM for the parity check,
and llama.cpp's server (``llama_gemma`` fixture) for Decan, compared with the local transformers
path (Khoriaty et al. 2026, eqs. 4-6: a_n, C, D).
"""

from __future__ import annotations

import importlib.util
import math
import socket

import numpy as np
import pytest

from divmeter.backends.http import ServerError
from divmeter.backends.server import (
    CompletionsScorer,
    ServerEncoder,
    _token_table,
    server_model_name,
)
from divmeter.core.errors import InvalidInputError
from faultserver import FaultServer

needs_http = pytest.mark.skipif(importlib.util.find_spec("httpx") is None, reason="needs httpx")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("DIVMETER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _embeddings(vectors):
    """An /v1/embeddings answer body maker returning ``vectors(texts)``."""

    def answer(body):
        vecs = vectors(body["input"])
        return {"data": [{"index": i, "embedding": v} for i, v in enumerate(vecs)],
                "model": body["model"]}

    return answer


def _free_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("model,name", [
    ("openai:bge-small", "bge-small"),
    ("openai: e5 ", "e5"),
    ("minilm", None),
    ("openai-ish", None),
])
def test_server_model_name(model, name):
    assert server_model_name(model) == name


def test_server_model_name_empty():
    with pytest.raises(InvalidInputError, match=r"names no server model: expected 'openai:NAME'"):
        server_model_name("openai:")


@needs_http
def test_signatures():
    enc = ServerEncoder("bge", "http://127.0.0.1:8080/v1/", normalize="l2", cache=False)
    assert enc.signature == "openai:bge@127.0.0.1:8080/v1|pool:server|norm:l2"
    sc = CompletionsScorer("qwen", "https://api.example.org/v1", cache=None)
    assert sc.signature == "openai:qwen@api.example.org/v1|api:completions-echo"
    with pytest.raises(InvalidInputError, match=r"`normalize` must be one of none, l2; got 'x'"):
        ServerEncoder("bge", "http://127.0.0.1:8080/v1", normalize="x")


@needs_http
def test_embeddings_batched_cached_and_metric(cache_dir):
    """Vectors come back in input order across batches, land in the embedding cache (a rerun
    sends no request), and embedding-cosine over them equals -mean pairwise cosine."""
    table = {"a": [1.0, 0.0], "b": [0.0, 2.0], "c": [3.0, 4.0]}
    srv = FaultServer({"embeddings": [_embeddings(lambda xs: [table[x] for x in xs])]})
    try:
        enc = ServerEncoder("toy", srv.url, batch_size=2)
        X = enc.encode(["c", "a", "b", "a"])
        assert X.tolist() == [[3, 4], [1, 0], [0, 2], [1, 0]]
        sent = srv.total
        assert sent == 2  # 3 distinct texts, 2 per request
        assert enc.encode(["b", "c"]).tolist() == [[0, 2], [3, 4]]
        assert srv.total == sent
        enc.cache.flush()
        assert len(list(enc.cache.folder.glob("*.npz"))) == 1

        import divmeter

        r = divmeter.score(["a", "b", "c"], "embedding-cosine", model="openai:toy",
                           base_url=srv.url)
        # cosines: a.b = 0, a.c = 3/5, b.c = 8/10 -> neg-mean = -(0 + 0.6 + 0.8) / 3
        assert r.value == pytest.approx(-1.4 / 3, abs=1e-7)
        assert r.signature.startswith(
            f"embedding-cosine|model:openai:toy@{srv.url.split('//')[1]}|pool:server|norm:none|"
        )
    finally:
        srv.close()


@needs_http
@pytest.mark.parametrize("vectors,message", [
    (lambda xs: [[1.0, 2.0, 3.0] if i == 0 else [1.0, 2.0] for i in range(len(xs))],
     r"every embedding must have the same dimension; got \[2, 3\]"),
    (lambda xs: [[float("nan"), 1.0] for _ in xs],
     r"embedding 0 holds NaN or infinite values; nothing was cached"),
    (lambda xs: [[1.0, 2.0]],
     r"the server must return one embedding per input \(2\); got 1"),
    (lambda xs: [[[0.1, 0.2], [0.3, 0.4]] for _ in xs],
     r"embedding 0 must be a non-empty list of numbers; got a list of vectors"),
])
def test_embedding_faults_leave_cache_empty(cache_dir, vectors, message):
    srv = FaultServer({"embeddings": [_embeddings(vectors)]})
    try:
        enc = ServerEncoder("bad", srv.url, batch_size=8)
        with pytest.raises(ServerError, match=message):
            enc.encode(["x", "y"])
        enc.cache.flush()
        assert len(enc.cache) == 0
        assert not (enc.cache.folder and enc.cache.folder.exists())
    finally:
        srv.close()


@needs_http
def test_embedding_dimension_change_between_calls(cache_dir):
    dims = iter([2, 3])

    def vectors(xs):
        d = next(dims)
        return [[1.0] * d for _ in xs]

    srv = FaultServer({"embeddings": [_embeddings(vectors)]})
    try:
        enc = ServerEncoder("drift", srv.url, cache=False)
        enc.encode(["x"])
        with pytest.raises(ServerError, match=r"different dimensions \[2, 3\]"):
            enc.encode(["x", "y"])
        assert len(enc.cache) == 1
    finally:
        srv.close()


@needs_http
def test_server_down_one_line(cache_dir):
    enc = ServerEncoder("gone", _free_url(), max_attempts=1, cache=False)
    with pytest.raises(ServerError, match=r"/v1/embeddings: .*\(connection, after 1 attempt\)\.$"):
        enc.encode(["x"])
    sc = CompletionsScorer("gone", _free_url(), max_attempts=1, cache=None)
    with pytest.raises(ServerError, match=r"/v1/completions: .*\(connection, after 1 attempt\)"):
        sc.span_bits(["Response A: x"], [[(12, 13)]])


def test_base_url_needs_server_model():
    from divmeter.metrics.embedding import embed_texts

    with pytest.raises(InvalidInputError, match=r"`base_url` applies to server models"):
        embed_texts(["a"], "glove", "http://127.0.0.1:9/v1")
    import divmeter

    with pytest.raises(InvalidInputError, match=r"`base_url` of decan applies to server models"):
        divmeter.score(["a", "b"], "decan", base_url="http://127.0.0.1:9/v1")


@needs_http
def test_parity_check_against_local_minilm(cache_dir):
    """The parity check compares server vectors with the local model's: a server that returns
    the real MiniLM vectors scores 1; one that returns them with the first two coordinates
    swapped scores exactly the cosine of that swap, computed here independently."""
    pytest.importorskip("sentence_transformers")
    from divmeter.backends.embed import get_encoder
    from divmeter.backends.server import parity_check

    texts = ["A cat sat on the mat.", "Stocks fell sharply today.", "Rain is expected."]
    local = get_encoder("minilm")
    ref = {t: v.tolist() for t, v in zip(texts, local.encode(texts), strict=True)}

    def swapped(xs):
        out = []
        for x in xs:
            v = list(ref[x])
            v[0], v[1] = v[1], v[0]
            out.append(v)
        return out

    for vectors, model in ((lambda xs: [ref[x] for x in xs], "same"), (swapped, "swapped")):
        srv = FaultServer({"embeddings": [_embeddings(vectors)]})
        try:
            rep = parity_check(texts, f"openai:{model}", srv.url, local="minilm")
        finally:
            srv.close()
        A = np.array(vectors(texts), dtype=np.float64)
        B = np.array([ref[t] for t in texts], dtype=np.float64)
        cos = (A * B).sum(1) / np.linalg.norm(A, axis=1) / np.linalg.norm(B, axis=1)
        assert rep["n"] == 3
        assert rep["worst_cosine"] == pytest.approx(cos.min(), abs=1e-6)
        assert rep["worst_index"] == int(np.argmin(cos))
        if model == "same":
            assert rep["worst_cosine"] == pytest.approx(1.0, abs=1e-6)
        else:
            assert rep["worst_cosine"] < 1.0 - 1e-4


# ---------------------------------------------------------------------------------- completions


@pytest.mark.parametrize("offsets,logprobs,text,bits", [
    # the generated token (offset == len(text)) is dropped; the first token's null gives 0 bits
    ([0, 4, 6], [None, -math.log(2), -2 * math.log(2)], "Rain\n\nx", [0.0, 1.0, 2.0]),
    ([0, 2], [None, -math.log(8)], "ab", [0.0]),
])
def test_token_table(offsets, logprobs, text, bits):
    ans = {"choices": [{"logprobs": {"text_offset": offsets, "token_logprobs": logprobs}}]}
    offs, b = _token_table(ans, text, "w")
    assert b.tolist() == pytest.approx(bits)
    assert offs[:, 1].tolist()[-1] == len(text)


def test_token_table_without_logprobs():
    with pytest.raises(ServerError, match=r"w: the answer has no prompt log-probabilities"):
        _token_table({"choices": [{"text": "x"}]}, "x", "w")


@needs_http
def test_decan_server_without_echo(cache_dir):
    """A server that answers completions but returns no logprobs: one clear line."""
    import divmeter

    srv = FaultServer({"completions": ["ok"]})
    try:
        with pytest.raises(ServerError, match=r"must support echo=true with logprobs"):
            divmeter.score(["It rained.", "It snowed."], "decan", prompt="Weather?",
                           permutations=1, model="openai:fault-model", base_url=srv.url)
    finally:
        srv.close()


#: Relative difference allowed between llama.cpp's server (quantized Q4_K_M kernels) and the
#: local path (the same GGUF dequantized to float32). Measured on these responses with 3
#: permutations (benchmarks/results_decan_server.md): D +2.1%, a_n +3.6%, C -1.5%, single
#: positions up to 5%, of both signs (quantisation noise, not an attribution offset).
REL = 0.05


def test_decan_server_matches_local(llama_gemma):
    """D, a_n and C over llama.cpp's /v1/completions (echo + logprobs) agree with the local
    transformers path on the same GGUF, same sets and permutations (eqs. 4-6)."""
    from divmeter.metrics.decan import decan

    responses = ["It rained all day.", "The sun came out at noon.",
                 "Snow fell over the quiet town."]
    kw = {"prompt": "Describe the weather.", "permutations": 2, "seed": 0}
    remote = decan(responses, model=f"openai:{llama_gemma.model}", base_url=llama_gemma.url, **kw)
    assert remote.signature.startswith(
        "decan|fmt:completion|perms:2|seed:0|model:openai:gemma-3-270m@127.0.0.1:"
    )
    assert "torch:" not in remote.signature
    local = decan(responses, **kw)
    for key in ("D", "a_n", "C"):
        assert remote.details[key] == pytest.approx(local.details[key], rel=REL), key


@pytest.fixture(scope="module")
def llama_embed(tmp_path_factory):
    """A separate llama.cpp server instance with ``--embedding true`` (SmolLM2-135M)."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs llama-cpp-python[server] (installed by .ci/run)")
    from llama_server import gguf_path, start_llama_server

    if gguf_path("smollm2-135m-instruct") is None:
        pytest.skip("the packaged model 'smollm2-135m-instruct' is not installed")
    server = start_llama_server("smollm2-135m-instruct", tmp_path_factory.mktemp("llama-emb"),
                                extra=["--embedding", "true"])
    yield server
    server.close()


def test_llama_embedding_server_token_level(llama_embed, cache_dir):
    """llama-cpp-python's server (0.3.36) has no pooling option; a causal GGUF without a pooling
    type is served token by token (one vector per token). The encoder refuses that with one line
    and caches nothing, instead of averaging behind the user's back."""
    enc = ServerEncoder(llama_embed.model, llama_embed.url)
    with pytest.raises(ServerError, match=r"embedding 0 must be a non-empty list of numbers; "
                       r"got a list of vectors \(token-level embeddings"):
        enc.encode(["a cat", "the dog barked"])
    enc.cache.flush()
    assert len(enc.cache) == 0


@needs_http
def test_embed_parity_cli(cache_dir, tmp_path):
    """`divmeter embed-parity` prints the worst cosine: 1.000000 for a server returning the
    local MiniLM vectors; a one-line error (exit 2) for a server that is down."""
    pytest.importorskip("sentence_transformers")
    import json

    from typer.testing import CliRunner

    from divmeter.apps.cli import app
    from divmeter.backends.embed import get_encoder

    texts = ["A cat sat on the mat.", "Stocks fell sharply today."]
    f = tmp_path / "sets.jsonl"
    f.write_text(json.dumps({"responses": texts}) + "\n")
    ref = {t: v.tolist() for t, v in zip(texts, get_encoder("minilm").encode(texts), strict=True)}
    srv = FaultServer({"embeddings": [_embeddings(lambda xs: [ref[x] for x in xs])]})
    try:
        res = CliRunner().invoke(app, ["embed-parity", str(f), "--model", "openai:mini",
                                       "--base-url", srv.url])
    finally:
        srv.close()
    assert res.exit_code == 0, res.output
    assert res.output.startswith("worst cosine 1.000000 (text ")
    assert "over 2 texts: openai:mini@" in res.output
