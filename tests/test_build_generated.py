"""CDM appendix A.2 filler generation + P1 vs P2 through `meta paired`; PATTR section 3.1
prompt grid and pools for `meta length-bias`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from divmeter import __version__
from divmeter.apps.cli import app
from divmeter.core.errors import InvalidInputError
from divmeter.studies.perturb.cdm_fillers import cdm_fillers, cdm_p1_p2, parse_realisation
from divmeter.studies.perturb.generator import load_template
from divmeter.studies.perturb.pattr_grid import INSTRUCTIONS, STYLES, pattr_grid, pattr_pools

runner = CliRunner()
V = __version__

FRAMES = [
    {"id": "med", "text": "The [[doctor]] treats the [[patient]] in the [[hospital]]."},
    {"id": "law", "text": "The [[lawyer]] defends the [[client]] in [[court]]."},
]
REWRITES = {  # (frame, condition) -> what the test generator answers
    ("doctor", "completely"): "Sure!\nThe [[chef]] cooks the [[pasta]] in the [[kitchen]].",
    ("doctor", "closely"): "The [[nurse]] treats the [[patient]] in the [[clinic]].",
    ("lawyer", "completely"): "The [[pilot]] flies the [[plane]] over the [[ocean]].",
    ("lawyer", "closely"): "The [[attorney]] defends the [[client]] in [[court]].",
}


class TableGenerator:
    """A deterministic test generator (no model): answers from REWRITES, so the plumbing and
    the CDM numbers can be checked exactly."""

    signature = "table"

    def generate(self, prompts: list[str], n: int, *, temperature: float, max_tokens: int,
                 seed: int) -> list[list[str]]:
        out = []
        for p in prompts:
            frame = "doctor" if "[[doctor]]" in p else "lawyer"
            cond = "completely" if "completely different" in p else "closely"
            out.append([REWRITES[(frame, cond)]] * n)
        return out


@pytest.mark.parametrize(
    ("text", "n", "out"),
    [
        ("[[a]] b [[c]]", 2, "[[a]] b [[c]]"),
        ("no marks at all", 2, None),
        ("[[a]] b", 2, None),  # wrong filler count
        ("The [[x]] and [[y]]", 2, None),  # same fillers as the reference
        ('"[[p]] q [[r]]"', 2, "[[p]] q [[r]]"),
        ("[[unbalanced b [[c]]", 2, None),
    ],
)
def test_parse_realisation(text: str, n: int, out: str | None) -> None:
    assert parse_realisation(text, n, "The [[x]] and [[y]]") == out


def test_cdm_fillers_rows_and_signature() -> None:
    """Appendix A.2: P1 = (reference, high-diversity rewrite), P2 = (reference, low)."""
    b = cdm_fillers(FRAMES, TableGenerator(), seed=1)
    assert b.failures == []
    assert [(r["id"], r["label"]) for r in b.rows] == [("med", 1), ("med", 0), ("law", 1),
                                                        ("law", 0)]
    assert b.rows[0] == {"id": "med", "texts": [FRAMES[0]["text"],
                         "The [[chef]] cooks the [[pasta]] in the [[kitchen]]."],
                         "label": 1, "frame": "med", "condition": "high", "pair": "P1"}
    assert b.signature == (f"cdm-fillers|gen:table|template:{load_template('cdm').sha}|"
                           f"temp:0.7|max_tokens:96|attempts:3|gate:v1,len:3,echo:0.5,"
                           f"retries:3|seed:1|v:{V}")


def test_cdm_fillers_failure_is_recorded() -> None:
    class Unmarked(TableGenerator):
        def generate(self, prompts, n, **kw):  # noqa: ANN001, ANN003, ANN202
            return [["A plain sentence."] * n for _ in prompts]

    b = cdm_fillers(FRAMES[:1], Unmarked(), attempts=2)
    assert b.rows == []
    assert b.failures == [
        {"frame": "med", "condition": c, "reason": "no sample of 2 marked 3 new fillers"}
        for c in ("high", "low")]


@pytest.mark.parametrize(
    ("frames", "kw", "match"),
    [
        (["no marks"], {}, r"frame '0' must mark its fillers with \[\[\.\.\.\]\]; got none"),
        ("[[a]]", {}, r"`frames` must be a list of marked sentences; got a single str\."),
        ([5], {}, r"frame 0 must be a marked sentence"),
        (["[[a]]"], {"attempts": 0}, r"`attempts` must be an integer >= 1; got 0\."),
    ],
)
def test_cdm_fillers_errors(frames: object, kw: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        cdm_fillers(frames, TableGenerator(), **kw)  # type: ignore[arg-type]


def test_cdm_p1_p2_through_meta_paired(tmp_path: Path) -> None:
    """CDM (MiniLM) ranks the cross-domain rewrite above the near-domain one for both frames
    (Table 4's Acc = 100 %), and `divmeter score -m cdm` then `divmeter meta paired -c cdm` on
    the written rows give the same numbers as the library function."""
    pytest.importorskip("sentence_transformers")
    from divmeter.inputs.data.items import fillers_from_marked
    from divmeter.metrics.cdm import cdm

    rows = cdm_fillers(FRAMES, TableGenerator()).rows
    vals = [cdm(fillers_from_marked(r["texts"])[0]).value for r in rows]
    assert vals[0] > vals[1] and vals[2] > vals[3]
    lib = cdm_p1_p2(rows)
    got = lib.results["cdm"].values
    assert got["sign_accuracy"] == 1.0 and got["n"] == 2
    p = tmp_path / "cdm.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    scored = tmp_path / "scored.jsonl"
    res = runner.invoke(app, ["score", str(p), "-m", "cdm", "-o", str(scored)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["meta", "paired", str(scored), "-c", "cdm", "-f", "json"])
    assert res.exit_code == 0, res.output
    cli_vals = json.loads(res.stdout)["cdm"]
    assert cli_vals["n"] == 2 and cli_vals["n_unmatched"] == 0
    assert cli_vals["sign_accuracy"] == 1.0
    assert cli_vals["mean_diff"] == pytest.approx(got["mean_diff"], rel=1e-9)


# -- PATTR section 3.1 grid -------------------------------------------------------------------


def test_pattr_grid_shape_levels_and_styles() -> None:
    """Section 3.1: topics x 10 instruction levels (0..9) x 10 sampled styles."""
    g = pattr_grid(["a day at the beach", "how volcanoes work"])
    assert len(g) == 2 * 10 * 10
    assert [p.level for p in g[:21:10]] == [0, 1, 2]
    for p in g:
        assert p.prompt.count("\n- ") == p.level
        assert all(p.style[c] in v for c, v in STYLES.items())
        assert p.prompt.rstrip().endswith(("a day at the beach", "how volcanoes work"))
    # the same 10 styles at every level of a topic, seeded per topic id
    s0 = [p.style for p in g if p.topic_id == "0" and p.level == 0]
    assert s0 == [p.style for p in g if p.topic_id == "0" and p.level == 9]
    assert s0 == [p.style for p in pattr_grid(["other text"], n_styles=10) if p.level == 0]
    assert len(INSTRUCTIONS) == 10
    lengths = [len(p.prompt) for p in g if p.topic_id == "0" and p.style == s0[0]]
    assert lengths == sorted(lengths)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"topics": []}, r"`topics` must be a non-empty list of non-empty strings"),
        ({"topics": "beach"}, r"`topics` must be a non-empty list"),
        ({"topics": ["x"], "levels": [11]}, r"`levels` must be integers in 0\.\.10; got \[11\]"),
        ({"topics": ["x"], "n_styles": 0}, r"`n_styles` must be an integer >= 1; got 0\."),
    ],
)
def test_pattr_grid_errors(kw: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        pattr_grid(**kw)


def test_pattr_pools_with_a_real_model_feed_length_bias(llama_smollm2, tmp_path: Path) -> None:  # noqa: ANN001
    """SmolLM2 writes the grid's responses; `divmeter meta length-bias` reads the pools."""
    from divmeter.studies.perturb import ChatServerGenerator, write_jsonl

    gen = ChatServerGenerator(llama_smollm2.model, llama_smollm2.url, cache=tmp_path / "c",
                              concurrency=1, timeout=300)
    grid = pattr_grid(["a rainy day in the city"], levels=[0, 3], n_styles=1)
    res = pattr_pools(grid, gen, max_tokens=32)
    pools = res.sets
    assert res.rejected == [] and len(pools) == 1 and len(pools[0].responses) == 2
    assert pools[0].metadata["levels"] == [0, 3]
    assert all(r.strip() for r in pools[0].responses)
    f = tmp_path / "pools.jsonl"
    write_jsonl([p.to_dict() for p in pools], f)
    res = runner.invoke(app, ["meta", "length-bias", str(f), "-m", "ttr", "-f", "json"])
    assert res.exit_code == 0, res.output
    assert "ttr" in res.stdout


def test_cli_pattr_grid_prompts_and_cdm_frames_errors(tmp_path: Path) -> None:
    topics = tmp_path / "topics.txt"
    topics.write_text("a day at the beach\n\nhow volcanoes work\n", encoding="utf-8")
    out = tmp_path / "grid.jsonl"
    res = runner.invoke(app, ["build", "pattr-grid", str(topics), "-o", str(out), "--levels",
                              "0,3", "--styles", "2"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["set_id"] for r in rows] == ["0.0.0", "0.0.1", "0.3.0", "0.3.1",
                                           "1.0.0", "1.0.1", "1.3.0", "1.3.1"]
    res = runner.invoke(app, ["build", "pattr-grid", str(topics), "-o", str(out), "--levels",
                              "3:1"])
    assert res.exit_code != 0
    assert "--levels must not be an empty range; got '3:1'." in str(res.exception)
