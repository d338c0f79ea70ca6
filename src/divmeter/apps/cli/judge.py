"""``divmeter judge``: an LLM judge labels pairs of sets (or rates sets) for diversity.

Parse options, read the file, print the cost estimate, call :mod:`divmeter.studies.judge.protocol`,
stream rows to the output and print the summary. No protocol logic here.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, Any

import typer

from divmeter.apps.cli.options import SEED_CAP, QuietOpt, VerboseOpt, capped, option_group
from divmeter.backends.judge.config import CAPS
from divmeter.core.errors import InvalidInputError
from divmeter.inputs.data.paths import guard_outputs
from divmeter.studies.judge.files import (
    done_indices,
    judge_file,
    read_judge_input,
    read_judge_pairs,
)

__all__ = ["judge_cmd", "read_judge_pairs"]


def _note(msg: str, quiet: bool) -> None:
    if not quiet:
        typer.echo(f"divmeter: {msg}", err=True)




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






def _estimate_line(est: dict[str, Any], what: str) -> str:
    return (f"judge: {what} = {est['requests']:,} requests ({est['cached']:,} cached, "
            f"{est['to_send']:,} to send; at most {est['max_requests_with_reasks']:,} with "
            f"re-asks); ~{est['prompt_tokens_est']:,} prompt tokens (estimated as characters / "
            f"4, no tokenizer), at most {est['max_completion_tokens']:,} completion tokens.")


_JudgeFile = Annotated[str, typer.Argument(
        help="Pairs JSONL ({set1, set2[, label, context]} per line); with --task absolute, "
        "response sets (.jsonl .json .csv .parquet).", show_default=False)]
_JudgeOutput = Annotated[str, typer.Option("--output", "-o", help="Labelled JSONL (streamed; "
                                        "`divmeter meta pairwise` reads it).",
                                        show_default=False)]
_JudgeModel = Annotated[str, typer.Option("--model", help="openai:NAME (any OpenAI-compatible "
                                       "server) or NAME.", show_default=False)]
_JudgeBaseUrl = Annotated[str | None, typer.Option(
        "--base-url", help="API root, e.g. http://127.0.0.1:8000/v1 (default: "
        "$DIVMETER_BASE_URL / $OPENAI_BASE_URL). The key comes from $DIVMETER_API_KEY / "
        "$OPENAI_API_KEY.", show_default=False)]
_JudgeTask = Annotated[str, typer.Option("--task", help="pairwise or absolute.")]
_JudgeSamples = Annotated[int, typer.Option("--samples", "-n",
    callback=capped(CAPS["samples"], low=1), help="Answers per item (and "
                                         "order), averaged.")]
_JudgeTemperature = Annotated[float, typer.Option("--temperature", help="Sampling temperature.")]
_JudgeMaxTokens = Annotated[int, typer.Option("--max-tokens",
    callback=capped(CAPS["max_tokens"], low=1), help="Longest answer.")]
_JudgeTemplate = Annotated[str, typer.Option("--template", help="default or a template file.")]
_JudgeFewshot = Annotated[str, typer.Option("--fewshot", help="default, none or a JSONL file.")]
_JudgeRetries = Annotated[int, typer.Option("--retries",
    callback=capped(CAPS["retries"], low=0), help="Re-asks after an unparseable "
                                         "answer.")]
_JudgeSeed = Annotated[int | None, typer.Option("--seed",
    callback=capped(SEED_CAP), help="Seed sent to the server.",
                                             show_default=False)]
_JudgeOrders = Annotated[str, typer.Option("--orders", help="Pairwise: both (A/B and B/A) or "
                                        "ab.")]
_JudgeConcurrency = Annotated[int, typer.Option("--concurrency",
    callback=capped(CAPS["concurrency"], low=1), help="Requests in flight.")]
_JudgeTimeout = Annotated[float, typer.Option("--timeout", help="Seconds per request.")]
_JudgeMaxAttempts = Annotated[int, typer.Option("--max-attempts",
    callback=capped(CAPS["max_attempts"], low=1), help="HTTP attempts per "
                                              "request.")]
_JudgeCache = Annotated[str, typer.Option("--cache", help="default, a folder, or none.")]
_JudgeNulls = Annotated[str | None, typer.Option(
        "--nulls", help="Where items without a rating go (pairs without a label, sets without a "
        "value), with their reason (default: OUTPUT's name + .nulls.jsonl; removed when "
        "empty).", show_default=False)]
_JudgeAnswer = Annotated[str, typer.Option(
        "--answer", help="How the rating is read: text (the paper's JSON answer, parsed "
        "strictly), logprobs (from the log-probabilities of the tokens 1-5 on /completions: "
        "never unparseable; for base and small models, llama.cpp, vLLM) or schema (a JSON "
        "schema the server enforces through response_format).")]
_JudgeTopLogprobs = Annotated[int, typer.Option(
        "--top-logprobs",
        callback=capped(CAPS["top_logprobs"], low=1),
            help="--answer logprobs: most likely tokens the server lists.")]
_JudgeMinValid = Annotated[float, typer.Option(
        "--min-valid", help="Fail (exit 1) when fewer answers than this share give a valid "
        "rating.")]
_JudgeResume = Annotated[bool, typer.Option("--resume", help="Keep the labelled rows already in "
                                         "OUTPUT and judge only the others.")]
_JudgeDryRun = Annotated[bool, typer.Option("--dry-run", help="Print the cost estimate and "
                                          "stop.")]
_JudgeBatchWrite = Annotated[str | None, typer.Option(
        "--batch-write", help="Write an OpenAI Batch API input file for the requests not "
        "cached, and stop.", show_default=False)]
_JudgeBatchIngest = Annotated[str | None, typer.Option(
        "--batch-ingest", help="Store a Batch API results file in the cache first.",
        show_default=False)]
_JudgeConsistency = Annotated[bool, typer.Option(
        "--consistency", help="Add the judge's self-consistency (and, with reference labels, "
        "its accuracy by number of samples) to the summary.")]
_JudgeChunk = Annotated[int, typer.Option("--chunk",
    callback=capped(10**6, low=1), help="Items judged (and written) per "
                                       "step.")]


@dataclass
class Requests:
    """How the requests are sent: ``--concurrency``, ``--timeout``, ``--max-attempts`` and
    ``--cache`` (:func:`~divmeter.apps.cli.options.option_group`)."""

    concurrency: _JudgeConcurrency = 4
    timeout: _JudgeTimeout = 60.0
    max_attempts: _JudgeMaxAttempts = 5
    cache: _JudgeCache = "default"

    def settings(self) -> dict[str, Any]:
        """The :class:`~divmeter.backends.judge.config.JudgeConfig` fields they set (``--cache
        none`` or ``off``: no cache)."""
        return {"concurrency": self.concurrency, "timeout": self.timeout,
                "max_attempts": self.max_attempts,
                "cache": None if self.cache in ("none", "off") else self.cache}


@dataclass
class Run:
    """What the run writes and how far it goes: ``--nulls``, ``--resume``, ``--dry-run``, the
    Batch API files, ``--consistency`` and ``--chunk``
    (:func:`~divmeter.apps.cli.options.option_group`)."""

    nulls: _JudgeNulls = None
    resume: _JudgeResume = False
    dry_run: _JudgeDryRun = False
    batch_write: _JudgeBatchWrite = None
    batch_ingest: _JudgeBatchIngest = None
    consistency: _JudgeConsistency = False
    chunk: _JudgeChunk = 32


@option_group
def judge_cmd(
    file: _JudgeFile,
    output: _JudgeOutput,
    model: _JudgeModel,
    base_url: _JudgeBaseUrl = None,
    task: _JudgeTask = "pairwise",
    samples: _JudgeSamples = 5,
    temperature: _JudgeTemperature = 1.0,
    max_tokens: _JudgeMaxTokens = 256,
    template: _JudgeTemplate = "default",
    fewshot: _JudgeFewshot = "default",
    retries: _JudgeRetries = 2,
    seed: _JudgeSeed = None,
    orders: _JudgeOrders = "both",
    *,
    requests: Requests,
    run: Run,
    answer: _JudgeAnswer = "text",
    top_logprobs: _JudgeTopLogprobs = 20,
    min_valid: _JudgeMinValid = 0.8,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """LLM-as-judge diversity ratings, the commonsense paper's protocol (section 4.1).

    Pairwise: both sets of each pair rated 1-5 side by side, in both orders, N samples each;
    writes rating1, rating2 and label (0 = set1 more diverse, 1 = set2, 2 = tie) that
    `divmeter meta pairwise` reads, plus every sample's rating and rationale. Absolute: each set
    rated alone. Items without a rating go to the nulls file, with their reason. Prints the cost
    estimate first, the valid-answer rate, and a JSON summary (requests, cache hits, retries and
    failures by kind, answers without a rating by kind, tokens, position bias) last; exits 1
    when the valid-answer rate is below --min-valid.
    """
    from divmeter.studies.judge.protocol import estimate_cost

    cfg = _config(task, run.chunk, min_valid, model=model, base_url=base_url, samples=samples,
                  temperature=temperature, max_tokens=max_tokens, template=template,
                  fewshot=fewshot, retries=retries, seed=seed, orders=orders,
                  **requests.settings(), answer=answer, top_logprobs=top_logprobs)
    _guard(output, run.nulls, run.batch_write, [file, run.batch_ingest, template, fewshot])
    rows, items, contexts = read_judge_input(file, task)
    what = (f"{len(rows)} pairs x {2 if orders == 'both' else 1} orders x {samples} samples"
            if task == "pairwise" else f"{len(rows)} sets x {samples} samples")
    client = cfg.client()
    if run.batch_ingest:
        _ingest(run.batch_ingest, cfg, client, quiet)
    done = done_indices(output) if run.resume else set()
    todo = [i for i in range(len(rows)) if i not in done]
    est = estimate_cost(task, [items[i] for i in todo], cfg,
                        contexts=[contexts[i] for i in todo], client=client)
    _note(_estimate_line(est, what) + (f" {len(done)} items already in {output}." if done
                                       else ""), quiet)
    if run.batch_write:
        _write_batch(run.batch_write, task, [items[i] for i in todo],
                     [contexts[i] for i in todo], cfg, client, quiet)
        return
    if run.dry_run:
        return
    if est["to_send"]:  # fail fast on a wrong URL; a run served from the cache needs no server
        client.check()
    with _progress(not quiet and sys.stderr.isatty()) as tick:
        summary = judge_file(task, rows, items, contexts, todo, cfg, client, output=output,
                             nulls_path=run.nulls, resume=run.resume, chunk=run.chunk,
                             on_answer=tick, consistency=run.consistency)
    typer.echo(json.dumps(summary, indent=2, allow_nan=False))
    _check_valid_rate(summary, cfg.model, min_valid, quiet)


def _ingest(path: str, cfg: Any, client: Any, quiet: bool) -> None:
    """--batch-ingest: the Batch API's answers into the request cache."""
    from divmeter.studies.judge.protocol import ingest_batch_results

    got = ingest_batch_results(path, cfg, client=client)
    _note(f"batch results: {got['stored']} answers stored in the cache, {got['failed']} "
          "failed (sent again now).", quiet)


def _write_batch(path: str, task: str, items: list[Any], contexts: list[Any], cfg: Any,
                 client: Any, quiet: bool) -> None:
    """--batch-write: the run's requests as an OpenAI Batch API input file."""
    from divmeter.studies.judge.protocol import write_batch_requests

    n = write_batch_requests(path, task, items, cfg, contexts=contexts, client=client)
    _note(f"wrote {n} requests to {path} (OpenAI Batch API input); ingest the results with "
          "--batch-ingest.", quiet)


def _guard(output: str, nulls: str | None, batch_write: str | None,
           inputs: list[str | None]) -> None:
    """Every path the run writes (the output, the nulls file, a batch file) refused when it is
    one of the run's inputs or a file divmeter does not own, before any work."""
    nulls_path = nulls or (output[:-6] if output.endswith(".jsonl") else output) + ".nulls.jsonl"
    guard_outputs({"-o": output, "--nulls": nulls_path, "--batch-write": batch_write}, inputs)


def _config(task: str, chunk: int, min_valid: float, **kw: Any) -> Any:
    """The run's checked :class:`~divmeter.backends.judge.config.JudgeConfig` (and the options that
    are not part of it checked), before any work."""
    from divmeter.backends.judge.config import JudgeConfig

    if task not in ("pairwise", "absolute"):
        raise InvalidInputError(f"--task must be pairwise or absolute; got {task!r}.")
    if chunk < 1:
        raise InvalidInputError(f"--chunk must be an integer >= 1; got {chunk}.")
    if not 0 <= min_valid <= 1:
        raise InvalidInputError(f"--min-valid must be a share from 0 to 1; got {min_valid}.")
    return JudgeConfig(**kw).check()


def _check_valid_rate(summary: dict[str, Any], model: str, min_valid: float,
                      quiet: bool) -> None:
    """Say the valid-answer rate; fail (exit 1) with what to try when it is below the floor."""
    from divmeter.backends.judge.results import valid_rate_problem

    rate, w = summary.get("valid_rate"), summary["written"]
    if rate is not None:
        _note(f"judge: {summary['valid_samples']} of {summary['samples']} answers gave a valid "
              f"rating ({rate:.1%}, {summary['answer']} answers); {w['rows']} items -> "
              f"{w['output']}, {w['nulls']} without a rating"
              + (f" -> {w['nulls_file']}" if w.get("nulls_file") else "") + ".", quiet)
    problem = valid_rate_problem(summary, model, min_valid)
    if problem is not None:
        typer.echo(f"divmeter: error: {problem}", err=True)
        raise typer.Exit(1)





