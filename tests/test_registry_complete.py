"""Registry completeness, in the style of scikit-learn's ``test_common`` (issues 8 and 9).

Every metric ``divmeter.list_metrics()`` returns is exercised, whatever its family or extra:

1. its implementation and, when ``spec.batch`` is set, its batched implementation resolve to
   functions named as registered (no extra needed: family modules import only numpy);
2. ``score_many`` on three small inputs, one degenerate, equals ``[score(s) for s in sets]``:
   metric, value, reason, signature and details, and the run has a real value and a null with
   a reason.

A metric whose extra is not installed is skipped with the install line (``embed`` / ``lm``
markers, see the repository's ``conftest.py``). Decan runs the real LM on two-word responses with
2 permutations (one model load per process, shared with tests/test_decan_lm.py via
``get_scorer``'s cache); its degenerate set takes the cheap path (no model call).

The kmeans-inertia regression (its registered batch target did not exist, so ``score_many`` and
``divmeter score -m kmeans-inertia`` raised AttributeError) is tested through both entry points.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import divmeter
from divmeter.apps.cli import app
from divmeter.engine.registry import MetricSpec, list_metrics
from exact import same

SPECS = list_metrics()
IDS = [s.name for s in SPECS]

TEXTS = [
    ["The old man walked his dog at dawn.", "A girl painted the red barn.",
     "Rain fell on the quiet city.", "The old man walked his cat at night."],
    [],  # degenerate: every metric gives null with a reason
    ["Engineers argued about the bridge.", "Nobody noticed the parade.",
     "Engineers argued about the tunnel."],
]
_LONG = " ".join(TEXTS[0] + TEXTS[2]).split()  # 40 words
LONG_TEXTS = [  # HD-D needs >= 42 tokens per response, MTLD a repeated word
    [" ".join(_LONG[i:] + _LONG[:i] + _LONG[:10]) for i in (0, 7, 19)],
    [],
    [" ".join(_LONG[i:] + _LONG[:i] + _LONG[5:15]) for i in (3, 11)],
]
INSTANTIATIONS = [
    [["Armin", "fieldwork", "war zone"], ["Jessica", "market research", "economic hotspot"]],
    [["Armin", "fieldwork", "war zone"]],  # one instantiation: no pair
    [["Armin", "fieldwork", "war zone"], ["Marcus", "surveys", "conflict zone"],
     ["Jessica", "market research", "region"]],
]
DECAN_TEXTS = [["Rain fell.", "Sun shone.", "Wind blew."], [], ["Snow.", "Hail."]]
#: Per-metric inputs and parameters where the defaults above do not fit.
INPUTS: dict[str, Any] = {
    "hdd": LONG_TEXTS, "mtld": LONG_TEXTS, "cdm": INSTANTIATIONS, "decan": DECAN_TEXTS,
    # a repeated word (and for vocd-d, 50 tokens) in each response
    **dict.fromkeys(["dugast-u", "maas-log-v0", "yule-i", "mtld-ma-bi", "mtld-ma-wrap",
                     "vocd-d", "mtld-taaled"], LONG_TEXTS),
}
PARAMS: dict[str, dict[str, Any]] = {
    "decan": {"prompt": "Weather:", "permutations": 2, "threads": 1},
}


def _marks(spec: MetricSpec) -> list[pytest.MarkDecorator]:
    marks = [getattr(pytest.mark, spec.extra)] if spec.extra else []
    if spec.name == "decan":
        marks.append(pytest.mark.slow)  # loads the 270M-parameter LM (once per process)
    return marks


@pytest.fixture(scope="module")
def rating_server() -> Iterator[Any]:
    """A loopback OpenAI-shaped server whose chat answers are a valid 1-5 rating (the judge's
    parsing and protocol are tested against real answers in test_judge*.py)."""
    from faultserver import FaultServer

    server = FaultServer({"chat/completions": ['say:{"rationale": "Two scenes.", "score": 4}']})
    yield server
    server.close()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dmcache")


@pytest.fixture()
def private_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Encoders cache vectors on disk: keep them out of the user's cache. (Not for Decan: its
    converted model folder also lives under ``DIVMETER_CACHE`` and would be converted again.)"""
    monkeypatch.setenv("DIVMETER_CACHE", str(cache_dir))
    return cache_dir


def test_every_family_is_covered() -> None:
    names = set(IDS)
    assert {"distinct-n", "self-bleu", "vendi-ngram", "embedding-cosine", "kmeans-inertia",
            "cdm", "decan"} <= names
    assert {s.family for s in SPECS} >= {"form", "content", "lm"}


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_targets_resolve(spec: MetricSpec) -> None:
    fn = spec.load()
    module, _, _ = spec.target.partition(":")
    assert callable(fn) and fn.__module__ == module
    assert fn.__divmeter_metric__ is spec.definition  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "spec", [pytest.param(s, id=s.name, marks=_marks(s)) for s in SPECS]
)
def test_score_many_equals_score_per_set(spec: MetricSpec, request: pytest.FixtureRequest) -> None:
    if spec.family == "content":
        request.getfixturevalue("private_cache")
    sets = INPUTS.get(spec.name, TEXTS)
    params = dict(PARAMS.get(spec.name, {}))
    if spec.family == "judge":  # a loopback server that answers every request with a rating
        server = request.getfixturevalue("rating_server")
        params.update(model="openai:fault-model", base_url=server.url, samples=2, cache="none")
    many = divmeter.score_many(sets, spec.name, **params)
    one = [divmeter.score(s, spec.name, **params) for s in sets]
    assert len(many) == len(one) == 3
    for i, (got, want) in enumerate(zip(many, one, strict=True)):
        where = f"{spec.name} set {i}"
        assert got.metric == want.metric == spec.name, where
        assert got.value == want.value and type(got.value) is type(want.value), where
        assert got.reason == want.reason, where
        assert got.signature == want.signature, where
        assert same(dict(got.details), dict(want.details)), where
    assert many[0].value is not None and math.isfinite(many[0].value), many[0].reason
    assert many[1].value is None and many[1].reason, f"{spec.name}: degenerate set not null"


# --------------------------------------------------------------------------- kmeans-inertia


KMEANS_SETS = [
    ["A cat sleeps on the sofa.", "A kitten naps on the couch.", "Stocks fell sharply today.",
     "Markets dropped this morning."],
    ["Same.", "Same.", "Other."],
    ["only one"],
]


@pytest.mark.embed
def test_kmeans_inertia_score_many_regression(private_cache: Path) -> None:
    """score_many(..., "kmeans-inertia") crashed (batch target kmeans_inertia_metric_many was
    missing); it must give per-set values (Du & Black 2019 k-means inertia, k=2)."""
    many = divmeter.score_many(KMEANS_SETS, "kmeans-inertia")
    one = [divmeter.score(s, "kmeans-inertia") for s in KMEANS_SETS]
    assert [(r.value, r.reason, r.signature) for r in many] == [
        (r.value, r.reason, r.signature) for r in one
    ]
    assert 0 < many[0].value < 2  # two paraphrase pairs: small but non-zero inertia
    assert many[1].value == pytest.approx(0.0, abs=1e-9)  # two identical + one: zero inertia
    assert many[2].value is None and many[2].reason
    assert many[0].signature == one[0].signature
    assert many[0].signature.startswith("kmeans-inertia|")


@pytest.mark.embed
def test_kmeans_inertia_cli_regression(tmp_path: Path, private_cache: Path) -> None:
    """``divmeter score FILE -m kmeans-inertia`` crashed with AttributeError; it must write one
    record per set with the values of :func:`divmeter.score`."""
    src = tmp_path / "sets.jsonl"
    src.write_text(
        "".join(json.dumps({"id": f"s{i}", "responses": s}) + "\n"
                for i, s in enumerate(KMEANS_SETS)),
        encoding="utf-8",
    )
    out = tmp_path / "scores.jsonl"
    result = CliRunner().invoke(app, ["score", str(src), "-m", "kmeans-inertia", "-o", str(out)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    want = [divmeter.score(s, "kmeans-inertia") for s in KMEANS_SETS]
    assert [r["kmeans-inertia"] for r in records] == [w.value for w in want]
    assert records[2]["reasons"] == {"kmeans-inertia": want[2].reason}
    assert records[0]["kmeans-inertia"] is not None
