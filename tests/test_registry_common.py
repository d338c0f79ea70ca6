"""One invariance suite over the whole registry (in the spirit of scikit-learn's test_common).

Every registered text metric of the core (no extra needed) is checked for: a plain value and an
exact-format signature on a normal set, bounds, order invariance (set metrics), list/tuple
agreement, determinism, a clear error for a bare string, a null-with-reason (never a crash) on
degenerate sets, and that every documented parameter changes the value or the signature (its
alternative value generated from its declaration). The same contract for every metric, as a
public function, is :func:`divmeter.testing.check_metric` (tests/test_testing.py).
Metrics that need an extra (models) are covered by their own test files on small inputs.
"""

from __future__ import annotations

import math
import re

import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.engine.registry import list_metrics
from divmeter.testing import parameter_alternatives

SET = [
    "The old man walked his dog along the quiet river at dawn.",
    "A young girl painted the red barn while her brother read aloud.",
    "The old man walked his cat along the busy road at night.",
    "Rain fell on the city; nobody noticed the parade had been cancelled.",
    "Engineers argued for hours about the bridge design, then ordered pizza.",
]
# Metrics defined only on longer responses (HD-D needs >= 42 tokens per response) get the normal-set
# checks on longer responses (each ~48 words, built from SET).
LONG_SET = [" ".join([SET[i], SET[i], SET[(i + 1) % 5], SET[(i + 2) % 5]]) for i in range(5)]
NORMAL_SET = {"hdd": LONG_SET, "mtld-ma-bi": LONG_SET,
              "vocd-d": [f"{t} {t}" for t in LONG_SET]}  # vocd-D: >= 50 tokens
DEGENERATE = {
    "empty set": [],
    "one response": ["just one response here"],
    "empty strings": ["", "", ""],
    "one-word responses": ["a", "b", "a"],
}
SIG_RE = re.compile(r"^[a-z0-9-]+(\|[A-Za-z0-9_-]+:[^|]+)*\|v:\d+\.\d+\.\d+$")

CORE_TEXT_METRICS = [s for s in list_metrics() if s.extra is None and s.input == "texts"]
IDS = [s.name for s in CORE_TEXT_METRICS]


def test_registry_lists_core_metrics() -> None:
    names = {s.name for s in list_metrics()}
    assert "distinct-n" in names
    for spec in list_metrics():
        assert spec.family in {"form", "content", "lm", "judge"}
        assert spec.granularity in {"set", "response", "corpus", "pair"}
        assert spec.citation and spec.description


@pytest.fixture(params=CORE_TEXT_METRICS, ids=IDS)
def spec(request: pytest.FixtureRequest) -> divmeter.MetricSpec:
    return request.param  # type: ignore[no-any-return]


def _in_bounds(value: float, bounds: tuple[float | None, float | None]) -> bool:
    lo, hi = bounds
    return (lo is None or value >= lo - 1e-9) and (hi is None or value <= hi + 1e-9)


def test_value_signature_bounds(spec: divmeter.MetricSpec) -> None:
    res = divmeter.score(NORMAL_SET.get(spec.name, SET), spec.name)
    assert res.value is not None and math.isfinite(res.value), res.reason
    assert _in_bounds(res.value, spec.bounds), (res.value, spec.bounds)
    assert SIG_RE.match(res.signature), res.signature
    assert res.signature.startswith(spec.name + "|")
    assert res.metric == spec.name


def test_order_tuple_and_determinism(spec: divmeter.MetricSpec) -> None:
    texts = NORMAL_SET.get(spec.name, SET)
    base = divmeter.score(texts, spec.name)
    assert divmeter.score(tuple(texts), spec.name).value == base.value
    assert divmeter.score(list(texts), spec.name).value == base.value
    if spec.granularity in {"set", "response"}:
        shuffled = [texts[i] for i in (3, 0, 4, 2, 1)]
        assert divmeter.score(shuffled, spec.name).value == pytest.approx(base.value, abs=1e-9)


def test_bare_string_is_an_error(spec: divmeter.MetricSpec) -> None:
    with pytest.raises(InvalidInputError, match="list of strings; got a single str"):
        divmeter.score("a single text", spec.name)


@pytest.mark.parametrize("case", list(DEGENERATE))
def test_degenerate_sets_give_value_or_reason(spec: divmeter.MetricSpec, case: str) -> None:
    res = divmeter.score(DEGENERATE[case], spec.name)
    if res.value is None:
        assert res.reason, f"{spec.name} on {case}: null without a reason"
    else:
        assert math.isfinite(res.value) and _in_bounds(res.value, spec.bounds), (case, res)


def test_every_parameter_changes_value_or_signature(spec: divmeter.MetricSpec) -> None:
    """Each parameter's alternative is generated from its declaration
    (:func:`divmeter.testing.parameter_alternatives`: another choice, the other boolean, a
    neighbouring number, or the Param's declared ``alternative``; with the setting of another
    parameter a relation asks for, e.g. vendi-ngram's ``k`` with ``approx=nystroem``)."""
    texts = NORMAL_SET.get(spec.name, SET)
    alternatives = parameter_alternatives(spec)
    assert {a.name for a in alternatives} == {k for k, p in spec.schema.items() if not p.runtime}
    for alt in alternatives:
        assert alt.problem is None, alt.problem
        assert alt.value != spec.params[alt.name], alt
        ref = divmeter.score(texts, spec.name, **alt.companions)
        other = divmeter.score(texts, spec.name, **{**alt.companions, alt.name: alt.value})
        assert other.value != ref.value or other.signature != ref.signature, alt
        assert other.signature != ref.signature, f"{spec.name}: {alt.name} not in signature"
