"""The judge's answer parser on real answer shapes (commonsense meta-evaluation paper, section
4.1 and appendix D: ratings on a five-point scale; Figure 8's output format
``"Diversity_Score_Set1": x, "Diversity_Score_Set2": y``). Parsing never invents a value: every
shape below either yields exactly the stated rating or fails with its kind."""

from __future__ import annotations

import pytest

from divmeter.backends.judge.parse import ParseError, parse_absolute, parse_pairwise

ABSOLUTE_OK = [
    # (answer, score, rationale)
    ('{"score": 4}', 4, None),
    ('{"rationale": "Three different scenes.", "score": 5}', 5, "Three different scenes."),
    ('{"Diversity_Score": "3"}', 3, None),
    ('```json\n{"rating": 2, "explanation": "Paraphrases."}\n```', 2, "Paraphrases."),
    ('Here is my rating:\n{"score": 1}\nThe set repeats one idea.', 1,
     "Here is my rating:\n\nThe set repeats one idea."),
    ("Score: 4", 4, None),
    ("The sentences cover different events.\nScore: 4/5", 4,
     "The sentences cover different events."),
    ("**Diversity score:** 2", 2, None),
    ("Rating = 5", 5, None),
    ("Score: 3\nScore: 3", 3, None),  # the same number twice is not ambiguous
    ("4", 4, None),
    ("4.", 4, None),
    ("3/5", 3, None),
    ('{"score": 4.0}', 4, None),
    ('{"score": 4, "rat', 4, None),  # a JSON answer cut by max_tokens still states its score
]


@pytest.mark.parametrize(("text", "score", "rationale"), ABSOLUTE_OK)
def test_absolute_parses(text: str, score: int, rationale: str | None) -> None:
    r = parse_absolute(text)
    assert (r.score, r.rationale) == (score, rationale)


ABSOLUTE_BAD = [
    # (answer, kind, message pattern)
    ("", "empty", "the answer is empty"),
    ("   \n", "empty", "the answer is empty"),
    ("I'm sorry, but I can't help with rating these sentences.", "no_score", "no rating found"),
    ("These sentences are quite diverse and interesting.", "no_score", "no rating found"),
    ("I would give this set a 4 out of 5.", "no_score", "no rating found"),
    ("Score: 3\nOn reflection, Score: 4", "ambiguous", r"more than once.*\(3, 4\)"),
    ('{"score": 3, "rating": 4}', "ambiguous", "more than one score"),
    ("Score: 7", "out_of_range", "score 7 is outside 1-5"),
    ("Score: 0", "out_of_range", "score 0 is outside 1-5"),
    ('{"score": 6}', "out_of_range", "score 6 is outside 1-5"),
    ("Score: -2", "out_of_range", "outside 1-5"),
    ("Score: 8/10", "out_of_range", "8/10, not on the 1-5 scale"),
    ("Score: 3.5", "not_integer", "3.5 is not a whole point"),
    ('{"score": "high"}', "no_score", "not a number"),
    ('"Diversity_Score_Set1": 3, "Diversity_Score_Set2": 4', "no_score", "no rating found"),
]


@pytest.mark.parametrize(("text", "kind", "match"), ABSOLUTE_BAD)
def test_absolute_rejects(text: str, kind: str, match: str) -> None:
    with pytest.raises(ParseError, match=match) as info:
        parse_absolute(text)
    assert info.value.kind == kind


PAIR_OK = [
    # the paper's Figure 8 output format (not a JSON object)
    ('"Diversity_Score_Set1": 2, "Diversity_Score_Set2": 5', 2, 5, None),
    ('{"rationale": "Set 2 varies more.", "Diversity_Score_Set1": 2, "Diversity_Score_Set2": 4}',
     2, 4, "Set 2 varies more."),
    ('{"set1": 3, "set2": 3}', 3, 3, None),
    ('{"score_set_1": 5, "score_set_2": 1}', 5, 1, None),
    ("Set 1: 4\nSet 2: 2", 4, 2, None),
    ("Set 1 score: 1/5\nSet 2 score: 3/5\nSet 2 explores more.", 1, 3, "Set 2 explores more."),
    ("**Diversity_Score_Set1:** 3, **Diversity_Score_Set2:** 4", 3, 4, None),
]


@pytest.mark.parametrize(("text", "s1", "s2", "rationale"), PAIR_OK)
def test_pairwise_parses(text: str, s1: int, s2: int, rationale: str | None) -> None:
    r = parse_pairwise(text)
    assert (r.score1, r.score2, r.rationale) == (s1, s2, rationale)


PAIR_BAD = [
    ("", "empty", "empty"),
    ("Both sets are fine.", "no_score", "no ratings found"),
    ('{"score": 4}', "no_score", "no ratings found"),
    ("Set 1: 4", "no_score", r"only one set \(no Set 2 score\)"),
    ('{"Diversity_Score_Set2": 4}', "no_score", r"only one set \(no Set 1\)"),
    ("Set 1: 4\nSet 2: 2\nSet 1: 5", "ambiguous", "Set 1 score is stated more than once"),
    ('"Diversity_Score_Set1": 6, "Diversity_Score_Set2": 2', "out_of_range",
     "Set 1 score 6 is outside 1-5"),
    ('{"set1": 2, "set2": 4.5}', "not_integer", "Set 2 score 4.5"),
]


@pytest.mark.parametrize(("text", "kind", "match"), PAIR_BAD)
def test_pairwise_rejects(text: str, kind: str, match: str) -> None:
    with pytest.raises(ParseError, match=match) as info:
        parse_pairwise(text)
    assert info.value.kind == kind


def test_broken_json_keeps_only_a_complete_rationale() -> None:
    r = parse_absolute('{"rationale": "Two scenes repeat.", "score": 2, "extra": "cut')
    assert (r.score, r.rationale) == (2, "Two scenes repeat.")
