"""Every metric's citation names the papers behind divmeter as the papers themselves do.

``PAPERS`` holds, for each paper of ``../shared/papers``, its title and its authors as printed on
its first page; one test checks that table against the paper texts (skipped without them), the
other checks every registered metric's citation against the table: a citation that refers to one
of these papers (by its title, or by a nickname such as "the commonsense meta-evaluation") gives
its full title and its authors (all of them up to three, else the first author and "et al."),
never another author list (issue 31: self-BLEU cited "Bollegala et al. 2025").
"""

from __future__ import annotations

import re

import pytest

import divmeter
from conftest import PAPERS_DIR

#: file -> (title as printed, authors' surnames in order, how a citation names them, phrases that
#: refer to the paper: a part of its title, possibly abbreviated, or a nickname)
PAPERS = {
    "tevet-berant-evaluating-diversity-evaluation.txt": (
        "Evaluating the Evaluation of Diversity in Natural Language Generation",
        ["Tevet", "Berant"], "Tevet & Berant 2021",
        (r"diversity in (nlg|natural language generation)",)),
    "commonsense-diversity-meta-evaluation.txt": (
        "Evaluating the Evaluation of Diversity in Commonsense Generation",
        ["Zhang", "Peng", "Bollegala"], "Zhang, Peng & Bollegala 2025",
        (r"diversity in commonsense generation",
         r"commonsense(-generation)? (diversity )?meta-eval")),
    "cdm-contextual-diversity-measure.txt": (
        "Contextual Diversity Measure (CDM) for Controllable Story Generation in Large Language "
        "Models", ["Susilo", "Suominen", "Haslum"], "Susilo, Suominen & Haslum",
        (r"contextual diversity measure",)),
    "decan-progressive-conditional-surprise.txt": (
        "\"I've Seen How This Goes\": Characterizing the Diversity of LLM Generations and Human "
        "Writing via Progressive "
        "Conditional Surprise", ["Khoriaty", "Williams-King", "Feng"],
        "Khoriaty, Williams-King & Feng 2026", (r"progressive conditional surprise",)),
    "pattr-penalty-adjusted-ttr.txt": (
        "A Penalty Goes a Long Way: Measuring Lexical Diversity in Synthetic Texts Under "
        "Prompt-Influenced Length Variations",
        ["Deshpande", "Dasgupta", "Bhattacharya", "Sarkhel", "Mitra", "Rumshisky"],
        "Deshpande et al. 2025", (r"a penalty goes a long way",)),
}


@pytest.mark.parametrize("paper", list(PAPERS))
def test_table_matches_the_paper(paper: str) -> None:
    path = PAPERS_DIR / paper
    if not path.is_file():
        pytest.skip(f"paper text not found at {path}")
    text = path.read_text(encoding="utf-8")
    for curly, straight in (("\u201c", '"'), ("\u201d", '"'), ("\u2019", "'")):
        text = text.replace(curly, straight)
    head = " ".join(text.split()[:200])
    title, surnames, _, _ = PAPERS[paper]
    assert title.lower() in head.lower()
    # the authors appear on the first page, in this order
    at = [head.find(s) for s in surnames]
    assert all(i >= 0 for i in at), (paper, dict(zip(surnames, at, strict=True)))
    assert at == sorted(at)


def _citations() -> list[tuple[str, str]]:
    return [(s.name, s.citation) for s in divmeter.list_metrics()]


@pytest.mark.parametrize(("metric", "citation"), _citations(), ids=[m for m, _ in _citations()])
def test_citation_names_the_authors_as_the_paper_does(metric: str, citation: str) -> None:
    lower = citation.lower()
    for paper, (title, surnames, named, phrases) in PAPERS.items():
        hits = [m.start() for p in phrases for m in re.finditer(p, lower)]
        if not hits:
            continue
        # every reference gives the whole title as printed, after the authors as the paper
        # names them (the title's own words overlap the phrases: look for whole titles)
        titles = [m.start() for m in re.finditer(re.escape(title.lower()), lower)]
        assert titles, (metric, f"refers to {paper} without its title {title!r}")
        for h in hits:
            assert any(t <= h < t + len(title) for t in titles), (
                metric, f"a reference to {paper} outside its full title")
        for t in titles:
            before = citation[max(0, t - len(named) - 4):t]
            assert named in before, (metric, f"expected {named!r} before the title of {paper};"
                                             f" got {before!r}")
        # no other author list for the same paper (e.g. "Bollegala et al.")
        others = [s for s in surnames[1:] if f"{s} et al" in citation]
        assert not others, (metric, others)


def test_self_bleu_cites_zhang_peng_bollegala() -> None:
    """The issue's case: the commonsense paper is Zhang, Peng & Bollegala's."""
    cite = divmeter.get_metric("self-bleu").citation
    assert "Zhang, Peng & Bollegala 2025, Evaluating the Evaluation of Diversity in " \
           "Commonsense Generation" in cite
    assert "Bollegala et al." not in cite
