"""Issue 27, security: cache keys are divmeter's own hex digests on every read and write (a Batch
API ``custom_id`` cannot write outside the cache), corpus checkpoints are data (a crafted pickle
never runs), and secrets (URL user-info, API keys a server echoes) reach no output, provenance,
log or message. Each test fails on 74f78f3."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

from cli_util import run_main
from divmeter.core.errors import InvalidInputError

SECRET = "sk-topsecret-4f9a"
PASSWORD = "pw-hunter2-x7"


# ---------------------------------------------------------------------------------------------
# request cache keys


@pytest.mark.parametrize("key", ["../" * 20 + "evil", "/" * 64, "A" * 64, "g" * 64, "ab" * 31,
                                 "../../../../tmp/" + "a" * 48])
def test_request_cache_refuses_foreign_keys_on_read_and_write(tmp_path: Path, key: str) -> None:
    pytest.importorskip("httpx")
    from divmeter.backends.http import RequestCache

    cache = RequestCache(tmp_path / "cache")
    with pytest.raises(InvalidInputError, match="request cache key must be 64 lower-case hex"):
        cache.put(key, {"x": 1})
    with pytest.raises(InvalidInputError, match="request cache key must be 64 lower-case hex"):
        cache.get(key)
    assert not (tmp_path / "cache").exists() or not any(tmp_path.rglob("*.json"))


def test_batch_ingest_custom_id_cannot_leave_the_cache(tmp_path: Path) -> None:
    pytest.importorskip("httpx")
    pytest.importorskip("tenacity")
    from divmeter.backends.http import HttpClient
    from divmeter.studies.judge.protocol import JudgeConfig, ingest_batch_results

    cache = tmp_path / "deep" / "cache"
    outside = tmp_path / "escaped"
    key = os.path.relpath(outside, cache / "xx")  # what `cache / key[:2] / key.json` climbs out
    key = (key + "/" + "a" * 64)[:64] if len(key) < 64 else key
    body = {"choices": [{"message": {"content": "{\"score\": 3}"}}]}
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"custom_id": key, "response": {"status_code": 200,
                                                                  "body": body}}) + "\n")
    cfg = JudgeConfig("openai:m", base_url="http://127.0.0.1:9/v1", cache=str(cache))
    client = HttpClient("http://127.0.0.1:9/v1", cache=cache)
    with pytest.raises(InvalidInputError, match=r"results.jsonl line 1: 'custom_id' must be a "
                                                r"request key divmeter wrote"):
        ingest_batch_results(str(results), cfg, client=client)
    assert [p for p in tmp_path.rglob("*.json")] == []


# ---------------------------------------------------------------------------------------------
# corpus checkpoints


class _Boom:
    """Unpickling this creates a file: the proof that a checkpoint ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (open, (str(self.marker), "w"))


def _shards(tmp_path: Path) -> list[Path]:
    files = []
    for i in range(2):
        f = tmp_path / f"s{i}.txt"
        f.write_text(f"a b c {i}\nb c d {i}\n")
        files.append(f)
    return files


def test_pickle_checkpoint_is_refused_and_never_run(tmp_path: Path) -> None:
    from divmeter.engine.corpus.run import score_corpus

    marker = tmp_path / "code-ran"
    ckpt = tmp_path / "run.ckpt"
    ckpt.write_bytes(pickle.dumps({"key": "x", "pass": 0, "done": [], "accs": _Boom(marker),
                                   "responses": 0}))
    with pytest.raises(InvalidInputError, match="is not a divmeter corpus checkpoint"):
        score_corpus(_shards(tmp_path), ["distinct-n"], checkpoint=ckpt)
    assert not marker.exists()


@pytest.mark.parametrize("content", [b"", b"\x00\xff garbage", b'{"format": "divmeter-corpus-',
                                     b'{"format": "other"}', b"[1, 2]",
                                     b'{"format": "divmeter-corpus-checkpoint", "version": 99}'])
def test_bad_checkpoints_are_one_line_refusals(tmp_path: Path, content: bytes) -> None:
    from divmeter.engine.corpus.run import score_corpus

    ckpt = tmp_path / "run.ckpt"
    ckpt.write_bytes(content)
    with pytest.raises(InvalidInputError) as err:
        score_corpus(_shards(tmp_path), ["distinct-n"], checkpoint=ckpt)
    assert "\n" not in str(err.value) and "run.ckpt" in str(err.value)
    assert ckpt.read_bytes() == content  # a file divmeter did not write is never overwritten


def test_checkpoint_tampered_body_and_roundtrip(tmp_path: Path) -> None:
    from divmeter.engine.corpus.run import score_corpus

    shards = _shards(tmp_path)
    ckpt = tmp_path / "run.ckpt"
    metrics = ["distinct-n", "self-bleu", "ngram-cosine", "mattr:window=2"]
    full = score_corpus(shards, metrics, checkpoint=ckpt)
    doc = json.loads(ckpt.read_text())
    assert (doc["format"], doc["version"]) == ("divmeter-corpus-checkpoint", 1)
    # a finished checkpoint resumes to the same records, from data alone
    again = score_corpus(shards, metrics, checkpoint=ckpt)
    assert again.records == full.records and again.resumed_shards == 4
    doc["body"]["responses"] += 1
    ckpt.write_text(json.dumps(doc))
    with pytest.raises(InvalidInputError, match="is damaged"):
        score_corpus(shards, metrics, checkpoint=ckpt)


# ---------------------------------------------------------------------------------------------
# secrets


@pytest.fixture()
def fault():  # type: ignore[no-untyped-def]
    pytest.importorskip("httpx")
    pytest.importorskip("tenacity")
    from faultserver import FaultServer

    fs = FaultServer({"completions": ["echo-auth"], "chat/completions": ["echo-auth"]})
    yield fs
    fs.close()


def test_echoed_api_key_never_in_messages(fault, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from divmeter.backends.http import HttpClient, ServerError

    c = HttpClient(fault.url, api_key=SECRET, cache=None, max_attempts=2, backoff=0.01)
    out = c.post_many("completions", [{"id": 1}])
    assert "invalid key" in out[0].message and SECRET not in out[0].message
    with pytest.raises(ServerError) as err:
        c.post("completions", {"id": 2})
    assert SECRET not in str(err.value)


def test_url_userinfo_is_auth_not_provenance(fault, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from divmeter.studies.generation import get_generator

    url = fault.url.replace("http://", f"http://alice:{PASSWORD}@")
    gen = get_generator("openai:fault-model", base_url=url, cache=None)
    assert PASSWORD not in json.dumps(gen.provenance)
    assert gen.provenance["base_url"] == fault.url
    assert PASSWORD not in repr(gen.client) and "alice" not in gen.client.base_url
    # the credentials still travel, as HTTP basic auth: the echoed header is redacted too
    out = gen.client.post_many("chat/completions", [{"id": 3}])
    assert out[0].message.startswith("server error (HTTP 500): invalid key")
    assert "Basic" in out[0].message and PASSWORD not in out[0].message


@pytest.mark.parametrize("how", ["ok", "echo-auth"])
def test_cli_generate_redacts_everywhere(how, tmp_path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("httpx")
    pytest.importorskip("tenacity")
    from faultserver import FaultServer

    fault = FaultServer({"completions": [how]})
    monkeypatch.setenv("DIVMETER_API_KEY", SECRET)
    monkeypatch.setenv("DIVMETER_CACHE", str(tmp_path / "cache"))
    prompts = tmp_path / "p.jsonl"
    prompts.write_text('{"id": "a", "prompt": "Hi"}\n')
    out = tmp_path / "o.jsonl"
    url = fault.url.replace("http://", f"http://bob:{PASSWORD}@")
    code, stdout, stderr = run_main(monkeypatch, capsys, "generate", str(prompts), "--model",
                                    "openai:fault-model", "--base-url", url, "-n", "1",
                                    "--timeout", "2", "-o", str(out))
    seen = stdout + stderr + (out.read_text() if out.exists() else "")
    seen += "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    fault.close()
    assert PASSWORD not in seen and SECRET not in seen
    assert code == (0 if how == "ok" else 1)
    if how == "ok":  # provenance names the server, without its credentials
        row = json.loads(out.read_text().splitlines()[0])
        assert row["provenance"]["base_url"] == fault.url


def test_cli_error_lines_redact_urls_and_keys(monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code, _, err = run_main(monkeypatch, capsys, "score", "nope.jsonl", "-m",
                            f"embedding-cosine:model=minilm,base_url=ftp://u:{PASSWORD}@h/"
                            f"{SECRET}")
    assert code == 2 and err.startswith("divmeter: error:")
    assert PASSWORD not in err and SECRET not in err
