"""Judging a file: read pairs, write labelled rows as they come, resume, summarise.

What ``divmeter judge`` does beyond parsing its options, so Python users reach it too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.items import pair_texts
from divmeter.inputs.data.lines import (
    bounded_lines,
    display_name,
    open_source,
    read_json_lines,
    require_object,
)
from divmeter.inputs.data.outputs import claim_write, reading_own_outputs

__all__ = ["read_judge_pairs", "read_judge_input", "done_indices", "judge_file",
           "nulls_path_for"]


def read_judge_pairs(path: str) -> list[dict[str, Any]]:
    """Rows of a pairs JSONL file: ``set1`` and ``set2`` (lists of strings, or objects with
    ``responses``) required; ``label`` (kept as ``reference_label``), ``context`` / ``prompt`` and
    anything else optional and passed through.

    Raises:
        InvalidInputError: Naming file, line and field.
    """
    rows = []
    for where, row in read_json_lines(path):
        require_object(row, where, "pair")
        for key in ("set1", "set2"):
            row[key] = pair_texts(row, key, where)
        rows.append(row)
    if not rows:
        raise InvalidInputError(f"{display_name(path)}: no pairs found.")
    return rows


def read_judge_input(path: str, task: str
                     ) -> tuple[list[dict[str, Any]], list[Any], list[str | None]]:
    """What a judge run reads: the rows, the items to judge (``(set1, set2)`` pairs for the
    pairwise task, response lists for the absolute task) and each item's context (``context``
    or ``prompt``, else ``None``)."""
    items: list[Any]
    if task == "pairwise":
        rows = read_judge_pairs(path)
        items = [(r["set1"], r["set2"]) for r in rows]
    else:
        from divmeter.inputs.data.readers import read_sets

        sets = list(read_sets(path))
        rows = [s.to_dict() for s in sets]
        items = [s.responses for s in sets]
    contexts = [r.get("context", r.get("prompt")) for r in rows]
    return rows, items, [c if isinstance(c, str) else None for c in contexts]


def _chunks(items: list[int], size: int) -> Iterator[list[int]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def done_indices(path: str) -> set[int]:
    """The items already judged in an output file (its rows' ``pair_index`` or ``set_index``);
    a line cut by an interruption is judged again."""
    done: set[int] = set()
    if not os.path.exists(path):
        return done
    with reading_own_outputs(), open_source(path) as fh:  # --resume reads back its -o
        for line in bounded_lines(fh, display_name(path)):
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):  # not UTF-8 or not JSON: a line cut by an
                continue  # interruption is judged again
            if not isinstance(row, dict):
                continue
            for key in ("pair_index", "set_index"):
                if isinstance(row.get(key), int):
                    done.add(row[key])
    return done


def _row(src: dict[str, Any], index: int, it: Any, signature: str, task: str) -> dict[str, Any]:
    if task == "absolute":
        row = dict(src)
        row["set_index"] = index
        row["judge"] = it.value
        if it.reason is not None:
            row["reason"] = it.reason
        row["judge_detail"] = {"signature": signature, "n_valid": it.n_valid,
                               "samples": [s.to_dict() for s in it.samples]}
        if it.dist is not None:
            row["judge_detail"]["dist"] = it.dist
        return row
    row = {k: v for k, v in src.items() if k != "label"}
    if "label" in src:
        row["reference_label"] = src["label"]
    row["pair_index"] = index
    row["label"] = it.label
    row["rating1"], row["rating2"] = it.rating1, it.rating2
    if it.reason is not None:
        row["reason"] = it.reason
    row["judge"] = {"signature": signature, "n_valid": it.n_valid, "by_order": it.by_order,
                    "samples": [s.to_dict() for s in it.samples]}
    return row


def _summary(run: Any, items: list[Any], parse_failures: Any, client: Any, task: str,
             cfg: Any, rows: list[dict[str, Any]], consistency: bool) -> dict[str, Any]:
    from collections import Counter

    from divmeter.backends.judge.bias import position_bias
    from divmeter.backends.judge.results import JudgeRun

    sig = run.signature if run is not None else cfg.signature(task, *cfg.prompts(task))
    whole = JudgeRun(sig, items, parse_failures or Counter(), client.stats.to_dict(),
                     position_bias(items) if task == "pairwise" else None, answer=cfg.answer)
    out = whole.summary()
    if consistency and items:
        from divmeter.studies.judge.consistency import accuracy_by_n, self_consistency

        out["self_consistency"] = self_consistency(whole)
        if task == "pairwise" and len(items) == len(rows) and any("label" in r for r in rows):
            ref = [r.get("label") for r in rows]
            out["accuracy_by_n"] = {str(k): v for k, v in accuracy_by_n(whole, ref).items()}
    return out


def nulls_path_for(output: str) -> str:
    """Where the items without a rating go by default: OUTPUT's name + ``.nulls.jsonl``."""
    return (output[:-6] if output.endswith(".jsonl") else output) + ".nulls.jsonl"


def judge_file(task: str, rows: list[dict[str, Any]], items: list[Any],
               contexts: list[str | None], todo: list[int], cfg: Any, client: Any, *,
               output: str, nulls_path: str | None = None, resume: bool = False,
               chunk: int = 32, on_answer: Callable[[], None] | None = None,
               consistency: bool = False) -> dict[str, Any]:
    """Judge the items ``todo`` (indexes into ``rows``/``items``) ``chunk`` at a time, as soon as
    each chunk is done writing every rated item to ``output`` (appending with ``resume``) and
    every item without a rating, with its reason, to ``nulls_path``; returns the run's summary
    (valid-answer rate, requests, cache hits, failures and answers without a rating by kind,
    tokens, position bias, what was written).

    One rule for both tasks: ``output`` holds only rated items (pairs with a ``label``, sets
    with a ``judge`` value), so ``divmeter meta pairwise`` and ``meta agreement`` read it as it
    is; the nulls file (default :func:`nulls_path_for`) holds the others and is removed when
    empty. A resumed run judges the nulls again.
    """
    from divmeter.backends.judge.run import judge_pairs, judge_sets

    nulls_path = nulls_path or nulls_path_for(output)
    labelled = n_null = 0
    all_items: list[Any] = []
    run = None
    parse_failures: Any = None
    claim_write(output, "-o")  # never a file the command read
    claim_write(nulls_path, "--nulls")
    with open(output, "a" if resume else "w", encoding="utf-8") as out, \
            open(nulls_path, "w", encoding="utf-8") as bad:
        for part in _chunks(todo, chunk):
            fn = judge_pairs if task == "pairwise" else judge_sets
            run = fn([items[i] for i in part], cfg, contexts=[contexts[i] for i in part],
                     client=client, on_answer=on_answer)
            parse_failures = run.parse_failures if parse_failures is None else (
                parse_failures + run.parse_failures)
            all_items.extend(run.items)
            for i, it in zip(part, run.items, strict=True):
                row = _row(rows[i], i, it, run.signature, task)
                ok = (it.label if task == "pairwise" else it.value) is not None
                (out if ok else bad).write(json.dumps(row, ensure_ascii=False) + "\n")
                labelled += ok
                n_null += not ok
            out.flush()
            bad.flush()
    if not n_null and os.path.exists(nulls_path) and os.path.getsize(nulls_path) == 0:
        os.remove(nulls_path)
    summary = _summary(run, all_items, parse_failures, client, task, cfg, rows, consistency)
    summary["written"] = {"output": output, "rows": labelled, "nulls": n_null,
                          **({"nulls_file": nulls_path} if n_null else {})}
    return summary
