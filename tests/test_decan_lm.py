"""Decan with a real base LM (Gemma-3-270m, offline GGUF) on small inputs.

Few permutations and short texts keep the whole file to a couple of minutes on a shared CPU.
The synthetic scenarios follow the paper's appendix B.2 (pure noise, multi-mode incoherent,
multi-mode coherent, one-mode, mixed), built by divmeter.inputs.scenarios.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import divmeter
from divmeter.backends.lm import get_scorer
from divmeter.inputs.scenarios import decan_scenarios, noise
from divmeter.metrics.decan import decan, decan_surprisal, format_responses

# `lm`: skipped with the install line when divmeter[lm] is missing (conftest.py)
pytestmark = [pytest.mark.lm, pytest.mark.slow]

THREADS = 1  # the CPU is shared: one thread avoids oversubscription stalls
PROMPT = "Write one sentence about rain."
SAME = ["The rain fell softly on the quiet village all night long."] * 5
DIVERSE = [
    "The rain fell softly on the quiet village all night long.",
    "My grandmother kept a tin bucket by the door to catch the drips.",
    "Monsoon season brings floods that reshape the river delta every year.",
    "Umbrellas bloomed like black flowers outside the train station.",
    "Farmers in Kansas prayed for a storm that never came.",
]


def run(responses: list[str], perms: int = 5, prompt: str = PROMPT, **kw: object) -> dict:
    """Decan in the instruct format, the paper's format for its synthetic scenarios (appendix
    A.1 and B.2); the metric's default is completion (see test_default_format_is_completion)."""
    kw.setdefault("format", "instruct")
    r = decan(responses, prompt=prompt, permutations=perms, threads=THREADS, **kw)
    assert r.value is not None, r.reason
    return dict(r.details)


@pytest.fixture(scope="module")
def basic() -> dict[str, dict]:
    rng = random.Random(0)
    return {
        "same": run(SAME, perms=3),
        "diverse": run(DIVERSE, perms=3),
        "noise": run([noise(rng) for _ in range(5)], perms=3),
    }


def test_identical_responses_fall_steeply(basic: dict[str, dict]) -> None:
    c = np.asarray(basic["same"]["curve"])
    assert c[0] > 0.5  # the first copy is surprising...
    assert c[-1] < 0.1 * c[0]  # ...the fifth is almost free
    assert np.all(np.diff(c) <= 1e-6)  # monotone: every copy lowers the surprise
    assert basic["same"]["sigma"] == pytest.approx(0.0, abs=1e-6)  # same text, same h(r|p)


def test_diverse_coherent_keeps_a_n_high(basic: dict[str, dict]) -> None:
    d, s = basic["diverse"], basic["same"]
    assert d["a_n"] > 0.6 * d["a_1"]
    assert d["a_n"] > 10 * s["a_n"]
    assert d["D"] > 10 * s["D"]


def test_random_strings_get_low_coherence(basic: dict[str, dict]) -> None:
    assert basic["noise"]["C"] < 0.05
    assert basic["diverse"]["C"] > 0.3
    assert basic["noise"]["a_n"] > 4.0  # noise stays unpredictable (flat, high curve)...
    assert basic["noise"]["D"] < 0.25 * basic["diverse"]["D"]  # ...but C suppresses it


# -- appendix B.2 scenarios (built by divmeter.inputs.scenarios) -----------------------------------


@pytest.fixture(scope="module")
def scenario_scores() -> dict[str, dict]:
    return {name: run(s, perms=3) for name, s in decan_scenarios(n=5, seed=0).items()}


def test_scenarios_ranking(scenario_scores: dict[str, dict]) -> None:
    d = {k: v["D"] for k, v in scenario_scores.items()}
    assert d["one-mode"] < d["multi-mode coherent"]
    assert d["pure noise"] == min(d.values())


def test_scenarios_coherence(scenario_scores: dict[str, dict]) -> None:
    c = {k: v["C"] for k, v in scenario_scores.items()}
    assert c["pure noise"] < c["multi-mode incoherent"] < c["multi-mode coherent"]
    assert c["pure noise"] < c["mixed"] < c["multi-mode coherent"]
    # the coherence spread flags the mixed set (appendix B.2: largest sigma)
    s = {k: v["sigma"] for k, v in scenario_scores.items()}
    assert s["mixed"] == max(s.values())
    # one mode: the curve falls further than with five modes
    a = {k: v["a_n"] / v["a_1"] for k, v in scenario_scores.items()}
    assert a["one-mode"] < a["multi-mode coherent"]


# -- invariants of the scoring layer ---------------------------------------------------------


@pytest.mark.parametrize("fmt", ["instruct", "completion"])
def test_first_position_equals_unconditional_pass(fmt: str) -> None:
    """a_1 of every permutation is h(r|p) x bytes of the response placed first, in both formats
    of appendix A.1 (the first slot and the lone response see the same context)."""
    texts = DIVERSE[:3]
    bits, nbytes, h, perms = decan_surprisal(
        texts, prompt=PROMPT, permutations=4, seed=1, threads=THREADS, format=fmt
    )
    assert bits.shape == nbytes.shape == perms.shape == (4, 3)
    assert nbytes.tolist() == [[len(texts[i].encode()) for i in p] for p in perms]
    first = perms[:, 0]
    np.testing.assert_allclose(bits[:, 0], h[first] * nbytes[:, 0], atol=0.02)


def test_shared_prefix_and_batching_match_one_at_a_time() -> None:
    sc = get_scorer(threads=THREADS)
    # permutations sharing their first responses (a prefix tree), plus a text that is a prefix
    # of another one (an unconditional pass)
    orders = [(0, 1, 2), (0, 1, 3), (0, 2, 1), (1, 0, 2), (3, 2, 1), (0,)]
    items = [format_responses(PROMPT, [DIVERSE[i] for i in o], "instruct") for o in orders]
    items.append(format_responses(PROMPT, DIVERSE[:2], "completion"))
    texts = [t for t, _ in items]
    spans = [s for _, s in items]
    slow = sc.span_bits(texts, spans, sharing="none", batch=False)
    default = sc.tree_min_saving
    try:
        for sharing, min_saving in (("tree", 0), ("tree", default), ("prefix", default),
                                    ("none", default)):
            sc.tree_min_saving = min_saving  # 0: every shared branch gets its own pass
            fast = sc.span_bits(texts, spans, sharing=sharing)
            for f, s in zip(fast, slow, strict=True):
                np.testing.assert_allclose(f, s, atol=2e-3)
                assert np.all(f > 0)
            if min_saving == 0:
                assert sc.last_stats["passes"] > 3  # the tree branched
    finally:
        sc.tree_min_saving = default


def test_default_sharing_is_the_tree_on_the_cpu() -> None:
    """No ``sharing`` named: the CPU runs the prefix tree (the bits of ``sharing="tree"``, to
    the bit), an accelerator whole texts in batches (``"none"``; same values to rounding, the
    test above)."""
    sc = get_scorer(threads=THREADS)
    assert sc.default_sharing == "tree"
    items = [format_responses(PROMPT, [DIVERSE[i] for i in o], "completion")
             for o in [(0, 1, 2), (0, 2, 1), (2,), (1, 0)]]
    texts, spans = [t for t, _ in items], [s for _, s in items]
    tree = sc.span_bits(texts, spans, sharing="tree")
    stats = dict(sc.last_stats)
    default = sc.span_bits(texts, spans)
    assert sc.last_stats == stats
    assert all(np.array_equal(a, b) for a, b in zip(default, tree, strict=True))


def test_completion_format_scores_only_responses() -> None:
    """Repeating a long prompt before each response does not add its bits to the responses."""
    sc = get_scorer(threads=THREADS)
    short_p, long_p = "It", "It was a dark and stormy night in the old harbour town, and"
    r = ["the lamps went out.", "a ship came in."]
    (t1, s1), (t2, s2) = (format_responses(p, r, "completion") for p in (short_p, long_p))
    b1, b2 = sc.span_bits([t1, t2], [s1, s2])
    tok = sc.encode(t2)
    all_bits = sc.token_bits([tok], [np.arange(1, len(tok.ids))])[0].sum()
    assert b2.sum() < 0.5 * all_bits  # the repeated prompt carries most of the text's bits
    assert abs(b2.sum() - b1.sum()) < 0.5 * b1.sum()  # same order of magnitude either way


def test_seeded_repeatable() -> None:
    a = decan(DIVERSE[:3], prompt=PROMPT, permutations=2, seed=5, threads=THREADS)
    b = decan(DIVERSE[:3], prompt=PROMPT, permutations=2, seed=5, threads=THREADS)
    assert a.value == pytest.approx(b.value, abs=1e-9)
    assert a.signature == b.signature


def test_local_folder_model_matches_alias() -> None:
    """A transformers folder works as `model=`; its signature names the folder and a hash."""
    folder = get_scorer(threads=THREADS).model.name_or_path
    a = decan(DIVERSE[:2], prompt=PROMPT, permutations=1, threads=THREADS)
    b = decan(DIVERSE[:2], prompt=PROMPT, permutations=1, threads=THREADS, model=folder)
    assert b.value == pytest.approx(a.value, abs=1e-4)
    model_field = b.signature.split("|")[4]
    # the converted folder is keyed by the GGUF hash and the transformers version
    assert model_field.startswith("model:gemma-3-270m-a5fd3b62230a-tf")
    assert len(model_field.split("@")[1]) == 12


def test_default_format_is_completion() -> None:
    """The default template is appendix A.1's completion format (prompt repeated before each
    response), the paper's format for Tevet & Berant's sets (section 5) and the one a base model
    continues naturally; instruct stays one parameter away. Golden D values from one run of the
    packaged Gemma-3-270m (float32, 1 thread): completion 0.44453, instruct 0.46926."""
    default = decan(DIVERSE[:3], prompt=PROMPT, permutations=2, seed=0, threads=THREADS)
    completion = decan(DIVERSE[:3], prompt=PROMPT, permutations=2, seed=0, threads=THREADS,
                       format="completion")
    instruct = decan(DIVERSE[:3], prompt=PROMPT, permutations=2, seed=0, threads=THREADS,
                     format="instruct")
    assert default.signature == completion.signature
    assert default.signature.startswith("decan|fmt:completion|perms:2|seed:0|")
    assert instruct.signature.startswith("decan|fmt:instruct|perms:2|seed:0|")
    assert default.value == pytest.approx(completion.value, abs=1e-9)
    assert default.value == pytest.approx(0.44453, abs=1e-3)
    assert instruct.value == pytest.approx(0.46926, abs=1e-3)


def test_decan_many_across_sets_equals_per_set_calls(monkeypatch) -> None:
    """Sets scored together (one scorer call for all, or several calls) give each set's
    per-set value to float rounding of the batch shapes, in input order, degenerate sets
    included."""
    from divmeter.metrics import decan as decan_mod

    sets = [DIVERSE[:3], ["only one"], DIVERSE[2:5], SAME[:3], []]
    prompts = [PROMPT, "x", "Rain.", PROMPT, "y"]
    kw = dict(permutations=2, threads=THREADS)
    each = [decan(s, prompt=p, **kw) for s, p in zip(sets, prompts, strict=True)]
    metric = divmeter.get_metric("decan").plan(kw)
    contexts = [{"prompt": p} for p in prompts]
    monkeypatch.setattr(decan_mod, "CPU_SETS_PER_CALL", decan_mod.SETS_PER_CALL)  # one call
    one = metric.score([tuple(s) for s in sets], contexts)
    monkeypatch.setattr(decan_mod, "CPU_SETS_PER_CALL", 2)  # three scorer calls
    split = metric.score([tuple(s) for s in sets], contexts)
    for a, b, c in zip(each, one, split, strict=True):
        assert a.signature == b.signature == c.signature
        if a.value is None:  # (the reasons are worded apart: the engine's rule for `decan`)
            assert b.value is None and c.value is None and b.reason == c.reason
            continue
        # float32 bits of other batch shapes: ~1e-6 bits a token (a log-sum-exp near 20 bits
        # minus a logit), so small values (near-copies: D ~ 0.008 here) agree in absolute terms
        assert b.value == pytest.approx(a.value, rel=1e-6, abs=1e-6)
        assert c.value == pytest.approx(a.value, rel=1e-6, abs=1e-6)
        assert c.details["curve"] == pytest.approx(a.details["curve"], rel=1e-6, abs=1e-6)
    assert [r.value is None for r in one] == [False, True, False, False, True]
