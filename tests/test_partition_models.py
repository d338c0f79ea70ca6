"""Local model folders behind the partition layer: a pair classifier (NoveltyBench's DeBERTa
equivalence classifier is one), an NLI model for bidirectional entailment, a reward model.

Nothing is downloaded: each test builds a tiny BERT sequence-classification model with random
(or set) weights from a transformers config, with its own word-piece vocabulary, and saves it to a
folder, as a user's folder would be. These tests check the loading and the plumbing exactly: the
input NoveltyBench builds (each text cut to its first tokens, ``[CLS] a [SEP] b [SEP]``, token
types), probabilities equal to a direct forward pass of the same model, the greedy partition
over those decisions, the entailment label found by name, rewards and NoveltyBench's 1-10 scale.
The quality of the equivalence decisions needs a real model (NoveltyBench's
``deberta-v3-large-generation-similarity``, an MNLI cross-encoder): random weights say nothing
about meaning.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.embed

from divmeter.core.errors import InvalidInputError  # noqa: E402
from divmeter.metrics.partition import (  # noqa: E402
    greedy_partition,
    noveltybench_quality,
    noveltybench_short_rule,
    partition,
    utility_value,
)

WORDS = ("the cat sat on mat a dog ran in park stocks fell sharply today market dropped "
         "she baked bread for her grandmother volcano erupted at dawn bananas are rich "
         "potassium paris is capital of france city").split()
NLI = {0: "entailment", 1: "neutral", 2: "contradiction"}
TEXTS = ["the cat sat on the mat in the park today",
         "a dog ran in the park at dawn today",
         "stocks fell sharply today in the market",
         "the market dropped sharply today she baked bread",
         "the volcano erupted at dawn in paris france",
         "bananas are rich in potassium",
         "bananas are rich in potassium"]


def make_folder(root: Path, num_labels: int, id2label: dict[int, str] | None = None,
                seed: int = 0, bias: list[float] | None = None) -> Path:
    import torch
    import transformers

    root.mkdir(parents=True, exist_ok=True)
    vocab = root / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n",
                     encoding="utf-8")
    tok = transformers.BertTokenizer(vocab=str(vocab))
    labels = id2label or {i: f"LABEL_{i}" for i in range(num_labels)}
    cfg = transformers.BertConfig(
        vocab_size=len(WORDS) + 5, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=128, num_labels=num_labels,
        id2label=labels, label2id={v: k for k, v in labels.items()})
    torch.manual_seed(seed)
    model = transformers.BertForSequenceClassification(cfg)
    if bias is not None:
        with torch.no_grad():
            model.classifier.weight.zero_()
            model.classifier.bias.copy_(torch.tensor(bias))
    model.save_pretrained(root)
    tok.save_pretrained(root)
    return root


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    return {
        "clf": make_folder(root / "clf", 2, seed=1),
        "nli": make_folder(root / "nli", 3, NLI, seed=2),
        "nli-entail": make_folder(root / "nli-entail", 3,
                                  {0: "contradiction", 1: "neutral", 2: "ENTAILMENT"},
                                  bias=[0.0, 0.0, 5.0]),
        "nli-contra": make_folder(root / "nli-contra", 3,
                                  {0: "contradiction", 1: "neutral", 2: "entailment"},
                                  bias=[5.0, 0.0, 0.0]),
        "nameless": make_folder(root / "nameless", 3, seed=3),
        "rm": make_folder(root / "rm", 1, seed=4),
    }


@functools.cache
def loaded(folder: Path) -> tuple[Any, Any]:
    """The folder's tokenizer and model, loaded directly with transformers (no divmeter)."""
    import transformers

    from divmeter.backends.embed import quiet_loading

    with quiet_loading():
        tok = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            str(folder), local_files_only=True).eval()
    return tok, model


def direct(folder: Path, a: str, b: str, max_length: int = 128) -> np.ndarray:
    """The softmax of one pair, built as NoveltyBench's classifier_score builds it."""
    import torch

    tok, model = loaded(folder)
    ids = [tok.cls_token_id]
    for s in (a, b):
        ids.extend(tok.encode(s, add_special_tokens=False)[:max_length])
        ids.append(tok.sep_token_id)
    first = ids.index(tok.sep_token_id) + 1
    types = [0] * first + [1] * (len(ids) - first)
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types])).logits
    return logits.softmax(-1)[0].numpy()


def test_pair_input_is_noveltybenchs(folders: dict[str, Path]) -> None:
    from divmeter.backends.pairs import PairModel

    pm = PairModel(str(folders["clf"]), max_length=3)
    enc = pm.encode_pair("the cat sat on the mat", "a dog ran")
    v = {w: i + 5 for i, w in enumerate(WORDS)}
    assert enc["input_ids"] == [2, v["the"], v["cat"], v["sat"], 3, v["a"], v["dog"], v["ran"], 3]
    assert enc["token_type_ids"] == [0, 0, 0, 0, 0, 1, 1, 1, 1]


def test_classifier_probabilities_equal_a_direct_forward_pass(folders: dict[str, Path]) -> None:
    from divmeter.backends.pairs import PairModel

    pm = PairModel(str(folders["clf"]), max_length=4)
    pairs = [(TEXTS[0], TEXTS[1]), (TEXTS[2], TEXTS[3]), (TEXTS[5], TEXTS[0])]
    got = pm.probabilities(pairs)  # one padded batch
    want = np.array([direct(folders["clf"], a, b, max_length=4) for a, b in pairs])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert got.sum(axis=1) == pytest.approx([1.0, 1.0, 1.0])


def test_classifier_partition_follows_its_decisions(folders: dict[str, Path]) -> None:
    import divmeter

    folder = folders["clf"]
    probs = {(i, j): direct(folder, TEXTS[i], TEXTS[j])[1]
             for i in range(len(TEXTS)) for j in range(len(TEXTS)) if i != j}
    thr = float(np.median([probs[(0, j)] for j in range(1, len(TEXTS))]))  # splits class 0

    def same(i: int, j: int) -> bool:
        rule = noveltybench_short_rule(TEXTS[i], TEXTS[j])
        return rule if rule is not None else bool(probs[(i, j)] > thr)

    expected = greedy_partition(len(TEXTS), same)
    r = divmeter.score(TEXTS, "distinct-k", equivalence="classifier", model=str(folder),
                       threshold=thr, comparisons=True)
    assert [list(c) for c in r.details["classes"]] == expected
    assert r.value == len(expected) / len(TEXTS)
    assert 1 < len(expected) < len(TEXTS)  # the threshold splits this random model's answers
    assert r.signature.startswith(
        "distinct-k|eq:classifier|model:clf@sha256:")
    assert r.signature.endswith(f"|maxlen:128|label:1|short:novelty-bench|thr:{thr!r}|v:0.1.0")
    # the two identical short responses are decided by the short rule (no model score)
    assert [5, 6, None, True] in r.details["comparisons"]


def test_entailment_label_is_found_by_name(folders: dict[str, Path]) -> None:
    always = partition(TEXTS, "entailment", model=str(folders["nli-entail"]))
    assert always.classes == (tuple(range(len(TEXTS))),)
    assert "|label:2|rule:both-argmax" in always.signature
    never = partition(TEXTS, "entailment", model=str(folders["nli-contra"]))
    assert never.distinct == len(TEXTS)
    with pytest.raises(InvalidInputError, match="no single label named 'entailment'.*pass "
                       "`label`"):
        partition(TEXTS, "entailment", model=str(folders["nameless"]))
    forced = partition(TEXTS, "entailment", model=str(folders["nameless"]), label=0)
    assert "|label:0|" in forced.signature


def test_entailment_needs_both_directions(folders: dict[str, Path]) -> None:
    import divmeter

    folder = folders["nli"]
    top = {(i, j): int(np.argmax(direct(folder, TEXTS[i], TEXTS[j])))
           for i in range(len(TEXTS)) for j in range(len(TEXTS)) if i != j}
    expected = greedy_partition(len(TEXTS), lambda i, j: top[(i, j)] == 0 == top[(j, i)])
    r = divmeter.score(TEXTS, "semantic-entropy", equivalence="entailment", model=str(folder))
    assert [list(c) for c in r.details["classes"]] == expected
    sizes = np.array([len(c) for c in expected]) / len(TEXTS)
    assert r.value == pytest.approx(float(-(sizes * np.log(sizes)).sum()))


def test_reward_model_quality(folders: dict[str, Path]) -> None:
    import torch

    import divmeter
    from divmeter.backends.pairs import get_reward_model

    folder = folders["rm"]
    rm = get_reward_model(str(folder))
    assert rm.input_format == "pair"  # no chat template in this folder
    tok, model = loaded(folder)
    with torch.inference_mode():
        want = [float(model(**tok("paris is the capital", t, return_tensors="pt")).logits[0, 0])
                for t in TEXTS]
    got = rm.rewards("paris is the capital", TEXTS)
    assert got == pytest.approx(want, abs=1e-5)
    r = divmeter.score(TEXTS, "novelty-utility", quality="rm", quality_model=str(folder),
                       rm_scale="raw", prompt="paris is the capital", equivalence="entailment",
                       model=str(folders["nli-contra"]))
    if min(want) < 0:  # a repeat counts 0: negative qualities are refused (issue 34)
        assert r.value is None and "is negative" in r.reason
    else:
        assert r.value == pytest.approx(utility_value(range(len(TEXTS)), want, 0.8), abs=1e-5)
    assert "|quality:rm|rm:rm@sha256:" in r.signature and "|rmfmt:pair|scale:raw|" in r.signature
    scaled = divmeter.score(TEXTS, "novelty-utility", quality="rm", quality_model=str(folder),
                            prompt="paris is the capital", equivalence="entailment",
                            model=str(folders["nli-contra"]))
    assert scaled.details["qualities"] == [float(noveltybench_quality(w)) for w in want]
    assert "|scale:novelty-bench|" in scaled.signature
    qwen = divmeter.score(TEXTS, "novelty-utility", quality="rm", quality_model=str(folder),
                          rm_scale="novelty-bench-qwen3", prompt="paris is the capital",
                          equivalence="entailment", model=str(folders["nli-contra"]))
    assert qwen.details["qualities"] == [float(noveltybench_quality(w, "novelty-bench-qwen3"))
                                         for w in want]
    assert "|rmfmt:pair|scale:novelty-bench-qwen3|" in qwen.signature


def test_bad_folders_are_refused(tmp_path: Path, folders: dict[str, Path]) -> None:
    with pytest.raises(InvalidInputError, match="must be a local model folder.*never downloads"):
        partition(TEXTS, "classifier", model=str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInputError, match="has no config.json"):
        partition(TEXTS, "entailment", model=str(tmp_path / "empty"))
    with pytest.raises(InvalidInputError, match="must index one of the classifier's 2 labels"):
        partition(TEXTS, "classifier", model=str(folders["clf"]), label=2)
    with pytest.raises(InvalidInputError, match="reward model has one output"):
        from divmeter.backends.pairs import RewardModel

        RewardModel(str(folders["clf"]))
