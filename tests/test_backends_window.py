"""Truncation recorded (issue 16): a response longer than a sentence encoder's window is embedded
from its first ``max_seq_length`` tokens only; every sentence-encoder metric says how many
responses were cut (``details["truncated"]``) and the window (``details["max_seq_length"]``).
The window stays out of the signature so existing signature strings do not change.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

import divmeter

pytestmark = [pytest.mark.embed]

METRICS = ["embedding-cosine", "chamfer", "chamfer-sqeuclidean", "vendi-embedding",
           "kmeans-inertia", "remote-clique"]


@pytest.fixture(autouse=True, scope="module")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    old = os.environ.get("DIVMETER_CACHE")
    os.environ["DIVMETER_CACHE"] = str(tmp_path_factory.mktemp("dmcache-window"))
    yield
    if old is None:
        os.environ.pop("DIVMETER_CACHE", None)
    else:
        os.environ["DIVMETER_CACHE"] = old


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
    assert "256" not in r.signature


def test_word_vectors_record_no_window() -> None:
    r = divmeter.score(["the cat sat", "a dog ran"], "embedding-cosine", model="glove")
    assert "truncated" not in r.details
