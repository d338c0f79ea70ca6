"""Declared parameters (issue 9 item 2, issue 16): every metric declares each parameter's type,
constraint and default; the declarations agree with the functions' signatures; every bad value is
rejected at the boundary (score, score_many, score_sets for any number of workers, the CLI
parser) with one message shape, before any set is scored.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest

import divmeter
from divmeter.core.errors import InvalidInputError
from divmeter.core.params import TEXT_TOKENIZERS, Param, describe, validate
from divmeter.engine.batch import resolve_metrics, score_sets
from divmeter.engine.registry import check_params, list_metrics, parse_metric_arg
from divmeter.inputs.data import ResponseSet
from divmeter.testing import bad_values

SPECS = list_metrics()
IDS = [s.name for s in SPECS]


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_declarations_match_the_function_signature(spec: divmeter.MetricSpec) -> None:
    sig = inspect.signature(spec.load())
    keywords = {
        k: p.default for k, p in sig.parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    assert set(spec.schema) == set(keywords), "declared parameters != the function's keywords"
    for name, param in spec.schema.items():
        assert isinstance(param, Param), name
        assert param.type is not object, f"{spec.name}: {name} has no declared type"
        assert param.default == keywords[name] and type(param.default) is type(keywords[name]), name
        assert spec.params[name] == param.default
        param.check(param.default, name, spec.name)  # every default is valid


CASES = [
    (spec.name, name, bad)
    for spec in SPECS
    for name, param in spec.schema.items()
    for bad in bad_values(param)
]


@pytest.mark.parametrize(("metric", "param", "bad"), CASES,
                         ids=[f"{m}-{p}-{b!r}" for m, p, b in CASES])
def test_every_bad_value_is_rejected_at_the_boundary(metric: str, param: str, bad: Any) -> None:
    """The call never reaches the metric (no model is loaded): the check is the declaration's."""
    m = re.escape(metric)
    shape = (rf"(`{param}` of {m} must be .+; got .+|unknown tokenizer .+: `{param}` of {m} must "
             r"be one of [a-z, ]+)\.$")
    texts: Any = [["a"], ["b"]] if metric == "cdm" else ["a b", "a c"]
    with pytest.raises(InvalidInputError, match="^" + shape):
        divmeter.score(texts, metric, **{param: bad})
    with pytest.raises(InvalidInputError, match=rf"^metric '{m}[^']*': " + shape):
        resolve_metrics([(metric, {param: bad})])


@pytest.mark.parametrize(
    ("metric", "params", "message"),
    [
        ("distinct-n", {"n": 0}, "`n` of distinct-n must be an integer >= 1; got 0."),
        ("distinct-n", {"n": 2.0}, "`n` of distinct-n must be an integer >= 1; got 2.0."),
        ("distinct-n", {"lowercase": "maybe"},
         "`lowercase` of distinct-n must be true or false; got 'maybe'."),
        ("ttr", {"tokenizer": "spacy"},
         "unknown tokenizer 'spacy': `tokenizer` of ttr must be one of tevet, whitespace, word, "
         "char."),
        ("mtld", {"threshold": 1}, "`threshold` of mtld must be a number strictly between 0 and "
                                   "1; got 1."),
        ("vendi-ngram", {"q": 0}, "`q` of vendi-ngram must be a number > 0; got 0."),
        ("entropy-n", {"base": 1},
         "`base` of entropy-n must be 'e', 'bits' or a number > 0 other than 1; got 1."),
        ("decan", {"permutations": 0}, "`permutations` of decan must be an integer >= 1; got 0."),
        ("decan", {"format": "x"}, "`format` of decan must be one of instruct, completion; "
                                   "got 'x'."),
        ("decan", {"prompt": 3}, "`prompt` of decan must be a string; got int."),
        ("cdm", {"lam": 2}, "`lam` of cdm must be a number in [0, 1]; got 2."),
        ("kmeans-inertia", {"seed": -1}, "`seed` of kmeans-inertia must be an integer >= 0; "
                                         "got -1."),
        ("homogenization", {"use_stemmer": True, "tokenizer": "whitespace"},
         "`use_stemmer` of homogenization applies to the rouge tokenizer only (as in "
         "rouge-score); got use_stemmer=True with tokenizer='whitespace'."),
        ("distinct-n", {"m": 2},
         "metric 'distinct-n' has no parameter 'm'; its parameters are: n, n_max, tokenizer, "
         "lowercase, approx."),
    ],
)
def test_messages(metric: str, params: dict[str, Any], message: str) -> None:
    """One shape: what, what was expected, what was got (the tokenizer keeps the opening its
    users match on, see tokenizer_param)."""
    with pytest.raises(InvalidInputError) as err:
        check_params(divmeter.get_metric(metric), params)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("distinct-n:n=2,lowercase=yes", {"n": 2, "lowercase": True}),
        ("distinct-n:n=none,tokenizer=word", {"n": None, "tokenizer": "word"}),
        ("vendi-ngram:q=inf", {"q": float("inf")}),
        ("vendi-ngram:q=2", {"q": 2}),  # an int, as before: column and signature unchanged
        ("entropy-n:base=bits", {"base": "bits"}),
        ("entropy-n:base=2", {"base": 2}),
        ("decan:prompt=none,max_bytes=64", {"prompt": None, "max_bytes": 64}),
        ("compression-ratio:separator=3", {"separator": "3"}),  # a str parameter stays a str
        ("cdm:family=glove,lam=0.25", {"family": "glove", "lam": 0.25}),
    ],
)
def test_cli_values_are_read_as_their_declared_type(arg: str, expected: dict[str, Any]) -> None:
    name, params = parse_metric_arg(arg)
    assert params == expected
    assert [type(v) for v in params.values()] == [type(v) for v in expected.values()]


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("distinct-n:lowercase=maybe",
         "`lowercase` of distinct-n must be true or false; got 'maybe'."),
        ("distinct-n:lowercase=1", "`lowercase` of distinct-n must be true or false; got '1'."),
        ("distinct-n:n=2.0", "`n` of distinct-n must be an integer >= 1; got 2.0."),
        ("distinct-n:n=none,n_max=none", "`n_max` of distinct-n must be an integer >= 1 "
                                         "and <= 100; got None."),
        ("decan:permutations=0", "`permutations` of decan must be an integer >= 1; got 0."),
        ("self-bleu:m=2", "metric 'self-bleu' has no parameter 'm'; its parameters are: n, "
                          "variant, tokenizer, lowercase, smooth."),
    ],
)
def test_cli_values_that_are_not_their_type_are_errors(arg: str, message: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        parse_metric_arg(arg)
    assert str(err.value) == message


SETS = [ResponseSet("a", ["x y", "x z"]), ResponseSet("b", ["x"])]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(
    "metric",
    ["decan:permutations=0", "decan:format=x", "embedding-cosine:reduction=mean",
     "kmeans-inertia:k=0", "distinct-n:lowercase=maybe", "cdm:gamma=0"],
)
def test_bad_parameters_stop_the_run_before_any_set(metric: str, workers: int) -> None:
    """Every family, any number of workers: one error, never a null on every set."""
    with pytest.raises(InvalidInputError, match=rf"^metric '{re.escape(metric)}': `"):
        next(score_sets(SETS, [metric], workers=workers))


def test_tokenizer_choices_agree_with_the_tokenizers() -> None:
    from divmeter.inputs.text.tokenize import TOKENIZERS
    from divmeter.metrics.overlap import TOKENIZER_NAMES

    assert TEXT_TOKENIZERS == tuple(TOKENIZERS)
    assert divmeter.get_metric("self-bleu").schema["tokenizer"].choices == TOKENIZER_NAMES


@pytest.mark.parametrize(
    ("param", "text"),
    [
        (Param(int, ge=1, default=4), "int>=1=4"),
        (Param(int, ge=0, allow_none=True, default=None), "int>=0|None=None"),
        (Param(float, ge=0, le=1, default=0.5), "float[0,1]=0.5"),
        (Param(float, gt=0, default=float("inf")), "float>0=inf"),
        (Param(str, choices=("a", "b"), default="a"), "{a,b}=a"),
        (Param(str, allow_none=True, default=""), "str|None=''"),
        (Param(bool, default=True), "bool=True"),
    ],
)
def test_describe(param: Param, text: str) -> None:
    assert describe(param) == text


def test_validate_relation_sees_defaults() -> None:
    schema = {
        "a": Param(int, default=1),
        "b": Param(int, default=2, relation=lambda b, p: None if b > p["a"] else "must exceed a"),
    }
    validate("demo", schema, {})
    validate("demo", schema, {"b": 3})
    with pytest.raises(InvalidInputError, match=r"^`b` of demo must exceed a$"):
        validate("demo", schema, {"a": 5})
