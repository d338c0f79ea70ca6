"""The shared HTTP client against a loopback server that fails on purpose (tests/faultserver.py).

Checks: every request ends once (an answer or a counted failure), retries are bounded, the cache
serves a rerun with zero requests, keys never leak, and an unreachable server is one line.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

pytest.importorskip("httpx", reason="needs divmeter[http]: pip install -e '.[http]'")
pytest.importorskip("tenacity", reason="needs divmeter[http]: pip install -e '.[http]'")

from divmeter.backends.http import (  # noqa: E402
    Failure,
    HttpClient,
    ServerError,
    request_key,
)
from faultserver import FaultServer  # noqa: E402


@pytest.fixture
def server() -> Iterator[FaultServer]:
    s = FaultServer({
        "flaky429": ["429", "429", "ok"],
        "err500": ["500", "ok"],
        "drop": ["drop", "ok"],
        "garbage": ["garbage", "ok"],
        "truncated": ["truncated", "truncated", "ok"],
        "always500": ["500"],
        "bad": ["400"],
        "slow": ["slow", "ok"],
    })
    yield s
    s.close()


def _client(url: str, tmp_path, **kw) -> HttpClient:
    kw.setdefault("backoff", 0.01)
    kw.setdefault("backoff_max", 0.05)
    return HttpClient(url, cache=tmp_path / "cache", **kw)


@pytest.mark.parametrize(
    ("path", "attempts", "kind"),
    [("flaky429", 3, "429"), ("err500", 2, "5xx"), ("drop", 2, "connection"),
     ("garbage", 2, "malformed"), ("truncated", 3, "malformed")],
)
def test_retried_faults_end_in_one_answer(server, tmp_path, path, attempts, kind):
    c = _client(server.url, tmp_path)
    out = c.post_many(path, [{"id": i} for i in range(4)])
    assert [o["id"] for o in out] == [0, 1, 2, 3]
    assert [o["attempt"] for o in out] == [attempts] * 4
    assert c.stats.requests == 4 * attempts
    assert c.stats.retries[kind] == 4 * (attempts - 1)
    assert not c.stats.failures
    assert (c.stats.prompt_tokens, c.stats.completion_tokens) == (12, 8)


def test_persistent_failure_is_bounded_and_counted(server, tmp_path):
    c = _client(server.url, tmp_path, max_attempts=3)
    out = c.post_many("always500", [{"id": 1}, {"id": 2}])
    assert all(isinstance(o, Failure) and o.kind == "5xx" and o.attempts == 3 for o in out)
    assert server.attempts[("always500", 1)] == 3
    assert c.stats.failures["5xx"] == 2 and c.stats.retries["5xx"] == 4


def test_client_error_is_final_not_retried(server, tmp_path):
    c = _client(server.url, tmp_path)
    with pytest.raises(ServerError, match=r"HTTP 400: model .nope. not found \(4xx, after 1 "
                                          r"attempt\)"):
        c.post("bad", {"id": 1})
    assert server.attempts[("bad", 1)] == 1


def test_timeout_is_retried(server, tmp_path):
    c = _client(server.url, tmp_path, timeout=0.5)
    out = c.post("slow", {"id": 7})
    assert out["attempt"] == 2 and c.stats.retries["timeout"] == 1


def test_rerun_is_served_from_cache(server, tmp_path):
    payloads = [{"id": i, "prompt": "x"} for i in range(6)]
    first = _client(server.url, tmp_path)
    a = first.post_many("err500", payloads)
    sent = server.total
    second = _client(server.url, tmp_path)
    b = second.post_many("err500", payloads)
    assert a == b
    assert server.total == sent  # zero requests on the rerun
    assert second.stats.requests == 0 and second.stats.cache_hits == 6


def test_salt_separates_cache_entries(server, tmp_path):
    c = _client(server.url, tmp_path)
    c.post_many("flaky429", [{"id": 5}, {"id": 5}], salts=[0, 1])
    assert c.stats.cache_hits == 0
    assert request_key("u", {"id": 5}, 0) != request_key("u", {"id": 5}, 1)


def test_results_stream_in_completion_order_with_indexes(server, tmp_path):
    c = _client(server.url, tmp_path, concurrency=3)
    seen: list[int] = []
    out = c.post_many("err500", [{"id": i} for i in range(9)],
                      on_result=lambda i, r: seen.append(i))
    assert sorted(seen) == list(range(9)) and len(out) == 9


def test_key_is_sent_but_never_shown_or_cached(server, tmp_path):
    c = _client(server.url, tmp_path, api_key="sk-very-secret")
    out = c.post("err500", {"id": 1})
    assert out["auth"] is True
    assert "sk-very-secret" not in repr(c)
    stored = "".join(p.read_text() for p in (tmp_path / "cache").rglob("*.json"))
    assert stored and "sk-very-secret" not in stored


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_server_is_one_line(tmp_path):
    c = _client(f"http://127.0.0.1:{_free_port()}/v1", tmp_path, max_attempts=2)
    with pytest.raises(ServerError) as err:
        c.check()
    msg = str(err.value)
    assert "\n" not in msg
    assert "connection" in msg and "--base-url" in msg


def test_check_lists_models(server, tmp_path):
    assert _client(server.url, tmp_path).check() == ["fault-model"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"concurrency": 0}, r"`concurrency` must be an integer >= 1; got 0"),
     ({"max_attempts": 0}, r"`max_attempts` must be an integer >= 1; got 0")],
)
def test_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        HttpClient("http://127.0.0.1:1/v1", cache=None, **kwargs)


def test_bad_url():
    with pytest.raises(ValueError, match=r"must start with http:// or https://; got 'localhost:8'"):
        HttpClient("localhost:8", cache=None)


# ------------------------------------------------------------------------------------------------
# circuit breaker: a server that dies stops the run; a live server that errs is retried


def _dying_server(port: int, answers: int):
    """tests/faultserver.py as its own process: answers ``answers`` POSTs, then exits (its port
    closes, as when a server process crashes)."""
    import subprocess
    import sys
    from pathlib import Path

    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("faultserver.py")),
                             str(port), str(answers)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_breaker_opens_when_the_server_dies(tmp_path):
    """After 5 answers the server process exits: the requests left fail without being sent,
    every failure says the server stopped answering (with N of M), and the next call raises."""
    port = _free_port()
    proc = _dying_server(port, 5)
    try:
        c = _client(f"http://127.0.0.1:{port}/v1", tmp_path, concurrency=2, max_attempts=4)
        out = c.post_many("completions", [{"id": i} for i in range(40)])
    finally:
        proc.kill()
        proc.wait(timeout=10)
    answered = [o for o in out if not isinstance(o, Failure)]
    failed = [o for o in out if isinstance(o, Failure)]
    assert len(answered) == 5 and len(failed) == 35
    assert c.breaker.is_open and c.breaker.reason == "connection refused"
    line = (f"the server at http://127.0.0.1:{port}/v1 stopped answering (connection refused) "
            "after 5 of 40 requests; rerun with --resume")
    assert {f.message for f in failed} == {line}
    # sent: the 5 answered, the one that killed it, then at most 4 attempts per slot in flight
    assert c.stats.requests <= 6 + 2 * 4
    with pytest.raises(ServerError, match=r"stopped answering \(connection refused\) after 5 of "
                                          r"40 requests; rerun with --resume"):
        c.post_many("completions", [{"id": 99}])


def test_breaker_stays_closed_for_a_live_server(server, tmp_path):
    """5xx answers and dropped connections of a server that still accepts connections are
    retried and counted as before; the breaker stays closed and the client goes on."""
    c = _client(server.url, tmp_path, max_attempts=2)
    out = c.post_many("always500", [{"id": 1}, {"id": 2}])
    assert all(isinstance(o, Failure) and o.kind == "5xx" for o in out)
    out = c.post_many("drop", [{"id": 3}])
    assert out[0]["attempt"] == 2
    assert not c.breaker.is_open
    assert c.post("err500", {"id": 4})["attempt"] == 2


def test_breaker_on_a_port_closed_from_the_start(tmp_path):
    c = _client(f"http://127.0.0.1:{_free_port()}/v1", tmp_path, max_attempts=3, concurrency=2)
    out = c.post_many("completions", [{"id": i} for i in range(10)])
    assert all(isinstance(o, Failure) and o.kind == "connection" for o in out)
    assert c.breaker.reason == "connection refused"
    assert c.stats.requests <= 2 * 3  # the first two in flight; the other 8 never sent
    assert out[0].message == (f"the server at {c.base_url} cannot be reached (connection "
                              "refused); is it running, and is the URL right (it usually ends "
                              "in /v1)?")
