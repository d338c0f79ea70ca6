"""The quality gate of `divmeter build` (divmeter.studies.perturb.gate): every text a model writes
passes named checks before it is written, a failing text is generated again with a new seed, and a
set whose text still fails is left out with its reason in a `.rejected` file; the run ends with one
line of counts and exits 1 above --max-rejected (issue 21: a base model over a server wrote "",
"[/INST]" and echoes of the instruction as paraphrases, and the run exited 0)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli_util import run_main
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.model import ResponseSet
from divmeter.studies.perturb import Gate, build
from divmeter.studies.perturb.gate import retry_seed
from divmeter.studies.perturb.generator import load_template

SENT = "A man throws a frisbee and his dog catches it."
PARA_PROMPT = load_template("paraphrase").fill(sentence=SENT)
INSTRUCTION = PARA_PROMPT.replace(SENT, " ")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("The frisbee thrown by a man is caught by his dog.", None),
        ("", "blank"),
        ("  \t", "blank"),
        ("[/INST]", "special_token"),
        ("The dog runs.<start_of_image>The old w", "special_token"),
        ("A dog<|im_end|>", "special_token"),
        ("Sure.</s>", "special_token"),
        ("<end_of_turn>", "special_token"),
        ("Paraphrase the sentence below. Keep its meaning and every content word it contains",
         "echo_instruction"),
        ("Answer with the paraphrase only, on one line.", "echo_instruction"),
        ("a man throws a Frisbee, and his dog catches it!", "echo_source"),
        ("Dog.", "length"),  # 1 word < 10 / 3
        ("The man " + "and the dog " * 10 + "play.", "length"),  # 34 words > 30
    ],
)
def test_each_check_on_golden_texts(text: str, reason: str | None) -> None:
    got = Gate().check(text, source=SENT, instruction=INSTRUCTION)
    assert (got.split(":")[0] if got else None) == reason


def test_check_messages_and_settings() -> None:
    g = Gate()
    assert g.check("Dog.", source=SENT) == "length: 1 words, outside 4-30 (3x the source's 10)"
    assert g.check("[/INST]", source=SENT) == "special_token: the text contains '[/INST]'"
    assert g.check("Dog.", source=SENT, source_words=None) is not None  # from the source
    assert Gate(length_factor=10).check("Dog.", source=SENT) is None
    assert g.check("Dog runs.", source=["x", "dog runs"]) == \
        "echo_source: the text is the source again"
    assert g.check("Anything at all here.", source=None) is None  # pools: no length check
    assert Gate(extra_tokens=("<my_tok>",)).check("a <my_tok> b") == \
        "special_token: the text contains '<my_tok>'"
    assert g.signature() == "gate:v1,len:3,echo:0.5,retries:3"
    for kw, match in (({"length_factor": 0.5}, "`length_factor` of the gate must be a number "
                       ">= 1; got 0.5."), ({"retries": -1}, "`retries` of the gate must be an "
                       "integer >= 0; got -1."), ({"echo_share": 0}, "`echo_share`")):
        with pytest.raises(InvalidInputError, match=match):
            Gate(**kw)
    assert len({retry_seed(0, a) for a in range(1, 6)}) == 5
    assert all(0 <= retry_seed(s, 1) < 2**31 for s in (0, 7, 2**40))


FRISBEE = ["A dog leaps to catch a frisbee on the beach.",
           "The boy throws the frisbee too high for the dog.",
           "Volunteers throw a frisbee so the shelter dogs can play.",
           "A girl teaches her puppy to catch a frisbee in the yard."]


class Scripted:
    """A deterministic test generator (no model): answers by the call's seed from ``plan``
    (seed -> what each sample says: a paraphrase of the prompt's sentence, or a fixed bad text).
    It checks the gate's plumbing; real models are tested in test_build_perturb.py."""

    signature = "scripted"

    def __init__(self, plan: dict[str, str], default: str = "good") -> None:
        self.plan, self.default, self.calls = plan, default, []

    def generate(self, prompts: list[str], n: int, *, temperature: float, max_tokens: int,
                 seed: int) -> list[list[str]]:
        self.calls.append((len(prompts), n, seed))
        how = self.plan.get(str(seed), self.default)
        out = []
        for p in prompts:
            sentence = p.strip().splitlines()[-1].removeprefix("Sentence: ")
            good = "In other words, " + sentence[0].lower() + sentence[1:]
            out.append([good if how == "good" else how for _ in range(n)])
        return out


def test_failing_texts_are_retried_with_new_seeds() -> None:
    gen = Scripted({"0": "[/INST]"})  # the first call (seed 0) leaks a template token
    b = build("para", [ResponseSet("f", FRISBEE, label=1)], k=3, generator=gen)
    assert b.counts() == {"accepted": 1, "retried": 2, "rejected": 0, "skipped": 0}
    assert [c[2] for c in gen.calls] == [0, retry_seed(0, 1)]
    assert gen.calls[1][:2] == (1, 2)  # one prompt, its two failing samples
    assert all("[/INST]" not in t for t in b.sets[0].responses)
    assert b.rows()[0]["label"] == 1


def test_a_set_whose_text_keeps_failing_is_rejected_with_its_texts() -> None:
    gen = Scripted({}, default="Paraphrase the sentence below. Keep its meaning and every")
    src = [ResponseSet("e", ["", " "]), ResponseSet("f", FRISBEE)]
    b = build("para", src, k=1, generator=gen, gate=Gate(retries=2))
    assert b.counts() == {"accepted": 0, "retried": 2, "rejected": 1, "skipped": 1}
    assert len(gen.calls) == 3  # the first try and two retries
    assert [r["set_id"] for r in b.rejected_rows()] == ["e", "f"]  # in input order
    rej = {r["set_id"]: r for r in b.rejected_rows()}
    assert rej["e"]["reason"] == "no non-blank response"
    assert rej["f"]["status"] == "rejected"
    assert rej["f"]["reason"].startswith("echo_instruction: 100% of its word 3-grams are in "
                                         "the request (after every retry)")
    assert rej["f"]["texts"][0]["text"] == gen.default
    assert b.problem() == ("para-1: no set was built (1 rejected, 1 skipped sources; 1 x no "
                           "non-blank response, 1 x echo_instruction).")


def test_rejected_share_against_max_rejected() -> None:
    class Half(Scripted):
        def generate(self, prompts: list[str], n: int, **kw: Any) -> list[list[str]]:
            out = super().generate(prompts, n, **kw)
            return [["" if "shelter" in p else t for t in o] for p, o in zip(prompts, out,
                                                                             strict=True)]

    sets = [ResponseSet(str(i), FRISBEE[i:] + FRISBEE[:i]) for i in range(4)]
    b = build("nonsensical", [ResponseSet(s.set_id, s.responses, "dog, frisbee")
                              for s in sets[:1]], generator=Half({}))
    assert b.counts()["accepted"] == 1
    b = build("para", sets, k=1, seed=0, generator=Half({}), gate=Gate(retries=1))
    c = b.counts()
    assert c["accepted"] + c["rejected"] == 4 and 0 < c["rejected"] < 4
    share = c["rejected"] / 4
    assert b.rejected_share() == share
    assert b.problem(max_rejected=1.0) is None
    assert b.problem(max_rejected=share - 0.01).startswith(
        f"para-1: {c['rejected']} of 4 sets rejected ({share:.0%}), above --max-rejected")


# -- the command line, against a loopback server answering /completions ----------------------


@pytest.fixture()
def server() -> Iterator[Any]:
    pytest.importorskip("httpx")
    from faultserver import FaultServer

    fs = FaultServer({})
    yield fs
    fs.close()


def _completions(texts: list[str]) -> Any:
    """A /completions answer cycling through ``texts`` (by request count) and recording the
    prompts it saw."""
    seen: list[str] = []

    def answer(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body["prompt"])
        return {"choices": [{"index": 0, "text": texts[(len(seen) - 1) % len(texts)]}],
                "usage": {"prompt_tokens": 9, "completion_tokens": 3}}

    answer.seen = seen  # type: ignore[attr-defined]
    return answer


def _sets(tmp_path: Path) -> Path:
    p = tmp_path / "sets.jsonl"
    rows = [{"set_id": f"s{i}", "prompt": "dog, frisbee, throw, catch", "label": i % 2,
             "metadata": {"label_name": "high"}, "responses": FRISBEE[i:] + FRISBEE[:i]}
            for i in range(4)]
    rows.append({"set_id": "empty", "label": 0, "responses": ["", "  ", ""]})
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_cli_base_model_bad_answers_fail_the_run(server: Any, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: a base model over a server answering "", "[/INST]" and the
    instruction; every set is rejected, the empty source is skipped, the run exits 1."""
    answer = _completions(["", "[/INST]", " Paraphrase the sentence below. Keep its meaning"])
    server.scripts["completions"] = [answer]
    out = tmp_path / "para.jsonl"
    code, _, err = run_main(monkeypatch, capsys, "build", "para", str(_sets(tmp_path)), "-o",
                            str(out), "--model", "fault-model", "--base-url", server.url,
                            "--retries", "1")
    assert code == 1
    # a base model (a server without --chat) gets the few-shot completion prompt
    assert answer.seen[0].endswith("\nParaphrase:")
    assert "Paraphrase: Every morning, the hungry goats are fed by a farmer." in answer.seen[0]
    assert "divmeter: build para-1: 0 accepted, 4 retried, 4 rejected, 1 skipped sources; " \
           f"reasons in {tmp_path / 'para.rejected.jsonl'}" in err
    assert "divmeter: error: build para-1: no set was built (4 rejected, 1 skipped sources;" \
        in err
    assert out.read_text() == ""
    rej = [json.loads(x) for x in (tmp_path / "para.rejected.jsonl").read_text().splitlines()]
    assert sorted(r["status"] for r in rej) == ["rejected"] * 4 + ["skipped"]
    reasons = {r["reason"].split(":")[0] for r in rej if r["status"] == "rejected"}
    assert reasons <= {"blank", "special_token", "echo_instruction"}
    assert all("prompt:completion" in r["signature"] for r in rej)


def test_cli_accepted_sets_keep_labels_and_meta_runs_on_them(
        server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    answer = _completions([" A dog and a frisbee fly together over the sea.\nSentence: x",
                           " The frisbee is thrown and caught by a happy dog."])
    server.scripts["completions"] = [answer]
    sets = _sets(tmp_path)
    out, pairs = tmp_path / "para.jsonl", tmp_path / "pairs.jsonl"
    code, _, err = run_main(monkeypatch, capsys, "build", "para", str(sets), "-o", str(out),
                            "--model", "fault-model", "--base-url", server.url, "--pairs",
                            str(pairs))
    assert code == 0, err
    assert "divmeter: build para-1: 4 accepted, 0 retried, 0 rejected, 1 skipped sources; " \
           f"reasons in {tmp_path / 'para.rejected.jsonl'}" in err
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["label"] for r in rows] == [0, 1, 0, 1]
    assert [r["metadata"]["source_set_id"] for r in rows] == ["s0", "s1", "s2", "s3"]
    assert all(r["metadata"]["label_name"] == "high" for r in rows)
    assert all(r["prompt"] == "dog, frisbee, throw, catch" for r in rows)
    # conTest reads the built file as it is (it needed a label per set: issue 21)
    code, stdout, err = run_main(monkeypatch, capsys, "meta", "contest", str(out), "-m",
                                 "distinct-n", "--format", "json")
    assert code == 0, err
    assert json.loads(stdout)["distinct-n"]["n"] == 4
    # a run with no rejection removes a stale .rejected file of an earlier run
    (tmp_path / "p2.rejected.jsonl").write_text("{}\n")
    code, _, err = run_main(monkeypatch, capsys, "build", "rndshuff", str(out), "-o",
                            str(tmp_path / "p2.jsonl"))
    assert code == 0, err
    assert not (tmp_path / "p2.rejected.jsonl").exists()
    assert "divmeter: build rndshuff: 4 accepted, 0 retried, 0 rejected, 0 skipped sources" in err


def test_cli_max_rejected_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(monkeypatch, capsys, "build", "para", str(_sets(tmp_path)), "-o",
                            str(tmp_path / "o.jsonl"), "--model", "m", "--base-url",
                            "http://127.0.0.1:9/v1", "--max-rejected", "1.5")
    assert code == 2 and "--max-rejected must be a share from 0 to 1; got 1.5." in err


def test_sets_sharing_a_prompt_get_their_own_seeds() -> None:
    """Two sets with the same concepts (one prompt text): a generator that takes per-prompt
    seeds gets one per set, so their nonsensical sentences differ."""
    class Seeded:
        signature = "seeded"

        def __init__(self) -> None:
            self.prompt_seeds: list[list[int]] = []

        def generate(self, prompts: list[str], n: int, *, temperature: float, max_tokens: int,
                     seed: int, prompt_seeds: list[int] | None = None) -> list[list[str]]:
            self.prompt_seeds.append(list(prompt_seeds or []))
            return [[f"The moon eats the dog {ps % 1000} {j} times." for j in range(n)]
                    for ps in prompt_seeds or [0] * len(prompts)]

    gen = Seeded()
    src = [ResponseSet(f"s{i}", ["A dog catches a frisbee in the park."] * 2, "dog, frisbee")
           for i in range(2)]
    b = build("nonsensical", src, generator=gen)
    assert b.counts()["accepted"] == 2
    assert len(set(gen.prompt_seeds[0])) == 2
    assert b.sets[0].responses != b.sets[1].responses


@pytest.mark.slow
def test_para_with_the_packaged_base_model_on_a_server(llama_gemma, tmp_path: Path) -> None:  # noqa: ANN001
    """The packaged Gemma-3-270m base through llama.cpp's server: the builder sends the few-shot
    completion prompt, and every paraphrase it keeps passes the gate (no special token, not
    blank, not the instruction or the sentence again)."""
    from divmeter.studies.generation import get_generator

    gen = get_generator(f"openai:{llama_gemma.model}", base_url=llama_gemma.url,
                        cache=str(tmp_path / "cache"), concurrency=1, timeout=300.0)
    src = [ResponseSet("a", FRISBEE[:2], label=1), ResponseSet("b", FRISBEE[2:], label=0)]
    b = build("para", src, k=1, seed=0, generator=gen, max_tokens=32)
    c = b.counts()
    assert c["accepted"] + c["rejected"] == 2 and c["skipped"] == 0
    assert "|prompt:completion|" in b.signature
    for s, row in zip(b.sets, b.rows(), strict=True):
        assert row["label"] == {"a": 1, "b": 0}[s.set_id]
        for text, (i, copy) in zip(s.responses, s.metadata["layout"], strict=True):
            if copy:
                assert Gate().check(text, source=row["source"]["responses"][i]) is None, text
    for r in b.rejected_rows():
        assert r["texts"] and all(Gate().check(t["text"]) is None or t["reason"]
                                  for t in r["texts"])


def test_a_local_models_special_tokens_join_the_gate() -> None:
    """The special and added tokens of a local generator's tokenizer are refused too (a leak of
    ``<start_of_image>`` is caught by the pattern; a model's own odd token only by its list)."""
    class Tok:
        all_special_tokens = ["<bos>", "<eos>", "<my_special>"]

        def get_added_vocab(self) -> dict[str, int]:
            return {"<extra_id_7>": 7, " ": 8}

    class Lm:
        tokenizer = Tok()

    class Local(Scripted):
        lm = Lm()

    gen = Local({"0": "A dog<extra_id_7> runs."})
    b = build("para", [ResponseSet("f", FRISBEE)], k=1, generator=gen, gate=Gate(retries=0))
    assert b.counts()["rejected"] == 1
    assert b.rejected[0]["reason"] == ("special_token: the text contains '<extra_id_7>' (after "
                                       "every retry)")
