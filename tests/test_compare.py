"""``divmeter compare`` and :func:`divmeter.studies.meta.compare.compare` (issue 26): system vs
baseline on matched items, oriented by each metric's direction, Holm over the whole family."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from cli_util import run_main
from divmeter.core.errors import InvalidInputError
from divmeter.studies.meta import protocols as pr
from divmeter.studies.meta import stats as st
from divmeter.studies.meta.compare import compare, match_keys

#: CDM Table 4, Self-BLEU row as printed (dissimilarities, 1 - self-BLEU) for P1 and P2 of the
#: manually curated scenarios S01..S08; Table 2 gives Acc 62.5% and Sum +0.421.
P1 = [0.765, 0.712, 0.585, 0.897, 0.631, 0.732, 0.452, 0.565]
P2 = [0.517, 0.662, 0.604, 0.645, 0.830, 0.560, 0.431, 0.669]
COL = "self-bleu:n=3"


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _score_file(path: Path, dissim: list[float], *, order: list[int] | None = None) -> Path:
    idx = order or list(range(len(dissim)))
    return _write(path, [{"set_id": f"S0{i + 1}", COL: round(1 - dissim[i], 3)} for i in idx])


def test_cdm_table4_self_bleu_row_from_two_files(tmp_path, monkeypatch, capsys):
    """P1 against the P2 baseline: win rate 62.5% and sum of differences +0.421, as CDM Table 2
    prints for self-BLEU, with self-BLEU's registry direction (lower = more diverse)."""
    p1 = _score_file(tmp_path / "p1.jsonl", P1, order=[7, 6, 5, 4, 3, 2, 1, 0])  # order free
    p2 = _score_file(tmp_path / "p2.jsonl", P2)
    code, out, err = run_main(monkeypatch, capsys, "compare", f"P2={p2}", f"P1={p1}", "-c", COL,
                              "-f", "json", "--bootstrap", "2000")
    assert code == 0, err
    row = json.loads(out)[COL]
    assert (row["system"], row["baseline"], row["direction"]) == ("P1", "P2", "lower")
    assert row["win_rate"] == 0.625
    assert row["mean_diff"] * 8 == pytest.approx(0.421, abs=1e-9)
    d = np.array(P1) - np.array(P2)
    assert row["p_two_sided"] == pytest.approx(stats.wilcoxon(d).pvalue, rel=1e-12)
    assert row["cohen_d"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-9)
    low, high = row["mean_diff_ci"]
    assert low < row["mean_diff"] < high
    assert row["signature"].startswith("compare|key:set_id|test:wilcoxon")
    assert "resamples:2000|seed:0" in row["signature"]


def test_compare_equals_meta_paired_on_the_same_data(tmp_path, monkeypatch, capsys):
    """The same numbers as `meta paired` on one file holding both conditions."""
    both = []
    for i, (x, z) in enumerate(zip(P1, P2, strict=True)):
        both += [{"set_id": f"S0{i + 1}", "label": 1, COL: round(1 - x, 3)},
                 {"set_id": f"S0{i + 1}", "label": 0, COL: round(1 - z, 3)}]
    path = _write(tmp_path / "both.jsonl", both)
    code, out, err = run_main(monkeypatch, capsys, "meta", "paired", str(path), "-c", COL,
                              "-f", "json")
    assert code == 0, err
    paired = json.loads(out)[COL]
    code, out, err = run_main(monkeypatch, capsys, "compare", str(path), "--by", "label",
                              "--baseline", "0", "-c", COL, "-f", "json", "--bootstrap", "0")
    assert code == 0, err
    row = json.loads(out)[COL]
    assert row["system"] == "1"
    for ours, theirs in (("mean_diff", "mean_diff"), ("cohen_d", "cohen_d"),
                         ("win_rate", "sign_accuracy"), ("p_two_sided", "p_two_sided"),
                         ("n", "n")):
        assert row[ours] == pytest.approx(paired[theirs], rel=1e-12), ours
    assert "mean_diff_ci" not in row or row["mean_diff_ci"] is None


def test_three_systems_holm_over_the_whole_family():
    rng = np.random.default_rng(3)
    base = rng.normal(size=30)
    systems = {"base": {"m1": base, "m2": -base},
               "b": {"m1": base + 0.3 + rng.normal(scale=0.2, size=30), "m2": -base - 0.1},
               "c": {"m1": base - 0.05 + rng.normal(scale=0.5, size=30),
                     "m2": -base + rng.normal(scale=0.1, size=30)}}
    keys = {s: [f"k{i}" for i in range(30)] for s in systems}
    r = compare(systems, keys, directions={"m2": "lower"}, bootstrap=None)
    assert list(r.results) == ["m1: b", "m2: b", "m1: c", "m2: c"]
    ps = [r.results[k].values["p_two_sided"] for k in r.results]
    holm = st.adjust_pvalues(ps, "holm")
    assert [r.results[k].values["p_holm"] for k in r.results] == pytest.approx(list(holm))
    assert "family:4" in r.results["m1: b"].signature
    # m2 is lower-is-diverse: system b lowers it by 0.1 everywhere, so b is MORE diverse
    v = r.results["m2: b"].values
    assert (v["direction"], v["win_rate"]) == ("lower", 1.0)
    assert v["mean_diff"] == pytest.approx(0.1)
    # the same as paired() on the matched, oriented arrays
    ref = pr.paired({"m1": systems["c"]["m1"]}, {"m1": base}).results["m1"].values
    assert r.results["m1: c"].values["mean_diff"] == pytest.approx(ref["mean_diff"], rel=1e-12)


def test_items_are_matched_by_key_and_unmatched_are_counted():
    rb, ro, unmatched = match_keys(["a", "b", "c", "d"], ["d", "b", "b", "a", "z"])
    assert rb.tolist() == [0, 3] and ro.tolist() == [3, 0] and unmatched == 3
    r = compare({"A": {"m": [1.0, 2.0, 3.0, 4.0]}, "B": {"m": [4.5, 0.0, 0.0, 1.5, 9.0]}},
                {"A": ["a", "b", "c", "d"], "B": ["d", "b", "b", "a", "z"]}, bootstrap=None)
    v = r.results["m"].values
    # matched: a (1.5 vs 1.0) and d (4.5 vs 4.0); b repeats in B, c and z have no partner
    assert (v["n"], v["n_unmatched"], v["mean_diff"]) == (2, 3, 0.5)
    assert v["win_rate"] == 1.0 and v["ties"] == 0.0


@pytest.mark.parametrize(("systems", "keys", "kw", "match"), [
    ({"A": {"m": [1.0]}}, {"A": ["a"]}, {}, "at least two systems"),
    ({"A": {"m": [1.0]}, "B": {"m": [1.0]}}, {"A": ["a"], "B": ["a"]}, {"baseline": "C"},
     "baseline 'C' is not one of"),
    ({"A": {"m": [1.0]}, "B": {"x": [1.0]}}, {"A": ["a"], "B": ["a"]}, {}, "same metrics"),
    ({"A": {"m": [1.0]}, "B": {"m": [1.0]}}, {"A": ["a"], "B": ["b"]}, {}, "no set_id of system"),
])
def test_bad_comparisons_are_refused(systems, keys, kw, match):
    with pytest.raises(InvalidInputError, match=match):
        compare(systems, keys, bootstrap=None, **kw)


def test_cli_computes_metrics_on_response_sets_and_writes_html(tmp_path, monkeypatch, capsys):
    prompts = [f"p{i}" for i in range(6)]
    diverse = [{"set_id": p, "prompt": p,
                "responses": [f"{p} alpha beta {j}", f"gamma {p} delta", f"epsilon zeta {j} eta",
                              f"theta iota kappa {p}"]} for j, p in enumerate(prompts)]
    collapsed = [{"set_id": p, "prompt": p,
                  "responses": [f"the same answer {p}"] * 3 + [f"the same reply {p}"]}
                 for p in prompts]
    a = _write(tmp_path / "base.jsonl", diverse)
    b = _write(tmp_path / "tuned.jsonl", collapsed)
    html = tmp_path / "cmp.html"
    code, out, err = run_main(monkeypatch, capsys, "compare", str(a), str(b), "-m", "distinct-n",
                              "-m", "self-bleu", "-f", "json", "--html", str(html),
                              "--bootstrap", "500", "--key", "prompt")
    assert code == 0, err
    rows = json.loads(out)
    assert rows["distinct-n"]["system"] == "tuned" and rows["distinct-n"]["baseline"] == "base"
    # the tuned system collapsed: less diverse on both metrics, whatever their direction
    assert rows["distinct-n"]["win_rate"] == 0.0 and rows["distinct-n"]["mean_diff"] < 0
    assert rows["self-bleu"]["win_rate"] == 0.0 and rows["self-bleu"]["mean_diff"] < 0
    page = html.read_text()
    assert "compare" in page and "data:image/png;base64" in page


def test_cli_needs_two_files_or_by(tmp_path, monkeypatch, capsys):
    a = _score_file(tmp_path / "a.jsonl", P1)
    code, _, err = run_main(monkeypatch, capsys, "compare", str(a), "-c", COL)
    assert code == 2 and "two files or more" in err
