"""mtld-taaled against TAALED (Kyle, Crossley & Jarvis 2021): its ``mtld`` (mean factor length)
and ``mtldo`` (McCarthy & Jarvis's estimate) to the last bit, on Tevet & Berant's texts and on
texts written here. The peer's values are frozen in ``fixtures/mtld_taaled.json`` (TAALED 0.32,
``lexdiv().MTLD(tokens, 10, 0.72, outputs=True)``: its first and third outputs); the texts are
read from the shared data at test time (skipped without it)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import divmeter
from divmeter.metrics.richness import mtld, mtld_taaled

HERE = Path(__file__).resolve().parent
FROZEN = json.loads((HERE / "fixtures" / "mtld_taaled.json").read_text(encoding="utf-8"))
SHARED = HERE.parents[0].parent / "shared" / "data" / "tevet" / "with_metrics"
WRITTEN = ["a b a c a d a e a f a g a h", "one two three", "", "x x x x x x x x x x x x"]


def _texts() -> list[str]:
    src = SHARED / "decTest" / "dec_test_200_with_hds_story_gen.csv"
    if not src.exists():
        pytest.skip(f"needs the shared Tevet data ({src})")
    with open(src, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))[:40]
    joined = [" ".join(r[k] for k in sorted(r) if k.startswith("resp_") and r[k]) for r in rows]
    return joined + WRITTEN


@pytest.mark.parametrize("estimate", ["mfl", "original"])
def test_equals_taaled_to_the_bit(estimate: str) -> None:
    texts = _texts()
    got = mtld_taaled(texts, estimate=estimate).details["per_response"]
    want = [v[estimate] for v in FROZEN["values"]]
    assert len(got) == len(want) == 44
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        # TAALED gives 0 where the estimate is undefined (no token, no repeated word)
        assert (g if g is not None else 0) == w, (i, texts[i][:60])
    assert sum(g is None for g in got) == 2  # "one two three" and the empty text


def test_worked_example_and_the_difference_from_mtld() -> None:
    """One factor of 10 tokens ("a" repeats: TTR 5/9 < 0.72 only from the 10th token on, and a
    factor needs 10 tokens), then a partial of 4 (TTR 0.5, weight 0.5 / 0.28) forward; the
    reversed text alike. lexicalrichness's MTLD (divmeter's mtld) cuts factors at TTR <= 0.72
    with no minimum, so it counts more, shorter factors."""
    text = "a b a c a d a e a f a g a h"
    r = mtld_taaled([text])
    assert r.signature == ("mtld-taaled|est:mfl|threshold:0.72|min:10|tok:whitespace|"
                           "case:mixed|v:0.1.0")
    assert r.value == pytest.approx(7.24, abs=1e-12)
    assert mtld([text]).value < r.value
    assert divmeter.score([text, "one two three"], "mtld-taaled:estimate=original").value == (
        pytest.approx(7.39622641509434, abs=1e-12))
