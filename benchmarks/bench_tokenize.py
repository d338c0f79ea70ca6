"""Benchmark: tokens per second of the shared tokenize-and-intern step, next to ``str.split``.

    PYTHONPATH=src python benchmarks/bench_tokenize.py [--docs 10000]

Data: the corpus workload of ``bench_lexical.py`` (seeded; 10,000 documents of 160-240
Zipf-distributed pseudo-words, about 2,000,000 tokens). Rows:

* ``bare str.split``: ``[t.split() for t in texts]``, the floor of whitespace tokenization in
  Python (it makes the token strings and nothing else: no ids);
* ``Tokenizer.many``: divmeter's tokenizers returning token strings (``whitespace``, ``tevet``);
* ``intern_sets``: tokenize and intern (exact integer ids, what every n-gram metric starts from),
  by the byte path (tokens found and grouped in numpy from the UTF-8 bytes) and by the dictionary
  path (one ``str.split`` and one ``dict`` pass), which it replaces where it applies; the two are
  checked to give the same ids (``whitespace``);
* ``TokenKeys.from_texts``: exact token keys with their sort (MATTR, MTLD, HD-D).

Times are CPU seconds of this process (best of ``--repeat`` runs): the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import best_time, compiled_path  # noqa: E402
from bench_lexical import make_corpus  # noqa: E402

from divmeter.inputs.text import TokenKeys, get_tokenizer  # noqa: E402
from divmeter.inputs.text import intern as intern_module  # noqa: E402


def dictionary_path(sets: list[list[str]], name: str) -> intern_module.InternedSets:
    saved = intern_module._BYTE_SPLITS
    intern_module._BYTE_SPLITS = {}
    try:
        return intern_module.intern_sets(sets, get_tokenizer(name))
    finally:
        intern_module._BYTE_SPLITS = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    texts = make_corpus(args.docs)
    n_tok = sum(len(t.split()) for t in texts)
    print(f"{args.docs:,} documents, {n_tok:,} tokens; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    fast = intern_module.intern_sets([texts], get_tokenizer("whitespace"))
    slow = dictionary_path([texts], "whitespace")
    assert fast.raw.tolist() == slow.raw.tolist(), "byte path and dictionary path differ"
    rows = [("bare str.split", lambda: [t.split() for t in texts])]
    for name in ("whitespace", "tevet"):
        tok = get_tokenizer(name)
        rows += [
            (f"Tokenizer.many ({name})", lambda tok=tok: tok.many(texts)),
            (f"intern_sets, byte path ({name})",
             lambda tok=tok: intern_module.intern_sets([texts], tok)),
            (f"intern_sets, dictionary path ({name})",
             lambda name=name: dictionary_path([texts], name)),
            (f"TokenKeys.from_texts ({name})",
             lambda tok=tok: TokenKeys.from_texts(texts, tok)),
        ]
    base = None
    print(f"divmeter path: {compiled_path()}")
    print(f"{'step':<44} {'seconds':>8} {'tokens/s':>12} {'vs str.split':>13}")
    for label, fn in rows:
        t, _ = best_time(fn, args.repeat)
        base = base or t
        print(f"{label:<44} {t:8.3f} {n_tok / t:12,.0f} {base / t:12.2f}x", flush=True)


if __name__ == "__main__":
    main()
