"""The judge end to end against a real OpenAI-compatible server on loopback: llama-cpp-python's
server with SmolLM2-135M-Instruct (chat). Kept small (3 sets with N = 2, one pair in both orders,
no re-asks, short answers: 8 requests).
A 135M model is not a good judge: these tests check the plumbing (every item gets a rating or a
null with its reason, counts add up, a rerun is served from the cache with zero requests), not
the ratings. Protocol: commonsense meta-evaluation paper, section 4.1 and appendix D."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("httpx")

from divmeter.judge.protocol import JudgeConfig, judge_pairs, judge_sets  # noqa: E402

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
