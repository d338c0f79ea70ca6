"""The LLM-judge equivalence (and quality rating) of the partition layer, over HTTP on loopback.

1. Against a scripted OpenAI-shaped server on 127.0.0.1 (``faultserver.py``) whose chat answers
   carry chosen first-token log-probabilities: the probability of *same* read from them (the
   answer words in any case, word starts of 3+ letters, other tokens ignored), the mean over the
   two orders, the threshold, a null with its reason when no answer token is there, identical
   responses decided without a request, the 1-10 quality rating as an expected value, the
   request cache (a rerun sends nothing), and the request itself (one token, temperature 0,
   ``logprobs`` + ``top_logprobs``). The server scripts the answers; the numbers checked are
   divmeter's reading of them.
2. Against llama.cpp's server with SmolLM2-135M-Instruct (the shared ``llama_smollm2`` fixture):
   the same request to a real model; a 135M model is not a good judge, so this checks the
   plumbing (every comparison answered with a probability, the cached rerun), not the verdicts.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("httpx")

import divmeter  # noqa: E402
from divmeter.backends.pairjudge import QualityJudge, SameJudge, answer_mass  # noqa: E402
from divmeter.metrics.partition import partition  # noqa: E402
from faultserver import FaultServer  # noqa: E402

SEEN: list[dict[str, Any]] = []


def _pair(body: dict[str, Any]) -> tuple[str, str]:
    user = body["messages"][-1]["content"]
    m = re.search(r"Response 1:\n(.*)\n\nResponse 2:\n(.*)\n\nAnswer \(same or different\):",
                  user, re.S)
    assert m is not None, user
    return m.group(1), m.group(2)


def _p_same(a: str, b: str) -> float | None:
    if a.startswith("Refuse") or b.startswith("Refuse"):
        return None
    if a.startswith("Order") and b.startswith("Order"):
        return 0.8 if a < b else 0.1  # the judge favours one order
    return 0.9 if a.split()[0] == b.split()[0] else 0.2


def _answer(top: list[tuple[str, float]]) -> dict[str, Any]:
    cands = [{"token": t, "logprob": math.log(p), "bytes": None} for t, p in top]
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": top[0][0]},
                         "logprobs": {"content": [{**cands[0], "top_logprobs": cands}]}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 1}}


def scripted(body: dict[str, Any]) -> dict[str, Any]:
    SEEN.append(body)
    user = body["messages"][-1]["content"]
    if user.endswith("Rating (1-10):"):
        return _answer([("7", 0.5), ("8", 0.3), ("seven", 0.2)])
    p = _p_same(*_pair(body))
    if p is None:
        return _answer([("I", 0.6), ("Sorry", 0.4)])
    # the mass of each answer is split over spellings; "Sure" is not a start of "same"
    return _answer([("Same", 0.8 * p), (" SAME", 0.1 * p), (" different", 0.9 * (1 - p)),
                    ("Sure", 0.1)])


@pytest.fixture()
def server():
    SEEN.clear()
    srv = FaultServer({"chat/completions": [scripted]})
    yield srv
    srv.close()


def test_answer_mass_reads_spellings() -> None:
    cands = [("Same", math.log(0.5)), (" same.", math.log(0.1)), ("Sam", math.log(0.1)),
             ("S", math.log(0.1)), ("**Different**", math.log(0.1)), ("Sure", math.log(0.1))]
    assert answer_mass(cands, "same") == pytest.approx(0.7)
    assert answer_mass(cands, "different") == pytest.approx(0.1)


def test_same_judge_request_and_probability(server, tmp_path: Path) -> None:
    judge = SameJudge("openai:tiny", server.url, cache=str(tmp_path))
    got = judge.p_same([("Name a colour.", "Red is nice", "Red again"),
                        (None, "Blue sky", "Green grass"),
                        (None, "Refuse this", "x")])
    assert got[0] == pytest.approx(0.9)
    assert got[1] == pytest.approx(0.2)
    assert isinstance(got[2], str) and "neither 'same' nor 'different'" in got[2]
    assert "'I', 'Sorry'" in got[2]
    # the three requests go out concurrently: find the one that carried the request text
    asked = [b for b in SEEN if b["messages"][-1]["content"].startswith(
        "Request:\nName a colour.\n\nResponse 1:")]
    assert len(asked) == 1 and len(SEEN) == 3
    body = asked[0]
    assert body["max_tokens"] == 1 and body["temperature"] == 0.0
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    assert body["model"] == "tiny"


def test_both_orders_are_averaged(server, tmp_path: Path) -> None:
    texts = ["Order alpha", "Order beta"]
    p = partition(texts, "judge", model="openai:tiny", base_url=server.url, cache=str(tmp_path))
    # (0.8 + 0.1) / 2 = 0.45 <= 0.5: different; both orders were asked
    assert p.distinct == 2
    assert p.comparisons[0][2] == pytest.approx(0.45)
    asked = {_pair(b) for b in SEEN}
    assert asked == {("Order alpha", "Order beta"), ("Order beta", "Order alpha")}
    loose = partition(texts, "judge", model="openai:tiny", base_url=server.url,
                      cache=str(tmp_path), threshold=0.4)
    assert loose.distinct == 1


def test_distinct_k_over_the_judge_and_cached_rerun(server, tmp_path: Path) -> None:
    texts = ["Red apples", "Red cherries", "Blue sea", "Blue sea", "Green grass"]
    kw = dict(equivalence="judge", model="openai:tiny", base_url=server.url,
              cache=str(tmp_path / "cache"), prompt="Name something coloured.")
    r = divmeter.score(texts, "distinct-k", comparisons=True, **kw)
    assert r.details["labels"] == [0, 0, 1, 1, 2]
    assert r.value == pytest.approx(3 / 5)
    # identical responses (2 and 3) are decided without a request; 0 vs 1, 0 vs 2, 0 vs 4 and
    # 2 vs 4 reach the server, in both orders (0 vs 3 asks what 0 vs 2 asked: from the cache)
    assert server.total == 8
    assert [c[3] for c in r.details["comparisons"]] == [True, False, False, True, False, False]
    assert r.details["comparisons"][3] == [2, 3, None, True]
    assert re.fullmatch(
        r"distinct-k\|eq:judge\|model:openai:tiny@127\.0\.0\.1:\d+/v1\|api:chat-logprobs\|"
        r"top:20\|tmpl:[0-9a-f]{8}\|orders:both\|ident:same\|thr:0\.5\|v:0\.1\.0", r.signature)
    again = divmeter.score(texts, "distinct-k", comparisons=True, **kw)
    assert server.total == 8  # every answer came from the cache
    assert again.details == r.details


def test_failed_comparison_is_null_with_reason(server, tmp_path: Path) -> None:
    res = divmeter.score_many([["Red apples", "Refuse me"], ["Red a", "Red b"]], "distinct-k",
                              equivalence="judge", model="openai:tiny", base_url=server.url,
                              cache=str(tmp_path))
    assert res[0].value is None
    assert res[0].reason.startswith("comparison of responses 0 and 1 failed: neither 'same'")
    assert res[1].value == 0.5


def test_unreachable_server_is_a_null_with_the_reason(tmp_path: Path) -> None:
    r = divmeter.score_many([["Red apples", "Blue sea"]], "distinct-k", equivalence="judge",
                            model="openai:tiny", base_url="http://127.0.0.1:9/v1", cache="none")
    assert r[0].value is None and "(connection, after" in r[0].reason


def test_quality_judge_expected_rating(server, tmp_path: Path) -> None:
    qj = QualityJudge("openai:tiny", server.url, cache=str(tmp_path))
    assert qj.ratings([("Say hi.", "Hi!")]) == [pytest.approx((7 * 0.5 + 8 * 0.3) / 0.8)]
    texts = ["Red apples", "Red cherries", "Blue sea"]
    r = divmeter.score(texts, "novelty-utility", equivalence="judge", model="openai:tiny",
                       base_url=server.url, cache=str(tmp_path), quality="judge")
    q = 7.375
    assert r.value == pytest.approx((q + 0.64 * q) / (1 + 0.8 + 0.64))
    assert "|quality:judge|qmodel:openai:tiny@127.0.0.1:" in r.signature


def test_judge_model_must_be_a_server_model() -> None:
    from divmeter.core.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="server model 'openai:NAME'"):
        partition(["a", "b"], "judge", model="gpt-4o", base_url="http://127.0.0.1:9/v1")


@pytest.mark.slow
def test_judge_on_llama_server(llama_smollm2, tmp_path: Path) -> None:
    texts = ["The cat sat on the mat.", "A cat was sitting on the mat.",
             "Stocks fell sharply on Monday."]
    kw = dict(equivalence="judge", model=f"openai:{llama_smollm2.model}",
              base_url=llama_smollm2.url, cache=str(tmp_path / "cache"),
              prompt="Write one sentence.")
    r = divmeter.score_many([texts], "distinct-k", comparisons=True, **kw)[0]
    if r.value is None and llama_smollm2.process.poll() is not None:
        pytest.skip(f"llama.cpp's server died (exit {llama_smollm2.process.returncode}) "
                    f"answering a request: a build problem of llama-cpp-python, not divmeter's "
                    f"({r.reason})")
    assert r.value is not None, r.reason
    assert 1 <= r.details["distinct"] <= 3
    for _, _, p, same in r.details["comparisons"]:
        assert 0.0 <= p <= 1.0 and same == (p > 0.5)
    again = divmeter.score_many([texts], "distinct-k", comparisons=True, **kw)[0]
    assert again.details == r.details


def test_cli_score_with_the_judge_equivalence(server, tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from divmeter.apps.cli import app

    sets = tmp_path / "sets.jsonl"
    rows = [{"set_id": "a", "prompt": "Name a colour.",
             "responses": ["Red apples", "Red cherries", "Blue sea"]},
            {"set_id": "b", "prompt": "Name a colour.", "responses": ["Refuse me", "Blue sea"]}]
    sets.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    metric = (f"distinct-k:equivalence=judge,model=openai:tiny,base_url={server.url},"
              f"cache={tmp_path / 'cache'}")
    res = CliRunner().invoke(app, ["score", str(sets), "-m", metric, "-f", "json", "--quiet"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)["results"]
    col = next(k for k in out[0] if k.startswith("distinct-k"))
    assert out[0][col] == pytest.approx(2 / 3)
    assert out[1][col] is None
    assert "neither 'same' nor 'different'" in out[1]["reasons"][col]
    # each set's prompt reached the judge
    assert all(b["messages"][-1]["content"].startswith("Request:\nName a colour.") for b in SEEN)
