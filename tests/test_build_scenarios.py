"""Decan appendix B.2 synthetic scenarios and B.3 mode-count sets (divmeter.inputs.scenarios)."""

from __future__ import annotations

import random

import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.scenarios import (
    MODES,
    SCENARIOS,
    decan_scenario,
    decan_scenarios,
    mode_count_set,
    mode_response,
    noise,
    scramble,
)


def test_five_scenarios_sizes_and_seeds() -> None:
    """Appendix B.2: five scenarios, n = 10 responses, seed 42."""
    sets = decan_scenarios()
    assert list(sets) == list(SCENARIOS)
    assert all(len(v) == 10 for v in sets.values())
    assert sets == decan_scenarios(seed=42)
    assert sets["one-mode"] != decan_scenarios(seed=1)["one-mode"]


def test_scenario_structure() -> None:
    s = decan_scenarios(n=10, seed=0)
    # multi-mode coherent: response k comes from mode k mod 5 (the first five modes)
    first5 = list(MODES)[:5]
    for k, text in enumerate(s["multi-mode coherent"]):
        mode = first5[k % 5]
        assert text.split()[0] == mode_response(
            mode, random.Random(0)).split()[0]
    # one-mode: all forecasts, details vary
    assert all(t.startswith("Forecast for ") for t in s["one-mode"])
    assert len(set(s["one-mode"])) > 1
    # multi-mode incoherent: each is a word-scramble of some mode response
    assert all(len(t.split()) >= 5 for t in s["multi-mode incoherent"])
    # mixed: first half coherent, second half noise of 40 characters
    assert [len(t) for t in s["mixed"][5:]] == [40] * 5
    assert s["mixed"][0].startswith("Soft rain on the roof")
    assert all(len(t) == 40 for t in s["pure noise"])


def test_scramble_keeps_words_breaks_ngrams() -> None:
    """Multi-mode incoherent = multi-mode coherent with each response's words scrambled: the
    pooled distinct-1 stays close, the distinct-n over n = 1..5 rises."""
    s = decan_scenarios(n=10, seed=42)
    d = {k: divmeter.score(v, "distinct-n").value for k, v in s.items()}
    d1 = {k: divmeter.score(v, "distinct-n", n=1).value for k, v in s.items()}
    assert d["multi-mode incoherent"] > d["multi-mode coherent"]
    assert d1["multi-mode incoherent"] == pytest.approx(d1["multi-mode coherent"], abs=0.05)


@pytest.mark.parametrize("m", [1, 2, 5, 12])
def test_mode_count_set_has_m_modes(m: int) -> None:
    """Appendix B.3: n responses from exactly m distinct modes, each present."""
    texts, modes = mode_count_set(m, 20, seed=3)
    assert len(texts) == 20 and len(set(modes)) == m
    assert mode_count_set(m, 20, seed=3) == (texts, modes)


def test_mode_count_distinct_rises_with_m() -> None:
    means = []
    for m in (1, 4, 10):
        vals = [divmeter.score(mode_count_set(m, 20, seed=s)[0], "distinct-n").value
                for s in range(5)]
        means.append(sum(vals) / len(vals))
    assert means[0] < means[1] < means[2]


def test_noise_and_scramble() -> None:
    rng = random.Random(0)
    assert len(noise(rng, 7)) == 7 and noise(rng, 0) == ""
    assert sorted(scramble(random.Random(1), "a b c d").split()) == ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: decan_scenario("two-mode"), r"unknown scenario 'two-mode'; expected one of "),
        (lambda: decan_scenario("one-mode", 0), r"`n` must be an integer >= 1; got 0\."),
        (lambda: decan_scenario("mixed", n_modes=13), r"`n_modes` must be <= 12; got 13\."),
        (lambda: mode_count_set(0), r"`m` must be an integer >= 1; got 0\."),
        (lambda: mode_count_set(5, 4), r"`m` must be <= n \(4\) and <= the pool size \(12\); "
                                       r"got 5\."),
        (lambda: mode_count_set(1, pool=["opera"]), r"unknown mode 'opera' in `pool`"),
        (lambda: mode_response("opera", random.Random(0)), r"unknown mode 'opera'; expected"),
    ],
)
def test_errors(call, match: str) -> None:  # noqa: ANN001
    with pytest.raises(InvalidInputError, match=match):
        call()
