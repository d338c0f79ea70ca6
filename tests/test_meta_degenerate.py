"""Issue 27: every ``divmeter meta`` command on degenerate input ends in one of two answers.

* a refusal (exit 2, exactly one line on stderr, no traceback, never "internal error") when the
  input gives nothing to measure: an empty file, a header without rows, one row, no label or no
  value at all, infinite scores, a metric undefined on every set (pools of one response);
* a documented null (exit 0, the statistic ``null`` in the JSON and the reason beside it) when
  the statistic is undefined by nature: a constant parameter or metric, one rater, all ties.

Each case runs the real command on a small file and checks the exit code, the null and the
reason text (docs/errors.md, "Exit codes of runs that produce nothing usable", holds the same
table).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cli_util import run_main

# ---------------------------------------------------------------------------------------------
# the files


def _jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _resp(i: int) -> list[str]:
    return [f"alpha beta {i} gamma", f"delta {i} eps zeta", "eta theta iota"]


FILES: dict[str, tuple[str, str]] = {
    "empty": ("empty.jsonl", ""),
    "header": ("header.csv", "set_id,label,response\n"),
    "one": ("one.jsonl", _jsonl([{"set_id": "s0", "label": 1, "responses": _resp(0),
                                  "m": 0.5}])),
    "ok": ("ok.jsonl", _jsonl([{"set_id": f"s{i}", "label": i % 2, "responses": _resp(i),
                                "k": f"p{i // 2}", "m": i * 0.1 + (i % 3)} for i in range(8)])),
    "const_label": ("constlabel.jsonl", _jsonl([{"set_id": f"s{i}", "label": 1,
                                                 "responses": _resp(i), "m": float(i)}
                                                for i in range(8)])),
    "const_metric": ("constmetric.jsonl", _jsonl([{"set_id": f"s{i}", "label": i % 2,
                                                   "responses": _resp(i), "k": f"p{i // 2}",
                                                   "m": 0.5} for i in range(8)])),
    "null_metric": ("nullmetric.jsonl", _jsonl([{"set_id": f"s{i}", "label": i % 2, "m": None}
                                                for i in range(8)])),
    "nan_metric": ("nanmetric.csv", "set_id,label,m\n" + "".join(
        f"s{i},{i % 2},{'nan' if i == 3 else i}\n" for i in range(8))),
    "inf_metric": ("infmetric.csv", "set_id,label,k,m\n" + "".join(
        f"s{i},{i % 2},p{i // 2},{'inf' if i == 2 else i}\n" for i in range(8))),
    "text_metric": ("textmetric.jsonl", _jsonl([{"set_id": f"s{i}", "label": i % 2,
                                                 "m": "high" if i == 5 else i}
                                                for i in range(8)])),
    "huge_metric": ("hugemetric.jsonl", "".join(
        f'{{"set_id": "s{i}", "label": {i % 2}, "m": {10**400 if i == 2 else i}}}\n'
        for i in range(8))),
    "single_response": ("single.jsonl", _jsonl([{"set_id": f"s{i}", "label": i % 2,
                                                 "responses": [f"only {i} one"], "k": f"p{i}"}
                                                for i in range(8)])),
    "no_context": ("noctx.jsonl", _jsonl([{"set_id": f"s{i}", "label": i % 3, "m": float(i),
                                           "responses": _resp(i)} for i in range(6)])),
    "own_context": ("ownctx.jsonl", _jsonl([{"set_id": f"s{i}", "label": i % 3, "m": float(i),
                                             "k": f"c{i}"} for i in range(6)])),
    "one_match": ("onematch.jsonl", _jsonl([{"set_id": "a", "label": 1, "k": "p", "m": 0.5},
                                            {"set_id": "b", "label": 0, "k": "p", "m": 0.2},
                                            {"set_id": "c", "label": 1, "k": "q", "m": 0.1}])),
    "stages_const": ("stages_const.jsonl", _jsonl([{"set_id": f"s{i}", "stage": st, "k": f"p{i}",
                                                    "m": 0.5} for i in range(5)
                                                   for st in ("base", "sft")])),
    "stages_one": ("stages_one.jsonl", _jsonl([{"set_id": f"s{i}", "stage": "base", "k": f"p{i}",
                                                "m": i} for i in range(5)])),
    # pairwise
    "pairs_empty": ("pairs_empty.jsonl", ""),
    "pairs_one": ("pairs_one.jsonl", _jsonl([{"set1": _resp(0), "set2": _resp(1), "label": 0,
                                              "scores1": {"m": 1}, "scores2": {"m": 0}}])),
    "pairs_label_ties": ("pairs_lt.jsonl", _jsonl([{"set1": _resp(i), "set2": _resp(i + 1),
                                                    "label": 2, "scores1": {"m": i},
                                                    "scores2": {"m": 1}} for i in range(6)])),
    "pairs_metric_ties": ("pairs_mt.jsonl", _jsonl([{"set1": _resp(i), "set2": _resp(i + 1),
                                                     "label": i % 2, "scores1": {"m": 1},
                                                     "scores2": {"m": 1}} for i in range(6)])),
    "pairs_null": ("pairs_null.jsonl", _jsonl([{"set1": _resp(i), "set2": _resp(i + 1),
                                                "label": i % 2, "scores1": {"m": None},
                                                "scores2": {"m": None}} for i in range(6)])),
    "pairs_single_response": ("pairs_s1.jsonl", _jsonl([{"set1": [f"x {i}"], "set2": [f"y {i}"],
                                                         "label": i % 2} for i in range(6)])),
    # length bias / PATTR sensitivity (pools of responses)
    "pools_empty": ("pools_empty.jsonl", ""),
    "pools_header": ("pools_header.csv", "set_id,response\n"),
    "pools_of_one": ("pools1.jsonl", _jsonl([{"set_id": f"s{i}", "responses": [f"a b c{i}"]}
                                             for i in range(4)])),
    "pools_blank": ("poolsblank.jsonl", _jsonl([{"set_id": "a", "responses": ["", " "]},
                                                {"set_id": "b", "responses": ["\t", "x"]}])),
    "pools_same_length": ("poolsl.jsonl", _jsonl([{"set_id": f"s{i}", "responses": [
        "a b c", "d e e", f"g h {i}"]} for i in range(4)])),
    "pools_identical": ("poolsid.jsonl", _jsonl([{"set_id": f"s{i}", "responses": [
        "a b c", "a b c", "a b c"]} for i in range(4)])),
    # decan-confound (per-set results)
    "conf_empty": ("conf_empty.jsonl", ""),
    "conf_header": ("conf_header.csv", "a_1,D,label,mean_bytes\n"),
    "conf_one": ("conf_one.jsonl", _jsonl([{"a_1": 0.1, "D": 0.2, "label": 1,
                                            "mean_bytes": 30}])),
    "conf_const_label": ("conf_cl.jsonl", _jsonl([{"a_1": 0.1 * i, "D": 0.2 + i, "label": 1,
                                                   "mean_bytes": 20 + 10 * i}
                                                  for i in range(8)])),
    "conf_null": ("conf_null.jsonl", _jsonl([{"a_1": None, "D": None, "label": i % 2,
                                              "mean_bytes": 20 + 10 * i} for i in range(8)])),
    "conf_inf": ("conf_inf.csv", "a_1,D,label,mean_bytes\n" + "".join(
        f"0.{i},{'inf' if i == 3 else i},{i % 2},{20 + i}\n" for i in range(8))),
    # agreement (one column per rater)
    "rate_empty": ("rate_empty.csv", ""),
    "rate_header": ("rate_header.csv", "r1,r2,ref\n"),
    "rate_one": ("rate_one.csv", "r1,r2,ref\n1,1,1\n"),
    "rate_ok": ("rate_ok.csv", "r1,r2,ref\n1,1,1\n2,1,2\n1,2,2\n2,2,1\n1,1,1\n"),
    "rate_const": ("rate_const.csv", "r1,r2,ref\n1,1,1\n1,1,1\n1,1,1\n"),
    "rate_null": ("rate_null.csv", "r1,r2,ref\n,,\n,,\n,,\n"),
    "rate_null_ref": ("rate_nullref.csv", "r1,r2,ref\n1,2,\n2,1,\n"),
    "rate_nan_json": ("rate_nan.json", '[{"r1": NaN, "r2": 1}, {"r1": NaN, "r2": 2}, '
                                       '{"r1": NaN, "r2": 1}]'),
}

# ---------------------------------------------------------------------------------------------
# the cases: (command args with {file}, expected)
#   ("refuse", text in the one error line)
#   ("null", path to the null statistic, path to its reason, text in the reason)

REFUSE, NULL = "refuse", "null"
Case = tuple[str, list[str], tuple[Any, ...]]

CASES: list[Case] = [
    # contest
    ("empty", ["contest", "-m", "distinct-n"], (REFUSE, "empty.jsonl: no labels found")),
    ("header", ["contest", "-m", "distinct-n"], (REFUSE, "header.csv: no labels found")),
    ("one", ["contest", "-c", "m"], (REFUSE, "need at least 2 complete row(s); got 1")),
    ("null_metric", ["contest", "-c", "m"], (REFUSE, "`m` holds 8 NaN/missing value(s)")),
    ("null_metric", ["contest", "-c", "m", "--nan", "omit"],
     (REFUSE, "need at least 2 complete row(s); got 0 after excluding 8 NaN row(s)")),
    ("nan_metric", ["contest", "-c", "m"], (REFUSE, "`m` holds 1 NaN/missing value(s)")),
    ("inf_metric", ["contest", "-c", "m"], (REFUSE, "`m` holds 1 infinite value(s)")),
    ("text_metric", ["contest", "-c", "m"],
     (REFUSE, "column 'm' of textmetric.jsonl must hold numbers (or null); row 6 (set 's5') "
              "holds 'high'")),
    # found by the fuzz: a 400-digit integer crashed the reader (OverflowError)
    ("huge_metric", ["contest", "-c", "m"], (REFUSE, "`m` holds 1 infinite value(s)")),
    ("huge_metric", ["dectest", "-c", "m"], (REFUSE, "`m` holds 1 infinite value(s)")),
    ("const_label", ["contest", "-c", "m"],
     (NULL, ("m", "auc"), ("m", "details", "reason"), "the label is constant (only class 1")),
    ("const_label", ["contest", "-c", "m", "--bootstrap", "50"],
     (NULL, ("m", "spearman"), ("m", "details", "reason"), "the label is constant")),
    ("const_metric", ["contest", "-c", "m"],
     (NULL, ("m", "spearman"), ("m", "details", "reason"), "the metric is constant")),
    ("single_response", ["contest", "-m", "distinct-n"],
     (REFUSE, "distinct-n is undefined on 8 of 8 set(s) (first: set 's0': fewer than two "
              "non-blank responses (got 1)); 0 set(s) left")),
    # dectest
    ("empty", ["dectest", "-m", "distinct-n"], (REFUSE, "no labels found")),
    ("header", ["dectest", "-m", "distinct-n"], (REFUSE, "no labels found")),
    ("one", ["dectest", "-c", "m"], (REFUSE, "need at least 2 complete row(s); got 1")),
    ("null_metric", ["dectest", "-c", "m"], (REFUSE, "`m` holds 8 NaN/missing value(s)")),
    ("inf_metric", ["dectest", "-c", "m"], (REFUSE, "`m` holds 1 infinite value(s)")),
    ("const_label", ["dectest", "-c", "m"],
     (NULL, ("m", "spearman"), ("m", "details", "reason"),
      "the parameter (label) is constant: no correlation is defined")),
    ("const_label", ["dectest", "-c", "m", "--subsample", "3", "--repeats", "5",
                     "--pair-accuracy", "--bootstrap", "50"],
     (NULL, ("m", "spearman_mean"), ("m", "details", "reason"),
      "the parameter (label) is constant")),
    ("const_metric", ["dectest", "-c", "m"],
     (NULL, ("m", "pearson"), ("m", "details", "reason"), "the metric is constant")),
    ("single_response", ["dectest", "-m", "distinct-n"],
     (REFUSE, "distinct-n is undefined on 8 of 8 set(s)")),
    ("no_context", ["dectest", "-c", "m", "--ranking"],
     (REFUSE, "--ranking pairs sets of the same context, but set 's0' (row 1) has no 'prompt'")),
    ("own_context", ["dectest", "-c", "m", "--ranking", "--context-field", "k"],
     (NULL, ("m", "rank_spearman"), ("m", "details", "ranking_reason"),
      "fewer than 2 same-context pairs")),
    # nuggets
    ("empty", ["nuggets", "-m", "distinct-n"], (REFUSE, "empty.jsonl: no labels found")),
    ("one", ["nuggets", "-c", "m"], (REFUSE, "need at least 2 complete row(s); got 1")),
    ("const_label", ["nuggets", "-c", "m"], (REFUSE, "must contain both classes")),
    ("nan_metric", ["nuggets", "-c", "m"],
     (REFUSE, "column 'm' has no value for 1 set(s) (first: set 's3', row 4)")),
    ("inf_metric", ["nuggets", "-c", "m"], (REFUSE, "infinite value")),
    ("const_metric", ["nuggets", "-c", "m", "--group-size", "2"],
     (NULL, ("m", "spearman_before"), ("m", "details", "reason"), "the metric is constant")),
    ("single_response", ["nuggets", "-m", "distinct-n"],
     (REFUSE, "distinct-n is undefined on 8 of 8 set(s)")),
    # paired
    ("empty", ["paired", "-m", "distinct-n"], (REFUSE, "no labels found")),
    ("one", ["paired", "-c", "m"], (REFUSE, "no item matched by 'set_id'")),
    ("one_match", ["paired", "-c", "m", "--key", "k"],
     (REFUSE, "only one item matched by 'k' has exactly one row in each of label=1, 0; a "
              "paired contrast needs at least 2")),
    ("const_label", ["paired", "-c", "m"], (REFUSE, "conditions found: 1.")),
    ("inf_metric", ["paired", "-c", "m", "--key", "k"], (REFUSE, "infinite value")),
    ("const_metric", ["paired", "-c", "m", "--key", "k"],
     (NULL, ("m", "p_two_sided"), ("m", "details", "reason_p"),
      "every difference is zero: the Wilcoxon test is undefined")),
    ("const_metric", ["paired", "-c", "m", "--key", "k"],
     (NULL, ("m", "cohen_d"), ("m", "details", "reason_d"), "d is undefined")),
    ("stages_one", ["paired", "-c", "m", "--by", "stage", "--key", "k", "--contrast", "base>sft"],
     (REFUSE, "no item matched by 'k' has exactly one row in each of stage=base, sft; "
              "conditions found: base.")),
    ("stages_const", ["paired", "-c", "m", "--by", "stage", "--key", "k", "--contrast",
                      "base>sft"],
     (NULL, ("base>sft", "p"), ("base>sft", "details", "reason_p"),
      "every difference is zero: the Wilcoxon test is undefined")),
    ("single_response", ["paired", "-m", "distinct-n", "--key", "k"],
     (REFUSE, "distinct-n is undefined on 8 of 8 set(s)")),
    # pairwise
    ("pairs_empty", ["pairwise", "-c", "m"], (REFUSE, "pairs_empty.jsonl: no pairs found.")),
    ("pairs_one", ["pairwise", "-c", "m"],
     (REFUSE, "one pair left; preference accuracy needs at least 2 pairs.")),
    ("pairs_label_ties", ["pairwise", "-c", "m"],
     (REFUSE, "no pairs left after filtering (0 below min_rating_diff, 6 annotator ties")),
    ("pairs_metric_ties", ["pairwise", "-c", "m", "--metric-ties", "drop"],
     (REFUSE, "no pairs left after filtering (0 below min_rating_diff, 0 annotator ties, 6 "
              "metric ties dropped)")),
    ("pairs_null", ["pairwise", "-c", "m"], (REFUSE, "`score1` holds 6 NaN/missing value(s)")),
    ("pairs_single_response", ["pairwise", "-m", "distinct-n"],
     (REFUSE, "distinct-n is undefined on 6 of 6 pair(s) (first: pair 1 set1: fewer than two "
              "non-blank responses (got 1)); 0 pair(s) left")),
    # length-bias
    ("pools_empty", ["length-bias", "-m", "ttr"],
     (REFUSE, "length bias needs at least 2 responses; got 0")),
    ("pools_header", ["length-bias", "-m", "ttr"],
     (REFUSE, "length bias needs at least 2 responses; got 0")),
    ("pools_blank", ["length-bias", "-m", "ttr"],
     (REFUSE, "length bias: ttr has a value on 1 of 4 responses (it is null on blank ones)")),
    ("pools_of_one", ["length-bias", "-m", "ttr"],
     (NULL, ("ttr", "short_win_rate"), ("ttr", "details", "reasons", "short_win_rate"),
      "no pool holds two scored responses (pools of one response)")),
    ("pools_same_length", ["length-bias", "-m", "ttr"],
     (NULL, ("ttr", "short_win_rate"), ("ttr", "details", "reasons", "short_win_rate"),
      "the responses of every pool have one length")),
    ("pools_same_length", ["length-bias", "-m", "ttr"],
     (NULL, ("ttr", "spearman_raw"), ("ttr", "details", "reasons", "spearman"),
      "the Spearman correlation with length is undefined")),
    ("pools_identical", ["length-bias", "-m", "ttr"],
     (NULL, ("ttr", "spearman_length"), ("ttr", "details", "reasons", "spearman"),
      "the metric is constant over the responses")),
    # pattr-sensitivity
    ("pools_empty", ["pattr-sensitivity", "--top-k", "3", "--target-length", "5", "--window",
                     "2"], (REFUSE, "top-3 needs at least 3 scored responses; got 0")),
    ("pools_of_one", ["pattr-sensitivity", "--top-k", "5", "--target-length", "5", "--window",
                      "2"], (REFUSE, "top-5 needs at least 5 scored responses; got 4")),
    ("pools_identical", ["pattr-sensitivity", "--top-k", "3", "--target-length", "5",
                         "--window", "2"],
     (NULL, ("LT=5,W=2", "t_rouge1"), ("LT=5,W=2", "details", "reasons", "t_rouge1"),
      "the pair similarities of both selections are constant (no variance)")),
    ("pools_of_one", ["pattr-sensitivity", "--top-k", "2", "--target-length", "5", "--window",
                      "2"],
     (NULL, ("LT=5,W=2", "p_rougeL"), ("LT=5,W=2", "details", "reasons", "t_rougeL"),
      "a selection has fewer than 2 pair similarities")),
    # decan-confound
    ("conf_empty", ["decan-confound"], (REFUSE, "conf_empty.jsonl: no record (an empty table)")),
    ("conf_header", ["decan-confound"], (REFUSE, "conf_header.csv: no record (an empty table)")),
    ("conf_one", ["decan-confound"], (REFUSE, "decan-confound needs at least 2 sets")),
    ("conf_null", ["decan-confound"],
     (REFUSE, "no value to measure: a_1, D are missing (null) on all 8 sets")),
    ("conf_inf", ["decan-confound"],
     (REFUSE, "conf_inf.csv record 3: field 'D' must be a finite number")),
    ("conf_const_label", ["decan-confound"],
     (NULL, ("overall", "a_1", "gap"), ("reasons", "gap"),
      "no set of the low class (label 0): every low mean and every gap is undefined")),
    # agreement
    ("rate_empty", ["agreement", "-r", "r1", "-r", "r2"], (REFUSE, "rate_empty.csv: empty table")),
    ("rate_header", ["agreement", "-r", "r1", "-r", "r2"],
     (REFUSE, "rate_header.csv: no row of ratings; agreement needs at least 2 rated items")),
    ("rate_one", ["agreement", "-r", "r1", "-r", "r2", "--reference", "ref"],
     (REFUSE, "rate_one.csv: one row of ratings")),
    ("rate_null", ["agreement", "-r", "r1", "-r", "r2", "--reference", "ref"],
     (REFUSE, "rate_null.csv: no labels: every rating of r1, r2 is missing on all 3 rows")),
    ("rate_ok", ["agreement", "-r", "r1"],
     (REFUSE, "one rater and no --reference: nothing to measure")),
    ("rate_null_ref", ["agreement", "-r", "r1", "--reference", "ref"],
     (REFUSE, "no labels in the reference column 'ref'")),
    ("rate_ok", ["agreement", "-r", "r1", "--reference", "ref"],
     (NULL, ("fleiss_kappa",), ("details", "reasons", "fleiss_kappa"),
      "needs at least two raters")),
    ("rate_ok", ["agreement", "-r", "r1", "--reference", "ref"],
     (NULL, ("mean_pairwise_agreement",), ("details", "reasons", "mean_pairwise_agreement"),
      "needs at least two raters")),
    ("rate_const", ["agreement", "-r", "r1", "-r", "r2"],
     (NULL, ("krippendorff_alpha",), ("details", "reasons", "krippendorff_alpha"),
      "every rating has the same value")),
    ("rate_null_ref", ["agreement", "-r", "r1", "-r", "r2", "--reference", "ref"],
     (NULL, ("per_rater", "r1", "kappa"), ("details", "reasons", "per_rater.r1"),
      "no item has both this rating and a reference label")),
    ("rate_nan_json", ["agreement", "-r", "r1", "-r", "r2"],
     (NULL, ("fleiss_kappa",), ("details", "reasons", "fleiss_kappa"),
      "no item is rated by every rater")),
]


def _get(d: Any, path: tuple[str, ...]) -> Any:
    for k in path:
        assert isinstance(d, dict) and k in d, f"no {k!r} in {d!r}"
        d = d[k]
    return d


def _ids() -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for case, args, _ in CASES:
        base = f"{args[0]}-{case}"
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return out


@pytest.mark.parametrize(("case", "args", "expected"), CASES, ids=_ids())
def test_meta_degenerate_input(case: str, args: list[str], expected: tuple[Any, ...],
                               tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    name, text = FILES[case]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, out, err = run_main(monkeypatch, capsys, "meta", args[0], str(path), *args[1:],
                              "-f", "json")
    assert "Traceback" not in err and "internal error" not in err, err
    if expected[0] == REFUSE:
        assert code == 2, (code, out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("divmeter: error: "), err
        assert expected[1] in lines[0], lines[0]
        assert out == ""
        return
    _, stat, reason_path, reason = expected
    assert code == 0, err
    assert err.strip() == "", err  # a documented null is not a warning
    d = json.loads(out)
    assert _get(d, stat) is None
    assert reason in _get(d, reason_path)


REPORTS = {"contest": 3, "dectest": 3, "paired": 3, "length-bias": 3, "decan-confound": 3,
           "pattr-sensitivity": 0}


@pytest.mark.parametrize(("case", "args", "expected"),
                         [c for c in CASES if c[2][0] == NULL and c[1][0] in REPORTS],
                         ids=[i for i, c in zip(_ids(), CASES, strict=True)
                              if c[2][0] == NULL and c[1][0] in REPORTS])
def test_documented_nulls_in_tables_and_reports(case: str, args: list[str],
                                                expected: tuple[Any, ...], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The table, the report folder and the HTML page show a null too (no format of None)."""
    name, text = FILES[case]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    report = ["--report", str(tmp_path / "rep"), "--no-plots"] if REPORTS[args[0]] else []
    code, out, err = run_main(monkeypatch, capsys, "meta", args[0], str(path), *args[1:],
                              "-f", "table", *report, "--html", str(tmp_path / "r.html"))
    assert code == 0, err
    assert "undefined" in out.lower() or "Undefined" in out
    assert (tmp_path / "r.html").stat().st_size > 0
    if report:
        assert (tmp_path / "rep" / "report.json").exists()


# ---------------------------------------------------------------------------------------------
# the same inputs keep their numbers where the statistic is defined (the fixes change nothing
# on valid input)


CHECKS: list[tuple[str, list[str], Callable[[dict[str, Any]], bool]]] = [
    ("ok", ["contest", "-c", "m"], lambda d: d["m"]["auc"] == 0.625 and "details" not in d["m"]),
    ("ok", ["dectest", "-c", "m"], lambda d: round(d["m"]["spearman"], 6) == 0.218218),
    ("pairs_metric_ties", ["pairwise", "-c", "m", "--resamples", "100"],
     # every metric tie is a miss by the documented policy: a value, not a null
     lambda d: d["m"]["accuracy"] == 0.0 and d["m"]["n_metric_ties"] == 6),
    ("rate_const", ["agreement", "-r", "r1", "--reference", "ref"],
     # one category throughout: kappa 1.0 by the documented convention of stats.cohen_kappa
     lambda d: d["per_rater"]["r1"]["kappa"] == 1.0 and d["per_rater"]["r1"]["n"] == 3),
]


@pytest.mark.parametrize(("case", "args", "check"), CHECKS,
                         ids=[f"{a[0]}-{c}" for c, a, _ in CHECKS])
def test_meta_defined_values_stay(case: str, args: list[str],
                                  check: Callable[[dict[str, Any]], bool], tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    name, text = FILES[case]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, out, err = run_main(monkeypatch, capsys, "meta", args[0], str(path), *args[1:],
                              "-f", "json")
    assert code == 0, err
    assert check(json.loads(out)), out


def test_reasons_are_printed_under_the_tables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    name, text = FILES["const_label"]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    code, out, err = run_main(monkeypatch, capsys, "meta", "contest", str(path), "-c", "m",
                              "-f", "markdown")
    assert code == 0, err
    assert "- m: the label is constant (only class 1, 8 rows)" in out
