"""One invariance suite over the whole registry (in the spirit of scikit-learn's test_common).

Every registered text metric of the core (no extra needed) is checked for: a plain value and an
exact-format signature on a normal set, bounds, order invariance (set metrics), list/tuple
agreement, determinism, a clear error for a bare string, a null-with-reason (never a crash) on
degenerate sets, and that every documented parameter changes the value or the signature.
Metrics that need an extra (models) are covered by their own test files on small inputs.
"""

from __future__ import annotations

import importlib.util
import math
import re

import pytest

import divmeter
from divmeter.errors import InvalidInputError
from divmeter.registry import list_metrics

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
# An alternative value for each documented parameter (must differ from every default).
ALTERNATIVES = {
    "n": 2,
    "n_max": 3,
    "tokenizer": "whitespace",
    "lowercase": True,
    "q": 0.5,
    "approx": "slq",
    "probes": 4,
    "steps": 5,
    "k": 2,
    "seed": 1,
    "variant": "sentence",
    "measure": "rouge2",
    "algorithm": "xz",
    "window": 5,
    "target_length": 7,
    "unit": "bytes",
    "base": 2.0,
    "vocab_size": 5000,
    "truncate": 5,
    "threshold": 0.5,
    "sample_size": 7,
    "stemmer": True,
    "use_stemmer": True,
    "reduction": "one-minus-mean",
    "separator": " | ",
    "smooth": "coco",
    "dtype": "float32",
    "segment": 7,
    "convention": "keep-remainder",
    "factor": "le",
    "min_length": 3,
    "min_size": 30,
    "max_size": 45,
    "samples": 20,
    "trials": 2,
    "sampling": "expected",
}
# Parameters documented to change neither the value (beyond float rounding) nor the signature:
# where the computation runs (checked here to give the same value and signature).
SAME_VALUE = {"device": "auto"}
# Parameters that apply under another parameter's value only (vendi-ngram's approximation
# sizes): checked against a base call with that companion value.
COMPANIONS = {"k": {"approx": "nystroem"}, "probes": {"approx": "slq"},
              "steps": {"approx": "slq"}, "seed": {"approx": "slq"}}
# Parameter alternatives that need an optional extra: (extra, module), checked where installed.
NEEDS_EXTRA = {"stemmer": ("stem", "nltk"), "use_stemmer": ("stem", "nltk")}
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
    texts = NORMAL_SET.get(spec.name, SET)
    base = divmeter.score(texts, spec.name)
    unchecked = []
    for param, default in spec.params.items():
        if param in SAME_VALUE:
            other = divmeter.score(texts, spec.name, **{param: SAME_VALUE[param]})
            assert other.signature == base.signature, param
            assert other.value == pytest.approx(base.value, rel=1e-9), param
            continue
        if param not in ALTERNATIVES:
            pytest.fail(f"no alternative value for parameter {param!r}: add one to ALTERNATIVES")
        alt = ALTERNATIVES[param]
        if alt == default:
            continue
        if param in NEEDS_EXTRA and importlib.util.find_spec(NEEDS_EXTRA[param][1]) is None:
            unchecked.append(param)
            continue
        extra_params = COMPANIONS.get(param, {}) if "approx" in spec.params else {}
        ref = divmeter.score(texts, spec.name, **extra_params) if extra_params else base
        other = divmeter.score(texts, spec.name, **{param: alt, **extra_params})
        assert other.value != ref.value or other.signature != ref.signature, param
        assert other.signature != ref.signature, f"{spec.name}: {param} not in signature"
    if unchecked:
        extra = NEEDS_EXTRA[unchecked[0]][0]
        pytest.skip(f"{', '.join(unchecked)} of {spec.name} needs divmeter[{extra}]: "
                    f"pip install -e '.[{extra}]' (every other parameter was checked)")
