"""Generation harness without a model: decoding settings, sweeps (Tevet & Berant 2021, decTest,
section 6.3 / appendix B: temperature in [0.2, 1.2], top-p, top-k), prompt files, seeds, the
seeded sampler, and streaming/resume/fault handling over HTTP against the loopback fault server
(a real HTTP server; its answers are scripted text, no model)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from divmeter.core.errors import InvalidInputError
from divmeter.studies.generation import (
    Decoding,
    derive_seed,
    get_generator,
    run_signature,
    sample_seeds,
)
from divmeter.studies.generation.sweep import Prompt, Sweep, parse_sweep, read_prompts, run_sweep

sys.path.insert(0, str(Path(__file__).parent))
from faultserver import FaultServer  # noqa: E402

# ------------------------------------------------------------------------------------------------
# decoding settings and sweeps


@pytest.mark.parametrize(
    ("kw", "sig"),
    [
        ({}, "temp:1|top_p:1|top_k:0|max_tokens:64|stop:none"),
        ({"temperature": 0.25, "max_tokens": 16},
         "temp:0.25|top_p:1|top_k:0|max_tokens:16|stop:none"),
        ({"temperature": 0, "top_p": 0.9, "top_k": 40},
         "temp:0|top_p:0.9|top_k:40|max_tokens:64|stop:none"),
        ({"stop": ("\n", ".")}, "temp:1|top_p:1|top_k:0|max_tokens:64|stop:'\\n','.'"),
    ],
)
def test_decoding_signature(kw, sig):
    """Every decoding setting that changes samples is in the signature."""
    assert Decoding(**kw).signature() == sig


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"temperature": -0.1}, r"`temperature` must be a number >= 0; got -0.1"),
        ({"top_p": 0}, r"`top_p` must be a number in \(0, 1\]; got 0"),
        ({"top_p": 1.5}, r"`top_p` must be a number in \(0, 1\]; got 1.5"),
        ({"top_k": -1}, r"`top_k` must be an integer >= 0 \(0 = off\); got -1"),
        ({"top_k": 2.5}, r"`top_k` must be an integer"),
        ({"max_tokens": 0}, r"`max_tokens` must be an integer >= 1; got 0"),
        ({"stop": "\n"}, r"`stop` must be a list of strings; got a single str"),
        ({"stop": ("",)}, r"`stop` must hold non-empty strings"),
    ],
)
def test_decoding_errors(kw, match):
    with pytest.raises(InvalidInputError, match=match):
        Decoding(**kw)


@pytest.mark.parametrize(
    ("spec", "param", "values"),
    [
        ("temperature=0.2:1.2:0.25", "temperature", (0.2, 0.45, 0.7, 0.95, 1.2)),
        ("temperature=0.2:1.2:0.2", "temperature", (0.2, 0.4, 0.6, 0.8, 1.0, 1.2)),
        ("temperature=0.5:0.5:1", "temperature", (0.5,)),  # a one-value range
        ("temperature=0:1:0.3", "temperature", (0.0, 0.3, 0.6, 0.9)),  # HI not landed on
        ("top_p=0.1:1:0.3", "top_p", (0.1, 0.4, 0.7, 1.0)),
        ("top-p=0.5,1", "top_p", (0.5, 1.0)),
        ("top_k=1,10,100", "top_k", (1, 10, 100)),
        ("top_k=10:30:10", "top_k", (10, 20, 30)),
    ],
)
def test_parse_sweep(spec, param, values):
    sw = parse_sweep(spec)
    assert sw.param == param
    assert sw.values == values
    assert all(type(v) is type(values[0]) for v in sw.values)


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("temperature=1.2:0.2:0.2", r"is an empty range: expected LO <= HI and STEP > 0; "
                                    r"got LO=1.2, HI=0.2, STEP=0.2"),
        ("temperature=0.2:1.2:0", r"is an empty range: .*STEP=0"),
        ("temperature=0.2:1.2:-0.1", r"is an empty range"),
        ("top_k=", r"is an empty range: no values given"),
        ("temperature", r"--sweep must look like temperature=LO:HI:STEP"),
        ("beam=1:2:1", r"--sweep parameter must be one of temperature, top_p, top_k; got 'beam'"),
        ("temperature=a:1:0.1", r"'a' is not a number"),
        ("temperature=0.1:1", r"--sweep range must be LO:HI:STEP \(three numbers\); got '0.1:1'"),
        ("top_k=1.5,2", r"top_k values must be integers; got 1.5"),
        ("top_p=0:1:0.5", r"`top_p` must be a number in \(0, 1\]; got 0"),
        ("temperature=1,1", r"repeats a value"),
    ],
)
def test_parse_sweep_errors(spec, match):
    with pytest.raises(InvalidInputError, match=match):
        parse_sweep(spec)


def test_sweep_key():
    assert Sweep("temperature", (0.45,)).key(0.45) == "temperature=0.45"
    assert Sweep("top_k", (10,)).key(10) == "top_k=10"


# ------------------------------------------------------------------------------------------------
# prompt files


def test_read_prompts(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"id": "a", "prompt": "One"}\n\n{"context": "Two"}\n"Three"\n'
                 '{"set_id": 7, "text": "Four"}\n', encoding="utf-8")
    assert read_prompts(f) == [Prompt("a", "One"), Prompt("p1", "Two"), Prompt("p2", "Three"),
                               Prompt("7", "Four")]
    t = tmp_path / "p.txt"
    t.write_text("first line\n\nsecond {not json}\n", encoding="utf-8")
    assert read_prompts(t) == [Prompt("p0", "first line"), Prompt("p1", "second {not json}")]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"prompt": "ok"}\n{"prompt": "x"\n', r"p.jsonl line 2: invalid JSON"),
        ('{"prompt": "ok"}\n\n{"question": "x"}\n',
         r"p.jsonl line 3: expected a field 'prompt' \(or context/text\); got fields "
         r"\['question'\]"),
        ('{"prompt": 3}\n', r"p.jsonl line 1: field 'prompt' must be a string; got int"),
        ('[1, 2]\n', r"p.jsonl line 1: each line must be a JSON object with 'prompt' or a JSON "
                     r"string; got list"),
        ('{"id": [1], "prompt": "a"}\n', r"line 1: field 'id' must be a string or an integer"),
        ('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n',
         r"prompt id 'a' appears twice"),
        ("\n\n", r"p.jsonl: no prompts found"),
    ],
)
def test_read_prompts_errors(tmp_path, text, match):
    f = tmp_path / "p.jsonl"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=match):
        read_prompts(f)


# ------------------------------------------------------------------------------------------------
# seeds and the sampler


def test_seeds_are_stable_and_distinct():
    """Per-sample seeds depend on (seed, prompt or prompt seed, index) only."""
    s = sample_seeds(0, "Not the hacking", 5)
    assert s == sample_seeds(0, "Not the hacking", 5)
    assert s[:3] == sample_seeds(0, "Not the hacking", 3)  # independent of n
    assert len(set(s)) == 5
    assert s != sample_seeds(1, "Not the hacking", 5)
    assert sample_seeds(0, "x", 2, prompt_seed=7) == sample_seeds(0, "y", 2, prompt_seed=7)
    assert all(0 <= v < 2**31 for v in s)
    assert derive_seed(0, "a prompt", 3) == 848582083


def test_run_signature():
    class G:
        signature = ("gen|model:gemma-3-270m@a5fd3b62230a|backend:transformers|chat:no"
                     "|dtype:float32|v:0.1.0")

    assert run_signature(G(), Decoding(temperature=0.45, max_tokens=16), 5, 0) == (
        "gen|model:gemma-3-270m@a5fd3b62230a|backend:transformers|chat:no|dtype:float32"
        "|temp:0.45|top_p:1|top_k:0|max_tokens:16|stop:none|n:5|seed:0|v:0.1.0")


torch = pytest.importorskip("torch")


def _sampler_pick(logits, dec, seeds):
    from divmeter.studies.generation.local import pick_tokens, uniforms

    u = torch.tensor([uniforms(s, 1)[0] for s in seeds], dtype=torch.float64)
    picks = pick_tokens(torch, torch.tensor(logits, dtype=torch.float32), dec, u)
    assert picks.shape == (len(seeds),)  # one token per row
    return picks.tolist()


@pytest.mark.parametrize(
    ("dec", "allowed"),
    [
        (Decoding(temperature=0), {0}),  # greedy
        (Decoding(top_k=1), {0}),
        (Decoding(top_k=2), {0, 1}),
        (Decoding(top_p=0.5), {0}),  # p(0) = 0.5 already reaches 0.5
        (Decoding(top_p=0.51), {0, 1}),
        (Decoding(top_p=0.8), {0, 1}),  # 0.5 + 0.3 = 0.8
        (Decoding(top_p=0.81), {0, 1, 2}),
    ],
)
def test_sampler_truncation(dec, allowed):
    """Temperature, top-k, top-p (smallest set of most probable tokens whose mass reaches p):
    probabilities [0.5, 0.3, 0.2] (logits = their logs); 200 seeded rows never leave the set
    and (when sampling) reach every member."""
    import math

    logits = [[math.log(0.5), math.log(0.3), math.log(0.2)]] * 200
    picks = _sampler_pick(logits, dec, list(range(200)))
    assert set(picks) == allowed


def test_sampler_inverse_cdf():
    """Each row takes the first token whose cumulative probability exceeds its uniform number u
    (probabilities [0.25, 0.25, 0.5]); u is the first SplitMix64 output of the sample's seed."""
    import math

    from divmeter.studies.generation.local import uniforms

    seeds = [3, 11, 12345, 2**31 - 1]
    picks = _sampler_pick([[math.log(0.25), math.log(0.25), math.log(0.5)]] * 4, Decoding(),
                          seeds)
    for s, got in zip(seeds, picks, strict=True):
        u = float(uniforms(s, 1)[0])
        assert got == (0 if u < 0.25 else 1 if u < 0.5 else 2)


def test_uniforms_are_splitmix64():
    """The t-th number of a seed is SplitMix64's t-th output (reference values from the
    algorithm's definition, computed here with Python integers), top 53 bits over 2**53."""
    from divmeter.studies.generation.local import uniforms

    def splitmix(seed, t):
        z = (seed + (t + 1) * 0x9E3779B97F4A7C15) % 2**64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2**64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2**64
        return ((z ^ (z >> 31)) >> 11) / 2**53

    for seed in (0, 1, 848582083, 2**31 - 1):
        got = uniforms(seed, 5)
        assert [float(x) for x in got] == [splitmix(seed, t) for t in range(5)]
        assert ((got >= 0) & (got < 1)).all()
    assert list(uniforms(7, 3)) == list(uniforms(7, 5)[:3])  # a longer run extends it


# ------------------------------------------------------------------------------------------------
# HTTP backend against the fault server: streaming, resume, failures


@pytest.fixture
def fault():
    servers = []

    def start(scripts):
        s = FaultServer(scripts)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.close()


def _gen(url, **kw):
    kw.setdefault("cache", None)
    return get_generator("openai:fault-model", base_url=url, backoff=0.01, backoff_max=0.05,
                         **kw)


PROMPTS = [Prompt(f"q{i}", f"prompt number {i}") for i in range(5)]


def _rows(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def test_http_sweep_rows(fault, tmp_path):
    """One row per (prompt, value), in order, with label, seeds sent as the request seeds and
    the provenance signature."""
    srv = fault({})
    gen = _gen(srv.url)
    rep = run_sweep(gen, PROMPTS[:2], 3, parse_sweep("temperature=0.5,1"), tmp_path / "o.jsonl",
                    decoding=Decoding(max_tokens=8), seed=4)
    rows = _rows(tmp_path / "o.jsonl")
    assert [r["set_id"] for r in rows] == ["q0@temperature=0.5", "q1@temperature=0.5",
                                           "q0@temperature=1", "q1@temperature=1"]
    assert [r["label"] for r in rows] == [0.5, 0.5, 1.0, 1.0]
    assert {r["label_name"] for r in rows} == {"temperature"}
    for r in rows:  # the fault server echoes the seed it was sent
        assert r["responses"] == [f"answer {s}" for s in r["seeds"]]
    assert rows[0]["seeds"] == sample_seeds(4, "", 3, prompt_seed=derive_seed(
        "prompt", 4, "q0", "temperature=0.5"))
    assert rows[0]["provenance"]["signature"] == (
        "gen|model:fault-model|backend:openai|chat:no|temp:0.5|top_p:1|top_k:0|max_tokens:8"
        "|stop:none|n:3|seed:4|v:0.1.0")
    assert (rep.planned, rep.written, rep.kept, rep.failed) == (4, 4, 0, 0)
    assert rep.stats["requests"] == 1 + 12  # GET /models, then one POST per sample


def test_http_faults_every_row_once(fault, tmp_path):
    """429, 500, a dropped connection and a malformed body before success: every row present
    once, the retries counted by kind."""
    srv = fault({"completions": ["429", "500", "drop", "garbage", "ok"]})
    gen = _gen(srv.url, max_attempts=6, concurrency=4)
    rep = run_sweep(gen, PROMPTS, 2, parse_sweep("temperature=0.7"), tmp_path / "o.jsonl")
    rows = _rows(tmp_path / "o.jsonl")
    assert [r["set_id"] for r in rows] == [f"q{i}@temperature=0.7" for i in range(5)]
    assert all(len(r["responses"]) == 2 for r in rows)
    assert rep.failed == 0
    assert rep.stats["retries"] == {"429": 10, "5xx": 10, "connection": 10, "malformed": 10}
    assert rep.stats["requests"] == 1 + 50


def test_http_failed_sets_are_left_out_and_counted(fault, tmp_path):
    """A sample that fails for good: its set is not written, failures are counted by kind, and
    a rerun (the server fixed) writes exactly the missing sets."""
    srv = fault({"completions": ["500"]})
    out = tmp_path / "o.jsonl"
    rep = run_sweep(_gen(srv.url, max_attempts=2), PROMPTS[:3], 2, parse_sweep("temperature=1"),
                    out)
    assert (rep.written, rep.failed, rep.failures) == (0, 3, {"5xx": 6})
    assert out.read_text() == ""
    srv.scripts["completions"] = ["ok"]
    rep2 = run_sweep(_gen(srv.url, max_attempts=2), PROMPTS[:3], 2,
                     parse_sweep("temperature=1"), out)
    assert (rep2.written, rep2.kept, rep2.failed) == (3, 0, 0)
    assert len(_rows(out)) == 3


class _Stop(Exception):
    pass


@pytest.mark.parametrize("k", [1, 4, 7])
def test_http_resume_equals_uninterrupted(fault, tmp_path, k):
    """Interrupt after k rows (and leave a cut-off line behind), rerun: the file equals an
    uninterrupted run's, byte for byte; no row duplicated or lost."""
    srv = fault({})
    sweep = parse_sweep("temperature=0.2:1.2:0.5")
    full = tmp_path / "full.jsonl"
    run_sweep(_gen(srv.url), PROMPTS, 2, sweep, full, seed=1, chunk=2)
    part = tmp_path / "part.jsonl"
    seen = []

    def stop_after(row):
        seen.append(row["set_id"])
        if len(seen) == k:
            raise _Stop

    with pytest.raises(_Stop):
        run_sweep(_gen(srv.url), PROMPTS, 2, sweep, part, seed=1, chunk=2, on_row=stop_after)
    assert len(_rows(part)) == k
    with part.open("a", encoding="utf-8") as fh:
        fh.write('{"set_id": "q3@temperature=0.7", "respo')  # a write cut off mid-line
    rep = run_sweep(_gen(srv.url), PROMPTS, 2, sweep, part, seed=1, chunk=2)
    assert (rep.kept, rep.written) == (k, 15 - k)
    assert part.read_bytes() == full.read_bytes()
    ids = [r["set_id"] for r in _rows(part)]
    assert len(ids) == len(set(ids)) == 15


def test_resume_refuses_other_settings(fault, tmp_path):
    srv = fault({})
    out = tmp_path / "o.jsonl"
    run_sweep(_gen(srv.url), PROMPTS[:1], 2, parse_sweep("temperature=1"), out, seed=0)
    with pytest.raises(InvalidInputError, match=r"o.jsonl line 1: written with other settings "
                       r"\(gen\|.*\|seed:0\|v:0.1.0\); this run is gen\|.*\|seed:1\|v:0.1.0"):
        run_sweep(_gen(srv.url), PROMPTS[:1], 2, parse_sweep("temperature=1"), out, seed=1)
    with pytest.raises(InvalidInputError, match=r"set 'q0@temperature=1' is not part of this run"):
        run_sweep(_gen(srv.url), PROMPTS[:1], 2, parse_sweep("temperature=0.5"), out)
    rep = run_sweep(_gen(srv.url), PROMPTS[:1], 2, parse_sweep("temperature=1"), out, seed=1,
                    overwrite=True)
    assert (rep.kept, rep.written) == (0, 1)


def test_http_chat_endpoint(fault, tmp_path):
    srv = fault({})
    gen = _gen(srv.url, chat=True)
    out = gen.generate(["hello"], 2, seed=3)
    assert out == [[f"reply {s}" for s in sample_seeds(3, "hello", 2)]]
    assert gen.signature == "gen|model:fault-model|backend:openai|chat:yes|v:0.1.0"
    assert gen.provenance["endpoint"] == "chat/completions"


def test_http_unknown_model(fault):
    srv = fault({})
    with pytest.raises(InvalidInputError, match=r"does not serve model 'nope'; it serves: "
                                                r"fault-model\."):
        get_generator("openai:nope", base_url=srv.url)


def test_http_generate_raises_on_failure(fault):
    from divmeter.backends.http import ServerError

    srv = fault({"completions": ["400"]})
    with pytest.raises(ServerError, match=r": 2 of 2 samples failed \(\{'4xx': 2\}\)\.$"):
        _gen(srv.url).generate(["x"], 2)


# ------------------------------------------------------------------------------------------------
# CLI: bad input is one line and exit code 2


def _cli(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-c", "from divmeter.apps.cli import main; main()", *args],
        capture_output=True, text=True, cwd=cwd, timeout=300)


def test_cli_bad_inputs(tmp_path, fault):
    good = tmp_path / "p.jsonl"
    good.write_text('{"prompt": "a"}\n', encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "a"}\n{"prompt": "b",}\n', encoding="utf-8")
    out = str(tmp_path / "o.jsonl")
    srv = fault({})
    cases = [
        (["generate", str(bad), "-o", out], r"bad.jsonl line 2: invalid JSON"),
        (["generate", str(good), "-o", out, "--sweep", "temperature=1.2:0.2:0.2"],
         r"is an empty range: expected LO <= HI and STEP > 0; got LO=1.2, HI=0.2, STEP=0.2"),
        (["generate", str(good), "-o", out, "--model", "openai:m", "--base-url",
          "http://127.0.0.1:9/v1"], r"http://127.0.0.1:9/v1: .*Is the server running"),
        (["generate", str(good), "-o", out, "--model", "no-such-model-xyz"],
         r"model 'no-such-model-xyz' is not an alias \(gemma-3-270m, smollm2-135m-instruct\), "
         r"an existing path"),
        (["generate", str(good), "-o", out, "--model", "openai:nope", "--base-url", srv.url],
         r"does not serve model 'nope'"),
        (["generate", str(good), "-o", out, "--base-url", srv.url],
         r"--base-url is for server models, named openai:NAME"),
        (["generate", str(tmp_path / "missing.jsonl"), "-o", out],
         r"No such file or directory: .*missing.jsonl"),
        (["generate", str(good), "-o", out, "--top-p", "2"], r"`top_p` must be a number in"),
    ]
    for args, match in cases:
        res = _cli(*args)
        assert res.returncode == 2, (args, res.stderr)
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1, res.stderr
        assert lines[0].startswith("divmeter: error: ")
        assert re.search(match, lines[0]), (match, lines[0])


def test_cli_http_then_meta_dectest(tmp_path, fault):
    """`divmeter generate` over HTTP writes a file `divmeter meta dectest` reads directly."""
    srv = fault({})
    p = tmp_path / "p.jsonl"
    p.write_text("".join(json.dumps({"id": f"c{i}", "prompt": f"ctx {i}"}) + "\n"
                         for i in range(3)), encoding="utf-8")
    out = tmp_path / "o.jsonl"
    res = _cli("generate", str(p), "-o", str(out), "--model", "openai:fault-model",
               "--base-url", srv.url, "-n", "3", "--sweep", "top_k=1,5", "--quiet")
    assert res.returncode == 0, res.stderr
    rows = _rows(out)
    assert [r["label"] for r in rows] == [1, 1, 1, 5, 5, 5]
    assert rows[0]["provenance"]["decoding"]["top_k"] == 1
    res = _cli("meta", "dectest", str(out), "-m", "distinct-n", "--format", "json",
               "--no-plots", "--quiet")
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)["distinct-n"]
    assert got["n"] == 6


def test_generate_response_sets(fault):
    """The library call: one ResponseSet per prompt, label = temperature, seeds and provenance
    (with the full signature) in the metadata; repeated prompts get different samples."""
    from divmeter.studies.generation import generate

    srv = fault({})
    gen = _gen(srv.url)
    sets = generate(["same", "same"], 2, Decoding(temperature=0.3, max_tokens=5), 9, model=gen,
                    prompt_ids=["x", "y"])
    assert [s.set_id for s in sets] == ["x", "y"]
    assert [s.label for s in sets] == [0.3, 0.3]
    sx = sample_seeds(9, "same", 2, prompt_seed=derive_seed("prompt", 9, "x"))
    assert sets[0].metadata["seeds"] == sx
    assert sets[0].responses == [f"answer {s}" for s in sx]
    assert sets[0].responses != sets[1].responses
    assert sets[0].metadata["provenance"]["signature"] == (
        "gen|model:fault-model|backend:openai|chat:no|temp:0.3|top_p:1|top_k:0|max_tokens:5"
        "|stop:none|n:2|seed:9|v:0.1.0")
    with pytest.raises(InvalidInputError, match=r"`prompts` must be a list of strings; got a "
                                                r"single str"):
        generate("same", 2, model=gen)
    with pytest.raises(InvalidInputError, match=r"`n` \(samples per prompt\) must be an integer "
                                                r">= 1; got 0"):
        generate(["a"], 0, model=gen)
    with pytest.raises(InvalidInputError, match=r"`prompt_ids` must have one id per prompt"):
        generate(["a"], 1, model=gen, prompt_ids=["a", "b"])


def test_sweep_values_must_name_distinct_sets(fault, tmp_path):
    srv = fault({})
    with pytest.raises(InvalidInputError, match=r"do not give distinct set ids"):
        run_sweep(_gen(srv.url), PROMPTS[:1], 1, parse_sweep("temperature=0.1000001,0.1000002"),
                  tmp_path / "o.jsonl")
