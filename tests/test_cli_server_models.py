"""Server models (``openai:NAME``) as metric arguments of `divmeter score`, against llama.cpp's
real server on loopback: ``decan:model=openai:NAME,base_url=URL`` and the same with
``$DIVMETER_BASE_URL``, and ``embedding-cosine:model=openai:NAME,base_url=URL``. The CLI gives
the values the Python API gives on the same server (before this, the CLI refused the name as
"not an alias ... download it first")."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("httpx", reason="needs divmeter[http]")

SET = {"set_id": "s0", "prompt": "Describe the weather.",
       "responses": ["It rained all day.", "The sun came out at noon.", "Snow fell at night."]}


def _score(tmp_path: Path, metric: str, env: dict[str, str] | None = None) -> dict:
    f = tmp_path / "sets.jsonl"
    f.write_text(json.dumps(SET) + "\n", encoding="utf-8")
    res = subprocess.run(
        [sys.executable, "-c", "from divmeter.apps.cli import main; main()", "score", str(f), "-m",
         metric, "-f", "jsonl", "--quiet"],
        capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_decan_server_model_from_the_cli(llama_gemma, tmp_path):
    import divmeter

    want = divmeter.score(SET["responses"], "decan", prompt=SET["prompt"], permutations=1,
                          model=f"openai:{llama_gemma.model}", base_url=llama_gemma.url)
    assert want.value is not None
    row = _score(tmp_path, f"decan:model=openai:{llama_gemma.model},base_url={llama_gemma.url},"
                           "permutations=1")
    [col] = [k for k in row if k.startswith("decan")]
    assert row[col] == pytest.approx(want.value, rel=1e-12)
    env_row = _score(tmp_path, f"decan:model=openai:{llama_gemma.model},permutations=1",
                     env={"DIVMETER_BASE_URL": llama_gemma.url})
    [col] = [k for k in env_row if k.startswith("decan")]
    assert env_row[col] == pytest.approx(want.value, rel=1e-12)


@pytest.fixture(scope="module")
def llama_embed_gemma(tmp_path_factory):
    """llama.cpp's server with ``--embedding true`` and mean pooling set through a GGUF
    metadata override (llama-cpp-python 0.3.36's server has no pooling option; without one a
    causal model is served token by token)."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs llama-cpp-python[server] (installed by .ci/run)")
    from llama_server import gguf_path, start_llama_server

    if gguf_path("gemma-3-270m") is None:
        pytest.skip("the packaged model 'gemma-3-270m' is not installed")
    server = start_llama_server("gemma-3-270m", tmp_path_factory.mktemp("llama-emb-gemma"),
                                extra=["--embedding", "true", "--kv_overrides",
                                       "gemma3.pooling_type=int:1"])
    yield server
    server.close()


def test_embedding_server_model_from_the_cli(llama_embed_gemma, tmp_path, monkeypatch):
    import divmeter

    monkeypatch.setenv("DIVMETER_CACHE", str(tmp_path / "cache"))
    url = llama_embed_gemma.url
    want = divmeter.score(SET["responses"], "embedding-cosine", model="openai:gemma-3-270m",
                          base_url=url)
    assert want.value is not None and -1 <= want.value <= 1
    row = _score(tmp_path, f"embedding-cosine:model=openai:gemma-3-270m,base_url={url}",
                 env={"DIVMETER_CACHE": str(tmp_path / "cache2")})
    [col] = [k for k in row if k.startswith("embedding-cosine")]
    assert row[col] == pytest.approx(want.value, rel=1e-9)
