"""Generation over HTTP against a real OpenAI-compatible server on loopback: llama-cpp-python's
server with the packaged Gemma-3-270m base (``/v1/completions``) and SmolLM2-135M-Instruct
(``/v1/chat/completions``). Skips cleanly when llama-cpp-python is not installed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from divmeter.studies.generation import Decoding, get_generator
from divmeter.studies.generation.sweep import Prompt, parse_sweep, run_sweep


def _gen(server, **kw):
    return get_generator(f"openai:{server.model}", base_url=server.url, **kw)


def test_completions_seeded_and_cached(llama_gemma, tmp_path):
    """n samples per prompt as separate requests with distinct seeds (distinct texts); a client
    with a warm cache answers the same call without sending anything. (That the server itself
    repeats a seeded sample whatever was asked before is checked below: the fixture starts it
    without llama-cpp-python's reuse of the previous prompt, see
    divmeter.backends.llamacpp_server.)"""
    kw = dict(temperature=1.0, max_tokens=6, seed=0)
    g1 = _gen(llama_gemma, cache=tmp_path / "cache")
    out = g1.generate(["Not the hacking", "How is our"], 2, **kw)
    assert [len(s) for s in out] == [2, 2]
    assert all(isinstance(t, str) and t for s in out for t in s)
    assert out[0][0] != out[0][1] or out[1][0] != out[1][1]
    assert g1.client.stats.requests == 1 + 4  # GET /models, one POST per sample
    assert g1.last_stats["tokens"] > 0
    g3 = _gen(llama_gemma, cache=tmp_path / "cache")
    assert g3.generate(["Not the hacking", "How is our"], 2, **kw) == out
    assert (g3.client.stats.requests, g3.client.stats.cache_hits) == (1, 4)


def test_completions_resume(llama_gemma, tmp_path):
    """Interrupted after 1 row and rerun: the kept row is untouched, the rest is generated once,
    no row duplicated or lost, in the planned order."""
    prompts = [Prompt("a", "Not the hacking"), Prompt("b", "How is our")]
    sweep = parse_sweep("temperature=0.5,1")
    dec = Decoding(max_tokens=4)

    class Stop(Exception):
        pass

    def stop(row):
        raise Stop

    part = tmp_path / "part.jsonl"
    with pytest.raises(Stop):
        run_sweep(_gen(llama_gemma, cache=None), prompts, 2, sweep, part, decoding=dec,
                  on_row=stop)
    first = part.read_text()
    rep = run_sweep(_gen(llama_gemma, cache=None), prompts, 2, sweep, part, decoding=dec)
    assert (rep.kept, rep.written, rep.failed) == (1, 3, 0)
    text = part.read_text()
    assert text.startswith(first)
    rows = [json.loads(line) for line in text.splitlines()]
    assert [r["set_id"] for r in rows] == ["a@temperature=0.5", "b@temperature=0.5",
                                           "a@temperature=1", "b@temperature=1"]
    assert all(len(r["responses"]) == 2 for r in rows)


def test_cli_server_sweep_then_meta_dectest(llama_gemma, tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"id": "c0", "prompt": "Not the hacking"}\n{"id": "c1", "prompt": "How is '
                 'our"}\n', encoding="utf-8")
    out = tmp_path / "o.jsonl"
    cli = [sys.executable, "-c", "from divmeter.apps.cli import main; main()"]
    res = subprocess.run([*cli, "generate", str(p), "--model", f"openai:{llama_gemma.model}",
                          "--base-url", llama_gemma.url, "-n", "2", "--sweep", "top_p=0.5,1",
                          "--max-tokens", "4", "-o", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["set_id"], r["label"], r["label_name"]) for r in rows] == [
        ("c0@top_p=0.5", 0.5, "top_p"), ("c1@top_p=0.5", 0.5, "top_p"),
        ("c0@top_p=1", 1.0, "top_p"), ("c1@top_p=1", 1.0, "top_p")]
    assert rows[0]["provenance"]["endpoint"] == "completions"
    res = subprocess.run([*cli, "meta", "dectest", str(out), "-m", "distinct-n", "--format",
                          "json", "--no-plots", "--quiet"], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["distinct-n"]["n"] == 4


def test_chat_completions(llama_smollm2):
    """SmolLM2-135M-Instruct answers through /chat/completions (the message content comes back;
    no chat markup leaks into it; greedy samples agree)."""
    gen = _gen(llama_smollm2, chat=True, cache=None)
    assert gen.signature == "gen|model:smollm2-135m-instruct|backend:openai|chat:yes|v:0.1.0"
    out = gen.generate(["What is the capital of France?"], 2, temperature=0, max_tokens=8)
    assert out[0][0].strip() and "<|im_" not in out[0][0]
    assert out[0][0] == out[0][1]  # greedy
    assert gen.provenance["endpoint"] == "chat/completions"


PROMPTS = ["The old woman was selling flowers at the market", "Not the hacking", "How is our"]


def test_server_samples_do_not_depend_on_the_batch(llama_gemma):
    """llama.cpp's server honours the seed: 3 prompts x 4 samples x 24 tokens at temperature 1
    (no cache) are the same generated together with 4 requests in flight, each prompt alone,
    in reversed order, and one request at a time; no special-token text is left in them."""
    kw = {"temperature": 1.0, "max_tokens": 24, "seed": 0}
    together = _gen(llama_gemma, cache=None, concurrency=4).generate(PROMPTS, 4, **kw)
    assert all(len(set(s)) == 4 for s in together)
    one = _gen(llama_gemma, cache=None, concurrency=1)
    assert [one.generate([p], 4, **kw)[0] for p in PROMPTS] == together
    assert one.generate(PROMPTS[::-1], 4, **kw)[::-1] == together
    again = _gen(llama_gemma, cache=None, concurrency=2).generate(PROMPTS, 4, **kw)
    assert again == together
    assert not [t for s in together for t in s if "<start_of" in t or "<end_of" in t]
