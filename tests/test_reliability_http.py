"""Issue 27, the HTTP client against a loopback server that misbehaves (tests/faultserver.py):
a server dripping its answer a byte at a time cannot hold a request past ``timeout`` (one
deadline per attempt); malformed answers (null text, wrong shape) are never cached, so a rerun
after the server is fixed asks again; ``usage`` fields that are Infinity, lists or strings count
0; `divmeter judge` fails (exit 1) when no item got a valid rating; server models pass the CLI.
The hang, cache and exit-code cases fail on 74f78f3."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("tenacity")

from cli_util import run_main  # noqa: E402
from divmeter.backends.http import Failure, HttpClient  # noqa: E402
from faultserver import FaultServer  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture()
def make_server() -> Iterator:  # type: ignore[type-arg]
    servers: list[FaultServer] = []

    def make(scripts: dict) -> FaultServer:  # type: ignore[type-arg]
        servers.append(FaultServer(scripts))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def test_dripping_server_is_bounded_by_the_timeout(make_server) -> None:  # type: ignore[no-untyped-def]
    fs = make_server({"completions": ["drip"]})
    client = HttpClient(fs.url, cache=None, timeout=1.0, max_attempts=2, backoff=0.01,
                        backoff_max=0.02)
    box: dict[str, object] = {}
    t = threading.Thread(target=lambda: box.update(r=client.post_many("completions",
                                                                      [{"id": 1}])[0]),
                         daemon=True)
    t.start()
    t.join(45)  # the drip takes about a minute per attempt: only a whole deadline ends it
    assert not t.is_alive(), "a dripping answer held the request past its timeout"
    res = box["r"]
    assert isinstance(res, Failure) and res.kind == "timeout" and res.attempts == 2


def _null_text(body: dict) -> dict:  # type: ignore[type-arg]
    return {"choices": [{"index": 0, "text": None}], "usage": {"prompt_tokens": 1}}


def test_malformed_answers_are_never_cached(make_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cache = tmp_path / "cache"
    broken = make_server({"completions": [_null_text]})
    first = HttpClient(broken.url, cache=cache, max_attempts=1)
    got = first.post_many("completions", [{"id": 1}, {"id": 2}])
    assert [r["choices"][0]["text"] for r in got] == [None, None]  # the caller decides
    assert not list(cache.rglob("*.json"))
    fixed = make_server({"completions": ["ok"]})
    # the same requests (the URL is part of the key: point the fixed server at the old key)
    again = HttpClient(broken.url, cache=cache, max_attempts=1)
    broken.scripts["completions"] = ["ok"]
    out = again.post_many("completions", [{"id": 1}, {"id": 2}])
    assert [r["choices"][0]["text"] for r in out] == ["answer 1", "answer 2"]
    assert (again.stats.requests, again.stats.cache_hits) == (2, 0)
    third = HttpClient(broken.url, cache=cache, max_attempts=1)
    third.post_many("completions", [{"id": 1}, {"id": 2}])
    assert (third.stats.requests, third.stats.cache_hits) == (0, 2)  # good answers are cached
    assert fixed.total == 0


def test_generate_reruns_after_the_server_is_fixed(make_server, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DIVMETER_CACHE", str(tmp_path / "cache"))
    fs = make_server({"completions": [_null_text]})
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"id": "a", "prompt": "Hi"}\n')
    out = tmp_path / "o.jsonl"
    args = ["generate", str(prompts), "--model", "openai:fault-model", "--base-url", fs.url,
            "-n", "2", "-o", str(out), "-q"]
    assert run_main(monkeypatch, capsys, *args)[0] == 1
    fs.scripts["completions"] = ["ok"]
    code, _, err = run_main(monkeypatch, capsys, *args)
    assert code == 0, err
    row = json.loads(out.read_text().splitlines()[0])
    assert len(row["responses"]) == 2


@pytest.mark.parametrize("value", [float("inf"), [1, 2], "many", -5, True, 1e300])
def test_usage_fields_of_any_type_count_zero(value, make_server) -> None:  # type: ignore[no-untyped-def]
    def answer(body: dict) -> dict:  # type: ignore[type-arg]
        return {"choices": [{"index": 0, "text": "x"}],
                "usage": {"prompt_tokens": value, "completion_tokens": 3}}

    fs = make_server({"completions": [answer]})
    c = HttpClient(fs.url, cache=None, max_attempts=1)
    assert c.post("completions", {"id": 1})["choices"][0]["text"] == "x"
    assert (c.stats.prompt_tokens, c.stats.completion_tokens) == (0, 3)


@pytest.mark.parametrize("how", ["500", "400", "garbage", "say:no rating here"])
def test_judge_fails_when_no_rating_is_valid(how: str, make_server, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DIVMETER_CACHE", str(tmp_path / "cache"))
    fs = make_server({"chat/completions": [how]})
    code, out, err = run_main(monkeypatch, capsys, "judge", str(EXAMPLES / "pairs.jsonl"),
                              "--model", "openai:fault-model", "--base-url", fs.url, "-o",
                              str(tmp_path / "j.jsonl"), "-n", "1", "--retries", "0",
                              "--max-attempts", "1", "--orders", "ab", "-q")
    assert code == 1, err
    # the valid-answer floor of the judge (issue 21) names the rate, the model and what to try
    assert err.splitlines()[-1].startswith("divmeter: error: judge: only 0% of the answers gave "
                                           "a valid rating (0 of ")
    assert json.loads(out)["written"]["rows"] == 0


def test_judge_with_ratings_exits_0(make_server, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DIVMETER_CACHE", str(tmp_path / "cache"))
    fs = make_server({"chat/completions": ['say:{"rationale": "r", "score": 4}']})
    code, out, err = run_main(monkeypatch, capsys, "judge", str(EXAMPLES / "pools.jsonl"),
                              "--task", "absolute", "--model", "openai:fault-model",
                              "--base-url", fs.url, "-o", str(tmp_path / "j.jsonl"), "-n", "1",
                              "-q")
    assert code == 0, err
    assert json.loads(out)["written"]["rows"] > 0


def test_cli_accepts_server_embedding_models(make_server, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DIVMETER_CACHE", str(tmp_path / "cache"))

    def vectors(body: dict) -> dict:  # type: ignore[type-arg]
        return {"data": [{"index": i, "embedding": [1.0, float(len(t) % 3)]}
                         for i, t in enumerate(body["input"])]}

    fs = make_server({"embeddings": [vectors]})
    code, out, err = run_main(monkeypatch, capsys, "score", str(EXAMPLES / "stories.jsonl"),
                              "-m", f"embedding-cosine:model=openai:toy,base_url={fs.url}",
                              "-f", "jsonl", "-q")
    assert code == 0, err
    assert len(out.splitlines()) == 8
