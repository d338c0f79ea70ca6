"""The judge end to end against a real OpenAI-compatible server on loopback: llama-cpp-python's
server with SmolLM2-135M-Instruct (chat: text and JSON-schema answers) and with the packaged
Gemma-3-270m base (completions: log-probability answers). Kept small (a few sets, one pair).
Models of 135M-270M parameters are not good judges (the paper used GPT-4o): these tests check the
plumbing (every item gets a rating or a null with its reason, counts add up, a rerun is served
from the cache with zero requests) and that the answer modes made for such models answer (at
least 95% valid ratings in the log-probability mode), not how good the ratings are. Protocol:
commonsense meta-evaluation paper, section 4.1 and appendix D."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("httpx")

from divmeter.backends.judge.requests import response_format  # noqa: E402
from divmeter.studies.judge.protocol import JudgeConfig, judge_pairs, judge_sets  # noqa: E402

SETS = [
    ["A dog chases a ball in the park.", "The cat sleeps on the warm windowsill.",
     "Rain falls on the market at dawn."],
    ["A dog chases a ball.", "A dog runs after a ball.", "The dog chases the ball."],
    ["We went to the beach.", "My sister baked bread.", "The train was late again."],
]


def _cfg(server, cache: Path, **kw: object) -> JudgeConfig:
    base = {"model": f"openai:{server.model}", "base_url": server.url, "samples": 2,
            "max_tokens": 32, "fewshot": "none", "retries": 0, "cache": str(cache),
            "concurrency": 2, "timeout": 300.0, "max_attempts": 2, "seed": 7}
    base.update(kw)
    return JudgeConfig(**base)  # type: ignore[arg-type]


def _counts_add_up(summary: dict) -> None:
    assert summary["valid_samples"] + sum(summary["null_samples"].values()) == \
        summary["samples"]


@pytest.mark.slow
def test_absolute_on_llama_server_and_cached_rerun(llama_smollm2, tmp_path: Path) -> None:
    cfg = _cfg(llama_smollm2, tmp_path / "cache")
    first = judge_sets(SETS, cfg)
    for it in first.items:
        assert (it.value is not None) != (it.reason is not None)
        assert it.value is None or 1.0 <= it.value <= 5.0
        assert len(it.samples) == 2
    s = first.summary()
    _counts_add_up(s)
    asked = sum(x.asks for it in first.items for x in it.samples)
    assert s["client"]["requests"] == asked  # one request per answer, no transport failures
    assert s["client"]["completion_tokens"] > 0
    again = judge_sets(SETS, cfg)  # a fresh client on the same cache folder
    assert again.client_stats["requests"] == 0
    assert again.client_stats["cache_hits"] == asked
    assert [it.value for it in again.items] == [it.value for it in first.items]


@pytest.mark.slow
def test_pairwise_on_llama_server(llama_smollm2, tmp_path: Path) -> None:
    run = judge_pairs([(SETS[0], SETS[1])],
                      _cfg(llama_smollm2, tmp_path / "cache", samples=1, max_tokens=48))
    for p in run.items:
        assert (p.label is not None) != (p.reason is not None)
        assert p.label in (None, 0, 1, 2)
        assert {s.order for s in p.samples} == {"ab", "ba"}
    s = run.summary()
    _counts_add_up(s)
    assert s["position_bias"]["n_samples"] == s["valid_samples"]


MORE = [
    ["A girl rides her bike to school.", "The old bridge collapsed in the storm.",
     "Grandpa plants tomatoes every spring.", "The orchestra tuned up before the concert."],
    ["The sun is hot.", "The sun is very hot.", "It is hot because of the sun.",
     "The hot sun shines."],
    ["Dog the park in ran quickly.", "Ball a threw boy the.", "Sky blue the is why."],
]


@pytest.mark.slow
def test_logprob_answers_on_the_packaged_base_model(llama_gemma, tmp_path: Path) -> None:
    """Gemma-3-270m base echoes the rubric when asked for a chat answer (issue 21: 0 of 12 valid
    ratings); read from the log-probabilities of the tokens 1-5, at least 95% of its answers are
    valid ratings, with the default template and few-shot examples."""
    cfg = _cfg(llama_gemma, tmp_path / "cache", answer="logprobs", samples=5, fewshot="default",
               concurrency=1)
    run = judge_sets([*SETS, *MORE], cfg, contexts=["daily life"] * 6)
    pairs = judge_pairs([(SETS[0], SETS[1])], cfg, contexts=["daily life"])
    s, p = run.summary(), pairs.summary()
    valid = s["valid_samples"] + p["valid_samples"]
    total = s["samples"] + p["samples"]
    assert total == 6 * 5 + 2 * 5
    assert valid / total >= 0.95, (s["null_samples"], p["null_samples"])
    for it in run.items:
        assert it.value is not None and 1.0 <= it.value <= 5.0
        assert sum(it.dist["p"].values()) == pytest.approx(1.0, abs=1e-5)
        assert 0 < it.dist["mass"] <= 1.0 + 1e-9
    # the model puts most of its next-token probability on a rating (it answers, not echoes)
    assert s["rating_token_mass"] > 0.5
    assert pairs.items[0].label in (0, 1, 2)
    assert run.client_stats["requests"] == 6 and pairs.client_stats["requests"] == 4
    again = judge_sets([*SETS, *MORE], cfg, contexts=["daily life"] * 6)
    assert again.client_stats["requests"] == 0
    assert [it.value for it in again.items] == [it.value for it in run.items]


@pytest.mark.slow
def test_schema_answers_on_llama_server(llama_smollm2, tmp_path: Path) -> None:
    """The JSON-schema answer mode: llama-cpp-python's server refuses OpenAI's ``json_schema``
    response_format (a validation error, as a 500), so after one probe request the judge asks
    in its ``json_object`` + ``schema`` form, and the grammar-constrained answers parse."""
    cfg = _cfg(llama_smollm2, tmp_path / "cache", answer="schema", samples=1, max_tokens=64)
    run = judge_sets(SETS[:2], cfg)
    s = run.summary()
    _counts_add_up(s)
    assert s["valid_rate"] == 1.0, s["null_samples"]
    assert s["client"]["failures"] == {"5xx": 1}  # the probe in the json_schema form
    assert all(1 <= x.scores[0] <= 5 for it in run.items for x in it.samples)
    assert response_format("absolute", "json_object")["schema"]["properties"]["score"] == {
        "type": "integer", "enum": [1, 2, 3, 4, 5]}
