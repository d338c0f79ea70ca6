"""The prefix tree's KV caches (divmeter.backends.lm.fork_cache): a fork shares the prefix's
tensors instead of deep-copying and repeating them, leaves the prefix's cache as it was, and
gives exactly (``==``) the bits of the deep-copy path (the packaged Gemma-3-270m)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from divmeter.backends import lm
from divmeter.metrics.decan import format_responses

pytestmark = [pytest.mark.lm, pytest.mark.slow]

THREADS = 1
PROMPT = "Write one sentence about rain."
RESPONSES = ["The rain fell softly on the quiet village.", "Umbrellas bloomed by the station.",
             "Farmers prayed for a storm.", "A tin bucket caught the drips."]


def _deep_fork(cache: Any, batch: int) -> Any:
    """The path before fork_cache: a deep copy of the cache, repeated to ``batch`` rows."""
    if cache is None:
        return None
    new = copy.deepcopy(cache)
    if batch > 1:
        new.batch_repeat_interleave(batch)
    return new


def test_fork_shares_the_prefix_and_leaves_it_unchanged() -> None:
    torch = pytest.importorskip("torch")
    sc = lm.get_scorer(threads=THREADS)
    ids = torch.as_tensor(sc.encode(PROMPT + " " + RESPONSES[0]).ids)[None]
    with torch.no_grad():
        prefix = sc._body(input_ids=ids[:, :6], use_cache=True).past_key_values
    keys = [ly.keys for ly in prefix.layers]
    fork = lm.fork_cache(prefix, 3)
    assert all(f.keys.shape[0] == 3 and f.keys.data_ptr() == k.data_ptr()  # shared, widened
               for f, k in zip(fork.layers, keys, strict=True))
    rest = ids[:, 6:].expand(3, -1)
    pos = torch.arange(6, ids.shape[1])[None].expand(3, -1)
    with torch.no_grad():
        sc._body(input_ids=rest, past_key_values=fork, position_ids=pos, use_cache=True)
    assert all(ly.keys is k and ly.keys.shape[0] == 1 and ly.keys.shape[2] == 6
               for ly, k in zip(prefix.layers, keys, strict=True))
    assert fork.get_seq_length() == ids.shape[1] and prefix.get_seq_length() == 6


def test_tree_bits_equal_the_deep_copy_path(monkeypatch: pytest.MonkeyPatch) -> None:
    sc = lm.get_scorer(threads=THREADS)
    orders = [(0, 1, 2), (0, 1, 3), (0, 2, 1), (1, 0, 2), (3, 2, 1), (0,)]
    items = [format_responses(PROMPT, [RESPONSES[i] for i in o], "instruct") for o in orders]
    items.append(format_responses(PROMPT, RESPONSES[:2], "completion"))
    texts, spans = [t for t, _ in items], [s for _, s in items]
    default = sc.tree_min_saving
    try:
        sc.tree_min_saving = 0  # every shared branch its own pass: forks of forks
        shared = sc.span_bits(texts, spans)
        assert sc.last_stats["passes"] > 3
        monkeypatch.setattr(lm, "fork_cache", _deep_fork)
        deep = sc.span_bits(texts, spans)
    finally:
        sc.tree_min_saving = default
    for a, b in zip(shared, deep, strict=True):
        assert np.array_equal(a, b) and np.all(a > 0)
