"""`divmeter meta ...` end to end on small fixtures, reports (JSON, Markdown, real PNGs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from conftest import FIXTURES
from divmeter.apps.cli import app, main
from divmeter.inputs.data import ResponseSet, write_sets

runner = CliRunner()
PAIRS = FIXTURES / "meta_pairs.jsonl"
STAGES = FIXTURES / "meta_stages.jsonl"
POOLS = FIXTURES / "meta_pools.jsonl"


def invoke(*args: str) -> str:
    res = runner.invoke(app, ["meta", *args])
    assert res.exit_code == 0, (res.output, res.exception)
    return res.stdout


def cli_json(*args: str) -> dict:
    return json.loads(invoke(*args, "--format", "json"))


def run_main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["divmeter", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


@pytest.fixture()
def small_sets(tmp_path: Path) -> Path:
    """Ten labelled sets: high sets have distinct responses, low sets repeat one."""
    sets = []
    for i in range(5):
        sets.append(ResponseSet(f"s{i}", [f"alpha {i} beta", f"gamma delta {i}", f"eps {i} zeta"],
                                label=1, metadata={"temp": 0.2 * (i + 1)}))
        sets.append(ResponseSet(f"s{i}", [f"same words {i}", f"same words {i}", f"same word {i}"],
                                label=0, metadata={"temp": 0.1 * (i + 1)}))
    sets.append(ResponseSet("empty", ["", " "], label=0, metadata={"temp": 0.05}))
    path = tmp_path / "sets.jsonl"
    write_sets(sets, path)
    return path


def test_contest_json_interface(small_sets):
    out = cli_json("contest", str(small_sets), "-m", "distinct-n")
    row = out["distinct-n"]
    assert {"spearman", "oca", "auc", "n"} <= set(row)
    assert (row["n"], row["oca"], row["auc"]) == (10, 1.0, 1.0)
    assert (row["empty"], row["n_empty"]) == ("drop", 1)
    assert row["signature"] == (
        "contest|oca:blind|tol:1e-05|auc:mann-whitney|nan:error|empty:drop|v:0.1.0"
    )
    assert row["details"]["metric_signature"].startswith("distinct-n|")


def test_contest_on_a_score_output(small_sets, tmp_path):
    scored = tmp_path / "scores.jsonl"
    res = runner.invoke(app, ["score", str(small_sets), "-m", "distinct-n", "-o", str(scored)])
    assert res.exit_code == 0, res.output
    # the empty set's null score is NaN: an error by default, excluded and counted with --nan omit
    res = runner.invoke(app, ["meta", "contest", str(scored), "-c", "distinct-n", "-f", "json"])
    assert res.exit_code != 0 and "NaN" in str(res.exception)
    row = cli_json("contest", str(scored), "-c", "distinct-n", "--nan", "omit")["distinct-n"]
    assert (row["n"], row["n_excluded"], row["oca"]) == (10, 1, 1.0)
    with_texts = cli_json("contest", str(small_sets), "-m", "distinct-n")["distinct-n"]
    assert row["spearman"] == pytest.approx(with_texts["spearman"])


def test_empty_policy_error_exit_code_and_message(monkeypatch, capsys, small_sets):
    code, _, err = run_main(monkeypatch, capsys, "meta", "contest", str(small_sets), "-m",
                            "distinct-n", "--empty", "error")
    assert code == 2
    assert err.startswith("divmeter: error: sets.jsonl: 1 empty set(s)")
    assert "Use --empty drop or --empty zero." in err


def test_bad_options_exit_2(monkeypatch, capsys, small_sets):
    code, _, err = run_main(monkeypatch, capsys, "meta", "contest", str(small_sets), "-m",
                            "distinct-n", "--format", "xml")
    assert (code, err.strip()) == (2, "divmeter: error: --format must be one of table, "
                                   "json, markdown; got 'xml'.")
    code, _, err = run_main(monkeypatch, capsys, "meta", "contest", str(small_sets), "-c", "nope")
    assert code == 2 and "column 'nope' not found in sets.jsonl; available: temp" in err


def test_dectest_on_metadata_parameter(small_sets, tmp_path):
    # the label is the class here; decTest correlates with it like any parameter
    out = cli_json("dectest", str(small_sets), "-m", "distinct-n", "--empty", "zero")
    row = out["distinct-n"]
    assert row["n"] == 11 and row["n_empty"] == 1 and row["empty"] == "zero"
    assert {"spearman", "pearson", "n"} <= set(row)


def test_pairwise_interface_and_tie_policy_echo():
    out = cli_json("pairwise", str(PAIRS), "-m", "distinct-n", "-c", "human", "--resamples", "500")
    for name in ("distinct-n", "human"):
        row = out[name]
        assert {"accuracy", "ci_low", "ci_high", "n"} <= set(row)
        assert row["tie_policy"] == "metric:miss,label:drop"
        assert row["n"] == 7  # the annotator tie is dropped
    assert out["human"]["accuracy"] == pytest.approx(6 / 7)  # pair 6 is a metric tie: a miss
    half = cli_json("pairwise", str(PAIRS), "-c", "human", "--metric-ties", "half",
                    "--resamples", "500")["human"]
    assert half["accuracy"] == pytest.approx(6.5 / 7)
    assert half["tie_policy"] == "metric:half,label:drop"
    filt = cli_json("pairwise", str(PAIRS), "-c", "human", "--min-rating-diff", "0.5",
                    "--resamples", "500")["human"]
    assert (filt["n"], filt["n_filtered"]) == (6, 2)


def test_pairwise_uses_each_metrics_direction(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    rows = [
        {"set1": ["a cat sat on the mat", "a dog ran in the park", "rain fell on the city"],
         "set2": ["a cat sat on the mat", "a cat sat on a mat", "the cat sat on the mat"],
         "label": 0, "scores1": {"sb": 0.1}, "scores2": {"sb": 0.7}},
        {"set1": ["the cat sat", "the cat sat", "the cat sat"],
         "set2": ["birds fly south", "engineers build bridges", "rain falls"],
         "label": 1, "scores1": {"sb": 0.9}, "scores2": {"sb": 0.0}},
    ]
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = cli_json("pairwise", str(pairs), "-m", "self-bleu:n=2", "-m", "homogenization",
                   "-c", "sb", "--lower-is-diverse", "sb", "--resamples", "200")
    for name in ("self-bleu:n=2", "homogenization", "sb"):
        assert (out[name]["accuracy"], out[name]["direction"]) == (1.0, "lower"), name
    raw = cli_json("pairwise", str(pairs), "-c", "sb", "--resamples", "200")["sb"]
    assert (raw["accuracy"], raw["direction"]) == (0.0, "higher")


def test_pairwise_bad_file(tmp_path, monkeypatch, capsys):
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"set1": ["a"], "set2": "b", "label": 0}\n')
    code, _, err = run_main(monkeypatch, capsys, "meta", "pairwise", str(bad), "-m", "distinct-n")
    assert code == 2
    assert "p.jsonl line 1: field 'set2' must be a list of strings" in err


def test_paired_stages_cli():
    out = cli_json("paired", str(STAGES), "-c", "toy_score", "--by", "stage",
                   "--contrast", "base>sft", "--contrast", "sft>dpo", "--contrast", "base>dpo")
    assert list(out) == ["base>sft", "sft>dpo", "base>dpo"]
    row = out["base>sft"]
    assert row["n"] == 6 and row["n_unmatched"] == 1  # p9 exists only in base
    assert row["p"] == pytest.approx(1 / 64) and row["p_adj"] == pytest.approx(3 / 64)
    assert row["delta"] == pytest.approx(0.1533333333)


def test_length_bias_cli():
    out = cli_json("length-bias", str(POOLS), "-m", "ttr", "--top-k", "3")
    row = out["ttr"]
    assert row["n_pools"] == 3 and 0 <= row["short_win_rate"] <= 1
    assert row["top3_n_pairs"] == 3 and "random3_rougeL" in row


def test_report_folder_with_real_pngs(small_sets, tmp_path):
    rep = tmp_path / "rep"
    invoke("contest", str(small_sets), "-m", "distinct-n", "-m", "ttr", "--format", "markdown",
           "--report", str(rep))
    doc = json.loads((rep / "report.json").read_text())
    assert doc["protocol"] == "contest"
    assert doc["results"]["distinct-n"]["signature"].startswith("contest|")
    md = (rep / "report.md").read_text()
    assert "| metric | ρ | OCA | OCA (dir.) | AUC | n | excl. |" in md
    for name in ("hist_distinct-n.png", "hist_ttr.png"):
        with Image.open(rep / name) as im:
            assert im.format == "PNG" and im.size == (640, 400) and im.mode == "RGBA"
            assert len(np.unique(np.asarray(im.convert("L")))) > 20  # not a blank canvas


@pytest.mark.parametrize(
    ("args", "png"),
    [
        (("pairwise", str(PAIRS), "-m", "distinct-n", "-c", "human", "--resamples", "200"),
         "kappa.png"),
        (("paired", str(STAGES), "-c", "toy_score", "--by", "stage", "--contrast", "base>sft"),
         "paired_base-sft.png"),
        (("length-bias", str(POOLS), "-m", "ttr"), "length_ttr.png"),
    ],
)
def test_other_plots(tmp_path, args, png):
    rep = tmp_path / "rep"
    invoke(*args, "--format", "json", "--report", str(rep))
    with Image.open(rep / png) as im:
        assert im.format == "PNG" and im.mode == "RGBA"
        assert im.size[0] >= 400 and im.size[1] >= 300
        assert len(np.unique(np.asarray(im.convert("L")))) > 20


def test_dectest_scatter_plot(small_sets, tmp_path):
    rep = tmp_path / "rep"
    invoke("dectest", str(small_sets), "-m", "distinct-n", "--format", "json", "--report",
           str(rep))
    with Image.open(rep / "scatter_distinct-n.png") as im:
        assert (im.format, im.size, im.mode) == ("PNG", (640, 400), "RGBA")


def test_unlabelled_file_is_a_clear_error(tmp_path, monkeypatch, capsys):
    path = tmp_path / "nolabel.jsonl"
    write_sets([ResponseSet("a", ["x y", "y z"]), ResponseSet("b", ["p", "q"])], path)
    code, _, err = run_main(monkeypatch, capsys, "meta", "contest", str(path), "-m", "distinct-n")
    assert code == 2 and "nolabel.jsonl: no labels found" in err
