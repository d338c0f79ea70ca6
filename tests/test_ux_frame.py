"""The notebook path (issue 15, "Notebook"): score_frame on DataFrames (long and wide form) and
datasets.Dataset, `divmeter score hf:PATH`, JSON-safe to_dict and _repr_html_ on results.

Values are divmeter.score's on the same texts (distinct-n: Li et al. 2016, unique n-grams over
all n-grams pooled over the set), so the frame path cannot drift from the library's numbers.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.core.result import MetaResult, MetricResult

pd = pytest.importorskip("pandas")

DIVMETER = Path(sys.executable).parent / "divmeter"
REPO = Path(__file__).resolve().parents[1]

LONG = {
    "prompt_id": [1, 1, 1, 2, 2, 3],
    "stage": ["base", "base", "base", "sft", "sft", "sft"],
    "response": ["the cat sat", "a dog ran", "the cat ran", "same words", "same words", ""],
}


def test_import_divmeter_does_not_import_pandas() -> None:
    code = ("import sys, divmeter; f = divmeter.score_frame; "
            "print('pandas' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


def test_long_form_one_row_per_set() -> None:
    df = pd.DataFrame(LONG)
    out = divmeter.score_frame(df, ["distinct-n:n=1", "ttr"], by="prompt_id")
    assert list(out.columns) == ["prompt_id", "n_responses", "distinct-n:n=1", "ttr", "reasons"]
    assert out["prompt_id"].tolist() == [1, 2, 3]
    assert out["n_responses"].tolist() == [3, 2, 1]
    groups = [["the cat sat", "a dog ran", "the cat ran"], ["same words", "same words"], [""]]
    for i, texts in enumerate(groups):
        for col, (name, params) in {"distinct-n:n=1": ("distinct-n", {"n": 1}),
                                    "ttr": ("ttr", {})}.items():
            want = divmeter.score(texts, name, **params)
            got = out[col].iloc[i]
            if want.value is None:
                assert math.isnan(got)
                assert out["reasons"].iloc[i][col] == want.reason
            else:
                assert got == want.value
    # hand check: 9 unigram tokens, 6 distinct (the cat sat a dog ran) -> 6/9
    assert out["distinct-n:n=1"].iloc[0] == pytest.approx(6 / 9)
    assert out["distinct-n:n=1"].iloc[1] == 0.5  # 4 tokens, 2 distinct
    sig = out.attrs["signatures"]
    assert sig["distinct-n:n=1"] == divmeter.score(groups[0], "distinct-n", n=1).signature
    assert sig["ttr"] == divmeter.score(groups[0], "ttr").signature


def test_long_form_two_keys_and_label() -> None:
    df = pd.DataFrame({**LONG, "y": [1, 1, 1, 0, 0, 0]})
    out = divmeter.score_frame(df, "distinct-n:n=1", by=["stage", "prompt_id"], label="y")
    assert out[["stage", "prompt_id", "label"]].values.tolist() == [
        ["base", 1, 1], ["sft", 2, 0], ["sft", 3, 0]]


def test_wide_form_keeps_rows_and_columns() -> None:
    df = pd.DataFrame({"model": ["a", "b"],
                       "responses": [["x y", "x z"], ["q", "q"]]}, index=[10, 20])
    out = divmeter.score_frame(df, "distinct-n:n=1", text="responses")
    assert list(out.index) == [10, 20]
    assert out["model"].tolist() == ["a", "b"]
    assert out["distinct-n:n=1"].tolist() == [0.75, 0.5]  # 3/4 and 1/2


@pytest.mark.parametrize(
    ("frame", "kwargs", "match"),
    [({"response": ["a", "b"]}, {}, r"row 0: column 'response' must hold a list of strings "
      r"\(wide form\) or give by=\.\.\. .*; got a string\."),
     ({"response": [["a"], ["b"]], "k": [1, 2]}, {"by": "k"},
      r"row 0: column 'response' must hold one string per row in long form \(by='k'\); got list"),
     ({"text": ["a"]}, {"by": "k"}, r"column 'response' not found; the frame has text\."),
     ({"response": ["a"], "k": [1]}, {"by": "prompt"}, r"column 'prompt' not found")],
)
def test_frame_errors(frame: dict, kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        divmeter.score_frame(pd.DataFrame(frame), "ttr", **kwargs)


def test_not_a_frame() -> None:
    with pytest.raises(InvalidInputError, match="needs a pandas DataFrame or a datasets.Dataset; "
                       "got list"):
        divmeter.score_frame([["a", "b"]], "ttr")


def test_hf_dataset_in_python_and_cli(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_pandas(pd.DataFrame(LONG))
    out = divmeter.score_frame(ds, "distinct-n:n=1", by="prompt_id")
    assert out["distinct-n:n=1"].iloc[:2].tolist() == pytest.approx([6 / 9, 0.5])

    saved = tmp_path / "saved"
    datasets.DatasetDict({"train": ds.select([0]), "test": ds}).save_to_disk(str(saved))
    scores = tmp_path / "scores.jsonl"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO / "src"), "HOME": str(tmp_path)}
    proc = subprocess.run(
        [str(DIVMETER), "score", f"hf:{saved}", "--split", "test", "--text-column", "response",
         "--group-by", "prompt_id", "-m", "distinct-n:n=1", "-o", str(scores)],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr
    recs = [json.loads(ln) for ln in scores.read_text().splitlines()]
    assert [(r["set_id"], r["prompt_id"], r["distinct-n:n=1"]) for r in recs][:2] == [
        ("1", 1, pytest.approx(6 / 9)), ("2", 2, 0.5)]

    # a local JSONL file read by datasets' json builder; a missing split is one line, exit 2
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps({"prompt_id": p, "response": r}) + "\n"
                           for p, r in zip(LONG["prompt_id"], LONG["response"], strict=True)))
    proc = subprocess.run(
        [str(DIVMETER), "score", f"hf:{src}", "--split", "validation", "--group-by",
         "prompt_id", "-m", "ttr"], capture_output=True, text=True, timeout=300, cwd=REPO,
        env=env)
    assert proc.returncode == 2
    assert proc.stderr == (f"divmeter: error: hf:{src}: split 'validation' not found; it has "
                           "train.\n")


def test_metric_result_to_dict_is_strict_json() -> None:
    r = MetricResult("m", np.float64(0.25), "m|v:1", details={
        "per_response": np.array([0.5, np.nan]), "count": np.int64(3), "ok": np.bool_(True),
        "inf": float("inf"), ("a", 1): {1, 2}, "nested": {"arr": np.zeros((2, 2))}})
    text = json.dumps(r.to_dict(with_details=True), allow_nan=False)
    assert json.loads(text) == {
        "metric": "m", "value": 0.25, "signature": "m|v:1",
        "details": {"per_response": [0.5, None], "count": 3, "ok": True, "inf": None,
                    "('a', 1)": [1, 2], "nested": {"arr": [[0.0, 0.0], [0.0, 0.0]]}}}


def test_real_result_to_dict_round_trips() -> None:
    r = divmeter.score(["the cat sat", "the dog sat"], "self-bleu", n=2)
    d = json.loads(json.dumps(r.to_dict(with_details=True), allow_nan=False))
    assert d["value"] == r.value and d["signature"] == r.signature
    assert d["details"]["diversity"] == pytest.approx(1 - r.value)


def test_repr_html() -> None:
    r = divmeter.score([], "distinct-n")
    page = r._repr_html_()
    assert "<th style='text-align:left'>value</th><td style='text-align:left'>null</td>" in page
    assert "empty set" in page and r.signature.replace("|", "|") in page
    m = MetaResult("oca", {"oca": 0.75, "threshold": 0.5}, "oca|v:0.1.0")
    assert "<td style='text-align:left'>0.75</td>" in m._repr_html_()
    assert "<code>oca|v:0.1.0</code>" in m._repr_html_()
