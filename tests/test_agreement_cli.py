"""``divmeter meta agreement`` on CSV, JSONL, Parquet and Excel tables (commonsense meta-evaluation
paper, section 4.3: accuracy of each annotator against the LLM judge and their mean; Fleiss'
kappa among annotators). Values are the hand-computed ones of tests/test_agreement.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("krippendorff")
pd = pytest.importorskip("pandas")

from cli_util import run_main  # noqa: E402

# reference [0,1,1,1]; a: 3/4, kappa 0.5; b: 2/4, kappa 0.2 (see test_agreement.py)
TABLE = {"item": ["i1", "i2", "i3", "i4"], "a": [0, 1, 1, 0], "b": [0, 1, 0, 0],
         "llm": [0, 1, 1, 1]}


def _write(tmp_path: Path, ext: str) -> Path:
    df = pd.DataFrame(TABLE)
    path = tmp_path / f"ratings.{ext}"
    if ext == "csv":
        df.to_csv(path, index=False)
    elif ext == "jsonl":
        df.to_json(path, orient="records", lines=True)
    elif ext == "parquet":
        pytest.importorskip("pyarrow")
        df.to_parquet(path)
    else:
        pytest.importorskip("openpyxl")
        with pd.ExcelWriter(path) as xw:
            pd.DataFrame({"x": [1]}).to_excel(xw, sheet_name="notes", index=False)
            df.to_excel(xw, sheet_name="labels", index=False)
    return path


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet", "xlsx"])
def test_json_output_on_every_format(ext: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, ext)
    sheet = ["--sheet", "labels"] if ext == "xlsx" else []
    code, out, err = run_main(monkeypatch, capsys, "meta", "agreement", str(path), "--rater", "a",
                           "--rater", "b", "--reference", "llm", *sheet, "--format", "json")
    assert code == 0, err
    d = json.loads(out)
    assert {k: (v["accuracy"], round(v["kappa"], 12)) for k, v in d["per_rater"].items()} == {
        "a": (0.75, 0.5), "b": (0.5, 0.2)}
    assert d["mean_accuracy"] == 0.625
    assert d["fleiss_kappa"] == pytest.approx(14 / 30)
    assert {"krippendorff_alpha", "krippendorff_alpha_ordinal", "mean_pairwise_agreement"} <= \
        set(d)


def test_table_and_markdown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "csv")
    code, out, _ = run_main(monkeypatch, capsys, "meta", "agreement", str(path), "-r", "a", "-r",
                         "b", "--reference", "llm", "--format", "markdown")
    assert code == 0
    assert "| a | 4 | 0.7500 | [0.194, 0.994] | 0.5000 | [-0.349, 1.000] |" in out
    assert "| mean_accuracy | 0.6250 |" in out and "| fleiss_kappa | 0.4667 |" in out
    code, out, _ = run_main(monkeypatch, capsys, "meta", "agreement", str(path), "-r", "a", "-r",
                         "b", "--reference", "llm", "--format", "table")
    assert code == 0 and "fleiss_kappa" in out and "0.4667" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-r", "a", "-r", "zz"], "ratings.csv: no column 'zz'; columns: item, a, b, llm."),
        (["-r", "a", "--sheet", "x"], "--sheet applies to Excel files; got ratings.csv."),
        (["-r", "a", "--format", "yaml"],
         "--format must be one of table, json, markdown; got 'yaml'."),
    ],
)
def test_errors_are_one_line(args: list[str], message: str, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "csv")
    code, _, err = run_main(monkeypatch, capsys, "meta", "agreement", str(path), *args)
    assert code == 2 and err.strip() == f"divmeter: error: {message}"


def test_missing_sheet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "xlsx")
    code, _, err = run_main(monkeypatch, capsys, "meta", "agreement", str(path), "-r", "a",
                         "--sheet", "nope")
    assert code == 2
    assert err.strip() == "divmeter: error: ratings.xlsx: no sheet 'nope'; sheets: notes, labels."
