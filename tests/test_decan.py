"""Decan pure layer (numpy only): hand-computed curves, errors, formatting, aggregation.

No model runs here; the real-model tests are in tests/test_decan_lm.py.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import numpy as np
import pytest

from divmeter.backends.lm import attribute_tokens
from divmeter.core.errors import InvalidInputError
from divmeter.metrics.decan import (
    DecanSurprisal,
    common_byte_length,
    decan,
    decan_difference,
    decan_from_surprisal,
    decan_over_prompts,
    format_responses,
    response_label,
    sample_permutations,
    truncate_utf8,
)

# Two permutations of two responses: r0 has 10 bytes, r1 has 2 bytes.
# perm 0 = (r0, r1): 10 bits / 10 bytes, 4 bits / 2 bytes  -> rates 1.0, 2.0
# perm 1 = (r1, r0):  6 bits /  2 bytes, 6 bits / 10 bytes -> rates 3.0, 0.6
BITS = [[10.0, 4.0], [6.0, 6.0]]
BYTES = [[10, 2], [2, 10]]
H = [1.0, 2.0]


def test_curve_is_mean_of_ratios_not_ratio_of_means() -> None:
    r = decan_from_surprisal(BITS, BYTES, H)
    mean_of_ratios = [(1.0 + 3.0) / 2, (2.0 + 0.6) / 2]  # [2.0, 1.3]
    ratio_of_means = [(10 + 6) / (10 + 2), (4 + 6) / (2 + 10)]  # [1.333.., 0.833..]
    assert r.curve.tolist() == pytest.approx(mean_of_ratios, abs=1e-12)
    assert not np.allclose(r.curve, ratio_of_means)
    assert r.a_1 == pytest.approx(2.0)
    assert r.a_n == pytest.approx(1.3)
    assert r.curve_bits.tolist() == [8.0, 5.0]


def test_golden_c_sigma_d_e() -> None:
    r = decan_from_surprisal(BITS, BYTES, H)
    assert r.C == pytest.approx(2 ** -1.5)  # 2^-(mean of 1 and 2)
    assert r.sigma == pytest.approx(0.5)  # population std of [1, 2]
    assert r.D == pytest.approx(2 ** -1.5 * 1.3)
    assert r.D == pytest.approx(0.45961940777)
    assert r.E == pytest.approx(3.0)  # (8 - 5) + (5 - 5) bits
    assert r.E_rate == pytest.approx(0.7)  # (2.0 - 1.3) + 0 bits/byte
    assert r.n == 2 and r.permutations == 2
    assert r.perm_bpb.tolist() == [[1.0, 2.0], [3.0, 0.6]]


@pytest.mark.parametrize(
    ("bits", "nbytes", "h", "curve", "C", "D", "E", "E_rate", "sigma"),
    [
        # one permutation, falling curve
        ([[30, 20, 10]], [[10, 10, 10]], [2, 2, 2], [3, 2, 1], 0.25, 0.25, 30, 3, 0.0),
        # flat curve: no excess entropy
        ([[8, 8], [8, 8]], [[4, 4], [4, 4]], [2, 2], [2, 2], 0.25, 0.5, 0, 0, 0.0),
        # h = 0 (perfectly predictable alone): C = 1
        ([[5, 1]], [[5, 1]], [0, 0], [1, 1], 1.0, 1.0, 4, 0, 0.0),
        # rising curve gives negative excess entropy (as in the paper's Table 5, mixed/GPT-2)
        ([[1, 3]], [[1, 1]], [1, 3], [1, 3], 0.25, 0.75, -2, -2, 1.0),
    ],
)
def test_golden_table(bits, nbytes, h, curve, C, D, E, E_rate, sigma) -> None:  # noqa: ANN001
    r = decan_from_surprisal(bits, nbytes, h)
    assert r.curve.tolist() == pytest.approx(curve)
    assert (r.C, r.D, r.E, r.E_rate, r.sigma) == pytest.approx((C, D, E, E_rate, sigma))


def test_to_dict_fields() -> None:
    d = decan_from_surprisal(BITS, BYTES, H).to_dict()
    assert {"D", "a_n", "C", "sigma", "E", "E_rate", "curve", "a_1"} <= set(d)
    assert d["curve"] == pytest.approx([2.0, 1.3])


@pytest.mark.parametrize(
    ("bits", "nbytes", "h", "match"),
    [
        ([[1.0, 2.0]], [[3, 0]], [1, 1], "zero-byte response at permutation 0, position 1"),
        ([[1.0, 2.0]], [[3, 4, 5]], [1, 1], "same shape"),
        ([1.0, 2.0], [3, 4], [1, 1], r"shape \(permutations, n\)"),
        ([[1.0, 2.0]], [[3, 4]], [1, 1, 1], r"shape \(n,\) = \(2,\)"),
        ([[np.nan, 2.0]], [[3, 4]], [1, 1], "finite"),
        ([[1.0, 2.0]], [[3, 4]], [1, np.inf], "finite"),
        ([[1.0, 2.0]], [[3.5, 4]], [1, 1], "integer byte counts"),
        ([[1.0, 2.0]], [[-3, 4]], [1, 1], "integer byte counts"),
        ([[]], [[]], [], r"shape \(permutations, n\)"),
    ],
)
def test_errors(bits, nbytes, h, match) -> None:  # noqa: ANN001
    with pytest.raises(InvalidInputError, match=match):
        decan_from_surprisal(bits, nbytes, h)


def test_over_prompts_and_difference() -> None:
    a = decan_from_surprisal(BITS, BYTES, H)
    b = decan_from_surprisal([[30, 20]], [[10, 10]], [2, 2])  # curve [3, 2], C 0.25, D 0.5
    agg = decan_over_prompts([a, b])
    assert agg["D"] == pytest.approx((a.D + 0.5) / 2)
    assert agg["n_prompts"] == 2
    assert agg["curve"] == pytest.approx([2.5, 1.65])
    assert decan_over_prompts([0.2, 0.4])["D"] == pytest.approx(0.3)
    assert "curve" not in decan_over_prompts([0.2, 0.4])
    assert decan_difference([a, b], [0.1, 0.1]) == pytest.approx((a.D + 0.5) / 2 - 0.1)
    with pytest.raises(InvalidInputError, match="at least one prompt"):
        decan_over_prompts([])
    with pytest.raises(InvalidInputError, match=r"`results_2\[0\]` has no Decan value"):
        decan_difference([0.1], [None])


def test_result_is_frozen_dataclass() -> None:
    r = decan_from_surprisal(BITS, BYTES, H)
    assert isinstance(r, DecanSurprisal)
    with pytest.raises(AttributeError):
        r.D = 1.0  # type: ignore[misc]


# -- formatting, permutations, truncation ------------------------------------------------------


@pytest.mark.parametrize(
    ("i", "label"),
    [(0, "A"), (1, "B"), (25, "Z"), (26, "AA"), (27, "AB"), (51, "AZ"), (52, "BA"), (701, "ZZ"),
     (702, "AAA")],
)
def test_response_label(i: int, label: str) -> None:
    assert response_label(i) == label


def test_instruct_format() -> None:
    text, spans = format_responses("Write about rain.", ["It pours.", "Dry."], "instruct")
    assert text == "Write about rain.\n\nResponse A: It pours.\n\nResponse B: Dry."
    assert [text[a:b] for a, b in spans] == ["It pours.", "Dry."]


def test_instruct_format_empty_prompt() -> None:
    text, spans = format_responses("", ["x", "y"], "instruct")
    assert text == "Response A: x\n\nResponse B: y"
    assert [text[a:b] for a, b in spans] == ["x", "y"]


def test_completion_format_repeats_prompt() -> None:
    text, spans = format_responses("Suppose there's an", ["escape plan.", "omelet."], "completion")
    assert text == "1. Suppose there's an escape plan.\n\n2. Suppose there's an omelet."
    assert [text[a:b] for a, b in spans] == ["escape plan.", "omelet."]
    text, spans = format_responses("", ["a", "b"], "completion")
    assert text == "1. a\n\n2. b"


def test_permutations_are_seeded_permutations() -> None:
    p = sample_permutations(5, 50, seed=3)
    assert p.shape == (50, 5)
    assert (np.sort(p, axis=1) == np.arange(5)).all()
    assert (p == sample_permutations(5, 50, seed=3)).all()
    assert not (p == sample_permutations(5, 50, seed=4)).all()


@pytest.mark.parametrize(
    ("text", "n", "out"),
    [("hello", 3, "hel"), ("héllo", 2, "h"), ("héllo", 3, "hé"), ("ab", 10, "ab"),
     ("日本", 4, "日"), ("x", 0, "")],
)
def test_truncate_utf8(text: str, n: int, out: str) -> None:
    assert truncate_utf8(text, n) == out
    assert len(truncate_utf8(text, n).encode("utf-8")) <= n


def test_common_byte_length() -> None:
    assert common_byte_length([["abcd", "héllo"], ["abc"]]) == 3
    with pytest.raises(InvalidInputError, match="at least one response"):
        common_byte_length([[]])


# -- token attribution (character-span overlap) ------------------------------------------------


def test_attribution_overlap_rule() -> None:
    # text: "Q\n\nResponse A: Hi.\n\nResponse B: Yo"; response spans (15, 18) and (32, 34)
    text, spans = format_responses("Q", ["Hi.", "Yo"], "instruct")
    assert spans == [(15, 18), (32, 34)]
    offsets = np.array([
        [0, 0],    # BOS: zero width, never attributed
        [0, 1],    # "Q"
        [1, 3],    # "\n\n"
        [3, 14],   # "Response A:"
        [14, 16],  # " H"  leading space from the header, letter from the response -> response 0
        [16, 17],  # "i"
        [17, 20],  # ".\n\n" merges the last character with the separator -> response 0
        [20, 31],  # "Response B:"
        [31, 34],  # " Yo" -> response 1
    ])
    idx, owner = attribute_tokens(offsets, spans)
    assert idx.tolist() == [4, 5, 6, 8]
    assert owner.tolist() == [0, 0, 0, 1]


# -- scoring layer: parameters, degenerate sets, signature (no model is loaded) ---------------

needs_lm = pytest.mark.lm  # skipped with the install line when divmeter[lm] is missing


def _sig(**kw: object) -> str:
    tv = importlib.metadata.version("torch")
    tf = importlib.metadata.version("transformers")
    extra = "".join(f"|{k}:{v}" for k, v in kw.items())
    return (f"decan|fmt:completion|perms:50|seed:0|model:gemma-3-270m@a5fd3b62230a{extra}"
            f"|torch:{tv}|transformers:{tf}|v:0.1.0")


@needs_lm
@pytest.mark.parametrize(
    ("responses", "kw", "reason"),
    [
        ([], {}, "empty set"),  # the rule for degenerate sets, before any model load
        (["only one"], {}, "fewer than two non-blank responses (got 1)"),
        (["a", ""], {}, "fewer than two non-blank responses (got 1)"),
        (["é", "ab"], {"max_bytes": 1},
         "response 0 is empty (0 bytes): per-byte surprise undefined"),
    ],
)
def test_degenerate_sets(responses: list[str], kw: dict, reason: str) -> None:
    r = decan(responses, prompt="p", **kw)
    assert r.value is None
    assert r.reason == reason
    assert r.signature == _sig(**kw)


@needs_lm
@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"permutations": 0}, "`permutations` of decan must be an integer >= 1; got 0."),
        ({"format": "chat"}, "`format` of decan must be one of instruct, completion; got 'chat'."),
        ({"seed": -1}, "`seed` of decan must be an integer >= 0; got -1."),
        ({"max_bytes": 0}, "`max_bytes` of decan must be an integer >= 1; got 0."),
        ({"prompt": 3}, "`prompt` of decan must be a string; got int."),
        ({"dtype": "int8"}, "`dtype` of decan must be one of float32, bfloat16"),
        ({"model": "/no/such/model.gguf"}, "GGUF file '/no/such/model.gguf' does not exist."),
    ],
)
def test_parameter_errors(kw: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        decan(["a", "b"], **kw)


def test_bare_string_rejected() -> None:
    with pytest.raises(InvalidInputError, match="must be a list of strings; got a single str"):
        decan("abc")


@needs_lm
def test_signature_lists_every_setting() -> None:
    r = decan([], prompt="p", permutations=7, format="completion", seed=3, max_bytes=40)
    tv = importlib.metadata.version("torch")
    tf = importlib.metadata.version("transformers")
    assert r.signature == (
        "decan|fmt:completion|perms:7|seed:3|model:gemma-3-270m@a5fd3b62230a|max_bytes:40"
        f"|torch:{tv}|transformers:{tf}|v:0.1.0"
    )
    bf = decan([], dtype="bfloat16").signature.split("|")[4]
    assert bf == "model:gemma-3-270m@a5fd3b62230a/bf16"


def test_registry_entry_and_no_torch_on_import() -> None:
    code = (
        "import sys, divmeter\n"
        "from divmeter.engine.registry import get_metric\n"
        "import divmeter.metrics.decan, divmeter.backends.lm, divmeter.report.decan_plot\n"
        "s = get_metric('decan')\n"
        "assert (s.family, s.extra, s.granularity) == ('lm', 'lm', 'set'), s\n"
        "assert s.params['permutations'] == 50 and s.params['format'] == 'completion'\n"
        "bad = [m for m in ('torch', 'transformers', 'matplotlib') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- plot ---------------------------------------------------------------------------------------


def test_plot_curves_and_scores(tmp_path) -> None:  # noqa: ANN001
    pytest.importorskip("matplotlib")
    from divmeter.report.decan_plot import plot_decan_curves

    a = decan_from_surprisal(BITS, BYTES, H)
    b = decan_from_surprisal([[30, 20]], [[10, 10]], [2, 2])
    out = tmp_path / "curves.png"
    fig = plot_decan_curves({"policy 1": [a, b], "policy 2": b}, path=out, title="t")
    assert out.stat().st_size > 1000
    assert len(fig.axes) == 2
    lines = fig.axes[0].get_lines()
    # faint per-prompt curves of policy 1 (2), its mean, then policy 2's single curve
    assert np.allclose(lines[2].get_ydata(), [(2.0 + 3.0) / 2, (1.3 + 2.0) / 2])
    assert np.allclose(lines[3].get_ydata(), [3.0, 2.0])


def test_plot_errors() -> None:
    pytest.importorskip("matplotlib")
    from divmeter.report.decan_plot import plot_decan_curves

    with pytest.raises(InvalidInputError, match="at least one policy"):
        plot_decan_curves({})
    with pytest.raises(InvalidInputError, match="same length n; got lengths \\[2, 3\\]"):
        plot_decan_curves({"x": [[1.0, 2.0], [1.0, 2.0, 3.0]]})
