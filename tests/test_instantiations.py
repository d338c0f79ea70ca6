"""CDM input end to end: `divmeter score FILE -m cdm` on a JSONL of instantiations (issue 8).

CDM (Susilo, Suominen & Haslum, sec. 3 and 5) scores k position-aligned filler lists, not texts;
the batch run reads them with :func:`divmeter.inputs.data.read_instantiation_sets` and must give,
item by item, exactly what :func:`divmeter.score` gives on the same instantiations.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import divmeter
from divmeter.apps.cli import app
from divmeter.core.errors import InvalidInputError
from divmeter.engine.batch import score_sets
from divmeter.inputs.data import ResponseSet, read_instantiation_sets

ARMIN = ["Armin", "fieldwork", "country", "conflict zone", "recently"]
JESSICA = ["Jessica", "market research", "region", "economic hotspot", "recently"]
MARCUS = ["Marcus", "archaeological surveys", "territory", "war zone", "recently"]

ITEMS = [
    {"id": "cross", "instantiations": [ARMIN, JESSICA], "label": 1},
    {"id": "same", "instantiations": [ARMIN, MARCUS], "label": 0},
    {"id": "three", "instantiations": [ARMIN, JESSICA, MARCUS], "label": 1},
    {"id": "one", "instantiations": [ARMIN], "label": 0},  # degenerate: fewer than 2
    {"id": "marked", "texts": ["[[Armin]] does [[fieldwork]].", "[[Jessica]] does [[sales]]."],
     "label": 1},
]
INSTS = [[ARMIN, JESSICA], [ARMIN, MARCUS], [ARMIN, JESSICA, MARCUS], [ARMIN],
         [["Armin", "fieldwork"], ["Jessica", "sales"]]]


def _write(tmp_path: Path) -> Path:
    path = tmp_path / "cdm.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in ITEMS), encoding="utf-8")
    return path


def test_read_instantiation_sets(tmp_path: Path) -> None:
    sets = list(read_instantiation_sets(_write(tmp_path)))
    assert [s.set_id for s in sets] == ["cross", "same", "three", "one", "marked"]
    assert [s.instantiations for s in sets] == INSTS
    assert [s.label for s in sets] == [1, 0, 1, 0, 1]
    # marked texts give the plain texts as responses; bare instantiations give none
    assert sets[4].responses == ["Armin does fieldwork.", "Jessica does sales."]
    assert sets[0].responses == []


def test_read_instantiation_sets_is_jsonl_only(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"^c.csv: instantiations \(CDM input\) are read "
                       r"from JSONL only; got format 'csv'\.$"):
        list(read_instantiation_sets(tmp_path / "c.csv"))


@pytest.mark.embed
def test_cli_score_cdm_on_instantiations(tmp_path: Path) -> None:
    out = tmp_path / "scores.jsonl"
    res = CliRunner().invoke(
        app, ["score", str(_write(tmp_path)), "-m", "cdm:model=glove", "-m", "distinct-n",
              "-o", str(out), "-q", "--signatures"]
    )
    assert res.exit_code == 0, res.output
    recs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["set_id"] for r in recs] == ["cross", "same", "three", "one", "marked"]
    assert [r["label"] for r in recs] == [1, 0, 1, 0, 1]
    for rec, insts in zip(recs, INSTS, strict=True):
        want = divmeter.score(insts, "cdm", model="glove")
        assert rec["cdm:model=glove"] == want.value
        if want.value is not None:
            assert rec["signatures"]["cdm:model=glove"] == want.signature
    assert recs[0]["cdm:model=glove"] > recs[1]["cdm:model=glove"]  # paper sec. 3.2
    assert recs[3]["cdm:model=glove"] is None
    assert recs[3]["reasons"]["cdm:model=glove"] == divmeter.score([ARMIN], "cdm",
                                                                   model="glove").reason
    # text metrics next to cdm score the plain texts of marked items, and nothing otherwise
    assert recs[4]["distinct-n"] == divmeter.score(
        ["Armin does fieldwork.", "Jessica does sales."], "distinct-n").value
    assert recs[0]["distinct-n"] is None
    assert recs[0]["reasons"]["distinct-n"] == "empty set"


@pytest.mark.embed
def test_cdm_on_a_text_set_is_a_null_with_a_reason() -> None:
    (rec,) = score_sets([ResponseSet("a", ["x y", "z w"])], ["cdm:model=glove"])
    assert rec["cdm:model=glove"] is None
    assert rec["reasons"]["cdm:model=glove"].startswith(
        "cdm scores instantiations (lists of filler phrases), not texts; expected a JSONL of"
    )
