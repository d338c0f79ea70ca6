"""Judge self-consistency and agreement as a function of N and temperature (commonsense
meta-evaluation paper, section 5.1: five samples averaged; appendix E, Table 6: accuracy against
humans per temperature). Hand-built runs with known samples; the temperature sweep runs against
the loopback fault server."""

from __future__ import annotations

from collections import Counter

import pytest

from divmeter.studies.judge.consistency import (
    accuracy_by_n,
    accuracy_by_temperature,
    labels_from_samples,
    self_consistency,
)
from divmeter.studies.judge.protocol import JudgeConfig, JudgedPair, JudgedSet, JudgeRun, Sample

pytest.importorskip("krippendorff")


def _sets(*per_item: tuple[int | None, ...]) -> JudgeRun:
    items = []
    for scores in per_item:
        samples = tuple(Sample(k, None, (s,), None) if s is not None
                        else Sample(k, None, None, None, "x", "no_score")
                        for k, s in enumerate(scores))
        valid = [s for s in scores if s is not None]
        items.append(JudgedSet(sum(valid) / len(valid) if valid else None, None, samples))
    return JudgeRun("sig", items, Counter(), {})


def test_self_consistency_by_hand() -> None:
    # samples as raters: r0 = [4, 2, 5], r1 = [4, 3, 5], r2 = [4, 2, 5]
    # pairwise agreement: (r0,r1) 2/3, (r0,r2) 1, (r1,r2) 2/3 -> 7/9
    # item std (ddof 1): [4,4,4] 0; [2,3,2] sqrt(1/3); [5,5,5] 0 -> mean sqrt(1/3)/3
    # nominal alpha: coincidences o44 = 3, o55 = 3, o22 = 1, o23 = o32 = 1; n = 9,
    # n_2 = 2, n_3 = 1, n_4 = 3, n_5 = 3: D_o = 2/9, D_e = (81 - 23)/72 = 58/72 ->
    # alpha = 1 - (2/9)/(58/72) = 1 - 16/58 = 42/58
    run = _sets((4, 4, 4), (2, 3, 2), (5, 5, 5))
    sc = self_consistency(run)
    assert sc["raters"] == 3 and sc["items"] == 3
    assert sc["mean_pairwise_agreement"] == pytest.approx(7 / 9)
    assert sc["mean_item_std"] == pytest.approx((1 / 3) ** 0.5 / 3)
    assert sc["krippendorff_alpha"] == pytest.approx(42 / 58)
    assert sc["reasons"] == {}


def test_self_consistency_degenerate() -> None:
    sc = self_consistency(_sets((3, 3), (3, 3)))
    assert sc["krippendorff_alpha"] is None
    assert sc["reasons"]["krippendorff_alpha"] == "every rating has the same value"
    assert sc["mean_pairwise_agreement"] == 1.0 and sc["mean_item_std"] == 0.0


def _pair(*samples: tuple[str, int, tuple[int, int] | None]) -> JudgedPair:
    s = tuple(Sample(k, o, sc, None) for o, k, sc in samples)
    return JudgedPair(None, None, None, None, s, {})


def test_accuracy_by_n_by_hand() -> None:
    # pair 1: sample 0 says set2 (1 vs 3), sample 1 says set1 strongly (5 vs 1):
    #   n=1 -> label 1; n=2 -> means (3, 2) -> label 0
    # pair 2: sample 0 tie (3, 3); sample 1 invalid: n=1 and n=2 -> label 2 (a miss)
    # pair 3: reference tie -> not counted
    pairs = [
        _pair(("ab", 0, (1, 3)), ("ab", 1, (5, 1))),
        _pair(("ab", 0, (3, 3)), ("ab", 1, None)),
        _pair(("ab", 0, (4, 1)), ("ab", 1, (4, 1))),
    ]
    assert labels_from_samples(pairs, 1) == [1, 2, 0]
    assert labels_from_samples(pairs, 2) == [0, 2, 0]
    run = JudgeRun("sig", pairs, Counter(), {})
    assert accuracy_by_n(run, [0, 1, 2]) == {1: {"accuracy": 0.0, "n": 2},
                                             2: {"accuracy": 0.5, "n": 2}}


def test_accuracy_by_temperature_on_loopback(tmp_path) -> None:
    pytest.importorskip("httpx")
    from faultserver import FaultServer

    fs = FaultServer({"chat/completions": [
        'say:{"Diversity_Score_Set1": 4, "Diversity_Score_Set2": 2}']})
    try:
        cfg = JudgeConfig("openai:m", base_url=fs.url, samples=2, orders="ab", fewshot="none",
                          max_tokens=32, cache=str(tmp_path))
        pairs = [(["a b", "c d"], ["a b", "a b"]), (["x y"], ["z w", "v u"])]
        out = accuracy_by_temperature(pairs, [0, 1], cfg, temperatures=(0.0, 1.0))
        assert list(out) == [0.0, 1.0]
        # the judge always says set1: right on pair 1, wrong on pair 2
        assert out[0.0]["accuracy"] == 0.5 and out[1.0]["by_n"][2] == {"accuracy": 0.5, "n": 2}
        assert "|temp:0|" in out[0.0]["signature"] and "|temp:1|" in out[1.0]["signature"]
        assert fs.total == 2 * 2 * 2  # pairs x samples x temperatures
    finally:
        fs.close()
