"""``divmeter judge``: an LLM judge labels pairs of sets (or rates sets) for diversity.

Parse options, read the file, print the cost estimate, call :mod:`divmeter.judge.protocol`,
stream rows to the output and print the summary. No protocol logic here.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from divmeter.errors import InvalidInputError

__all__ = ["judge_cmd", "read_judge_pairs"]


def _note(msg: str, quiet: bool) -> None:
    if not quiet:
        typer.echo(f"divmeter: {msg}", err=True)


def read_judge_pairs(path: str) -> list[dict[str, Any]]:
    """Rows of a pairs JSONL file: ``set1`` and ``set2`` (lists of strings, or objects with
    ``responses``) required; ``label`` (kept as ``reference_label``), ``context`` / ``prompt`` and
    anything else optional and passed through.

    Raises:
        InvalidInputError: Naming file, line and field.
    """
    name = os.path.basename(path)
    rows = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{name} line {lineno}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"{where}: not valid JSON ({exc.msg}).") from None
            if not isinstance(row, dict):
                raise InvalidInputError(f"{where}: expected an object; got {type(row).__name__}.")
            for key in ("set1", "set2"):
                if key not in row:
                    raise InvalidInputError(f"{where}: field {key!r} is missing.")
                v = row[key]
                if isinstance(v, dict):
                    v = v.get("responses")
                if isinstance(v, str) or not isinstance(v, list) or not all(
                        isinstance(t, str) for t in v):
                    raise InvalidInputError(f"{where}: field {key!r} must be a list of strings "
                                            f"(or an object with 'responses'); got "
                                            f"{type(v).__name__}.")
                row[key] = v
            rows.append(row)
    if not rows:
        raise InvalidInputError(f"{name}: no pairs found.")
    return rows


@contextmanager
def _progress(show: bool) -> Iterator[Callable[[], None] | None]:
    """A counter of answers received (cache hits included) on stderr, when shown."""
    if not show:
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("judge: {task.completed} answers"),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("judge", total=None)
        yield lambda: bar.advance(task)


def _chunks(items: list[int], size: int) -> Iterator[list[int]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _done_indices(path: str) -> set[int]:
    done: set[int] = set()
    if not os.path.exists(path):
        return done
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by an interruption is judged again
            if isinstance(row, dict) and isinstance(row.get("pair_index"), int):
                done.add(row["pair_index"])
    return done


def _estimate_line(est: dict[str, Any], what: str) -> str:
    return (f"judge: {what} = {est['requests']:,} requests ({est['cached']:,} cached, "
            f"{est['to_send']:,} to send; at most {est['max_requests_with_reasks']:,} with "
            f"re-asks); ~{est['prompt_tokens_est']:,} prompt tokens (estimated as characters / "
            f"4, no tokenizer), at most {est['max_completion_tokens']:,} completion tokens.")


def judge_cmd(
    file: Annotated[str, typer.Argument(
        help="Pairs JSONL ({set1, set2[, label, context]} per line); with --task absolute, "
        "response sets (.jsonl .json .csv .parquet).", show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="Labelled JSONL (streamed; "
                                        "`divmeter meta pairwise` reads it).",
                                        show_default=False)],
    model: Annotated[str, typer.Option("--model", help="openai:NAME (any OpenAI-compatible "
                                       "server) or NAME.", show_default=False)],
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="API root, e.g. http://127.0.0.1:8000/v1 (default: "
        "$DIVMETER_BASE_URL / $OPENAI_BASE_URL). The key comes from $DIVMETER_API_KEY / "
        "$OPENAI_API_KEY.", show_default=False)] = None,
    task: Annotated[str, typer.Option("--task", help="pairwise or absolute.")] = "pairwise",
    samples: Annotated[int, typer.Option("--samples", "-n", help="Answers per item (and "
                                         "order), averaged.")] = 5,
    temperature: Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
    = 1.0,
    max_tokens: Annotated[int, typer.Option("--max-tokens", help="Longest answer.")] = 256,
    template: Annotated[str, typer.Option("--template", help="default or a template file.")]
    = "default",
    fewshot: Annotated[str, typer.Option("--fewshot", help="default, none or a JSONL file.")]
    = "default",
    retries: Annotated[int, typer.Option("--retries", help="Re-asks after an unparseable "
                                         "answer.")] = 2,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed sent to the server.",
                                             show_default=False)] = None,
    orders: Annotated[str, typer.Option("--orders", help="Pairwise: both (A/B and B/A) or "
                                        "ab.")] = "both",
    concurrency: Annotated[int, typer.Option("--concurrency", help="Requests in flight.")] = 4,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per request.")] = 60.0,
    max_attempts: Annotated[int, typer.Option("--max-attempts", help="HTTP attempts per "
                                              "request.")] = 5,
    cache: Annotated[str, typer.Option("--cache", help="default, a folder, or none.")]
    = "default",
    nulls: Annotated[str | None, typer.Option(
        "--nulls", help="Where pairs without a label go, with their reason (default: "
        "OUTPUT's name + .nulls.jsonl).", show_default=False)] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Keep the labelled rows already in "
                                         "OUTPUT and judge only the others.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the cost estimate and "
                                          "stop.")] = False,
    batch_write: Annotated[str | None, typer.Option(
        "--batch-write", help="Write an OpenAI Batch API input file for the requests not "
        "cached, and stop.", show_default=False)] = None,
    batch_ingest: Annotated[str | None, typer.Option(
        "--batch-ingest", help="Store a Batch API results file in the cache first.",
        show_default=False)] = None,
    consistency: Annotated[bool, typer.Option(
        "--consistency", help="Add the judge's self-consistency (and, with reference labels, "
        "its accuracy by number of samples) to the summary.")] = False,
    chunk: Annotated[int, typer.Option("--chunk", help="Items judged (and written) per "
                                       "step.")] = 32,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No notes on stderr.")] = False,
) -> None:
    """LLM-as-judge diversity ratings, the commonsense paper's protocol (section 4.1).

    Pairwise: both sets of each pair rated 1-5 side by side, in both orders, N samples each;
    writes rating1, rating2 and label (0 = set1 more diverse, 1 = set2, 2 = tie) that
    `divmeter meta pairwise` reads, plus every sample's rating and rationale. Absolute: each set
    rated alone. Prints the cost estimate first and a JSON summary (requests, cache hits,
    retries and failures by kind, unparseable answers by kind, tokens, position bias) last.
    """
    from divmeter.judge.protocol import (
        JudgeConfig,
        estimate_cost,
        ingest_batch_results,
        judge_pairs,
        judge_sets,
        write_batch_requests,
    )

    if task not in ("pairwise", "absolute"):
        raise InvalidInputError(f"--task must be pairwise or absolute; got {task!r}.")
    if chunk < 1:
        raise InvalidInputError(f"--chunk must be an integer >= 1; got {chunk}.")
    cfg = JudgeConfig(model, base_url, None, samples, temperature, max_tokens, template, fewshot,
                      retries, seed, orders, concurrency, timeout, max_attempts,
                      None if cache in ("none", "off") else cache).check()
    if task == "pairwise":
        rows = read_judge_pairs(file)
        items: list[Any] = [(r["set1"], r["set2"]) for r in rows]
        what = f"{len(rows)} pairs x {2 if orders == 'both' else 1} orders x {samples} samples"
    else:
        from divmeter.data.io import read_sets

        sets = list(read_sets(file))
        rows = [s.to_dict() for s in sets]
        items = [s.responses for s in sets]
        what = f"{len(rows)} sets x {samples} samples"
    contexts = [r.get("context", r.get("prompt")) for r in rows]
    contexts = [c if isinstance(c, str) else None for c in contexts]
    client = cfg.client()
    if batch_ingest:
        got = ingest_batch_results(batch_ingest, cfg, client=client)
        _note(f"batch results: {got['stored']} answers stored in the cache, {got['failed']} "
              "failed (sent again now).", quiet)
    done = _done_indices(output) if resume else set()
    todo = [i for i in range(len(rows)) if i not in done]
    est = estimate_cost(task, [items[i] for i in todo], cfg,
                        contexts=[contexts[i] for i in todo], client=client)
    _note(_estimate_line(est, what) + (f" {len(done)} items already in {output}." if done
                                       else ""), quiet)
    if batch_write:
        n = write_batch_requests(batch_write, task, [items[i] for i in todo], cfg,
                                 contexts=[contexts[i] for i in todo], client=client)
        _note(f"wrote {n} requests to {batch_write} (OpenAI Batch API input); ingest the "
              "results with --batch-ingest.", quiet)
        return
    if dry_run:
        return
    if est["to_send"]:  # fail fast on a wrong URL; a run served from the cache needs no server
        client.check()
    nulls_path = nulls or (output[:-6] if output.endswith(".jsonl") else output) + ".nulls.jsonl"
    labelled = n_null = 0
    all_items: list[Any] = []
    run = None
    parse_failures: Any = None
    with open(output, "a" if resume else "w", encoding="utf-8") as out, \
            open(nulls_path, "w", encoding="utf-8") as bad, \
            _progress(not quiet and sys.stderr.isatty()) as tick:
        for part in _chunks(todo, chunk):
            fn = judge_pairs if task == "pairwise" else judge_sets
            run = fn([items[i] for i in part], cfg, contexts=[contexts[i] for i in part],
                     client=client, on_answer=tick)
            parse_failures = run.parse_failures if parse_failures is None else (
                parse_failures + run.parse_failures)
            all_items.extend(run.items)
            for i, it in zip(part, run.items, strict=True):
                row = _row(rows[i], i, it, run.signature, task)
                ok = (row.get("label") is not None) if task == "pairwise" else True
                (out if ok else bad).write(json.dumps(row, ensure_ascii=False) + "\n")
                labelled += ok
                n_null += (not ok) or (task == "absolute" and it.value is None)
            out.flush()
            bad.flush()
    if not n_null or task == "absolute":
        os.remove(nulls_path) if os.path.exists(nulls_path) and os.path.getsize(nulls_path) == 0 \
            else None
    summary = _summary(run, all_items, parse_failures, client, task, cfg, rows, consistency)
    summary["written"] = {"output": output, "rows": labelled, "nulls": n_null,
                          **({"nulls_file": nulls_path} if n_null and task == "pairwise"
                             else {})}
    typer.echo(json.dumps(summary, indent=2, allow_nan=False))


def _row(src: dict[str, Any], index: int, it: Any, signature: str, task: str) -> dict[str, Any]:
    if task == "absolute":
        row = dict(src)
        row["judge"] = it.value
        if it.reason is not None:
            row["reason"] = it.reason
        row["judge_detail"] = {"signature": signature, "n_valid": it.n_valid,
                               "samples": [s.to_dict() for s in it.samples]}
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

    from divmeter.judge.protocol import JudgeRun, position_bias

    sig = run.signature if run is not None else cfg.signature(
        task, *_template_pair(task, cfg))
    whole = JudgeRun(sig, items, parse_failures or Counter(), client.stats.to_dict(),
                     position_bias(items) if task == "pairwise" else None)
    out = whole.summary()
    if consistency and items:
        from divmeter.judge.consistency import accuracy_by_n, self_consistency

        out["self_consistency"] = self_consistency(whole)
        if task == "pairwise" and len(items) == len(rows) and any("label" in r for r in rows):
            ref = [r.get("label") for r in rows]
            out["accuracy_by_n"] = {str(k): v for k, v in accuracy_by_n(whole, ref).items()}
    return out


def _template_pair(task: str, cfg: Any) -> tuple[Any, Any]:
    from divmeter.judge.prompts import load_fewshot, load_template

    return load_template(task, cfg.template), load_fewshot(task, cfg.fewshot)
