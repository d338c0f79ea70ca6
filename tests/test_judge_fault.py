"""The judge protocol against a loopback server that misbehaves on purpose (tests/faultserver.py):
429 with Retry-After, 500, time-outs, truncated JSON bodies, refusals, out-of-range ratings.
Nothing is lost (every item has a value or a null with its reason), retries are bounded, the
summary counts every failure kind, and a rerun is served from the cache with zero requests
(counted by the server). Protocol: commonsense meta-evaluation paper, section 4.1 / 5.1 (N samples
averaged; both presentation orders for pairs), appendix D (output format)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("httpx")
pytest.importorskip("tenacity")

import divmeter  # noqa: E402
from cli_util import run_main  # noqa: E402
from divmeter.backends.judge.prompts import load_fewshot, load_template, pairwise_messages  # noqa: E402
from divmeter.core.errors import InvalidInputError  # noqa: E402
from divmeter.studies.judge.protocol import (  # noqa: E402
    JudgeConfig,
    estimate_cost,
    ingest_batch_results,
    judge_pairs,
    judge_sets,
    write_batch_requests,
)
from faultserver import FaultServer  # noqa: E402

SETS = [
    ["A dog chases a ball in the park.", "The cat sleeps on the warm windowsill."],
    ["A dog chases a ball.", "A dog runs after a ball."],
    ["Rain falls on the city.", "Children build a snowman.", "The market opens at dawn."],
]
PAIRS = [(SETS[0], SETS[1]), (SETS[1], SETS[2]), (SETS[2], SETS[0])]
SCORE4 = 'say:{"rationale": "Two scenes.", "score": 4}'
SIG_ABS = ("judge|task:absolute|model:openai:m|template:default@{t}|fewshot:none|answer:text|"
           "n:{n}|temp:1|"
           "max_tokens:64|retries:{r}|agg:mean|v:0.1.0")


@pytest.fixture()
def server() -> Iterator[FaultServer]:
    fs = FaultServer({})
    yield fs
    fs.close()


def _cfg(fs: FaultServer, cache: Path | None, **kw: object) -> JudgeConfig:
    base = {"model": "openai:m", "base_url": fs.url, "samples": 2, "max_tokens": 64,
            "fewshot": "none", "cache": None if cache is None else str(cache),
            "concurrency": 1, "timeout": 0.5, "max_attempts": 5}
    base.update(kw)
    return JudgeConfig(**base)  # type: ignore[arg-type]


def _fast(cfg: JudgeConfig) -> object:
    c = cfg.client()
    c.backoff, c.backoff_max = 0.01, 0.05  # type: ignore[attr-defined]
    return c


def test_rerun_is_served_from_cache(server: FaultServer, tmp_path: Path) -> None:
    server.scripts["chat/completions"] = [SCORE4]
    cfg = _cfg(server, tmp_path / "cache", concurrency=4)
    first = judge_sets(SETS, cfg)
    # 3 sets x 2 samples = 6 requests
    assert server.total == 6 and first.client_stats["requests"] == 6
    assert [it.value for it in first.items] == [4.0, 4.0, 4.0]
    assert [s.rationale for s in first.items[0].samples] == ["Two scenes.", "Two scenes."]
    t = load_template("absolute").hash
    assert first.signature == SIG_ABS.format(t=t, n=2, r=2)
    again = judge_sets(SETS, cfg)  # a fresh client on the same cache folder
    assert server.total == 6  # the server saw no new request
    assert again.client_stats["requests"] == 0 and again.client_stats["cache_hits"] == 6
    assert [it.value for it in again.items] == [4.0, 4.0, 4.0]


def test_every_fault_kind_retried_bounded_and_counted(server: FaultServer) -> None:
    # one body (1 set, 1 sample): the HTTP client retries 429 / 500 / time-out / truncated JSON
    # / dropped connection; the 6th attempt answers a refusal (re-ask 1), the 7th an
    # out-of-range 9 (re-ask 2), the 8th a valid 4: the last ask allowed by retries=2.
    server.scripts["chat/completions"] = ["429", "500", "slow", "truncated", "drop",
                                          "say:I'm sorry, but I can't help with that.",
                                          "say:Score: 9", SCORE4]
    cfg = _cfg(server, None, samples=1, max_attempts=6)
    run = judge_sets([SETS[0]], cfg, client=_fast(cfg))
    assert run.items[0].value == 4.0
    assert run.items[0].samples[0].asks == 3
    s = run.summary()
    assert s["client"]["retries"] == {"429": 1, "5xx": 1, "timeout": 1, "connection": 1,
                                      "malformed": 1}
    assert s["client"]["failures"] == {}
    assert s["unparseable_answers"] == {"no_score": 1, "out_of_range": 1}
    assert s["null_samples"] == {} and s["null_items"] == 0
    assert server.total == 8


def test_unparseable_answers_become_nulls_with_reasons(server: FaultServer) -> None:
    server.scripts["chat/completions"] = ["say:I'm sorry, I cannot rate these sentences."]
    cfg = _cfg(server, None, retries=2)
    run = judge_sets(SETS, cfg, client=_fast(cfg))
    # every sample asked 1 + 2 times: 3 sets x 2 samples x 3 = 18 answers, none invented
    assert server.total == 18
    for it in run.items:
        assert it.value is None
        assert it.reason.startswith("no valid rating in 2 samples ({'no_score': 2}); e.g. "
                                    "unparseable answer (asked 3x): no rating found")
    s = run.summary()
    assert s["unparseable_answers"] == {"no_score": 18}
    assert s["null_samples"] == {"no_score": 6} and s["null_items"] == 3


def test_out_of_range_is_never_clipped(server: FaultServer) -> None:
    server.scripts["chat/completions"] = ['say:{"score": 6}']
    cfg = _cfg(server, None, retries=1, samples=1)
    run = judge_sets([SETS[0]], cfg, client=_fast(cfg))
    assert run.items[0].value is None
    assert "score 6 is outside 1-5" in run.items[0].reason
    assert run.summary()["unparseable_answers"] == {"out_of_range": 2}


def test_server_errors_are_bounded_failures(server: FaultServer) -> None:
    server.scripts["chat/completions"] = ["500"]
    cfg = _cfg(server, None, max_attempts=3)
    run = judge_sets(SETS[:2], cfg, client=_fast(cfg))
    # 2 sets x 2 samples, 3 attempts each; no re-ask after a transport failure
    assert server.total == 12
    assert all(it.value is None and "request failed after 3 attempts: server error (HTTP 500)"
               in it.reason for it in run.items)
    s = run.summary()
    assert s["client"]["failures"] == {"5xx": 4} and s["client"]["retries"] == {"5xx": 8}
    assert s["null_samples"] == {"5xx": 4}


def test_timeouts_are_bounded(server: FaultServer) -> None:
    server.scripts["chat/completions"] = ["slow"]
    cfg = _cfg(server, None, samples=1, max_attempts=2)
    run = judge_sets([SETS[0]], cfg, client=_fast(cfg))
    assert run.items[0].value is None and "no answer within 0.5 s" in run.items[0].reason
    assert run.summary()["client"]["failures"] == {"timeout": 1}
    assert server.total == 2


def test_empty_set_is_null_without_request(server: FaultServer) -> None:
    server.scripts["chat/completions"] = [SCORE4]
    run = judge_sets([[], SETS[0]], _cfg(server, None, samples=1))
    assert (run.items[0].value, run.items[0].reason) == (None, "empty set")
    assert run.items[1].value == 4.0 and server.total == 1


def test_pairwise_maps_orders_back_and_reports_position_bias(server: FaultServer) -> None:
    # A judge that always rates the set shown second higher (the paper's 87% Set-2 choice):
    # A/B gives set1 = 2, set2 = 4; B/A gives set2 = 2, set1 = 4 -> both means 3: a tie, and the
    # whole bias shows in first_minus_second = -2, first_preferred = 0, order_consistency = 0.
    server.scripts["chat/completions"] = [
        'say:{"Diversity_Score_Set1": 2, "Diversity_Score_Set2": 4}']
    run = judge_pairs(PAIRS[:2], _cfg(server, None, concurrency=4))
    assert server.total == 2 * 2 * 2  # pairs x orders x samples
    p = run.items[0]
    assert (p.rating1, p.rating2, p.label) == (3.0, 3.0, 2)
    assert p.by_order["ab"] == {"rating1": 2.0, "rating2": 4.0, "label": 1, "n_valid": 2}
    assert p.by_order["ba"] == {"rating1": 4.0, "rating2": 2.0, "label": 0, "n_valid": 2}
    b = run.bias
    assert (b.first_minus_second, b.first_preferred, b.order_consistency) == (-2.0, 0.0, 0.0)
    assert (b.n_samples, b.n_pairs) == (8, 2)
    assert run.signature.endswith("retries:2|orders:ab+ba|agg:mean|v:0.1.0")


def test_cost_estimate(server: FaultServer, tmp_path: Path) -> None:
    cfg = _cfg(server, tmp_path / "c", orders="ab", samples=2, retries=1)
    est = estimate_cost("pairwise", PAIRS, cfg)
    chars = sum(len(m["content"]) for a, b in PAIRS for m in pairwise_messages(
        load_template("pairwise"), load_fewshot("pairwise", "none"), a, b))
    assert est == {"requests": 6, "cached": 0, "to_send": 6, "max_requests_with_reasks": 12,
                   "prompt_tokens_est": math.ceil(2 * chars / 4), "max_completion_tokens": 384,
                   "token_estimate": "characters/4, no tokenizer"}
    server.scripts["chat/completions"] = [
        'say:{"Diversity_Score_Set1": 2, "Diversity_Score_Set2": 4}']
    judge_pairs(PAIRS[:1], cfg)
    assert estimate_cost("pairwise", PAIRS, cfg)["cached"] == 2


def test_batch_file_round_trip(server: FaultServer, tmp_path: Path) -> None:
    cfg = _cfg(server, tmp_path / "cache")
    req = tmp_path / "batch_in.jsonl"
    assert write_batch_requests(str(req), "absolute", SETS, cfg) == 6
    lines = [json.loads(x) for x in req.read_text().splitlines()]
    assert lines[0]["url"] == "/v1/chat/completions" and lines[0]["body"]["model"] == "m"
    results = tmp_path / "batch_out.jsonl"
    with results.open("w") as fh:
        for i, line in enumerate(lines):
            status = 500 if i == 5 else 200
            fh.write(json.dumps({"custom_id": line["custom_id"], "response": {
                "status_code": status, "body": {"choices": [{"message": {
                    "content": '{"score": 3}'}}]}}}) + "\n")
    assert ingest_batch_results(str(results), cfg) == {"stored": 5, "failed": 1}
    server.scripts["chat/completions"] = [SCORE4]
    run = judge_sets(SETS, cfg)
    assert server.total == 1  # only the failed batch line is sent
    assert [it.value for it in run.items] == [3.0, 3.0, 3.5]


def test_api_key_never_written(server: FaultServer, tmp_path: Path) -> None:
    server.scripts["chat/completions"] = [SCORE4]
    cfg = _cfg(server, tmp_path / "cache", api_key="sk-test-SECRET-123")
    run = judge_sets(SETS[:1], cfg)
    assert "SECRET" not in repr(cfg) and "SECRET" not in json.dumps(run.summary())
    for f in (tmp_path / "cache").rglob("*"):
        if f.is_file():
            assert "SECRET" not in f.read_text()


def test_judge_metric_through_score(server: FaultServer, tmp_path: Path) -> None:
    server.scripts["chat/completions"] = [SCORE4]
    r = divmeter.score(SETS[0], "judge", model="openai:m", base_url=server.url, samples=2,
                       max_tokens=64, fewshot="none", cache=str(tmp_path))
    assert r.value == 4.0 and r.details["n_valid"] == 2
    assert r.signature == SIG_ABS.format(t=load_template("absolute").hash, n=2, r=2)
    many = divmeter.score_many(SETS, "judge", model="openai:m", base_url=server.url, samples=2,
                               max_tokens=64, fewshot="none", cache=str(tmp_path))
    assert [m.value for m in many] == [4.0, 4.0, 4.0]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"model": ""}, "`model` of judge is required"),
        ({"samples": 0}, r"`samples` of judge must be an integer >= 1; got 0\."),
        ({"retries": -1}, r"`retries` of judge must be an integer >= 0; got -1\."),
        ({"temperature": 3.0}, r"`temperature` of judge must be a number from 0 to 2; got 3\.0"),
        ({"orders": "ba"}, r"`orders` of judge must be both or ab; got 'ba'\."),
        ({"seed": "x"}, r"`seed` of judge must be an integer or none"),
    ],
)
def test_config_errors(kw: dict, match: str) -> None:
    base = {"model": "openai:m", "base_url": "http://127.0.0.1:9/v1", "cache": None}
    with pytest.raises(InvalidInputError, match=match):
        JudgeConfig(**{**base, **kw}).check()  # type: ignore[arg-type]


def test_template_and_fewshot_errors(tmp_path: Path) -> None:
    bad = tmp_path / "t.txt"
    bad.write_text("Rate this: {{set}}")
    with pytest.raises(InvalidInputError, match=r"'t.txt' for the pairwise task \(chat style\) "
                       r"must contain \{\{set1\}\} and \{\{set2\}\}; missing "
                       r"\{\{set1\}\}, \{\{set2\}\}"):
        load_template("pairwise", str(bad))
    shots = tmp_path / "shots.jsonl"
    shots.write_text('{"set": ["a", "b"], "score": 4}\n{"set": ["a"], "score": 7}\n')
    with pytest.raises(InvalidInputError, match=r"shots.jsonl line 2: field 'score' must be an "
                       r"integer from 1 to 5; got 7\."):
        load_fewshot("absolute", str(shots))
    with pytest.raises(InvalidInputError, match="judge template 'nope.txt' cannot be read"):
        load_template("absolute", "nope.txt")


# --------------------------------------------------------------------------------------------
# the command line


def _pairs_file(tmp_path: Path) -> Path:
    path = tmp_path / "pairs.jsonl"
    with path.open("w") as fh:
        for i, (a, b) in enumerate(PAIRS):
            fh.write(json.dumps({"id": f"p{i}", "context": "daily life", "set1": a, "set2": b,
                                 "label": i % 2}) + "\n")
    return path


def test_cli_judge_writes_what_meta_pairwise_reads(server: FaultServer, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from divmeter.studies.meta.loaders import read_pairs

    server.scripts["chat/completions"] = [
        'say:{"rationale": "Set 2 varies more.", "Diversity_Score_Set1": 2, '
        '"Diversity_Score_Set2": 4}']
    pairs, out = _pairs_file(tmp_path), tmp_path / "labelled.jsonl"
    args = ["judge", str(pairs), "-o", str(out), "--model", "openai:m", "--base-url", server.url,
            "--samples", "2", "--orders", "ab", "--fewshot", "none", "--cache",
            str(tmp_path / "cache"), "--consistency"]
    code, stdout, stderr = run_main(monkeypatch, capsys, *args)
    assert code == 0, stderr
    assert "judge: 3 pairs x 1 orders x 2 samples = 6 requests (0 cached, 6 to send; at most " \
           "18 with re-asks); ~" in stderr
    assert "prompt tokens (estimated as characters / 4, no tokenizer), at most 1,536 " \
           "completion tokens." in stderr
    summary = json.loads(stdout)
    # 6 answers + the GET /models check before sending
    assert summary["client"]["requests"] == 7 and summary["valid_samples"] == 6
    assert summary["written"]["rows"] == 3 and summary["written"]["nulls"] == 0
    # reference labels 0, 1, 0; the judge says 1 (set2) everywhere -> 1/3 at n = 1 and 2
    assert summary["accuracy_by_n"] == {"1": {"accuracy": 1 / 3, "n": 3},
                                        "2": {"accuracy": 1 / 3, "n": 3}}
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["label"] for r in rows] == [1, 1, 1]
    assert [r["reference_label"] for r in rows] == [0, 1, 0]
    assert rows[0]["id"] == "p0" and rows[0]["judge"]["samples"][0]["rationale"] == \
        "Set 2 varies more."
    got = read_pairs(out)  # `divmeter meta pairwise`'s reader takes the output as it is
    assert got.labels.tolist() == [1.0, 1.0, 1.0]
    assert got.rating1.tolist() == [2.0, 2.0, 2.0] and got.rating2.tolist() == [4.0, 4.0, 4.0]
    code, stdout, stderr = run_main(monkeypatch, capsys, "meta", "pairwise", str(out), "-m",
                                 "distinct-n", "--format", "json", "--resamples", "100",
                                 "--min-rating-diff", "0.5")
    assert code == 0, stderr
    res = json.loads(stdout)["distinct-n"]
    assert (res["n"], res["n_filtered"], res["min_rating_diff"]) == (3, 0, 0.5)
    # rerun: every answer from the cache, the server sees nothing
    before = server.total
    code, stdout, _ = run_main(monkeypatch, capsys, *args)
    assert json.loads(stdout)["client"]["requests"] == 0 and server.total == before
    # resume: the labelled rows are kept, nothing is judged again
    code, stdout, stderr = run_main(monkeypatch, capsys, *args, "--resume")
    assert "3 items already in" in stderr and json.loads(stdout)["items"] == 0
    assert len(out.read_text().splitlines()) == 3


def test_cli_judge_nulls_go_to_their_own_file(server: FaultServer, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    server.scripts["chat/completions"] = ["say:Both sets look fine to me."]
    pairs, out = _pairs_file(tmp_path), tmp_path / "labelled.jsonl"
    code, stdout, stderr = run_main(monkeypatch, capsys, "judge", str(pairs), "-o", str(out),
                                 "--model", "m", "--base-url", server.url, "--samples", "1",
                                 "--orders", "ab", "--retries", "0", "--cache", "none", "-q")
    # no answer gave a rating: the run fails, naming the rate, the model and what to try
    assert code == 1
    assert stderr.startswith("divmeter: error: judge: only 0% of the answers gave a valid rating "
                             "(0 of 3) with m in the text answer mode, below --min-valid 0.8; "
                             "try --answer logprobs")
    summary = json.loads(stdout)
    assert summary["valid_rate"] == 0.0 and summary["answer"] == "text"
    assert summary["written"]["rows"] == 0 and summary["written"]["nulls"] == 3
    assert summary["unparseable_answers"] == {"no_score": 3}
    assert out.read_text() == ""
    nulls = [json.loads(x) for x in (tmp_path / "labelled.nulls.jsonl").read_text().splitlines()]
    assert [n["label"] for n in nulls] == [None, None, None]
    assert all(n["reason"].startswith("no valid rating in 1 samples") for n in nulls)


def test_cli_judge_dry_run_and_errors(server: FaultServer, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    pairs, out = _pairs_file(tmp_path), tmp_path / "o.jsonl"
    code, stdout, stderr = run_main(monkeypatch, capsys, "judge", str(pairs), "-o", str(out),
                                 "--model", "m", "--base-url", server.url, "--dry-run")
    assert code == 0 and "= 30 requests" in stderr and server.total == 0 and not out.exists()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"set1": ["a"], "set2": "b"}\n')
    code, _, stderr = run_main(monkeypatch, capsys, "judge", str(bad), "-o", str(out), "--model",
                            "m", "--base-url", server.url)
    assert code == 2
    assert stderr.strip() == ("divmeter: error: bad.jsonl line 1: field 'set2' must be a list "
                              "of strings (or an object with 'responses'); got str.")
    code, _, stderr = run_main(monkeypatch, capsys, "judge", str(pairs), "-o", str(out), "--model",
                            "m", "--base-url", server.url, "--samples", "0")
    assert code == 2 and "--samples must be an integer from 1 to 100; got 0." in stderr


def test_cli_score_with_the_judge_metric(server: FaultServer, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    server.scripts["chat/completions"] = [SCORE4]
    sets = tmp_path / "sets.jsonl"
    sets.write_text("".join(json.dumps({"set_id": f"s{i}", "responses": s}) + "\n"
                            for i, s in enumerate([*SETS, []])))
    out = tmp_path / "scores.jsonl"
    metric = (f"judge:model=openai:m,base_url={server.url},samples=1,fewshot=none,"
              f"max_tokens=64,cache={tmp_path / 'cache'}")
    code, _, err = run_main(monkeypatch, capsys, "score", str(sets), "-m", metric, "-o", str(out))
    assert code == 0, err
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    col = next(k for k in rows[0] if k.startswith("judge"))
    assert [r[col] for r in rows] == [4.0, 4.0, 4.0, None]
    assert rows[3]["reasons"][col] == "empty set"
    assert server.total == 3
    code, out_list, _ = run_main(monkeypatch, capsys, "list", "--family", "judge", "--format",
                              "json")
    spec = json.loads(out_list)[0]
    assert (spec["name"], spec["extra"], spec["bounds"]) == ("judge", "judge", [1, 5])


def test_cli_judge_absolute_task(server: FaultServer, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    server.scripts["chat/completions"] = [SCORE4]
    sets = tmp_path / "sets.jsonl"
    sets.write_text("".join(json.dumps({"set_id": f"s{i}", "prompt": "daily life",
                                        "responses": s}) + "\n"
                            for i, s in enumerate([*SETS, []])))
    out = tmp_path / "rated.jsonl"
    code, stdout, stderr = run_main(monkeypatch, capsys, "judge", str(sets), "-o", str(out),
                                 "--task", "absolute", "--model", "m", "--base-url", server.url,
                                 "--samples", "2", "--fewshot", "none", "--cache", "none")
    assert code == 0, stderr
    assert "judge: 4 sets x 2 samples = 6 requests" in stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    # one place for nulls in every task: rated sets in the output, the others in the nulls file
    assert [r["judge"] for r in rows] == [4.0, 4.0, 4.0]
    assert [r["set_index"] for r in rows] == [0, 1, 2]
    assert rows[0]["judge_detail"]["n_valid"] == 2
    nulls = [json.loads(x) for x in (tmp_path / "rated.nulls.jsonl").read_text().splitlines()]
    assert [(n["set_id"], n["judge"], n["reason"]) for n in nulls] == [("s3", None, "empty set")]
    summary = json.loads(stdout)
    assert summary["written"] == {"output": str(out), "rows": 3, "nulls": 1,
                                  "nulls_file": str(tmp_path / "rated.nulls.jsonl")}
    assert summary["valid_rate"] == 1.0
    assert "judge: 6 of 6 answers gave a valid rating (100.0%, text answers); 3 items" in stderr
    # resume: the rated sets are kept, the null one is judged again (and is null again)
    before = server.total
    code, stdout, stderr = run_main(monkeypatch, capsys, "judge", str(sets), "-o", str(out),
                                 "--task", "absolute", "--model", "m", "--base-url", server.url,
                                 "--samples", "2", "--fewshot", "none", "--cache", "none",
                                 "--resume")
    assert code == 0, stderr
    assert "3 items already in" in stderr and json.loads(stdout)["items"] == 1
    assert server.total == before  # the empty set needs no request (and no /models check)
    assert len(out.read_text().splitlines()) == 3
