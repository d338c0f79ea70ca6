"""Issue 34 (reliability, round 4): the cases of a hostile sweep of the newer features that
each failed on 0fca95d: interrupts of ``-j`` runs, uncapped counts, markup and control
characters reaching the terminal, costs, internal errors, wrong numbers at the extremes. The
classes they belong to are swept in ``test_hostile_sweep.py``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from divmeter.inputs.data import ResponseSet, read_records, write_sets

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "stories.jsonl"
CLI = [sys.executable, "-c", "from divmeter.apps.cli import main; main()"]


def _many_sets(path: Path, n_sets: int, n_resp: int) -> list[ResponseSet]:
    import random

    rng = random.Random(34)
    words = [f"w{i}" for i in range(60)]
    sets = [ResponseSet(f"s{i}", [" ".join(rng.choices(words, k=12)) for _ in range(n_resp)])
            for i in range(n_sets)]
    write_sets(sets, path)
    return sets


# ------------------------------------------------------------------------------------------------
# item 4: two Ctrl-C on a -j run end it (exit 130), never hang it


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="POSIX signals")
def test_two_interrupts_of_a_worker_run_never_hang(tmp_path: Path) -> None:
    """Two SIGINTs 0.2-0.5 s apart to the whole process group (what Ctrl-C twice does) while
    two workers score: exit 130 with the one line, no traceback, within the deadline (it hung
    in 7 of 8 trials on 0fca95d: the parent in wait, a worker on a futex); --resume then
    finishes the file with the records of a run in one process."""
    src = tmp_path / "many.jsonl"
    sets = _many_sets(src, 300, 30)
    metrics = ["-m", "homogenization", "-m", "distinct-n"]
    out = tmp_path / "out.jsonl"
    for trial, gap in enumerate((0.2, 0.5)):
        out.unlink(missing_ok=True)
        proc = subprocess.Popen(
            [*CLI, "score", str(src), *metrics, "-j", "2", "-o", str(out), "-q"],
            stderr=subprocess.PIPE, start_new_session=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            while not (out.exists() and out.stat().st_size > 0):
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.02)
            os.killpg(proc.pid, signal.SIGINT)
            time.sleep(gap)
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise AssertionError(f"trial {trial}: still running 90 s after two SIGINTs") from None
        text = err.decode()
        assert proc.returncode == 130, (trial, proc.returncode, text[-2000:])
        assert "Traceback" not in text, text[-2000:]
        assert text.endswith("divmeter: interrupted (what was written so far is kept).\n")
    again = subprocess.run([*CLI, "score", str(src), *metrics, "-j", "2", "-o", str(out),
                            "--resume", "-q"], capture_output=True, timeout=600)
    assert again.returncode == 0, again.stderr.decode()
    from divmeter.engine.batch import score_sets

    got = list(read_records(out))
    assert [{k: v for k, v in r.items() if k != "signatures"} for r in got] == list(
        score_sets(sets, ["homogenization", "distinct-n"]))
    assert all(r["signatures"] == got[0]["signatures"] for r in got)


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        kids += [int(x) for x in (task / "children").read_text().split()]
    return kids


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="Linux /proc")
def test_a_killed_worker_is_said_in_words(tmp_path: Path) -> None:
    """A -j worker killed by the system (SIGKILL, as the OOM killer does): exit 2 and one line
    that says what happened and what to do, not 'internal error: BrokenProcessPool ... please
    report it'."""
    src = tmp_path / "many.jsonl"
    _many_sets(src, 300, 30)
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([*CLI, "score", str(src), "-m", "homogenization", "-j", "2", "-o",
                             str(out), "-q"], stderr=subprocess.PIPE)
    try:
        while not (out.exists() and out.stat().st_size > 0):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
        workers = [k for k in _children(proc.pid)
                   if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes()]
        assert workers
        os.kill(workers[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = err.decode()
    assert proc.returncode == 2, text
    assert text.startswith("divmeter: error: a worker process of -j died"), text
    assert "internal error" not in text and "Traceback" not in text
    assert "--resume" in text


# ------------------------------------------------------------------------------------------------
# item 7: each metric's cost is its own; the partition metrics announce theirs


@pytest.mark.parametrize("metric", ["geo-mean-std", "span-centroid", "convex-hull-volume",
                                    "binned-entropy"])
def test_linear_geometry_is_not_refused_at_30000_rows(metric: str) -> None:
    """These measures need no n x n matrix: 30,000 vectors under the default 4 GiB limit are
    scored (refused on 0fca95d: every metric without its own estimate was judged by 4 x 8 n^2
    bytes, 28.8 GB here), and above GRAM_MAX they run in linear memory."""
    import numpy as np

    import divmeter
    from divmeter.core import memory

    X = np.random.default_rng(34).normal(size=(30_000, 6))
    r = divmeter.score(X, metric)
    assert r.value is not None and np.isfinite(r.value), r.reason
    cost = divmeter.get_metric(metric).plan().cost(30_000)
    assert cost.needed < 2**30 and "vectors" in cost.what
    assert not hasattr(memory, "ESTIMATORS")  # no side table keyed by metric names


@pytest.mark.parametrize("metric", ["span-centroid", "convex-hull-volume", "binned-entropy"])
def test_the_linear_route_gives_the_gram_route_value(metric: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    import divmeter
    from divmeter.metrics import geometry

    X = np.random.default_rng(7).normal(size=(400, 9)) * np.linspace(4, 1, 9)
    gram = divmeter.score(X, metric).value
    monkeypatch.setattr(geometry, "GRAM_MAX", 10)
    assert divmeter.score(X, metric).value == pytest.approx(gram, rel=1e-9)


def test_each_geometry_measure_declares_its_own_cost() -> None:
    import divmeter
    from divmeter.core import memory
    from divmeter.metrics.geometry import MEASURES

    for name, m in MEASURES.items():
        needed = divmeter.get_metric(name).plan().cost(1000).needed
        assert needed == (m.squares * 8 * 1000**2 if m.squares else 8 * 1000 * memory.EMBED_DIM)
    assert not hasattr(memory, "ESTIMATORS")  # declared with the metric, not in a side table


def test_partition_metrics_announce_their_quadratic_cost() -> None:
    """distinct-k on 10,000 responses: one note before the work (0fca95d printed nothing for
    minutes), with the comparisons and a rough time of about ten minutes."""
    import divmeter
    from divmeter.core import memory

    texts = [f"response number {i}" for i in range(10_000)]
    lines: list[str] = []
    with memory.reporting(lines.append), memory.working_on("set 'big' (row 0)"):
        memory.plan(divmeter.get_metric("distinct-k").plan().cost(10_000, texts))
    assert len(lines) == 1, lines
    assert lines[0].startswith("set 'big' (row 0): distinct-k (equivalence=embedding) on "
                               "10,000 responses: 49,995,000 pairs")
    assert "min" in lines[0] and "cheaper: score a random sample" in lines[0]
    for metric in ("novelty-utility", "semantic-entropy"):
        assert divmeter.get_metric(metric).plan().cost(10_000).pairs == 49_995_000


def test_partition_progress_counts_comparisons() -> None:
    from divmeter.core import memory
    from divmeter.metrics.partition import CallableEquivalence, partition_many

    seen: list[tuple[str, int, int | None]] = []
    steps = memory.Steps("distinct-k", lambda *a: seen.append(a), every=0)
    steps.stage("comparisons (at most)", 10)
    parts = partition_many([["a1", "b1", "a2", "c1", "b2"]],
                           CallableEquivalence(lambda a, b: a[0] == b[0]), comparisons=False,
                           steps=steps)
    assert parts[0].classes == ((0, 2), (1, 4), (3,)) and parts[0].comparisons == ()
    assert [s[1] for s in seen[1:]] == list(range(1, 7))  # 6 comparisons, one per round


@pytest.mark.embed
def test_comparisons_only_on_request() -> None:
    import divmeter

    texts = ["The cat sat.", "The cat sat.", "Stocks fell sharply today.", "Rain again."]
    plain = divmeter.score(texts, "distinct-k")
    full = divmeter.score(texts, "distinct-k", comparisons=True)
    assert "comparisons" not in plain.details and len(full.details["comparisons"]) >= 3
    assert (plain.value, plain.signature) == (full.value, full.signature)


# ------------------------------------------------------------------------------------------------
# items 9 and 11: a base below 1, qualities at the extremes


def test_semantic_entropy_refuses_a_base_below_one() -> None:
    from divmeter.core.errors import InvalidInputError
    from divmeter.engine.registry import check_params, get_metric

    spec = get_metric("semantic-entropy")
    for bad in (0.5, 1, 0.999):
        with pytest.raises(InvalidInputError, match="must be 'e', 'bits' or a number > 1"):
            check_params(spec, {"base": bad})
    check_params(spec, {"base": 2})


@pytest.mark.embed
def test_novelty_utility_qualities_at_the_extremes() -> None:
    import warnings

    import divmeter

    texts = ["The cat sat.", "Stocks fell sharply today.", "Rain again.", "Trains run late."]
    neg = divmeter.score(texts, "novelty-utility", quality="field",
                         fields={"quality": [-5, -9, -4, -8]})
    assert neg.value is None and "quality -5.0 of response 0 is negative" in neg.reason
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        top = divmeter.score(texts, "novelty-utility", quality="field",
                             fields={"quality": [1e308] * 4})
    assert top.value == pytest.approx(1e308)


# ------------------------------------------------------------------------------------------------
# items 8, 12, 13, 15: refused before the run, in one line; never an internal error


def _main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
          ) -> tuple[int, str, str]:
    from cli_util import run_main

    return run_main(monkeypatch, capsys, *args)


def test_an_npz_named_npy_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    import numpy as np

    np.savez(tmp_path / "v.npz", a=np.ones((3, 4)))
    (tmp_path / "v.npz").rename(tmp_path / "v.npy")
    code, _, err = _main(monkeypatch, capsys, "score", str(tmp_path / "v.npy"), "-m",
                         "diameter", "-f", "jsonl")
    assert (code, err) == (2, "divmeter: error: v.npy: is not a .npy array but a NpzFile (an "
                              ".npz archive?); save one array with numpy.save.\n")


def test_a_npy_too_large_is_refused_from_its_header(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The header says one set of 2,048 x 256 float32 vectors: 8 MB as float64 with a working
    copy, above a 4 MB limit: refused before the data is read (0fca95d read it twice and made a
    float64 copy before its estimate refused it: a 6.9 GB peak for a 2 GiB file)."""
    import numpy as np

    np.save(tmp_path / "v.npy", np.ones((2048, 256), dtype=np.float32))
    monkeypatch.setenv("DIVMETER_MAX_MEMORY", "4M")
    code, _, err = _main(monkeypatch, capsys, "score", str(tmp_path / "v.npy"), "-m",
                         "geo-mean-std", "-f", "jsonl")
    assert code == 2
    assert err.startswith("divmeter: error: vectors needs about 8.0 MB (one set of 2,048 x 256 "
                          "vectors of v.npy as float64, and a working copy)")


def test_strings_are_not_vectors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    sets = tmp_path / "s.jsonl"
    sets.write_text('{"set_id": "a", "responses": ["x", "y"], "emb": [["1", "2"], ["3", "4"]]}\n')
    code, _, err = _main(monkeypatch, capsys, "score", str(sets), "--vectors", "emb", "-m",
                         "diameter", "-f", "jsonl")
    assert code == 2 and err.endswith("must be an (n, d) array of numbers (one row per "
                                      "response); got strings.\n"), err


@pytest.mark.parametrize(("env", "metric", "message"), [
    ({"DIVMETER_MAX_MEMORY": "abc"}, "vendi-ngram",
     "$DIVMETER_MAX_MEMORY must be a size such as 4G, 512M or a number of bytes; got 'abc'."),
    ({}, "distinct-k:device=cuda:99", "`device` of distinct-k is 'cuda:99', which is not "
     "available here: torch sees"),
    ({}, "distinct-k:model=openai:x", "`base_url` of distinct-k is needed by model='openai:x': "
     "no server URL"),
    ({}, "embedding-cosine:model=openai:x", "`base_url` of embedding-cosine is needed by"),
])
def test_a_run_that_cannot_work_is_refused_before_any_set(
        env: dict[str, str], metric: str, message: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """0fca95d exited 0 with every set null and the same reason."""
    pytest.importorskip("torch")
    for var in ("DIVMETER_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    code, out, err = _main(monkeypatch, capsys, "score", str(EXAMPLE), "-m", metric, "-f",
                           "jsonl")
    assert (code, out) == (2, "") and message in err and len(err.splitlines()) == 1, err


def _scores(path: Path, values: list[float], **extra: object) -> Path:
    import json as _json

    path.write_text("".join(_json.dumps({"set_id": f"s{i}", "prompt": f"p{i}", "m": v,
                                         **extra}) + "\n" for i, v in enumerate(values)))
    return path


def test_compare_at_the_extremes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    a = _scores(tmp_path / "a.jsonl", [1e308, -1e308, 1e308])
    b = _scores(tmp_path / "b.jsonl", [-1e308, 1e308, -1e308])
    code, out, err = _main(monkeypatch, capsys, "compare", str(a), str(b), "-c", "m", "-f",
                           "json")
    assert (code, out) == (2, "")
    assert "a difference beyond what the statistics can square in float64" in err
    assert "internal error" not in err


def test_compare_says_why_an_interval_is_null(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import json as _json

    a = _scores(tmp_path / "a.jsonl", [0.0, 0.1, 0.2])
    b = _scores(tmp_path / "b.jsonl", [0.3, 0.2, 0.4])
    code, out, err = _main(monkeypatch, capsys, "compare", str(a), str(b), "-c", "m", "-f",
                           "json")
    assert code == 0, err
    row = _json.loads(out)["m"]
    assert None in row["cohen_d_ci"]
    assert row["details"]["reasons"]["cohen_d_ci"].startswith(
        "undefined end(s) with 3 matched items: resamples whose differences are all equal")


def test_compare_refuses_a_row_without_its_system(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import json as _json

    rows = [{"set_id": f"s{i}", "prompt": f"p{i % 2}", "responses": ["a b", "c d"],
             "metadata": {"model": ["x", "y", None][i % 3] if i < 5 else "x"}}
            for i in range(6)]
    f = tmp_path / "by.jsonl"
    f.write_text("".join(_json.dumps(r) + "\n" for r in rows))
    code, out, err = _main(monkeypatch, capsys, "compare", str(f), "--by", "model", "--key",
                           "prompt", "-m", "distinct-n", "-f", "json", "--bootstrap", "0")
    assert (code, out) == (2, "")
    assert err == ("divmeter: error: by.jsonl row 3 (set 's2'): field 'model' is empty; --by "
                   "needs the system of every row (fill it in, or leave the row out).\n")


def test_the_bootstrap_memory_hint_names_what_meta_commands_have() -> None:
    from divmeter.core.errors import InvalidInputError
    from divmeter.core.memory import memory_limit
    from divmeter.studies.meta.stats import check_resample_memory

    with memory_limit("1M"), pytest.raises(InvalidInputError) as exc:
        check_resample_memory(10_000, 100_000, "--bootstrap")
    assert "--max-memory" not in str(exc.value)
    assert "DIVMETER_MAX_MEMORY=16G" in str(exc.value)


# ------------------------------------------------------------------------------------------------
# items 8 and 14: the annotation app


def test_annotation_app_csrf_and_invite_links(tmp_path: Path) -> None:
    """A non-ASCII CSRF token is a 403 (0fca95d: a TypeError and a 500); the admin's invite
    links use the configured address, not the request's Host header."""
    pytest.importorskip("starlette")
    pytest.importorskip("multipart")
    from starlette.testclient import TestClient

    from divmeter.apps.web.app import create_app
    from divmeter.apps.web.store import Store, create_study

    db = tmp_path / "s.sqlite"
    create_study(db, [ResponseSet(f"s{i}", ["one", "two", "three"], prompt="Hi?", label=i % 2)
                      for i in range(3)], kind="abs", ratings=2, name="a")
    store = Store(db)
    client = TestClient(create_app(db, base_url="https://study.example.org"),
                        raise_server_exceptions=False)
    tok = store.invite("a", 1)[0]
    page = client.get(f"/a/{tok}")
    import re

    assignment = re.search(r'name="assignment" value="(\d+)"', page.text).group(1)
    r = client.post(f"/a/{tok}/warmup", data={"csrf": "é" * 43, "assignment": assignment,
                                               "own_response": "me", "quality": "3"})
    assert r.status_code == 403
    admin = store.admin_token()
    admin_page = client.get(f"/admin/{admin}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', admin_page.text).group(1)
    r = client.post(f"/admin/{admin}/invite/a", data={"csrf": csrf, "n": "1"},
                    headers={"host": "evil.example"})
    assert r.status_code == 200, r.text
    links = re.findall(r"https?://[^\"<\s]+/a/[A-Za-z0-9_-]+", r.text)
    assert links and all(x.startswith("https://study.example.org/a/") for x in links), links
    assert "evil.example" not in r.text
