"""The judge's log-probability answer mode (divmeter.backends.judge.logprobs): the rating read from
the log-probabilities of the tokens 1-5 of a completion-style prompt cut where the rating goes, so
an answer cannot be unparseable; N samples drawn from one answer (commonsense meta-evaluation paper,
section 4.1: five ratings at temperature 1, averaged). Against a loopback server that answers
with chosen log-probabilities (tests/faultserver.py); the real model is in test_judge_llama.py."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx")

from cli_util import run_main  # noqa: E402
from divmeter.backends.judge.logprobs import draw, rating_distribution  # noqa: E402
from divmeter.backends.judge.parse import ParseError  # noqa: E402
from divmeter.studies.judge.protocol import JudgeConfig, estimate_cost, judge_pairs, judge_sets  # noqa: E402
from faultserver import FaultServer  # noqa: E402

SETS = [["A dog chases a ball in the park.", "The cat sleeps on the warm windowsill."],
        ["A dog chases a ball.", "A dog runs after a ball."]]


def _legacy(top: dict[str, float]) -> dict[str, Any]:
    """A /completions answer listing ``top`` (token -> probability) for its one token."""
    return {"choices": [{"text": max(top, key=top.__getitem__), "index": 0, "logprobs": {
        "tokens": [max(top, key=top.__getitem__)],
        "top_logprobs": [{k: math.log(v) for k, v in top.items()}]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 1}}


def test_distribution_from_both_answer_shapes() -> None:
    legacy = _legacy({" 4": 0.5, "4": 0.1, "3": 0.2, "\n": 0.2})
    d = rating_distribution(legacy)
    assert d["p"] == {"1": 0.0, "2": 0.0, "3": 0.25, "4": 0.75, "5": 0.0}
    assert d["mass"] == pytest.approx(0.8)
    listed = {"choices": [{"logprobs": {"content": [{"token": "5", "logprob": math.log(0.3),
                                                     "top_logprobs": [
        {"token": "5", "logprob": math.log(0.3)}, {"token": "2", "logprob": math.log(0.1)},
        {"token": "Sure", "logprob": math.log(0.6)}]}]}}]}
    d = rating_distribution(listed)
    assert d["p"]["5"] == 0.75 and d["p"]["2"] == 0.25 and d["mass"] == pytest.approx(0.4)


def test_answers_without_a_rating_have_a_kind() -> None:
    with pytest.raises(ParseError, match="no log-probabilities") as exc:
        rating_distribution({"choices": [{"text": "4"}]})
    assert exc.value.kind == "no_logprobs"
    with pytest.raises(ParseError, match=r"none of the 2 most likely tokens is a rating 1-5 "
                       r"\(top: ' The', '10'\)") as exc:
        rating_distribution(_legacy({" The": 0.7, "10": 0.2}))
    assert exc.value.kind == "no_rating_token"


def test_draws_follow_temperature_and_seed() -> None:
    d = {"p": {"1": 0.0, "2": 0.2, "3": 0.0, "4": 0.8, "5": 0.0}, "mass": 0.9}
    assert {draw(d, 0.0, 0, "k", s) for s in range(20)} == {4}
    got = [draw(d, 1.0, 7, "k", s) for s in range(400)]
    assert got == [draw(d, 1.0, 7, "k", s) for s in range(400)]  # seeded
    assert set(got) == {2, 4} and 0.72 < got.count(4) / 400 < 0.88
    assert got != [draw(d, 1.0, 8, "k", s) for s in range(400)]  # the seed matters
    sharp = [draw(d, 0.25, 7, "k", s) for s in range(400)]  # p^(1/T): 0.8^4 vs 0.2^4
    assert sharp.count(4) / 400 > 0.97
    tie = {"p": {"1": 0.0, "2": 0.5, "3": 0.5, "4": 0.0, "5": 0.0}, "mass": 1.0}
    assert draw(tie, 0.0, 0, "k", 0) == 2  # greedy takes the lower rating on a tie


class _Scripted:
    """Answers each /completions body with a distribution that depends on the prompt: a set whose
    sentences start alike gets mostly 2, others mostly 4; Set 2's cue mostly 5. Records bodies."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.bodies.append(body)
        prompt = body["prompt"]
        if prompt.endswith("Diversity of Set 2 (1 to 5): "):
            return _legacy({"5": 0.9, " 1": 0.05, "x": 0.05})
        tail = prompt.rsplit("Sentences:", 1)[-1] if "Sentences:" in prompt else \
            prompt.rsplit("Set 1:", 1)[-1].split("Set 2:")[0]
        if "1. A dog chases a ball.\n" in tail:
            return _legacy({"2": 0.7, "3": 0.2, "The": 0.1})
        return _legacy({"4": 0.6, "5": 0.3, "The": 0.1})


@pytest.fixture()
def server() -> Iterator[FaultServer]:
    fs = FaultServer({})
    yield fs
    fs.close()


def _cfg(fs: FaultServer, cache: Path | None, **kw: Any) -> JudgeConfig:
    base: dict[str, Any] = {"model": "openai:m", "base_url": fs.url, "samples": 5,
                            "fewshot": "none", "cache": None if cache is None else str(cache),
                            "answer": "logprobs", "seed": 3, "concurrency": 2}
    base.update(kw)
    return JudgeConfig(**base)


def test_absolute_logprobs_one_request_per_set_and_cached_rerun(server: FaultServer,
                                                                 tmp_path: Path) -> None:
    answer = _Scripted()
    server.scripts["completions"] = [answer]
    cfg = _cfg(server, tmp_path / "cache", temperature=0.0)
    run = judge_sets([*SETS, []], cfg, contexts=["pets", "pets", None])
    assert server.total == 2  # one request per non-empty set serves its 5 samples
    # the two requests run concurrently (concurrency 2): set 0's is found by its content
    body = next(b for b in answer.bodies if "in the park" in b["prompt"])
    assert (body["max_tokens"], body["temperature"], body["logprobs"]) == (1, 0.0, 20)
    assert "messages" not in body and body["prompt"].endswith(
        "Input: pets\nSentences:\n1. A dog chases a ball in the park.\n2. The cat sleeps on the "
        "warm windowsill.\nDiversity (1 to 5): ")
    assert [it.value for it in run.items] == [4.0, 2.0, None]  # temperature 0: the argmax
    assert run.items[2].reason == "empty set"
    assert run.items[0].dist == {"p": {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.666667,
                                       "5": 0.333333}, "mass": pytest.approx(0.9)}
    s = run.summary()
    assert (s["valid_rate"], s["answer"], s["samples"]) == (1.0, "logprobs", 10)
    assert s["rating_token_mass"] == pytest.approx(0.9)
    assert run.signature.startswith("judge|task:absolute|model:openai:m|template:default@")
    assert "|fewshot:none|answer:logprobs|top:20|n:5|temp:0|seed:3|agg:mean|v:" in \
        run.signature
    again = judge_sets(SETS, cfg, contexts=["pets", "pets"])
    assert server.total == 2 and again.client_stats["cache_hits"] == 2
    assert [it.value for it in again.items] == [4.0, 2.0]
    est = estimate_cost("absolute", SETS, cfg, contexts=["pets", "pets"])
    assert (est["requests"], est["cached"], est["max_completion_tokens"]) == (2, 2, 0)


def test_samples_are_draws_at_the_temperature(server: FaultServer) -> None:
    server.scripts["completions"] = [_Scripted()]
    run = judge_sets([SETS[0]], _cfg(server, None, samples=40, temperature=1.0))
    scores = [s.scores[0] for s in run.items[0].samples]
    assert set(scores) <= {4, 5} and len(set(scores)) == 2  # 4 w.p. 2/3, 5 w.p. 1/3
    assert run.items[0].value == pytest.approx(sum(scores) / 40)
    again = judge_sets([SETS[0]], _cfg(server, None, samples=40, temperature=1.0))
    assert [s.scores for s in again.items[0].samples] == [s.scores for s in
                                                          run.items[0].samples]


def test_pairwise_logprobs_two_rounds_both_orders(server: FaultServer) -> None:
    answer = _Scripted()
    server.scripts["completions"] = [answer]
    run = judge_pairs([(SETS[0], SETS[1])], _cfg(server, None, temperature=0.0, samples=2))
    assert server.total == 4  # per order: Set 1's rating, then Set 2's
    second = [b["prompt"] for b in answer.bodies if b["prompt"].endswith("Set 2 (1 to 5): ")]
    assert len(second) == 2
    assert any(p.endswith("Diversity of Set 1 (1 to 5): 4\nDiversity of Set 2 (1 to 5): ")
               for p in second)  # ab: set1 (varied) shown first, its most likely rating 4
    assert any(p.endswith("Diversity of Set 1 (1 to 5): 2\nDiversity of Set 2 (1 to 5): ")
               for p in second)  # ba: set2 (redundant) shown first
    p = run.items[0]
    # ab: set1 4, set2 5 (the scripted Set 2 cue); ba: set2 2 (shown first), set1 5
    assert p.by_order["ab"]["rating1"] == 4.0 and p.by_order["ab"]["rating2"] == 5.0
    assert p.by_order["ba"]["rating1"] == 5.0 and p.by_order["ba"]["rating2"] == 2.0
    assert (p.rating1, p.rating2, p.label) == (4.5, 3.5, 0)
    assert p.by_order["ab"]["dist_second"]["p"]["5"] == pytest.approx(0.9 / 0.95, abs=1e-6)
    assert run.summary()["valid_rate"] == 1.0 and all(s.asks == 2 for s in p.samples)
    assert run.bias is not None and run.bias.n_samples == 4


def test_a_server_without_logprobs_fails_the_cli_run(server: FaultServer, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # the fault server's plain "ok" completion has text but no logprobs
    sets = tmp_path / "sets.jsonl"
    sets.write_text("".join(json.dumps({"set_id": f"s{i}", "responses": s}) + "\n"
                            for i, s in enumerate(SETS)))
    out = tmp_path / "rated.jsonl"
    args = ["judge", str(sets), "-o", str(out), "--task", "absolute", "--model", "m",
            "--base-url", server.url, "--answer", "logprobs", "--samples", "3", "--fewshot",
            "none", "--cache", "none"]
    code, stdout, stderr = run_main(monkeypatch, capsys, *args)
    assert code == 1
    assert "divmeter: error: judge: only 0% of the answers gave a valid rating (0 of 6) with m " \
           "in the logprobs answer mode, below --min-valid 0.8; check that the server returns " \
           "`logprobs` on /completions" in stderr
    summary = json.loads(stdout)
    assert summary["unparseable_answers"] == {"no_logprobs": 2}
    assert summary["null_samples"] == {"no_logprobs": 6}
    nulls = [json.loads(x) for x in (tmp_path / "rated.nulls.jsonl").read_text().splitlines()]
    assert [n["set_id"] for n in nulls] == ["s0", "s1"]
    assert nulls[0]["reason"].startswith("no valid rating in 3 samples ({'no_logprobs': 3}); "
                                         "e.g. no rating in the answer: the answer has no "
                                         "log-probabilities")
    # the same run against an answering server passes, and --min-valid 0 lets a bad one pass
    server.scripts["completions"] = [_Scripted()]
    code, stdout, stderr = run_main(monkeypatch, capsys, *args)
    assert code == 0, stderr
    assert "judge: 6 of 6 answers gave a valid rating (100.0%, logprobs answers)" in stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 2 and rows[0]["judge_detail"]["dist"]["p"]["4"] == 0.666667
    assert not (tmp_path / "rated.nulls.jsonl").exists()


def test_completion_template_errors(tmp_path: Path) -> None:
    from divmeter.backends.judge.prompts import load_template
    from divmeter.core.errors import InvalidInputError

    bad = tmp_path / "t.txt"
    bad.write_text("Rate: {{set}}\nScore: {{score}}")
    with pytest.raises(InvalidInputError, match=r"\(completion style\) must contain "
                       r"\{\{examples\}\} and \{\{set\}\} and \{\{score\}\}; missing "
                       r"\{\{examples\}\}"):
        load_template("absolute", str(bad), style="completion")
    bad.write_text("{{examples}}Score: {{score}}\n{{set}}")
    with pytest.raises(InvalidInputError, match="then the rating placeholders in order"):
        load_template("absolute", str(bad), style="completion")
    with pytest.raises(InvalidInputError, match="`answer` of judge must be text, logprobs or "
                       "schema; got 'json'"):
        JudgeConfig("openai:m", answer="json").check()
